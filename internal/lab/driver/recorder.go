package driver

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/cosla/cosla/internal/lab/measure"
)

// MaxLatency is the largest latency the histograms hold; longer steps are
// recorded as MaxLatency.
const MaxLatency = time.Hour

// Recorder records a run: statistics per group and step label, every op
// in the measure trace format when a trace is asked for, and every op to
// OnOp. It is used on the driver's loop only.
type Recorder struct {
	// Run names the run in the trace (measure.Op.Run). RunOf, if set,
	// names the run of each group's ops instead (measure analyses each run
	// as an independent history: Wada's thread placement measures each
	// read option in a run of its own).
	Run   string
	RunOf func(g *Group) string
	// OriginUS is the trace clock's reading, in microseconds, when the
	// runtime's clock reads zero: 0 in the simulator (traces in virtual
	// time since the simulation began), the Unix time of the loop's origin
	// on a live run (see package measure/run, "Clocks").
	OriginUS int64
	// Trace, if set, receives every op as one JSONL line; with FlushEach
	// each line is flushed as it is written, so that an interrupted run
	// loses nothing it did.
	Trace     io.Writer
	FlushEach bool
	// Keep keeps every op's trace line in memory, for Ops.
	Keep bool
	// OnOp, if set, sees every op that completed, warmup included.
	OnOp func(g *Group, op *Op)

	jw       *measure.JSONLWriter
	traceErr error
	ops      []measure.Op
	runUS    int64 // the trace clock at the run's start
	warmup   time.Duration
	groups   []*Group
	byGroup  map[*Group]*groupRecord
}

type groupRecord struct {
	// byLabel holds the steps' statistics, byOp those of the ops with a
	// label of their own.
	byLabel map[string]*stat
	byOp    map[string]*stat
	last    time.Duration // end of the last recorded step
	shed    int64
	aborted int64
	ops     int64
}

type stat struct {
	latencyUS  *hdrhistogram.Histogram // successful steps only
	count      int64
	errors     int64
	firstError error
}

// histogramDigits is the histograms' precision: three significant digits
// keep every value within 0.1%.
const histogramDigits = 3

func (r *Recorder) start(groups []*Group, warmup, origin time.Duration) {
	r.groups, r.warmup = groups, warmup
	r.runUS = r.OriginUS + origin.Microseconds()
	r.byGroup = map[*Group]*groupRecord{}
	for _, g := range groups {
		r.byGroup[g] = &groupRecord{byLabel: map[string]*stat{}, byOp: map[string]*stat{}}
	}
	if r.Trace != nil && r.jw == nil {
		r.jw = measure.NewJSONLWriter(r.Trace)
	}
}

// op records an op; recorded says its step started after the warmup.
func (r *Recorder) op(g *Group, op *Op, recorded bool) {
	r.byGroup[g].ops++
	if op.Label != "" && recorded {
		record(r.byGroup[g].byOp, op.StatsLabel(), op.Latency(), op.Err)
	}
	if r.jw != nil || r.Keep {
		run := r.Run
		if r.RunOf != nil {
			run = r.RunOf(g)
		}
		t := op.TraceOp(run, r.runUS)
		if r.Keep {
			r.ops = append(r.ops, t)
		}
		if r.jw != nil && r.traceErr == nil {
			r.traceErr = r.jw.Write(t)
			if r.traceErr == nil && r.FlushEach {
				r.traceErr = r.jw.Flush()
			}
		}
	}
	if r.OnOp != nil {
		r.OnOp(g, op)
	}
}

func (r *Recorder) step(g *Group, label string, latency, end time.Duration, err error, recorded bool) {
	if !recorded {
		return
	}
	gr := r.byGroup[g]
	gr.last = max(gr.last, end)
	record(gr.byLabel, label, latency, err)
}

// record adds a step, or an op with a label of its own, to its label's
// statistics.
func record(byLabel map[string]*stat, label string, latency time.Duration, err error) {
	s, ok := byLabel[label]
	if !ok {
		s = &stat{latencyUS: hdrhistogram.New(1, MaxLatency.Microseconds(), histogramDigits)}
		byLabel[label] = s
	}
	s.count++
	if err != nil {
		s.errors++
		if s.firstError == nil {
			s.firstError = err
		}
		return
	}
	// Cannot fail: the value is within the histogram's range.
	_ = s.latencyUS.RecordValue(min(max(latency.Microseconds(), 0), MaxLatency.Microseconds()))
}

func (r *Recorder) shed(g *Group)  { r.byGroup[g].shed++ }
func (r *Recorder) abort(g *Group) { r.byGroup[g].aborted++ }

// Flush writes out the trace's buffered lines and returns the first error
// writing the trace.
func (r *Recorder) Flush() error {
	if r.jw != nil && r.traceErr == nil {
		r.traceErr = r.jw.Flush()
	}
	return r.traceErr
}

// Ops returns the trace lines kept (Keep), in order of completion.
func (r *Recorder) Ops() []measure.Op { return r.ops }

// Stats summarizes the steps of one label of one group.
type Stats struct {
	Group string `json:"group"`
	// Op is the step label: an op kind (get, put, rtw), a YCSB operation
	// (read, update, insert, scan, read-modify-write) or a dConssandra
	// group; or "STEP/LABEL" for the ops with a label of their own within
	// their steps (Op.StatsLabel), such as group/read.
	Op string `json:"op"`
	// Count counts the steps recorded, failed ones included; FailureRate
	// is the failed fraction.
	Count       int64   `json:"count"`
	Errors      int64   `json:"errors"`
	FailureRate float64 `json:"failure_rate"`
	// ThroughputOpsPerS is successful steps per second of the measured
	// window: from the warmup's end to the last recorded step's end in the
	// group. Failed steps are left out so that a store that fails fast
	// does not look fast.
	ThroughputOpsPerS float64 `json:"throughput_ops_per_s"`
	// LatencyMS is over the successful steps only.
	LatencyMS  Latency `json:"latency_ms"`
	FirstError string  `json:"first_error,omitempty"`
}

// Latency holds latency percentiles in milliseconds, from an HDR
// histogram of microseconds with three significant digits (Tene,
// HdrHistogram): each is exact to 0.1%.
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

// GroupStats is what a group did in all.
type GroupStats struct {
	Group string `json:"group"`
	// Ops counts the ops completed (warmup included); Steps the steps
	// recorded, failed ones included.
	Ops   int64 `json:"ops"`
	Steps int64 `json:"steps"`
	// Shed counts open-loop arrivals that found every slot busy; Aborted
	// the ops cut short by the run's end.
	Shed    int64 `json:"shed,omitempty"`
	Aborted int64 `json:"aborted,omitempty"`
	// ElapsedS is the measured window; ThroughputOpsPerS the successful
	// steps per second of it, over every label.
	ElapsedS          float64 `json:"elapsed_s"`
	ThroughputOpsPerS float64 `json:"throughput_ops_per_s"`
}

// Stats returns the statistics per group (in the spec's order) and step
// label, then op label (each in alphabetical order).
func (r *Recorder) Stats() []Stats {
	var out []Stats
	for _, g := range r.groups {
		gr := r.byGroup[g]
		elapsed := r.window(gr)
		for _, label := range slices.Concat(slices.Sorted(maps.Keys(gr.byLabel)), slices.Sorted(maps.Keys(gr.byOp))) {
			s, ok := gr.byLabel[label]
			if !ok {
				s = gr.byOp[label]
			}
			st := Stats{Group: g.Name, Op: label, Count: s.count, Errors: s.errors,
				ThroughputOpsPerS: perSecond(s.count-s.errors, elapsed), LatencyMS: LatencyOf(s.latencyUS)}
			if s.count > 0 {
				st.FailureRate = float64(s.errors) / float64(s.count)
			}
			if s.firstError != nil {
				st.FirstError = s.firstError.Error()
			}
			out = append(out, st)
		}
	}
	return out
}

// Groups returns each group's totals, in the spec's order.
func (r *Recorder) Groups() []GroupStats {
	var out []GroupStats
	for _, g := range r.groups {
		gr := r.byGroup[g]
		gs := GroupStats{Group: g.Name, Ops: gr.ops, Shed: gr.shed, Aborted: gr.aborted}
		elapsed := r.window(gr)
		gs.ElapsedS = elapsed.Seconds()
		var ok int64
		for _, s := range gr.byLabel {
			gs.Steps += s.count
			ok += s.count - s.errors
		}
		gs.ThroughputOpsPerS = perSecond(ok, elapsed)
		out = append(out, gs)
	}
	return out
}

func (r *Recorder) window(gr *groupRecord) time.Duration { return max(gr.last-r.warmup, 0) }

// Quantile is a point of a latency distribution: a fraction Q of the
// steps took at most MS milliseconds.
type Quantile struct {
	Q  float64 `json:"q"`
	MS float64 `json:"ms"`
}

// cdfQuantiles are where LatencyCDF reads the distribution, in percent:
// the body in tenths, the tail in finer steps, the minimum and maximum.
var cdfQuantiles = []float64{0, 1, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 97.5, 99, 99.5, 99.9, 99.99, 100}

// LatencyCDF returns the distribution of the successful steps' latencies
// of one step label of the group of that name, as the histogram holds it
// (three significant digits): a point at each quantile of cdfQuantiles,
// from the minimum (Q 0) to the maximum (Q 1). It is nil when the group
// has no such successful step.
func (r *Recorder) LatencyCDF(group, label string) []Quantile {
	for _, g := range r.groups {
		if g.Name != group {
			continue
		}
		s, ok := r.byGroup[g].byLabel[label]
		if !ok {
			s, ok = r.byGroup[g].byOp[label]
		}
		if !ok || s.latencyUS.TotalCount() == 0 {
			return nil
		}
		out := make([]Quantile, len(cdfQuantiles))
		for i, q := range cdfQuantiles {
			out[i] = Quantile{Q: q / 100, MS: float64(s.latencyUS.ValueAtQuantile(q)) / 1000}
		}
		return out
	}
	return nil
}

// LatencyOf summarizes a histogram of latencies in microseconds as a
// Latency in milliseconds; a histogram with no value gives the zero Latency.
func LatencyOf(h *hdrhistogram.Histogram) Latency {
	ms := func(us int64) float64 { return float64(us) / 1000 }
	if h.TotalCount() == 0 {
		return Latency{}
	}
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

func perSecond(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// String renders a stats row for logs.
func (s Stats) String() string {
	return fmt.Sprintf("%s %s: %d ops, %d errors, %.1f ops/s, p50 %.3f ms, p99 %.3f ms",
		s.Group, s.Op, s.Count, s.Errors, s.ThroughputOpsPerS, s.LatencyMS.P50, s.LatencyMS.P99)
}
