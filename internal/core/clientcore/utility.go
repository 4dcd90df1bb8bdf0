package clientcore

import (
	"cmp"
	"maps"
	"math"
	"slices"

	"github.com/cosla/cosla/internal/core/causal"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/sla"
)

// Utility reports (Pileus 6.2: "the system could [...] reconfigure
// itself based on the SLAs of its clients"). For every Get the client
// estimates, with its own selection (Fig. 8) and monitor, the utility
// the Get would be expected to receive were the tablet's primary at
// each site that holds one of its replicas: a strong subSLA is then met
// only there, the lower ones wherever the replica's high timestamp
// allows, each within the latency the monitor expects of the node.
// Every Options.ReportEvery it sends, per tablet it read, the number of
// Gets and these sums to one member of the configuration service, the
// next one each time, whose planner may move the primary where the sum
// is highest (config.Planner). A report holds one sum per site: its
// size does not grow with the Gets.
//
// Puts carry no SLA and are not counted. A site holding several
// replicas of the tablet counts as if each of them were primary: the
// best of them.

// tabletUtility is one tablet's account since the last report.
type tabletUtility struct {
	ops   uint64
	sites map[string]float64
}

// reportTimer fires the utility reports.
type reportTimer struct{}

func (reportTimer) String() string { return "utility-report" }

// noteUtility adds a Get under agreement, with the minimum read
// timestamps mins, to tv's account.
func (c *Client) noteUtility(tv *tabletView, agreement sla.SLA, mins []minTS) {
	if len(c.opts.Config) == 0 {
		return
	}
	u := c.utility[tv.ref]
	if u == nil {
		u = &tabletUtility{sites: map[string]float64{}}
		c.utility[tv.ref] = u
	}
	u.ops++
	moved := make([]replicaState, len(tv.replicas))
	replicas := make([]*replicaState, len(tv.replicas))
	var sites []string
	for _, r := range tv.replicas {
		if site := causal.Site(r.id); !slices.Contains(sites, site) {
			sites = append(sites, site)
		}
	}
	for _, site := range sites {
		for j, r := range tv.replicas {
			moved[j] = *r
			moved[j].primary = causal.Site(r.id) == site
			replicas[j] = &moved[j]
		}
		_, _, expected, _ := selectTarget(agreement, mins, replicas, tv.quorumRead)
		u.sites[site] += max(expected, 0)
	}
}

// report sends the utility reports of the window that ended and starts
// the next.
func (c *Client) report() {
	member := c.opts.Config[c.reports%uint64(len(c.opts.Config))]
	c.reports++
	refs := slices.SortedFunc(maps.Keys(c.utility), func(a, b wire.TabletRef) int {
		return cmp.Or(cmp.Compare(a.Table, b.Table), cmp.Compare(a.Tablet, b.Tablet))
	})
	for _, ref := range refs {
		u := c.utility[ref]
		m := &wire.UtilityReport{Tablet: ref, Ops: u.ops}
		for _, site := range slices.Sorted(maps.Keys(u.sites)) {
			m.Sites = append(m.Sites, wire.SiteUtility{Site: site, Micro: uint64(math.Round(u.sites[site] * 1e6))})
		}
		c.env.Send(member, m)
	}
	clear(c.utility)
}
