package experiment

import (
	"math"
	"time"
)

// getOutcome is what a run records of one Get, in the simulator or on a
// cluster.
type getOutcome struct {
	// Met and Target are subSLA indexes from 0, or -1: none met, or a
	// fixed strategy that targets none.
	Met, Target int
	Utility     float64
	Site        string // site of the replica read
	RTT         time.Duration
	// Extra counts the requests beyond the first (a retry, a hedge).
	Extra int
}

// recorder accumulates one run's Gets into its RunResult.
type recorder struct {
	r        *RunResult
	timeline bool
	points   []GetPoint
	target   map[int]map[string]int // subSLA targeted -> site -> Gets
	latency  time.Duration
	// utilitySq sums the squared utilities, for UtilityStdErr.
	utilitySq float64
}

func newRecorder(r *RunResult, timeline bool) *recorder {
	return &recorder{r: r, timeline: timeline, target: map[int]map[string]int{}}
}

// get records one Get that completed atS seconds into the run.
func (rec *recorder) get(g getOutcome, atS float64) {
	r := rec.r
	r.Gets++
	r.ExtraRequests += g.Extra
	rec.latency += g.RTT
	if g.Target >= 0 {
		if rec.target[g.Target] == nil {
			rec.target[g.Target] = map[string]int{}
		}
		rec.target[g.Target][g.Site]++
	}
	if g.Met >= 0 {
		r.Met[g.Met]++
		r.AvgUtility += g.Utility
		rec.utilitySq += g.Utility * g.Utility
	} else {
		r.Unmet++
	}
	if rec.timeline {
		rec.points = append(rec.points, GetPoint{AtS: atS, Utility: g.Utility, Target: g.Target + 1,
			Node: g.Site, Met: g.Met + 1, RTTMS: ms(g.RTT)})
	}
}

// finish turns the sums into averages and fractions, fills the breakdown
// of a Pileus run (the table's replica sites, primary first) and the
// timeline's adaptation analysis.
func (rec *recorder) finish(pileus bool, sites []string, events []EventRecord, adaptGets int) {
	r := rec.r
	n := float64(r.Gets)
	r.AvgUtility /= n
	if r.Gets > 1 {
		variance := max(rec.utilitySq/n-r.AvgUtility*r.AvgUtility, 0) * n / (n - 1)
		r.UtilityStdErr = math.Sqrt(variance / n)
	}
	r.Unmet /= n
	for i := range r.Met {
		r.Met[i] /= n
	}
	r.AvgLatencyMS = ms(rec.latency) / n
	if pileus {
		for i := range r.Met {
			row := BreakdownRow{Target: i + 1, GetsPct: map[string]float64{}, MetPct: 100 * r.Met[i]}
			for _, site := range sites {
				row.GetsPct[site] = 100 * float64(rec.target[i][site]) / n
			}
			r.Breakdown = append(r.Breakdown, row)
		}
	}
	if rec.timeline {
		r.Events, r.Timeline = events, rec.points
		r.Adaptation = adaptation(events, rec.points, adaptGets)
	}
}
