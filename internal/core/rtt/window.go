package rtt

import (
	"math"
	"slices"
	"time"
)

// Window is the sliding window of one node's round trips (Pileus 4.5):
// samples older than the window, or beyond its capacity, are forgotten,
// so that the estimate follows changing conditions. The zero value holds
// no sample and takes none: make one with NewWindow.
type Window struct {
	// ring holds samples in arrival order; head is the oldest.
	ring       []sample
	head, size int
	// sorted holds the same latencies in ascending order, so Within is a
	// binary search.
	sorted []time.Duration
	sum    time.Duration
}

type sample struct {
	at  time.Time
	rtt time.Duration
}

// NewWindow returns an empty window of at most maxSamples samples.
func NewWindow(maxSamples int) Window {
	return Window{ring: make([]sample, maxSamples), sorted: make([]time.Duration, 0, maxSamples)}
}

// Add adds a round trip measured at at, forgetting the oldest sample if
// the window is full.
func (w *Window) Add(at time.Time, rtt time.Duration) {
	if w.size == len(w.ring) {
		w.dropOldest()
	}
	w.ring[(w.head+w.size)%len(w.ring)] = sample{at, rtt}
	w.size++
	i, _ := slices.BinarySearch(w.sorted, rtt)
	w.sorted = slices.Insert(w.sorted, i, rtt)
	w.sum += rtt
}

func (w *Window) dropOldest() {
	old := w.ring[w.head].rtt
	w.head = (w.head + 1) % len(w.ring)
	w.size--
	i, _ := slices.BinarySearch(w.sorted, old)
	w.sorted = slices.Delete(w.sorted, i, i+1)
	w.sum -= old
}

// Expire forgets samples taken before cutoff, keeping at least the newest
// one so that a node that is rarely contacted is not forgotten entirely.
func (w *Window) Expire(cutoff time.Time) {
	for w.size > 1 && w.ring[w.head].at.Before(cutoff) {
		w.dropOldest()
	}
}

// Within is PNodeLat (Pileus 4.5): the fraction of samples no larger
// than latency. With no samples it is 1: an unmeasured node is worth
// trying, and the reply measures it (the paper leaves this case open).
func (w *Window) Within(latency time.Duration) float64 {
	if w.size == 0 {
		return 1
	}
	i, found := slices.BinarySearch(w.sorted, latency)
	for found && i < len(w.sorted) && w.sorted[i] == latency {
		i++
	}
	return float64(i) / float64(w.size)
}

// Mean is the average round trip; zero when unmeasured.
func (w *Window) Mean() time.Duration {
	if w.size == 0 {
		return 0
	}
	return w.sum / time.Duration(w.size)
}

// Distance orders nodes for the "closest" choice of Pileus Fig. 8: the
// mean round trip, with unmeasured nodes farthest of all, so that a node
// known to be near is preferred to one the first probes have not yet
// reached.
func (w *Window) Distance() time.Duration {
	if w.size == 0 {
		return math.MaxInt64
	}
	return w.Mean()
}

// Len counts the samples in the window.
func (w *Window) Len() int { return w.size }
