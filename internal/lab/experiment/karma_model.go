package experiment

import (
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/cosla/cosla/internal/core/causal"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/lab/workload"
)

// A model of the restricted share (issue 28, item 6): the share of
// accesses made under a dynamic ring restriction (Karma 4.2, Fig. 11),
// predicted from the load, the key distribution and the time a write
// takes to become stable, beside the share measured.
//
// Where restrictions come from. A Get restricts its session when the
// version it reads is in flight: the ring that answered holds it, and
// it is not yet stable (Karma 4.2). Take the writes of key k as a
// Poisson stream of rate w_k = W q_k (W the writes per second of the
// whole system, q_k the key's probability under the key distribution),
// each version showing in flight at ring R for a time V from when R
// holds it until the write's STABLE notice lands there. R holds it when
// its node for the key applies it: then it acknowledges the write, or,
// under Karma, first invalidates the caches holding the key and
// acknowledges once they have answered (Karma 4.3), a round trip to the
// farthest of them during which the version already shows. The
// versions of k in flight at R are then the busy servers of an
// M/G/infinity queue: Poisson with mean w_k E[V], whatever V's
// distribution, so a Get of k at R finds one in flight with probability
// 1 - exp(-w_k E[V]), and a Get finds one with
//
//	r = sum_k q_k (1 - exp(-W q_k E[V])).
//
// V is not the time from a write's acknowledgement to its completion
// (T, "stability ms" in the table): a ring holds the version only once
// the write reached it and its storage node, often the one holding the
// hot keys, got through its queue; the version shows in flight from
// then until completion, plus the STABLE notice's one-way delay from
// the writer's site to the ring. Under YCSB's zipfian a hot key's node
// is the busiest of its ring, and most of T is spent in that queue,
// after which the version is in flight at that ring only briefly. Using
// T for V (the first version of this model) predicted 82-97% restricted
// where 49-80% was measured at karma-fig7's points; V, measured per
// ring, gives the table's figures. We read "some write of the key is in
// flight at R" as "the version R answers with is": R answers with its
// newest, which is the newest write it holds.
//
// How long a restriction lasts. It lifts when the session's coordinator
// learns the version stable (Karma 1, 2.3; stability.go): the version's
// own coordinator knows at completion, any other once the writer's
// coordinator answers the watch it sent with the session's next Get. The
// version a Get finds is the key's newest at R; its age a there, given
// that it still shows in flight, is exponential of rate w_k cut at V,
// so the time it has left to show is V g(w_k V) with
//
//	g(x) = E[V - a | a < V] / V = 1 - 1/x + 1/(e^x - 1),
//
// from 1/2 for a key written once in a while (the read falls anywhere in
// the flight) to 1 for a hot key (its newest version just arrived). So
// the coordinator of site i, reading ring R, learns a version written at
// site j stable about
//
//	L_ij = max(rho E[V] - delta_jR + delta_ji, 2 delta_ji)
//
// after the read (L_ii without the second term): rho is the mean of g
// over in-flight reads (weights q_k (1 - exp(-x_k))), delta_jR the mean
// one-way delay from j to R's sites (the STABLE notice's, already in V),
// delta_ji from j to i (the completion's answer), and 2 delta_ji the
// round trip of the watch the session's next Get carries, which the
// session issues as the read returns (a closed loop): a version already
// complete when the watch arrives lifts a round trip later. We use E[V]
// in g, not V's distribution: the hot keys, which make up most of r,
// have g near 1 whatever V is.
//
// The restriction lasts longer than that: the coordinator lifts it on
// the first Get to arrive after it learned, and the session issues that
// Get only once the Get it has in progress ends. A moment taken at
// random falls in a long Get more often than in a short one (renewal
// theory's inspection paradox), so the wait is the Gets' mean residual
// latency R_i = E[L^2] / 2E[L] (CausalStats.GetResidualMS), not half
// their mean latency; Karma's Gets, cache hits of a millisecond beside
// ring reads of a hundred or more, have a long one. A temporary probe at
// karma-fig7's 9600 sessions (issue 28's session 41, not committed)
// measured, per restriction, 166 ms from the read to the coordinator's
// learning under Karma and 167 under Karma-NC, then 117 and 57 ms to the
// lifting Get, against residuals of the sessions' gaps between Gets of
// 118 and 56 ms. So a restriction lasts
//
//	D_i = sum_j (W_j / W) L_ij + R_i.
//
// The restricted share. A session of site i makes mu_i accesses a
// second, G_i = mu_i (1 - p) of them Gets (p the Put fraction), each
// taking a restriction with probability r. An access is restricted if
// a restriction taken before it has not yet lifted: restrictions are
// the arrivals of another M/G/infinity queue, of rate G_i r and
// service D_i, empty with probability exp(-G_i r D_i). A Get counts as
// restricted unless its coordinator lifted every restriction it named;
// a Put by the session's own state, which drops a restriction on the
// reply of the lifting Get, 1/G_i later. So
//
//	restricted_i = (1 - p) (1 - exp(-G_i r D_i)) + p (1 - exp(-G_i r (D_i + 1/G_i))),
//
// and the run's share is the sites' weighted by their accesses. We
// predict per site, with the ring of the site (Karma 4.1.1: a
// coordinator reads the nearest ring, and its session is bound to the
// ring it read from), because the sites differ: Brazil's sessions,
// reading their own one-site ring at local latency, make ten times the
// accesses of the others and are restricted nearly always (bound to the
// ring they would read anyway, until the version is in every ring); a
// site reading a far ring is slower. The "global" column applies the
// formula to the system's means instead (mu from all sessions, r and D
// averaged over accesses); at karma-fig7's points the two differ by up
// to 7 points, neither consistently closer to the measured share, so
// we report the per-site one, which follows the mechanism.
//
// What the model leaves out: a session's own Put issued after the read
// completes about when the version read does, and lifts it no sooner; a
// notify-after (karma-drr's notify-50ms) lifts sooner, which the model
// ignores; a read from the write buffer restricts nothing (under 1% of
// Gets here); scrambled ranks that hash onto one key are counted as
// distinct keys (their mass is the uniform background below); the
// maximum in D_ij is taken of the means, not averaged over reads.
//
// What is measured. E[T] and E[V] come from the run by Little's law: the
// time-average number of writes in flight (acknowledged, or held by
// the ring, and not yet complete) over the measured window, divided by
// the writes coming into that state per second in it. Unlike the mean
// of completed writes' times, it is not biased by the writes the run's
// end cuts off (T is a sizeable part of a short run's window), as long
// as the warmup brought the run to a steady state. W, mu_i
// and p are the run's; q is the scenario's distribution; the one-way
// delays are the topology's round trips halved.

// Stability is a run's time to stability, measured for the restricted-
// share model (karma_model.go), with what the model needs of the run's
// scenario.
type Stability struct {
	// Distribution and Keys are the workload's key distribution.
	Distribution string `json:"distribution"`
	Keys         int    `json:"keys"`
	// PutFraction is the workload's share of Puts.
	PutFraction float64 `json:"put_fraction"`
	// WindowS is the measured window's length: from the warmup's end to
	// the run's.
	WindowS float64 `json:"window_s"`
	// Sites are the writers' sites, in the topology's order: the time
	// from a write's acknowledgement to its coordinator's completion.
	Sites []FlightStats `json:"sites"`
	// Rings are the rings, by number (causal.rings' order): the time
	// from when a ring holds a write's version, readable in flight, to
	// the write's completion: from the ring's acknowledgement, or, if
	// sooner, its first invalidation of a cache (Karma 4.3: the node
	// applies the version, invalidates the caches holding the key and
	// acknowledges once they have answered).
	Rings []FlightStats `json:"rings"`
}

// FlightStats are the writes of one site, or held by one ring, while in
// flight.
type FlightStats struct {
	Name string `json:"name"`
	// Acked counts the writes acknowledged in the measured window, by
	// their coordinator (a site's) or by the ring.
	Acked int64 `json:"acked"`
	// InFlight is the mean number of writes in flight over the window,
	// MeanMS their mean time in flight by Little's law (InFlight over
	// Acked per second).
	InFlight float64 `json:"in_flight"`
	MeanMS   float64 `json:"mean_ms"`
	// FirstHalfMS and SecondHalfMS are MeanMS over each half of a
	// window of set length (0 in a run bounded by operations): a time
	// that grows from one to the other did not settle in the run.
	FirstHalfMS  float64 `json:"first_half_ms,omitempty"`
	SecondHalfMS float64 `json:"second_half_ms,omitempty"`
}

// stabilityProbe watches a causal world's messages (karmaWorld's
// observe) for writes acknowledged, held by rings and completed: a
// CausalPut names its session and sequence number, its reply (by
// request) acknowledges it and names its version, an Invalidate of the
// version from a ring's node or a PropagateAck says the ring holds it,
// and the CausalComplete naming the session and number completes it.
type stabilityProbe struct {
	now func() time.Duration
	// started: the run began, at from less the warmup; the window is
	// [from, until), its halves split at mid (0: unknown, in a run
	// bounded by operations).
	started          bool
	from, mid, until time.Duration
	puts             map[probeReq]probeWrite
	flying           map[probeWrite]*probeFlight
	versions         map[wire.Version]probeWrite // of the writes flying
	ringOf           map[string]int32            // a site's ring
	sites            map[string]*probeCount
	order            []string
	rings            map[int32]*probeCount
}

type probeReq struct {
	client wire.NodeID
	req    uint64
}

type probeWrite struct {
	client       wire.NodeID
	session, seq uint64
}

// probeFlight is a write in flight: its version, its site's count, and
// the rings' that hold it (held has bit r set once ring r does).
type probeFlight struct {
	version wire.Version
	site    *probeCount
	rings   []*probeCount
	held    uint64
}

// probeCount integrates the writes in flight of a site or ring over
// the window.
type probeCount struct {
	flying int
	last   time.Duration
	// area is the integral of flying over the window, in write-seconds.
	area  float64
	acked int64
	// halves are area and acked over each half of the window.
	halves [2]struct {
		area  float64
		acked int64
	}
}

// newStabilityProbe returns a probe of the scenario's sites' writes.
func newStabilityProbe(s *Scenario) *stabilityProbe {
	p := &stabilityProbe{puts: map[probeReq]probeWrite{}, flying: map[probeWrite]*probeFlight{}, sites: map[string]*probeCount{},
		rings: map[int32]*probeCount{}, versions: map[wire.Version]probeWrite{}, ringOf: map[string]int32{}}
	for _, st := range s.topo.Sites {
		p.sites[st.Name] = &probeCount{}
		p.order = append(p.order, st.Name)
	}
	if s.Causal != nil {
		for i, sites := range s.Causal.Rings {
			for _, site := range sites {
				p.ringOf[site] = int32(i)
			}
		}
	}
	return p
}

// start begins the run at the current time: the measured window runs
// from the warmup's end to the run's end (none if 0), as causalUnit's.
// runSim starts the probe once the load and the warming are done, as the
// workload starts, and does not show it their messages.
func (p *stabilityProbe) start(now func() time.Duration, warmup, end time.Duration) {
	p.now, p.started = now, true
	t := now()
	p.from, p.until = t+warmup, time.Duration(math.MaxInt64)
	if end > 0 {
		p.until = t + end
		p.mid = p.from + (p.until-p.from)/2
	}
}

func (p *stabilityProbe) observe(from, to wire.NodeID, m wire.Msg) {
	if !p.started {
		return
	}
	switch m := m.(type) {
	case *wire.CausalPut:
		if !m.Notify {
			p.puts[probeReq{from, m.Req}] = probeWrite{from, m.Session, m.Seq}
		}
	case *wire.CausalPutReply:
		w, ok := p.puts[probeReq{to, m.Req}]
		delete(p.puts, probeReq{to, m.Req})
		if site := p.sites[siteOf(to)]; ok && m.Code == wire.OK && site != nil {
			p.flying[w] = &probeFlight{version: m.Version, site: site}
			p.versions[m.Version] = w
			p.arrive(site)
		}
	case *wire.Invalidate:
		if ring, ok := p.ringOf[siteOf(from)]; ok && m.Key != "" {
			if w, ok := p.versions[m.Version]; ok {
				p.held(p.flying[w], ring)
			}
		}
	case *wire.PropagateAck:
		if f := p.flying[probeWrite{m.Client, m.Session, m.Seq}]; f != nil {
			p.held(f, m.Ring)
		}
	case *wire.CausalComplete:
		w := probeWrite{to, m.Session, m.Seq}
		if f := p.flying[w]; f != nil {
			delete(p.flying, w)
			delete(p.versions, f.version)
			now := p.now()
			for _, c := range append(f.rings, f.site) {
				c.advance(now, p.from, p.mid, p.until)
				c.flying--
			}
		}
	}
}

// held counts a flying write as held by ring r from now, unless it was
// already.
func (p *stabilityProbe) held(f *probeFlight, r int32) {
	if r < 0 || r >= 64 || f.held&(1<<r) != 0 {
		return
	}
	f.held |= 1 << r
	ring := p.rings[r]
	if ring == nil {
		ring = &probeCount{}
		p.rings[r] = ring
	}
	f.rings = append(f.rings, ring)
	p.arrive(ring)
}

// arrive counts a write coming into flight at c.
func (p *stabilityProbe) arrive(c *probeCount) {
	now := p.now()
	c.advance(now, p.from, p.mid, p.until)
	c.flying++
	if now >= p.from && now < p.until {
		c.acked++
		if p.mid > 0 {
			c.halves[min(int((now-p.from)/(p.mid-p.from)), 1)].acked++
		}
	}
}

// advance adds the writes in flight since the last change to the area,
// within the window [from, until), and to its halves' if mid is known.
func (c *probeCount) advance(now, from, mid, until time.Duration) {
	f := float64(c.flying)
	c.area += f * overlap(c.last, now, from, until)
	if mid > 0 {
		c.halves[0].area += f * overlap(c.last, now, from, mid)
		c.halves[1].area += f * overlap(c.last, now, mid, until)
	}
	c.last = now
}

// overlap is the length of [a, b) within [lo, hi), in seconds.
func overlap(a, b, lo, hi time.Duration) float64 {
	if l, h := max(a, lo), min(b, hi); h > l {
		return (h - l).Seconds()
	}
	return 0
}

func (c *probeCount) stats(name string, from, mid, end time.Duration) FlightStats {
	c.advance(end, from, mid, end)
	window := (end - from).Seconds()
	st := FlightStats{Name: name, Acked: c.acked, InFlight: c.area / window, MeanMS: meanMS(c.area, c.acked)}
	if mid > 0 && end > mid {
		st.FirstHalfMS, st.SecondHalfMS = meanMS(c.halves[0].area, c.halves[0].acked), meanMS(c.halves[1].area, c.halves[1].acked)
	}
	return st
}

// meanMS is the mean time in flight, in ms, of acked writes whose
// flights add up to area write-seconds (Little's law); 0 if none.
func meanMS(area float64, acked int64) float64 {
	if acked == 0 {
		return 0
	}
	return 1000 * area / float64(acked)
}

// stability returns what the probe measured, up to now, with the
// scenario's key distribution and Put fraction; nil if the window is
// empty.
func (p *stabilityProbe) stability(s *Scenario) *Stability {
	if !p.started {
		return nil
	}
	end := min(p.now(), p.until)
	if end <= p.from {
		return nil
	}
	w := s.Workload
	out := &Stability{Distribution: w.Distribution, Keys: w.Keys, PutFraction: w.PutFraction, WindowS: (end - p.from).Seconds()}
	for _, name := range p.order {
		out.Sites = append(out.Sites, p.sites[name].stats(name, p.from, p.mid, end))
	}
	for r := range int32(len(p.rings)) {
		if c := p.rings[r]; c != nil {
			out.Rings = append(out.Rings, c.stats(strconv.Itoa(int(r)), p.from, p.mid, end))
		}
	}
	return out
}

// keyBucket is count keys of probability q each.
type keyBucket struct {
	count float64
	q     float64
}

// zipfianExact is how many of the scrambled zipfian's top ranks keyBuckets
// gives a bucket each; the rest share buckets spanning zipfianStep of
// their rank.
const (
	zipfianExact = 1000
	zipfianStep  = 1.002
)

// keyBuckets are the keys' probabilities under a distribution over n
// keys, or false for one the model does not know. Zipfian is YCSB's
// scrambled zipfian (workload.NewScrambledZipfian): ranks 1 to n are
// taken as distinct keys (hashing folds few of the popular ones
// together), and the ranks beyond n, folded onto the n keys by the hash,
// as a uniform background. Beyond zipfianExact a bucket's probability is
// its ranks' mean, by the integral of rank^-theta (midpoint rule).
func keyBuckets(distribution string, n int) ([]keyBucket, bool) {
	if n <= 0 {
		return nil, false
	}
	switch distribution {
	case "uniform":
		return []keyBucket{{count: float64(n), q: 1 / float64(n)}}, true
	case "zipfian":
	default:
		return nil, false
	}
	var out []keyBucket
	mass := 0.0
	for i := 1; i <= min(n, zipfianExact); i++ {
		q := workload.ScrambledRankProbability(float64(i))
		out = append(out, keyBucket{count: 1, q: q})
		mass += q
	}
	// The mass of ranks [a, b) is the integral of rank^-theta from
	// a-1/2 to b-1/2 over zeta: (x^(1-theta))/(1-theta), scaled as
	// ScrambledRankProbability scales rank^-theta.
	unit := workload.ScrambledRankProbability(1)
	primitive := func(x float64) float64 {
		return unit * math.Pow(x, 1-workload.ZipfianTheta) / (1 - workload.ZipfianTheta)
	}
	for a := float64(zipfianExact + 1); a <= float64(n); {
		b := min(math.Ceil(a*zipfianStep), float64(n)+1)
		m := primitive(b-0.5) - primitive(a-0.5)
		out = append(out, keyBucket{count: b - a, q: m / (b - a)})
		mass += m
		a = b
	}
	background := max(0, 1-mass) / float64(n)
	for i := range out {
		out[i].q += background
	}
	return out, true
}

// flightRemaining is g(x) above: the mean share of its flight a key's
// in-flight newest version has left, x its writes per flight.
func flightRemaining(x float64) float64 {
	if x < 1e-4 {
		return 0.5 + x/12
	}
	return 1 - 1/x + 1/math.Expm1(x)
}

// inFlight returns r, the probability that a Get finds its key in
// flight, and rho, the mean share of its flight the version found has
// left, for keys written writesPerS times a second in all, each write in
// flight for flightS seconds on average.
func inFlight(keys []keyBucket, writesPerS, flightS float64) (r, rho float64) {
	var remaining float64
	for _, k := range keys {
		x := writesPerS * k.q * flightS
		hit := k.count * k.q * -math.Expm1(-x)
		r += hit
		remaining += hit * flightRemaining(x)
	}
	if r == 0 {
		return 0, 0.5
	}
	return r, remaining / r
}

// restrictedShare is the share of a session's accesses made restricted
// when it makes accessesPerS accesses a second, a getShare of them Gets
// each restricting it with probability r, until its coordinator learns
// the version stable restrictS seconds later. A Get is restricted if a
// restriction is held at its coordinator, a Put if the session still
// holds one: the session drops a restriction on the reply of its first
// Get after the coordinator learns, 1/gets later on average.
func restrictedShare(accessesPerS, getShare, r, restrictS float64) float64 {
	gets := accessesPerS * getShare
	if gets <= 0 {
		return 0
	}
	get := -math.Expm1(-gets * r * restrictS)
	put := -math.Expm1(-gets * r * (restrictS + 1/gets))
	return getShare*get + (1-getShare)*put
}

// restrictionModel is the model's prediction for one run. Its means
// over sites are weighted by the sites' accesses.
type restrictionModel struct {
	// writesPerS are the writes acknowledged a second, flightS their
	// mean time to completion.
	writesPerS, flightS float64
	// visibleS is the time a version shows in flight at the ring a site
	// reads, r the chance its Get finds one, restrictS a restriction's
	// length: means over the client sites.
	visibleS, r, restrictS float64
	// perSite is the share predicted site by site, global the share
	// from the system's means; as fractions.
	perSite, global float64
}

// writers are a run's writes by their coordinator's site, for the delays
// between the writers and a reading site.
type writers struct {
	s     *Scenario
	st    *Stability
	acked int64 // the writes acknowledged at every site
}

// oneWay is the one-way delay from site a to site b, 0 within a site.
func (w writers) oneWay(a, b string) float64 {
	if l, ok := w.s.topo.Link(a, b); ok && a != b {
		return l.RTT.Seconds() / 2
	}
	return 0
}

// fromWriters is the mean one-way delay from a write's coordinator to
// site: how much later than the writer the site learns of it.
func (w writers) fromWriters(site string) float64 {
	var sum float64
	for _, ws := range w.st.Sites {
		sum += float64(ws.Acked) * w.oneWay(ws.Name, site)
	}
	return sum / float64(w.acked)
}

// restriction is how long a restriction taken at site lasts, left the
// time its version still shows in flight at the ring less the STABLE
// notice's delay there: until the writer's completion reaches the
// site's coordinator, and, for another site's write, no sooner than the
// answer to the watch the session's next Get sends (at once: the
// session's loop issues it as the read returns) can return; then until
// the session's Get in progress ends, residual later on average, and
// the next one, which the lift reaches, is issued.
func (w writers) restriction(site string, left, residual float64) float64 {
	var sum float64
	for _, ws := range w.st.Sites {
		d := left + w.oneWay(ws.Name, site)
		if ws.Name != site {
			d = max(d, 2*w.oneWay(ws.Name, site))
		}
		sum += float64(ws.Acked) * max(0, d)
	}
	return sum/float64(w.acked) + residual
}

// predictRestriction applies the model to a run, or reports false when
// the run has no measurement or a key distribution the model does not
// know.
func predictRestriction(s *Scenario, c CausalRun) (restrictionModel, bool) {
	st := c.Stability
	if st == nil || st.WindowS <= 0 || c.ThroughputOpsPerS <= 0 {
		return restrictionModel{}, false
	}
	keys, ok := keyBuckets(st.Distribution, st.Keys)
	if !ok {
		return restrictionModel{}, false
	}
	var acked int64
	var flying float64
	for _, w := range st.Sites {
		acked += w.Acked
		flying += w.InFlight
	}
	if acked == 0 {
		return restrictionModel{}, false
	}
	m := restrictionModel{writesPerS: float64(acked) / st.WindowS}
	m.flightS = flying / m.writesPerS
	w := writers{s: s, st: st, acked: acked}
	getShare := 1 - st.PutFraction
	var sessions int
	for _, site := range c.Sites {
		ring, ok := siteRing(s, st, site.Site)
		if !ok || site.Sessions == 0 || site.ThroughputOpsPerS <= 0 || ring.Acked == 0 {
			continue
		}
		// The version shows in flight at the ring from when the ring
		// holds it until the STABLE notice lands, a
		// one-way delay after completion; the reader's coordinator
		// learns it stable a one-way delay from the writer to the
		// reader after completion.
		var ringDelay float64
		for _, name := range s.Causal.Rings[ring.index] {
			ringDelay += w.fromWriters(name) / float64(len(s.Causal.Rings[ring.index]))
		}
		visible := ring.MeanMS/1000 + ringDelay
		r, rho := inFlight(keys, float64(ring.Acked)/st.WindowS, visible)
		mu := site.ThroughputOpsPerS / float64(site.Sessions)
		d := w.restriction(site.Site, rho*visible-ringDelay, site.GetResidualMS/1000)
		weight := site.ThroughputOpsPerS / c.ThroughputOpsPerS
		m.perSite += weight * restrictedShare(mu, getShare, r, d)
		m.visibleS += weight * visible
		m.r += weight * r
		m.restrictS += weight * d
		sessions += site.Sessions
	}
	if sessions == 0 {
		return restrictionModel{}, false
	}
	m.global = restrictedShare(c.ThroughputOpsPerS/float64(sessions), getShare, m.r, m.restrictS)
	return m, true
}

// ringFlight is a ring's FlightStats with its number.
type ringFlight struct {
	FlightStats
	index int
}

// siteRing returns the measured flight of the ring a client site reads
// from while unrestricted, and is restricted to after: its own (every
// client site of Karma's presets has storage nodes; Karma 4.1.1, a
// coordinator reads the nearest ring).
func siteRing(s *Scenario, st *Stability, site string) (ringFlight, bool) {
	for i, sites := range s.Causal.Rings {
		if !slices.Contains(sites, site) {
			continue
		}
		for _, r := range st.Rings {
			if r.Name == strconv.Itoa(i) {
				return ringFlight{r, i}, true
			}
		}
	}
	return ringFlight{}, false
}

// measuredStability reports whether a run of the result measured its
// time to stability (the simulator's runs do).
func measuredStability(r *Result) bool {
	for _, c := range r.Causal {
		if c.Stability != nil {
			return true
		}
	}
	return false
}

// restrictionModelTable sets the model's restricted share beside the
// measured one, for each run of a strategy with dynamic ring
// restrictions (karma, karma-nc).
func restrictionModelTable(s *Scenario, r *Result) Table {
	t := Table{Name: "restriction-model", Title: "Restricted share: measured vs model (Karma 4.2, Fig. 11; karma_model.go)",
		Header: append(causalColumns(s), "ops/s", "puts/s", "stability ms", "in flight at ring ms", "in flight % model", "in flight %",
			"restriction ms", "restricted % model", "model (global)", "restricted %", "measured - model")}
	for _, c := range r.Causal {
		if st, err := causal.ParseStrategy(c.Strategy); err != nil || st.Static() {
			continue
		}
		row := append(causalCells(s, c), f1(c.ThroughputOpsPerS))
		m, ok := predictRestriction(s, c)
		if !ok {
			t.Rows = append(t.Rows, append(row, "", "", "", "", f1(c.InFlightPct), "", "", "", f1(c.RestrictedPct), ""))
			continue
		}
		t.Rows = append(t.Rows, append(row, f1(m.writesPerS), f1(1000*m.flightS), f1(1000*m.visibleS), f1(100*m.r), f1(c.InFlightPct),
			f1(1000*m.restrictS), f1(100*m.perSite), f1(100*m.global), f1(c.RestrictedPct), f1(c.RestrictedPct-100*m.perSite)))
	}
	t.Caption = "The model (karma_model.go) predicts the share of accesses made under a ring restriction from the load, the key distribution and the time to stability, all measured in the run (Little's law over the measured window). " +
		"Stability: the mean time from a write's acknowledgement to its coordinator's completion. In flight at ring: the mean time a version shows in flight at the ring a client site reads, from when the ring holds it (its acknowledgement, or its first invalidation of a cache if sooner: Karma 4.3's node applies the version, then invalidates the caches and acknowledges once they answer) to the STABLE notice's arrival (completion plus a one-way delay). " +
		"In flight % model: r = sum_k q_k (1 - exp(-W q_k V)), the chance a Get finds its key's version in flight (W writes/s, q_k the key's probability, V the time in flight at the ring); beside it the measured share of Gets that read an in-flight version. " +
		"Restriction: D, the time until the reader's coordinator learns the version read stable (the part of its flight the version has left, plus the completion's delay to the reader, and for another site's write no sooner than the answer to the watch sent with the session's next Get), plus the Gets' mean residual latency E[L^2]/2E[L], the wait for the Get in progress to end and the next, which the lift reaches, to be issued. " +
		"Restricted % model: (1 - p) (1 - exp(-g r D)) + p (1 - exp(-g r (D + 1/g))) per client site (g its Gets per session per second, p the put fraction; a Put stays restricted until the next Get's reply drops the restriction), weighted by the sites' accesses; global: the same from the system's means. " +
		"Columns other than the measured ones are means over the client sites weighted by their accesses. The model ignores notify-after, which lifts restrictions sooner. " +
		"Only strategies with dynamic ring restrictions (karma, karma-nc) are listed."
	t.Caption += virtualNote(r)
	return t
}
