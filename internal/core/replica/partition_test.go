package replica_test

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cosla/cosla/internal/core/replica"
	"github.com/cosla/cosla/internal/core/storage"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/lab/workload"
)

// partitionEnv is a node.Env whose sends are kept for the test to read and
// whose timers never fire.
type partitionEnv struct {
	wall   int64
	engine storage.Engine
	rng    *rand.Rand
	sent   []wire.Msg
	timers []any // the timers set, in order (never fired by the env)
}

func (e *partitionEnv) ID() wire.NodeID { return "s/r1" }
func (e *partitionEnv) Now() time.Time  { return time.Unix(0, e.wall) }
func (e *partitionEnv) WallNanos() int64 {
	e.wall += int64(time.Microsecond)
	return e.wall
}
func (e *partitionEnv) Send(_ wire.NodeID, m wire.Msg) { e.sent = append(e.sent, m) }
func (e *partitionEnv) After(_ time.Duration, t any)   { e.timers = append(e.timers, t) }
func (e *partitionEnv) Rand() *rand.Rand               { return e.rng }
func (e *partitionEnv) Engine() storage.Engine         { return e.engine }
func (e *partitionEnv) Logger() *slog.Logger           { return slog.New(slog.DiscardHandler) }

// start starts a node over the env's engine, as after a restart.
func (e *partitionEnv) start(t *testing.T) *replica.Node {
	t.Helper()
	n := replica.New(replica.Options{})
	if err := n.Start(e); err != nil {
		t.Fatal(err)
	}
	return n
}

// ask delivers m to n and returns the one reply.
func (e *partitionEnv) ask(t *testing.T, n *replica.Node, m wire.Msg) wire.Msg {
	t.Helper()
	e.sent = e.sent[:0]
	n.Receive("s/c1", m)
	if len(e.sent) != 1 {
		t.Fatalf("%v: %d replies, want 1", m, len(e.sent))
	}
	return e.sent[0]
}

// TestPartitionKeyCheck checks that a node accepts a Put or Get of a key
// only at the tablet the layout's partition places it in, answering
// WrongTablet at the others, by range and by hash, and again after a
// restart from its catalog.
func TestPartitionKeyCheck(t *testing.T) {
	for _, tc := range []struct {
		partition wire.Partition
		starts    []string
	}{
		{wire.ByRange, []string{"", "m"}},
		{wire.ByRange, []string{"", "\xc3", "\xff"}}, // keys are any bytes, and so are starts
		{wire.ByHash, append([]string{""}, wire.HashStarts(2)...)},
		{wire.ByHash, append([]string{""}, wire.HashStarts(5)...)},
	} {
		t.Run(fmt.Sprintf("%s %d", tc.partition, len(tc.starts)), func(t *testing.T) {
			layout := wire.Layout{Name: "t", ID: 9, Partition: tc.partition,
				Replication: wire.Replication{Mode: wire.ModePull, Interval: time.Second}}
			for _, s := range tc.starts {
				layout.Tablets = append(layout.Tablets, wire.Tablet{Start: s, Primary: "s/r1"})
			}
			env := &partitionEnv{wall: 1_700_000_000 * int64(time.Second), engine: storage.NewMem(), rng: rand.New(rand.NewPCG(1, 2))}
			start := func() *replica.Node { return env.start(t) }
			n := start()
			if r := env.ask(t, n, &wire.CreateTableRequest{Req: 1, Layout: layout}); r.(*wire.CreateTableReply).Code != wire.OK {
				t.Fatalf("CreateTable: %v", r)
			}
			keys := []string{"", "a", "b", "lzz", "m", "user1", "zebra", "\xc2\x80", "\xc3\xa9", "\xfe", "\xff\xfe\x80key"}
			for i := range uint64(20) {
				keys = append(keys, workload.Key(i))
			}
			// Every tablet must get a key, or the test proves little.
			used := map[int]bool{}
			req := uint64(1) // a client never reuses a request ID
			check := func(n *replica.Node, restarted bool) {
				wrong := n.Metrics().RequestsForWrongTablet
				for _, key := range keys {
					home := layout.TabletFor(key)
					used[home] = true
					for i := range layout.Tablets {
						ref := wire.TabletRef{Table: layout.ID, Tablet: int32(i)}
						want := wire.WrongTablet
						if i == home {
							want = wire.OK
						}
						req++
						put := env.ask(t, n, &wire.PutRequest{Req: req, Tablet: ref, Key: key, Value: []byte(key)}).(*wire.PutReply)
						get := env.ask(t, n, &wire.GetRequest{Req: 3, Tablet: ref, Key: key}).(*wire.GetReply)
						if put.Code != want || get.Code != want {
							t.Errorf("restarted %v: key %q (position %s, tablet %d) at tablet %d: Put %q, Get %q; want %q",
								restarted, key, layout.Position(key), home, i, put.Code, get.Code, want)
						}
						if want == wire.OK && (!get.Found || string(get.Value) != key) {
							t.Errorf("restarted %v: Get %q at tablet %d = %v, want the value just put", restarted, key, i, get)
						}
					}
				}
				if got, want := n.Metrics().RequestsForWrongTablet-wrong, int64(2*len(keys)*(len(layout.Tablets)-1)); got != want {
					t.Errorf("restarted %v: %d requests counted for the wrong tablet, want %d", restarted, got, want)
				}
			}
			check(n, false)
			check(start(), true) // the partition survives in the catalog
			if len(used) != len(layout.Tablets) {
				t.Errorf("the keys fell in tablets %v only, of %d", used, len(layout.Tablets))
			}
		})
	}
}
