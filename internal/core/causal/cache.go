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

// Cache is a datacenter cache (Karma 3, 4.3). It holds stable versions
// only: a miss is filled from the nearest ring, and the version kept only
// if the storage node reported it stable. Invalidations from storage nodes
// drop older versions. It keeps no durable state: a restarted cache is
// empty, which costs only misses (Karma 4.4).
//
// The fill race (karma.md section 5, item 6): the storage node that
// served a fill records the cache in its cached-at set before replying,
// and its later invalidations travel on the same ordered link, so a fill
// can never land after the invalidation of a newer version from the node
// that served it; a newer version elsewhere is in flight, and completes
// only after it reaches that node, which then invalidates.
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
	// AbandonedReads are the reads dropped unserved because their sender
	// had stopped waiting for them (wire.Read's Deadline).
	AbandonedReads uint64
}

type cached struct {
	found   bool
	value   []byte
	version wire.Version
	from    wire.NodeID
}

type fetch struct {
	client wire.NodeID
	req    uint64
	key    string
	node   wire.NodeID
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
	if m.Table != c.layout.Table {
		c.env.Send(from, &wire.ReadReply{Req: m.Req, Table: c.layout.Table, Code: wire.NoTable})
		return
	}
	if abandoned(c.env, m) {
		c.metrics.AbandonedReads++
		return
	}
	if e := c.entries[m.Key]; e != nil {
		c.env.Send(from, &wire.ReadReply{Req: m.Req, Table: c.layout.Table, Found: e.found, Value: e.value, Version: e.version,
			Source: wire.FromCache, Ring: wire.NoRing, Node: c.env.ID()})
		return
	}
	order := c.near.order(c.layout, m.Key, c.env.Now(), 0)
	to := c.layout.Node(order[0], m.Key)
	c.nextReq++
	req := c.nextReq
	c.fetches[req] = &fetch{client: from, req: m.Req, key: m.Key, node: to, sent: c.env.Now()}
	// The fill is given up after ReadTimeout, or when the coordinator
	// gives up the read, if sooner.
	deadline := c.env.WallNanos() + int64(c.opts.ReadTimeout)
	if !m.Deadline.IsZero() {
		deadline = min(deadline, m.Deadline.WallNanos)
	}
	c.env.Send(to, &wire.Read{Req: req, Table: c.layout.Table, Key: m.Key, Fill: true, Deadline: hlc.Timestamp{WallNanos: deadline}})
	c.timeouts.add(c.env, req)
}

func (c *Cache) filled(from wire.NodeID, m *wire.ReadReply) {
	f := c.fetches[m.Req]
	if f == nil || f.node != from {
		return
	}
	delete(c.fetches, m.Req)
	c.near.observe(from, c.env.Now().Sub(f.sent))
	if m.Code == wire.OK && !m.InFlight {
		if e := c.entries[f.key]; e == nil || e.version.Less(m.Version) {
			c.install(f.key, &cached{found: m.Found, value: m.Value, version: m.Version, from: from})
		}
	}
	reply := *m
	reply.Req = f.req
	c.env.Send(f.client, &reply)
}

func (c *Cache) install(key string, e *cached) {
	// I3 (karma.md section 2): a cache holds only stable versions; a
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
		for k, e := range c.entries {
			if e.from == from {
				delete(c.entries, k)
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
