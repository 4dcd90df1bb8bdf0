package causal

import "github.com/cosla/cosla/internal/core/wire"

// TableLayout is the wire layout of a causal table named name over
// rings, used by the clients at sites: each site gets its coordinator
// "<site>/cc" and, with caches, its cache "<site>/cache"; static binds
// every site's reads to its own ring (COPS-PR). The public API and the
// cluster supervisor create causal tables with it.
func TableLayout(name string, rings []wire.Ring, sites []string, caches, static bool) wire.Layout {
	c := &wire.CausalLayout{Rings: rings, Static: static}
	for _, site := range sites {
		c.Coordinators = append(c.Coordinators, wire.NodeID(site+"/"+CoordinatorName))
		if caches {
			c.Caches = append(c.Caches, wire.NodeID(site+"/"+CacheName))
		}
	}
	return wire.Layout{Name: name, Causal: c}
}
