package cluster

import (
	"context"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// checkPrivate fails the test for every file or directory under dir that
// its group or others may read, write or enter.
func checkPrivate(t *testing.T, dir string) {
	t.Helper()
	files := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		files++
		if fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s: mode %v, want none for group and others", path, fi.Mode().Perm())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("checked the modes of %d files and directories in %s", files, dir)
}

// controlRequest sends a request to the control API at addr and returns
// its status code.
func controlRequest(t *testing.T, method, addr, path, host, token, contentType string) int {
	t.Helper()
	body := ""
	if method == http.MethodPost {
		body = "{}"
	}
	req, err := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// checkControl checks that the control API of c refuses a request without
// the token of TokenFile, with a body that is not JSON or with a Host
// header naming another host (a web page's requests, whatever its name
// resolves to), and that c keeps running; then that Control, which has
// the token, asks for the status, changes a link and stops the cluster.
func checkControl(ctx context.Context, t *testing.T, c *Cluster, a, b string) {
	t.Helper()
	addr := c.Info().Control
	tokenData, _ := os.ReadFile(filepath.Join(c.opts.Dir, TokenFile))
	token := strings.TrimSpace(string(tokenData))
	for _, tc := range []struct {
		name, method, path, host, token, contentType string
		want                                         int
	}{
		{"a text/plain POST (a browser's simple request)", http.MethodPost, "/shutdown", "", "", "text/plain", http.StatusForbidden},
		{"a JSON POST without the token", http.MethodPost, "/shutdown", "", "", "application/json", http.StatusForbidden},
		{"a POST with a wrong token", http.MethodPost, "/shutdown", "", "x" + token, "application/json", http.StatusForbidden},
		{"a status request without the token", http.MethodGet, "/status", "", "", "", http.StatusForbidden},
		{"a text/plain POST with the token", http.MethodPost, "/shutdown", "", token, "text/plain", http.StatusUnsupportedMediaType},
		{"a POST without a content type", http.MethodPost, "/link", "", token, "", http.StatusUnsupportedMediaType},
		{"a foreign Host", http.MethodPost, "/shutdown", "rebound.example", token, "application/json", http.StatusForbidden},
	} {
		if got := controlRequest(t, tc.method, addr, tc.path, tc.host, tc.token, tc.contentType); got != tc.want {
			t.Errorf("%s to %s: status %d, want %d", tc.name, tc.path, got, tc.want)
		}
	}
	select {
	case <-c.stop:
		t.Fatal("a refused request stopped the cluster")
	default:
	}
	if len(token) != 64 {
		t.Fatalf("%s holds %q, want a 64-digit token", TokenFile, token)
	}
	ctl, _, err := Connect(c.opts.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := ctl.Status(ctx); err != nil || len(st.Sites) != len(c.Info().Sites) {
		t.Fatalf("status with the token: %+v, %v", st, err)
	}
	if err := ctl.SetLink(ctx, LinkRequest{A: a, B: b, RTTMS: 6}); err != nil {
		t.Fatalf("link change with the token: %v", err)
	}
	if err := ctl.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown with the token: %v", err)
	}
	c.Wait(ctx)
	if ctx.Err() != nil {
		t.Fatal("the cluster did not stop when asked with the token")
	}
}
