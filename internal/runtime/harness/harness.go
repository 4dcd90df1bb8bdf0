// Package harness builds simulated cosla worlds: the storage nodes and
// clients of a topology hosted in the simulator. Workloads run on them
// through package driver (driver.SimTarget), which records what every
// operation did. Scenario tests, randomized tests and the simulated
// experiments are all built on it.
package harness

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/cosla/cosla/internal/core/clientcore"
	"github.com/cosla/cosla/internal/core/config"
	"github.com/cosla/cosla/internal/core/node"
	"github.com/cosla/cosla/internal/core/replica"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/runtime/sim"
	"github.com/cosla/cosla/internal/runtime/site"
	"github.com/cosla/cosla/internal/runtime/topology"
)

// Options configures a World.
type Options struct {
	Seed     uint64
	Topology topology.Topology
	// Replica and Causal are the protocol options of every site's nodes
	// (package site, the recipe `cosla serve` runs). Causal's
	// Coordinator.RTT and Cache.RTT, if nil, are each site's round trips
	// to every storage node and cache of the topology (seedRTTs).
	Replica replica.Options
	Causal  site.CausalOptions
	// Config configures the configuration service. Its Member.Voters,
	// if empty, are the members at the topology's ConfigSites, as
	// `cosla cluster up` names them.
	Config config.NodeOptions
	// Storage, Coordinator, Cache and ClientNode are the simulator's
	// model of every storage node, causal coordinator, cache and client
	// node: service times and fsync cost (sim.NodeOptions); a
	// configuration member costs what a storage node does. Default:
	// infinitely fast.
	Storage, Coordinator, Cache, ClientNode sim.NodeOptions
	// Cores, if positive, makes each site one machine whose nodes share
	// that many cores (sim.SetCores). Default: a machine per node.
	Cores int
	// Client options; Nodes defaults to every storage node.
	Client clientcore.Options
	Logger *slog.Logger
	Trace  func(line string)
	// Observe, if set, sees every message a node of the world sends, as
	// it sends it, before the network may lose it: tests that check what
	// the replicas did read it (TestRandomized rebuilds each primary's
	// order of versions from it). In a world whose nodes pay for fsyncs
	// (sim.NodeOptions.Fsync), a message held for an fsync that a crash
	// cuts short is seen but never sent.
	Observe func(from, to wire.NodeID, m wire.Msg)
}

// World is a simulated cluster.
type World struct {
	Sim      *sim.Sim
	Topology topology.Topology

	observe func(from, to wire.NodeID, m wire.Msg)
}

// New builds the world: sites, links and started nodes. Each site runs
// the nodes of package site (its storage nodes, each a replica core with
// a causal store beside it, its causal coordinator and its cache), as
// `cosla serve` does, and its clients are client cores.
func New(opts Options) (*World, error) {
	topo := opts.Topology
	if err := topo.Validate(); err != nil {
		return nil, err
	}
	s, err := newSim(opts.Seed, topo, opts.Cores, opts.Logger, opts.Trace)
	if err != nil {
		return nil, err
	}
	copts := opts.Client
	if len(copts.Nodes) == 0 {
		copts.Nodes = topo.Replicas()
	}
	costs := map[site.Role]sim.NodeOptions{site.Storage: opts.Storage, site.Coordinator: opts.Coordinator, site.Cache: opts.Cache,
		site.Config: opts.Storage}
	cfg := opts.Config
	if len(cfg.Member.Voters) == 0 {
		cfg.Member.Voters = site.Voters(topo.ConfigSites())
	}
	if copts.Config == nil {
		// A client reports to the service as a client of a cluster
		// does (hostclient.Members).
		copts.Config = cfg.Member.Voters
	}
	for _, st := range topo.Sites {
		siteOpts := site.Options{Replica: opts.Replica, Causal: opts.Causal, Config: cfg}
		seedRTTs(&siteOpts.Causal, topo, st.Name)
		for _, n := range site.Nodes(st.Name, st.Replicas, siteOpts) {
			if err := s.AddNode(n.ID, st.Name, costs[n.Role], observed(opts.Observe, n.New)); err != nil {
				return nil, err
			}
		}
		for _, name := range st.Clients {
			err := s.AddNode(topology.NodeID(st.Name, name), st.Name, opts.ClientNode,
				observed(opts.Observe, func() node.Handler { return clientcore.New(copts) }))
			if err != nil {
				return nil, err
			}
		}
	}
	return &World{Sim: s, Topology: topo, observe: opts.Observe}, nil
}

// AddClient adds a client core to the world at a site, with the node
// costs given; Options.Observe sees what it sends, as it sees the
// topology's clients'.
func (w *World) AddClient(id wire.NodeID, site string, costs sim.NodeOptions, opts clientcore.Options) error {
	return w.Sim.AddNode(id, site, costs, observed(w.observe, func() node.Handler { return clientcore.New(opts) }))
}

// seedRTTs gives a site's causal coordinator and cache, where o leaves
// them none, the topology's round trips (site.TopologyRTTs), as `cosla
// cluster up` writes them into each site's serve config.
func seedRTTs(o *site.CausalOptions, topo topology.Topology, from string) {
	rtt := site.TopologyRTTs(topo, from)
	if o.Coordinator.RTT == nil {
		o.Coordinator.RTT = rtt
	}
	if o.Cache.RTT == nil {
		o.Cache.RTT = rtt
	}
}

// newSim returns a simulator with topo's sites and links.
func newSim(seed uint64, topo topology.Topology, cores int, logger *slog.Logger, trace func(string)) (*sim.Sim, error) {
	s := sim.New(sim.Options{Seed: seed, Logger: logger, Trace: trace})
	for _, site := range topo.Sites {
		s.AddSite(site.Name)
		if err := s.SetLatency(site.Name, site.Name, sim.Latency{Mean: topo.LocalRTT / 2, Jitter: topo.LocalJitter}); err != nil {
			return nil, err
		}
		if cores > 0 {
			if err := s.SetCores(site.Name, cores); err != nil {
				return nil, err
			}
		}
		if topo.LocalBandwidth > 0 {
			if err := s.SetBandwidth(site.Name, site.Name, topo.LocalBandwidth); err != nil {
				return nil, err
			}
		}
	}
	for _, l := range topo.Links {
		if err := s.SetLatency(l.A, l.B, sim.Latency{Mean: l.RTT / 2, Jitter: l.Jitter}); err != nil {
			return nil, err
		}
		if l.Bandwidth > 0 {
			if err := s.SetBandwidth(l.A, l.B, l.Bandwidth); err != nil {
				return nil, err
			}
		}
	}
	return s, nil
}

// observed wraps a node factory's handlers so that observe sees what
// they send (Options.Observe); a nil observe leaves it as it is.
func observed(observe func(from, to wire.NodeID, m wire.Msg), factory func() node.Handler) func() node.Handler {
	if observe == nil {
		return factory
	}
	return func() node.Handler {
		h := factory()
		o := &observedHandler{Handler: h, observe: observe}
		if u, ok := h.(node.Urgency); ok {
			return &observedUrgent{observedHandler: o, urgency: u}
		}
		return o
	}
}

type observedHandler struct {
	node.Handler
	observe func(from, to wire.NodeID, m wire.Msg)
}

// observedUrgent is an observed handler with node.Urgency, which the
// simulator must still see.
type observedUrgent struct {
	*observedHandler
	urgency node.Urgency
}

func (h *observedUrgent) Urgent(m wire.Msg) bool { return h.urgency.Urgent(m) }

func (h *observedHandler) Start(env node.Env) error {
	return h.Handler.Start(observedEnv{Env: env, observe: h.observe})
}

type observedEnv struct {
	node.Env
	observe func(from, to wire.NodeID, m wire.Msg)
}

func (e observedEnv) Send(to wire.NodeID, m wire.Msg) {
	e.observe(e.ID(), to, m)
	e.Env.Send(to, m)
}

// handler returns a running node's protocol core.
func (w *World) handler(id wire.NodeID) (node.Handler, error) {
	h, ok := w.Sim.Handler(id)
	if !ok {
		return nil, fmt.Errorf("harness: no running node %s", id)
	}
	switch o := h.(type) {
	case *observedHandler:
		h = o.Handler
	case *observedUrgent:
		h = o.Handler
	}
	return h, nil
}

// Client returns a running client node's core.
func (w *World) Client(id wire.NodeID) (*clientcore.Client, error) {
	return nodeCore(w, id, "is not a client", func(h node.Handler) *clientcore.Client {
		c, _ := h.(*clientcore.Client)
		return c
	})
}

// Member returns a running configuration member's core.
func (w *World) Member(id wire.NodeID) (*config.Node, error) {
	return nodeCore(w, id, "is not a configuration member", site.Member)
}

// Replica returns a running storage node's core.
func (w *World) Replica(id wire.NodeID) (*replica.Node, error) {
	return nodeCore(w, id, "is not a storage node", site.Replica)
}

// nodeCore returns the core that of finds in a running node's handler,
// or an error saying that the node is not what was asked for (not:
// "is not a client").
func nodeCore[T comparable](w *World, id wire.NodeID, not string, of func(node.Handler) T) (T, error) {
	var zero T
	h, err := w.handler(id)
	if err != nil {
		return zero, err
	}
	c := of(h)
	if c == zero {
		return zero, fmt.Errorf("harness: node %s %s", id, not)
	}
	return c, nil
}

// Await starts an asynchronous operation and runs the simulation until it
// calls its done function, or fails if limit of virtual time passes first.
func (w *World) Await(limit time.Duration, start func(done func())) error {
	finished := false
	start(func() { finished = true })
	deadline := w.Sim.Now() + limit
	if err := w.Sim.RunUntil(deadline, func() bool { return finished }); err != nil {
		return err
	}
	if !finished {
		return fmt.Errorf("harness: operation not finished after %s of virtual time (seed %d)", limit, w.Sim.Seed())
	}
	return nil
}

// CreateTable creates a table through a client and waits for it, and
// for each of its tablets' primaries to hold its lease (the first one
// takes a few round trips to the configuration service), so that what
// the world does next starts from a table that takes Puts.
func (w *World) CreateTable(client wire.NodeID, l wire.Layout) error {
	c, err := w.Client(client)
	if err != nil {
		return err
	}
	var result error
	if err := w.Await(time.Minute, func(done func()) {
		c.CreateTable(l, func(err error) { result = err; done() })
	}); err != nil {
		return err
	}
	if result != nil || l.Causal != nil {
		return result
	}
	deadline := w.Sim.Now() + time.Minute
	if err := w.Sim.RunUntil(deadline, func() bool { return w.leased(l) }); err != nil {
		return err
	}
	if !w.leased(l) {
		return fmt.Errorf("harness: table %s: a primary holds no lease after a minute of virtual time (seed %d)", l.Name, w.Sim.Seed())
	}
	return nil
}

// leased reports whether every running primary of l's tablets may take
// Puts. A primary that is down is not waited for.
func (w *World) leased(l wire.Layout) bool {
	for i, tb := range l.Tablets {
		r, err := w.Replica(tb.Primary)
		if err != nil {
			continue
		}
		for _, st := range r.Metrics().Tablets {
			// By name: a layout without an ID gets one from the client.
			if st.Table == l.Name && st.Ref.Tablet == int32(i) && st.Primary && !st.Leased {
				return false
			}
		}
	}
	return true
}

// OpenTable opens a table through a client and waits for it.
func (w *World) OpenTable(client wire.NodeID, name string) (*clientcore.Table, error) {
	c, err := w.Client(client)
	if err != nil {
		return nil, err
	}
	var t *clientcore.Table
	var result error
	if err := w.Await(time.Minute, func(done func()) {
		c.OpenTable(name, func(tb *clientcore.Table, err error) { t, result = tb, err; done() })
	}); err != nil {
		return nil, err
	}
	return t, result
}
