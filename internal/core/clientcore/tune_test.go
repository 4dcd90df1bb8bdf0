package clientcore

import (
	"math"
	"testing"
	"time"

	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/wire"
)

// tuneWorld is a fake world for the tuner: a clock moved by hand, a
// tablet of a primary and two secondaries, and helpers that feed the
// tuner reads as the client would.
type tuneWorld struct {
	t   *testing.T
	now time.Time
	tn  *tuner
	tv  *tabletView
}

func newTuneWorld(t *testing.T, target Tune) *tuneWorld {
	w := &tuneWorld{t: t, now: epoch.Add(time.Hour), tv: &tabletView{replicas: []*replicaState{
		testReplica("primary", true, 0, ms(1)), testReplica("s1", false, 0, ms(1)), testReplica("s2", false, 0, ms(1)),
	}}}
	w.tn = &tuner{p: 1, target: target, now: func() time.Time { return w.now }}
	return w
}

// advance moves the clock on by d.
func (w *tuneWorld) advance(d time.Duration) { w.now = w.now.Add(d) }

// read feeds the tuner a read at level (1 or 2) that took d, drawn at
// QUORUM with probability p.
func (w *tuneWorld) read(level int, d time.Duration, p float64) {
	w.tn.readDone(GetResult{Level: level, RTT: d, TuneP: p})
}

// quorum feeds the tuner a QUORUM read that took d, of replicas first
// and second (indexes into the tablet), drawn with probability p, which
// began now: first answers with the newest version if fresh, an older
// one if not; the other with the newest, ordered age before the read
// began.
func (w *tuneWorld) quorum(first, second int, fresh bool, age, d time.Duration, p float64) {
	start := w.now.UnixNano()
	newest := hlc.FromTime(start - int64(age))
	reply := func(i int) *wire.GetReply {
		r := &wire.GetReply{Found: true, VersionTS: newest, Primary: w.tv.replicas[i].primary}
		if i == first && !fresh {
			r.VersionTS = hlc.FromTime(start - int64(time.Second))
		}
		return r
	}
	q := &quorumCall{tv: w.tv, targets: []*replicaState{w.tv.replicas[first], w.tv.replicas[second]},
		replies: []*wire.GetReply{reply(first), reply(second)}, startWall: start, res: GetResult{Level: 2, RTT: d, TuneP: p}}
	w.tn.readDone(q.res)
	w.tn.sample(q)
}

// every is true in a share of its calls (Bresenham), spread evenly.
type every struct{ share, acc float64 }

func (e *every) next() bool {
	e.acc += e.share
	if e.acc >= 1 {
		e.acc--
		return true
	}
	return false
}

// second feeds the tuner 1 s of reads at p: every 100 us a ONE read and
// a QUORUM read, which miss L (taking twice L) in the shares oneSlow and
// quoSlow; the QUORUM read's first replica takes turns over the three,
// its second is the primary (for the primary, a secondary), and a share
// staleSec of the secondaries' turns are stale.
func (w *tuneWorld) second(oneSlow, quoSlow, staleSec, p float64) {
	one, quo, stale := every{share: oneSlow}, every{share: quoSlow}, every{share: staleSec}
	l := w.tn.target.Latency
	for i := range 10_000 {
		w.advance(100 * time.Microsecond)
		d := l / 2
		if one.next() {
			d = 2 * l
		}
		w.read(1, d, p)
		first, second := i%3, 0
		if first == 0 {
			second = 1
		}
		d = l / 2
		if quo.next() {
			d = 2 * l
		}
		w.quorum(first, second, first == 0 || !stale.next(), 10*time.Millisecond, d, p)
	}
}

func near(got, want, tolerance float64) bool { return math.Abs(got-want) <= tolerance }

// TestTunerBounds checks the range of p the tuner estimates from the
// reads of the last second: the latency bound from the shares of ONE and
// QUORUM reads within L, the staleness bound from the samples of the
// replica a ONE read would use, and what adjust makes of them.
func TestTunerBounds(t *testing.T) {
	for _, tc := range []struct {
		name                       string
		oneSlow, quoSlow, staleSec float64
		stale                      float64
		low, high, p               float64 // p: the p adjust chooses from 1
	}{
		// Never stale, always fast: any p; the middle.
		{name: "calm", stale: 0.01, low: 0, high: 1, p: 0.5},
		// 30% of the secondaries stale: s1 = 2/3 * 0.3 = 0.2, and
		// (1-p) 0.2 <= 0.05 from p = 0.75.
		{name: "stale", staleSec: 0.3, stale: 0.05, low: 0.75, high: 1, p: 0.875},
		// ONE reads within L 99% of the time, QUORUM 90%: the share
		// (1-p) 0.99 + p 0.9 is at least tuneAim (0.96) up to p = 1/3.
		{name: "slow quorum", oneSlow: 0.01, quoSlow: 0.1, stale: 0.05, low: 0, high: 1.0 / 3, p: 1.0 / 6},
		// Both: no p meets both targets; staleness wins.
		{name: "infeasible", oneSlow: 0.01, quoSlow: 0.1, staleSec: 0.3, stale: 0.05, low: 0.75, high: 1.0 / 3, p: 0.75},
		// Even ONE reads miss L too often: p = 0, no exploration.
		{name: "slow one", oneSlow: 0.05, quoSlow: 0.1, stale: 0.05, low: 0, high: 0, p: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newTuneWorld(t, Tune{Latency: ms(2), Stale: tc.stale})
			w.second(tc.oneSlow, tc.quoSlow, tc.staleSec, 0.5)
			low, high := w.tn.bounds(w.tv, w.tn.target)
			if !near(low, tc.low, 0.02) || !near(high, tc.high, 0.03) {
				t.Errorf("range [%.3f, %.3f], want [%.3f, %.3f]", low, high, tc.low, tc.high)
			}
			w.tn.p = 1
			if p := w.tn.adjust(w.tv, w.tn.target); !near(p, tc.p, 0.02) {
				t.Errorf("p = %.3f from 1, want %.3f", p, tc.p)
			}
		})
	}
}

// TestTunerWarmup checks the start: QUORUM only until tuneWarmup
// staleness samples, the monitor's view of latency until reads of each
// level have been seen.
func TestTunerWarmup(t *testing.T) {
	w := newTuneWorld(t, Tune{Latency: ms(2), Stale: 0.01})
	if p := w.tn.adjust(w.tv, w.tn.target); p != 1 {
		t.Errorf("p = %v with no samples, want 1", p)
	}
	for range tuneWarmup - 1 {
		w.advance(time.Millisecond)
		w.quorum(1, 0, true, 10*time.Millisecond, ms(1), 1)
	}
	if low, _ := w.tn.bounds(w.tv, w.tn.target); low != 1 {
		t.Errorf("low = %v after %d samples, want 1", low, tuneWarmup-1)
	}
	w.quorum(1, 0, true, 10*time.Millisecond, ms(1), 1)
	// Latency from the monitor (every replica answered in 1 ms: within
	// L), staleness from the samples: any p.
	if low, high := w.tn.bounds(w.tv, w.tn.target); low != 0 || high != 1 {
		t.Errorf("range [%v, %v] after %d fresh samples, want [0, 1]", low, high, tuneWarmup)
	}
}

// TestTunerSample checks what a QUORUM read tells of the replica a ONE
// read would have used: nothing of staleness when that replica is the
// primary (never stale) or when the primary is not among its replicas;
// stale only when the primary's newer version was ordered before the
// read began by more than a read's time, so that its Put had been
// acknowledged.
func TestTunerSample(t *testing.T) {
	w := newTuneWorld(t, Tune{Latency: ms(2), Stale: 0.01})
	w.read(1, ms(1), 0) // a read's time: 1 ms
	w.quorum(0, 1, true, 10*time.Millisecond, ms(1), 1)
	w.quorum(1, 2, false, 10*time.Millisecond, ms(1), 1)
	if w.tn.sampled != 0 {
		t.Errorf("%d staleness samples from a ONE replica that is the primary and a quorum without it, want 0", w.tn.sampled)
	}
	if sec, _ := w.tn.secondary.slow.mean(w.now, tuneSlow); !near(sec, 0.5, 1e-9) {
		t.Errorf("share of ONE replicas that are secondaries %v, want 0.5", sec)
	}
	// Stale against a version ordered 10 ms before: stale.
	w.quorum(1, 0, false, 10*time.Millisecond, ms(1), 1)
	// Against one ordered 0.5 ms before, less than a read's time: its Put
	// may not have been acknowledged yet, not stale.
	w.quorum(2, 0, false, 500*time.Microsecond, ms(1), 1)
	if w.tn.sampled != 2 {
		t.Fatalf("%d staleness samples, want 2", w.tn.sampled)
	}
	if stale, _ := w.tn.stale.slow.mean(w.now, tuneSlow); !near(stale, 0.5, 1e-9) {
		t.Errorf("stale share %v of the samples, want 0.5", stale)
	}
}

// TestTunerWeights checks that each read weighs as the inverse of the
// probability of its level, so that a QUORUM share drawn mostly while
// things went well does not hide the slow reads of a burst drawn at a
// low p: the estimate is the mean over time.
func TestTunerWeights(t *testing.T) {
	w := newTuneWorld(t, Tune{Latency: ms(2), Stale: 0.01})
	// Half a second of fast QUORUM reads at p = 0.5, then half a second
	// of slow ones at p = 0.1: a fifth as many reads, but half the time.
	for range 500 {
		w.advance(time.Millisecond)
		w.read(2, ms(1), 0.5)
	}
	for range 100 {
		w.advance(5 * time.Millisecond)
		w.read(2, ms(10), 0.1)
	}
	got, _ := w.tn.quorum.slow.mean(w.now, tuneSlow)
	// Weights 2 and 10 per read, decayed over a second: about half
	// within L (unweighted, five sixths would be).
	if got > 0.5 || got < 0.3 {
		t.Errorf("share of QUORUM reads within L %.3f, want about 0.4 (the slow half second weighs more, being later)", got)
	}
	if w := weight(GetResult{Level: 2, TuneP: 0.001}); w != 1/tuneExplore {
		t.Errorf("weight %v of a QUORUM read at p = 0.001, want at most %v", w, 1/tuneExplore)
	}
	if w := weight(GetResult{Level: 1, TuneP: 0.75}); w != 4 {
		t.Errorf("weight %v of a ONE read at p = 0.75, want 4", w)
	}
}

// TestTunerFollows checks that the tuner follows a change within a few
// hundred milliseconds, and that after a burst its slow estimate keeps it
// careful for a while: replication lag makes secondaries stale, then
// stops; later QUORUM reads turn slow.
func TestTunerFollows(t *testing.T) {
	const l = 2 * time.Millisecond
	w := newTuneWorld(t, Tune{Latency: l, Stale: 0.01})
	w.second(0, 0, 0, 0.5)
	if p := w.tn.adjust(w.tv, w.tn.target); p != 0.5 {
		t.Fatalf("calm: p = %v, want 0.5", p)
	}
	// 10 ms of reads at the tuner's p: 100 ONE reads, 100p QUORUM reads
	// (whose first replica takes turns over the secondaries and whose
	// second is the primary), a share staleSec of the secondaries stale.
	var stale every
	step := func(staleSec float64, quorum time.Duration) {
		stale.share = staleSec
		q := every{share: w.tn.p}
		for i := range 100 {
			w.advance(100 * time.Microsecond)
			w.read(1, l/2, w.tn.p)
			if q.next() {
				w.quorum(1+i%2, 0, !stale.next(), 10*time.Millisecond, quorum, w.tn.p)
			}
		}
		w.tn.adjust(w.tv, w.tn.target)
	}
	// Secondaries turn 15% stale (s1 = 0.1): p must reach 0.9.
	var at time.Duration
	for at = 0; at < time.Second && w.tn.p < 0.9; at += 10 * time.Millisecond {
		step(0.15, l/2)
	}
	if at > 300*time.Millisecond {
		t.Errorf("p reached %.2f %s after secondaries turned stale, want 0.9 within 300ms", w.tn.p, at)
	}
	for range 100 { // the lag lasts a second
		step(0.15, l/2)
	}
	// The lag ends: the fast estimate clears at once, the slow one keeps
	// the staleness bound up for a while, then lets it go.
	for range 20 { // 200 ms
		step(0, l/2)
	}
	if low, _ := w.tn.bounds(w.tv, w.tn.target); low < 0.5 || w.tn.p < 0.7 {
		t.Errorf("p = %.2f, low = %.2f 200 ms after the lag ended, want both still high (the slow estimate)", w.tn.p, low)
	}
	for range 300 { // 3 s
		step(0, l/2)
	}
	if low, _ := w.tn.bounds(w.tv, w.tn.target); low > 0 {
		t.Errorf("low = %.2f 3 s after the lag ended, want 0", low)
	}
	// Every QUORUM read now misses L: p falls to 0.1 or less within
	// 300 ms.
	for at = 0; at < time.Second && w.tn.p > 0.1; at += 10 * time.Millisecond {
		step(0, 2*l)
	}
	if at > 300*time.Millisecond {
		t.Errorf("p = %.2f %s after QUORUM reads turned slow, want at most 0.1 within 300ms", w.tn.p, at)
	}
}

// TestTunerControl checks the controller's hysteresis: p stays while it
// lies well inside the range, goes to the middle otherwise, keeps the
// exploration floor when latency allows, and goes to low when no p
// meets both targets.
func TestTunerControl(t *testing.T) {
	for _, tc := range []struct {
		p, low, high, want float64
	}{
		{0.5, 0, 1, 0.5},      // inside: stays
		{0.3, 0.2, 1, 0.6},    // too near low (margin 0.16): the middle
		{0.95, 0, 1, 0.5},     // too near high
		{0.9, 0, 0.25, 0.125}, // outside
		{0.01, 0, 1, 0.5},     // below the floor
		{0.5, 0, 0.06, 0.05},  // the middle below the floor: the floor
		{0.5, 0, 0.04, 0.02},  // the floor above high: the middle
		{0.02, 0, 0.04, 0.02}, // and it stays there
		{0.5, 0.8, 0.3, 0.8},  // infeasible: staleness wins
	} {
		if got := control(tc.p, tc.low, tc.high); !near(got, tc.want, 1e-9) {
			t.Errorf("control(%v, [%v, %v]) = %v, want %v", tc.p, tc.low, tc.high, got, tc.want)
		}
	}
}

// TestTuneValidate checks that a tuner target is checked and excludes
// fixed levels.
func TestTuneValidate(t *testing.T) {
	for _, p := range []Policy{
		{Tune: Tune{Latency: 0, Stale: 0.1}},
		{Tune: Tune{Latency: ms(5), Stale: 1.5}},
		{Tune: Tune{Latency: ms(5), Stale: 0.1}, Read: Fixed(Quorum)},
		{Read: Mix(2, One, Quorum)},
		{Delay: -ms(1)},
	} {
		if err := p.Validate(); err == nil {
			t.Errorf("Policy %+v validated", p)
		}
	}
	if err := (Policy{Tune: Tune{Latency: ms(5), Stale: 0.1}}).Validate(); err != nil {
		t.Errorf("a tuner target alone: %v", err)
	}
}
