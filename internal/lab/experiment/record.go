package experiment

import (
	"math"
	"time"

	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/lab/driver"
)

// recorder accumulates one run's Gets into its RunResult.
type recorder struct {
	r        *RunResult
	timeline bool
	points   []GetPoint
	latency  time.Duration
	// utilitySq sums the squared utilities, for UtilityStdErr.
	utilitySq float64
}

func newRecorder(r *RunResult, timeline bool) *recorder {
	return &recorder{r: r, timeline: timeline}
}

// get records one Get; its completion is its time in the timeline.
func (rec *recorder) get(op *driver.Op) {
	r := rec.r
	r.Gets++
	r.ExtraRequests += op.Extra
	rec.latency += op.RTT
	site := siteOf(wire.NodeID(op.Node))
	met, utility := op.Met, op.Utility()
	if op.Err != nil {
		met = -1
	}
	if met >= 0 {
		r.Met[met]++
		r.AvgUtility += utility
		rec.utilitySq += utility * utility
	} else {
		r.Unmet++
	}
	if rec.timeline {
		rec.points = append(rec.points, GetPoint{AtS: op.End.Seconds(), Utility: utility, Target: op.Target + 1,
			Node: site, Met: met + 1, RTTMS: ms(op.RTT)})
	}
}

// finish turns the sums into averages and fractions and fills the
// timeline's adaptation analysis.
func (rec *recorder) finish(events []EventRecord, adaptGets int) {
	r := rec.r
	if r.Gets == 0 {
		return
	}
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
	if rec.timeline {
		r.Events, r.Timeline = events, rec.points
		r.Adaptation = adaptation(events, rec.points, adaptGets)
	}
}
