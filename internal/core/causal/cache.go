package causal

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/invariants"
	"github.com/cosla/cosla/internal/core/node"
	"github.com/cosla/cosla/internal/core/wire"
)

// CacheOptions configures a datacenter cache.
type CacheOptions struct {
	// Layout places the table. Required, validated.
	Layout *Layout
	// Capacity bounds the cached keys; the oldest filled goes first
	// (silent eviction, Karma 4.3). Default 1,000,000.
	Capacity int
	// RTT holds initial round-trip estimates to storage nodes.
	RTT map[wire.NodeID]time.Duration
	// ReadTimeout is how long a fill waits for a storage node. Default 1s.
	ReadTimeout time.Duration
	// Logger. Default: discard.
	Logger *slog.Logger
}

// Cache is a datacenter cache (Karma 3, 4.3). A miss is filled from a
// ring's storage node, which records the cache in the key's cached-at set
// and invalidates it when a newer version arrives. As in the paper, only
// stable versions are kept (Karma 4.3: "demand fills only with stable
// objects and not in-flight objects"): a fill that finds the version in
// flight is passed on to the reader and dropped, and the node does not
// record the cache for it. An entry remembers the rings it was filled
// from:
//   - A read no ring restriction binds is served any entry: a stable
//     version's causal past is in every ring.
//   - A read bound to ring R (a session under a dynamic ring restriction,
//     Karma 4.2) is served only an entry filled from R, and a miss is
//     filled from R. The paper forces such reads to miss (Karma 4.2, 4.3);
//     an entry filled from R is as good as reading R, since R invalidates
//     it before the next version of the key counts as present there (see
//     below). A stable entry filled from another ring is not: a restricted
//     session may depend on a newer version that only R holds yet, whose
//     invalidation goes only to the caches in R's cached-at set.
//
// Why no in-flight entries. An in-flight version filled from R could
// serve the reads bound to R (R applies each write only after its
// dependencies, put-after, Karma 4.1.2, so the version's causal past is
// in R when R serves it), and the caches kept such entries until the
// stores told them the version stable. They then served 24.7% of the
// Gets of karma-fig7's setup at 4,800 sessions (10 s, no warmup), against
// 13.8% for stable entries alone, but the run collapsed: 78.7k then
// 16.5k operations a second in 5 s windows, a write stable 5.0 s on
// average after its put was acknowledged, 602 operations failed and
// 8,187 reads abandoned; with stable entries alone, 88.1k then 73.7k,
// 0.9 s, none failed and 78 abandoned. Why is not settled (issue
// 28): the invalidations and acknowledgements that in-flight entries add
// are 1 to 4% of the messages of the busiest storage nodes (Brazil's,
// the ring of one site), so they are not the load by themselves.
//
// It keeps no durable state: a restarted cache is empty, which costs only
// misses (Karma 4.4).
//
// Why a version read from the cache is never older than one the reader's
// session depends on (the fill race, karma.md section 5, item 6). The
// second and third rules below, and the one above on stable entries, each
// have a script that fails without them (testdata/causal/cache-rings.txt
// and cache-races.txt in package harness):
//   - Fills and invalidations of a key in ring R come from the one node of
//     R that holds the key, over one ordered link: that node records the
//     cache in its cached-at set before it replies to the fill, so a fill
//     never lands after the invalidation of a newer version from the node
//     that served it. An invalidation from another ring's node says
//     nothing of R, and drops the entry anyway. So the cache needs no
//     per-key watermark of the versions invalidated: a fill older than
//     an invalidation already seen comes from a node that has not yet
//     processed the newer version, and whose own invalidation will
//     follow the fill on its link when it does; until then no read the
//     entry serves can depend on the newer version (the rules below).
//   - A node of R counts a version as present (answers a dependency check
//     for it, Store.whenProcessed) only once every cache it invalidated
//     for the key has acknowledged (Karma 4.3 waits for those
//     acknowledgements before acknowledging the write; a later write that
//     depends on the version must wait for them too). So by the time a
//     session can depend on a version through another key read from R,
//     no entry filled from R holds an older one.
//   - A session that read the version itself from R while the
//     invalidations were still on their way names it in the read (Min):
//     the cache does not serve it an older entry.
type Cache struct {
	opts   CacheOptions
	layout *Layout
	env    node.Env
	near   *nearness

	entries  map[string]*cached
	order    []string // keys in fill order, for eviction; may hold stale keys
	nextReq  uint64
	fetches  map[uint64]*fetch
	timeouts *deadlines[uint64]
	metrics  CacheMetrics
}

// CacheMetrics counts what a cache did.
type CacheMetrics struct {
	// Hits and Misses count the reads served from an entry and those
	// filled from a ring.
	Hits, Misses uint64
	// AbandonedReads are the reads dropped unserved because their sender
	// had stopped waiting for them (wire.Read's Deadline).
	AbandonedReads uint64
}

// cached is a stable version of a key. rings has bit r set when ring r's
// node for the key filled it (and so will invalidate it).
type cached struct {
	found   bool
	value   []byte
	version wire.Version
	rings   uint64
}

// serves reports whether the entry may answer a read bound to ring (or
// NoRing) by a session that read min of the key in flight.
func (e *cached) serves(ring int32, min wire.Version) bool {
	return ring == wire.NoRing || (e.rings&(1<<ring) != 0 && !e.version.Less(min))
}

type fetch struct {
	client wire.NodeID
	req    uint64
	key    string
	node   wire.NodeID
	ring   int
	sent   time.Time
}

type fetchTimer struct{}

// EnsureDefaults returns a copy of o with unset fields given their
// defaults (see package node: the options idiom).
func (o CacheOptions) EnsureDefaults() CacheOptions {
	o.Capacity = cmp.Or(o.Capacity, 1_000_000)
	o.ReadTimeout = cmp.Or(o.ReadTimeout, time.Second)
	o.Logger = cmp.Or(o.Logger, slog.New(slog.DiscardHandler))
	return o
}

// Validate checks the options.
func (o CacheOptions) Validate() error {
	if o.Layout == nil {
		return errors.New("causal: CacheOptions.Layout is required")
	}
	if o.Capacity < 0 || o.ReadTimeout < 0 {
		return fmt.Errorf("causal: CacheOptions: negative Capacity %d or ReadTimeout %s", o.Capacity, o.ReadTimeout)
	}
	return nil
}

// NewCache returns a cache; Start starts it.
func NewCache(opts CacheOptions) *Cache {
	return &Cache{opts: opts.EnsureDefaults()}
}

// Start implements node.Handler.
func (c *Cache) Start(env node.Env) error {
	if err := c.opts.Validate(); err != nil {
		return err
	}
	c.env = env
	c.layout = c.opts.Layout
	c.near = newNearness(Site(env.ID()), c.opts.RTT)
	c.nextReq = firstReq(env)
	c.entries = map[string]*cached{}
	c.fetches = map[uint64]*fetch{}
	c.timeouts = newDeadlines[uint64](c.opts.ReadTimeout, fetchTimer{})
	return nil
}

// Len returns the number of cached keys.
func (c *Cache) Len() int { return len(c.entries) }

// Receive implements node.Handler.
func (c *Cache) Receive(from wire.NodeID, m wire.Msg) {
	switch m := m.(type) {
	case *wire.Read:
		c.read(from, m)
	case *wire.ReadReply:
		c.filled(from, m)
	case *wire.Invalidate:
		c.invalidate(from, m)
	}
}

// Fire implements node.Handler: a fill that timed out fails, and the
// coordinator tries the rings itself.
func (c *Cache) Fire(timer any) {
	if _, ok := timer.(fetchTimer); !ok {
		return
	}
	for _, req := range c.timeouts.fire(c.env) {
		f := c.fetches[req]
		if f == nil {
			continue
		}
		delete(c.fetches, req)
		c.near.timedOut(f.node, c.env.Now())
		c.env.Send(f.client, &wire.ReadReply{Req: f.req, Table: c.layout.Table, Code: wire.Unavailable, Ring: wire.NoRing, Node: f.node})
	}
}

func (c *Cache) read(from wire.NodeID, m *wire.Read) {
	if m.Table != c.layout.Table || m.Ring < wire.NoRing || int(m.Ring) >= len(c.layout.Rings) {
		code := wire.NoTable
		if m.Table == c.layout.Table {
			code = wire.Invalid
		}
		c.env.Send(from, &wire.ReadReply{Req: m.Req, Table: c.layout.Table, Code: code, Ring: wire.NoRing})
		return
	}
	if abandoned(c.env, m) {
		c.metrics.AbandonedReads++
		return
	}
	if e := c.entries[m.Key]; e != nil && e.serves(m.Ring, m.Min) {
		c.metrics.Hits++
		c.env.Send(from, &wire.ReadReply{Req: m.Req, Table: c.layout.Table, Found: e.found, Value: e.value, Version: e.version,
			Source: wire.FromCache, Ring: wire.NoRing, Node: c.env.ID()})
		return
	}
	c.metrics.Misses++
	r := int(m.Ring)
	if m.Ring == wire.NoRing {
		r = c.near.order(c.layout, m.Key, c.env.Now(), 0)[0]
	}
	to := c.layout.Node(r, m.Key)
	c.nextReq++
	req := c.nextReq
	c.fetches[req] = &fetch{client: from, req: m.Req, key: m.Key, node: to, ring: r, sent: c.env.Now()}
	// The fill is given up after ReadTimeout, or when the coordinator
	// gives up the read, if sooner.
	deadline := c.env.WallNanos() + int64(c.opts.ReadTimeout)
	if !m.Deadline.IsZero() {
		deadline = min(deadline, m.Deadline.WallNanos)
	}
	c.env.Send(to, &wire.Read{Req: req, Table: c.layout.Table, Key: m.Key, Fill: true, Ring: wire.NoRing, Deadline: hlc.Timestamp{WallNanos: deadline}})
	c.timeouts.add(c.env, req)
}

// filled passes a fill's answer on to the reader, and keeps it if it is
// stable (Cache's comment says why an in-flight version is not kept).
func (c *Cache) filled(from wire.NodeID, m *wire.ReadReply) {
	f := c.fetches[m.Req]
	if f == nil || f.node != from {
		return
	}
	delete(c.fetches, m.Req)
	c.near.observe(from, c.env.Now().Sub(f.sent))
	if m.Code == wire.OK && !m.InFlight {
		bit := uint64(1) << f.ring
		switch e := c.entries[f.key]; {
		case e == nil || e.version.Less(m.Version):
			c.install(f.key, &cached{found: m.Found, value: m.Value, version: m.Version, rings: bit})
		case e.version == m.Version:
			e.rings |= bit
		}
	}
	reply := *m
	reply.Req = f.req
	c.env.Send(f.client, &reply)
}

func (c *Cache) install(key string, e *cached) {
	// I3 (karma.md section 2), as restricted reads use the cache: a
	// version never goes back in it.
	if old := c.entries[key]; invariants.Enabled && old != nil {
		invariants.Check(old.version.Less(e.version), "cache %s: key %q filled with %s over %s", c.env.ID(), key, e.version, old.version)
	}
	if _, ok := c.entries[key]; !ok {
		for len(c.entries) >= c.opts.Capacity && len(c.order) > 0 {
			victim := c.order[0]
			c.order = c.order[1:]
			delete(c.entries, victim)
		}
	}
	c.entries[key] = e
	c.order = append(c.order, key)
	if len(c.order) > 2*c.opts.Capacity+16 {
		c.compact()
	}
}

// compact drops the keys of order no longer cached, or cached again
// later, keeping one per cached key in fill order.
func (c *Cache) compact() {
	seen := map[string]int{}
	for i, k := range c.order {
		seen[k] = i
	}
	kept := c.order[:0]
	for i, k := range c.order {
		if _, ok := c.entries[k]; ok && seen[k] == i {
			kept = append(kept, k)
		}
	}
	c.order = kept
}

// invalidate drops a key's versions older than the invalidating one, or,
// with no key, everything filled from the sender (it restarted and lost
// its cached-at sets). Either way the sender learns it is done.
func (c *Cache) invalidate(from wire.NodeID, m *wire.Invalidate) {
	if m.Key == "" {
		if r := c.layout.RingOf(from); r >= 0 {
			for k, e := range c.entries {
				if e.rings&(1<<r) != 0 && c.layout.Node(r, k) == from {
					delete(c.entries, k)
				}
			}
		}
	} else if e := c.entries[m.Key]; e != nil && e.version.Less(m.Version) {
		delete(c.entries, m.Key)
	}
	c.env.Send(from, &wire.InvalidateAck{Req: m.Req, Table: c.layout.Table})
}

// Metrics returns the cache's counters.
func (c *Cache) Metrics() CacheMetrics { return c.metrics }

// Versions returns the version cached of every key (the zero version for
// a key cached as never written).
func (c *Cache) Versions() map[string]wire.Version {
	out := make(map[string]wire.Version, len(c.entries))
	for k, e := range c.entries {
		out[k] = e.version
	}
	return out
}
