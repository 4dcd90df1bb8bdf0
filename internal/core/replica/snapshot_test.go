package replica_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/replica"
	"github.com/cosla/cosla/internal/core/storage"
	"github.com/cosla/cosla/internal/core/wire"
)

// startWith starts a node at id in the world with the given options over
// eng, replacing any node of that name, as a node whose disk was swapped.
func (w *linkWorld) startWith(t *testing.T, id wire.NodeID, opts replica.Options, eng storage.Engine) (*replica.Node, *linkEnv) {
	t.Helper()
	env := &linkEnv{w: w, id: id, engine: eng, rng: rand.New(rand.NewPCG(1, 2))}
	n := replica.New(opts)
	if err := n.Start(env); err != nil {
		t.Fatal(err)
	}
	w.nodes[id] = n
	return n, env
}

// step delivers the oldest message queued, a microsecond later.
func (w *linkWorld) step() linkMsg {
	m := w.queue[0]
	w.queue = w.queue[1:]
	w.now = w.now.Add(time.Microsecond)
	if n, ok := w.nodes[m.to]; ok {
		n.Receive(m.from, m.m)
	}
	return m
}

// versionsOf returns a node's versions of a tablet by key.
func versionsOf(n *replica.Node, ref wire.TabletRef) map[string]wire.Entry {
	out := map[string]wire.Entry{}
	for _, e := range n.Versions(ref) {
		out[e.Key] = e
	}
	return out
}

func tabletHigh(t *testing.T, n *replica.Node) hlc.Timestamp {
	t.Helper()
	tablets := n.Metrics().Tablets
	if len(tablets) != 1 {
		t.Fatalf("%d tablets, want 1", len(tablets))
	}
	return tablets[0].High
}

// TestSnapshotChunked: a secondary that lost its storage, behind the
// primary's truncated log, is sent a snapshot in chunks of PullBatchMax
// keys, with Puts at the primary between the chunks. Its high timestamp
// stays zero until the last chunk, is then the snapshot's, S, which every
// chunk carried, and advances by the ordinary pull that follows at once.
// A key's version never goes back at the secondary (but at the first
// chunk, which replaces the tablet): the chunk served after two Puts of
// k05 above S carries the second, and the pull after the snapshot
// delivers the first in a reply of its own, which must not overwrite it.
// The secondary ends with the primary's versions exactly.
func TestSnapshotChunked(t *testing.T) {
	opts := replica.Options{PullBatchMax: 3}
	w := &linkWorld{now: time.Unix(1_700_000_000, 0), nodes: map[wire.NodeID]*replica.Node{}}
	primary, _ := w.startWith(t, "p/r1", opts, storage.NewMem())
	layout := wire.Layout{Name: "t", ID: 9, Tablets: []wire.Tablet{{Primary: "p/r1", Secondaries: []wire.NodeID{"s/r1"}}},
		Replication: wire.Replication{Mode: wire.ModePull, Interval: time.Minute}}
	ref := wire.TabletRef{Table: 9}
	var senv *linkEnv
	startSecondary := func() (*replica.Node, any) {
		var n *replica.Node
		n, senv = w.startWith(t, "s/r1", opts, storage.NewMem())
		n.Receive("c/c1", &wire.CreateTableRequest{Req: 1, Layout: layout})
		w.queue = nil // the reply to the client
		return n, senv.timers[0]
	}
	primary.Receive("c/c1", &wire.CreateTableRequest{Req: 1, Layout: layout})
	secondary, pull := startSecondary()
	req := uint64(1)
	put := func(key, value string) hlc.Timestamp {
		t.Helper()
		req++
		primary.Receive("c/c1", &wire.PutRequest{Req: req, Tablet: ref, Key: key, Value: []byte(value)})
		r, ok := w.queue[len(w.queue)-1].m.(*wire.PutReply)
		if !ok || r.Code != wire.OK {
			t.Fatalf("put %s: %v", key, w.queue[len(w.queue)-1].m)
		}
		w.queue = w.queue[:len(w.queue)-1]
		return r.TS
	}
	for i := range 10 {
		put(fmt.Sprintf("k%02d", i), fmt.Sprintf("v%d", i))
	}
	// Two rounds of pulls: the first brings everything, the second tells
	// the primary, which truncates its log.
	for range 2 {
		secondary.Fire(pull)
		w.run()
	}
	if m := primary.Metrics(); m.LogEntriesTruncated != 10 {
		t.Fatalf("primary truncated %d log entries, want 10", m.LogEntriesTruncated)
	}

	// The secondary loses its storage, and is given the table again.
	secondary, pull = startSecondary()
	secondary.Fire(pull)
	var snapHigh hlc.Timestamp
	chunks := 0
	held := versionsOf(secondary, ref)
	var t1, t2 hlc.Timestamp
	for len(w.queue) > 0 {
		m := w.step()
		r, isReply := m.m.(*wire.PullReply)
		if m.to == "s/r1" && isReply {
			if r.Code != wire.OK {
				t.Fatalf("pull reply %v", r)
			}
			now := versionsOf(secondary, ref)
			if !r.Snapshot || r.InSnapshot {
				for key, e := range held {
					if got, ok := now[key]; !ok || got.TS.Less(e.TS) {
						t.Fatalf("after %v: key %s went from %s back to %v", r, key, e.TS, got)
					}
				}
			}
			held = now
		}
		if !isReply || !r.Snapshot {
			continue
		}
		chunks++
		if chunks == 1 {
			snapHigh = r.High
		}
		if r.High != snapHigh || r.InSnapshot != (chunks > 1) {
			t.Fatalf("chunk %d: %v; want high %s, in snapshot %t", chunks, r, snapHigh, chunks > 1)
		}
		if high := tabletHigh(t, secondary); r.More && !high.IsZero() || !r.More && high != snapHigh {
			t.Fatalf("after chunk %d (more %t): secondary high %s, want zero until the last chunk, then %s", chunks, r.More, high, snapHigh)
		}
		switch chunks {
		case 1:
			// Past the cursor (k02), two versions of k05: the second
			// comes with the next chunk; the first, with a pull reply
			// of its own after the snapshot. Before it, a version of
			// k00 that comes only by that pull; a key that did not
			// exist at S.
			t1 = put("k05", "a")
			put("k00", "b")
			put("k01", "c")
			put("k0a", "new")
			t2 = put("k05", "d")
		case 2:
			put("k09", "e")
		}
	}
	if chunks != 4 {
		t.Fatalf("%d snapshot chunks, want 4 (11 keys, 3 a chunk)", chunks)
	}
	if !snapHigh.Less(t1) || !t1.Less(t2) {
		t.Fatalf("the Puts of k05 at %s and %s are not above the snapshot's high %s", t1, t2, snapHigh)
	}
	if got, want := versionsOf(secondary, ref), versionsOf(primary, ref); !reflect.DeepEqual(got, want) {
		t.Fatalf("secondary holds\n%v\nprimary\n%v", got, want)
	}
	if high := tabletHigh(t, secondary); !snapHigh.Less(high) {
		t.Fatalf("secondary high %s, want above the snapshot's %s after the pull that follows it", high, snapHigh)
	}
	pm, sm := primary.Metrics(), secondary.Metrics()
	if pm.SnapshotsSent != 1 || pm.SnapshotChunksSent != 4 || sm.SnapshotsApplied != 1 || sm.SnapshotChunksApplied != 4 {
		t.Errorf("snapshots sent %d in %d chunks, applied %d in %d chunks; want 1 in 4", pm.SnapshotsSent, pm.SnapshotChunksSent,
			sm.SnapshotsApplied, sm.SnapshotChunksApplied)
	}

	// Replication goes on as usual, and what the snapshot wrote survives
	// a restart.
	put("k03", "f")
	secondary.Fire(pull)
	w.run()
	before := tabletHigh(t, secondary)
	secondary, _ = w.startWith(t, "s/r1", opts, senv.engine)
	if got, want := versionsOf(secondary, ref), versionsOf(primary, ref); !reflect.DeepEqual(got, want) || tabletHigh(t, secondary) != before {
		t.Fatalf("after a restart the secondary holds\n%v\nat high %s; want\n%v\nat %s", got, tabletHigh(t, secondary), want, before)
	}
}

// truncatedPrimary starts a primary s/r1 of table 9 with secondary p/r1
// over env, writes a version of each value size (keys a, b, ...), and has
// the secondary report them all, so that the primary truncates its log.
func truncatedPrimary(t *testing.T, env *partitionEnv, opts replica.Options, sizes []int) (*replica.Node, hlc.Timestamp) {
	t.Helper()
	n := replica.New(opts)
	if err := n.Start(env); err != nil {
		t.Fatal(err)
	}
	layout := wire.Layout{Name: "t", ID: 9, Tablets: []wire.Tablet{{Primary: "s/r1", Secondaries: []wire.NodeID{"p/r1"}}},
		Replication: wire.Replication{Mode: wire.ModePull, Interval: time.Minute}}
	if r := env.ask(t, n, &wire.CreateTableRequest{Req: 1, Layout: layout}).(*wire.CreateTableReply); r.Code != wire.OK {
		t.Fatalf("create table: %s", r.Code)
	}
	ref := wire.TabletRef{Table: 9}
	var last hlc.Timestamp
	for i, size := range sizes {
		put := &wire.PutRequest{Req: uint64(10 + i), Tablet: ref, Key: string(rune('a' + i)), Value: bytes.Repeat([]byte{'v'}, size)}
		r := env.ask(t, n, put).(*wire.PutReply)
		if r.Code != wire.OK {
			t.Fatalf("put %d: %s", i, r.Code)
		}
		last = r.TS
	}
	n.Receive("p/r1", &wire.PullRequest{Tablet: ref, Since: last})
	if m := n.Metrics(); m.LogEntriesTruncated != int64(len(sizes)) {
		t.Fatalf("%d log entries truncated, want %d", m.LogEntriesTruncated, len(sizes))
	}
	return n, last
}

// pullFrom delivers a pull from p/r1 and returns the reply.
func pullFrom(t *testing.T, env *partitionEnv, n *replica.Node, m *wire.PullRequest) *wire.PullReply {
	t.Helper()
	env.sent = env.sent[:0]
	n.Receive("p/r1", m)
	if len(env.sent) != 1 {
		t.Fatalf("%v: %d replies, want 1", m, len(env.sent))
	}
	r := env.sent[0].(*wire.PullReply)
	if r.Code != wire.OK {
		t.Fatalf("%v: %v", m, r)
	}
	return r
}

// TestSnapshotBatchBytes: snapshot chunks end as pull replies do, before
// the version that would take them past PullBatchBytes, but carry one
// version however large; each reply fits in MessageBytesMax, and the
// cursor goes on from the last key.
func TestSnapshotBatchBytes(t *testing.T) {
	env := &partitionEnv{engine: storage.NewMem(), rng: rand.New(rand.NewPCG(1, 2))}
	opts := replica.Options{PullBatchBytes: 2500}
	n, _ := truncatedPrimary(t, env, opts, []int{1000, 1000, 1000, 6000, 10})
	ref := wire.TabletRef{Table: 9}
	req := &wire.PullRequest{Tablet: ref} // since zero: the storage was lost
	var high hlc.Timestamp
	// Keys and values: 1001 twice fit in 2500, a third does not; then
	// 1001 (6001 would pass the limit); 6001 alone; the last one.
	for i, want := range []string{"ab", "c", "d", "e"} {
		r := pullFrom(t, env, n, req)
		var keys string
		for _, e := range r.Entries {
			keys += e.Key
		}
		if i == 0 {
			high = r.High
		}
		if !r.Snapshot || keys != want || r.More != (i < 3) || r.High != high || r.SnapshotLast != want[len(want)-1:] {
			t.Fatalf("chunk %d: %v; want keys %q, more %t, high %s", i, r, want, i < 3, high)
		}
		if got := wire.EnvelopeSize("s/r1", "p/r1", r); got > opts.EnsureDefaults().MessageBytesMax() {
			t.Fatalf("chunk %d: a reply of %d bytes passes MessageBytesMax", i, got)
		}
		req = &wire.PullRequest{Tablet: ref, InSnapshot: true, SnapshotHigh: r.High, SnapshotAfter: r.SnapshotLast}
	}
}

// TestSnapshotStartsOver: the primary serves a continuation whose high
// timestamp is below its log's truncation point, or above any time it has
// revealed, as a new snapshot from the first key; a valid one from the
// key after the cursor. A secondary that asks from zero again is sent the
// snapshot it was being sent, until it pulls from the log.
func TestSnapshotStartsOver(t *testing.T) {
	env := &partitionEnv{engine: storage.NewMem(), rng: rand.New(rand.NewPCG(1, 2))}
	n, last := truncatedPrimary(t, env, replica.Options{PullBatchMax: 1}, []int{1, 1, 1})
	ref := wire.TabletRef{Table: 9}
	first := pullFrom(t, env, n, &wire.PullRequest{Tablet: ref})
	if !first.Snapshot || first.InSnapshot || !last.Less(first.High) || first.SnapshotLast != "a" || !first.More {
		t.Fatalf("first chunk: %v", first)
	}
	next := pullFrom(t, env, n, &wire.PullRequest{Tablet: ref, InSnapshot: true, SnapshotHigh: first.High, SnapshotAfter: "a"})
	if !next.InSnapshot || next.High != first.High || next.SnapshotAfter != "a" || next.SnapshotLast != "b" {
		t.Fatalf("continuation: %v", next)
	}
	// A pull from zero again (the secondary's timer fired before the
	// first chunk came, or it restarted) is served the same snapshot.
	if again := pullFrom(t, env, n, &wire.PullRequest{Tablet: ref}); again.InSnapshot || again.High != first.High || again.SnapshotLast != "a" {
		t.Fatalf("a second pull from zero: %v; want the first chunk again, high %s", again, first.High)
	}
	below := hlc.Timestamp{WallNanos: last.WallNanos - 1}
	future := hlc.Timestamp{WallNanos: env.wall + int64(time.Hour)}
	latest := first.High
	for _, high := range []hlc.Timestamp{below, future} {
		r := pullFrom(t, env, n, &wire.PullRequest{Tablet: ref, InSnapshot: true, SnapshotHigh: high, SnapshotAfter: "a"})
		if r.InSnapshot || !latest.Less(r.High) || r.SnapshotLast != "a" {
			t.Errorf("continuation of a snapshot at %s: %v; want a new snapshot from the first key", high, r)
		}
		latest = r.High
	}
	// Once the secondary pulls from the log, a pull from zero is a new
	// loss of storage: a new snapshot.
	pullFrom(t, env, n, &wire.PullRequest{Tablet: ref, Since: latest})
	if r := pullFrom(t, env, n, &wire.PullRequest{Tablet: ref}); !latest.Less(r.High) {
		t.Errorf("a pull from zero after a pull from the log: %v; want a new snapshot", r)
	}
	if m := n.Metrics(); m.SnapshotsSent != 4 || m.SnapshotChunksSent != 6 {
		t.Errorf("%d snapshots sent in %d chunks, want 4 in 6", m.SnapshotsSent, m.SnapshotChunksSent)
	}
}

// TestSnapshotSecondary feeds a secondary snapshot chunks by hand: the
// first replaces the tablet and keeps the high timestamp at zero; stale
// chunks, pull replies and pushes are not applied during the snapshot;
// a restart forgets it, and a newer first chunk starts it over; the last
// chunk sets the high timestamp to the snapshot's, and a version above it
// is kept over an older one a later pull brings, also after a restart.
func TestSnapshotSecondary(t *testing.T) {
	env := &partitionEnv{engine: storage.NewMem(), rng: rand.New(rand.NewPCG(1, 2))}
	n := env.start(t)
	layout := wire.Layout{Name: "t", ID: 9, Tablets: []wire.Tablet{{Primary: "p/r1", Secondaries: []wire.NodeID{"s/r1"}}},
		Replication: wire.Replication{Mode: wire.ModePush, Interval: time.Minute}}
	if r := env.ask(t, n, &wire.CreateTableRequest{Req: 1, Layout: layout}).(*wire.CreateTableReply); r.Code != wire.OK {
		t.Fatalf("create table: %s", r.Code)
	}
	ref := wire.TabletRef{Table: 9}
	ts := func(s int64) hlc.Timestamp { return hlc.Timestamp{WallNanos: s * int64(time.Second)} }
	entry := func(key string, s int64) wire.Entry {
		return wire.Entry{TS: ts(s), Key: key, Value: []byte(fmt.Sprintf("%s%d", key, s))}
	}
	// state renders what the secondary holds: its high and last update,
	// and each key's version.
	state := func() string {
		t.Helper()
		st := n.Metrics().Tablets[0]
		out := fmt.Sprintf("high=%d last=%d", st.High.WallNanos/int64(time.Second), st.LastUpdate.WallNanos/int64(time.Second))
		for _, e := range n.Versions(ref) {
			out += fmt.Sprintf(" %s@%d", e.Key, e.TS.WallNanos/int64(time.Second))
		}
		return out
	}
	step := func(what string, m wire.Msg, want string) {
		t.Helper()
		env.sent = env.sent[:0]
		n.Receive("p/r1", m)
		if got := state(); got != want {
			t.Fatalf("after %s: %s, want %s", what, got, want)
		}
	}
	// Before the storage was "lost": an old copy at high 3.
	step("a pull", &wire.PullReply{Tablet: ref, High: ts(3), Entries: []wire.Entry{entry("old", 2)}}, "high=3 last=2 old@2")

	step("the first chunk", &wire.PullReply{Tablet: ref, Since: ts(3), High: ts(10), Snapshot: true, More: true, SnapshotLast: "k",
		Entries: []wire.Entry{entry("a", 5), entry("k", 12)}}, "high=0 last=0 a@5 k@12")
	if r, ok := env.sent[0].(*wire.PullRequest); !ok || !r.InSnapshot || r.SnapshotHigh != ts(10) || r.SnapshotAfter != "k" {
		t.Fatalf("after the first chunk the secondary sent %v, want the pull of the next chunk", env.sent[0])
	}
	discarded := n.Metrics().PullRepliesDiscarded
	step("a chunk after another key", &wire.PullReply{Tablet: ref, High: ts(10), Snapshot: true, InSnapshot: true, SnapshotAfter: "a",
		SnapshotLast: "z", Entries: []wire.Entry{entry("z", 1)}}, "high=0 last=0 a@5 k@12")
	step("the first chunk again", &wire.PullReply{Tablet: ref, High: ts(10), Snapshot: true, More: true, SnapshotLast: "a",
		Entries: []wire.Entry{entry("a", 4)}}, "high=0 last=0 a@5 k@12")
	step("a log pull reply", &wire.PullReply{Tablet: ref, High: ts(11), Entries: []wire.Entry{entry("x", 11)}}, "high=0 last=0 a@5 k@12")
	if got := n.Metrics().PullRepliesDiscarded - discarded; got != 3 {
		t.Fatalf("%d replies discarded, want 3", got)
	}
	step("a push", &wire.Push{Tablet: ref, Entry: entry("p", 13)}, "high=0 last=0 a@5 k@12")
	if r, ok := env.sent[0].(*wire.PullRequest); !ok || !r.InSnapshot || r.SnapshotAfter != "k" {
		t.Fatalf("after a push during the snapshot the secondary sent %v, want the pull of the next chunk", env.sent[0])
	}

	// A restart forgets the snapshot, not what it wrote.
	n = env.start(t)
	if got, want := state(), "high=0 last=0 a@5 k@12"; got != want {
		t.Fatalf("after a restart: %s, want %s", got, want)
	}
	step("a chunk of the forgotten snapshot", &wire.PullReply{Tablet: ref, High: ts(10), Snapshot: true, InSnapshot: true, SnapshotAfter: "k",
		Entries: []wire.Entry{entry("m", 9)}}, "high=0 last=0 a@5 k@12")
	step("a new first chunk", &wire.PullReply{Tablet: ref, High: ts(20), Snapshot: true, More: true, SnapshotLast: "b",
		Entries: []wire.Entry{entry("b", 15)}}, "high=0 last=0 b@15")
	step("an older first chunk", &wire.PullReply{Tablet: ref, High: ts(15), Snapshot: true, SnapshotLast: "c",
		Entries: []wire.Entry{entry("c", 14)}}, "high=0 last=0 b@15")
	step("the last chunk", &wire.PullReply{Tablet: ref, High: ts(20), Snapshot: true, InSnapshot: true, SnapshotAfter: "b", SnapshotLast: "m",
		Entries: []wire.Entry{entry("k", 25), entry("m", 18)}}, "high=20 last=18 b@15 k@25 m@18")
	if r, ok := env.sent[0].(*wire.PullRequest); !ok || r.InSnapshot || r.Since != ts(20) {
		t.Fatalf("after the last chunk the secondary sent %v, want a pull since 20", env.sent[0])
	}
	step("a duplicate of the last chunk", &wire.PullReply{Tablet: ref, High: ts(20), Snapshot: true, InSnapshot: true, SnapshotAfter: "b",
		SnapshotLast: "m", Entries: []wire.Entry{entry("k", 25), entry("m", 18)}}, "high=20 last=18 b@15 k@25 m@18")
	step("an older version of k by pull", &wire.PullReply{Tablet: ref, Since: ts(20), High: ts(30),
		Entries: []wire.Entry{entry("k", 22), entry("z", 24)}}, "high=30 last=24 b@15 k@25 m@18 z@24")
	n = env.start(t)
	step("after a restart, an older version of k by push", &wire.Push{Tablet: ref, Prev: ts(24), Entry: entry("k", 24)},
		"high=30 last=24 b@15 k@25 m@18 z@24")
	step("a newer version of k by push", &wire.Push{Tablet: ref, Prev: ts(24), Entry: entry("k", 31)},
		"high=31 last=31 b@15 k@31 m@18 z@24")
	if m := n.Metrics(); m.SnapshotsApplied != 0 || m.PushesIgnored != 1 {
		t.Errorf("after the last restart: %d snapshots applied, %d pushes ignored; want 0 and 1", m.SnapshotsApplied, m.PushesIgnored)
	}
}

// TestLostStorageNotCounted: a secondary whose pull reports a high
// timestamp below what it acknowledged has lost its storage, and no longer
// counts toward a waiting Put's write level until it reports the Put's
// timestamp again.
func TestLostStorageNotCounted(t *testing.T) {
	env := &partitionEnv{engine: storage.NewMem(), rng: rand.New(rand.NewPCG(1, 2))}
	n := env.start(t)
	layout := wire.Layout{Name: "t", ID: 9, Tablets: []wire.Tablet{{Primary: "s/r1", Secondaries: []wire.NodeID{"x/r1", "y/r1"}}},
		Replication: wire.Replication{Mode: wire.ModePull, Interval: time.Minute}}
	if r := env.ask(t, n, &wire.CreateTableRequest{Req: 1, Layout: layout}).(*wire.CreateTableReply); r.Code != wire.OK {
		t.Fatalf("create table: %s", r.Code)
	}
	ref := wire.TabletRef{Table: 9}
	env.sent = env.sent[:0]
	n.Receive("s/c1", &wire.PutRequest{Req: 2, Tablet: ref, Key: "k", Value: []byte("v"), W: 3, Wait: time.Minute})
	push, ok := env.sent[0].(*wire.Push)
	if !ok {
		t.Fatalf("the Put at level 3 sent %v, want pushes", env.sent)
	}
	ts := push.Entry.TS
	answered := func(what string, from wire.NodeID, m wire.Msg, want bool) {
		t.Helper()
		env.sent = env.sent[:0]
		n.Receive(from, m)
		got := false
		for _, m := range env.sent {
			if r, ok := m.(*wire.PutReply); ok && r.Req == 2 {
				if r.Code != wire.OK || r.Acks != 3 {
					t.Fatalf("after %s: %v, want ok with 3 acks", what, r)
				}
				got = true
			}
		}
		if got != want {
			t.Fatalf("after %s: the Put answered %t, want %t", what, got, want)
		}
	}
	answered("x's ack", "x/r1", &wire.PushAck{Tablet: ref, High: ts}, false)
	answered("x's pull since zero", "x/r1", &wire.PullRequest{Tablet: ref}, false)
	answered("y's ack", "y/r1", &wire.PushAck{Tablet: ref, High: ts}, false)
	answered("x's pull since the Put", "x/r1", &wire.PullRequest{Tablet: ref, Since: ts}, true)
}

// TestSnapshotRandomized runs seeded random snapshots: a secondary that
// lost its storage catches up with a primary that takes Puts all along,
// over a network that drops, duplicates and delays messages; clients
// repair it, and it restarts, now and then. After every message the
// secondary takes, it must hold, for every key, a version at least as new
// as the key's latest at or below its high timestamp (Pileus 4.3), and
// only versions the primary wrote; no key's version may go back but at a
// snapshot's first chunk; once the faults stop it must converge to the
// primary's versions. A failure names its seed.
func TestSnapshotRandomized(t *testing.T) {
	var total replica.Metrics
	for seed := uint64(1); seed <= 60; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			m := runSnapshotRandom(t, seed)
			total.SnapshotsSent += m.SnapshotsSent
			total.SnapshotChunksSent += m.SnapshotChunksSent
		})
	}
	t.Logf("snapshots sent %d, in %d chunks", total.SnapshotsSent, total.SnapshotChunksSent)
}

// runSnapshotRandom runs one seed and returns the primary's metrics.
func runSnapshotRandom(t *testing.T, seed uint64) replica.Metrics {
	rng := rand.New(rand.NewPCG(seed, 0x736e6170))
	opts := replica.Options{PullBatchMax: 1 + rng.IntN(4), PullBatchBytes: 50 + rng.IntN(400)}
	mode := wire.ModePull
	if rng.IntN(2) == 0 {
		mode = wire.ModePush
	}
	w := &linkWorld{now: time.Unix(1_700_000_000, 0), nodes: map[wire.NodeID]*replica.Node{}}
	primary, _ := w.startWith(t, "p/r1", opts, storage.NewMem())
	layout := wire.Layout{Name: "t", ID: 9, Tablets: []wire.Tablet{{Primary: "p/r1", Secondaries: []wire.NodeID{"s/r1"}}},
		Replication: wire.Replication{Mode: mode, Interval: time.Minute}}
	ref := wire.TabletRef{Table: 9}
	primary.Receive("c/c1", &wire.CreateTableRequest{Req: 1, Layout: layout})
	var senv *linkEnv
	var secondary *replica.Node
	var pull any
	start := func(eng storage.Engine, create bool) {
		secondary, senv = w.startWith(t, "s/r1", opts, eng)
		if create {
			secondary.Receive("c/c1", &wire.CreateTableRequest{Req: 1, Layout: layout})
		}
		pull = senv.timers[0]
	}
	start(storage.NewMem(), true)
	w.queue = nil

	// history holds every version the primary wrote, by key.
	history := map[string][]wire.Entry{}
	req := uint64(1)
	put := func() {
		req++
		key := fmt.Sprintf("k%02d", rng.IntN(30))
		value := bytes.Repeat([]byte{byte('a' + req%26)}, 1+rng.IntN(100))
		primary.Receive("c/c1", &wire.PutRequest{Req: req, Tablet: ref, Key: key, Value: value})
		for _, m := range w.queue {
			if r, ok := m.m.(*wire.PutReply); ok && r.Req == req {
				history[key] = append(history[key], wire.Entry{TS: r.TS, Key: key, Value: value})
			}
		}
	}
	deliver := func(m linkMsg) {
		w.now = w.now.Add(time.Millisecond)
		if n, ok := w.nodes[m.to]; ok {
			n.Receive(m.from, m.m)
		}
	}
	// before is what the secondary held at the last check.
	var before map[string]wire.Entry
	check := func(when string, replaced bool) {
		t.Helper()
		high := tabletHigh(t, secondary)
		held := versionsOf(secondary, ref)
		if !replaced {
			// A key's version goes back only when a snapshot's first
			// chunk replaces the tablet.
			for key, e := range before {
				if got, ok := held[key]; !ok || got.TS.Less(e.TS) {
					t.Fatalf("seed %d, %s: %s went from %s back to %v", seed, when, key, e.TS, got.TS)
				}
			}
		}
		before = held
		for key, e := range held {
			ok := false
			for _, v := range history[key] {
				ok = ok || (v.TS == e.TS && bytes.Equal(v.Value, e.Value))
			}
			if !ok {
				t.Fatalf("seed %d, %s: the secondary holds %s@%s, which the primary never wrote", seed, when, key, e.TS)
			}
		}
		for key, versions := range history {
			var due *wire.Entry
			for i := range versions {
				if !high.Less(versions[i].TS) {
					due = &versions[i]
				}
			}
			if e, ok := held[key]; due != nil && (!ok || e.TS.Less(due.TS)) {
				t.Fatalf("seed %d, %s: at high %s the secondary holds %s at %v, want %s or newer", seed, when, high, key, e.TS, due.TS)
			}
		}
	}

	for range 20 + rng.IntN(20) {
		put()
	}
	w.queue = nil // the Put replies and pushes
	for range 2 {
		secondary.Fire(pull)
		w.run()
	}

	// The secondary loses its storage; the world runs with faults.
	start(storage.NewMem(), true)
	w.queue = nil
	secondary.Fire(pull)
	for step := range 400 {
		switch r := rng.IntN(100); {
		case r < 15:
			put()
		case r < 20:
			secondary.Fire(pull)
		case r < 22:
			start(senv.engine, false) // a restart: the catalog is on disk
			check(fmt.Sprintf("step %d, a restart", step), false)
		case r < 25:
			// Read repair: catch up to the newest version of a key, as
			// a client read it at the primary.
			key := fmt.Sprintf("k%02d", rng.IntN(30))
			if versions := history[key]; len(versions) > 0 {
				req++
				w.queue = append(w.queue, linkMsg{"c/c1", "s/r1", &wire.Repair{Req: req, Tablet: ref, TS: versions[len(versions)-1].TS}})
			}
		case len(w.queue) > 0:
			m := w.queue[0]
			w.queue = w.queue[1:]
			switch f := rng.IntN(100); {
			case f < 5:
				continue // lost
			case f < 10:
				w.queue = append(w.queue, m) // delivered again, later
			}
			deliver(m)
			if m.to == "s/r1" {
				r, ok := m.m.(*wire.PullReply)
				check(fmt.Sprintf("step %d, %v", step, m.m), ok && r.Snapshot && !r.InSnapshot)
			}
		}
	}
	// The faults stop: the secondary converges. Its pull timer fires an
	// interval apart.
	for range 3 {
		w.now = w.now.Add(layout.Replication.Interval)
		secondary.Fire(pull)
		for len(w.queue) > 0 {
			m := w.queue[0]
			w.queue = w.queue[1:]
			deliver(m)
		}
	}
	check("the end", false)
	if got, want := versionsOf(secondary, ref), versionsOf(primary, ref); !reflect.DeepEqual(got, want) {
		t.Fatalf("seed %d: the secondary did not converge: it holds\n%v\nthe primary\n%v", seed, got, want)
	}
	m := primary.Metrics()
	if m.SnapshotsSent == 0 {
		t.Fatalf("seed %d: no snapshot sent", seed)
	}
	return m
}

// TestSnapshotPullWaitsForChunk: a secondary receiving a snapshot sends
// its periodic pull only once the chunk it asked for has come, or has
// been awaited for a second: each pull is answered with a chunk, and
// pulls every interval while a chunk took longer made the primary send
// the same chunk again and again (TestSnapshotOverNetwork under the race
// detector on a loaded machine took 5 to 10 minutes).
func TestSnapshotPullWaitsForChunk(t *testing.T) {
	env := &partitionEnv{engine: storage.NewMem(), rng: rand.New(rand.NewPCG(1, 2))}
	n := env.start(t)
	layout := wire.Layout{Name: "t", ID: 9, Tablets: []wire.Tablet{{Primary: "p/r1", Secondaries: []wire.NodeID{"s/r1"}}},
		Replication: wire.Replication{Mode: wire.ModePull, Interval: 50 * time.Millisecond}}
	if r := env.ask(t, n, &wire.CreateTableRequest{Req: 1, Layout: layout}).(*wire.CreateTableReply); r.Code != wire.OK {
		t.Fatalf("create table: %s", r.Code)
	}
	var pull any
	for _, tm := range env.timers {
		if fmt.Sprintf("%T", tm) == "replica.pullTimer" {
			pull = tm
		}
	}
	if pull == nil {
		t.Fatalf("no pull timer among %v", env.timers)
	}
	ref := wire.TabletRef{Table: 9}
	pulls := func() int {
		k := 0
		for _, m := range env.sent {
			if _, ok := m.(*wire.PullRequest); ok {
				k++
			}
		}
		env.sent = env.sent[:0]
		return k
	}
	n.Fire(pull)
	if got := pulls(); got != 1 {
		t.Fatalf("before any snapshot, the pull timer sent %d pulls, want 1", got)
	}
	n.Receive("p/r1", &wire.PullReply{Tablet: ref, High: hlc.Timestamp{WallNanos: 10}, Snapshot: true, More: true, SnapshotLast: "k",
		Entries: []wire.Entry{{TS: hlc.Timestamp{WallNanos: 5}, Key: "k", Value: []byte("v")}}})
	if got := pulls(); got != 1 {
		t.Fatalf("the first chunk brought %d pulls, want the pull of the next", got)
	}
	for i := range 3 {
		env.wall += int64(300 * time.Millisecond)
		n.Fire(pull)
		if got := pulls(); got != 0 {
			t.Fatalf("%dms into the wait for a chunk, the pull timer sent %d pulls, want 0", 300*(i+1), got)
		}
	}
	env.wall += int64(200 * time.Millisecond)
	n.Fire(pull)
	if got := pulls(); got != 1 {
		t.Fatalf("a second into the wait for a chunk, the pull timer sent %d pulls, want 1 (the chunk may be lost)", got)
	}
}
