package replica_test

import (
	"testing"

	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/replica"
	"github.com/cosla/cosla/internal/core/wire"
)

// TestFenceLiftedByALaterLeader: a secondary fenced by a HighRequest of
// a leader in term 1 whose transition was given up takes its primary's
// versions again once a leader of a later term tells it the tablet is
// still at its epoch; the same notice from the fencing term, or one
// sent before it (a stale one), keeps the fence. TestRandomized seeds
// 13 and 35 left a secondary behind such a fence for good.
func TestFenceLiftedByALaterLeader(t *testing.T) {
	f := newFenceWorld(t)
	f.b.Receive("a/cfg", &wire.HighRequest{Tablet: govRef, Epoch: 2, Term: 1})
	f.g.taken("a/cfg")
	f.notice(1)
	f.push("v2", 1)
	if r := f.g.get("b/r1", "k"); string(r.Value) != "v1" {
		t.Fatalf("after a notice of the fencing term: %v, want v1 still (fenced)", r)
	}
	f.notice(2)
	if m := f.b.Metrics(); m.FencesLifted != 1 {
		t.Fatalf("fences lifted %d, want 1", m.FencesLifted)
	}
	f.push("v3", 2)
	if r := f.g.get("b/r1", "k"); string(r.Value) != "v3" {
		t.Fatalf("after a later leader's notice: %v, want v3 from the primary", r)
	}
}

// TestStaleLeaderFencesNot: a HighRequest of a leader whose term a later
// leader's notice has already passed is refused, and the secondary goes
// on taking its primary's versions. TestRandomized seed 632 left a
// secondary behind the fence of such a request, delivered after the
// later leader's notice, for good.
func TestStaleLeaderFencesNot(t *testing.T) {
	f := newFenceWorld(t)
	f.notice(2)
	f.b.Receive("a/cfg", &wire.HighRequest{Tablet: govRef, Epoch: 2, Term: 1})
	replies := f.g.taken("a/cfg")
	if len(replies) != 1 {
		t.Fatalf("the stale leader was sent %v, want one HighReply", replies)
	}
	if r, ok := replies[0].(*wire.HighReply); !ok || r.Code != wire.Invalid {
		t.Fatalf("the stale leader was sent %v, want a HighReply refusing it (Invalid)", replies[0])
	}
	f.push("v2", 1)
	if r := f.g.get("b/r1", "k"); string(r.Value) != "v2" {
		t.Fatalf("after a stale leader's HighRequest: %v, want v2 from the primary (not fenced)", r)
	}
}

// fenceWorld is a leased primary a/r1 and its secondary b/r1, which has
// pulled k=v1 up to the high timestamp hb.
type fenceWorld struct {
	g  *govWorld
	b  *replica.Node
	hb hlc.Timestamp
}

func newFenceWorld(t *testing.T) *fenceWorld {
	g := leased(t, "a/r1", "b/r1")
	g.put("a/r1", "k", "v1", 0)
	g.fire("b/r1", "replica.pullTimer")
	return &fenceWorld{g: g, b: g.node("b/r1"), hb: g.get("b/r1", "k").HighTS}
}

// push sends b the primary's next version of k, value, after ns
// nanoseconds past hb.
func (f *fenceWorld) push(value string, ns int64) {
	f.b.Receive("a/r1", &wire.Push{Tablet: govRef, Prev: f.g.get("b/r1", "k").VersionTS, Epoch: 1,
		Entry: wire.Entry{TS: hlc.Timestamp{WallNanos: f.hb.WallNanos + ns}, Key: "k", Value: []byte(value)}})
}

// notice tells b, from a leader of term, that the tablet is at epoch 1.
func (f *fenceWorld) notice(term uint64) {
	layout := wire.Layout{Name: "t", ID: govRef.Table, Tablets: []wire.Tablet{{Primary: "a/r1", Secondaries: []wire.NodeID{"b/r1"}}},
		Replication: wire.Replication{Mode: wire.ModePull, Interval: 60e9}}
	f.b.Receive("c/cfg", &wire.EpochChange{Layout: layout, Tablet: 0, Epoch: 1, Term: term})
	f.g.taken("c/cfg")
}
