package harness_test

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/runtime/harness"
	"github.com/cosla/cosla/internal/runtime/site"
)

// failoverStream seeds scheduleFailovers's draws.
const failoverStream = 0x6661696c6f766572

// scheduleFailovers gives half the worlds, drawn from a stream of their
// own, the faults a failover answers (DESIGN.md section 10): a tablet's
// primary crashed, or its site cut off from every other site while it
// runs on (a primary that does not know it has been deposed, whose
// clients there still reach it), for longer than a lease, and the
// configuration service's leader crashed, so that a new leader waits
// out every lease it cannot know. Each is healed within the work period.
// The primary and the leader are the ones at the fault's time: the
// ledger's view of the layout, and the member that leads then.
func scheduleFailovers(t *testing.T, seed uint64, w *harness.World, rw randomWorld, led *ledger, start, span time.Duration) {
	r := rand.New(rand.NewPCG(seed, failoverStream))
	if r.IntN(2) == 0 {
		return
	}
	for range 1 + r.IntN(3) {
		at := start + time.Duration(r.Int64N(int64(span-20*time.Second)))
		d := 5*time.Second + time.Duration(r.Int64N(int64(10*time.Second)))
		tablet := r.IntN(len(rw.layout.Tablets))
		switch r.IntN(3) {
		case 0:
			w.Sim.At(at, func() { crashFor(t, seed, w, led.layout.Tablets[tablet].Primary, d) })
		case 1:
			w.Sim.At(at, func() { isolate(t, seed, w, rw, siteOf(led.layout.Tablets[tablet].Primary), d) })
		case 2:
			w.Sim.At(at, func() {
				for _, id := range site.Voters(rw.topo.ConfigSites()) {
					if m, err := w.Member(id); err == nil && m.Status().Leading {
						crashFor(t, seed, w, id, d)
					}
				}
			})
		}
	}
	if r.IntN(2) == 0 {
		return
	}
	// Clocks that run apart: leases expire by each node's own clock.
	for _, id := range append(slices.Clone(rw.replicas), site.Voters(rw.topo.ConfigSites())...) {
		must(t, seed, w.Sim.SetRate(id, 1+maxDrift*(2*r.Float64()-1)))
	}
}

// maxDrift bounds how far a node's clock rate strays from true in the
// failover worlds. A lease is safe while its holder, counting Length -
// Margin from before it asked, stops before the leader, counting Length +
// Margin from after the commit, moves it: (L-M)/(1-d) <= (L+M)/(1+d), so
// d <= M/L, 6.25% with the defaults (4 s, 250 ms).
const maxDrift = 0.03

// crashFor crashes a node and restarts it d later.
func crashFor(t *testing.T, seed uint64, w *harness.World, id wire.NodeID, d time.Duration) {
	must(t, seed, w.Sim.Crash(id))
	w.Sim.At(w.Sim.Now()+d, func() { must(t, seed, w.Sim.Restart(id)) })
}

// isolate cuts a site off from every other site for d.
func isolate(t *testing.T, seed uint64, w *harness.World, rw randomWorld, cut string, d time.Duration) {
	for _, s := range rw.topo.Sites {
		if s.Name != cut {
			must(t, seed, w.Sim.Partition(cut, s.Name))
			w.Sim.At(w.Sim.Now()+d, func() { must(t, seed, w.Sim.Heal(cut, s.Name)) })
		}
	}
}

func siteOf(id wire.NodeID) string {
	s, _, _ := strings.Cut(string(id), "/")
	return s
}
