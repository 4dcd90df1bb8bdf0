package replica_test

import (
	"testing"

	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/wire"
)

// TestFenceLiftedByALaterLeader: a secondary fenced by a HighRequest of
// a leader in term 1 whose transition was given up takes its primary's
// versions again once a leader of a later term tells it the tablet is
// still at its epoch; the same notice from the fencing term, or one
// sent before it (a stale one), keeps the fence. TestRandomized seeds
// 13 and 35 left a secondary behind such a fence for good.
func TestFenceLiftedByALaterLeader(t *testing.T) {
	g := leased(t, "a/r1", "b/r1")
	b := g.node("b/r1")
	g.put("a/r1", "k", "v1", 0)
	g.fire("b/r1", "replica.pullTimer")
	hb := g.get("b/r1", "k").HighTS
	b.Receive("a/cfg", &wire.HighRequest{Tablet: govRef, Epoch: 2, Term: 1})
	g.taken("a/cfg")
	push := func(value string, ts hlc.Timestamp) {
		b.Receive("a/r1", &wire.Push{Tablet: govRef, Prev: g.get("b/r1", "k").VersionTS, Epoch: 1,
			Entry: wire.Entry{TS: ts, Key: "k", Value: []byte(value)}})
	}
	layout := wire.Layout{Name: "t", ID: govRef.Table, Tablets: []wire.Tablet{{Primary: "a/r1", Secondaries: []wire.NodeID{"b/r1"}}},
		Replication: wire.Replication{Mode: wire.ModePull, Interval: 60e9}}
	notice := func(term uint64) {
		b.Receive("c/cfg", &wire.EpochChange{Layout: layout, Tablet: 0, Epoch: 1, Term: term})
	}
	notice(1)
	push("v2", hlc.Timestamp{WallNanos: hb.WallNanos + 1})
	if r := g.get("b/r1", "k"); string(r.Value) != "v1" {
		t.Fatalf("after a notice of the fencing term: %v, want v1 still (fenced)", r)
	}
	notice(2)
	if m := b.Metrics(); m.FencesLifted != 1 {
		t.Fatalf("fences lifted %d, want 1", m.FencesLifted)
	}
	push("v3", hlc.Timestamp{WallNanos: hb.WallNanos + 2})
	if r := g.get("b/r1", "k"); string(r.Value) != "v3" {
		t.Fatalf("after a later leader's notice: %v, want v3 from the primary", r)
	}
}

// TestStaleLeaderFencesNot: a HighRequest of a leader whose term a later
// leader's notice has already passed is refused, and the secondary goes
// on taking its primary's versions. TestRandomized seed 632 left a
// secondary behind the fence of such a request, delivered after the
// later leader's notice, for good.
func TestStaleLeaderFencesNot(t *testing.T) {
	g := leased(t, "a/r1", "b/r1")
	b := g.node("b/r1")
	g.put("a/r1", "k", "v1", 0)
	g.fire("b/r1", "replica.pullTimer")
	hb := g.get("b/r1", "k").HighTS
	layout := wire.Layout{Name: "t", ID: govRef.Table, Tablets: []wire.Tablet{{Primary: "a/r1", Secondaries: []wire.NodeID{"b/r1"}}},
		Replication: wire.Replication{Mode: wire.ModePull, Interval: 60e9}}
	b.Receive("c/cfg", &wire.EpochChange{Layout: layout, Tablet: 0, Epoch: 1, Term: 2})
	g.taken("c/cfg")
	b.Receive("a/cfg", &wire.HighRequest{Tablet: govRef, Epoch: 2, Term: 1})
	replies := g.taken("a/cfg")
	if len(replies) != 1 {
		t.Fatalf("the stale leader was sent %v, want one HighReply", replies)
	}
	if r, ok := replies[0].(*wire.HighReply); !ok || r.Code != wire.Invalid {
		t.Fatalf("the stale leader was sent %v, want a HighReply refusing it (Invalid)", replies[0])
	}
	b.Receive("a/r1", &wire.Push{Tablet: govRef, Prev: g.get("b/r1", "k").VersionTS, Epoch: 1,
		Entry: wire.Entry{TS: hlc.Timestamp{WallNanos: hb.WallNanos + 1}, Key: "k", Value: []byte("v2")}})
	if r := g.get("b/r1", "k"); string(r.Value) != "v2" {
		t.Fatalf("after a stale leader's HighRequest: %v, want v2 from the primary (not fenced)", r)
	}
}
