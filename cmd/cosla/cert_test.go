package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cosla/cosla/internal/runtime/certs"
)

// TestClusterCertClient: `cluster cert client NAME` issues NAME a
// certificate of the directory's authority, readable by its owner only,
// keeps it when asked again, and refuses a bad name or a directory with
// no authority as bad input, before writing anything.
func TestClusterCertClient(t *testing.T) {
	dir := t.TempDir()
	if err := certs.Ensure(certs.ClusterDir(dir), []string{"england"}); err != nil {
		t.Fatal(err)
	}
	cert := func(args ...string) (int, string) {
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"cluster", "cert", "client"}, args...), &stdout, &stderr)
		return code, stdout.String() + stderr.String()
	}
	if code, out := cert("alice", "--dir", dir); code != 0 || !strings.Contains(out, `issued client certificate "alice"`) {
		t.Fatalf("cluster cert client alice: exit %d\n%s", code, out)
	}
	f := certs.NamedClientFiles(certs.ClusterDir(dir), "alice")
	for _, path := range []string{f.Cert, f.Key} {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, mode %v; want 0600", path, err, fi.Mode())
		}
	}
	if cfg, err := certs.Load(f); err != nil {
		t.Errorf("alice's files: %v", err)
	} else if name, err := certs.ClientName(cfg); name != "alice" || err != nil {
		t.Errorf("alice's certificate names %q, %v", name, err)
	}
	if code, out := cert("--dir", dir, "alice"); code != 0 || !strings.Contains(out, "kept the existing") {
		t.Errorf("cluster cert client alice again, flags first: exit %d\n%s", code, out)
	}
	empty := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bob-1", "--dir", dir}, "bad client name"},
		{[]string{"--dir", dir}, "want: cosla cluster cert client NAME"},
		{[]string{"bob", "--dir", empty}, "no certificate authority"},
	} {
		if code, out := cert(tc.args...); code != exitUsage || !strings.Contains(out, tc.want) {
			t.Errorf("cluster cert client %s: exit %d, want %d saying %q\n%s", strings.Join(tc.args, " "), code, exitUsage, tc.want, out)
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(empty, "tls")); len(entries) != 0 {
		t.Errorf("a refused request wrote %d files", len(entries))
	}
}

// TestClusterCertClientDirEnv: without --dir, `cluster cert client`
// uses $COSLA_DIR's authority, as every command that uses a local cluster
// does.
func TestClusterCertClientDirEnv(t *testing.T) {
	dir := t.TempDir()
	if err := certs.Ensure(certs.ClusterDir(dir), []string{"england"}); err != nil {
		t.Fatal(err)
	}
	t.Setenv(dirEnv, dir)
	var stdout, stderr bytes.Buffer
	code := run([]string{"cluster", "cert", "client", "carol"}, &stdout, &stderr)
	f := certs.NamedClientFiles(certs.ClusterDir(dir), "carol")
	if _, err := os.Stat(f.Cert); code != 0 || err != nil {
		t.Fatalf("cluster cert client carol with %s=%s: exit %d, %v; want carol's certificate there\n%s%s", dirEnv, dir, code, err, &stdout, &stderr)
	}
}
