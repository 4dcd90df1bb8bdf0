package clientcore

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/cosla/cosla/internal/core/hlc"
)

// Tune is a target for the CPQ tuner, beyond the paper: CPQ 1 states the
// goal ("reads have 95th-percentile latency at most L and return stale
// values at most a fraction S of the time") and 5 leaves the tuning to
// future work. A session with a Tune draws each Get's and Put's level as
// CPQ(p, One, Quorum), the same p for both as in CPQ 3.2, and the client
// adjusts p before every Get.
//
// CPQ 3.2 shows the trade-off p moves along: from ONE-ONE (p = 0), the
// fastest and stalest, to QUO-QUO (p = 1), never stale and slowest, with
// latency and staleness "gradually morphing" between. Which p meets both
// targets depends on the state of the world (CPQ 5: a tuner for
// probabilistic guarantees), so the tuner estimates, from its client's
// own reads, the range of p that meets each target and keeps p inside
// both:
//
//   - Latency: with F1 the probability that a ONE read answers within L
//     and FQ that a QUORUM read does, reads meet L with probability
//     (1-p)F1 + p FQ, at least tuneAim for p up to
//     (F1-tuneAim)/(F1-FQ). F1 and FQ are the shares of the client's
//     recent tuned reads of each level that took at most L; until there
//     are enough, they come from the monitor (Pileus 4.5).
//   - Staleness: a QUORUM read whose first replica is the one a ONE read
//     would have used and whose other replica is the primary shows
//     whether that first replica was stale, as a ONE read from it would
//     have been: its version is older than the primary's, and the
//     primary's was ordered long enough before the read began that its
//     Put had been acknowledged (a read that misses a Put still in
//     flight is not stale, CPQ 2). s1, the share of ONE reads that would
//     be stale, is the share of ONE reads that would go to a secondary
//     times the share of those samples that were stale; (1-p)s1 is at
//     most S for p from 1-S/s1. (A QUORUM read of two secondaries shows
//     nothing: both may miss the same version.)
//
// Each estimate weighs a read by the inverse of the probability of its
// level (see weight), so that it is a mean over time rather than over
// the tuner's own choices, and forgets at two rates (tuneFast, tuneSlow),
// the tuner heeding the more pessimistic: the fast one follows a change
// within a few hundred milliseconds, the slow one keeps the tuner
// careful between the bursts of a bursty world. The controller keeps p
// while it lies inside the range that meets both targets, away from its
// ends by tuneHysteresis of the range's width, and otherwise moves it to
// the range's middle, where the noise of a short window has room on
// either side; at least tuneExplore, so that QUORUM reads keep measuring
// s1, unless that would break L. When no p meets both, staleness wins
// (our choice: an application that asked for a stale bound is harmed by
// stale data in a way a slow read does not hide).
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

// Tuning constants, our choices.
const (
	// Every estimate is kept twice, forgetting at two rates: a sample's
	// weight falls by e every tuneFast in one and every tuneSlow in the
	// other, and the tuner heeds the more pessimistic. The fast one, a
	// tenth of a second (hundreds of reads at a few thousand a second),
	// sees a change within a window of cpq-tuner (1 s); the slow one, a
	// second, smooths the bursts of a world whose tail comes in bursts
	// (a node's pause slows every read it holds), so that a good tenth
	// of a second does not let p rise before the next burst.
	tuneFast = 100 * time.Millisecond
	tuneSlow = time.Second
	// tuneWarmup is how much weight an estimate needs before it is used:
	// until then latency comes from the monitor and, for staleness, the
	// tuner reads at QUORUM only (p = 1), knowing nothing of s1. A fast
	// estimate with less weight gives way to the slow one.
	tuneWarmup = 20
	// tuneExplore is the least p while latency allows it, so that
	// staleness samples keep coming.
	tuneExplore = 0.05
	// tuneHysteresis is how far inside the range that meets both
	// targets p may stay, as a share of the range's width, before it is
	// moved to the middle.
	tuneHysteresis = 0.2
	// tuneAim is the share of reads within L the latency bound aims at:
	// the target's 95%, and a point more for the noise of a window (a
	// second's reads meet L by chance a point below or above the
	// estimate of the last second).
	tuneAim = 0.96
)

// tunerFor returns the client's tuner of a target. The sessions of one
// client with the same target share it, so that it learns from all their
// reads (the sessions of a client share its replicas and network).
func (c *Client) tunerFor(target Tune) *tuner {
	tn, ok := c.tuners[target]
	if !ok {
		tn = &tuner{p: 1, target: target, now: c.env.Now}
		c.tuners[target] = tn
	}
	return tn
}

// tuner is a tuning state.
type tuner struct {
	p      float64 // probability of QUORUM
	target Tune
	now    func() time.Time
	// one and quorum are the shares of the reads of each level that
	// answered within the target latency; readTime is the mean latency of
	// ONE reads.
	one, quorum, readTime estimate
	// secondary is the share of ONE reads that would go to a secondary;
	// stale the share of the secondaries sampled that were stale.
	secondary, stale estimate
	// sampled counts the staleness samples ever taken.
	sampled int
}

// estimate is a mean kept at the two rates of forgetting.
type estimate struct {
	fast, slow decayed
}

func (e *estimate) add(now time.Time, x, w float64) {
	e.fast.add(now, x, w, tuneFast)
	e.slow.add(now, x, w, tuneSlow)
}

// means returns the fast and the slow mean (the slow one twice while the
// fast one has too little weight), and whether the slow one has enough.
func (e *estimate) means(now time.Time) (fast, slow float64, ok bool) {
	slow, ok = e.slow.mean(now, tuneSlow)
	fast, fastOK := e.fast.mean(now, tuneFast)
	if !fastOK {
		fast = slow
	}
	return fast, slow, ok
}

// decayed is a weighted mean whose samples' weights fall by e every tau.
type decayed struct {
	sum, weight float64
	at          time.Time
}

func (d *decayed) decay(now time.Time, tau time.Duration) {
	if d.at.IsZero() {
		d.at = now
	}
	if dt := now.Sub(d.at); dt > 0 {
		f := math.Exp(-float64(dt) / float64(tau))
		d.sum, d.weight, d.at = d.sum*f, d.weight*f, now
	}
}

func (d *decayed) add(now time.Time, x, w float64, tau time.Duration) {
	d.decay(now, tau)
	d.sum += w * x
	d.weight += w
}

// mean is the weighted mean (0 with no weight), and whether tuneWarmup
// samples' weight stands behind it.
func (d *decayed) mean(now time.Time, tau time.Duration) (float64, bool) {
	d.decay(now, tau)
	if d.weight == 0 {
		return 0, false
	}
	return d.sum / d.weight, d.weight >= tuneWarmup
}

func bit(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// readDone records a tuned read's latency at its level, weighted by the
// inverse of the probability of that level when it was drawn (see
// weight).
func (t *tuner) readDone(res GetResult) {
	now, w := t.now(), weight(res)
	if res.Level > 1 {
		t.quorum.add(now, bit(res.RTT <= t.target.Latency), w)
		return
	}
	t.one.add(now, bit(res.RTT <= t.target.Latency), w)
	t.readTime.add(now, float64(res.RTT), w)
}

// weight is a tuned read's weight in the estimates: the inverse of the
// probability that its level was drawn (res.TuneP for QUORUM, 1 - TuneP
// for ONE), at most 1/tuneExplore. Without it the estimates would be
// means over the tuner's own choices, which follow the world: when a
// burst of slow reads lowers p, fewer QUORUM reads sample the burst, and
// FQ comes out too good (on cpq-tuner's stalls, 0.955 where QUORUM reads
// met L 0.935 of the time). Weighted, each estimate is a mean over time.
func weight(res GetResult) float64 {
	q := 1 - res.TuneP
	if res.Level > 1 {
		q = res.TuneP
	}
	return 1 / max(q, tuneExplore)
}

// sample records what a tuned QUORUM read showed of the replica a ONE
// read would have used, its first target, when every target answered.
func (t *tuner) sample(q *quorumCall) {
	now, w := t.now(), weight(q.res)
	first := q.targets[0]
	t.secondary.add(now, bit(!first.primary), w)
	if first.primary {
		return // a ONE read from the primary is never stale
	}
	primary := slices.IndexFunc(q.targets, func(r *replicaState) bool { return r.primary })
	if primary < 0 {
		return // no reply to judge it by
	}
	one, newest := q.replies[0], q.replies[primary]
	// A Put is acknowledged about a read's time after the primary orders
	// it (the fsync, then the reply's trip): a version ordered earlier
	// than that before the read began had been acknowledged.
	_, mean, _ := t.readTime.means(now)
	settled := hlc.FromTime(q.startWall - int64(mean))
	stale := newest.Found && (!one.Found || one.VersionTS.Less(newest.VersionTS)) && !settled.Less(newest.VersionTS)
	t.stale.add(now, bit(stale), w)
	t.sampled++
}

// bounds returns the least p that keeps the stale fraction within S and
// the largest that keeps the read p95 within L, for tablet tv, each the
// more pessimistic of its fast and slow estimates.
func (t *tuner) bounds(tv *tabletView, target Tune) (low, high float64) {
	now := t.now()
	f1Fast, f1Slow, ok1 := t.one.means(now)
	fqFast, fqSlow, okq := t.quorum.means(now)
	if !ok1 || !okq {
		// Too few reads of a level yet: the monitor's view, the nearest
		// replica for ONE and the product over a quorum of the nearest
		// for QUORUM (Pileus 4.5).
		var buf [8]int
		group := nearest(buf[:0], tv.replicas, Quorum.Count(len(tv.replicas)), 0)
		if !ok1 {
			f1Fast = tv.replicas[group[0]].rtt.pWithin(target.Latency)
			f1Slow = f1Fast
		}
		if !okq {
			fqFast = 1
			for _, j := range group {
				fqFast *= tv.replicas[j].rtt.pWithin(target.Latency)
			}
			fqSlow = fqFast
		}
	}
	high = min(latencyBound(f1Fast, fqFast), latencyBound(f1Slow, fqSlow))
	if t.sampled < tuneWarmup {
		return 1, high
	}
	secFast, secSlow, _ := t.secondary.means(now)
	staleFast, staleSlow, _ := t.stale.means(now)
	low = max(staleBound(secFast*staleFast, target.Stale), staleBound(secSlow*staleSlow, target.Stale))
	return low, high
}

// latencyBound is the largest p with (1-p)f1 + p fq >= tuneAim.
func latencyBound(f1, fq float64) float64 {
	switch {
	case fq >= tuneAim:
		return 1
	case f1 > tuneAim:
		return (f1 - tuneAim) / (f1 - fq)
	}
	return 0
}

// staleBound is the least p with (1-p)s1 <= s.
func staleBound(s1, s float64) float64 {
	if s1 <= s {
		return 0
	}
	return 1 - s/s1
}

// adjust sets p for a read of tablet tv under target.
func (t *tuner) adjust(tv *tabletView, target Tune) float64 {
	low, high := t.bounds(tv, target)
	t.p = control(t.p, low, high)
	return t.p
}

// control is the controller: p stays while it lies inside [low, high],
// away from both ends by tuneHysteresis of the range's width; otherwise
// it goes to the middle, at least tuneExplore if high allows. With no p
// in range, it goes to low.
func control(p, low, high float64) float64 {
	if low > high {
		return low
	}
	margin := tuneHysteresis * (high - low)
	if p >= low+margin && p <= high-margin && (p >= tuneExplore || high < tuneExplore) {
		return p
	}
	mid := (low + high) / 2
	if mid < tuneExplore && tuneExplore <= high {
		mid = tuneExplore
	}
	return mid
}
