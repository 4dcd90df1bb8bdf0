package replica_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cosla/cosla/internal/hlc"
	"github.com/cosla/cosla/internal/replica"
	"github.com/cosla/cosla/internal/storage"
	"github.com/cosla/cosla/internal/wire"
)

// TestRepairKeepsNewest checks read repair at a secondary: a repaired
// version is kept over older ones that replication delivers later, by
// pull or push, also after a restart; a repair older than what the
// replica holds is ignored; and the high timestamp moves only with
// replication.
func TestRepairKeepsNewest(t *testing.T) {
	env := &partitionEnv{engine: storage.NewMem(), rng: rand.New(rand.NewPCG(1, 2))}
	n := env.start(t)
	layout := wire.Layout{Name: "t", ID: 9, Tablets: []wire.Tablet{{Primary: "p/r1", Secondaries: []wire.NodeID{"s/r1"}}},
		Replication: wire.Replication{Mode: wire.ModePush, Interval: time.Minute}}
	if r := env.ask(t, n, &wire.CreateTableRequest{Req: 1, Layout: layout}).(*wire.CreateTableReply); r.Code != wire.OK {
		t.Fatalf("create table: %s", r.Code)
	}
	ref := wire.TabletRef{Table: 9}
	ts := func(s int64) hlc.Timestamp { return hlc.Timestamp{WallNanos: s * int64(time.Second)} }
	get := func(n *replica.Node) *wire.GetReply {
		t.Helper()
		r := env.ask(t, n, &wire.GetRequest{Req: 2, Tablet: ref, Key: "k"}).(*wire.GetReply)
		if r.Code != wire.OK {
			t.Fatalf("get: %s", r.Code)
		}
		return r
	}

	n.Receive("s/c1", &wire.Repair{Tablet: ref, Entry: wire.Entry{TS: ts(5), Key: "k", Value: []byte("v5")}})
	if r := get(n); string(r.Value) != "v5" || r.VersionTS != ts(5) || r.HighTS != (hlc.Timestamp{}) {
		t.Fatalf("after repair: %q at %s, high %s; want v5 at %s, high zero", r.Value, r.VersionTS, r.HighTS, ts(5))
	}
	// A pull served before v5 existed arrives late, with older versions.
	n.Receive("p/r1", &wire.PullReply{Tablet: ref, High: ts(3), Entries: []wire.Entry{
		{TS: ts(1), Key: "k", Value: []byte("v1")}, {TS: ts(2), Key: "other", Value: []byte("o2")}}})
	if r := get(n); string(r.Value) != "v5" || r.HighTS != ts(3) {
		t.Fatalf("after an older pull: %q, high %s; want v5, high %s", r.Value, r.HighTS, ts(3))
	}
	// After a restart, an older push is still not applied over it.
	n = env.start(t)
	n.Receive("p/r1", &wire.Push{Tablet: ref, Prev: ts(2), Entry: wire.Entry{TS: ts(4), Key: "k", Value: []byte("v4")}})
	if r := get(n); string(r.Value) != "v5" || r.HighTS != ts(4) {
		t.Fatalf("after restart and an older push: %q, high %s; want v5, high %s", r.Value, r.HighTS, ts(4))
	}
	// A repair older than the version held is ignored; a newer version
	// from replication replaces the repaired one.
	n.Receive("s/c1", &wire.Repair{Tablet: ref, Entry: wire.Entry{TS: ts(4), Key: "k", Value: []byte("stale")}})
	n.Receive("p/r1", &wire.Push{Tablet: ref, Prev: ts(4), Entry: wire.Entry{TS: ts(6), Key: "k", Value: []byte("v6")}})
	if r := get(n); string(r.Value) != "v6" || r.HighTS != ts(6) {
		t.Fatalf("after a newer push: %q, high %s; want v6, high %s", r.Value, r.HighTS, ts(6))
	}
	if m := n.Metrics(); m.RepairsApplied != 0 || m.RepairsIgnored != 1 {
		t.Errorf("after restart: %d repairs applied, %d ignored; want 0 and 1", m.RepairsApplied, m.RepairsIgnored)
	}
}
