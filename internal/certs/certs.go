// Package certs is cosla's mutual TLS: a cluster's certificate authority,
// the certificates it issues to sites (the node role) and to clients (the
// client role), the tls.Configs built from them, and the role a verified
// peer certificate carries.
//
// Roles are in the certificate, so a node needs no list of who may connect:
//   - A node certificate names its site in the Common Name and as a DNS
//     name, and may authenticate both ends of a connection. A node dialing
//     another site verifies the site's name against it, through any proxy in
//     between (the local cluster's emulated WAN).
//   - A client certificate may authenticate only the dialing end: TLS
//     itself refuses it as a server, and a node accepts only client
//     requests from it (package host checks each message).
package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// Role is what a certificate allows its holder to do.
type Role string

// Roles, as carried in a certificate's Organizational Unit.
const (
	// Node: a site's storage nodes; any message.
	Node Role = "cosla-node"
	// Client: client requests only.
	Client Role = "cosla-client"
)

// ErrNoRole is returned for a certificate that carries no cosla role.
var ErrNoRole = errors.New("cosla: certificate carries no cosla role")

// validity is how long issued certificates last: a local cluster's
// directory outlives many runs, and nothing here rotates certificates.
const validity = 10 * 365 * 24 * time.Hour

// Files are the PEM files of one holder: its certificate, its key and the
// authority that signed every certificate of the cluster. In a config
// file (a client's, package clientfile) they are the fields cert, key and
// ca.
type Files struct {
	Cert string `yaml:"cert"`
	Key  string `yaml:"key"`
	CA   string `yaml:"ca"`
}

// ClusterDir is where a local cluster in dir (package cluster) keeps its
// authority and certificates.
func ClusterDir(dir string) string { return filepath.Join(dir, "tls") }

// NodeFiles and ClientFiles name the files in a cluster's TLS directory.
func NodeFiles(dir, site string) Files {
	return Files{Cert: filepath.Join(dir, "node-"+site+".pem"), Key: filepath.Join(dir, "node-"+site+"-key.pem"), CA: filepath.Join(dir, "ca.pem")}
}

// ClientFiles names the client certificate's files in dir.
func ClientFiles(dir string) Files {
	return Files{Cert: filepath.Join(dir, "client.pem"), Key: filepath.Join(dir, "client-key.pem"), CA: filepath.Join(dir, "ca.pem")}
}

// Ensure makes dir hold a certificate authority, a node certificate for
// each site and a client certificate, creating what is missing and keeping
// what exists: a cluster restarted on its directory keeps its identities,
// and clients holding its client certificate keep working. Keys are
// written readable by the owner only.
func Ensure(dir string, sites []string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	ca, caKey, err := ensureCA(dir)
	if err != nil {
		return err
	}
	for _, site := range sites {
		if err := ensureLeaf(NodeFiles(dir, site), ca, caKey, nodeTemplate(site)); err != nil {
			return err
		}
	}
	return ensureLeaf(ClientFiles(dir), ca, caKey, clientTemplate())
}

func ensureCA(dir string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	certPath, keyPath := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "ca-key.pem")
	if _, err := os.Stat(certPath); err == nil {
		return readCA(certPath, keyPath)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{Organization: []string{"cosla"}, CommonName: "cosla cluster CA"},
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := sign(tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	if err := writeKeyPair(certPath, keyPath, der, key); err != nil {
		return nil, nil, err
	}
	ca, err := x509.ParseCertificate(der)
	return ca, key, err
}

func readCA(certPath, keyPath string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	pair, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		return nil, nil, fmt.Errorf("cosla: certificate authority: %w", err)
	}
	key, ok := pair.PrivateKey.(*ecdsa.PrivateKey)
	if !ok {
		return nil, nil, fmt.Errorf("cosla: certificate authority: %s: not an ECDSA key", keyPath)
	}
	ca, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, nil, fmt.Errorf("cosla: certificate authority: %w", err)
	}
	return ca, key, nil
}

func nodeTemplate(site string) *x509.Certificate {
	return &x509.Certificate{
		Subject:     pkix.Name{Organization: []string{"cosla"}, OrganizationalUnit: []string{string(Node)}, CommonName: site},
		DNSNames:    []string{site, "localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
}

func clientTemplate() *x509.Certificate {
	return &x509.Certificate{
		Subject:     pkix.Name{Organization: []string{"cosla"}, OrganizationalUnit: []string{string(Client)}, CommonName: "client"},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
}

func ensureLeaf(f Files, ca *x509.Certificate, caKey *ecdsa.PrivateKey, tmpl *x509.Certificate) error {
	if _, err := os.Stat(f.Cert); err == nil {
		return nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	der, err := sign(tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	return writeKeyPair(f.Cert, f.Key, der, key)
}

// sign fills in the serial number and validity and signs tmpl.
func sign(tmpl, parent *x509.Certificate, pub *ecdsa.PublicKey, signer *ecdsa.PrivateKey) ([]byte, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	tmpl.SerialNumber = serial
	// An hour back, so a peer whose clock is a little behind accepts it.
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = tmpl.NotBefore.Add(validity)
	return x509.CreateCertificate(rand.Reader, tmpl, parent, pub, signer)
}

// writeKeyPair writes the key before the certificate: Ensure takes a
// certificate's presence to mean its key is there too.
func writeKeyPair(certPath, keyPath string, der []byte, key *ecdsa.PrivateKey) error {
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return err
	}
	return os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
}

// Load reads a holder's files into a tls.Config for both ends of a
// connection: it presents the holder's certificate, requires and verifies
// the peer's against the authority, and speaks TLS 1.3 only. A dialer sets
// ServerName to the site it expects (package host does, per peer).
func Load(f Files) (*tls.Config, error) {
	pair, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		return nil, fmt.Errorf("cosla: tls: %w", err)
	}
	caPEM, err := os.ReadFile(f.CA)
	if err != nil {
		return nil, fmt.Errorf("cosla: tls: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("cosla: tls: %s holds no PEM certificate", f.CA)
	}
	return &tls.Config{
		Certificates: []tls.Certificate{pair},
		RootCAs:      pool,
		ClientCAs:    pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		MinVersion:   tls.VersionTLS13,
	}, nil
}

// PeerRole returns the role and name (a node's site) of the verified
// certificate a connection's peer presented.
func PeerRole(cs tls.ConnectionState) (Role, string, error) {
	if len(cs.VerifiedChains) == 0 || len(cs.VerifiedChains[0]) == 0 {
		return "", "", fmt.Errorf("%w: the peer presented no verified certificate", ErrNoRole)
	}
	leaf := cs.VerifiedChains[0][0]
	for _, r := range []Role{Node, Client} {
		if slices.Contains(leaf.Subject.OrganizationalUnit, string(r)) {
			return r, leaf.Subject.CommonName, nil
		}
	}
	return "", "", fmt.Errorf("%w: %q", ErrNoRole, leaf.Subject)
}
