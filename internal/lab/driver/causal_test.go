package driver

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/cosla/cosla/internal/core/causal"
	"github.com/cosla/cosla/internal/core/clientcore"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/lab/workload"
	"github.com/cosla/cosla/internal/runtime/harness"
	"github.com/cosla/cosla/internal/runtime/topology"
)

// causalTopology is two sites 40 ms apart, one ring each.
func causalTopology() topology.Topology {
	return topology.Topology{Name: "two", LocalRTT: time.Millisecond,
		Sites: []topology.Site{{Name: "a", Replicas: []string{"r1", "r2"}, Clients: []string{"c1"}},
			{Name: "b", Replicas: []string{"r1"}}},
		Links: []topology.Link{{A: "a", B: "b", RTT: 40 * time.Millisecond}}}
}

// causalCosla is a group's client core configuration on a causal table.
var causalCosla = Cosla{SLA: harness.CausalSLA, Strategy: clientcore.Closest}

// TestSimTargetCausal drives a causal world through the driver's
// ordinary SimTarget, its clients client cores as on a real cluster:
// Puts are local, reads report where they were served from, a
// get-transaction reads its keys, every op succeeds; the groups' nodes
// are the topology's c1 and new ones.
func TestSimTargetCausal(t *testing.T) {
	for _, strategy := range []causal.Strategy{causal.Karma, causal.COPSPR} {
		t.Run(strategy.String(), func(t *testing.T) {
			w, err := harness.NewCausal(harness.CausalOptions{Seed: 1, Topology: causalTopology(), Rings: [][]string{{"a"}, {"b"}}, Strategy: strategy})
			if err != nil {
				t.Fatal(err)
			}
			keys, err := workload.NewUniform(20)
			if err != nil {
				t.Fatal(err)
			}
			mix, err := NewKeyMix([]Weighted{{Kind: Put, Weight: 1}, {Kind: Get, Weight: 3}, {Kind: GetTx, Weight: 1}}, keys, 100)
			if err != nil {
				t.Fatal(err)
			}
			mix.TxKeys = 3
			var ops []Op
			rec := &Recorder{OnOp: func(g *Group, op *Op) { ops = append(ops, *op) }}
			groups := []*Group{
				{Name: "a", Site: "a", Sessions: 4, Rand: rand.New(rand.NewPCG(1, 2)), Streams: []Stream{{Mix: mix}}, Cosla: causalCosla},
				{Name: "b", Site: "b", Sessions: 2, Rand: rand.New(rand.NewPCG(3, 4)), Streams: []Stream{{Mix: mix}}, Cosla: causalCosla},
			}
			target := &SimTarget{World: w.World, Table: w.Name}
			d, err := New(target, Spec{Groups: groups, Steps: 600, Recorder: rec})
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := w.Sim.Handler("b/c1"); !ok {
				t.Fatal("no client node b/c1 was added")
			}
			d.Start(SimRuntime{Sim: w.Sim})
			if err := w.Sim.RunUntil(time.Hour, d.Done); err != nil || !d.Done() || d.Err() != nil {
				t.Fatalf("run: %v, done %v, driver %v", err, d.Done(), d.Err())
			}
			sources := map[wire.Source]int{}
			var txs int
			for _, op := range ops {
				if op.Err != nil {
					t.Fatalf("%s %s: %v", op.Kind, op.Key, op.Err)
				}
				switch op.Kind {
				case Put:
					if op.Latency() > 5*time.Millisecond || op.TS.IsZero() {
						t.Errorf("put %s took %s (ts %v): not local", op.Key, op.Latency(), op.TS)
					}
				case Get:
					sources[op.Source]++
					if op.Source == wire.FromRing && (op.Ring < 0 || op.Node == "") {
						t.Errorf("get %s from a ring: ring %d node %q", op.Key, op.Ring, op.Node)
					}
					// A cache hit is of a stable version, and binds the
					// session to no ring, as a read of the write buffer.
					if op.Source != wire.FromRing && (op.Ring != wire.NoRing || op.Source == wire.FromCache && op.InFlight) {
						t.Errorf("get %s from %s (in flight %v): ring %d", op.Key, op.Source, op.InFlight, op.Ring)
					}
				case GetTx:
					txs++
					if len(op.Keys) != 2 || op.Rounds < 1 {
						t.Errorf("get-transaction of %s %v: %d rounds", op.Key, op.Keys, op.Rounds)
					}
				}
			}
			if txs == 0 || sources[wire.FromRing] == 0 || sources[wire.FromBuffer] == 0 {
				t.Errorf("sources %v, %d transactions: want reads from rings and write buffers, and transactions", sources, txs)
			}
			if got := sources[wire.FromCache] > 0; got != strategy.Cached() {
				t.Errorf("%s: %d cache hits", strategy, sources[wire.FromCache])
			}
		})
	}
}

// TestSimTargetCausalRefusesRTW: a read-test-write on a causal table is
// refused as unsupported.
func TestSimTargetCausalRefusesRTW(t *testing.T) {
	w, err := harness.NewCausal(harness.CausalOptions{Seed: 1, Topology: causalTopology(), Rings: [][]string{{"a"}, {"b"}}, Strategy: causal.KarmaNC})
	if err != nil {
		t.Fatal(err)
	}
	keys, _ := workload.NewUniform(5)
	mix, _ := NewKeyMix([]Weighted{{Kind: RTW, Weight: 1}}, keys, 0)
	d, err := New(&SimTarget{World: w.World, Table: w.Name}, Spec{Groups: []*Group{{Name: "a", Site: "a", Rand: rand.New(rand.NewPCG(1, 2)),
		Streams: []Stream{{Mix: mix}}, Cosla: causalCosla}}, Steps: 10, Recorder: &Recorder{}})
	if err != nil {
		t.Fatal(err)
	}
	d.Start(SimRuntime{Sim: w.Sim})
	if err := w.Sim.RunUntil(time.Hour, d.Done); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(d.Err(), ErrUnsupported) {
		t.Fatalf("driver error %v, want ErrUnsupported", d.Err())
	}
}

// TestSimTargetCausalReadTimeout checks that a causal read that times out
// is recorded as such with the node that did not answer (issue 25 item
// 6): under COPS-PR a client at a is bound to ring a, whose nodes are
// down; the coordinator's read times out, and the op's error, its node
// and its measure trace record name the ring's node it waited for.
func TestSimTargetCausalReadTimeout(t *testing.T) {
	w, err := harness.NewCausal(harness.CausalOptions{Seed: 1, Topology: causalTopology(), Rings: [][]string{{"a"}, {"b"}}, Strategy: causal.COPSPR})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []wire.NodeID{"a/r1", "a/r2"} {
		if err := w.Sim.Crash(id); err != nil {
			t.Fatal(err)
		}
	}
	keys, _ := workload.NewUniform(5)
	mix, _ := NewKeyMix([]Weighted{{Kind: Get, Weight: 1}}, keys, 0)
	var ops []Op
	rec := &Recorder{OnOp: func(g *Group, op *Op) { ops = append(ops, *op) }}
	d, err := New(&SimTarget{World: w.World, Table: w.Name}, Spec{Groups: []*Group{{Name: "a", Site: "a", Rand: rand.New(rand.NewPCG(1, 2)),
		Streams: []Stream{{Mix: mix}}, Cosla: causalCosla}}, Steps: 1, Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	d.Start(SimRuntime{Sim: w.Sim})
	if err := w.Sim.RunUntil(time.Hour, d.Done); err != nil {
		t.Fatal(err)
	}
	if len(ops) != 1 {
		t.Fatalf("%d ops recorded, want 1", len(ops))
	}
	op := ops[0]
	node := string(w.Layout.Node(0, op.Key))
	tr := op.TraceOp("run", 0)
	if !errors.Is(op.Err, clientcore.ErrTimeout) || !strings.Contains(op.Err.Error(), node+" of ring 0") || op.Node != node || op.Ring != 0 ||
		tr.OK || tr.Replica != node || !strings.Contains(tr.Error, node) {
		t.Fatalf("timed-out read of %s: err %v, node %q, ring %d; trace replica %q, error %q; want a timeout naming %s of ring 0",
			op.Key, op.Err, op.Node, op.Ring, tr.Replica, tr.Error, node)
	}
}
