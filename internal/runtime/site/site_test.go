package site_test

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/cosla/cosla/internal/core/causal"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/runtime/site"
	"github.com/cosla/cosla/internal/runtime/topology"
)

// TestNodes checks the recipe: each storage node, in order, a replica core
// with a causal Node beside it, then the site's coordinator and cache,
// each a causal Node; every call of New a handler of its own (a restarted
// node gets a fresh one).
func TestNodes(t *testing.T) {
	nodes := site.Nodes("a", []string{"r1", "r2"}, site.Options{})
	var ids []wire.NodeID
	var roles []site.Role
	for _, n := range nodes {
		ids = append(ids, n.ID)
		roles = append(roles, n.Role)
		h := n.New()
		if h == n.New() {
			t.Errorf("%s: New returned the same handler twice", n.ID)
		}
		if site.Causal(h) == nil {
			t.Errorf("%s: %T holds no causal Node", n.ID, h)
		}
		_, beside := h.(*causal.Beside)
		if isStorage := n.Role == site.Storage; beside != isStorage || (site.Replica(h) != nil) != isStorage {
			t.Errorf("%s (%s): handler %T, replica core %v", n.ID, n.Role, h, site.Replica(h) != nil)
		}
	}
	wantIDs := []wire.NodeID{"a/r1", "a/r2", wire.NodeID("a/" + causal.CoordinatorName), wire.NodeID("a/" + causal.CacheName)}
	wantRoles := []site.Role{site.Storage, site.Storage, site.Coordinator, site.Cache}
	if !slices.Equal(ids, wantIDs) || !slices.Equal(roles, wantRoles) {
		t.Fatalf("nodes %v roles %v, want %v %v", ids, roles, wantIDs, wantRoles)
	}
}

// TestTopologyRTTs checks the seeds of a site's coordinator and cache:
// the site's own nodes at the local round trip, every other site's
// storage nodes and cache at the link's, and a site with no link to
// this one left out.
func TestTopologyRTTs(t *testing.T) {
	topo := topology.Topology{LocalRTT: time.Millisecond,
		Sites: []topology.Site{{Name: "a", Replicas: []string{"s1", "s2"}}, {Name: "b", Replicas: []string{"s1"}}, {Name: "c", Replicas: []string{"s1"}}},
		Links: []topology.Link{{A: "a", B: "b", RTT: 80 * time.Millisecond}}}
	got := site.TopologyRTTs(topo, "a")
	want := map[wire.NodeID]time.Duration{"a/s1": time.Millisecond, "a/s2": time.Millisecond, "a/" + causal.CacheName: time.Millisecond,
		"b/s1": 80 * time.Millisecond, "b/" + causal.CacheName: 80 * time.Millisecond}
	if !maps.Equal(got, want) {
		t.Fatalf("TopologyRTTs(a) = %v, want %v", got, want)
	}
}

// TestZones checks Karma 4.4's split of a site into availability zones:
// its coordinator and cache in AZ-F, its storage nodes and its
// configuration member in AZ-B.
func TestZones(t *testing.T) {
	want := map[site.Role]site.Zone{site.Storage: site.Back, site.Config: site.Back, site.Coordinator: site.Front, site.Cache: site.Front}
	for role, z := range want {
		if got := role.Zone(); got != z {
			t.Errorf("%s.Zone() = %s, want %s", role, got, z)
		}
	}
	opts := site.Options{}
	opts.Config.Member.Voters = site.Voters([]string{"a"})
	if got := site.ZoneNodes("a", []string{"r1", "r2"}, opts, site.Back); !slices.Equal(got, []wire.NodeID{"a/r1", "a/r2", "a/cfg"}) {
		t.Errorf("AZ-B of a voter site: %v, want its storage nodes and its configuration member", got)
	}
	if got := site.ZoneNodes("a", []string{"r1"}, site.Options{}, site.Front); !slices.Equal(got, []wire.NodeID{"a/cc", "a/cache"}) {
		t.Errorf("AZ-F: %v, want the coordinator and the cache", got)
	}
}
