package cosla_test

import (
	"context"
	"errors"
	"regexp"
	"testing"
	"time"

	"github.com/cosla/cosla"
	"github.com/cosla/cosla/internal/runtime/certs"
	"github.com/cosla/cosla/internal/runtime/nettest"
)

// TestClientIDFromCertificate: over TLS a client's ID derives from its
// certificate's name (Config.Name empty: NAME-<random>), and a Name that
// the certificate does not allow, or a certificate that names no client,
// is refused before anything is sent; without TLS any name goes.
func TestClientIDFromCertificate(t *testing.T) {
	dir, defaultTLS := testCerts(t, "england")
	f, _, err := certs.IssueClient(dir, "alice")
	if err != nil {
		t.Fatal(err)
	}
	alice, err := cosla.LoadTLS(f.Cert, f.Key, f.CA)
	if err != nil {
		t.Fatal(err)
	}
	node := certs.NodeFiles(dir, "england")
	nodeTLS, err := cosla.LoadTLS(node.Cert, node.Key, node.CA)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	nodes := map[string]string{"england/r1": nettest.RefusedAddr(t)}
	open := func(cfg cosla.Config) (string, error) {
		cfg.Site, cfg.Nodes = "us", nodes
		c, err := cosla.Open(ctx, cfg)
		if err != nil {
			return "", err
		}
		defer c.Close()
		return c.ID(), nil
	}
	for _, tc := range []struct {
		name string
		cfg  cosla.Config // TLS or Insecure
		want string       // a pattern of the ID, or "" for ErrInvalid
	}{
		{"", cosla.Config{TLS: alice}, `^us/alice-[0-9a-f]{8}$`},
		{"alice", cosla.Config{TLS: alice}, `^us/alice$`},
		{"alice-cart", cosla.Config{TLS: alice}, `^us/alice-cart$`},
		{"", cosla.Config{TLS: defaultTLS}, `^us/client-[0-9a-f]{8}$`},
		{"bob", cosla.Config{TLS: alice}, ""},
		{"alicebob", cosla.Config{TLS: alice}, ""},
		{"client-1", cosla.Config{TLS: alice}, ""},
		{"a/b", cosla.Config{TLS: alice}, ""},
		{"", cosla.Config{TLS: nodeTLS}, ""},
		{"", cosla.Config{Insecure: true}, `^us/c-[0-9a-f]{8}$`},
		{"bob", cosla.Config{Insecure: true}, `^us/bob$`},
	} {
		tc.cfg.Name = tc.name
		id, err := open(tc.cfg)
		switch {
		case tc.want == "" && !errors.Is(err, cosla.ErrInvalid):
			t.Errorf("Open with Name %q: ID %q, %v; want ErrInvalid", tc.name, id, err)
		case tc.want != "" && (err != nil || !regexp.MustCompile(tc.want).MatchString(id)):
			t.Errorf("Open with Name %q: ID %q, %v; want an ID matching %s", tc.name, id, err, tc.want)
		}
	}
}
