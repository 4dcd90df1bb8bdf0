package certs

import (
	"bytes"
	"crypto/tls"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
)

// handshake runs a TLS handshake over a pipe between a server holding
// server's config and a client holding client's, dialing name, and
// returns each end's state or error.
func handshake(server, client *tls.Config, name string) (srv, cli tls.ConnectionState, srvErr, cliErr error) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	client = client.Clone()
	client.ServerName = name
	s, c := tls.Server(a, server), tls.Client(b, client)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if srvErr = s.Handshake(); srvErr == nil {
			_, srvErr = s.Write([]byte{1})
		}
		a.Close()
	}()
	cliErr = c.Handshake()
	if cliErr == nil {
		// In TLS 1.3 the client finishes first; the server's verdict on
		// the client's certificate arrives with the first read.
		_, cliErr = c.Read(make([]byte, 1))
	}
	b.Close()
	<-done
	return s.ConnectionState(), c.ConnectionState(), srvErr, cliErr
}

func load(t *testing.T, f Files) *tls.Config {
	t.Helper()
	cfg, err := Load(f)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestRoles: a client authenticates to a node, which reads its role; two
// nodes authenticate each other by site; a node refuses to be taken for
// another site; a client certificate cannot serve.
func TestRoles(t *testing.T) {
	dir := t.TempDir()
	if err := Ensure(dir, []string{"england", "us"}); err != nil {
		t.Fatal(err)
	}
	england, us, client := load(t, NodeFiles(dir, "england")), load(t, NodeFiles(dir, "us")), load(t, ClientFiles(dir))

	srv, _, srvErr, _ := handshake(england, client, "england")
	if srvErr != nil {
		t.Fatalf("client to england: %v", srvErr)
	}
	if role, name, err := PeerRole(srv); role != Client || name != "client" || err != nil {
		t.Errorf("england sees the client as %q %q, %v", role, name, err)
	}
	srv, cli, srvErr, _ := handshake(england, us, "england")
	if srvErr != nil {
		t.Fatalf("us to england: %v", srvErr)
	}
	if role, name, err := PeerRole(srv); role != Node || name != "us" || err != nil {
		t.Errorf("england sees us as %q %q, %v", role, name, err)
	}
	if role, name, err := PeerRole(cli); role != Node || name != "england" || err != nil {
		t.Errorf("us sees england as %q %q, %v", role, name, err)
	}
	if _, _, _, err := handshake(england, client, "us"); err == nil {
		t.Error("england's certificate passed for us")
	}
	if _, _, _, err := handshake(client, england, "client"); err == nil {
		t.Error("a client certificate served a node")
	}
	if _, _, err := PeerRole(tls.ConnectionState{}); !errors.Is(err, ErrNoRole) {
		t.Errorf("PeerRole of no certificate: %v, want ErrNoRole", err)
	}
}

// TestEnsureKeeps: a second Ensure keeps every file, and a new site adds
// its certificate under the same authority.
func TestEnsureKeeps(t *testing.T) {
	dir := t.TempDir()
	if err := Ensure(dir, []string{"england"}); err != nil {
		t.Fatal(err)
	}
	read := func(path string) []byte {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	ca, node := read(NodeFiles(dir, "england").CA), read(NodeFiles(dir, "england").Cert)
	if err := Ensure(dir, []string{"england", "us"}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ca, read(NodeFiles(dir, "england").CA)) || !bytes.Equal(node, read(NodeFiles(dir, "england").Cert)) {
		t.Fatal("Ensure replaced existing certificates")
	}
	if _, _, srvErr, _ := handshake(load(t, NodeFiles(dir, "england")), load(t, NodeFiles(dir, "us")), "england"); srvErr != nil {
		t.Fatalf("us, added later, to england: %v", srvErr)
	}
	if fi, err := os.Stat(NodeFiles(dir, "us").Key); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %v, %v; want 0600", fi.Mode(), err)
	}
}

// TestIssueClient: a named client's certificate comes from the
// directory's authority, names the client, and is kept when issued again;
// without an authority, or with a name a certificate cannot carry,
// nothing is issued. Every file is its owner's alone.
func TestIssueClient(t *testing.T) {
	dir := t.TempDir()
	if err := Ensure(dir, []string{"england"}); err != nil {
		t.Fatal(err)
	}
	alice, created, err := IssueClient(dir, "alice")
	if err != nil || !created || alice != NamedClientFiles(dir, "alice") {
		t.Fatalf("IssueClient(alice) = %+v, %t, %v; want new files %+v", alice, created, err, NamedClientFiles(dir, "alice"))
	}
	srv, _, srvErr, _ := handshake(load(t, NodeFiles(dir, "england")), load(t, alice), "england")
	if srvErr != nil {
		t.Fatalf("alice to england: %v", srvErr)
	}
	if role, name, err := PeerRole(srv); role != Client || name != "alice" || err != nil {
		t.Errorf("england sees alice as %q %q, %v", role, name, err)
	}
	if name, err := ClientName(load(t, alice)); name != "alice" || err != nil {
		t.Errorf("ClientName(alice's config) = %q, %v", name, err)
	}
	if name, err := ClientName(load(t, ClientFiles(dir))); name != DefaultClient || err != nil {
		t.Errorf("ClientName(the default client's config) = %q, %v", name, err)
	}
	if _, err := ClientName(load(t, NodeFiles(dir, "england"))); !errors.Is(err, ErrNoRole) {
		t.Errorf("ClientName(a node's config): %v, want ErrNoRole", err)
	}
	before, _ := os.ReadFile(alice.Cert)
	if _, created, err := IssueClient(dir, "alice"); err != nil || created {
		t.Errorf("IssueClient(alice) again: created %t, %v; want kept", created, err)
	}
	if after, _ := os.ReadFile(alice.Cert); !bytes.Equal(before, after) {
		t.Error("IssueClient replaced alice's certificate")
	}
	for _, bad := range []string{"", "bob-2", "a/b", ".hidden", "é", strings.Repeat("x", 65)} {
		if _, _, err := IssueClient(dir, bad); !errors.Is(err, ErrBadClientName) {
			t.Errorf("IssueClient(%q): %v, want ErrBadClientName", bad, err)
		}
	}
	if _, _, err := IssueClient(t.TempDir(), "alice"); !errors.Is(err, ErrNoAuthority) {
		t.Errorf("IssueClient without an authority: %v, want ErrNoAuthority", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if fi, err := e.Info(); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, %v; want 0600", e.Name(), fi.Mode(), err)
		}
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the directory's mode %v, %v; want 0700", fi.Mode(), err)
	}
}

func TestCheckClientID(t *testing.T) {
	for _, tc := range []struct {
		name, id string
		ok       bool
	}{
		{"alice", "us/alice", true},
		{"alice", "china/alice-3f2a", true},
		{"alice", "us/alice-a-b", true},
		{"alice", "us/alice-", false},
		{"alice", "us/alicex", false},
		{"alice", "us/bob-1", false},
		{"alice", "us/alic", false},
		{"alice", "alice", false},
		{"alice", "/alice", false},
		{"alice", "us/alice-1/x", false},
		{"bob", "us/bob.2-1", false}, // bob.2 is another client
		{"client", "us/client-supervisor", true},
	} {
		if err := CheckClientID(tc.name, tc.id); (err == nil) != tc.ok {
			t.Errorf("CheckClientID(%q, %q) = %v, want allowed %t", tc.name, tc.id, err, tc.ok)
		} else if err != nil && !errors.Is(err, ErrNotClientID) {
			t.Errorf("CheckClientID(%q, %q) = %v, want ErrNotClientID", tc.name, tc.id, err)
		}
	}
}
