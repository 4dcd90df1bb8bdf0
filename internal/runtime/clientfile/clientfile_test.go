package clientfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cosla/cosla/internal/runtime/certs"
)

func TestWriteLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "client.yaml")
	in := File{Site: "china", Table: "usertable", Nodes: map[string]string{"england/r1": "10.0.0.1:7100"},
		TLS:    certs.Files{Cert: "client.pem", Key: "client-key.pem", CA: "/etc/cosla/ca.pem"},
		Create: &Table{Name: "usertable", Partition: "range", Tablets: []Tablet{{Primary: "england/r1"}}}}
	if err := Write(path, in); err != nil {
		t.Fatal(err)
	}
	out, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	want := certs.Files{Cert: filepath.Join(dir, "client.pem"), Key: filepath.Join(dir, "client-key.pem"), CA: "/etc/cosla/ca.pem"}
	if out.TLS != want {
		t.Errorf("tls %+v; want relative paths resolved against %s: %+v", out.TLS, dir, want)
	}
	if out.Site != "china" || out.Create == nil || out.Create.Tablets[0].Primary != "england/r1" {
		t.Errorf("read back %+v", out)
	}
}

func TestLoadRejects(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"no site", "nodes: {england/r1: a:1}\ninsecure: true\n", "site must be"},
		{"no nodes", "site: china\ninsecure: true\n", "nodes: want every storage node"},
		{"bad node", "site: china\nnodes: {r1: a:1}\ninsecure: true\n", `"r1" is not site/node`},
		{"no address", "site: china\nnodes: {england/r1: \"\"}\ninsecure: true\n", "england/r1 has no address"},
		{"no tls", "site: china\nnodes: {england/r1: a:1}\n", "tls: cert, key and ca are required"},
		{"both", "site: china\nnodes: {england/r1: a:1}\ninsecure: true\ntls: {cert: c, key: k, ca: ca}\n", "choose one"},
		{"unknown field", "site: china\nnodes: {england/r1: a:1}\ninsecure: true\nsites: x\n", "field sites not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "client.yaml")
			if err := os.WriteFile(path, []byte(tc.text), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Load(path)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load: %v; want ErrInvalid saying %q", err, tc.want)
			}
		})
	}
}
