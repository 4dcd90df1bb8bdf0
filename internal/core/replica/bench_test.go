package replica_test

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/replica"
	"github.com/cosla/cosla/internal/core/storage"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/runtime/pebbledb"
)

// These benchmarks measure the CPU time the replica core spends on one
// message, storage included, to calibrate the simulator's per-kind service
// times (sim.NodeOptions.ServiceByKind). The Pebble variants run in a real
// temporary directory; "NoSync" ones drop the fsync, which the simulator
// charges separately (sim.NodeOptions.Fsync), so they give the CPU part of
// a synced write.

const (
	benchKeys       = 10_000
	benchValueBytes = 256
	benchPullBatch  = 10 // versions per pull reply in the replication benchmarks
)

// benchEnv is a minimal node.Env: a physical clock that advances 1µs per
// reading, so every Put gets a fresh timestamp; sends are kept, not
// delivered; timers never fire.
type benchEnv struct {
	id     wire.NodeID
	wall   int64
	engine storage.Engine
	rng    *rand.Rand
	last   wire.Msg // the last message sent
	sent   int
}

func (e *benchEnv) ID() wire.NodeID { return e.id }
func (e *benchEnv) Now() time.Time  { return time.Unix(0, e.wall) }
func (e *benchEnv) WallNanos() int64 {
	e.wall += int64(time.Microsecond)
	return e.wall
}
func (e *benchEnv) Send(_ wire.NodeID, m wire.Msg) { e.last = m; e.sent++ }
func (e *benchEnv) After(time.Duration, any)       {}
func (e *benchEnv) Rand() *rand.Rand               { return e.rng }
func (e *benchEnv) Engine() storage.Engine         { return e.engine }
func (e *benchEnv) Logger() *slog.Logger           { return slog.New(slog.DiscardHandler) }

// noSync applies synced batches without sync: the engine's CPU work
// without the fsync.
type noSync struct{ storage.Engine }

func (e noSync) Apply(b *storage.Batch, _ bool) error { return e.Engine.Apply(b, false) }

const (
	primaryID   = wire.NodeID("s/r1")
	secondaryID = wire.NodeID("s/r2")
	clientID    = wire.NodeID("s/c1")
)

var (
	benchRef    = wire.TabletRef{Table: 1, Tablet: 0}
	benchLayout = wire.Layout{
		Name: "usertable", ID: 1,
		Tablets:     []wire.Tablet{{Start: "", Primary: primaryID, Secondaries: []wire.NodeID{secondaryID}}},
		Replication: wire.Replication{Mode: wire.ModePull, Interval: time.Second},
	}
)

var benchKeyNames = func() []string {
	keys := make([]string, benchKeys)
	for i := range keys {
		keys[i] = fmt.Sprintf("user%06d", i)
	}
	return keys
}()

func benchKey(i int) string { return benchKeyNames[i%benchKeys] }

// engine is a storage engine a benchmark runs over.
type engine struct {
	name string
	open func(b *testing.B, opts pebbledb.Options) storage.Engine
}

func openPebble(b *testing.B, opts pebbledb.Options) *pebbledb.Engine {
	e, err := pebbledb.Open(b.TempDir(), opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = e.Close() })
	return e
}

var engines = []engine{
	{"Mem", func(*testing.B, pebbledb.Options) storage.Engine { return storage.NewMem() }},
	{"Pebble", func(b *testing.B, o pebbledb.Options) storage.Engine { return openPebble(b, o) }},
	{"PebbleNoSync", func(b *testing.B, o pebbledb.Options) storage.Engine { return noSync{openPebble(b, o)} }},
}

// startNode starts a replica on eng holding benchLayout.
func startNode(b *testing.B, id wire.NodeID, eng storage.Engine) (*replica.Node, *benchEnv) {
	b.Helper()
	env := &benchEnv{id: id, wall: 1_700_000_000 * int64(time.Second), engine: eng, rng: rand.New(rand.NewPCG(1, 2))}
	n := replica.New(replica.Options{})
	if err := n.Start(env); err != nil {
		b.Fatal(err)
	}
	n.Receive(clientID, &wire.CreateTableRequest{Req: 1, Layout: benchLayout})
	if r, ok := env.last.(*wire.CreateTableReply); !ok || r.Code != wire.OK {
		b.Fatalf("CreateTable answered %v", env.last)
	}
	return n, env
}

// load writes benchKeys keys of benchValueBytes through the primary and
// returns the timestamps of the versions. It does not fsync every write,
// which would take seconds, but syncs at the end.
func load(b *testing.B, n *replica.Node, env *benchEnv) []hlc.Timestamp {
	b.Helper()
	eng := env.engine
	env.engine = noSync{eng}
	defer func() {
		env.engine = eng
		if err := eng.Apply(nil, true); err != nil {
			b.Fatal(err)
		}
	}()
	value := make([]byte, benchValueBytes)
	ts := make([]hlc.Timestamp, benchKeys)
	for i := range benchKeys {
		n.Receive(clientID, &wire.PutRequest{Req: uint64(i), Tablet: benchRef, Key: benchKey(i), Value: value})
		r := env.last.(*wire.PutReply)
		if r.Code != wire.OK {
			b.Fatalf("Put answered %v", r)
		}
		ts[i] = r.TS
	}
	return ts
}

// BenchmarkReplicaGet: a primary reads one of 10,000 keys. On Pebble, the
// keys sit in sstables (a small memtable flushed them), read through the
// block cache.
func BenchmarkReplicaGet(b *testing.B) {
	for _, e := range engines[:2] { // reads do not sync
		b.Run(e.name, func(b *testing.B) {
			n, env := startNode(b, primaryID, e.open(b, pebbledb.Options{MemTableSizeBytes: 64 << 10}))
			load(b, n, env)
			msgs := make([]*wire.GetRequest, 1024)
			for i := range msgs {
				msgs[i] = &wire.GetRequest{Req: uint64(i), Tablet: benchRef, Key: benchKey(rand.IntN(benchKeys))}
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				n.Receive(clientID, msgs[i%len(msgs)])
				i++
			}
			if r := env.last.(*wire.GetReply); !r.Found {
				b.Fatalf("Get answered %v", r)
			}
		})
	}
}

// BenchmarkReplicaPut: a primary writes a 256-byte value: one synced batch
// of three writes (log record, version, last-update timestamp).
func BenchmarkReplicaPut(b *testing.B) {
	for _, e := range engines {
		b.Run(e.name, func(b *testing.B) {
			n, env := startNode(b, primaryID, e.open(b, pebbledb.Options{}))
			value := make([]byte, benchValueBytes)
			b.ReportAllocs()
			b.SetBytes(benchValueBytes)
			i := 0
			for b.Loop() {
				n.Receive(clientID, &wire.PutRequest{Req: uint64(i), Tablet: benchRef, Key: benchKey(i), Value: value})
				i++
			}
			if r := env.last.(*wire.PutReply); r.Code != wire.OK {
				b.Fatalf("Put answered %v", r)
			}
		})
	}
}

// BenchmarkReplicaProbe: a primary reports its high timestamp.
func BenchmarkReplicaProbe(b *testing.B) {
	n, env := startNode(b, primaryID, storage.NewMem())
	m := &wire.ProbeRequest{Req: 1, Tablet: benchRef}
	b.ReportAllocs()
	for b.Loop() {
		n.Receive(clientID, m)
	}
	if r := env.last.(*wire.ProbeReply); r.Code != wire.OK {
		b.Fatalf("Probe answered %v", r)
	}
}

// BenchmarkReplicaServePull: a primary answers a pull with the last 10 of
// 10,000 versions, and with none (an idle tablet: the reply carries only
// the primary's time, which it first makes durable with a synced write).
func BenchmarkReplicaServePull(b *testing.B) {
	for _, e := range engines {
		for _, entries := range []int{0, benchPullBatch} {
			b.Run(fmt.Sprintf("%s/entries=%d", e.name, entries), func(b *testing.B) {
				n, env := startNode(b, primaryID, e.open(b, pebbledb.Options{}))
				ts := load(b, n, env)
				// From a node that is not a secondary, so the log is never
				// truncated and every pull finds the same versions.
				since := ts[len(ts)-1-entries]
				if entries == 0 {
					since = ts[len(ts)-1]
				}
				m := &wire.PullRequest{Tablet: benchRef, Since: since}
				b.ReportAllocs()
				for b.Loop() {
					n.Receive("s/other", m)
				}
				if r := env.last.(*wire.PullReply); r.Code != wire.OK || len(r.Entries) != entries {
					b.Fatalf("Pull answered %v", r)
				}
			})
		}
	}
}

var benchValue = make([]byte, benchValueBytes)

// version returns the i-th version a primary sends a secondary: a
// 256-byte value, timestamps 1µs apart.
func version(i int) wire.Entry {
	return wire.Entry{TS: hlc.Timestamp{WallNanos: 1_600_000_000*int64(time.Second) + int64(i+1)*1000}, Key: benchKey(i), Value: benchValue}
}

// BenchmarkReplicaApplyPush: a secondary applies a pushed version with a
// synced batch.
func BenchmarkReplicaApplyPush(b *testing.B) {
	for _, e := range engines {
		b.Run(e.name, func(b *testing.B) {
			n, _ := startNode(b, secondaryID, e.open(b, pebbledb.Options{}))
			var prev hlc.Timestamp
			b.ReportAllocs()
			b.SetBytes(benchValueBytes)
			i := 0
			for b.Loop() {
				v := version(i)
				n.Receive(primaryID, &wire.Push{Tablet: benchRef, Prev: prev, Entry: v})
				prev = v.TS
				i++
			}
			if got := n.Metrics().EntriesApplied; got != int64(i) {
				b.Fatalf("applied %d of %d pushes", got, i)
			}
		})
	}
}

// BenchmarkReplicaApplyPull: a secondary applies a pull reply of 10
// versions with one synced batch.
func BenchmarkReplicaApplyPull(b *testing.B) {
	for _, e := range engines {
		b.Run(e.name, func(b *testing.B) {
			n, _ := startNode(b, secondaryID, e.open(b, pebbledb.Options{}))
			var since hlc.Timestamp
			entries := make([]wire.Entry, benchPullBatch)
			b.ReportAllocs()
			b.SetBytes(benchPullBatch * benchValueBytes)
			i := 0
			for b.Loop() {
				// A fresh slice per reply: the node may keep what it is
				// handed, as it does a delivered message.
				entries = make([]wire.Entry, benchPullBatch)
				for j := range entries {
					entries[j] = version(i*benchPullBatch + j)
				}
				high := entries[len(entries)-1].TS
				n.Receive(primaryID, &wire.PullReply{Tablet: benchRef, Since: since, High: high, Entries: entries})
				since = high
				i++
			}
			if got := n.Metrics().EntriesApplied; got != int64(i*benchPullBatch) {
				b.Fatalf("applied %d of %d versions", got, i*benchPullBatch)
			}
		})
	}
}
