package clientcore

import (
	"math"
	"slices"
	"time"

	"github.com/cosla/cosla/internal/hlc"
	"github.com/cosla/cosla/internal/wire"
)

// Monitor (Pileus 4.5). Every round trip to a node adds a latency sample;
// samples older than the window, or beyond the sample cap, are forgotten so
// the estimates follow changing conditions. High timestamps are kept per
// (node, tablet) replica and only ever increase.

// rttStats is the sliding window of one node's round-trip times.
type rttStats struct {
	// ring holds samples in arrival order; head is the oldest.
	ring       []rttSample
	head, size int
	// sorted holds the same latencies in ascending order, so PNodeLat is a
	// binary search.
	sorted []time.Duration
	sum    time.Duration
}

type rttSample struct {
	at  time.Time
	rtt time.Duration
}

func newRTTStats(maxSamples int) *rttStats {
	return &rttStats{ring: make([]rttSample, maxSamples), sorted: make([]time.Duration, 0, maxSamples)}
}

func (s *rttStats) add(at time.Time, rtt time.Duration) {
	if s.size == len(s.ring) {
		s.dropOldest()
	}
	s.ring[(s.head+s.size)%len(s.ring)] = rttSample{at, rtt}
	s.size++
	i, _ := slices.BinarySearch(s.sorted, rtt)
	s.sorted = slices.Insert(s.sorted, i, rtt)
	s.sum += rtt
}

func (s *rttStats) dropOldest() {
	old := s.ring[s.head].rtt
	s.head = (s.head + 1) % len(s.ring)
	s.size--
	i, _ := slices.BinarySearch(s.sorted, old)
	s.sorted = slices.Delete(s.sorted, i, i+1)
	s.sum -= old
}

// expire forgets samples taken before cutoff, keeping at least the newest
// one so that a node that is rarely contacted is not forgotten entirely.
func (s *rttStats) expire(cutoff time.Time) {
	for s.size > 1 && s.ring[s.head].at.Before(cutoff) {
		s.dropOldest()
	}
}

// pWithin is PNodeLat: the fraction of samples no larger than latency. With
// no samples it is 1: an unmeasured node is worth trying, and the reply
// measures it (the paper leaves this case open).
func (s *rttStats) pWithin(latency time.Duration) float64 {
	if s.size == 0 {
		return 1
	}
	i, found := slices.BinarySearch(s.sorted, latency)
	for found && i < len(s.sorted) && s.sorted[i] == latency {
		i++
	}
	return float64(i) / float64(s.size)
}

// mean is the node's average round-trip time; zero when unmeasured.
func (s *rttStats) mean() time.Duration {
	if s.size == 0 {
		return 0
	}
	return s.sum / time.Duration(s.size)
}

// distance orders nodes for the "closest" choice of Pileus Fig. 8 and the
// Closest strategy: the mean round-trip time, with unmeasured nodes
// farthest of all, so that a node known to be near is preferred to one
// the first probes have not yet reached.
func (s *rttStats) distance() time.Duration {
	if s.size == 0 {
		return math.MaxInt64
	}
	return s.mean()
}

// replicaState is what the client knows of one replica of one tablet.
type replicaState struct {
	id      wire.NodeID
	primary bool
	rtt     *rttStats // shared by all tablets on the node
	// high is the largest high timestamp the node has reported for this
	// tablet (Pileus 4.5).
	high hlc.Timestamp
	// lastContact is when the client last heard from this replica; the
	// monitor probes replicas it has not heard from for a while.
	lastContact time.Time
	probing     bool
}

// observeHigh records a high timestamp reported by the replica.
func (r *replicaState) observeHigh(ts hlc.Timestamp, at time.Time) {
	r.high = hlc.Max(r.high, ts)
	r.lastContact = at
}

// RTTEstimate is the monitor's view of one node's round-trip time.
type RTTEstimate struct {
	Node    wire.NodeID
	Mean    time.Duration
	Samples int
}

// RTTEstimates returns the monitor's round-trip estimate of every node it
// has measured, in node order.
func (c *Client) RTTEstimates() []RTTEstimate {
	out := make([]RTTEstimate, 0, len(c.rtt))
	for _, id := range sortedKeys(c.rtt) {
		s := c.rtt[id]
		out = append(out, RTTEstimate{Node: id, Mean: s.mean(), Samples: s.size})
	}
	return out
}
