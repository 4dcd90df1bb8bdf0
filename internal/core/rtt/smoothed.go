// Package rtt estimates round trips from the ones a node measures. It
// has two estimators, because their users ask two different questions:
//
//   - Window keeps every sample of a recent window, for the client's
//     monitor (Pileus 4.5): PNodeLat, the chance that a node answers
//     within a subSLA's latency, is a fraction of the distribution, which
//     one smoothed figure cannot give; and the window forgets by age, so
//     that a node's estimate follows a changed link once the window has
//     passed.
//   - Smoothed is one figure per peer, an exponentially weighted moving
//     average (RFC 6298's SRTT), for those that only rank peers or report
//     the delay of a link: a replica's replication peers, and the
//     nearness by which Karma's coordinators and caches choose a ring.
//
// Both are pure: the caller measures with its Env's monotonic clock and
// hands the samples in.
package rtt

import "time"

// Smoothed is an exponentially weighted moving average of round trips
// (RFC 6298 2.2-2.3): the first sample, or a seed, sets it, and each
// later sample moves it 1/gain of the way to that sample. The zero
// value is not usable: make one with NewSmoothed or Seeded.
type Smoothed struct {
	gain    time.Duration
	value   time.Duration
	set     bool
	samples int64
}

// NewSmoothed returns an estimate with no value yet that weighs each
// sample after the first 1/gain.
func NewSmoothed(gain int) Smoothed { return Smoothed{gain: time.Duration(gain)} }

// Seeded returns an estimate that starts from seed (a round trip known
// beforehand, such as a topology's) and weighs each sample 1/gain.
func Seeded(gain int, seed time.Duration) Smoothed {
	return Smoothed{gain: time.Duration(gain), value: seed, set: true}
}

// Add folds one measured round trip in.
func (s *Smoothed) Add(sample time.Duration) {
	if s.set {
		s.value += (sample - s.value) / s.gain
	} else {
		s.value, s.set = sample, true
	}
	s.samples++
}

// Value returns the estimate, and false while it has neither a seed nor
// a sample.
func (s Smoothed) Value() (time.Duration, bool) { return s.value, s.set }

// Samples counts the samples added (a seed is none).
func (s Smoothed) Samples() int64 { return s.samples }
