package clientcore

import (
	"maps"
	"slices"
	"time"

	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/rtt"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/sla"
)

// Monitor (Pileus 4.5). Every round trip to a node adds a latency sample;
// samples older than the window, or beyond the sample cap, are forgotten so
// the estimates follow changing conditions. High timestamps are kept per
// (node, tablet) replica and only ever increase.

// monitor is the client's monitor: the round-trip windows of the nodes
// it talks to, its probe schedule and the operations waiting for a
// first probe.
type monitor struct {
	rtt        map[wire.NodeID]*rttStats
	samplesMax int
	// window is how long a sample counts (Options.RTTWindow).
	window time.Duration
	// interval, minInterval and maxInterval are Options.ProbeInterval,
	// MinProbeInterval and MaxProbeInterval; adaptive is
	// Options.AdaptiveProbing.
	interval, minInterval, maxInterval time.Duration
	adaptive                           bool
	// awaiting are the operations waiting for a first probe (await), in
	// the order they came.
	awaiting []func()
}

func newMonitor(o Options) monitor {
	return monitor{rtt: map[wire.NodeID]*rttStats{}, samplesMax: o.RTTSamplesMax, window: o.RTTWindow,
		interval: o.ProbeInterval, minInterval: o.MinProbeInterval, maxInterval: o.MaxProbeInterval, adaptive: o.AdaptiveProbing}
}

// node returns the round-trip window of a node, made on first use.
func (m *monitor) node(id wire.NodeID) *rttStats {
	s, ok := m.rtt[id]
	if !ok {
		s = newRTTStats(m.samplesMax)
		m.rtt[id] = s
	}
	return s
}

// observe records a round trip to a node that started at sent and
// ended now, unless it may include setting up the connection
// (replicaState.warming).
func (m *monitor) observe(r *replicaState, sent, now time.Time) time.Duration {
	rtt := now.Sub(sent)
	r.lastContact = now
	if r.warming && r.coldUntil.IsZero() || sent.Before(r.coldUntil) {
		return rtt
	}
	r.rtt.Add(now, rtt)
	r.rtt.Expire(now.Add(-m.window))
	return rtt
}

// silence records a request to r, sent at sent, that timed out now:
// the node was at least that slow (4.5), and it is down until it next
// answers (rttStats.down). It returns the time waited.
func (m *monitor) silence(r *replicaState, sent, now time.Time) time.Duration {
	waited := m.observe(r, sent, now)
	r.rtt.down = true
	return waited
}

// rttStats is the window of one node's round trips (rtt.Window), and
// whether it is down: set when a request to the node ended without a
// reply (a probe, a Get or a Put timed out) and cleared by the next
// message the node sends (Client.Receive). A node that has not answered
// since it last failed to is taken as unreachable (see pWithin).
type rttStats struct {
	rtt.Window
	down bool
}

func newRTTStats(maxSamples int) *rttStats {
	return &rttStats{Window: rtt.NewWindow(maxSamples)}
}

// pWithin is PNodeLat (rtt.Window.Within). A node that is down is
// expected to meet no latency at all, however fast its past samples: the
// window still holds minutes of them, and a timed-out request adds only
// one, as long as its timeout, which an SLA's longer latency would count
// as met (a primary whose process had stopped kept its appeal for a
// "strong 5s" subSLA after a 2 s probe timed out).
func (s *rttStats) pWithin(latency time.Duration) float64 {
	if s.down {
		return 0
	}
	return s.Within(latency)
}

// replicaState is what the client knows of one replica of one tablet.
type replicaState struct {
	id      wire.NodeID
	primary bool
	rtt     *rttStats // shared by all tablets on the node
	// high is the largest high timestamp the node has reported for this
	// tablet (Pileus 4.5); heard is when it last reported one, and lag
	// the replica's staleness then (see staleness).
	high  hlc.Timestamp
	heard time.Time
	lag   time.Duration
	// lastContact is when the client last heard from this replica; the
	// monitor probes replicas it has not heard from for a while.
	lastContact time.Time
	probing     bool
	// warming is set, under MeasureNeeded, from OpenTable until
	// the replica's first measured probe is answered or times out; the
	// operations that would choose it wait meanwhile (awaitProbe).
	// Requests sent while the warm-up probe is out, or before coldUntil,
	// when the measured probe was sent, may have waited for the
	// connection to be set up: their round trips are not sampled.
	warming   bool
	coldUntil time.Time
	// probeInterval is this replica's own probe interval under
	// Options.AdaptiveProbing; zero until a probe has adapted it, which
	// stands for Options.ProbeInterval.
	probeInterval time.Duration
	// shift is the last probe's round trip if it departed from the
	// node's window mean (zero if not), and shiftSent when that probe was
	// sent: a candidate shift in latency that the next probe may confirm
	// (Options.AdaptiveProbing).
	shift     time.Duration
	shiftSent time.Time
}

// observeHigh records a high timestamp reported by replica r of tv, and
// the replica's staleness as of the report.
func (c *Client) observeHigh(tv *tabletView, r *replicaState, ts hlc.Timestamp) {
	r.high = hlc.Max(r.high, ts)
	r.lastContact, r.heard = c.env.Now(), c.env.Now()
	r.lag = staleness(tv, r.high, r.primary, c.env.WallNanos())
}

// Adaptive probing, beyond the paper. Pileus 6.1: "If the latency to a
// node is fairly stable and the consistency predictable, then clients
// could probe less frequently." A probe's round trip departs from the
// node's window mean when it differs from it by more than
// volatileFraction of the mean and by more than volatileMin. The paper
// gives no numbers: these are our choice. A quarter of the mean is well
// beyond the jitter of a wide-area link (a millisecond or so on a link of
// 150 ms) yet well within a change worth reacting to, and volatileMin
// keeps a node a millisecond away from looking volatile over a few
// hundred microseconds.
const (
	volatileFraction = 0.25
	volatileMin      = 5 * time.Millisecond
)

// departs reports whether rtt departs from reference as the constants
// above define it.
func departs(rtt, reference time.Duration) bool {
	deviation := rtt - reference
	if deviation < 0 {
		deviation = -deviation
	}
	return deviation > max(time.Duration(volatileFraction*float64(reference)), volatileMin)
}

// tick is the period of the probe timer. Under AdaptiveProbing it is
// the shortest interval, so a replica is probed at most one tick after
// its own interval runs out.
func (m *monitor) tick() time.Duration {
	if m.adaptive {
		return m.minInterval
	}
	return m.interval
}

// probeInterval is how long the client may go without hearing from r
// before probing it.
func (m *monitor) probeInterval(r *replicaState) time.Duration {
	if !m.adaptive || r.probeInterval == 0 {
		return m.interval
	}
	return r.probeInterval
}

// adapt judges a probe of r sent at sent under
// Options.AdaptiveProbing; mean and measured describe the node's window
// before the probe's sample was added.
//
// A probe that times out, or whose round trip departs from the mean,
// marks the node volatile: it is probed every MinProbeInterval. Any other
// probe marks it stable: its interval doubles, up to MaxProbeInterval.
// Only probes count: a replica that serves Gets or Puts is not probed at
// all, and its interval matters only once they stop, when the probes
// judge it afresh.
//
// Probing a volatile node more often is not enough by itself: its window
// still holds minutes of samples from before the change (in Pileus 5.4's
// scenario, after #5, some sixty from Gets and probes), and a probe every
// few seconds takes nearly the whole window to outweigh them. So when two
// probes in a row depart from the mean and agree with each other, the
// client takes it that the node's latency has shifted and forgets the
// samples taken before the first of them, as the window would once it had
// passed. One outlying round trip is not enough; a timeout never is.
func (m *monitor) adapt(r *replicaState, sent time.Time, mean time.Duration, measured bool, rtt time.Duration, timedOut bool) {
	if !m.adaptive || !measured && !timedOut {
		return // the node's first sample: nothing to judge it by
	}
	if !timedOut && !departs(rtt, mean) {
		r.probeInterval = min(2*m.probeInterval(r), m.maxInterval)
		r.shift = 0
		return
	}
	r.probeInterval = m.minInterval
	if timedOut {
		r.shift = 0
		return
	}
	if r.shift > 0 && !departs(rtt, r.shift) {
		r.rtt.Expire(r.shiftSent)
	}
	r.shift, r.shiftSent = rtt, sent
}

// awaitProbe makes a Get wait, under MeasureNeeded, while the
// replica it would go to is still warming (Pileus 4.5): an unmeasured
// node promises every latency (pWithin) and counts as the farthest, so
// among several the choice falls on the first in the layout, not the
// nearest, nor the one that can meet the SLA. Pileus's choice (Fig. 8),
// the Closest strategy's and a bounded Get's (the nearest replica) are
// the ones that read the monitor. It reports whether it held the Get,
// which chooses again once a probe is answered or times out (probed):
// the probes went out together, so the first to answer is the nearest
// node, and the Get waits for no other unless it would choose it, at
// most ProbeTimeout for each. The wait is the table's measuring, as if
// OpenTable had waited for it: it does not count in the Get's latency,
// which an SLA judges by the Get's own round trip.
func (c *Client) awaitProbe(s *Session, tv *tabletView, key string, agreement sla.SLA, strategy Strategy, o GetOptions, done func(GetResult, error)) bool {
	if c.opts.Measure != MeasureNeeded {
		return false
	}
	var r *replicaState
	switch {
	case o.Bound != wire.NoBound:
		r = s.receiver(tv)
	case strategy == Pileus:
		_, pick, _, _ := selectTarget(agreement, c.minReadTimestamps(s, agreement, key), tv.replicas, 0)
		r = tv.replicas[pick]
	case strategy == Closest:
		r = tv.replicas[closest(tv.replicas)]
	}
	if r == nil || !r.warming {
		return false
	}
	c.holdForProbe(s, key, o, done)
	return true
}

// holdForProbe holds a Get for awaitProbe. It is a function of its own
// so that the closure's copy of o is allocated only for a Get held.
func (c *Client) holdForProbe(s *Session, key string, o GetOptions, done func(GetResult, error)) {
	held := c.env.Now()
	c.mon.await(func() {
		o.since = o.since.Add(c.env.Now().Sub(held))
		if err := c.get(s, key, o, done, true); err != nil {
			done(GetResult{Met: -1, Target: -1}, err)
		}
	})
}

// await holds an operation until the next probe is answered or times out;
// retry then runs it again.
func (m *monitor) await(retry func()) {
	m.awaiting = append(m.awaiting, retry)
}

// probed lets the operations waiting for a first probe choose again.
func (m *monitor) probed() {
	waiting := m.awaiting
	m.awaiting = nil
	for _, f := range waiting {
		f()
	}
}

// ProbesSent returns the number of probes the client has sent since New
// (Pileus 4.5; under Options.AdaptiveProbing, 6.1).
func (c *Client) ProbesSent() uint64 { return c.probesSent }

// RTTEstimate is the monitor's view of one node's round-trip time: the
// mean of the samples in its window (Pileus 4.5).
type RTTEstimate struct {
	Node    string
	Mean    time.Duration
	Samples int
}

// RTTEstimates returns the monitor's round-trip estimate of every node it
// has measured, in node order.
func (c *Client) RTTEstimates() []RTTEstimate {
	out := make([]RTTEstimate, 0, len(c.mon.rtt))
	for _, id := range slices.Sorted(maps.Keys(c.mon.rtt)) {
		s := c.mon.rtt[id]
		out = append(out, RTTEstimate{Node: string(id), Mean: s.Mean(), Samples: s.Len()})
	}
	return out
}
