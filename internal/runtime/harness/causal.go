package harness

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/cosla/cosla/internal/core/causal"
	"github.com/cosla/cosla/internal/core/node"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/runtime/sim"
	"github.com/cosla/cosla/internal/runtime/topology"
)

// CausalOptions configures a world holding one causal table (Karma,
// DESIGN.md section 5). Each site's Replicas are its storage nodes, each
// with its middle man; every site gets a coordinator named "cc" and, under
// the Karma strategy, a cache named "cache"; its Clients are
// causal.Clients.
type CausalOptions struct {
	Seed     uint64
	Topology topology.Topology
	// Rings lists the sites of each ring. Under COPSIdeal it is ignored:
	// every site is a ring.
	Rings    [][]string
	Strategy causal.Strategy
	// Table is the table's ID. Default 1.
	Table uint64
	// Storage, Cache, Coordinator and ClientNode model the nodes' costs
	// in the simulator (sim.NodeOptions). Default: infinitely fast.
	Storage, Cache, Coordinator, ClientNode sim.NodeOptions
	// Cores, if positive, makes each site one machine whose nodes share
	// that many cores (sim.SetCores).
	Cores int
	// Client, CoordinatorOpts, StoreOpts and CacheOpts set the protocol
	// options; their layouts and round-trip estimates are filled in.
	Client          causal.ClientOptions
	CoordinatorOpts causal.CoordinatorOptions
	StoreOpts       causal.StoreOptions
	CacheOpts       causal.CacheOptions
	Logger          *slog.Logger
	Trace           func(line string)
	// Observe, as Options.Observe.
	Observe func(from, to wire.NodeID, m wire.Msg)
}

// CausalWorld is a simulated cluster holding a causal table.
type CausalWorld struct {
	Sim      *sim.Sim
	Topology topology.Topology
	Layout   *causal.Layout
	// Stores, Coordinators, Caches and Clients list the nodes by role.
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

// RTTs returns the topology's round trip from site to every node of the
// layout: the estimates a node there starts with.
func RTTs(topo topology.Topology, l *causal.Layout, site string) map[wire.NodeID]time.Duration {
	out := map[wire.NodeID]time.Duration{}
	add := func(id wire.NodeID) {
		other := causal.Site(id)
		if other == site {
			out[id] = topo.LocalRTT
		} else if link, ok := topo.Link(site, other); ok {
			out[id] = link.RTT
		}
	}
	for _, r := range l.Rings {
		for _, n := range r.Nodes {
			add(n)
		}
	}
	for _, n := range l.Caches {
		add(n)
	}
	return out
}

// NewCausal builds the world: sites, links and started nodes.
func NewCausal(opts CausalOptions) (*CausalWorld, error) {
	topo := opts.Topology
	if err := topo.Validate(); err != nil {
		return nil, err
	}
	if opts.Table == 0 {
		opts.Table = 1
	}
	wl, err := CausalLayout(topo, "causal", opts.Rings, opts.Strategy, opts.Table)
	if err != nil {
		return nil, err
	}
	l, err := causal.LayoutOf(&wl)
	if err != nil {
		return nil, err
	}
	s, err := newSim(opts.Seed, topo, opts.Cores, opts.Logger, opts.Trace)
	if err != nil {
		return nil, err
	}
	w := &CausalWorld{Sim: s, Topology: topo, Layout: l}
	add := func(id wire.NodeID, site string, nopts sim.NodeOptions, factory func() node.Handler) error {
		return s.AddNode(id, site, nopts, observed(opts.Observe, factory))
	}
	// Caches first: a store that starts tells every cache to reset.
	for _, site := range topo.Sites {
		if cache, ok := l.Caches[site.Name]; ok {
			ko := opts.CacheOpts
			ko.Layout, ko.RTT = l, RTTs(topo, l, site.Name)
			if err := add(cache, site.Name, opts.Cache, func() node.Handler { return causal.NewCache(ko) }); err != nil {
				return nil, err
			}
			w.Caches = append(w.Caches, cache)
		}
	}
	for _, site := range topo.Sites {
		for _, name := range site.Replicas {
			id := topology.NodeID(site.Name, name)
			so := opts.StoreOpts
			so.Layout = l
			if err := add(id, site.Name, opts.Storage, func() node.Handler { return causal.NewStore(so) }); err != nil {
				return nil, err
			}
			w.Stores = append(w.Stores, id)
		}
	}
	for _, site := range topo.Sites {
		co := opts.CoordinatorOpts
		co.Layout, co.RTT = l, RTTs(topo, l, site.Name)
		cc := l.Coordinators[site.Name]
		if err := add(cc, site.Name, opts.Coordinator, func() node.Handler { return causal.NewCoordinator(co) }); err != nil {
			return nil, err
		}
		w.Coordinators = append(w.Coordinators, cc)
		for _, name := range site.Clients {
			id := topology.NodeID(site.Name, name)
			clo := opts.Client
			clo.Layout = l
			if err := add(id, site.Name, opts.ClientNode, func() node.Handler { return causal.NewClient(clo) }); err != nil {
				return nil, err
			}
			w.Clients = append(w.Clients, id)
		}
	}
	return w, nil
}

// Client returns a running causal client.
func (w *CausalWorld) Client(id wire.NodeID) (*causal.Client, error) {
	return running[*causal.Client](w.Sim, id)
}

// Store returns a running storage node.
func (w *CausalWorld) Store(id wire.NodeID) (*causal.Store, error) {
	return running[*causal.Store](w.Sim, id)
}

// Cache returns a running cache.
func (w *CausalWorld) Cache(id wire.NodeID) (*causal.Cache, error) {
	return running[*causal.Cache](w.Sim, id)
}

// running returns node id's protocol core as a T.
func running[T node.Handler](s *sim.Sim, id wire.NodeID) (T, error) {
	var zero T
	h, ok := s.Handler(id)
	if !ok {
		return zero, fmt.Errorf("harness: no running node %s", id)
	}
	if o, ok := h.(*observedHandler); ok {
		h = o.Handler
	}
	t, ok := h.(T)
	if !ok {
		return zero, fmt.Errorf("harness: node %s is a %T, not a %T", id, h, zero)
	}
	return t, nil
}
