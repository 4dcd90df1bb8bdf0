package experiment

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// adaptation analyses each event's phase, as Adaptation describes: the
// schedule's own events, whose phases the spikes of spikes events do not
// cut short.
func adaptation(events []EventRecord, points []GetPoint, n int) []Adaptation {
	events = scheduled(events)
	var out []Adaptation
	for i, e := range events {
		end := math.Inf(1)
		if i+1 < len(events) {
			end = events[i+1].AtS
		}
		a := Adaptation{Event: e.Label, BestUtility: e.BestUtility, Best: e.Best}
		var phase []GetPoint
		for _, p := range points {
			if p.AtS >= e.AtS && p.AtS < end {
				phase = append(phase, p)
			}
		}
		a.GetsInPhase = len(phase)
		adapted := -1
		run := 0
		for j, p := range phase {
			if bestChoice(e, p) {
				run++
				if run >= n {
					adapted = j - n + 1
					break
				}
			} else {
				run = 0
			}
		}
		split := len(phase)
		if adapted >= 0 {
			a.Adapted = true
			a.GetsToAdapt = adapted
			a.SecondsToAdapt = phase[adapted].AtS - e.AtS
			split = adapted
		}
		a.UtilityBefore = meanUtility(phase[:split])
		a.UtilityAfter = meanUtility(phase[split:])
		out = append(out, a)
	}
	return out
}

func bestChoice(e EventRecord, p GetPoint) bool {
	if slices.Contains(e.Best, fmt.Sprintf("%d@%s", p.Target, p.Node)) {
		return true
	}
	for _, b := range e.Best {
		_, node, _ := strings.Cut(b, "@")
		if node == p.Node && p.Met > 0 && p.Utility >= e.BestUtility {
			return true
		}
	}
	return false
}

func meanUtility(ps []GetPoint) float64 {
	if len(ps) == 0 {
		return 0
	}
	var sum float64
	for _, p := range ps {
		sum += p.Utility
	}
	return sum / float64(len(ps))
}

// TimelineResult is Pileus's section of a run's result when the
// scenario has a schedule.
type TimelineResult struct {
	// Events are the scheduled changes as applied; Timeline is every Get
	// and Adaptation the analysis of each event (5.4), when the scenario
	// has a schedule.
	Events     []EventRecord `json:"events,omitempty"`
	Timeline   []GetPoint    `json:"timeline,omitempty"`
	Adaptation []Adaptation  `json:"adaptation,omitempty"`
}

// GetPoint is one Get of a timeline.
type GetPoint struct {
	AtS     float64 `json:"at_s"` // completion, since the workload started
	Utility float64 `json:"utility"`
	Target  int     `json:"target"` // subSLA targeted, from 1; 0 for fixed strategies
	Node    string  `json:"node"`   // site of the replica read
	Met     int     `json:"met"`    // subSLA met, from 1; 0 for none
	RTTMS   float64 `json:"rtt_ms"`
}

// Adaptation says how long a run took to adapt to one event (Pileus 5.4).
//
// The oracle knows the configured round trips after the event: a (subSLA,
// node) choice is attainable when the node is up and reachable, the
// round trip (with a slow node's service time, without the random spikes
// of a spikes event) is within the subSLA's latency, and the node provides the
// consistency: the primary always; any node for eventual; for the other
// guarantees the oracle counts only the primary, which is exact for the
// strong/eventual SLAs of 5.4. Best holds the attainable choices of
// highest utility, written "subSLA@site". A run has adapted at the first
// Get after the event that starts N consecutive Gets (Scenario.Adapt.Gets)
// choosing one of Best, all before the next event. A Get chooses a best
// (subSLA, node) when it goes to that node and either targets that
// subSLA or delivers its utility: Fig. 8 keeps the higher subSLA as the
// target when a lower one's replica ties with it in expected utility, so
// a Get may target strong consistency at a secondary and meet eventual.
type Adaptation struct {
	Event       string   `json:"event"`
	BestUtility float64  `json:"best_utility"`
	Best        []string `json:"best"`
	Adapted     bool     `json:"adapted"`
	// GetsToAdapt counts the Gets after the event before the adapted one;
	// SecondsToAdapt is the virtual time from the event to it.
	GetsToAdapt    int     `json:"gets_to_adapt"`
	SecondsToAdapt float64 `json:"seconds_to_adapt"`
	// UtilityBefore and UtilityAfter average the delivered utility over
	// the phase's Gets before and from the adapted Get.
	UtilityBefore float64 `json:"utility_before"`
	UtilityAfter  float64 `json:"utility_after"`
	GetsInPhase   int     `json:"gets_in_phase"`
}
