package replica_test

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/replica"
	"github.com/cosla/cosla/internal/core/storage"
	"github.com/cosla/cosla/internal/core/wire"
)

// TestPullBatchBytes: a pull reply stops before the version that would
// take it past PullBatchBytes, but always carries one version, however
// large; the secondary's next pull goes on from there.
func TestPullBatchBytes(t *testing.T) {
	env := &partitionEnv{engine: storage.NewMem(), rng: rand.New(rand.NewPCG(1, 2))}
	n := replica.New(replica.Options{PullBatchBytes: 2500})
	if err := n.Start(env); err != nil {
		t.Fatal(err)
	}
	layout := wire.Layout{Name: "t", ID: 9, Tablets: []wire.Tablet{{Primary: "s/r1", Secondaries: []wire.NodeID{"p/r1"}}},
		Replication: wire.Replication{Mode: wire.ModePull, Interval: time.Minute}}
	if r := env.ask(t, n, &wire.CreateTableRequest{Req: 1, Layout: layout}).(*wire.CreateTableReply); r.Code != wire.OK {
		t.Fatalf("create table: %s", r.Code)
	}
	ref := wire.TabletRef{Table: 9}
	sizes := []int{1000, 1000, 1000, 6000, 10}
	for i, size := range sizes {
		put := &wire.PutRequest{Req: uint64(10 + i), Tablet: ref, Key: string(rune('a' + i)), Value: bytes.Repeat([]byte{'v'}, size)}
		if r := env.ask(t, n, put).(*wire.PutReply); r.Code != wire.OK {
			t.Fatalf("put %d: %s", i, r.Code)
		}
	}
	// Versions per reply: two of 1000 bytes fit in 2500, a third does not;
	// then one of 1000 (the 6000 would pass the limit); the 6000 alone;
	// the last one.
	var since wire.PullReply
	for i, want := range []int{2, 1, 1, 1} {
		e := env
		e.sent = e.sent[:0]
		n.Receive("p/r1", &wire.PullRequest{Tablet: ref, Since: since.High})
		r := e.sent[0].(*wire.PullReply)
		if r.Code != wire.OK || len(r.Entries) != want || r.More != (i < 3) {
			t.Fatalf("pull %d: %s, %d versions, more %v; want %d versions, more %v", i, r.Code, len(r.Entries), r.More, want, i < 3)
		}
		if got := wire.EnvelopeSize("s/r1", "p/r1", r); got > replica.Options(replica.Options{PullBatchBytes: 2500}).EnsureDefaults().MessageBytesMax() {
			t.Fatalf("pull %d: a reply of %d bytes passes MessageBytesMax", i, got)
		}
		since = *r
	}
}

// TestClockLead: a Put whose session minimum is more than a minute ahead
// of the primary's clock is refused and leaves the clock alone; one a
// second ahead is served above it. A node whose storage holds a
// timestamp at the end of time refuses to start.
func TestClockLead(t *testing.T) {
	env := &partitionEnv{engine: storage.NewMem(), rng: rand.New(rand.NewPCG(1, 2))}
	n := env.start(t)
	layout := wire.Layout{Name: "t", ID: 9, Tablets: []wire.Tablet{{Primary: "s/r1"}},
		Replication: wire.Replication{Mode: wire.ModePull, Interval: time.Minute}}
	if r := env.ask(t, n, &wire.CreateTableRequest{Req: 1, Layout: layout}).(*wire.CreateTableReply); r.Code != wire.OK {
		t.Fatalf("create table: %s", r.Code)
	}
	ref := wire.TabletRef{Table: 9}
	far := hlc.Timestamp{WallNanos: math.MaxInt64, Logical: math.MaxUint32}
	if r := env.ask(t, n, &wire.PutRequest{Req: 2, Tablet: ref, Key: "k", MinTS: far}).(*wire.PutReply); r.Code != wire.Invalid {
		t.Fatalf("put with a minimum at the end of time: %s, want invalid", r.Code)
	}
	near := hlc.Timestamp{WallNanos: env.wall + int64(time.Second)}
	r := env.ask(t, n, &wire.PutRequest{Req: 3, Tablet: ref, Key: "k", MinTS: near}).(*wire.PutReply)
	if r.Code != wire.OK || !near.Less(r.TS) || r.TS.WallNanos > near.WallNanos+int64(time.Second) {
		t.Fatalf("put with a minimum a second ahead: %s at %s, want ok just above %s", r.Code, r.TS, near)
	}

	// Storage that holds a version at the end of time: Start refuses it.
	env2 := &partitionEnv{engine: storage.NewMem(), rng: rand.New(rand.NewPCG(1, 2))}
	n2 := env2.start(t)
	env2.ask(t, n2, &wire.CreateTableRequest{Req: 1, Layout: wire.Layout{Name: "t", ID: 9,
		Tablets:     []wire.Tablet{{Primary: "p/r1", Secondaries: []wire.NodeID{"s/r1"}}},
		Replication: wire.Replication{Mode: wire.ModePull, Interval: time.Minute}}})
	n2.Receive("p/r1", &wire.PullReply{Tablet: ref, High: far, Entries: []wire.Entry{{TS: far, Key: "k", Value: []byte("v")}}})
	if err := replica.New(replica.Options{}).Start(env2); err == nil || !strings.Contains(err.Error(), "end of time") {
		t.Fatalf("start over a timestamp at the end of time: %v, want a refusal", err)
	}
}

// TestEmptyPullReplyUnsynced: a pull reply that brings no version raises
// the secondary's high timestamp without a sync, and a crash takes the
// raise back; one that brings versions is synced with them.
func TestEmptyPullReplyUnsynced(t *testing.T) {
	mem := storage.NewMem()
	env := &partitionEnv{engine: mem, rng: rand.New(rand.NewPCG(1, 2))}
	n := env.start(t)
	layout := wire.Layout{Name: "t", ID: 9, Tablets: []wire.Tablet{{Primary: "p/r1", Secondaries: []wire.NodeID{"s/r1"}}},
		Replication: wire.Replication{Mode: wire.ModePull, Interval: time.Minute}}
	if r := env.ask(t, n, &wire.CreateTableRequest{Req: 1, Layout: layout}).(*wire.CreateTableReply); r.Code != wire.OK {
		t.Fatalf("create table: %s", r.Code)
	}
	ref := wire.TabletRef{Table: 9}
	ts := func(ms int64) hlc.Timestamp { return hlc.Timestamp{WallNanos: ms * int64(time.Millisecond)} }
	high := func(n *replica.Node) hlc.Timestamp { return n.Metrics().Tablets[0].High }
	n.Receive("p/r1", &wire.PullReply{Tablet: ref, High: ts(100), Entries: []wire.Entry{{Key: "a", Value: []byte("1"), TS: ts(90)}}})
	n.Receive("p/r1", &wire.PullReply{Tablet: ref, Since: ts(100), High: ts(200)})
	if got := high(n); got != ts(200) {
		t.Fatalf("high after an empty reply: %s, want %s", got, ts(200))
	}
	mem.Crash()
	n = env.start(t)
	if got := high(n); got != ts(100) {
		t.Fatalf("high after a crash: %s, want %s, the last reply that brought a version", got, ts(100))
	}
	if v := n.Versions(ref); len(v) != 1 || v[0].TS != ts(90) {
		t.Fatalf("versions after a crash: %v, want a at %s", v, ts(90))
	}
}

// TestTruncationKeepsWhatAnUnsyncedHighNeeds: a primary truncates its
// log up to the high timestamp its secondary reported, but records the
// latest version it dropped as the truncation point. A secondary whose
// unsynced raise a restart took back pulls from the log, not a snapshot;
// one that lacks a dropped version gets a snapshot.
func TestTruncationKeepsWhatAnUnsyncedHighNeeds(t *testing.T) {
	env := &partitionEnv{engine: storage.NewMem(), rng: rand.New(rand.NewPCG(1, 2))}
	n := env.start(t)
	layout := wire.Layout{Name: "t", ID: 9, Tablets: []wire.Tablet{{Primary: "s/r1", Secondaries: []wire.NodeID{"p/r1"}}},
		Replication: wire.Replication{Mode: wire.ModePull, Interval: time.Minute}}
	if r := env.ask(t, n, &wire.CreateTableRequest{Req: 1, Layout: layout}).(*wire.CreateTableReply); r.Code != wire.OK {
		t.Fatalf("create table: %s", r.Code)
	}
	ref := wire.TabletRef{Table: 9}
	var first hlc.Timestamp
	for i, key := range []string{"a", "b"} {
		r := env.ask(t, n, &wire.PutRequest{Req: uint64(2 + i), Tablet: ref, Key: key, Value: []byte("v")}).(*wire.PutReply)
		if r.Code != wire.OK {
			t.Fatalf("put %s: %s", key, r.Code)
		}
		if i == 0 {
			first = r.TS
		}
	}
	pull := func(since hlc.Timestamp) *wire.PullReply {
		t.Helper()
		env.sent = env.sent[:0]
		n.Receive("p/r1", &wire.PullRequest{Tablet: ref, Since: since})
		if len(env.sent) != 1 {
			t.Fatalf("pull since %s: %d replies, want 1", since, len(env.sent))
		}
		return env.sent[0].(*wire.PullReply)
	}
	all := pull(hlc.Timestamp{})
	if len(all.Entries) != 2 || all.Snapshot {
		t.Fatalf("first pull: %d versions, snapshot %v; want 2 from the log", len(all.Entries), all.Snapshot)
	}
	raised := pull(all.High) // truncates both versions
	if len(raised.Entries) != 0 || raised.Snapshot {
		t.Fatalf("second pull: %d versions, snapshot %v; want none", len(raised.Entries), raised.Snapshot)
	}
	pull(raised.High) // the secondary reports the raise; nothing more to truncate
	if n.Metrics().LogEntriesTruncated != 2 {
		t.Fatalf("%d log entries truncated, want 2", n.Metrics().LogEntriesTruncated)
	}
	if r := pull(all.High); r.Snapshot || r.Code != wire.OK {
		t.Fatalf("pull from the last synced high %s: snapshot %v, %s; want the log", all.High, r.Snapshot, r.Code)
	}
	if r := pull(first); !r.Snapshot {
		t.Fatalf("pull from %s, below the second version: from the log; want a snapshot", first)
	}
}
