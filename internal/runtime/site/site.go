// Package site is the one recipe of a site's nodes (STYLE.md habit 14):
// `cosla serve` (package server) hosts what Nodes returns on goroutines
// and the transport, the simulator (package harness) hosts the same nodes in
// virtual time, so a simulated site runs the process a real one does.
//
// It lives under internal/runtime, beside the two runtimes that host it,
// rather than in a core package: it is not a protocol but the wiring of
// several (package replica and package causal) into one site, and both
// runtimes already import the cores it wires. It is pure all the same (it
// only builds handlers), so the simulator may use it.
package site

import (
	"slices"
	"time"

	"github.com/cosla/cosla/internal/core/causal"
	"github.com/cosla/cosla/internal/core/config"
	"github.com/cosla/cosla/internal/core/node"
	"github.com/cosla/cosla/internal/core/replica"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/runtime/topology"
)

// Role is what a node of a site does.
type Role uint8

// Roles.
const (
	// Storage: a storage node, holding its replicas of primary-update
	// tables (package replica) and, beside them, of causal tables (a
	// causal store and its middle man, Karma 4.1.1).
	Storage Role = iota
	// Coordinator: the site's client coordinator of causal tables
	// (Karma 4.1.2), named causal.CoordinatorName.
	Coordinator
	// Cache: the site's cache of causal tables (Karma 4.3), named
	// causal.CacheName.
	Cache
	// Config: the site's member of the configuration service (DESIGN.md
	// section 10), named config.MemberName, at a voter site only.
	Config
)

func (r Role) String() string {
	switch r {
	case Coordinator:
		return "coordinator"
	case Cache:
		return "cache"
	case Config:
		return "config"
	}
	return "storage"
}

// Zone is the availability zone of its site that a node stands in.
// Karma 4.4 asks that a datacenter's front-ends (its client coordinators)
// and back-ends (its storage nodes) stand in different availability
// zones, AZ-F and AZ-B, so that a correlated failure of a whole
// datacenter, which leaves clients bound to its ring with neither its
// writes' propagation nor its data, is not the failure of one zone; its
// Claims 1 and 2 count failures and partitions in those units. cosla maps
// a site's nodes onto the two by role (Role.Zone): the coordinator and the
// cache, with the site's clients, are AZ-F; the storage nodes (each a
// causal store with its middle man beside it) and the configuration
// member are AZ-B. The cache stands with the coordinator, the only node
// that reads through it; Karma counts a cache's failure apart (it holds
// stable state only, so losing it costs reads a trip to a ring, never
// availability). The configuration member serves primary-update tables
// only; it stands with the storage nodes it governs.
type Zone uint8

// The zones of a site (Karma 4.4).
const (
	// Front is AZ-F: the coordinator, the cache and the site's clients.
	Front Zone = iota
	// Back is AZ-B: the storage nodes and the configuration member.
	Back
)

func (z Zone) String() string {
	if z == Back {
		return "AZ-B"
	}
	return "AZ-F"
}

// Zone returns the availability zone a node of role r stands in.
func (r Role) Zone() Zone {
	if r == Storage || r == Config {
		return Back
	}
	return Front
}

// ZoneNodes returns the nodes of a site's zone z among those Nodes
// returns; the site's clients, which stand in AZ-F too, are not among
// them.
func ZoneNodes(site string, storage []string, opts Options, z Zone) []wire.NodeID {
	var out []wire.NodeID
	for _, n := range Nodes(site, storage, opts) {
		if n.Role.Zone() == z {
			out = append(out, n.ID)
		}
	}
	return out
}

// Options are the protocol options of a site's nodes, per role.
type Options struct {
	// Replica configures each storage node's replica core.
	Replica replica.Options
	// Causal configures the causal tables' cores.
	Causal CausalOptions
	// Config configures the configuration service: Config.Member.Voters
	// names its members (Voters), the same at every site; a voter site
	// runs one. Every storage node is governed by it (its Puts need a
	// lease, its tablets move at failover) with Config.Lease. No voters:
	// no service, and no tablet ever moves.
	Config config.NodeOptions
}

// Voters returns the members of the configuration service hosted at the
// given sites, sorted (config.MemberOptions.Voters).
func Voters(sites []string) []wire.NodeID {
	ids := make([]wire.NodeID, len(sites))
	for i, s := range sites {
		ids[i] = topology.NodeID(s, config.MemberName)
	}
	slices.Sort(ids)
	return ids
}

// CausalOptions configure the cores a site runs for causal tables. Their
// Layout fields are ignored: each causal table brings its layout when it
// is created at the node (causal.Node). The coordinator's and cache's RTT
// are their initial round-trip estimates: the topology's (TopologyRTTs),
// in the simulator and in a cluster `cosla cluster up` started.
type CausalOptions struct {
	Store       causal.StoreOptions
	Coordinator causal.CoordinatorOptions
	Cache       causal.CacheOptions
}

// Node is one node of a site: its name at the site, its identity, its
// role, and how to make its handler. A node that restarts gets a new
// handler from New, which recovers from the node's engine.
type Node struct {
	Name string
	ID   wire.NodeID
	Role Role
	New  func() node.Handler
}

// Nodes returns the nodes of site: per storage node (named by storage,
// in that order) a replica core with a causal store Node beside it
// (causal.NewBeside), then the site's causal coordinator and its cache,
// and, at a voter site, its member of the configuration service. The
// coordinator and the cache are idle until a causal table names them.
func Nodes(site string, storage []string, opts Options) []Node {
	c := opts.Causal
	ropts := opts.Replica
	ropts.Config = opts.Config.Member.Voters
	ropts.Lease = opts.Config.Lease
	var out []Node
	for _, name := range storage {
		out = append(out, Node{Name: name, ID: topology.NodeID(site, name), Role: Storage, New: func() node.Handler {
			store := causal.NewNode(causal.NodeOptions{Role: causal.RoleStore, Store: c.Store})
			return causal.NewBeside(replica.New(ropts), store)
		}})
	}
	out = append(out, Node{Name: causal.CoordinatorName, ID: topology.NodeID(site, causal.CoordinatorName), Role: Coordinator, New: func() node.Handler {
		return causal.NewNode(causal.NodeOptions{Role: causal.RoleCoordinator, Coordinator: c.Coordinator})
	}})
	out = append(out, Node{Name: causal.CacheName, ID: topology.NodeID(site, causal.CacheName), Role: Cache, New: func() node.Handler {
		return causal.NewNode(causal.NodeOptions{Role: causal.RoleCache, Cache: c.Cache})
	}})
	if member := topology.NodeID(site, config.MemberName); slices.Contains(opts.Config.Member.Voters, member) {
		out = append(out, Node{Name: config.MemberName, ID: member, Role: Config, New: func() node.Handler {
			return config.NewNode(opts.Config)
		}})
	}
	return out
}

// Member returns the configuration member of a node's handler, nil for
// another node's.
func Member(h node.Handler) *config.Node {
	m, _ := h.(*config.Node)
	return m
}

// Replica returns the replica core of a storage node's handler, nil for
// another node's.
func Replica(h node.Handler) *replica.Node {
	if b, ok := h.(*causal.Beside); ok {
		h = b.Other()
	}
	r, _ := h.(*replica.Node)
	return r
}

// Causal returns the causal Node of a node's handler: a storage node's
// (beside its replica core), a coordinator's or a cache's; nil for
// another handler.
func Causal(h node.Handler) *causal.Node {
	switch h := h.(type) {
	case *causal.Beside:
		return h.Causal()
	case *causal.Node:
		return h
	}
	return nil
}

// TopologyRTTs returns the round trips from site from to every storage
// node and cache of topo: the initial estimates of the site's causal
// coordinator and cache (CausalOptions). Without them a coordinator
// measures a node on its first read of it, and a burst of reads at
// start-up can lock it onto remote rings: a cold node's first sample,
// taken under queueing, is all of its estimate, and a node no longer
// read is never measured again (karma-drr, zipfian, 1050 sessions:
// 5,880 ops/s unseeded against 36,260 seeded, 6% of reads local against
// 70%).
func TopologyRTTs(topo topology.Topology, from string) map[wire.NodeID]time.Duration {
	rtt := map[wire.NodeID]time.Duration{}
	for _, st := range topo.Sites {
		d := topo.LocalRTT
		if st.Name != from {
			link, ok := topo.Link(from, st.Name)
			if !ok {
				continue
			}
			d = link.RTT
		}
		for _, name := range append(slices.Clone(st.Replicas), causal.CacheName) {
			rtt[topology.NodeID(st.Name, name)] = d
		}
	}
	return rtt
}
