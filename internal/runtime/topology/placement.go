package topology

import (
	"fmt"
	"slices"

	"github.com/cosla/cosla/internal/core/wire"
)

// MaxTablets bounds Placement.Tablets.
const MaxTablets = 4096

// Placement says where a table's tablets and their replicas go. It is the
// one layout builder: the simulator, the local cluster and the experiments
// all place tables through Topology.Layout.
//
// Tablet i's replicas are the first Replicas distinct storage nodes of the
// sequence that takes, for j = 0, 1, 2, ..., from each site s of Sites in
// order the node nodes(s)[(i+j) mod len(nodes(s))], where nodes(s) are the
// site's storage nodes in topology order. The first is the primary. With
// one node per site that is Pileus's layout (5.1): the primary at the first
// site and one secondary at each other; with several nodes per site,
// consecutive tablets start one node further on, so every node is the
// primary of a share of the tablets.
type Placement struct {
	// Sites hold the replicas, the primaries' site first. Default: every
	// site with storage nodes, in topology order.
	Sites []string `yaml:"sites"`
	// Replicas is N, the replicas of each tablet. Default len(Sites) (one
	// per site); at most the storage nodes of Sites.
	Replicas int `yaml:"replicas"`
	// Tablets is the number of tablets, at most MaxTablets. Default 1.
	Tablets int `yaml:"tablets"`
	// Partition is how keys map to tablets (wire.Partition): "range", the
	// default, or "hash".
	Partition string `yaml:"partition"`
	// Starts are the split points: tablet 0 starts at "" and tablet i at
	// Starts[i-1], so there are Tablets-1 of them, ascending. Required for
	// a range-partitioned table of several tablets (RangeStarts computes
	// them from the keys); for a hash-partitioned one they are positions
	// (16 lower-case hex digits), by default wire.HashStarts(Tablets).
	Starts []string `yaml:"starts"`
}

// PrimaryAt returns the placement of Pileus's experiments with the
// primary at site: one tablet, its primary the first storage node of site
// and one secondary at every other site with storage nodes, in topology
// order.
func (t Topology) PrimaryAt(site string) Placement {
	sites := []string{site}
	for _, s := range t.Sites {
		if len(s.Replicas) > 0 && s.Name != site {
			sites = append(sites, s.Name)
		}
	}
	return Placement{Sites: sites}
}

// Layout places table name over the topology as p says, with replication
// r. Its ID is zero: the client that creates the table chooses one.
// Errors wrap ErrInvalid and name the placement field at fault.
func (t Topology) Layout(name string, p Placement, r wire.Replication) (wire.Layout, error) {
	invalid := func(field, format string, args ...any) (wire.Layout, error) {
		return wire.Layout{}, fmt.Errorf("%w: %s: table %s: placement.%s: %s", ErrInvalid, t.Name, name, field, fmt.Sprintf(format, args...))
	}
	sites := p.Sites
	if len(sites) == 0 {
		for _, s := range t.Sites {
			if len(s.Replicas) > 0 {
				sites = append(sites, s.Name)
			}
		}
		if len(sites) == 0 {
			return invalid("sites", "no site has storage nodes")
		}
	}
	nodes := make([][]wire.NodeID, len(sites))
	total := 0
	for i, name := range sites {
		si := slices.IndexFunc(t.Sites, func(s Site) bool { return s.Name == name })
		switch {
		case si < 0:
			return invalid(fmt.Sprintf("sites[%d]", i), "unknown site %q", name)
		case len(t.Sites[si].Replicas) == 0:
			return invalid(fmt.Sprintf("sites[%d]", i), "site %q has no storage nodes", name)
		case slices.Index(sites, name) != i:
			return invalid(fmt.Sprintf("sites[%d]", i), "site %q is repeated", name)
		}
		for _, r := range t.Sites[si].Replicas {
			nodes[i] = append(nodes[i], NodeID(name, r))
		}
		total += len(nodes[i])
	}
	n := p.Replicas
	if n == 0 {
		n = len(sites)
	}
	if n < 1 || n > total {
		return invalid("replicas", "%d, want 1 to %d (the storage nodes of %v)", p.Replicas, total, sites)
	}
	tablets := p.Tablets
	if tablets == 0 {
		tablets = 1
	}
	if tablets < 1 || tablets > MaxTablets {
		return invalid("tablets", "%d, want 1 to %d", p.Tablets, MaxTablets)
	}
	partition := wire.ByRange
	if p.Partition != "" {
		var err error
		if partition, err = wire.ParsePartition(p.Partition); err != nil {
			return invalid("partition", "unknown %q (want range or hash)", p.Partition)
		}
	}
	starts := p.Starts
	if partition == wire.ByHash && len(starts) == 0 {
		starts = wire.HashStarts(tablets)
	}
	if len(starts) != tablets-1 {
		return invalid("starts", "%d split points for %d tablets by %s, want %d", len(starts), tablets, partition, tablets-1)
	}
	for i, s := range starts {
		switch {
		case partition == wire.ByHash && !wire.IsHashPosition(s):
			return invalid(fmt.Sprintf("starts[%d]", i), "%q is not a key hash (16 lower-case hex digits)", s)
		case s == "" || (i > 0 && s <= starts[i-1]):
			return invalid(fmt.Sprintf("starts[%d]", i), "%q is empty or not after the split point before it", s)
		}
	}
	l := wire.Layout{Name: name, Partition: partition, Tablets: make([]wire.Tablet, tablets), Replication: r}
	for i := range l.Tablets {
		replicas := tabletReplicas(nodes, i, n)
		l.Tablets[i] = wire.Tablet{Primary: replicas[0], Secondaries: replicas[1:]}
		if i > 0 {
			l.Tablets[i].Start = starts[i-1]
		}
	}
	return l, nil
}

// tabletReplicas returns the first n distinct nodes of tablet i's
// sequence (see Placement). The loop ends because n is at most the number
// of nodes and every node is taken by the time j reaches the most nodes at
// one site.
func tabletReplicas(nodes [][]wire.NodeID, i, n int) []wire.NodeID {
	out := make([]wire.NodeID, 0, n)
	for j := 0; len(out) < n; j++ {
		for _, site := range nodes {
			id := site[(i+j)%len(site)]
			if !slices.Contains(out, id) {
				out = append(out, id)
			}
			if len(out) == n {
				break
			}
		}
	}
	return out
}

// RangeStarts returns the n-1 split points that give n range-partitioned
// tablets equal shares of keys: the quantiles of the distinct keys, in
// order, as Placement.Starts. The keys are not modified.
func RangeStarts(keys []string, n int) ([]string, error) {
	if n < 1 || n > MaxTablets {
		return nil, fmt.Errorf("%w: placement.tablets: %d, want 1 to %d", ErrInvalid, n, MaxTablets)
	}
	sorted := slices.Compact(slices.Sorted(slices.Values(keys)))
	if len(sorted) < n {
		return nil, fmt.Errorf("%w: placement.tablets: %d tablets, but only %d distinct keys to split them by", ErrInvalid, n, len(sorted))
	}
	starts := make([]string, n-1)
	for i := range starts {
		// Indexes i*len/n rise strictly as len >= n, and the first is at
		// least 1, so every split point is above "" and above the last.
		starts[i] = sorted[(i+1)*len(sorted)/n]
	}
	return starts, nil
}
