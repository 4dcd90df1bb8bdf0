package sim_test

import (
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/cosla/cosla/internal/runtime/sim"
)

// TestDuplicate checks that a link with duplication 1 delivers every
// message twice, each copy after its original and both before the next
// message, and that 0 restores single delivery.
func TestDuplicate(t *testing.T) {
	w := newWorld(t, 1, "a", "b")
	w.add("x", "a", sim.NodeOptions{}, false)
	w.add("y", "b", sim.NodeOptions{}, false)
	must(t, w.sim.SetLatency("a", "b", sim.Latency{Mean: time.Millisecond, Jitter: time.Millisecond}))
	must(t, w.sim.SetDuplicate("a", "b", 1))
	w.at(0, func() {
		for i := range 50 {
			w.node("x").send("y", uint64(i))
		}
	})
	w.run(time.Second)
	var want []uint64
	for i := range 50 {
		want = append(want, uint64(i), uint64(i))
	}
	if got := w.node("y").reqs(); !slices.Equal(got, want) {
		t.Fatalf("with duplication 1, y got %v, want each message twice in order", got)
	}
	if st := w.sim.Stats(); st.Duplicated != 50 {
		t.Errorf("Stats.Duplicated = %d, want 50", st.Duplicated)
	}
	must(t, w.sim.SetDuplicate("a", "b", 0))
	w.at(2*time.Second, func() { w.node("x").send("y", 99) })
	w.run(3 * time.Second)
	if got := w.node("y").reqs(); len(got) != 101 || got[100] != 99 {
		t.Errorf("with duplication 0, a message arrived %d times", len(got)-100)
	}
	for _, p := range []float64{-0.1, 1.5, math.NaN()} {
		if err := w.sim.SetDuplicate("a", "b", p); !errors.Is(err, sim.ErrConfig) {
			t.Errorf("SetDuplicate(%v) = %v, want ErrConfig", p, err)
		}
	}
}

// TestPause checks that a paused node handles nothing, messages or
// timers, until the pause ends, then everything that waited, in order,
// and that its clock went on.
func TestPause(t *testing.T) {
	w := newWorld(t, 1, "a")
	w.add("x", "a", sim.NodeOptions{}, false)
	w.add("y", "a", sim.NodeOptions{}, false)
	w.at(10*time.Millisecond, func() {
		must(t, w.sim.Pause("y", 100*time.Millisecond))
		w.node("y").env.After(20*time.Millisecond, "tick")
		w.node("x").send("y", 1)
		w.node("x").send("y", 2)
	})
	w.at(50*time.Millisecond, func() { w.node("x").send("y", 3) })
	w.run(time.Second)
	y := w.node("y")
	if got := y.reqs(); !slices.Equal(got, []uint64{1, 2, 3}) {
		t.Fatalf("y got %v, want 1 2 3", got)
	}
	for _, a := range y.got {
		if a.at != 110*time.Millisecond {
			t.Errorf("message %d handled at %s, want at the pause's end, 110ms", a.req, a.at)
		}
	}
	if len(y.fired) != 1 || y.fired[0].at != 110*time.Millisecond {
		t.Errorf("timers %v, want tick at 110ms", y.fired)
	}
	if err := w.sim.Pause("nobody", time.Second); !errors.Is(err, sim.ErrConfig) {
		t.Errorf("Pause of an unknown node: %v, want ErrConfig", err)
	}
}

// TestDiskErrors checks that with disk errors set a node's writes fail
// (and apply nothing) about as often as asked, that a restart recovers
// without errors, and that 0 ends them.
func TestDiskErrors(t *testing.T) {
	w := newWorld(t, 1, "a")
	w.add("x", "a", sim.NodeOptions{}, false)
	must(t, w.sim.SetDiskErrors("x", 0.5))
	failed := 0
	w.at(0, func() {
		for range 1000 {
			if err := w.node("x").put("k", "v", true); err != nil {
				failed++
			}
		}
	})
	w.run(time.Second)
	if failed < 400 || failed > 600 {
		t.Fatalf("%d of 1000 writes failed with disk errors 0.5", failed)
	}
	if st := w.sim.Stats(); st.DiskErrors != int64(failed) {
		t.Errorf("Stats.DiskErrors = %d, want %d", st.DiskErrors, failed)
	}
	must(t, w.sim.Crash("x"))
	must(t, w.sim.Restart("x"))
	must(t, w.sim.SetDiskErrors("x", 0))
	w.at(2*time.Second, func() {
		if err := w.node("x").put("k", "v", true); err != nil {
			t.Errorf("write with disk errors 0: %v", err)
		}
	})
	w.run(3 * time.Second)
	if err := w.sim.SetDiskErrors("x", 2); !errors.Is(err, sim.ErrConfig) {
		t.Errorf("SetDiskErrors(2): %v, want ErrConfig", err)
	}
}

// TestPartitionNodes checks that a cut between two nodes drops their
// messages both ways while the rest of their sites still talk, within a
// site as across sites, and that HealNodes ends it.
func TestPartitionNodes(t *testing.T) {
	w := newWorld(t, 1, "a", "b")
	must(t, w.sim.SetLatency("a", "b", sim.Latency{Mean: 10 * time.Millisecond}))
	w.add("x", "a", sim.NodeOptions{}, false)
	w.add("x2", "a", sim.NodeOptions{}, false)
	w.add("y", "b", sim.NodeOptions{}, false)
	must(t, w.sim.PartitionNodes("x", "y"))
	must(t, w.sim.PartitionNodes("x2", "x"))
	w.at(0, func() {
		w.node("x").send("y", 1)
		w.node("y").send("x", 2)
		w.node("x2").send("y", 3) // another node of the site: unaffected
		w.node("x2").send("x", 4) // within a site: cut too
	})
	w.run(time.Second)
	if got := w.node("y").reqs(); !slices.Equal(got, []uint64{3}) {
		t.Fatalf("y received %v, want [3]: only x's message is cut", got)
	}
	if got := w.node("x").reqs(); len(got) != 0 {
		t.Fatalf("x received %v across cuts", got)
	}
	must(t, w.sim.HealNodes("y", "x"))
	must(t, w.sim.HealNodes("x", "x2"))
	w.at(2*time.Second, func() {
		w.node("x").send("y", 5)
		w.node("x2").send("x", 6)
	})
	w.run(3 * time.Second)
	if got := w.node("y").reqs(); !slices.Equal(got, []uint64{3, 5}) {
		t.Fatalf("after HealNodes, y received %v, want [3 5]", got)
	}
	if got := w.node("x").reqs(); !slices.Equal(got, []uint64{6}) {
		t.Fatalf("after HealNodes, x received %v, want [6]", got)
	}
	if err := w.sim.PartitionNodes("x", "nobody"); !errors.Is(err, sim.ErrConfig) {
		t.Errorf("PartitionNodes with an unknown node: %v, want ErrConfig", err)
	}
}
