// Package dcon is dConssandra's latency model (dConssandra 5-B): the
// cost of each replication step as a linear function of the writes it
// handles, learned online from the node's own timings with recent ones
// weighing more. It is pure: time comes in as arguments, so the
// simulator and a real node learn the same way from what they measure.
package dcon

import (
	"math"
	"time"
)

// Linear is a step's cost f(x) = A + B*x in nanoseconds for x writes
// (dConssandra 5-B, Eq. 1): A the fixed part (a round trip, an fsync), B
// the part per write.
type Linear struct{ A, B float64 }

// Cost returns f(x) as a duration.
func (l Linear) Cost(x int) time.Duration { return time.Duration(l.A + l.B*float64(x)) }

// Plus returns the cost of running both steps on the same writes.
func (l Linear) Plus(o Linear) Linear { return Linear{l.A + o.A, l.B + o.B} }

// Most returns the largest x, at most limit, with f(x) <= budget, or 0
// if not even one write fits (dConssandra 5-C, Alg. 2 lines 4, 10 and
// 18: "estimate the number of writes ... within t_P - C_P").
func (l Linear) Most(budget time.Duration, limit int) int {
	room := float64(budget) - l.A
	switch {
	case limit <= 0 || room < l.B || room < 0:
		return 0
	case l.B <= 0:
		return limit
	}
	return int(min(float64(limit), math.Floor(room/l.B)))
}

// DefaultHalfLife is how long it takes a sample's weight to halve. The
// paper sets "higher weights for recent records" without saying how,
// because "workloads usually do not drop or soar suddenly (observing in
// the granule of seconds)" (dConssandra 5): a weight that halves every 10
// seconds follows a change within tens of seconds and smooths the noise
// of single timings.
const DefaultHalfLife = 10 * time.Second

// WarmSamples is how many samples a Fit needs before its model is used:
// the paper's "warm-up time before estimation becomes effective"
// (dConssandra 2-C), whose length it does not give.
const WarmSamples = 8

// Fit learns a step's Linear by weighted least squares over its timed
// samples, each weighing 2^(-age/HalfLife). It keeps only the weighted
// sums, so a sample is discarded once added, as the paper's nodes discard
// their records after each fit (dConssandra 5-B). The zero value is
// ready, with DefaultHalfLife.
type Fit struct {
	HalfLife time.Duration

	n                    int
	last                 time.Duration
	s0, sx, sy, sxx, sxy float64
	b                    float64 // the last slope the samples identified, never negative
}

// Add records that the step took took for x writes at time now (the
// node's clock; never before an earlier sample's).
func (f *Fit) Add(now time.Duration, x int, took time.Duration) {
	half := f.HalfLife
	if half <= 0 {
		half = DefaultHalfLife
	}
	if f.n > 0 && now > f.last {
		decay := math.Exp2(-float64(now-f.last) / float64(half))
		f.s0 *= decay
		f.sx *= decay
		f.sy *= decay
		f.sxx *= decay
		f.sxy *= decay
	}
	f.last = max(f.last, now)
	fx, fy := float64(x), float64(took)
	f.n++
	f.s0++
	f.sx += fx
	f.sy += fy
	f.sxx += fx * fx
	f.sxy += fx * fy
	meanX, meanY := f.sx/f.s0, f.sy/f.s0
	if varX := f.sxx/f.s0 - meanX*meanX; varX > 1e-9*max(1, meanX*meanX) {
		f.b = max((f.sxy/f.s0-meanX*meanY)/varX, 0)
	}
}

// Samples returns how many samples were added.
func (f *Fit) Samples() int { return f.n }

// Model returns the fitted cost and whether the Fit is warm (at least
// WarmSamples samples). While the samples' sizes hardly vary, the slope
// cannot be told from the fixed part: the model keeps the last slope the
// samples did identify (0 at first) and fits the fixed part to the mean.
// Neither part is ever negative: a negative slope (larger batches
// measured faster, as noise can make them) counts as 0, a negative fixed
// part as 0 with the slope through the origin.
func (f *Fit) Model() (Linear, bool) {
	if f.n == 0 {
		return Linear{}, false
	}
	meanX, meanY := f.sx/f.s0, f.sy/f.s0
	b := f.b
	a := meanY - b*meanX
	if a < 0 {
		a, b = 0, f.sxy/f.sxx
	}
	return Linear{A: a, B: b}, f.n >= WarmSamples
}
