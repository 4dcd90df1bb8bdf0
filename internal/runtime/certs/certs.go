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
//     requests from it (package host checks each message). It names a
//     client in its Common Name, and its holder may send only as that
//     client (CheckClientID): as SITE/NAME or SITE/NAME-SUFFIX, at any
//     site, so that several processes (two CLI commands, a benchmark's
//     many clients) can hold one certificate at once, each under an ID of
//     its own. A name has no '-', so no name is another's prefix.
//
// Every file is written readable by its owner only (package private).
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
	"strings"
	"time"

	"github.com/cosla/cosla/internal/runtime/private"
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

// Errors.
var (
	// ErrNoRole is returned for a certificate that carries no cosla role.
	ErrNoRole = errors.New("cosla: certificate carries no cosla role")
	// ErrBadClientName is returned for a client name a certificate
	// cannot carry.
	ErrBadClientName = errors.New("cosla: bad client name")
	// ErrNoAuthority is returned when a directory holds no certificate
	// authority to issue a certificate with.
	ErrNoAuthority = errors.New("cosla: no certificate authority")
	// ErrNotClientID is returned for a client ID that the certificate
	// its sender holds does not name.
	ErrNotClientID = errors.New("cosla: client ID not the certificate's")
)

// DefaultClient is the name of the client certificate Ensure issues,
// which the CLI uses.
const DefaultClient = "client"

// clientNameMax bounds a client name's bytes.
const clientNameMax = 64

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

// ClientFiles names the default client certificate's files in dir.
func ClientFiles(dir string) Files { return NamedClientFiles(dir, DefaultClient) }

// NamedClientFiles names the files of client name's certificate in dir:
// client.pem for DefaultClient, client-NAME.pem for the others.
func NamedClientFiles(dir, name string) Files {
	base := DefaultClient
	if name != DefaultClient {
		base += "-" + name
	}
	return Files{Cert: filepath.Join(dir, base+".pem"), Key: filepath.Join(dir, base+"-key.pem"), CA: filepath.Join(dir, "ca.pem")}
}

// Ensure makes dir hold a certificate authority, a node certificate for
// each site and the DefaultClient's certificate, creating what is missing
// and keeping what exists: a cluster restarted on its directory keeps its
// identities, and clients holding its client certificates keep working.
func Ensure(dir string, sites []string) error {
	if err := private.MkdirAll(dir); err != nil {
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
	return ensureLeaf(ClientFiles(dir), ca, caKey, clientTemplate(DefaultClient))
}

// IssueClient makes dir, which holds a certificate authority (Ensure),
// hold a certificate for client name too, and returns its files; one
// already there is kept (created false).
func IssueClient(dir, name string) (f Files, created bool, err error) {
	if err := ValidClientName(name); err != nil {
		return Files{}, false, err
	}
	f = NamedClientFiles(dir, name)
	if _, err := os.Stat(f.Cert); err == nil {
		return f, false, nil
	}
	certPath, keyPath := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "ca-key.pem")
	if _, err := os.Stat(keyPath); err != nil {
		return Files{}, false, fmt.Errorf("%w in %s (cosla cluster up or cluster plan makes one): %w", ErrNoAuthority, dir, err)
	}
	ca, caKey, err := readCA(certPath, keyPath)
	if err != nil {
		return Files{}, false, err
	}
	if err := ensureLeaf(f, ca, caKey, clientTemplate(name)); err != nil {
		return Files{}, false, err
	}
	return f, true, nil
}

// ValidClientName reports why name cannot name a client, or nil: a name
// is 1 to 64 letters, digits, '_' and '.', not starting with '.'. It has
// no '-', which separates a client ID's suffix (CheckClientID), and no
// '/', which separates its site.
func ValidClientName(name string) error {
	if name == "" || len(name) > clientNameMax || name[0] == '.' {
		return fmt.Errorf("%w %q: want 1 to %d letters, digits, '_' or '.', not starting with '.'", ErrBadClientName, name, clientNameMax)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.') {
			return fmt.Errorf("%w %q: %q is not a letter, a digit, '_' or '.'", ErrBadClientName, name, r)
		}
	}
	return nil
}

// CheckClientID reports, wrapping ErrNotClientID, why the holder of
// client name's certificate may not send as the node id, or nil: it may
// as SITE/NAME and SITE/NAME-SUFFIX, for any site and any suffix without
// '/'.
func CheckClientID(name, id string) error {
	site, rest, ok := strings.Cut(id, "/")
	if ok && site != "" && !strings.Contains(rest, "/") {
		if suffix, found := strings.CutPrefix(rest, name); found && (suffix == "" || len(suffix) > 1 && suffix[0] == '-') {
			return nil
		}
	}
	return fmt.Errorf("%w: the certificate of client %q sends as SITE/%s or SITE/%s-SUFFIX, not as %q", ErrNotClientID, name, name, name, id)
}

// ClientNodeName returns the name a client node that holds cfg's client
// certificate takes when it picks suffix: NAME-suffix, which
// CheckClientID allows; without TLS (cfg nil), suffix itself.
func ClientNodeName(cfg *tls.Config, suffix string) (string, error) {
	if cfg == nil {
		return suffix, nil
	}
	name, err := ClientName(cfg)
	if err != nil {
		return "", err
	}
	return name + "-" + suffix, nil
}

// ClientName returns the name of the client certificate cfg presents (its
// first), as Load builds it.
func ClientName(cfg *tls.Config) (string, error) {
	if cfg == nil || len(cfg.Certificates) == 0 || len(cfg.Certificates[0].Certificate) == 0 {
		return "", fmt.Errorf("%w: the TLS configuration presents no certificate", ErrNoRole)
	}
	leaf := cfg.Certificates[0].Leaf
	if leaf == nil {
		var err error
		if leaf, err = x509.ParseCertificate(cfg.Certificates[0].Certificate[0]); err != nil {
			return "", fmt.Errorf("cosla: tls: %w", err)
		}
	}
	role, name, err := leafRole(leaf)
	if err != nil {
		return "", err
	}
	if role != Client {
		return "", fmt.Errorf("%w: the certificate is a %s certificate (of %q), not a client's", ErrNoRole, role, name)
	}
	return name, nil
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

func clientTemplate(name string) *x509.Certificate {
	return &x509.Certificate{
		Subject:     pkix.Name{Organization: []string{"cosla"}, OrganizationalUnit: []string{string(Client)}, CommonName: name},
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
	if err := private.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})); err != nil {
		return err
	}
	return private.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
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

// PeerRole returns the role and name (a node's site, a client's name) of
// the verified certificate a connection's peer presented.
func PeerRole(cs tls.ConnectionState) (Role, string, error) {
	if len(cs.VerifiedChains) == 0 || len(cs.VerifiedChains[0]) == 0 {
		return "", "", fmt.Errorf("%w: the peer presented no verified certificate", ErrNoRole)
	}
	return leafRole(cs.VerifiedChains[0][0])
}

// leafRole returns the role and name a certificate carries.
func leafRole(leaf *x509.Certificate) (Role, string, error) {
	for _, r := range []Role{Node, Client} {
		if slices.Contains(leaf.Subject.OrganizationalUnit, string(r)) {
			return r, leaf.Subject.CommonName, nil
		}
	}
	return "", "", fmt.Errorf("%w: %q", ErrNoRole, leaf.Subject)
}
