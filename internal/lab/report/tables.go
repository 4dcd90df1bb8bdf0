package report

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/cosla/cosla/internal/lab/measure"
	"github.com/cosla/cosla/keyfmt"
)

// table is one table of the report, rendered alike in Markdown and HTML.
// Every string in it is plain text; the renderers escape it.
type table struct {
	id     string
	title  string
	note   string
	header []string
	rows   []row
}

// row is a row of cells, or a section heading across the table when
// section is set.
type row struct {
	section string
	cells   []string
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, row{cells: cells}) }

func (t *table) addSection(title string) { t.rows = append(t.rows, row{section: title}) }

// column is one (run, read option) of the summary: everything the run's
// Report says about reads with that option, nil where it says nothing.
type column struct {
	run    int
	label  string
	option string
	fresh  *measure.OptionFreshness
	mono   *measure.PairTable
	ryw    *measure.RYWOption
	inter  *measure.InterElementOption
	read   *measure.LatencyGroup
	write  *measure.LatencyGroup
}

// runLabels returns the runs' names, made unique by a " (2)", " (3)"...
// suffix so that legends and columns cannot be confused, and stripped of
// control characters.
func runLabels(runs []Run) []string {
	labels := make([]string, len(runs))
	seen := map[string]int{}
	for i, r := range runs {
		name := plainText(r.Name)
		if name == "" {
			name = fmt.Sprintf("run %d", i+1)
		}
		seen[name]++
		if n := seen[name]; n > 1 {
			name = fmt.Sprintf("%s (%d)", name, n)
		}
		labels[i] = name
	}
	return labels
}

// readOptions lists the read options a report knows of, in the order of
// the freshness analysis, then those only the latency analysis saw.
func readOptions(rep *measure.Report) []string {
	var out []string
	for _, o := range rep.Freshness.Options {
		if !slices.Contains(out, o.Option) {
			out = append(out, o.Option)
		}
	}
	for _, g := range rep.Latency.Groups {
		if g.Kind == measure.KindRead && !slices.Contains(out, g.Option) {
			out = append(out, g.Option)
		}
	}
	for _, o := range rep.ReadYourWrites.Options {
		if !slices.Contains(out, o.Option) {
			out = append(out, o.Option)
		}
	}
	return out
}

// columns builds one column per (run, read option); a run with no reads at
// all still gets one, so that it shows in the summary as n/a.
func columns(runs []Run, labels []string) []column {
	var cols []column
	for i := range runs {
		rep := &runs[i].Report
		options := readOptions(rep)
		if len(options) == 0 {
			options = []string{""}
		}
		var writes []*measure.LatencyGroup
		for j := range rep.Latency.Groups {
			if rep.Latency.Groups[j].Kind == measure.KindWrite {
				writes = append(writes, &rep.Latency.Groups[j])
			}
		}
		for _, option := range options {
			c := column{run: i, option: option, label: labels[i]}
			if len(options) > 1 || option != "" {
				c.label = seriesLabel(labels[i], optionLabel(option))
			}
			for j := range rep.Freshness.Options {
				if rep.Freshness.Options[j].Option == option {
					c.fresh = &rep.Freshness.Options[j]
				}
			}
			for j := range rep.MonotonicReads.Options {
				if rep.MonotonicReads.Options[j].Option == option {
					c.mono = &rep.MonotonicReads.Options[j]
				}
			}
			for j := range rep.ReadYourWrites.Options {
				if rep.ReadYourWrites.Options[j].Option == option {
					c.ryw = &rep.ReadYourWrites.Options[j]
				}
			}
			if rep.InterElement.Skipped == "" {
				for j := range rep.InterElement.Options {
					if rep.InterElement.Options[j].Option == option {
						c.inter = &rep.InterElement.Options[j]
					}
				}
			}
			for j := range rep.Latency.Groups {
				if g := &rep.Latency.Groups[j]; g.Kind == measure.KindRead && g.Option == option {
					c.read = g
				}
			}
			// Writes carry the write option, which need not be the read
			// option: take the matching group, else the only one.
			for _, g := range writes {
				if g.Option == option {
					c.write = g
				}
			}
			if c.write == nil && len(writes) == 1 {
				c.write = writes[0]
			}
			cols = append(cols, c)
		}
	}
	return cols
}

// summaryTable is the side-by-side comparison: one column per (run, read
// option), one row per figure.
func summaryTable(runs []Run, cols []column) table {
	t := table{id: "summary", title: "Summary", header: []string{"measure"}}
	t.note = "One column per run and read option. Probabilities are over the reads classified as fresh or stale " +
		"(a reference write had returned before the read was invoked). Rows marked (run) are for the whole run."
	for _, c := range cols {
		t.header = append(t.header, c.label)
	}
	line := func(name string, cell func(c column) string) {
		cells := []string{name}
		for _, c := range cols {
			cells = append(cells, cell(c))
		}
		t.add(cells...)
	}

	// Wada 2.1.1, Table 1: the probability of a fresh read per range of
	// time elapsed since the start of the write.
	t.addSection("Freshness (Wada Table 1, Fig. 3)")
	line("classified reads", func(c column) string {
		if c.fresh == nil {
			return na
		}
		return fmt.Sprint(c.fresh.Reads)
	})
	for _, r := range freshRanges(runs) {
		line("P(fresh) "+r.String(), func(c column) string {
			if c.fresh == nil {
				return na
			}
			for _, rf := range c.fresh.Ranges {
				if rf.Range == r {
					return ratio(rf.Fresh, rf.Reads)
				}
			}
			return na
		})
	}
	line("P(fresh) all", func(c column) string {
		if c.fresh == nil {
			return na
		}
		return ratio(c.fresh.Fresh, c.fresh.Reads)
	})
	// Wada Fig. 3: per measurement run, the first bucket above the
	// threshold and the last below 100%; the table gives the median.
	threshold := "the threshold"
	if th := thresholds(runs); len(th) == 1 {
		threshold = fmt.Sprintf("%g%%", 100*th[0])
	}
	line("first P(fresh) > "+threshold+", median of runs (ms)", func(c column) string {
		if c.fresh == nil || len(c.fresh.Runs) == 0 {
			return na
		}
		if c.fresh.RunsWithFirstAbove == 0 {
			return fmt.Sprintf("never (0/%d runs)", len(c.fresh.Runs))
		}
		return fmt.Sprintf("%g (%d/%d runs, CV %.4f)", c.fresh.MedianFirstAboveMS, c.fresh.RunsWithFirstAbove, len(c.fresh.Runs), c.fresh.CVFirstAbove)
	})
	line("last P(fresh) < 100%, median of runs (ms)", func(c column) string {
		if c.fresh == nil || len(c.fresh.Runs) == 0 {
			return na
		}
		var lasts []float64
		for _, r := range c.fresh.Runs {
			if r.HasLastBelow {
				lasts = append(lasts, r.LastBelowMS)
			}
		}
		if len(lasts) == 0 {
			return fmt.Sprintf("never (0/%d runs)", len(c.fresh.Runs))
		}
		return fmt.Sprintf("%g (%d/%d runs, max %g)", median(lasts), len(lasts), len(c.fresh.Runs), slices.Max(lasts))
	})

	// Wada 2.1.1.2, Table 2; Terry et al.'s session guarantees.
	t.addSection("Session guarantees (Wada Table 2, 2.1.1.1)")
	line("monotonic-read violations (second read older)", func(c column) string {
		if c.mono == nil {
			return na
		}
		return ratio(c.mono.Violations, c.mono.Pairs)
	})
	line("fresh then stale (Wada Table 2)", func(c column) string {
		if c.mono == nil {
			return na
		}
		return ratio(c.mono.FreshStale, c.mono.Pairs)
	})
	line("pairs fresh-fresh / fresh-stale / stale-fresh / stale-stale", func(c column) string {
		if c.mono == nil {
			return na
		}
		m := c.mono
		return fmt.Sprintf("%d / %d / %d / %d", m.FreshFresh, m.FreshStale, m.StaleFresh, m.StaleStale)
	})
	line("read-your-writes violations", func(c column) string {
		if c.ryw == nil {
			return na
		}
		return ratio(c.ryw.Violations, c.ryw.Checked)
	})

	// Wada 3.2, Table 3.
	t.addSection("Two elements (Wada Table 3)")
	line("A both fresh / B X fresh, Y stale / C X stale, Y fresh / D both stale", func(c column) string {
		g := c.inter
		if g == nil || g.Observations == 0 {
			return na
		}
		n := g.Observations
		return fmt.Sprintf("%s / %s / %s / %s (n=%d)", pct(g.AFrac, n), pct(g.BFrac, n), pct(g.CFrac, n), pct(g.DFrac, n), n)
	})

	// CPQ 2: the proportion of positive Gamma scores estimates the
	// fraction of stale reads; their size bounds the staleness.
	t.addSection("Gamma (CPQ 2)")
	line("positive scores (run)", func(c column) string {
		g := runs[c.run].Report.Gamma
		return ratio(g.Positive, g.Values)
	})
	line("positive scores p50 / p99 (ms) (run)", func(c column) string {
		p := runs[c.run].Report.Gamma.Positives
		return pair(p.P50MS, p.P99MS, p.Count)
	})

	t.addSection("Performance")
	line("read latency p50 / p99 (ms)", func(c column) string {
		if c.read == nil {
			return na
		}
		return pair(c.read.Latency.P50MS, c.read.Latency.P99MS, c.read.Latency.Count)
	})
	line("write latency p50 / p99 (ms)", func(c column) string {
		if c.write == nil {
			return na
		}
		return pair(c.write.Latency.P50MS, c.write.Latency.P99MS, c.write.Latency.Count)
	})
	line("throughput, OK ops/s (run)", func(c column) string { return throughput(runs[c.run].Report.Summary) })
	line("linearizability (run)", func(c column) string { return verdict(runs[c.run].Report.Linearizability) })
	return t
}

// freshRanges is the union of the Table 1 ranges of every run, in order of
// first appearance.
func freshRanges(runs []Run) []measure.RangeMS {
	var out []measure.RangeMS
	for _, r := range runs {
		for _, o := range r.Report.Freshness.Options {
			for _, rf := range o.Ranges {
				if !slices.Contains(out, rf.Range) {
					out = append(out, rf.Range)
				}
			}
		}
	}
	return out
}

// thresholds lists the distinct Fig. 3 thresholds of the runs that have
// freshness results.
func thresholds(runs []Run) []float64 {
	var out []float64
	for _, r := range runs {
		if th := r.Report.Freshness.FreshThreshold; len(r.Report.Freshness.Options) > 0 && !slices.Contains(out, th) {
			out = append(out, th)
		}
	}
	return out
}

func throughput(s measure.Summary) string {
	if !(s.DurationS > 0) {
		return na
	}
	return fmt.Sprintf("%.1f", float64(s.Ops-s.Failed)/s.DurationS)
}

func verdict(l measure.LinearizabilityResult) string {
	switch {
	case l.Skipped != "":
		return "not checked: " + l.Skipped
	case l.Verdict == "":
		return na
	}
	return string(l.Verdict)
}

// runsTable describes each run's trace.
func runsTable(runs []Run, labels []string) table {
	t := table{id: "runs", title: "Runs", header: []string{"run", "directory", "ops", "writes", "reads", "failed",
		"clients", "keys", "duration (s)", "throughput (OK ops/s)", "anomalies", "errors"}}
	for i, r := range runs {
		s, a := r.Report.Summary, r.Report.Anomalies
		dir := r.Dir
		if dir == "" {
			dir = na
		}
		errs := na
		if len(r.Report.Errors) > 0 {
			errs = strings.Join(r.Report.Errors, "; ")
		}
		anomalies := a.InvalidOps + a.DuplicateValues + a.NeverWrittenReads + a.FutureReads
		t.add(labels[i], dir, fmt.Sprint(s.Ops), fmt.Sprint(s.Writes), fmt.Sprint(s.Reads), fmt.Sprint(s.Failed),
			fmt.Sprint(s.Clients), fmt.Sprint(s.Keys), fmt.Sprintf("%.3f", s.DurationS), throughput(s),
			fmt.Sprint(anomalies), errs)
	}
	return t
}

// metaTable lists every run's metadata, nil when no run has any.
func metaTable(runs []Run, labels []string) *table {
	t := table{id: "meta", title: "Run metadata", header: []string{"run", "key", "value"}}
	for i, r := range runs {
		for _, k := range slices.Sorted(maps.Keys(r.Meta)) {
			t.add(labels[i], k, r.Meta[k])
		}
	}
	if len(t.rows) == 0 {
		return nil
	}
	return &t
}

// monotonicTable is Wada Table 2 for every option of every run, including
// pairs whose reads used different options ("a+b").
func monotonicTable(runs []Run, labels []string) table {
	t := table{id: "monotonic", title: "Successive reads (Wada Table 2)",
		header: []string{"run", "option", "pairs", "stale, stale", "stale, fresh", "fresh, stale", "fresh, fresh",
			"second read older", "correlation"}}
	t.note = "Successive reads of one key by one client, first read then second, both within the run's monotonic window of a write."
	for i, r := range runs {
		if len(r.Report.MonotonicReads.Options) == 0 {
			t.add(labels[i], na, "0", na, na, na, na, na, na)
		}
		for _, m := range r.Report.MonotonicReads.Options {
			n := m.Pairs
			corr := na
			if m.CorrelationDefined {
				corr = fmt.Sprintf("%.4f", m.Correlation)
			}
			t.add(labels[i], optionLabel(m.Option), fmt.Sprint(n), ratio(m.StaleStale, n), ratio(m.StaleFresh, n),
				ratio(m.FreshStale, n), ratio(m.FreshFresh, n), ratio(m.Violations, n), corr)
		}
	}
	return t
}

// interTable is Wada Table 3 for every run.
func interTable(runs []Run, labels []string) table {
	t := table{id: "inter-element", title: "Two elements (Wada Table 3)",
		header: []string{"run", "X", "Y", "option", "observations", "A both fresh", "B X fresh, Y stale", "C X stale, Y fresh", "D both stale"}}
	for i, r := range runs {
		ie := r.Report.InterElement
		x, y := na, na
		if ie.KeyX != "" {
			x, y = keyfmt.Text(string(ie.KeyX)), keyfmt.Text(string(ie.KeyY))
		}
		if ie.Skipped != "" || len(ie.Options) == 0 {
			why := na
			if ie.Skipped != "" {
				why = na + ": " + ie.Skipped
			}
			t.add(labels[i], x, y, na, "0", why, na, na, na)
			continue
		}
		for _, g := range ie.Options {
			n := g.Observations
			t.add(labels[i], x, y, optionLabel(g.Option), fmt.Sprint(n), ratio(g.A, n), ratio(g.B, n), ratio(g.C, n), ratio(g.D, n))
		}
	}
	return t
}

// gammaTable summarizes every run's Gamma scores (CPQ 2).
func gammaTable(runs []Run, labels []string) table {
	t := table{id: "gamma", title: "Gamma scores (Golab et al.; CPQ 2)",
		header: []string{"run", "values", "excluded", "positive", "trace Gamma (ms)", "all p50 / p99 (ms)",
			"positive p50 / p99 (ms)", "positive max (ms)"}}
	for i, r := range runs {
		g := r.Report.Gamma
		trace, maxPositive := na, na
		if g.Values > 0 {
			trace = ms(g.TraceGammaMS)
		}
		if g.Positives.Count > 0 {
			maxPositive = ms(g.Positives.MaxMS)
		}
		t.add(labels[i], fmt.Sprint(g.Values), fmt.Sprint(g.Excluded), ratio(g.Positive, g.Values), trace,
			pair(g.All.P50MS, g.All.P99MS, g.All.Count), pair(g.Positives.P50MS, g.Positives.P99MS, g.Positives.Count), maxPositive)
	}
	return t
}

// latencyTable lists every latency group of every run.
func latencyTable(runs []Run, labels []string) table {
	t := table{id: "latency", title: "Latency of OK ops (ms)",
		header: []string{"run", "kind", "option", "ok", "failed", "p50", "p90", "p99", "p99.9", "max"}}
	for i, r := range runs {
		if len(r.Report.Latency.Groups) == 0 {
			t.add(labels[i], na, na, "0", "0", na, na, na, na, na)
		}
		for _, g := range r.Report.Latency.Groups {
			l := g.Latency
			cell := func(v float64) string {
				if l.Count == 0 {
					return na
				}
				return ms(v)
			}
			t.add(labels[i], string(g.Kind), optionLabel(g.Option), fmt.Sprint(g.OK), ratio(g.Failed, g.OK+g.Failed),
				cell(l.P50MS), cell(l.P90MS), cell(l.P99MS), cell(l.P999MS), cell(l.MaxMS))
		}
	}
	return t
}

// sweepOption names the read option of a sweep point: LoadSweep measures
// one read option per point.
func sweepOption(p measure.SweepPoint) string {
	var options []string
	for _, g := range p.Groups {
		if g.Kind == measure.KindRead && !slices.Contains(options, g.Option) {
			options = append(options, g.Option)
		}
	}
	return strings.Join(options, ",")
}

// sweepGroup finds the latency group of a kind in a sweep point.
func sweepGroup(p measure.SweepPoint, kind measure.Kind) *measure.LatencyGroup {
	for i := range p.Groups {
		if p.Groups[i].Kind == kind {
			return &p.Groups[i]
		}
	}
	return nil
}

// sweepTable is the load sweep of every run that has one (Wada 4.1, Figs
// 7-12), nil when none has.
func sweepTable(runs []Run, labels []string) *table {
	t := table{id: "sweep", title: "Load sweep (Wada Figs 7-12)",
		header: []string{"run", "option", "clients", "duration (s)", "ok", "failed", "throughput (ops/s)", "of offered",
			"read p50 / p99 (ms)", "write p50 / p99 (ms)"}}
	for i, r := range runs {
		if r.Sweep == nil {
			continue
		}
		for _, p := range r.Sweep.Points {
			offered := na
			if p.OfferedOpsPerS > 0 {
				offered = fmt.Sprintf("%.1f%%", p.ThroughputPercent)
			}
			lat := func(kind measure.Kind) string {
				g := sweepGroup(p, kind)
				if g == nil {
					return na
				}
				return pair(g.Latency.P50MS, g.Latency.P99MS, g.Latency.Count)
			}
			t.add(labels[i], optionLabel(sweepOption(p)), fmt.Sprint(p.Clients), fmt.Sprintf("%.3f", p.DurationS),
				fmt.Sprint(p.OK), ratio(p.Failed, p.OK+p.Failed), fmt.Sprintf("%.1f", p.ThroughputOpsPerS), offered,
				lat(measure.KindRead), lat(measure.KindWrite))
		}
	}
	if len(t.rows) == 0 {
		return nil
	}
	return &t
}

// tables returns every table of the report, in order.
func tables(runs []Run) []table {
	labels := runLabels(runs)
	out := []table{summaryTable(runs, columns(runs, labels)), runsTable(runs, labels)}
	if t := metaTable(runs, labels); t != nil {
		out = append(out, *t)
	}
	out = append(out, monotonicTable(runs, labels), interTable(runs, labels), gammaTable(runs, labels), latencyTable(runs, labels))
	if t := sweepTable(runs, labels); t != nil {
		out = append(out, *t)
	}
	return out
}
