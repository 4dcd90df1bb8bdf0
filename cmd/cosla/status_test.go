package main

import (
	"strings"
	"testing"

	"github.com/cosla/cosla/internal/runtime/cluster"
)

// TestClusterStatusShowsRestarts: a site the supervisor restarted is named
// with its count and how its last process ended; a site never restarted
// is not.
func TestClusterStatusShowsRestarts(t *testing.T) {
	st := cluster.Status{Topology: "pileus4", Dir: "/d", Sites: []cluster.SiteStatus{
		{Name: "england", PID: 0, Error: "connection refused", Restarts: 2, LastExit: "signal: killed at 2026-11-28T05:14:52Z"},
		{Name: "us", PID: 7, Error: "connection refused"},
	}}
	var b strings.Builder
	if err := printClusterStatus(&b, st); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.Contains(out, "site england: restarted 2 times by the supervisor; its last process ended: signal: killed at 2026-11-28T05:14:52Z") {
		t.Errorf("status does not show england's restarts:\n%s", out)
	}
	if strings.Contains(out, "site us: restarted") {
		t.Errorf("status shows restarts of a site never restarted:\n%s", out)
	}
}
