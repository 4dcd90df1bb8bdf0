package driver

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cosla/cosla/internal/core/clientcore"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/runtime/harness"
	"github.com/cosla/cosla/internal/runtime/sim"
	"github.com/cosla/cosla/internal/runtime/topology"
	"github.com/cosla/cosla/sla"
)

// TestGroupMix checks dConssandra's groups: each step writes one fresh
// key Writes times, reads it at ReadBound and resets; the ops count
// under their own labels beside the step's, which alone counts as a
// step.
func TestGroupMix(t *testing.T) {
	ft := newFake(ms(1))
	var ops []Op
	rec := &Recorder{OnOp: collect(&ops)}
	mix := &GroupMix{Writes: 3, WriteBound: wire.Immediate, ReadBound: wire.Bound(20 * time.Millisecond), Reset: true,
		Keys: &FreshKeys{From: 100}}
	g := &Group{Name: "g", Rand: rand.New(rand.NewPCG(1, 1)), Streams: []Stream{{Mix: mix}}}
	runFake(t, ft, Spec{Groups: []*Group{g}, Steps: 2, Recorder: rec})
	if len(ops) != 10 {
		t.Fatalf("%d ops, want 10 (two groups of 3 writes, a read and a reset)", len(ops))
	}
	want := []struct {
		kind  Kind
		bound wire.Bound
		label string
	}{{Put, wire.Immediate, "write"}, {Put, wire.Immediate, "write"}, {Put, wire.Immediate, "write"},
		{Get, wire.Bound(20 * time.Millisecond), "read"}, {Get, wire.Unbounded, "reset"}}
	for i, op := range ops {
		w := want[i%5]
		if op.Kind != w.kind || op.Bound != w.bound || op.StatsLabel() != "group/"+w.label {
			t.Errorf("op %d: %s %s %q, want %s %s group/%s", i, op.Kind, op.Bound, op.StatsLabel(), w.kind, w.bound, w.label)
		}
		if group := i / 5; op.Key != ops[group*5].Key || (group > 0 && op.Key == ops[0].Key) {
			t.Errorf("op %d on key %q: a group's ops share one key, and groups do not", i, op.Key)
		}
	}
	// The read returns the group's last write: the fake target is
	// linearizable.
	if ops[3].ValueID != ops[2].ValueID {
		t.Errorf("read %q, want the last write %q", ops[3].ValueID, ops[2].ValueID)
	}
	got := map[string]string{}
	for _, s := range rec.Stats() {
		got[s.Op] = fmt.Sprintf("%d/%.0f", s.Count, s.LatencyMS.Max)
	}
	if want := map[string]string{"group": "2/5", "group/write": "6/1", "group/read": "2/1", "group/reset": "2/1"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("stats %v, want %v", got, want)
	}
	if gs := rec.Groups(); len(gs) != 1 || gs[0].Steps != 2 || gs[0].Ops != 10 {
		t.Errorf("groups %+v, want 2 steps of 10 ops", gs)
	}
}

// TestBoundedOpsInSimulator runs bounded ops through a cosla client in a
// simulated world whose client's nearest replica is a secondary: what
// the store reported reaches the ops.
func TestBoundedOpsInSimulator(t *testing.T) {
	topo := topology.Topology{Name: "two", LocalRTT: time.Millisecond,
		Sites: []topology.Site{{Name: "a", Replicas: []string{"r1"}}, {Name: "b", Replicas: []string{"r1"}, Clients: []string{"c1"}}},
		Links: []topology.Link{{A: "a", B: "b", RTT: 40 * time.Millisecond}}}
	// Every synced write waits 5 ms for the disk: the receiver's staging
	// record, the primary's order.
	w, err := harness.New(harness.Options{Seed: 1, Topology: topo, Storage: sim.NodeOptions{Fsync: sim.Latency{Mean: 5 * time.Millisecond}}})
	if err != nil {
		t.Fatal(err)
	}
	layout, err := topo.Layout("t", topo.PrimaryAt("a"), wire.Replication{Mode: wire.ModePull, Interval: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.CreateTable("b/c1", layout); err != nil {
		t.Fatal(err)
	}
	var ops []Op
	rec := &Recorder{OnOp: collect(&ops)}
	steps := []Step{
		// Reception only, then a read with no time for the write: NULL.
		{Label: "immediate", Ops: []Op{{Kind: Put, Key: "k", Bound: wire.Immediate}, {Kind: Get, Key: "k", Bound: wire.Immediate}}},
		// A read that waits for the write to be ordered and pulls it.
		{Label: "consistent", Ops: []Op{{Kind: Get, Key: "k", Bound: wire.Unbounded}}},
		// An unbounded write reaches every replica.
		{Label: "unbounded", Ops: []Op{{Kind: Put, Key: "k", Bound: wire.Unbounded}}},
		// A conditional insert of a new key writes; of an old one, not.
		{Label: "rtw", Ops: []Op{{Kind: RTW, Key: "fresh", Bound: wire.Unbounded}, {Kind: RTW, Key: "k", Bound: wire.Unbounded}}},
	}
	i := 0
	mix := mixFunc(func(*rand.Rand) (Step, bool) {
		i++
		return steps[i-1], i <= len(steps)
	})
	eventual := sla.SLA{{Consistency: sla.EventualConsistency, Latency: sla.Unbounded, Utility: 1}}
	g := &Group{Name: "b", Site: "b", Rand: rand.New(rand.NewPCG(1, 1)), Streams: []Stream{{Mix: mix}},
		Cosla: Cosla{SLA: eventual, Strategy: clientcore.Closest}}
	d, err := New(&SimTarget{World: w, Table: "t"}, Spec{Groups: []*Group{g}, Steps: len(steps), Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	// Let the client's monitor probe the replicas, so that it knows
	// which is nearest.
	if err := w.Sim.Run(w.Sim.Now() + 5*time.Second); err != nil {
		t.Fatal(err)
	}
	d.Start(SimRuntime{Sim: w.Sim})
	if err := w.Sim.RunUntil(w.Sim.Now()+time.Minute, d.Done); err != nil {
		t.Fatal(err)
	}
	if !d.Done() || d.Err() != nil || len(ops) != 6 {
		t.Fatalf("done %v, err %v, %d ops; want 6 ops", d.Done(), d.Err(), len(ops))
	}
	for i, op := range ops {
		if op.Err != nil {
			t.Errorf("op %d (%s): %v", i, op.Kind, op.Err)
		}
	}
	put, null, read, spread, insert, again := ops[0], ops[1], ops[2], ops[3], ops[4], ops[5]
	if put.Node != "b/r1" || put.Stage < wire.Received || put.Stage >= wire.Coordinated || !put.TS.IsZero() {
		t.Errorf("immediate put at %s: stage %s ts %s; want b/r1 before coordination, no timestamp", put.Node, put.Stage, put.TS)
	}
	if c := put.CheckOp(); !c.OK || !c.Pending {
		t.Errorf("immediate put as the checkers see it: %+v; want a pending write", c)
	}
	if c := spread.CheckOp(); !c.OK || c.Pending || c.TS.IsZero() {
		t.Errorf("unbounded put as the checkers see it: %+v; want ordered, with its timestamp", c)
	}
	if !null.Null || null.Found || null.ValueID != "" || null.Pending < 1 || null.CheckOp().OK {
		t.Errorf("immediate read: null %v found %v value %q pending %d; want NULL with the write pending", null.Null, null.Found, null.ValueID, null.Pending)
	}
	if read.Null || read.ValueID != put.ValueID || read.Applied < 1 || read.Pending != 0 {
		t.Errorf("consistent read: null %v value %q applied %d pending %d; want %q, applied", read.Null, read.ValueID, read.Applied, read.Pending, put.ValueID)
	}
	if spread.Stage != wire.Executed || spread.Primary || !spread.Wrote() {
		t.Errorf("unbounded put: stage %s primary %v; want executed at a secondary receiver", spread.Stage, spread.Primary)
	}
	if insert.Tested != wire.Held || !insert.Wrote() || again.Tested != wire.Failed || again.Wrote() || again.CheckOp().OK {
		t.Errorf("rtw: new key %s, old key %s; want held, then failed (not a write)", insert.Tested, again.Tested)
	}
	if tr := null.TraceOp("r", 0); tr.OK || tr.Error == "" {
		t.Errorf("a NULL read's trace line %+v: want not OK, with the reason", tr)
	}
}
