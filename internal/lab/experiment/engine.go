package experiment

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/cosla/cosla/internal/core/clientcore"
	"github.com/cosla/cosla/internal/lab/driver"
	"github.com/cosla/cosla/internal/lab/workload"
)

// A unit is the runs that go at once, in one run of the driver: in the
// simulator one (SLA, client site, strategy), in a world of its own; on
// a cluster every client site (or, with a schedule, one) and strategy of
// an SLA. Both modes build units the same way and differ only in the
// runtime and target they drive them on.
type unit struct {
	s      *Scenario // the point's scenario
	series string
	point  string
	// index numbers the unit among the scenario's: its fresh keys are
	// apart from every other unit's, which a cluster runs on the same
	// keys.
	index int
	seed  uint64
	sla   slaVariant
	runs  []*run
	// client is the site whose links "local" and the oracle mean.
	client string
	events []EventRecord
	// own records the unit of a worldPlugin's scenario; parts are the
	// recorderPlugins' shares of any other.
	own   unitRecorder
	parts []unitPart
}

// run is one (client site, strategy) of a unit: its driver group and
// what it recorded.
type run struct {
	r       RunResult
	group   *driver.Group
	rec     *recorder
	variant strategyVariant
}

// workloadStream is the PCG stream of the operations drawn. Every run
// draws the same operations for the same seed (common random numbers):
// the strategies of a site, and the sites, face the same workload.
const workloadStream = 5

// timing is how a mode runs a scenario's times: the simulator as
// written, scaled by its --scale; a cluster scaled by time_scale, with
// longer think times and the clients' monitor scaled too.
type timing struct {
	cluster bool
	// scale multiplies the workload's duration or operations (sim) or
	// every time of the run (cluster).
	scale float64
}

func (t timing) scaled(d time.Duration) time.Duration { return time.Duration(float64(d) * t.scale) }

// planUnits lists the scenario's units, in order: series, points, repeats
// (seeds seed, seed+1, ...), SLAs, then client sites and strategies.
func planUnits(s *Scenario, seed uint64, t timing) ([]*unit, error) {
	series, err := seriesScenarios(s)
	if err != nil {
		return nil, err
	}
	var out []*unit
	for _, sr := range series {
		points, err := pointScenarios(sr.s)
		if err != nil {
			return nil, err
		}
		for _, p := range points {
			for rep := range s.Repeat {
				for _, v := range p.s.slas {
					for _, clients := range clientGroups(p.s, t.cluster) {
						for _, strategies := range strategyGroups(p.s, t.cluster) {
							u := &unit{s: p.s, series: sr.name, point: p.label, index: len(out), seed: seed + uint64(rep), sla: v, client: clients[0].Site}
							for _, c := range clients {
								for _, st := range strategies {
									r, err := u.newRun(c, st, t)
									if err != nil {
										return nil, err
									}
									u.runs = append(u.runs, r)
								}
							}
							if _, own := worldOf(p.s); !own {
								u.parts = unitParts(u, t)
							}
							out = append(out, u)
						}
					}
				}
			}
		}
	}
	return out, nil
}

// clientGroups are the client sites that run at once: each alone in the
// simulator; on a cluster all together, or each alone when the scenario
// has a schedule ("the link to the primary" depends on where the client
// is).
func clientGroups(s *Scenario, cluster bool) [][]ClientSite {
	if _, own := worldOf(s); (cluster && len(s.Schedule) == 0) || own || len(s.Active) > 0 {
		// A worldPlugin's client sites share one world (its
		// throughput is the whole system's).
		return [][]ClientSite{s.Clients}
	}
	var out [][]ClientSite
	for _, c := range s.Clients {
		out = append(out, []ClientSite{c})
	}
	return out
}

// strategyGroups are the strategies that run at once: each alone in the
// simulator, all together on a cluster but for a worldPlugin's (each a
// table of its own).
func strategyGroups(s *Scenario, cluster bool) [][]string {
	if _, own := worldOf(s); cluster && !own {
		return [][]string{s.Strategies}
	}
	var out [][]string
	for _, st := range s.Strategies {
		out = append(out, []string{st})
	}
	return out
}

// newRun builds a run's driver group.
func (u *unit) newRun(c ClientSite, strategy string, t timing) (*run, error) {
	s := u.s
	wp, own := worldOf(s)
	var variant strategyVariant
	var err error
	if own {
		variant, err = wp.variant(strategy)
	} else {
		variant, err = parseStrategyVariant(s, strategy, t)
	}
	if err != nil {
		return nil, err
	}
	sessions := c.Sessions
	if t.cluster || s.clusterModel {
		sessions = s.Cluster.sessions(sessions)
	}
	r := &run{variant: variant, r: RunResult{Series: u.series, Point: u.point, Seed: u.seed, Sessions: sessions,
		SLA: u.sla.Name, BaseSLA: u.sla.Base, Factor: u.sla.Factor, SLAText: u.sla.SLA.String(),
		Client: c.Site, Strategy: strategy, Met: make([]float64, len(u.sla.SLA))}}
	r.rec = newRecorder(&r.r)
	mix, err := sessionMix(s, u.freshFrom())
	if err != nil {
		return nil, err
	}
	opts := clientcore.Options{AdaptiveProbing: variant.adaptiveProbing}
	w := s.Workload
	think := w.Think
	if t.cluster {
		opts.ProbeInterval, opts.RTTWindow, think = clusterClient(s, t)
		if s.Reconfigure != nil {
			opts.ReportEvery = s.Reconfigure.reportEvery(t)
		}
	}
	r.group = &driver.Group{Name: c.Site + "/" + strategy, Site: c.Site, Sessions: sessions, SessionSteps: w.SessionOps,
		Rand:  rand.New(rand.NewPCG(u.seed, workloadStream)),
		Cosla: driver.Cosla{SLA: u.sla.SLA, Strategy: variant.strategy, Get: variant.get, Policy: variant.policy, Client: opts}}
	if own {
		wp.session(s, r.group)
	}
	rate := w.Rate
	if t.cluster && s.Cluster.Rate > 0 {
		rate = s.Cluster.Rate
	}
	if rate > 0 {
		r.group.Rate, r.group.Mix = rate, mix
	} else {
		r.group.Streams = []driver.Stream{{Mix: mix, Think: think}}
		if a, ok := s.Active[c.Site]; ok {
			r.group.Streams[0].From, r.group.Streams[0].Until = t.scaled(a[0]), t.scaled(a[1])
		}
	}
	return r, nil
}

// The least probe interval and RTT window of a client on a cluster: a
// time_scale that compresses a day of active hours into minutes would
// otherwise make them shorter than the emulated WAN's round trips (up to
// 435 ms), and the RTT window would hold no measurement.
const (
	minClusterProbe     = time.Second
	minClusterRTTWindow = 10 * time.Second
)

// clusterClient is a client's probe interval, RTT window and think time
// on a cluster: time_scale scales the first two, and the think time of
// a scenario with active hours (a day compressed into minutes keeps its
// Gets per hour); cluster.think, if longer, replaces the think time.
func clusterClient(s *Scenario, t timing) (probe, window, think time.Duration) {
	defaults := clientcore.Options{}.EnsureDefaults()
	think = s.Workload.Think
	if len(s.Active) > 0 {
		think = t.scaled(think)
	}
	return max(t.scaled(defaults.ProbeInterval), minClusterProbe), max(t.scaled(defaults.RTTWindow), minClusterRTTWindow),
		max(think, s.Cluster.Think)
}

// freshFrom is the number of the unit's first fresh key: past the
// loaded keys, and apart from every other unit's.
func (u *unit) freshFrom() uint64 { return uint64(u.s.Workload.Keys) + uint64(u.index)<<32 }

// sessionMix is what each run's sessions draw: the mix of the plug-in that
// claims the scenario, or a YCSB workload, or Puts with probability
// PutFraction and Gets otherwise over the key distribution. Fresh keys
// are numbered from freshFrom.
func sessionMix(s *Scenario, freshFrom uint64) (driver.Mix, error) {
	if m, ok := mixerOf(s); ok {
		return m.mix(s, freshFrom)
	}
	w := s.Workload
	if w.YCSB != "" {
		p, err := s.ycsbProperties()
		if err != nil {
			return nil, err
		}
		wl, err := workload.New(p)
		if err != nil {
			return nil, err
		}
		return driver.YCSBMix{W: wl}, nil
	}
	keys, err := s.keyGenerator()
	if err != nil {
		return nil, err
	}
	return driver.NewKeyMix([]driver.Weighted{{Kind: driver.Put, Weight: w.PutFraction}, {Kind: driver.Get, Weight: 1 - w.PutFraction}},
		keys, w.ValueSize)
}

// spec is the unit's driver run, with a recorder that hands every op to
// its run.
func (u *unit) spec(t timing) driver.Spec {
	w := u.s.Workload
	spec := driver.Spec{Recorder: &driver.Recorder{Keep: slices.ContainsFunc(u.parts, unitPart.keepsOps)}}
	switch {
	case t.cluster && w.Duration > 0:
		spec.Duration = t.scaled(w.Duration)
	case t.cluster && u.s.Cluster.Ops > 0:
		spec.Steps = u.s.Cluster.Ops
	case t.cluster:
		spec.Duration = t.scaled(u.s.Cluster.Duration)
	case w.Duration > 0:
		spec.Duration = t.scaled(w.Duration)
	default:
		spec.Steps = max(1, int(math.Round(float64(w.Ops)*t.scale)))
	}
	spec.Warmup = t.scaled(w.Warmup)
	byGroup := map[*driver.Group]*run{}
	for _, r := range u.runs {
		spec.Groups = append(spec.Groups, r.group)
		byGroup[r.group] = r
	}
	spec.Recorder.OnOp = func(g *driver.Group, op *driver.Op) {
		r := byGroup[g]
		if u.own != nil {
			u.own.op(r, op, op.Start >= spec.Warmup)
			return
		}
		for _, p := range u.parts {
			p.op(r, op, op.Start >= spec.Warmup)
		}
		if op.Start < spec.Warmup {
			return
		}
		switch op.Kind {
		case driver.Get:
			r.rec.get(op)
		case driver.Put, driver.RTW:
			r.r.Puts++
		}
	}
	return spec
}

// collect fills the runs' results once the driver has finished: the
// statistics, the probes, the utility, then the plug-ins' parts.
func (u *unit) collect(d *driver.Driver, rec *driver.Recorder, elapsed time.Duration) {
	stats := rec.Stats()
	groups := rec.Groups()
	for i, r := range u.runs {
		for _, st := range stats {
			if st.Group == r.group.Name {
				r.r.Ops = append(r.r.Ops, st)
			}
		}
		r.r.ThroughputOpsPerS, r.r.Shed = groups[i].ThroughputOpsPerS, groups[i].Shed
		if p, ok := d.Clients()[i].(driver.Prober); ok {
			r.r.Probes = int(p.Probes())
		}
		r.r.VirtualS = elapsed.Seconds()
		if u.own == nil { // else the unit's recorder fills its runs (finish)
			r.rec.finish()
		}
	}
	for _, p := range u.parts {
		p.finish(rec)
	}
}

// clientSites names the unit's client sites.
func (u *unit) clientSites() []string {
	var out []string
	for _, r := range u.runs {
		if !slices.Contains(out, r.r.Client) {
			out = append(out, r.r.Client)
		}
	}
	return out
}

// ErrNothingMeasured is matched by the error of a run in which no
// operation completed after its warmup: too short a run for its sessions
// (a small --scale of a saturating sweep point, say), or a store that
// answered nothing.
var ErrNothingMeasured = errors.New("experiment: no operation completed after the warmup")

// nothingMeasured is the error of a run (what) that measured nothing.
func (u *unit) nothingMeasured(what string) error {
	return fmt.Errorf("%s: %w (%d sessions; a longer run, a larger --scale, may let them finish one)", what, ErrNothingMeasured, u.runs[0].r.Sessions)
}

// check reports a run that did nothing, so measured nothing.
func (u *unit) check() error {
	if u.own != nil {
		return u.own.check()
	}
	for _, r := range u.runs {
		if r.r.Gets+r.r.Puts == 0 {
			return u.nothingMeasured(r.r.Client + "/" + r.r.Strategy)
		}
	}
	return nil
}

// schedule is a unit's scheduled changes, fired on the driver's runtime:
// each changes the network through the oracle and is recorded with the
// oracle's best choice after it.
type schedule struct {
	u      *unit
	oracle *world
	since  func() time.Duration
	gets   func() int
	// progress, if set, is told of each change the schedule names.
	progress func(string)
	err      error
}

// fire applies one change.
func (sc *schedule) fire(e EventSpec) {
	desc, err := sc.oracle.apply(e)
	if err != nil && sc.err == nil {
		sc.err = fmt.Errorf("%s: %w", e.Label, err)
	}
	if e.stall {
		// Hundreds a run: the stalls event is in the schedule, its pauses
		// are not recorded one by one.
		return
	}
	var best float64
	var choices []string
	if _, own := worldOf(sc.u.s); !own {
		layout, _ := sc.u.s.layout()
		best, choices = sc.oracle.best(sc.u.sla.SLA, layout)
	}
	at := sc.since().Seconds()
	sc.u.events = append(sc.u.events, EventRecord{Label: e.Label, AtS: at, AfterGets: sc.gets(),
		Description: desc, BestUtility: best, Best: choices, Spike: e.spike})
	if sc.progress != nil && e.spike == 0 {
		sc.progress(fmt.Sprintf("  %5.1fs %s: %s", at, e.Label, desc))
	}
}

// start schedules the events given by time on rt, relative to now.
func (sc *schedule) start(rt driver.Runtime, events []EventSpec) {
	for _, e := range events {
		if e.AfterGets == 0 {
			rt.After(e.At, func() { sc.fire(e) })
		}
	}
}
