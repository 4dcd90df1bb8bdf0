package wan

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// TestOneWayDistribution checks the documented moments and lower bound of
// the delay distribution on a fixed seed, so the test is deterministic.
func TestOneWayDistribution(t *testing.T) {
	const seed, n = 42, 20000
	for _, tc := range []struct {
		latency, jitter time.Duration
	}{
		{latency: 70 * time.Millisecond, jitter: 0},
		{latency: 70 * time.Millisecond, jitter: time.Millisecond},
		{latency: 20 * time.Millisecond, jitter: 5 * time.Millisecond},
	} {
		r := rand.New(rand.NewPCG(seed, 0))
		var sum, sumSq float64
		lowest := time.Duration(math.MaxInt64)
		for range n {
			d := oneWay(tc.latency, tc.jitter, r)
			lowest = min(lowest, d)
			sum += float64(d)
			sumSq += float64(d) * float64(d)
		}
		mean := sum / n
		std := math.Sqrt(max(sumSq/n-mean*mean, 0))
		if lowest < tc.latency-tc.jitter {
			t.Errorf("%v±%v: draw %v below latency-jitter", tc.latency, tc.jitter, lowest)
		}
		if math.Abs(mean-float64(tc.latency)) > 0.02*float64(tc.latency) {
			t.Errorf("%v±%v: mean %v, want within 2%% of latency", tc.latency, tc.jitter, time.Duration(mean))
		}
		if math.Abs(std-float64(tc.jitter)) > 0.05*float64(tc.jitter) {
			t.Errorf("%v±%v: standard deviation %v, want within 5%% of jitter", tc.latency, tc.jitter, time.Duration(std))
		}
	}
}

func TestOneWayClampsAtZero(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 0))
	for range 10000 {
		if d := oneWay(time.Millisecond, 10*time.Millisecond, r); d < 0 {
			t.Fatalf("negative delay %v", d)
		}
	}
}

// TestSchedule checks release times: read time plus delay, never before
// the previous chunk's release.
func TestSchedule(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := time.Millisecond
	var s schedule
	for i, step := range []struct {
		readAt, delay, want time.Duration // offsets from t0
	}{
		{readAt: 0, delay: 10 * ms, want: 10 * ms},
		{readAt: 1 * ms, delay: 2 * ms, want: 10 * ms},  // a short draw waits for the long one ahead
		{readAt: 2 * ms, delay: 9 * ms, want: 11 * ms},  // later than the previous release
		{readAt: 20 * ms, delay: 0, want: 20 * ms},      // idle link: no residue of the past
		{readAt: 20 * ms, delay: 5 * ms, want: 25 * ms}, // same read time, but the previous chunk is gone
		{readAt: 30 * ms, delay: 5 * ms, want: 35 * ms},
		{readAt: 30*ms + 200*time.Microsecond, delay: 9 * ms, want: 35*ms + 200*time.Microsecond}, // same burst
		{readAt: 32 * ms, delay: 9 * ms, want: 41 * ms},                                           // a new burst: a new draw
	} {
		got := s.next(t0.Add(step.readAt), step.delay)
		if want := t0.Add(step.want); !got.Equal(want) {
			t.Errorf("step %d: release at +%v, want +%v", i, got.Sub(t0), step.want)
		}
	}
}
