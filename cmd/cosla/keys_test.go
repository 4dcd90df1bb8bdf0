package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNamesNotUTF8Rejected: a table or site name that is not UTF-8
// cannot travel (names are protobuf strings; keys are bytes): it is bad
// input, exit 2, named, before anything is dialed (the config's only
// node is a closed port).
func TestNamesNotUTF8Rejected(t *testing.T) {
	config := filepath.Join(t.TempDir(), "client.yaml")
	if err := os.WriteFile(config, []byte("site: a\ntable: t\ninsecure: true\nnodes: {a/r1: \"127.0.0.1:1\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"get", "--config", config, "--table", "t\xff", "k"}, `--table "t\xff" is not valid UTF-8`},
		{[]string{"put", "--config", config, "--site", "\xc3", "k", "v"}, `--site "\xc3" is not valid UTF-8`},
	} {
		code, _, stderr := runCosla(t, tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("cosla %q: exit %d, want %d with %s in stderr:\n%s", tc.args, code, exitUsage, tc.want, stderr)
		}
	}
}
