package causal

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/storage"
	"github.com/cosla/cosla/internal/core/wire"
)

// cacheEnv is a minimal node.Env for a cache: a clock that stands still,
// sends kept in order, timers never fired.
type cacheEnv struct {
	sent []sent
	rng  *rand.Rand
}

type sent struct {
	to wire.NodeID
	m  wire.Msg
}

func (e *cacheEnv) ID() wire.NodeID                 { return "a/cache" }
func (e *cacheEnv) Now() time.Time                  { return time.Unix(1_700_000_000, 0) }
func (e *cacheEnv) WallNanos() int64                { return 1_700_000_000 * int64(time.Second) }
func (e *cacheEnv) Send(to wire.NodeID, m wire.Msg) { e.sent = append(e.sent, sent{to, m}) }
func (e *cacheEnv) After(time.Duration, any)        {}
func (e *cacheEnv) Rand() *rand.Rand                { return e.rng }
func (e *cacheEnv) Engine() storage.Engine          { return storage.NewMem() }
func (e *cacheEnv) Logger() *slog.Logger            { return slog.New(slog.DiscardHandler) }

// last returns the last message sent and forgets what was sent.
func (e *cacheEnv) last() sent {
	s := e.sent[len(e.sent)-1]
	e.sent = e.sent[:0]
	return s
}

// cacheLayout has two rings: a/s1 alone, and b/s1 alone; the cache is
// at site a.
func cacheLayout(tb testing.TB) *Layout {
	l := &Layout{Table: 1,
		Rings:        []Ring{{Name: "a", Nodes: []wire.NodeID{"a/s1"}}, {Name: "b", Nodes: []wire.NodeID{"b/s1"}}},
		Coordinators: map[string]wire.NodeID{"a": "a/cc", "b": "b/cc"},
		Caches:       map[string]wire.NodeID{"a": "a/cache"},
	}
	if err := l.Validate(); err != nil {
		tb.Fatal(err)
	}
	return l
}

func startCache(tb testing.TB) (*Cache, *cacheEnv) {
	tb.Helper()
	env := &cacheEnv{rng: rand.New(rand.NewPCG(1, 2))}
	c := NewCache(CacheOptions{Layout: cacheLayout(tb), RTT: map[wire.NodeID]time.Duration{"a/s1": time.Millisecond, "b/s1": 100 * time.Millisecond}})
	if err := c.Start(env); err != nil {
		tb.Fatal(err)
	}
	return c, env
}

func version(wall int64) wire.Version {
	return wire.Version{TS: hlc.Timestamp{WallNanos: wall}, Origin: "b/cc"}
}

// read asks the cache for key as a coordinator would, bound to ring (or
// NoRing) with min, and answers a fill with the version given (in flight
// or not) from the node asked. It returns the cache's answer and the
// node a fill went to ("" for a hit).
func read(c *Cache, env *cacheEnv, key string, ring int32, min wire.Version, answer wire.Version, inFlight bool) (*wire.ReadReply, wire.NodeID) {
	c.Receive("a/cc", &wire.Read{Req: 1, Table: 1, Key: key, Ring: ring, Min: min})
	s := env.last()
	if s.to == "a/cc" {
		return s.m.(*wire.ReadReply), ""
	}
	fill := s.m.(*wire.Read)
	c.Receive(s.to, &wire.ReadReply{Req: fill.Req, Table: 1, Found: true, Value: []byte("v"), Version: answer,
		Ring: int32(c.layout.RingOf(s.to)), Node: s.to, InFlight: inFlight})
	return env.last().m.(*wire.ReadReply), s.to
}

// TestCacheRings checks which fills a cache keeps and which reads an
// entry serves (Cache's comment): an in-flight version is passed on and
// not kept, whoever asked; a stable one serves unbound reads, and bound
// reads only of a ring it was filled from and not older than their Min.
func TestCacheRings(t *testing.T) {
	v1, v2 := version(1), version(2)
	c, env := startCache(t)
	// A bound miss fills from its own ring, though ring 0 is nearer; the
	// in-flight version goes to the reader, bound to that ring, and is
	// not kept.
	r, node := read(c, env, "x", 1, wire.Version{}, v1, true)
	if node != "b/s1" || r.Source != wire.FromRing || !r.InFlight || r.Ring != 1 || r.Version != v1 {
		t.Fatalf("bound to ring 1: %v filled from %q, want %s in flight from ring 1, filled from b/s1", r, node, v1)
	}
	if _, node := read(c, env, "x", 1, wire.Version{}, v1, true); node != "b/s1" || c.Len() != 0 {
		t.Fatalf("bound to ring 1 again: filled from %q with %d keys cached, want a miss filled from b/s1 and nothing kept", node, c.Len())
	}
	if _, node := read(c, env, "x", wire.NoRing, wire.Version{}, v1, true); node != "a/s1" || c.Len() != 0 {
		t.Fatalf("unbound: filled from %q with %d keys cached, want a miss filled from the nearest, a/s1, and nothing kept", node, c.Len())
	}
	// Stable from ring 0: unbound reads hit, ring 1's miss.
	read(c, env, "x", wire.NoRing, wire.Version{}, v1, false)
	if r, node := read(c, env, "x", wire.NoRing, wire.Version{}, v1, false); node != "" || r.Source != wire.FromCache || r.InFlight || r.Ring != wire.NoRing {
		t.Fatalf("unbound after a stable fill: %v from %q, want a stable hit bound to no ring", r, node)
	}
	if _, node := read(c, env, "x", 1, wire.Version{}, v1, false); node != "b/s1" {
		t.Fatalf("bound to ring 1 after a stable fill from ring 0: filled from %q, want a miss filled from b/s1", node)
	}
	// Now filled from both rings: ring 1 hits, bound to no ring, unless
	// its session read a newer version in flight.
	if r, node := read(c, env, "x", 1, wire.Version{}, v1, false); node != "" || r.InFlight || r.Ring != wire.NoRing {
		t.Fatalf("bound to ring 1 after its own fill: %v from %q, want a stable hit bound to no ring", r, node)
	}
	if _, node := read(c, env, "x", 1, v2, v2, true); node != "b/s1" {
		t.Fatalf("bound to ring 1 with min %s: filled from %q, want a miss filled from b/s1", v2, node)
	}
	// That in-flight fill did not replace the stable entry.
	if got := c.Versions(); got["x"] != v1 {
		t.Fatalf("after an in-flight fill of %s the cache holds %v, want x at %s", v2, got, v1)
	}
}

// TestCacheInvalidate checks that a newer version's invalidation drops an
// entry, an older one's does not, and a restarted node's reset drops only
// what that node filled.
func TestCacheInvalidate(t *testing.T) {
	v1, v2 := version(1), version(2)
	c, env := startCache(t)
	read(c, env, "x", 1, wire.Version{}, v2, false)
	c.Receive("a/s1", &wire.Invalidate{Req: 9, Table: 1, Key: "x", Version: v1})
	if ack, ok := env.last().m.(*wire.InvalidateAck); !ok || ack.Req != 9 || c.Len() != 1 {
		t.Fatalf("an older version's invalidation: answered %v, %d keys cached; want an ack and x kept", ack, c.Len())
	}
	c.Receive("a/s1", &wire.Invalidate{Req: 10, Table: 1, Key: "x", Version: version(3)})
	env.last()
	if c.Len() != 0 {
		t.Fatalf("a newer version's invalidation from another ring's node left x cached")
	}
	read(c, env, "x", 0, wire.Version{}, v1, false)
	read(c, env, "y", 1, wire.Version{}, v1, false)
	c.Receive("b/s1", &wire.Invalidate{Req: 11, Table: 1})
	env.last()
	if got := c.Versions(); len(got) != 1 || got["x"] != v1 {
		t.Fatalf("after b/s1's reset the cache holds %v, want only x (filled from a/s1)", got)
	}
}

// BenchmarkCacheHit measures a cache serving a read from an entry: the
// core's work per lookup (Receive of a wire.Read that hits, the reply
// built and handed to the Env), which the simulator charges for a cache
// message (experiment's calibratedCache). Run it with
//
//	go test -run x -bench BenchmarkCacheHit -benchmem -count 5 ./internal/core/causal
func BenchmarkCacheHit(b *testing.B) {
	const keys = 10_000
	for _, bc := range []struct {
		name string
		ring int32
	}{{"unbound", wire.NoRing}, {"bound", 1}} {
		b.Run(bc.name, func(b *testing.B) {
			c, env := startCache(b)
			names := make([]string, keys)
			for i := range names {
				names[i] = fmt.Sprintf("user%06d", i)
				read(c, env, names[i], bc.ring, wire.Version{}, version(int64(i+1)), false)
			}
			env.sent = make([]sent, 0, 1024)
			i := 0
			for b.Loop() {
				c.Receive("a/cc", &wire.Read{Req: uint64(i), Table: 1, Key: names[i%keys], Ring: bc.ring})
				i++
				if len(env.sent) == cap(env.sent) {
					env.sent = env.sent[:0]
				}
			}
			if c.Metrics().Misses != keys {
				b.Fatalf("%d misses, want only the %d fills", c.Metrics().Misses, keys)
			}
		})
	}
}
