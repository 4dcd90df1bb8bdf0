package causal

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/cosla/cosla/internal/core/rtt"
	"github.com/cosla/cosla/internal/core/wire"
)

// ErrBadLayout is wrapped by every layout validation error. A causal
// table's layout is a table layout: errors.Is(err, wire.ErrBadLayout)
// holds for it too, so that one test (cosla.ErrBadLayout) finds both.
var ErrBadLayout error = badLayout{}

type badLayout struct{}

func (badLayout) Error() string { return "causal: invalid layout" }

func (badLayout) Is(target error) bool { return target == wire.ErrBadLayout }

// Layout places a causal table (Karma 3, 4.1.1): sites are grouped into
// rings, each ring holds one replica of every key, placed by consistent
// hashing over the ring's storage nodes. Every site that serves clients has
// a client coordinator; a site may have a cache.
type Layout struct {
	// Table is the table's ID.
	Table uint64
	// Rings are the rings in a fixed order: a ring's index names it in
	// messages.
	Rings []Ring
	// Coordinators maps a site to its client coordinator.
	Coordinators map[string]wire.NodeID
	// Caches maps a site to its cache node. A site without one has no
	// cache (Karma-NC, COPS-PR and COPS-Ideal have none anywhere).
	Caches map[string]wire.NodeID
	// Points is the number of points each node takes on its ring's hash
	// circle. Default 256.
	Points int
	// Static binds each site's reads to its HomeRing (COPS-PR and
	// COPS-Ideal, Karma 5) instead of the nearest ring.
	Static bool

	placed []placement
}

// Ring is one complete replica of the table (Karma 2: a consistent-hashing
// ring), spread over the storage nodes of some sites.
type Ring struct {
	Name  string
	Nodes []wire.NodeID
}

// placement is a ring's hash circle: points sorted by hash.
type placement struct {
	hashes []uint64
	nodes  []wire.NodeID
}

// Site returns the site of a node named "<site>/<name>".
func Site(id wire.NodeID) string {
	s, _, _ := strings.Cut(string(id), "/")
	return s
}

// Validate checks the layout and builds its hash circles. A layout must
// be validated before use.
func (l *Layout) Validate() error {
	if l.Table == 0 {
		return fmt.Errorf("%w: zero table ID", ErrBadLayout)
	}
	if len(l.Rings) == 0 {
		return fmt.Errorf("%w: no rings", ErrBadLayout)
	}
	if len(l.Rings) > 64 {
		return fmt.Errorf("%w: %d rings, at most 64", ErrBadLayout, len(l.Rings))
	}
	if l.Points == 0 {
		l.Points = 256
	}
	if l.Points < 0 {
		return fmt.Errorf("%w: negative points %d", ErrBadLayout, l.Points)
	}
	seen := map[wire.NodeID]string{}
	l.placed = make([]placement, len(l.Rings))
	for i, r := range l.Rings {
		if len(r.Nodes) == 0 {
			return fmt.Errorf("%w: ring %d (%s) has no nodes", ErrBadLayout, i, r.Name)
		}
		for _, n := range r.Nodes {
			if prev, ok := seen[n]; ok {
				return fmt.Errorf("%w: node %s is in ring %s and ring %s", ErrBadLayout, n, prev, r.Name)
			}
			seen[n] = r.Name
		}
		l.placed[i] = place(r.Nodes, l.Points)
	}
	if len(l.Coordinators) == 0 {
		return fmt.Errorf("%w: no coordinators", ErrBadLayout)
	}
	if l.Static {
		for site := range l.Coordinators {
			if l.HomeRing(site) < 0 {
				return fmt.Errorf("%w: static, but site %s has no ring to bind its reads to", ErrBadLayout, site)
			}
		}
	}
	return nil
}

// place builds a ring's hash circle: each node takes points positions.
func place(nodes []wire.NodeID, points int) placement {
	type pt struct {
		hash uint64
		node wire.NodeID
	}
	pts := make([]pt, 0, len(nodes)*points)
	for _, n := range nodes {
		for i := range points {
			pts = append(pts, pt{hash64(fmt.Sprintf("%s#%d", n, i)), n})
		}
	}
	slices.SortFunc(pts, func(a, b pt) int {
		if a.hash != b.hash {
			if a.hash < b.hash {
				return -1
			}
			return 1
		}
		return strings.Compare(string(a.node), string(b.node))
	})
	p := placement{hashes: make([]uint64, len(pts)), nodes: make([]wire.NodeID, len(pts))}
	for i, x := range pts {
		p.hashes[i], p.nodes[i] = x.hash, x.node
	}
	return p
}

// hash64 places keys and points on a ring's circle: FNV-1a, whose last
// byte barely mixes into the high bits, followed by splitmix64's
// finalizer, so that keys differing only at their end spread evenly.
func hash64(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	x := h.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// Node returns the storage node holding key in ring r: the first point at
// or after the key's hash, going round.
func (l *Layout) Node(r int, key string) wire.NodeID {
	p := &l.placed[r]
	h := hash64(key)
	i, _ := slices.BinarySearch(p.hashes, h)
	if i == len(p.hashes) {
		i = 0
	}
	return p.nodes[i]
}

// RingOf returns the index of the ring a storage node belongs to, or -1.
func (l *Layout) RingOf(id wire.NodeID) int {
	for i, r := range l.Rings {
		if slices.Contains(r.Nodes, id) {
			return i
		}
	}
	return -1
}

// HomeRing returns the ring holding a storage node at site, or -1: the
// ring a COPS-PR client is bound to (Karma 5).
func (l *Layout) HomeRing(site string) int {
	for i, r := range l.Rings {
		for _, n := range r.Nodes {
			if Site(n) == site {
				return i
			}
		}
	}
	return -1
}

// CacheNodes returns every cache node, in site order.
func (l *Layout) CacheNodes() []wire.NodeID {
	sites := slices.Sorted(maps.Keys(l.Caches))
	out := make([]wire.NodeID, len(sites))
	for i, s := range sites {
		out[i] = l.Caches[s]
	}
	return out
}

// nearness estimates round trips to nodes, to choose the ring a read goes
// to (Karma 6.2: by proximity, from delay monitors). It starts from given
// estimates and follows measured round trips; a node with no estimate yet
// counts as nearest, so that it is tried and measured, one at its own site
// first; a node that did not answer in time is avoided until suspectFor
// has passed.
type nearness struct {
	site    string
	rtt     map[wire.NodeID]rtt.Smoothed
	suspect map[wire.NodeID]time.Time
}

// nearnessGain weighs a new sample in a node's estimate 1/4
// (rtt.Smoothed); our choice, Karma gives no figure.
const nearnessGain = 4

// estimate returns the round trip to id: measured, or for a node not yet
// measured zero at this site and a nanosecond elsewhere.
func (n *nearness) estimate(id wire.NodeID) time.Duration {
	if e, ok := n.rtt[id].Value(); ok {
		return e
	}
	if Site(id) == n.site {
		return 0
	}
	return time.Nanosecond
}

// suspected reports whether id timed out within suspectFor.
func (n *nearness) suspected(id wire.NodeID, now time.Time) bool { return now.Before(n.suspect[id]) }

// suspectFor is how long a node that timed out is avoided.
const suspectFor = 5 * time.Second

func newNearness(site string, initial map[wire.NodeID]time.Duration) *nearness {
	n := &nearness{site: site, rtt: map[wire.NodeID]rtt.Smoothed{}, suspect: map[wire.NodeID]time.Time{}}
	for k, v := range initial {
		n.rtt[k] = rtt.Seeded(nearnessGain, v)
	}
	return n
}

// observe folds a measured round trip in.
func (n *nearness) observe(id wire.NodeID, took time.Duration) {
	delete(n.suspect, id)
	e, ok := n.rtt[id]
	if !ok {
		e = rtt.NewSmoothed(nearnessGain)
	}
	e.Add(took)
	n.rtt[id] = e
}

func (n *nearness) timedOut(id wire.NodeID, now time.Time) { n.suspect[id] = now.Add(suspectFor) }

// order returns the rings to try for key, nearest first, suspects last,
// skipping the rings in tried (a bit set).
func (n *nearness) order(l *Layout, key string, now time.Time, tried uint64) []int {
	type cand struct {
		ring    int
		rtt     time.Duration
		suspect bool
	}
	var cs []cand
	for r := range l.Rings {
		if tried&(1<<r) != 0 {
			continue
		}
		id := l.Node(r, key)
		cs = append(cs, cand{r, n.estimate(id), n.suspected(id, now)})
	}
	slices.SortStableFunc(cs, func(a, b cand) int {
		if a.suspect != b.suspect {
			if a.suspect {
				return 1
			}
			return -1
		}
		return cmp.Compare(a.rtt, b.rtt)
	})
	out := make([]int, len(cs))
	for i, c := range cs {
		out[i] = c.ring
	}
	return out
}

// Strategy names Karma or one of the baselines of Karma 5. Each is a way
// to lay out a table, served by the same code: a cache at every site
// (Caches), reads bound to the site's ring (Static), one ring per site.
type Strategy uint8

// Strategies.
const (
	// Karma: any ring by proximity, the site's cache for stable values,
	// dynamic ring restrictions.
	Karma Strategy = iota
	// KarmaNC is Karma without caches.
	KarmaNC
	// COPSPR binds every client statically to its site's ring, with no
	// cache (COPS with partial replication).
	COPSPR
	// COPSIdeal is COPS-PR over a layout with one ring per site: full
	// replication, every read local.
	COPSIdeal
)

var strategyNames = [...]string{"karma", "karma-nc", "cops-pr", "cops-ideal"}

func (s Strategy) String() string {
	if int(s) < len(strategyNames) {
		return strategyNames[s]
	}
	return fmt.Sprintf("strategy(%d)", uint8(s))
}

// ParseStrategy parses a Strategy's String.
func ParseStrategy(s string) (Strategy, error) {
	for i, n := range strategyNames {
		if n == s {
			return Strategy(i), nil
		}
	}
	return 0, fmt.Errorf("causal: unknown strategy %q (want karma, karma-nc, cops-pr or cops-ideal)", s)
}

// Static reports whether reads are bound to their site's ring (Layout.Static).
func (s Strategy) Static() bool { return s == COPSPR || s == COPSIdeal }

// Cached reports whether every site has a cache (Layout.Caches).
func (s Strategy) Cached() bool { return s == Karma }
