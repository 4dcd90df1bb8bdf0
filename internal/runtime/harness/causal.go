package harness

import (
	"cmp"
	"fmt"
	"log/slog"
	"strings"

	"github.com/cosla/cosla/internal/core/causal"
	"github.com/cosla/cosla/internal/core/clientcore"
	"github.com/cosla/cosla/internal/core/node"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/runtime/sim"
	"github.com/cosla/cosla/internal/runtime/site"
	"github.com/cosla/cosla/internal/runtime/topology"
	"github.com/cosla/cosla/sla"
)

// CausalOptions configures a world holding one causal table (Karma,
// DESIGN.md section 5). The world is a World (New): every site runs the
// nodes `cosla serve` runs (package site), and its Clients are client
// cores. The table is then created as `cosla cluster up` creates one: a
// client core sends its layout (CausalLayout) to the rings' storage
// nodes, the sites' coordinators and, under the Karma strategy, their
// caches, which start serving it.
type CausalOptions struct {
	Seed     uint64
	Topology topology.Topology
	// Rings lists the sites of each ring. Under COPSIdeal it is ignored:
	// every site is a ring.
	Rings    [][]string
	Strategy causal.Strategy
	// Name and Table are the table's name and ID. Defaults "causal"
	// and 1.
	Name  string
	Table uint64
	// Storage, Cache, Coordinator and ClientNode model the nodes' costs
	// in the simulator (sim.NodeOptions). Default: infinitely fast.
	Storage, Cache, Coordinator, ClientNode sim.NodeOptions
	// Cores, if positive, makes each site one machine whose nodes share
	// that many cores (sim.SetCores).
	Cores int
	// Client configures the client cores: the topology's clients and
	// the one that creates the table (CreatorName).
	Client clientcore.Options
	// Causal sets the protocol options of the causal cores (their
	// layouts come from the table's creation).
	Causal site.CausalOptions
	Logger *slog.Logger
	Trace  func(line string)
	// Observe, as Options.Observe.
	Observe func(from, to wire.NodeID, m wire.Msg)
}

// CreatorName is the client node, at the topology's first site, that
// creates a causal world's table (as `cosla cluster up`'s supervisor
// client does on a real cluster).
const CreatorName = "creator"

// CausalSLA is the SLA of a session on a causal table in a causal world:
// causal reads with no latency bound, so that every read that returns
// meets it.
var CausalSLA = sla.SLA{{Consistency: sla.CausalConsistency, Latency: sla.Unbounded, Utility: 1}}

// CausalWorld is a simulated cluster holding a causal table.
type CausalWorld struct {
	*World
	// Name is the table's name, Layout its placement.
	Name   string
	Layout *causal.Layout
	// Stores, Coordinators and Caches list the table's nodes by role,
	// Clients the topology's client nodes.
	Stores, Coordinators, Caches, Clients []wire.NodeID
}

// CausalLayout builds the table's layout over topo: the given rings of
// sites (one ring per site under COPSIdeal), a coordinator at every site,
// a cache at every site under the Karma strategy, and reads bound to the
// site's ring under COPS-PR and COPS-Ideal. It is the layout a
// CreateTable of a causal table named name would carry.
func CausalLayout(topo topology.Topology, name string, rings [][]string, strategy causal.Strategy, table uint64) (wire.Layout, error) {
	if strategy == causal.COPSIdeal {
		rings = nil
		for _, s := range topo.Sites {
			rings = append(rings, []string{s.Name})
		}
	}
	c := &wire.CausalLayout{Static: strategy.Static()}
	inRing := map[string]bool{}
	for _, sites := range rings {
		r := wire.Ring{Name: strings.Join(sites, "+")}
		for _, name := range sites {
			site, ok := siteNamed(topo, name)
			if !ok {
				return wire.Layout{}, fmt.Errorf("harness: ring site %q is not in the topology", name)
			}
			if inRing[name] {
				return wire.Layout{}, fmt.Errorf("harness: site %q is in two rings", name)
			}
			inRing[name] = true
			for _, n := range site.Replicas {
				r.Nodes = append(r.Nodes, topology.NodeID(name, n))
			}
		}
		c.Rings = append(c.Rings, r)
	}
	for _, s := range topo.Sites {
		if len(s.Replicas) > 0 && !inRing[s.Name] {
			return wire.Layout{}, fmt.Errorf("harness: site %q has storage nodes but is in no ring", s.Name)
		}
		c.Coordinators = append(c.Coordinators, topology.NodeID(s.Name, causal.CoordinatorName))
		if strategy.Cached() {
			c.Caches = append(c.Caches, topology.NodeID(s.Name, causal.CacheName))
		}
	}
	l := wire.Layout{Name: name, ID: table, Causal: c}
	if err := l.Validate(); err != nil {
		return wire.Layout{}, err
	}
	return l, nil
}

func siteNamed(topo topology.Topology, name string) (topology.Site, bool) {
	for _, s := range topo.Sites {
		if s.Name == name {
			return s, true
		}
	}
	return topology.Site{}, false
}

// NewCausal builds the world (New) and creates its causal table.
func NewCausal(opts CausalOptions) (*CausalWorld, error) {
	topo := opts.Topology
	if err := topo.Validate(); err != nil {
		return nil, err
	}
	opts.Name = cmp.Or(opts.Name, "causal")
	opts.Table = cmp.Or(opts.Table, 1)
	wl, err := CausalLayout(topo, opts.Name, opts.Rings, opts.Strategy, opts.Table)
	if err != nil {
		return nil, err
	}
	l, err := causal.LayoutOf(&wl)
	if err != nil {
		return nil, err
	}
	w, err := New(Options{Seed: opts.Seed, Topology: topo, Causal: opts.Causal, Storage: opts.Storage,
		Coordinator: opts.Coordinator, Cache: opts.Cache, ClientNode: opts.ClientNode, Cores: opts.Cores,
		Client: opts.Client, Logger: opts.Logger, Trace: opts.Trace, Observe: opts.Observe})
	if err != nil {
		return nil, err
	}
	copts := opts.Client
	if len(copts.Nodes) == 0 {
		copts.Nodes = topo.Replicas()
	}
	first := topo.Sites[0].Name
	creator := topology.NodeID(first, CreatorName)
	err = w.Sim.AddNode(creator, first, opts.ClientNode, observed(opts.Observe, func() node.Handler { return clientcore.New(copts) }))
	if err != nil {
		return nil, err
	}
	if err := w.CreateTable(creator, wl); err != nil {
		return nil, fmt.Errorf("harness: create causal table %s: %w", opts.Name, err)
	}
	cw := &CausalWorld{World: w, Name: opts.Name, Layout: l, Caches: l.CacheNodes()}
	for _, r := range l.Rings {
		cw.Stores = append(cw.Stores, r.Nodes...)
	}
	for _, st := range topo.Sites {
		cw.Coordinators = append(cw.Coordinators, l.Coordinators[st.Name])
		for _, name := range st.Clients {
			cw.Clients = append(cw.Clients, topology.NodeID(st.Name, name))
		}
	}
	return cw, nil
}

// Session opens the table at a client node of the world and begins a
// session on it with CausalSLA, running the simulation until the table
// is open.
func (w *CausalWorld) Session(client wire.NodeID) (*clientcore.Client, *clientcore.Session, error) {
	c, err := w.Client(client)
	if err != nil {
		return nil, nil, err
	}
	t, err := w.OpenTable(client, w.Name)
	if err != nil {
		return nil, nil, err
	}
	s, err := c.BeginSession(t, CausalSLA, clientcore.Closest)
	return c, s, err
}

// Store returns the table's core at a running storage node.
func (w *CausalWorld) Store(id wire.NodeID) (*causal.Store, error) {
	return tableCore[*causal.Store](w, id)
}

// Cache returns the table's core at a running cache.
func (w *CausalWorld) Cache(id wire.NodeID) (*causal.Cache, error) {
	return tableCore[*causal.Cache](w, id)
}

// Coordinator returns the table's core at a running coordinator.
func (w *CausalWorld) Coordinator(id wire.NodeID) (*causal.Coordinator, error) {
	return tableCore[*causal.Coordinator](w, id)
}

// tableCore returns the core serving the world's table at node id, as a
// T.
func tableCore[T node.Handler](w *CausalWorld, id wire.NodeID) (T, error) {
	var zero T
	n, err := nodeCore(w.World, id, "holds no causal tables", site.Causal)
	if err != nil {
		return zero, err
	}
	core := n.Core(w.Layout.Table)
	t, ok := core.(T)
	if !ok {
		return zero, fmt.Errorf("harness: node %s serves table %d with a %T, not a %T", id, w.Layout.Table, core, zero)
	}
	return t, nil
}
