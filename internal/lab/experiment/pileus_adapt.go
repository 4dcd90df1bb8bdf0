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
