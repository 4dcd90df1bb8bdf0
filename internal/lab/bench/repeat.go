package bench

import (
	"slices"

	"github.com/cosla/cosla/internal/lab/driver"
)

// Range is the least and greatest value of a figure over a cell's
// repeats.
type Range struct {
	Min float64 `json:"min"`
	Max float64 `json:"max"`
}

// Spread is the range, over the repeats a cell's medians are taken from
// (Summarize), of the figures its row shows: throughput, and the p50 and
// p99 latency of each operation kind in milliseconds.
type Spread struct {
	ThroughputOpsPerS Range            `json:"throughput_ops_per_s"`
	P50               map[string]Range `json:"p50_ms"`
	P99               map[string]Range `json:"p99_ms"`
}

// Summarize returns the summary of a cell's repeats, in the order they
// ran, as one Result, and the range of its main figures. The figures
// that say how fast the store was are medians over the repeats whose run
// phase ended at its bound (StopComplete or StopDuration), or over all
// of them when none did: the throughput, every latency percentile, mean
// and maximum of each operation kind, its latency distribution quantile
// by quantile, and the CPU. The counts (operations, errors, aborted, a
// kind's latency count) and the elapsed time are totals over every
// repeat, so that no failure is hidden; the first error of a kind is the
// first repeat's that had one. The load phase and the run phase's stop
// are the first repeat's; CPU.ClientBound and CPU.Shared are set when any
// repeat's was.
func Summarize(repeats []Result) (Result, *Spread) {
	if len(repeats) == 0 {
		return Result{}, nil
	}
	used := slices.DeleteFunc(slices.Clone(repeats), func(r Result) bool {
		return r.Run.Stop != StopComplete && r.Run.Stop != StopDuration
	})
	if len(used) == 0 {
		used = repeats
	}
	first := repeats[0]
	sum := Result{Setup: first.Setup, Seed: first.Seed, Clients: first.Clients, Workload: first.Workload, Load: first.Load}
	sum.Run = Phase{Name: first.Run.Name, Stop: first.Run.Stop}
	for _, r := range repeats {
		sum.Run.ElapsedMS += r.Run.ElapsedMS
		sum.Run.Operations += r.Run.Operations
		sum.Run.Errors += r.Run.Errors
		sum.Run.Aborted += r.Run.Aborted
	}
	throughput := figures(used, func(r Result) (float64, bool) { return r.Run.ThroughputOpsPerS, true })
	sum.Run.ThroughputOpsPerS = median(throughput)
	spread := &Spread{ThroughputOpsPerS: rangeOf(throughput), P50: map[string]Range{}, P99: map[string]Range{}}
	for _, kind := range kindsOf(repeats) {
		k := summarizeKind(kind, repeats, used)
		sum.Run.Kinds = append(sum.Run.Kinds, k)
		if k.LatencyMS.Count > 0 {
			spread.P50[kind] = rangeOf(figures(used, latencyFigure(kind, func(l driver.Latency) float64 { return l.P50 })))
			spread.P99[kind] = rangeOf(figures(used, latencyFigure(kind, func(l driver.Latency) float64 { return l.P99 })))
		}
	}
	sum.Run.CPU = summarizeCPU(repeats, used)
	return sum, spread
}

// kindsOf lists the operation kinds of the repeats' run phases, in
// workload.Kind order.
func kindsOf(repeats []Result) []string {
	var kinds []string
	for _, r := range repeats {
		for _, k := range r.Run.Kinds {
			if !slices.Contains(kinds, k.Kind) {
				kinds = append(kinds, k.Kind)
			}
		}
	}
	slices.SortStableFunc(kinds, func(a, b string) int { return order(a) - order(b) })
	return kinds
}

// kindOf returns the statistics of one kind of a run phase.
func kindOf(p Phase, kind string) (KindStats, bool) {
	i := slices.IndexFunc(p.Kinds, func(k KindStats) bool { return k.Kind == kind })
	if i < 0 {
		return KindStats{}, false
	}
	return p.Kinds[i], true
}

// summarizeKind is Summarize for one operation kind: counts over every
// repeat, latencies the medians over the used repeats that had a
// successful operation of the kind.
func summarizeKind(kind string, repeats, used []Result) KindStats {
	out := KindStats{Kind: kind}
	for _, r := range repeats {
		if k, ok := kindOf(r.Run, kind); ok {
			out.Operations += k.Operations
			out.Errors += k.Errors
			if out.FirstError == "" {
				out.FirstError = k.FirstError
			}
		}
	}
	var latencies []driver.Latency
	var cdfs [][]driver.Quantile
	for _, r := range used {
		if k, ok := kindOf(r.Run, kind); ok && k.LatencyMS.Count > 0 {
			latencies = append(latencies, k.LatencyMS)
			cdfs = append(cdfs, k.LatencyCDF)
		}
	}
	if len(latencies) == 0 {
		return out
	}
	for _, l := range latencies {
		out.LatencyMS.Count += l.Count
	}
	out.LatencyMS.Mean = medianOf(latencies, func(l driver.Latency) float64 { return l.Mean })
	out.LatencyMS.P50 = medianOf(latencies, func(l driver.Latency) float64 { return l.P50 })
	out.LatencyMS.P90 = medianOf(latencies, func(l driver.Latency) float64 { return l.P90 })
	out.LatencyMS.P95 = medianOf(latencies, func(l driver.Latency) float64 { return l.P95 })
	out.LatencyMS.P99 = medianOf(latencies, func(l driver.Latency) float64 { return l.P99 })
	out.LatencyMS.P999 = medianOf(latencies, func(l driver.Latency) float64 { return l.P999 })
	out.LatencyMS.Max = medianOf(latencies, func(l driver.Latency) float64 { return l.Max })
	out.LatencyCDF = medianCDF(cdfs)
	return out
}

// medianCDF is the distribution whose every quantile is the median of
// the distributions' at that quantile (they are read at the same
// quantiles, driver.Recorder.LatencyCDF): a monotone distribution, since
// each is. A distribution read at other quantiles is left out.
func medianCDF(cdfs [][]driver.Quantile) []driver.Quantile {
	if len(cdfs) == 0 || len(cdfs[0]) == 0 {
		return nil
	}
	ref := cdfs[0]
	sameQ := func(c []driver.Quantile) bool {
		return len(c) == len(ref) && slices.EqualFunc(c, ref, func(a, b driver.Quantile) bool { return a.Q == b.Q })
	}
	out := make([]driver.Quantile, len(ref))
	for i, q := range ref {
		var vs []float64
		for _, c := range cdfs {
			if sameQ(c) {
				vs = append(vs, c[i].MS)
			}
		}
		out[i] = driver.Quantile{Q: q.Q, MS: median(vs)}
	}
	return out
}

// summarizeCPU is Summarize's CPU: the medians over the used repeats
// that measured it, ClientBound if any repeat's was; nil when none
// measured it.
func summarizeCPU(repeats, used []Result) *CPU {
	var cpus []CPU
	for _, r := range used {
		if r.Run.CPU != nil {
			cpus = append(cpus, *r.Run.CPU)
		}
	}
	if len(cpus) == 0 {
		return nil
	}
	out := &CPU{Cores: cpus[0].Cores, Client: medianOf(cpus, func(c CPU) float64 { return c.Client }),
		Machine: medianOf(cpus, func(c CPU) float64 { return c.Machine }), Other: medianOf(cpus, func(c CPU) float64 { return c.Other })}
	if stores := slices.DeleteFunc(slices.Clone(cpus), func(c CPU) bool { return c.StoreProcesses == 0 }); len(stores) > 0 {
		out.Store, out.StoreProcesses = medianOf(stores, func(c CPU) float64 { return c.Store }), stores[0].StoreProcesses
	}
	out.ClientBound = countRepeats(repeats, func(c CPU) bool { return c.ClientBound }) > 0
	out.Shared = countRepeats(repeats, func(c CPU) bool { return c.Shared }) > 0
	return out
}

// countRepeats counts the repeats whose CPU was measured and has flag.
func countRepeats(repeats []Result, flag func(CPU) bool) int {
	n := 0
	for _, r := range repeats {
		if r.Run.CPU != nil && flag(*r.Run.CPU) {
			n++
		}
	}
	return n
}

// figures returns f of each result that has it.
func figures(results []Result, f func(Result) (float64, bool)) []float64 {
	var out []float64
	for _, r := range results {
		if v, ok := f(r); ok {
			out = append(out, v)
		}
	}
	return out
}

// latencyFigure is a figures function: field of the latency of kind, in
// a run phase with a successful operation of that kind.
func latencyFigure(kind string, field func(driver.Latency) float64) func(Result) (float64, bool) {
	return func(r Result) (float64, bool) {
		k, ok := kindOf(r.Run, kind)
		return field(k.LatencyMS), ok && k.LatencyMS.Count > 0
	}
}

// medianOf is the median of f over xs.
func medianOf[T any](xs []T, f func(T) float64) float64 {
	vs := make([]float64, len(xs))
	for i, x := range xs {
		vs[i] = f(x)
	}
	return median(vs)
}

// median is the middle value of vs, or the mean of the two middle ones
// when there are an even number; 0 for none.
func median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(vs))
	mid := len(s) / 2
	if len(s)%2 == 1 {
		return s[mid]
	}
	return (s[mid-1] + s[mid]) / 2
}

// rangeOf is the least and greatest of vs; zero for none.
func rangeOf(vs []float64) Range {
	if len(vs) == 0 {
		return Range{}
	}
	return Range{Min: slices.Min(vs), Max: slices.Max(vs)}
}
