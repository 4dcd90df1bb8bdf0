package experiment

import (
	"math"
	"time"

	"github.com/cosla/cosla/internal/lab/driver"
)

// recorder accumulates one run's Gets into its RunResult.
type recorder struct {
	r       *RunResult
	latency time.Duration
	// utilitySq sums the squared utilities, for UtilityStdErr.
	utilitySq float64
}

func newRecorder(r *RunResult) *recorder { return &recorder{r: r} }

// get records one Get.
func (rec *recorder) get(op *driver.Op) {
	r := rec.r
	r.Gets++
	r.ExtraRequests += op.Extra
	rec.latency += op.RTT
	met, utility := metUtility(op)
	if met >= 0 {
		r.Met[met]++
		r.AvgUtility += utility
		rec.utilitySq += utility * utility
	} else {
		r.Unmet++
	}
}

// metUtility is the subSLA a Get met (-1 for none, or a failed Get) and
// the utility it delivered.
func metUtility(op *driver.Op) (met int, utility float64) {
	if op.Err != nil {
		return -1, op.Utility()
	}
	return op.Met, op.Utility()
}

// finish turns the sums into averages and fractions.
func (rec *recorder) finish() {
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
}
