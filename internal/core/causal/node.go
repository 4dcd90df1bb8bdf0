package causal

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/cosla/cosla/internal/core/node"
	"github.com/cosla/cosla/internal/core/storage"
	"github.com/cosla/cosla/internal/core/wire"
)

// Role is what a Node does for each causal table it holds.
type Role uint8

// Roles.
const (
	// RoleStore: a storage node and its middle man.
	RoleStore Role = iota
	// RoleCoordinator: a site's client coordinator.
	RoleCoordinator
	// RoleCache: a site's cache.
	RoleCache
)

func (r Role) String() string {
	switch r {
	case RoleCoordinator:
		return "coordinator"
	case RoleCache:
		return "cache"
	}
	return "store"
}

// CoordinatorName and CacheName are the names of a site's coordinator and
// cache nodes: "<site>/cc" and "<site>/cache".
const (
	CoordinatorName = "cc"
	CacheName       = "cache"
)

// RoleNode reports whether id names a site's coordinator or cache.
func RoleNode(id wire.NodeID) bool {
	_, name, _ := strings.Cut(string(id), "/")
	return name == CoordinatorName || name == CacheName
}

// NodeOptions configures a Node. The layouts in Store, Coordinator and
// Cache are ignored: each table brings its own.
type NodeOptions struct {
	Role        Role
	Store       StoreOptions
	Coordinator CoordinatorOptions
	Cache       CacheOptions
}

// LayoutOf returns the protocol layout of a causal table's wire layout,
// validated.
func LayoutOf(l *wire.Layout) (*Layout, error) {
	if l.Causal == nil {
		return nil, fmt.Errorf("%w: table %q is not a causal table", ErrBadLayout, l.Name)
	}
	c := l.Causal
	out := &Layout{Table: l.ID, Coordinators: map[string]wire.NodeID{}, Caches: map[string]wire.NodeID{}, Points: int(c.Points), Static: c.Static}
	for _, r := range c.Rings {
		out.Rings = append(out.Rings, Ring{Name: r.Name, Nodes: slices.Clone(r.Nodes)})
	}
	for _, id := range c.Coordinators {
		out.Coordinators[Site(id)] = id
	}
	for _, id := range c.Caches {
		out.Caches[Site(id)] = id
	}
	if err := out.Validate(); err != nil {
		return nil, err
	}
	return out, nil
}

// Node hosts one role for every causal table created at it: a core per
// table, each started with the table's layout, its messages routed by
// the table they name. It keeps the tables' layouts in its engine and
// starts their cores again after a restart.
type Node struct {
	opts   NodeOptions
	env    node.Env
	tables map[uint64]*hostedTable
	batch  storage.Batch
}

type hostedTable struct {
	layout wire.Layout
	core   node.Handler
}

const spaceCatalog = 'k' // k<table:8> -> the table's wire.Layout, JSON

func catalogKey(table uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{spaceCatalog}, table)
}

// NewNode returns a node of the given role; Start starts it.
func NewNode(opts NodeOptions) *Node { return &Node{opts: opts} }

// Start implements node.Handler: it starts a core for every table in its
// catalog.
func (n *Node) Start(env node.Env) error {
	n.env = env
	n.tables = map[uint64]*hostedTable{}
	var layouts []wire.Layout
	err := storage.Walk(env.Engine(), []byte{spaceCatalog}, []byte{spaceCatalog + 1}, func(_, v []byte) (bool, error) {
		var l wire.Layout
		if err := json.Unmarshal(v, &l); err != nil {
			return false, err
		}
		layouts = append(layouts, l)
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("causal: %s: read catalog: %w", env.ID(), err)
	}
	for _, l := range layouts {
		if err := n.startTable(l); err != nil {
			return err
		}
	}
	return nil
}

func (n *Node) startTable(l wire.Layout) error {
	layout, err := LayoutOf(&l)
	if err != nil {
		return err
	}
	var core node.Handler
	switch n.opts.Role {
	case RoleStore:
		o := n.opts.Store
		o.Layout = layout
		core = NewStore(o)
	case RoleCoordinator:
		o := n.opts.Coordinator
		o.Layout = layout
		core = NewCoordinator(o)
	case RoleCache:
		o := n.opts.Cache
		o.Layout = layout
		core = NewCache(o)
	default:
		return fmt.Errorf("causal: unknown role %d", n.opts.Role)
	}
	// Its timers come back routed by the table ID.
	if err := core.Start(node.RouteTimers(n.env, l.ID)); err != nil {
		return fmt.Errorf("causal: %s: table %q: %w", n.env.ID(), l.Name, err)
	}
	n.tables[l.ID] = &hostedTable{layout: l, core: core}
	return nil
}

func (n *Node) byName(name string) *hostedTable {
	for _, t := range n.tables {
		if t.layout.Name == name {
			return t
		}
	}
	return nil
}

// Has reports whether the node holds a causal table of that name.
func (n *Node) Has(name string) bool { return n.byName(name) != nil }

// Receive implements node.Handler.
func (n *Node) Receive(from wire.NodeID, m wire.Msg) {
	switch m := m.(type) {
	case *wire.CreateTableRequest:
		n.env.Send(from, &wire.CreateTableReply{Req: m.Req, Code: n.create(m.Layout)})
		return
	case *wire.DeleteTableRequest:
		if t := n.byName(m.Name); t != nil {
			n.batch.Reset()
			n.batch.Delete(catalogKey(t.layout.ID))
			if err := n.env.Engine().Apply(&n.batch, true); err != nil {
				n.env.Send(from, &wire.DeleteTableReply{Req: m.Req, Code: wire.StorageFailed})
				return
			}
			delete(n.tables, t.layout.ID)
		}
		n.env.Send(from, &wire.DeleteTableReply{Req: m.Req})
		return
	case *wire.TableInfoRequest:
		if t := n.byName(m.Name); t != nil {
			n.env.Send(from, &wire.TableInfoReply{Req: m.Req, Layout: t.layout})
			return
		}
		n.env.Send(from, &wire.TableInfoReply{Req: m.Req, Code: wire.NoTable})
		return
	}
	id, ok := TableOf(m)
	if !ok {
		return
	}
	t := n.tables[id]
	if inv, ok := m.(*wire.Invalidate); ok && t == nil && n.opts.Role == RoleCache {
		// A cache without the table holds nothing of it, so there is
		// nothing to invalidate. A store starting a new table resets
		// every cache first and acknowledges no write until they answer
		// (Store.Start); a far cache the table has not reached yet
		// would otherwise hold the first writes for a Resend.
		n.env.Send(from, &wire.InvalidateAck{Req: inv.Req, Table: inv.Table})
		return
	}
	if t == nil {
		if r := wire.Refusal(m, wire.NoTable); r != nil {
			n.env.Send(from, r)
		}
		return
	}
	t.core.Receive(from, m)
}

// create creates a table: it is idempotent for an identical layout.
func (n *Node) create(l wire.Layout) wire.Code {
	if err := l.Validate(); err != nil || l.Causal == nil {
		return wire.Invalid
	}
	if t := n.byName(l.Name); t != nil {
		if t.layout.Equal(&l) {
			return wire.OK
		}
		return wire.TableExists
	}
	if t := n.tables[l.ID]; t != nil {
		return wire.TableExists
	}
	if _, err := LayoutOf(&l); err != nil {
		return wire.Invalid
	}
	b, err := json.Marshal(l)
	if err != nil {
		return wire.Invalid
	}
	n.batch.Reset()
	n.batch.Set(catalogKey(l.ID), b)
	if err := n.env.Engine().Apply(&n.batch, true); err != nil {
		return wire.StorageFailed
	}
	if err := n.startTable(l); err != nil {
		return wire.Invalid
	}
	return wire.OK
}

// Fire implements node.Handler.
func (n *Node) Fire(timer any) {
	t, ok := timer.(node.RoutedTimer)
	if !ok {
		return
	}
	if h := n.tables[t.Route]; h != nil {
		h.core.Fire(t.Timer)
	}
}

// Core returns the core serving a table, or nil.
func (n *Node) Core(table uint64) node.Handler {
	if t := n.tables[table]; t != nil {
		return t.core
	}
	return nil
}

// CacheMetrics sums what the node's caches counted, over every table it
// holds; ok is false for a node of another role. A table dropped takes
// its counts with it.
func (n *Node) CacheMetrics() (m CacheMetrics, ok bool) {
	if n.opts.Role != RoleCache {
		return m, false
	}
	for _, t := range n.tables {
		if c, isCache := t.core.(*Cache); isCache {
			cm := c.Metrics()
			m.Hits, m.Misses, m.AbandonedReads = m.Hits+cm.Hits, m.Misses+cm.Misses, m.AbandonedReads+cm.AbandonedReads
		}
	}
	return m, true
}

// CoordinatorMetrics returns the sums of the metrics of the node's
// coordinators, and false if it is not a coordinator.
func (n *Node) CoordinatorMetrics() (m CoordinatorMetrics, ok bool) {
	if n.opts.Role != RoleCoordinator {
		return m, false
	}
	for _, t := range n.tables {
		if c, isCoordinator := t.core.(*Coordinator); isCoordinator {
			cm := c.Metrics()
			m.Buffered, m.Waiting, m.PutsWaited = m.Buffered+cm.Buffered, m.Waiting+cm.Waiting, m.PutsWaited+cm.PutsWaited
		}
	}
	return m, true
}

// TableOf returns the table a causal message names.
func TableOf(m wire.Msg) (uint64, bool) {
	switch m := m.(type) {
	case *wire.CausalPut:
		return m.Table, true
	case *wire.CausalPutReply:
		return m.Table, true
	case *wire.CausalComplete:
		return m.Table, true
	case *wire.CausalGet:
		return m.Table, true
	case *wire.CausalGetReply:
		return m.Table, true
	case *wire.CausalGetTx:
		return m.Table, true
	case *wire.CausalGetTxReply:
		return m.Table, true
	case *wire.Propagate:
		return m.Table, true
	case *wire.PropagateAck:
		return m.Table, true
	case *wire.Stable:
		return m.Table, true
	case *wire.Read:
		return m.Table, true
	case *wire.ReadReply:
		return m.Table, true
	case *wire.DepCheck:
		return m.Table, true
	case *wire.DepCheckReply:
		return m.Table, true
	case *wire.Invalidate:
		return m.Table, true
	case *wire.InvalidateAck:
		return m.Table, true
	}
	return 0, false
}
