package site_test

import (
	"slices"
	"testing"

	"github.com/cosla/cosla/internal/core/causal"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/runtime/site"
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
