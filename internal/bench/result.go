package bench

import (
	"fmt"
	"io"
	"strconv"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/cosla/cosla/internal/workload"
)

// PhaseName names a phase of a run.
type PhaseName string

// The phases of Run.
const (
	PhaseLoad PhaseName = "load"
	PhaseRun  PhaseName = "run"
)

// Stop says why a phase ended.
type Stop string

// The reasons a phase ends.
const (
	// StopComplete: every operation was issued and completed (the load's
	// RecordCount inserts, or the run's Options.Operations).
	StopComplete Stop = "complete"
	// StopDuration: Options.Duration passed first.
	StopDuration Stop = "duration"
	// StopCanceled: the caller's context was cancelled.
	StopCanceled Stop = "canceled"
)

// Result is what Run measured. It is a plain snapshot: safe to copy, encode
// as JSON and compare.
type Result struct {
	Seed    uint64 `json:"seed"`
	Clients int    `json:"clients"`
	// Workload is the effective workload, in properties-file form.
	Workload string `json:"workload"`
	// Load is nil when Options.Load was not set.
	Load *Phase `json:"load,omitempty"`
	Run  Phase  `json:"run"`
}

// Phase summarizes one phase.
type Phase struct {
	Name      PhaseName `json:"name"`
	Stop      Stop      `json:"stop"`
	ElapsedMS float64   `json:"elapsed_ms"`
	// Operations counts completed operations, failed ones included.
	// Operations that the driver cut short when it stopped (their store call
	// returned after the phase's context was done) are Aborted, not counted
	// here or as errors.
	Operations uint64 `json:"operations"`
	Errors     uint64 `json:"errors"`
	Aborted    uint64 `json:"aborted"`
	// ThroughputOpsPerS is successful operations per second of the phase.
	// Failed ones are left out so that a store that fails fast does not
	// look fast.
	ThroughputOpsPerS float64 `json:"throughput_ops_per_s"`
	// Kinds has one entry per operation kind that completed at least once,
	// in workload.Kind order.
	Kinds []KindStats `json:"kinds"`
}

// KindStats summarizes the operations of one kind.
type KindStats struct {
	Kind string `json:"kind"`
	// Operations counts completed operations of this kind, failed ones
	// included; Errors the failed ones.
	Operations uint64 `json:"operations"`
	Errors     uint64 `json:"errors"`
	// FirstError is the text of the first error of this kind, if any.
	FirstError string `json:"first_error,omitempty"`
	// LatencyMS is measured over the successful operations only, for the
	// same reason as Phase.ThroughputOpsPerS. It is zero when all failed.
	LatencyMS Latency `json:"latency_ms"`
}

// Latency holds latency percentiles in milliseconds. They come from an HDR
// histogram of microseconds with three significant digits (Tene,
// HdrHistogram): each is exact to 0.1%, and exact below 2.048ms.
type Latency struct {
	Count int64   `json:"count"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p99_9"`
	Max   float64 `json:"max"`
}

// histogramSignificantDigits is HDR's precision: 3 digits keep every value
// within 0.1% at about 200KB per histogram up to MaxLatency.
const histogramSignificantDigits = 3

func newHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(1, MaxLatency.Microseconds(), histogramSignificantDigits)
}

// recorder accumulates one kind's measurements in a phase. One histogram per
// kind shared under a lock, rather than one per client merged at the end,
// because a histogram is about 200KB and MaxClients is 4096; the lock is
// held for a few tens of nanoseconds per operation, well below the cost of
// a store round trip.
type recorder struct {
	mu         sync.Mutex
	latencyUS  *hdrhistogram.Histogram // successful operations only
	operations uint64
	errors     uint64
	firstError error
}

func (r *recorder) record(latency time.Duration, err error) {
	us := min(max(latency.Microseconds(), 0), MaxLatency.Microseconds())
	r.mu.Lock()
	defer r.mu.Unlock()
	r.operations++
	if err != nil {
		r.errors++
		if r.firstError == nil {
			r.firstError = err
		}
		return
	}
	// Cannot fail: us is within the histogram's range.
	_ = r.latencyUS.RecordValue(us)
}

func (p *phase) summary(elapsed time.Duration, stop Stop) Phase {
	completed, failed := p.completed.Load(), p.failed.Load()
	s := Phase{
		Name:              p.name,
		Stop:              stop,
		ElapsedMS:         milliseconds(elapsed),
		Operations:        completed,
		Errors:            failed,
		Aborted:           p.aborted.Load(),
		ThroughputOpsPerS: perSecond(completed-failed, elapsed),
	}
	for k := range p.kinds {
		r := &p.kinds[k]
		r.mu.Lock()
		if r.operations > 0 {
			ks := KindStats{
				Kind:       workload.Kind(k).String(),
				Operations: r.operations,
				Errors:     r.errors,
				LatencyMS:  latencyOf(r.latencyUS),
			}
			if r.firstError != nil {
				ks.FirstError = r.firstError.Error()
			}
			s.Kinds = append(s.Kinds, ks)
		}
		r.mu.Unlock()
	}
	return s
}

func latencyOf(h *hdrhistogram.Histogram) Latency {
	ms := func(us int64) float64 { return float64(us) / 1000 }
	return Latency{
		Count: h.TotalCount(),
		Mean:  h.Mean() / 1000,
		P50:   ms(h.ValueAtQuantile(50)),
		P90:   ms(h.ValueAtQuantile(90)),
		P95:   ms(h.ValueAtQuantile(95)),
		P99:   ms(h.ValueAtQuantile(99)),
		P999:  ms(h.ValueAtQuantile(99.9)),
		Max:   ms(h.Max()),
	}
}

func milliseconds(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func perSecond(n uint64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// WriteText writes r as aligned text: per phase a summary line and a table
// with one row per operation kind, latencies in milliseconds.
func (r Result) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "seed %d, %d clients\n", r.Seed, r.Clients)
	phases := []Phase{r.Run}
	if r.Load != nil {
		phases = []Phase{*r.Load, r.Run}
	}
	for _, p := range phases {
		fmt.Fprintf(tw, "\n%s: %d ops in %.3fs (stop: %s), %.1f ops/s, %d errors, %d aborted\n",
			p.Name, p.Operations, p.ElapsedMS/1000, p.Stop, p.ThroughputOpsPerS, p.Errors, p.Aborted)
		fmt.Fprint(tw, "op\tops\terrors\tmean_ms\tp50_ms\tp90_ms\tp95_ms\tp99_ms\tp99.9_ms\tmax_ms\t\n")
		for _, k := range p.Kinds {
			l := k.LatencyMS
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", k.Kind, k.Operations, k.Errors,
				ms(l.Mean), ms(l.P50), ms(l.P90), ms(l.P95), ms(l.P99), ms(l.P999), ms(l.Max))
		}
		for _, k := range p.Kinds {
			if k.FirstError != "" {
				fmt.Fprintf(tw, "first %s error: %s\n", k.Kind, k.FirstError)
			}
		}
	}
	return tw.Flush()
}

func ms(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
