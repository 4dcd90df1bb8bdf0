package chaos

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/cosla/cosla/internal/core/causal"
	"github.com/cosla/cosla/internal/core/clientcore"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/lab/check"
	"github.com/cosla/cosla/internal/lab/driver"
	"github.com/cosla/cosla/internal/runtime/server"
	"github.com/cosla/cosla/internal/runtime/site"
	"github.com/cosla/cosla/internal/runtime/topology"
	"github.com/cosla/cosla/sla"
)

// A Karma campaign (issue 28, item 5) runs sessions on the cluster's
// causal table, one client of Options.Sessions sessions at every site,
// Puts and Gets over Options.Keys shared keys, while the faults of Karma
// 4.4's claims strike one at a time, in availability zones (site.Zone):
// AZB fails the storage nodes of a site of a ring, AZF its coordinator and
// cache, RingPartition cuts one zone of a site of one ring from one zone
// of a site of another. A local cluster runs a site in one process, so the
// campaign emulates a zone's failure by isolating its nodes inside the
// process and a partition by cutting the pairs of nodes
// (server.Faults): the failed nodes keep their state, and heal as from a
// partition, not a restart. Afterwards the history is checked in the
// multi-writer causal mode (check.CheckMulti), and the report gives each
// client's failed operations and longest unavailability during each
// fault. Claim 1 and Claim 2 say every client stays available, but for
// the clients of a failed AZ-F: the campaign fails (Report.OK) if another
// client has an operation fail while a fault is under way.

// KarmaFaults lists the fault kinds "karma" stands for.
var KarmaFaults = []Fault{AZB, AZF, RingPartition}

// karmaSLA is the Gets' SLA: causal, unbounded, so that a Get fails only
// when it is not answered within the request timeout.
var karmaSLA = sla.SLA{{Consistency: sla.CausalConsistency, Latency: sla.Unbounded, Utility: 1}}

// karma is what a Karma campaign records beside the run's history.
type karma struct {
	history []check.MultiOp
	// origin is the coordinator that wrote each value (its Put's site's):
	// a Get's version names it.
	origin map[string]string
}

// KarmaReport is what a Karma campaign found, beside the Report's
// faults, clients and history check.
type KarmaReport struct {
	// Rings are the topology's rings.
	Rings [][]string `json:"rings"`
	// Available is the claims' verdict: no client the claims keep
	// available had an operation fail while a fault was under way.
	Available bool `json:"available"`
	// Faults are the faults with each client's figures during each.
	Faults []KarmaFault `json:"faults"`
}

// KarmaFault is one fault and what each client saw while it lasted.
type KarmaFault struct {
	Fault   string        `json:"fault"`
	StartS  float64       `json:"start_s"`
	EndS    float64       `json:"end_s"`
	Clients []KarmaClient `json:"clients"`
}

// KarmaClient is one client during one fault: its operations called
// while the fault was under way, those that failed, the share failed and
// the longest unavailability window among them (see Window); Excused if
// the fault failed its site's AZ-F, which the claims do not keep
// available.
type KarmaClient struct {
	Name        string  `json:"name"`
	Ops         int     `json:"ops"`
	Failed      int     `json:"failed"`
	FailedShare float64 `json:"failed_share"`
	LongestS    float64 `json:"longest_s"`
	// LongestGapS is the longest the client went without a successful
	// operation while it issued them: from its first call during the
	// fault to its first success, or between two successes.
	LongestGapS float64 `json:"longest_gap_s"`
	Excused     bool    `json:"excused,omitempty"`
}

// karmaCampaign reports whether faults are Karma's.
func karmaCampaign(faults []Fault) bool {
	return slices.ContainsFunc(faults, func(f Fault) bool { return slices.Contains(KarmaFaults, f) })
}

// karmaWorkload is a Karma campaign's clients: one per site.
func (r *run) karmaWorkload() ([]*driver.Group, error) {
	o := r.o
	shared, err := driver.PutGetMix(o.Keys, sharedPrefix)
	if err != nil {
		return nil, err
	}
	var groups []*driver.Group
	for i, st := range o.Topology.Sites {
		g := &driver.Group{Name: st.Name + "/causal", Site: st.Name, Sessions: o.Sessions,
			Streams: []driver.Stream{{Mix: shared, Think: o.Think}},
			Cosla:   driver.Cosla{SLA: karmaSLA, Strategy: clientcore.Closest, Client: clientcore.Options{RequestTimeout: o.RequestTimeout}}}
		g.Rand = rand.New(rand.NewPCG(o.Seed, uint64(i+1)))
		groups = append(groups, g)
		r.slaOf[g] = karmaSLA.String()
	}
	return groups, nil
}

// recordKarma records an op of a Karma campaign's workload, on the loop.
// A Put's version names its site's coordinator, which every client of
// the site writes through; a Get's, the coordinator of the Put whose value
// it read (values are unique), once the run is over (karmaHistory).
func (r *run) recordKarma(g *driver.Group, op *driver.Op) {
	k := r.karma
	m := check.MultiOp{Session: op.Session, Key: op.Key, Value: op.ValueID, Found: op.Found, Call: op.Start, Return: op.End, OK: op.Err == nil}
	switch op.Kind {
	case driver.Put:
		m.Kind = check.Put
		origin := string(topology.NodeID(g.Site, causal.CoordinatorName))
		k.origin[op.ValueID] = origin
		if m.OK {
			m.Version = check.Version{TS: op.TS, Origin: origin}
		}
	case driver.Get:
		m.Kind = check.Get
		m.Version = check.Version{TS: op.TS}
	default:
		return
	}
	k.history = append(k.history, m)
}

// karmaHistory returns the history with each Get's version completed.
func (k *karma) karmaHistory() []check.MultiOp {
	for i := range k.history {
		if m := &k.history[i]; m.Kind == check.Get && m.OK && m.Found {
			m.Version.Origin = k.origin[m.Value]
		}
	}
	return k.history
}

// verifyKarma checks a Karma campaign's history and fills its report.
func (r *run) verifyKarma(rep *Report) {
	h := r.karma.karmaHistory()
	vs := check.CheckMulti(h, nil)
	rep.CheckedOps, rep.Violations = len(h), len(vs)
	for _, v := range vs[:min(len(vs), examplesMax)] {
		rep.ViolationExamples = append(rep.ViolationExamples, v.String())
	}
	r.o.Progress(fmt.Sprintf("%6.1fs  history of %d ops checked (multi-writer causal): %d violations", r.loop.Now().Seconds(), rep.CheckedOps, rep.Violations))
}

// finishKarma fills the claims' part of the report from the clients'
// operations and the faults.
func (r *run) finishKarma(rep *Report) {
	k := &KarmaReport{Rings: r.o.Topology.Rings, Available: true, Faults: []KarmaFault{}}
	for _, e := range rep.Faults {
		kf := KarmaFault{Fault: e.String(), StartS: e.StartS, EndS: e.EndS}
		for _, g := range r.groups {
			c := KarmaClient{Name: g.Name, Excused: e.Kind == AZF && e.Site == g.Site}
			// The client's ops called while the fault was under way: an op
			// called before it began, or during a fault before, may end
			// during it and belongs to neither.
			var during []span
			for _, s := range r.spans[g] {
				if at := seconds(s.start); at >= e.StartS && at <= e.EndS {
					during = append(during, s)
					c.Ops++
					if s.failed {
						c.Failed++
					}
				}
			}
			if c.Ops > 0 {
				c.FailedShare = float64(c.Failed) / float64(c.Ops)
			}
			for _, w := range windows(during) {
				c.LongestS = max(c.LongestS, seconds(w.end-w.start))
			}
			c.LongestGapS = longestGap(during).Seconds()
			if c.Failed > 0 && !c.Excused {
				k.Available = false
			}
			kf.Clients = append(kf.Clients, c)
		}
		k.Faults = append(k.Faults, kf)
	}
	keys := map[string]bool{}
	for _, m := range r.karma.history {
		if m.Kind == check.Put {
			keys[m.Key] = true
		}
	}
	rep.Keys, rep.Karma = len(keys), k
}

// longestGap returns the longest a client went without a successful
// operation among ops (its own, in any order, each session's one at a
// time): from the first call to the first success's end, between the
// ends of two successes, or from the last success to the end of the last
// failed op after it.
func longestGap(ops []span) time.Duration {
	if len(ops) == 0 {
		return 0
	}
	ops = slices.Clone(ops)
	slices.SortStableFunc(ops, func(a, b span) int { return cmp.Compare(a.end, b.end) })
	from := slices.MinFunc(ops, func(a, b span) int { return cmp.Compare(a.start, b.start) }).start
	var gap time.Duration
	for _, op := range ops {
		gap = max(gap, op.end-from)
		if !op.failed {
			from = op.end
		}
	}
	return gap
}

// zoneNodes returns the nodes of a site's zone on the cluster
// (site.ZoneNodes).
func (in *injector) zoneNodes(siteName string, z site.Zone) []wire.NodeID {
	i := slices.IndexFunc(in.o.Topology.Sites, func(s topology.Site) bool { return s.Name == siteName })
	if i < 0 {
		return nil
	}
	st := in.o.Topology.Sites[i]
	opts := site.Options{}
	opts.Config.Member.Voters = site.Voters(in.o.Topology.ConfigSites())
	return site.ZoneNodes(st.Name, st.Replicas, opts, z)
}

// azFault makes one fault of Karma's kinds, holds it a drawn Hold and
// heals it: AZB and AZF isolate a zone of a site drawn from a ring drawn,
// RingPartition cuts a zone of a site of one ring from a zone of a site of
// another.
func (in *injector) azFault(ctx context.Context, kind Fault, e *Event) error {
	rings := in.o.Topology.Rings
	in.mu.Lock()
	ring := in.rng.IntN(len(rings))
	a := rings[ring][in.rng.IntN(len(rings[ring]))]
	other := (ring + 1 + in.rng.IntN(len(rings)-1)) % len(rings)
	b := rings[other][in.rng.IntN(len(rings[other]))]
	za, zb := site.Zone(in.rng.IntN(2)), site.Zone(in.rng.IntN(2))
	in.mu.Unlock()
	faults := map[string]server.Faults{}
	switch kind {
	case AZB, AZF:
		z := site.Back
		if kind == AZF {
			z = site.Front
		}
		e.Site, e.Role = a, fmt.Sprintf("%s, ring %d", z, ring)
		faults[a] = server.Faults{Isolated: in.zoneNodes(a, z)}
	case RingPartition:
		e.Site, e.Role, e.Peer = a, fmt.Sprintf("%s, ring %d", za, ring), fmt.Sprintf("%s %s, ring %d", b, zb, other)
		var cut [][2]wire.NodeID
		for _, x := range in.zoneNodes(a, za) {
			for _, y := range in.zoneNodes(b, zb) {
				cut = append(cut, [2]wire.NodeID{x, y})
			}
		}
		faults[a], faults[b] = server.Faults{Cut: cut}, server.Faults{Cut: cut}
	}
	e.StartS = in.now().Seconds()
	in.setCurrent(e.String())
	var errs []error
	for s, f := range faults {
		errs = append(errs, in.c.SetFaults(ctx, s, f))
	}
	_ = driver.Sleep(ctx, in.draw(in.o.Hold))
	// Healed even if the campaign ends meanwhile.
	heal, cancel := context.WithTimeout(context.Background(), restartTimeout)
	defer cancel()
	for s := range faults {
		errs = append(errs, in.c.SetFaults(heal, s, server.Faults{}))
	}
	return errors.Join(errs...)
}

// writeText prints the claims' part of the report.
func (k *KarmaReport) writeText(w io.Writer) {
	verdict := "every client the claims keep available was (no operation failed during a fault)"
	if !k.Available {
		verdict = "NOT MET: a client the claims keep available had operations fail during a fault"
	}
	fmt.Fprintf(w, "  Karma 4.4:  %s; rings %v\n", verdict, k.Rings)
	for _, f := range k.Faults {
		fmt.Fprintf(w, "    %6.1f+%.1fs  %s\n", f.StartS, f.EndS-f.StartS, f.Fault)
		clients := slices.Clone(f.Clients)
		slices.SortStableFunc(clients, func(a, b KarmaClient) int { return cmp.Compare(b.LongestS, a.LongestS) })
		var parts []string
		for _, c := range clients {
			note := ""
			if c.Excused {
				note = " (excused: its AZ-F failed)"
			}
			parts = append(parts, fmt.Sprintf("%s %d/%d failed (%.0f%%), longest window %.1fs, longest gap %.1fs%s",
				c.Name, c.Failed, c.Ops, 100*c.FailedShare, c.LongestS, c.LongestGapS, note))
		}
		fmt.Fprintf(w, "      %s\n", strings.Join(parts, "; "))
	}
}
