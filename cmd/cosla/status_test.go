package main

import (
	"strings"
	"testing"

	"github.com/cosla/cosla/internal/core/config"
	"github.com/cosla/cosla/internal/core/replica"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/runtime/cluster"
	"github.com/cosla/cosla/internal/runtime/server"
)

// TestClusterStatusText: `cluster status` shows each tablet's epoch, a
// primary that holds no lease as such, and who leads the configuration
// service, by the latest term its members report.
func TestClusterStatusText(t *testing.T) {
	site := func(name string, tablet replica.TabletStatus, leader wire.NodeID, term uint64) cluster.SiteStatus {
		return cluster.SiteStatus{Name: name, Up: true, Serve: &server.Status{
			Nodes:  []server.NodeStatus{{ID: wire.NodeID(name + "/r1"), Metrics: replica.Metrics{Tablets: []replica.TabletStatus{tablet}}}},
			Config: &server.ConfigStatus{ID: wire.NodeID(name + "/cfg"), Status: config.Status{Leader: leader, Term: term}},
		}}
	}
	st := cluster.Status{Topology: "pileus4", Sites: []cluster.SiteStatus{
		site("england", replica.TabletStatus{Table: "t", Primary: true, Epoch: 2}, "england/cfg", 2),
		site("us", replica.TabletStatus{Table: "t", Primary: true, Leased: true, Epoch: 3}, "us/cfg", 3),
	}}
	var b strings.Builder
	if err := printClusterStatus(&b, st); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"role", "epoch", "primary (no lease)  2", "primary             3",
		"configuration service: members england/cfg, us/cfg, leader us/cfg (term 3)"} {
		if !strings.Contains(out, want) {
			t.Errorf("cluster status lacks %q:\n%s", want, out)
		}
	}
}
