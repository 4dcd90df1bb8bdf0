package harness_test

import (
	"testing"
	"time"

	"github.com/cosla/cosla/internal/core/causal"
	"github.com/cosla/cosla/internal/core/clientcore"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/runtime/harness"
	"github.com/cosla/cosla/internal/runtime/site"
	"github.com/cosla/cosla/internal/runtime/topology"
)

// TestCausalWorldRunsTheSiteRecipe checks that a causal world is the
// production process (issue 26 item 1): every site's nodes are package
// site's (a storage node a replica core with the table's causal store
// beside it, the coordinator and cache causal Nodes serving the table
// they learnt from its creation), its clients are client cores, and a
// Put and a Get at another site go through them.
func TestCausalWorldRunsTheSiteRecipe(t *testing.T) {
	topo := topology.Topology{Name: "two", LocalRTT: time.Millisecond,
		Sites: []topology.Site{{Name: "a", Replicas: []string{"r1"}, Clients: []string{"c1"}},
			{Name: "b", Replicas: []string{"r1"}, Clients: []string{"c1"}}},
		Links: []topology.Link{{A: "a", B: "b", RTT: 40 * time.Millisecond}}}
	w, err := harness.NewCausal(harness.CausalOptions{Seed: 1, Topology: topo, Rings: [][]string{{"a"}, {"b"}}, Strategy: causal.Karma})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range w.Stores {
		h, _ := w.Sim.Handler(id)
		if _, ok := h.(*causal.Beside); !ok || site.Replica(h) == nil {
			t.Errorf("storage node %s runs a %T, want a replica core with a causal Node beside it", id, h)
		}
		if _, err := w.Store(id); err != nil {
			t.Error(err)
		}
	}
	for _, id := range append(w.Coordinators, w.Caches...) {
		h, _ := w.Sim.Handler(id)
		if n, ok := h.(*causal.Node); !ok || n.Core(w.Layout.Table) == nil {
			t.Errorf("%s runs a %T that does not serve table %d", id, h, w.Layout.Table)
		}
	}
	writer, ws, err := w.Session("a/c1")
	if err != nil {
		t.Fatal(err)
	}
	var put clientcore.PutResult
	var putErr error
	if err := w.Await(time.Minute, func(done func()) {
		putErr = writer.Put(ws, "k", []byte("v"), clientcore.PutOptions{}, func(r clientcore.PutResult, err error) { put, putErr = r, err; done() })
	}); err != nil || putErr != nil || put.Node != "a/cc" {
		t.Fatalf("put: %v, %v, answered by %s, want a/cc", err, putErr, put.Node)
	}
	if err := w.Sim.Run(w.Sim.Now() + 5*time.Second); err != nil {
		t.Fatal(err)
	}
	reader, rs, err := w.Session("b/c1")
	if err != nil {
		t.Fatal(err)
	}
	var get clientcore.GetResult
	var getErr error
	if err := w.Await(time.Minute, func(done func()) {
		getErr = reader.Get(rs, "k", clientcore.GetOptions{}, func(r clientcore.GetResult, err error) { get, getErr = r, err; done() })
	}); err != nil || getErr != nil || string(get.Value) != "v" || get.Causal == nil || get.Causal.Version != (wire.Version{TS: put.TS, Origin: "a/cc"}) {
		t.Fatalf("get at b: %v, %v, value %q, read %+v; want v at %v", err, getErr, get.Value, get.Causal, put.TS)
	}
	// Each operation counts once in its client's Metrics.
	if m := writer.Metrics(); m.Puts != 1 || m.PutErrors != 0 {
		t.Errorf("writer's Metrics: %d Puts, %d failed; want 1, 0", m.Puts, m.PutErrors)
	}
	if m := reader.Metrics(); m.Gets != 1 || m.Unmet != 0 || len(m.SLAs) != 1 || m.SLAs[0].Total.Gets != 1 {
		t.Errorf("reader's Metrics: %d Gets, %d unmet, SLAs %+v; want 1 Get, met, under one SLA", m.Gets, m.Unmet, m.SLAs)
	}
}
