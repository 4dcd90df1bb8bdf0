package main

import (
	"strings"
	"testing"
)

// TestTabletChangeFlags checks the argument checking of cluster failover
// and cluster replica add|remove without a cluster: bad input exits 2
// with a message naming the flag; input that passes the checks reaches
// the lookup of the cluster, which finds none: exit 1.
func TestTabletChangeFlags(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"cluster", "failover", "--table", "t"}, exitUsage, "--to is required"},
		{[]string{"cluster", "failover", "--table", "t", "--to", ""}, exitUsage, `--to "": want a site`},
		{[]string{"cluster", "failover", "--to", "us", "--tablet", "-2"}, exitUsage, "--tablet -2"},
		{[]string{"cluster", "failover", "--to", "us", "--timeout", "0s"}, exitUsage, "--timeout 0s"},
		{[]string{"cluster", "failover", "--to", "us", "extra"}, exitUsage, `unexpected argument "extra"`},
		{[]string{"cluster", "replica", "add", "--table", "t"}, exitUsage, "--node is required"},
		{[]string{"cluster", "replica", "add", "--node", "india/r1/x"}, exitUsage, `--node "india/r1/x"`},
		{[]string{"cluster", "replica", "remove", "--node", "/r1"}, exitUsage, `--node "/r1"`},
		{[]string{"cluster", "failover", "--table", "t", "--to", "us"}, exitFailed, "no cluster running"},
		{[]string{"cluster", "replica", "remove", "--table", "t", "--tablet", "1", "--node", "india/r1"}, exitFailed, "no cluster running"},
	} {
		args := append(tc.args, "--dir", dir)
		code, _, stderr := runCosla(t, args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("cosla %s: exit %d, want %d with %q in stderr:\n%s", strings.Join(args, " "), code, tc.code, tc.want, stderr)
		}
	}
}
