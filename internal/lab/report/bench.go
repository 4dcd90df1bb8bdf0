package report

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot/plotter"

	"github.com/cosla/cosla/internal/lab/bench"
)

// BenchFileName is the name of a comparison's JSON in WriteBench's
// directory.
const BenchFileName = "comparison.json"

// WriteBench writes a comparison of `cosla bench compare` into out
// (created if needed): BenchFileName, the comparison as `--json` prints
// it; report.md and report.html (self-contained), with the workload and a
// table per client count as the text output has them; and the plots
// plots/latency_cdf_KIND.png and .svg, the latency distribution of each
// operation kind for every run (from the driver's histograms,
// bench.KindStats.LatencyCDF), and plots/throughput.png and .svg,
// successful operations per second against clients for each system and
// read strength. It fails only on I/O or when the comparison has no
// runs.
func WriteBench(out string, c bench.Comparison) error {
	if len(c.Tables) == 0 {
		return ErrNoRuns
	}
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(out, BenchFileName), append(data, '\n')); err != nil {
		return err
	}
	workload := table{id: "workload", title: "Workload", note: "Runs of " + c.Limit + ", in place of operationcount.",
		header: []string{"property", "value"}}
	for _, line := range strings.Split(strings.TrimSpace(c.Workload), "\n") {
		if k, v, _ := strings.Cut(line, "="); k != "operationcount" {
			workload.add(k, v)
		}
	}
	tabs := []table{workload}
	for _, t := range c.Tables {
		header, rows := t.Grid(c.Reference)
		tab := table{id: "clients-" + strconv.Itoa(t.Clients), title: t.Title(), note: c.RatioNote(), header: header}
		for _, r := range rows {
			tab.add(r...)
		}
		tabs = append(tabs, tab)
	}
	figs, err := writeFigures(out, benchCharts(c))
	if err != nil {
		return err
	}
	var targets []string
	for _, r := range c.Tables[0].Rows {
		if !slices.Contains(targets, r.Result.Target) {
			targets = append(targets, r.Result.Target)
		}
	}
	title := "cosla bench compare: " + strings.Join(targets, " vs ")
	runs := "one run after another"
	if c.Repeat > 1 {
		runs = "the figures the medians of each run's repeats"
	}
	intro := fmt.Sprintf("One YCSB workload through one driver on each store, %s: seed %d; %s; writes %s; runs of %s. "+
		"Latencies in milliseconds of successful operations; \"n/a\" marks a figure a run does not have.", runs, c.Seed, c.Mix, c.Write, c.Limit)
	return writePages(out, title, intro, tabs, figs)
}

// runLabel names a run's line in the plots: "redis replica, weak reads".
func runLabel(r bench.Row) string {
	return plainText(fmt.Sprintf("%s %s, %s reads", r.Result.Target, r.Result.Read, r.Strength))
}

// benchCharts are the plots of WriteBench: a latency CDF per operation
// kind, a line per run, then throughput against clients, a line per
// system and read strength.
func benchCharts(c bench.Comparison) []chart {
	var kinds []string
	for _, t := range c.Tables {
		for _, k := range t.Kinds() {
			if !slices.Contains(kinds, k) {
				kinds = append(kinds, k)
			}
		}
	}
	// A run's style is its (system, strength)'s, so that it looks the
	// same in every plot; client counts after the first are dashed.
	var lines []string
	style := func(r bench.Row) int {
		l := runLabel(r)
		if i := slices.Index(lines, l); i >= 0 {
			return i
		}
		lines = append(lines, l)
		return len(lines) - 1
	}
	var out []chart
	for _, k := range kinds {
		ch := chart{name: "latency_cdf_" + fileName(k), title: "Latency CDF: " + k, xLabel: "latency (ms)",
			yLabel: "fraction of operations", logX: true, yMin: 0, yMax: 1.05,
			caption: "From each run's HDR histogram (three significant digits); log scale when every latency is positive; the first client count solid, the others dashed."}
		for ti, t := range c.Tables {
			for _, r := range t.Rows {
				s := series{label: fmt.Sprintf("%s, %s", runLabel(r), t.Title()), style: style(r), step: true, dashed: ti > 0}
				for _, k2 := range r.Result.Run.Kinds {
					if k2.Kind != k {
						continue
					}
					for _, q := range k2.LatencyCDF {
						s.xys = append(s.xys, plotter.XY{X: q.MS, Y: q.Q})
					}
				}
				if len(s.xys) > 0 {
					ch.series = append(ch.series, s)
				}
			}
		}
		out = append(out, ch)
	}
	through := chart{name: "throughput", title: "Throughput vs clients", xLabel: "clients", yLabel: "successful ops/s",
		caption: "Each point is one run, or the median of a cell's repeats."}
	for _, t := range c.Tables {
		for _, r := range t.Rows {
			i := style(r)
			j := slices.IndexFunc(through.series, func(s series) bool { return s.style == i })
			if j < 0 {
				through.series = append(through.series, series{label: runLabel(r), style: i, points: true})
				j = len(through.series) - 1
			}
			through.series[j].xys = append(through.series[j].xys, plotter.XY{X: float64(t.Clients), Y: r.Result.Run.ThroughputOpsPerS})
		}
	}
	for i := range through.series {
		slices.SortFunc(through.series[i].xys, func(a, b plotter.XY) int { return int(a.X - b.X) })
	}
	return append(out, through)
}

// fileName makes an operation kind a file name: letters, digits and
// dashes kept, anything else a dash.
func fileName(kind string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '-'
	}, kind)
}
