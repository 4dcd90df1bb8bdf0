package replica_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/replica"
	"github.com/cosla/cosla/internal/core/storage"
	"github.com/cosla/cosla/internal/core/wire"
)

// repairEnv is partitionEnv with the timers kept, to be fired by hand.
type repairEnv struct {
	partitionEnv
	timers []any
}

func (e *repairEnv) After(_ time.Duration, timer any) { e.timers = append(e.timers, timer) }

// TestRepairCatchesUp checks read repair at a secondary (repair.go): a
// Repair carries only a timestamp, and the secondary answers OK once
// replication from its primary has brought it there: at once when it is
// already there, else after the pull the Repair sets off, which it
// acknowledges to the primary (for the Puts waiting for their write
// level). A timestamp in the future (any client may send one) neither
// freezes a key nor writes anything: the secondary goes on applying what
// its primary sends, and answers Behind once RepairWait has passed.
// Beyond RepairsWaitingMax waiting, a Repair is answered Overloaded;
// pulls coalesce, however many Repairs wait, but one unanswered for half
// RepairWait is sent again.
func TestRepairCatchesUp(t *testing.T) {
	env := &repairEnv{partitionEnv: partitionEnv{wall: 1_700_000_000 * int64(time.Second), engine: storage.NewMem(), rng: rand.New(rand.NewPCG(1, 2))}}
	n := replica.New(replica.Options{RepairWait: time.Second, RepairsWaitingMax: 2})
	if err := n.Start(env); err != nil {
		t.Fatal(err)
	}
	layout := wire.Layout{Name: "t", ID: 9, Tablets: []wire.Tablet{{Primary: "p/r1", Secondaries: []wire.NodeID{"s/r1"}}},
		Replication: wire.Replication{Mode: wire.ModePush, Interval: time.Minute}}
	n.Receive("s/c1", &wire.CreateTableRequest{Req: 1, Layout: layout})
	ref := wire.TabletRef{Table: 9}
	ts := func(s int64) hlc.Timestamp { return hlc.Timestamp{WallNanos: s * int64(time.Second)} }
	deliver := func(from wire.NodeID, m wire.Msg) []wire.Msg {
		env.sent = env.sent[:0]
		n.Receive(from, m)
		return append([]wire.Msg(nil), env.sent...)
	}
	// waitEnds lets RepairWait pass and fires the repair timer.
	waitEnds := func() []wire.Msg {
		env.wall += int64(2 * time.Second)
		env.sent = env.sent[:0]
		for _, timer := range env.timers {
			if fmt.Sprint(timer) == "repair(9/0)" {
				n.Fire(timer)
			}
		}
		return append([]wire.Msg(nil), env.sent...)
	}
	read := func() string {
		t.Helper()
		r := env.ask(t, n, &wire.GetRequest{Req: 2, Tablet: ref, Key: "k"}).(*wire.GetReply)
		return string(r.Value) + "@" + r.VersionTS.String() + " high=" + r.HighTS.String()
	}
	expect := func(what string, got []wire.Msg, want ...string) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: sent %v, want %v", what, got, want)
		}
		for i := range got {
			if fmt.Sprint(got[i]) != want[i] {
				t.Fatalf("%s: sent %v, want %v", what, got, want)
			}
		}
	}

	deliver("p/r1", &wire.PullReply{Tablet: ref, High: ts(3), Entries: []wire.Entry{{TS: ts(1), Key: "k", Value: []byte("v1")}}})
	expect("a repair the secondary holds", deliver("s/c1", &wire.Repair{Req: 10, Tablet: ref, TS: ts(2)}),
		"RepairReply(req=10 high=3.000000000,0)")
	expect("a repair above the high timestamp", deliver("s/c1", &wire.Repair{Req: 11, Tablet: ref, TS: ts(5)}),
		"Pull(tablet=9/0 since=3.000000000,0)")
	expect("the pull's reply", deliver("p/r1", &wire.PullReply{Tablet: ref, Since: ts(3), High: ts(6),
		Entries: []wire.Entry{{TS: ts(5), Key: "k", Value: []byte("v5")}}}),
		"PushAck(tablet=9/0 high=6.000000000,0)", "RepairReply(req=11 high=6.000000000,0)")
	if got, want := read(), "v5@5.000000000,0 high=6.000000000,0"; got != want {
		t.Fatalf("after a repair: %s, want %s (the primary's version)", got, want)
	}

	// A timestamp a year ahead: the pull comes back below it, and the
	// key goes on with replication; the wait runs out.
	future := ts(6 + 365*24*3600)
	expect("a repair in the future", deliver("s/c1", &wire.Repair{Req: 12, Tablet: ref, TS: future}),
		"Pull(tablet=9/0 since=6.000000000,0)")
	expect("the pull's reply", deliver("p/r1", &wire.PullReply{Tablet: ref, Since: ts(6), High: ts(8)}),
		"PushAck(tablet=9/0 high=8.000000000,0)")
	deliver("p/r1", &wire.Push{Tablet: ref, Prev: ts(5), Entry: wire.Entry{TS: ts(9), Key: "k", Value: []byte("v9")}})
	if got, want := read(), "v9@9.000000000,0 high=9.000000000,0"; got != want {
		t.Fatalf("after a repair in the future and a push: %s, want %s", got, want)
	}
	expect("the wait's end", waitEnds(), `RepairReply(req=12 high=9.000000000,0 err="replica behind the timestamp")`)

	// Three repairs: one pull, two wait, the third is refused; the wait
	// runs out before the pull comes back.
	expect("the first of three", deliver("s/c1", &wire.Repair{Req: 13, Tablet: ref, TS: future}),
		"Pull(tablet=9/0 since=9.000000000,0)")
	expect("the second", deliver("s/c1", &wire.Repair{Req: 14, Tablet: ref, TS: future}))
	expect("the third", deliver("s/c1", &wire.Repair{Req: 15, Tablet: ref, TS: future}),
		`RepairReply(req=15 high=9.000000000,0 err="node overloaded")`)
	expect("the wait's end", waitEnds(),
		`RepairReply(req=13 high=9.000000000,0 err="replica behind the timestamp")`,
		`RepairReply(req=14 high=9.000000000,0 err="replica behind the timestamp")`)
	// That pull was lost: a repair after half RepairWait sends another.
	expect("a repair while the pull is long outstanding", deliver("s/c1", &wire.Repair{Req: 16, Tablet: ref, TS: ts(10)}),
		"Pull(tablet=9/0 since=9.000000000,0)")
	expect("its reply", deliver("p/r1", &wire.PullReply{Tablet: ref, Since: ts(9), High: ts(11)}),
		"PushAck(tablet=9/0 high=11.000000000,0)", "Pull(tablet=9/0 since=11.000000000,0)", // asked for by repair 14
		"RepairReply(req=16 high=11.000000000,0)")
	if m := n.Metrics(); m.RepairsAcked != 3 || m.RepairsRefused != 4 {
		t.Errorf("%d repairs acknowledged, %d refused; want 3 and 4", m.RepairsAcked, m.RepairsRefused)
	}
	if got, want := read(), "v9@9.000000000,0 high=11.000000000,0"; got != want {
		t.Fatalf("at the end: %s, want %s", got, want)
	}
}
