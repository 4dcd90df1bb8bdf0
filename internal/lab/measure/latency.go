package measure

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"text/tabwriter"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Percentiles summarizes a distribution, in milliseconds.
type Percentiles struct {
	Count  int     `json:"count"`
	MeanMS float64 `json:"mean_ms"`
	P50MS  float64 `json:"p50_ms"`
	P90MS  float64 `json:"p90_ms"`
	P95MS  float64 `json:"p95_ms"`
	P99MS  float64 `json:"p99_ms"`
	P999MS float64 `json:"p999_ms"`
	MaxMS  float64 `json:"max_ms"`
}

// String renders p on one line.
func (p Percentiles) String() string {
	if p.Count == 0 {
		return "n=0"
	}
	return fmt.Sprintf("n=%d mean=%.3f p50=%.3f p90=%.3f p95=%.3f p99=%.3f p99.9=%.3f max=%.3f ms",
		p.Count, p.MeanMS, p.P50MS, p.P90MS, p.P95MS, p.P99MS, p.P999MS, p.MaxMS)
}

// ExactPercentiles summarizes microsecond values by the nearest-rank
// definition (the zero Percentiles for none).
func ExactPercentiles(us []int64) Percentiles {
	if len(us) == 0 {
		return Percentiles{}
	}
	s := slices.Clone(us)
	slices.Sort(s)
	rank := func(q float64) float64 {
		// Nearest rank: the smallest value with at least q of the values at
		// or below it.
		n := len(s)
		// The tolerance keeps 0.95*20 from rounding up to rank 20.
		k := int(math.Ceil(q*float64(n)-1e-9)) - 1
		return msOf(s[min(max(k, 0), n-1)])
	}
	var sum float64
	for _, v := range s {
		sum += float64(v)
	}
	return Percentiles{
		Count: len(s), MeanMS: sum / float64(len(s)) / 1000,
		P50MS: rank(0.50), P90MS: rank(0.90), P95MS: rank(0.95),
		P99MS: rank(0.99), P999MS: rank(0.999), MaxMS: msOf(s[len(s)-1]),
	}
}

// maxLatencyUS is the largest latency the histograms track, one hour;
// longer latencies are recorded as one hour and counted in Clamped.
const maxLatencyUS = 3600 * 1000 * 1000

func newLatencyHistogram() *hdrhistogram.Histogram {
	// Three significant digits: 0.1% relative error (HdrHistogram's usual).
	return hdrhistogram.New(1, maxLatencyUS, 3)
}

func histogramPercentiles(h *hdrhistogram.Histogram) Percentiles {
	if h.TotalCount() == 0 {
		return Percentiles{}
	}
	return Percentiles{
		Count:  int(h.TotalCount()),
		MeanMS: h.Mean() / 1000,
		P50MS:  msOf(h.ValueAtQuantile(50)),
		P90MS:  msOf(h.ValueAtQuantile(90)),
		P95MS:  msOf(h.ValueAtQuantile(95)),
		P99MS:  msOf(h.ValueAtQuantile(99)),
		P999MS: msOf(h.ValueAtQuantile(99.9)),
		MaxMS:  msOf(h.Max()),
	}
}

// LatencyGroup is the latency of the ops of one kind and option. Failed
// ops are counted but, as in Wada 4.1, excluded from the percentiles.
type LatencyGroup struct {
	Kind        Kind    `json:"kind"`
	Option      string  `json:"option"`
	OK          int     `json:"ok"`
	Failed      int     `json:"failed"`
	FailureRate float64 `json:"failure_rate"`
	// Clamped counts OK ops slower than an hour, recorded as an hour.
	Clamped int         `json:"clamped,omitempty"`
	Latency Percentiles `json:"latency"`
}

// LatencyResult holds one group per (kind, option), ordered by kind then
// option.
type LatencyResult struct {
	Groups []LatencyGroup `json:"groups"`
}

type groupKey struct {
	kind   Kind
	option string
}

// Latency computes latency percentiles per kind and option from HDR
// histograms. Invalid ops are ignored.
func Latency(ops []Op) LatencyResult {
	return LatencyResult{Groups: latencyGroups(ops)}
}

func latencyGroups(ops []Op) []LatencyGroup {
	type acc struct {
		g    LatencyGroup
		hist *hdrhistogram.Histogram
	}
	groups := map[groupKey]*acc{}
	for _, op := range ops {
		if op.Validate() != nil {
			continue
		}
		k := groupKey{op.Kind, op.Option}
		a := groups[k]
		if a == nil {
			a = &acc{g: LatencyGroup{Kind: op.Kind, Option: op.Option}, hist: newLatencyHistogram()}
			groups[k] = a
		}
		if !op.OK {
			a.g.Failed++
			continue
		}
		a.g.OK++
		us := op.LatencyUS()
		if us > maxLatencyUS {
			a.g.Clamped++
			us = maxLatencyUS
		}
		_ = a.hist.RecordValue(us) // in range by construction
	}
	keys := make([]groupKey, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(x, y groupKey) int {
		return cmp.Or(cmp.Compare(y.kind, x.kind), cmp.Compare(x.option, y.option)) // writes first
	})
	out := make([]LatencyGroup, 0, len(keys))
	for _, k := range keys {
		a := groups[k]
		a.g.FailureRate = fraction(a.g.Failed, a.g.OK+a.g.Failed)
		a.g.Latency = histogramPercentiles(a.hist)
		out = append(out, a.g)
	}
	return out
}

// WriteText renders one line per group.
func (r LatencyResult) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "Latency of OK ops (HDR histograms, ms)")
	writeLatencyRows(tw, r.Groups, "  ")
	return tw.Flush()
}

func writeLatencyRows(tw io.Writer, groups []LatencyGroup, indent string) {
	fmt.Fprintf(tw, "%skind\toption\tok\tfailed\tp50\tp90\tp95\tp99\tp99.9\tmax\t\n", indent)
	for _, g := range groups {
		l := g.Latency
		fmt.Fprintf(tw, "%s%s\t%s\t%d\t%d (%s)\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t\n", indent, g.Kind, optionLabel(g.Option),
			g.OK, g.Failed, pct(g.FailureRate, g.OK+g.Failed), l.P50MS, l.P90MS, l.P95MS, l.P99MS, l.P999MS, l.MaxMS)
	}
}

func (r LatencyResult) String() string { return formatString(r) }

// SweepInput is one trace of a load sweep (Wada 4.1: 1 to 25 VMs of 100
// emulated clients each).
type SweepInput struct {
	// Clients is the number of emulated clients that produced Ops.
	Clients int `json:"clients"`
	// OfferedOpsPerS is the load the clients tried to offer, 0 if unknown
	// (Wada 4.1: each client issues one request a second, so 100 clients
	// offer 100 ops/s).
	OfferedOpsPerS float64 `json:"offered_ops_per_s"`
	Ops            []Op    `json:"-"`
}

// SweepPoint is the outcome of one trace of a load sweep (Wada Fig. 7-12).
type SweepPoint struct {
	Clients        int     `json:"clients"`
	OfferedOpsPerS float64 `json:"offered_ops_per_s,omitempty"`
	// DurationS is from the first invocation to the last response.
	DurationS float64 `json:"duration_s"`
	OK        int     `json:"ok"`
	Failed    int     `json:"failed"`
	// ThroughputOpsPerS counts OK ops per second of DurationS (Wada Fig.
	// 10); ThroughputPercent relates it to OfferedOpsPerS (Fig. 11).
	ThroughputOpsPerS float64 `json:"throughput_ops_per_s"`
	ThroughputPercent float64 `json:"throughput_percent,omitempty"`
	// FailureRate is Failed over all ops (Fig. 12).
	FailureRate float64 `json:"failure_rate"`
	// Groups are the latencies per kind and option (Fig. 7-9).
	Groups []LatencyGroup `json:"groups"`
}

// SweepResult holds one point per input, in order of client count.
type SweepResult struct {
	Points []SweepPoint `json:"points"`
}

// Sweep computes throughput, failure rate and latency for every trace of
// a load sweep.
func Sweep(inputs []SweepInput) SweepResult {
	var res SweepResult
	for _, in := range inputs {
		p := SweepPoint{Clients: in.Clients, OfferedOpsPerS: in.OfferedOpsPerS}
		first, last := int64(posInfUS), int64(negInfUS)
		for _, op := range in.Ops {
			if op.Validate() != nil {
				continue
			}
			first, last = min(first, op.CallUS), max(last, op.ReturnUS)
			if op.OK {
				p.OK++
			} else {
				p.Failed++
			}
		}
		if last > first {
			p.DurationS = float64(last-first) / 1e6
			p.ThroughputOpsPerS = float64(p.OK) / p.DurationS
		}
		if in.OfferedOpsPerS > 0 {
			p.ThroughputPercent = 100 * p.ThroughputOpsPerS / in.OfferedOpsPerS
		}
		p.FailureRate = fraction(p.Failed, p.OK+p.Failed)
		p.Groups = latencyGroups(in.Ops)
		res.Points = append(res.Points, p)
	}
	slices.SortStableFunc(res.Points, func(x, y SweepPoint) int { return cmp.Compare(x.Clients, y.Clients) })
	return res
}

// WriteText renders one block per client count.
func (r SweepResult) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "Load sweep (Wada Fig. 7-12)")
	fmt.Fprintln(tw, "  clients\tduration s\tok\tfailed\tthroughput ops/s\tof offered\t")
	for _, p := range r.Points {
		offered := "-"
		if p.OfferedOpsPerS > 0 {
			offered = fmt.Sprintf("%.1f%%", p.ThroughputPercent)
		}
		fmt.Fprintf(tw, "  %d\t%.3f\t%d\t%d (%s)\t%.1f\t%s\t\n", p.Clients, p.DurationS, p.OK, p.Failed,
			pct(p.FailureRate, p.OK+p.Failed), p.ThroughputOpsPerS, offered)
	}
	for _, p := range r.Points {
		fmt.Fprintf(tw, "  %d clients:\n", p.Clients)
		writeLatencyRows(tw, p.Groups, "    ")
	}
	return tw.Flush()
}

func (r SweepResult) String() string { return formatString(r) }
