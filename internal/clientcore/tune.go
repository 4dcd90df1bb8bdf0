package clientcore

import (
	"fmt"
	"math"
	"time"
)

// Tune is a target for the CPQ tuner, beyond the paper: CPQ 1 states the
// goal ("reads have 95th-percentile latency at most L and return stale
// values at most a fraction S of the time") and 5 leaves the tuning to
// future work. A session with a Tune draws each Get's and Put's level as
// CPQ(p, One, Quorum), the same p for both as in CPQ 3.2, and adjusts p
// before every Get.
//
// Latency: with F1 the probability that a ONE read answers within L and
// FQ that a QUORUM read does, a read meets L with probability (1-p)F1 +
// p FQ, which is at least 0.95 for p up to (F1-0.95)/(F1-FQ). F1 and FQ
// are the shares of the session's last tuneLatencies reads of each level
// that took at most L; until tuneWarmup reads of a level have been seen,
// they come from the client's monitor (the nearest replica's PNodeLat,
// and the product over a quorum of the nearest; Pileus 4.5). The
// monitor's samples include Puts' round trips, fsync and all, which
// makes it the more pessimistic of the two: on cpq-tuner it kept p low
// enough to miss the staleness target in most windows. Staleness comes from the session's QUORUM reads: each
// one shows whether the replica a ONE read would have used answered with
// an older version than the newest, when the newest was ordered more than
// a round trip to the primary before the read began (so its Put had
// almost surely completed: a read that misses a Put still in flight is
// not stale); s1, the share of those that did, estimates the stale
// fraction of ONE reads, so (1-p)s1 is at most S for p from 1-S/s1.
//
// The tuner takes the middle of the range of p that meets both, so that
// the noise of a short window has room on either side (the smallest such
// p met the average target but missed it in half the windows of
// cpq-tuner), and at least tuneExplore, so that QUORUM reads keep
// measuring s1, unless that would break L. When no p meets both,
// staleness wins (our choice: an application that asked for a stale bound is
// harmed by stale data in a way a slow read does not hide).
type Tune struct {
	Latency time.Duration
	Stale   float64
}

func (t Tune) set() bool { return t != Tune{} }

func (t Tune) validate() error {
	if t.Latency <= 0 || math.IsNaN(t.Stale) || t.Stale < 0 || t.Stale > 1 {
		return fmt.Errorf("%w: tuner target needs a positive latency and a stale fraction in [0, 1], got %s and %v", ErrInvalid, t.Latency, t.Stale)
	}
	return nil
}

func (t Tune) String() string { return fmt.Sprintf("cpq-tune(%s, %g)", t.Latency, t.Stale) }

// Tuning constants, our choices. Until tuneWarmup QUORUM reads have been
// seen the tuner reads at QUORUM only (p = 1): it knows nothing of s1.
// Afterwards s1 is a running mean of the first tuneWindow reads and then
// an exponentially weighted one of about the last tuneWindow.
const (
	tuneWarmup  = 20
	tuneWindow  = 50
	tuneExplore = 0.05
	tunePct     = 0.95
	// tuneLatencies is how many recent reads of each level the latency
	// estimate keeps.
	tuneLatencies = 200
)

// tunerFor returns the client's tuner of a target. The sessions of one
// client with the same target share it, so that it learns from all their
// reads (the sessions of a client share its replicas and network).
func (c *Client) tunerFor(target Tune) *tuner {
	tn, ok := c.tuners[target]
	if !ok {
		tn = &tuner{p: 1}
		c.tuners[target] = tn
	}
	return tn
}

// tuner is a tuning state.
type tuner struct {
	p       float64 // probability of QUORUM
	stale   float64 // s1
	samples int
	// one and quorum are the latencies of the session's recent reads at
	// each level, the oldest overwritten first.
	one, quorum latencies
}

// latencies is a ring of recent read latencies.
type latencies struct {
	ring []time.Duration
	next int
}

func (l *latencies) add(d time.Duration) {
	if len(l.ring) < tuneLatencies {
		l.ring = append(l.ring, d)
		return
	}
	l.ring[l.next] = d
	l.next = (l.next + 1) % tuneLatencies
}

// within is the share of the latencies at most d, and whether there are
// enough of them to say.
func (l *latencies) within(d time.Duration) (float64, bool) {
	if len(l.ring) < tuneWarmup {
		return 0, false
	}
	n := 0
	for _, x := range l.ring {
		if x <= d {
			n++
		}
	}
	return float64(n) / float64(len(l.ring)), true
}

// readDone records a tuned read's latency at its level.
func (t *tuner) readDone(level int, d time.Duration) {
	if level > 1 {
		t.quorum.add(d)
	} else {
		t.one.add(d)
	}
}

// observe records whether the nearest replica of a QUORUM read was stale.
func (t *tuner) observe(stale bool) {
	x := 0.0
	if stale {
		x = 1
	}
	t.samples++
	t.stale += (x - t.stale) / float64(min(t.samples, tuneWindow))
}

// adjust sets p for a read of tablet tv under target.
func (t *tuner) adjust(tv *tabletView, target Tune) float64 {
	var buf [8]int
	group := nearest(buf[:0], tv.replicas, Quorum.Count(len(tv.replicas)), 0)
	f1, ok := t.one.within(target.Latency)
	if !ok {
		f1 = tv.replicas[group[0]].rtt.pWithin(target.Latency)
	}
	fq, ok := t.quorum.within(target.Latency)
	if !ok {
		fq = 1
		for _, j := range group {
			fq *= tv.replicas[j].rtt.pWithin(target.Latency)
		}
	}
	high := 0.0 // the largest p that keeps the read p95 within L
	switch {
	case fq >= tunePct:
		high = 1
	case f1 > tunePct:
		high = (f1 - tunePct) / (f1 - fq)
	}
	low := 1.0 // the smallest p that keeps the stale fraction within S
	if t.samples >= tuneWarmup {
		low = 0
		if t.stale > target.Stale {
			low = 1 - target.Stale/t.stale
		}
	}
	p := low
	if low <= high {
		p = (low + high) / 2
		if p < tuneExplore && tuneExplore <= high {
			p = tuneExplore
		}
	}
	t.p = p
	return p
}
