package experiment

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
)

// The tables and plots of a causal table's runs (Karma; causal.go).

// tables builds the tables of the causal outputs the scenario asks
// for.
func (karmaPlugin) tables(s *Scenario, r *Result) []Table {
	var out []Table
	if s.wants(OutCausal) {
		out = append(out, causalTable(s, r))
	}
	if s.wants(OutCausal) && measuredStability(r) {
		out = append(out, restrictionModelTable(s, r), stabilitySitesTable(s, r))
	}
	if s.wants(OutSaturation) {
		out = append(out, saturationTable(s, r), comparisonTable(s, r))
	}
	if r.Mode == "cluster" && r.Sim != nil && len(r.Sim.Causal) > 0 {
		// The simulator's model of the cluster run.
		if s.wants(OutCausal) {
			t := causalTable(s, r.Sim)
			t.Name, t.Title = "causal-sim", "The simulator's model of this cluster run (the cluster's sessions and storage nodes; virtual time)"
			out = append(out, t)
		}
		if s.wants(OutSaturation) {
			t := comparisonTable(s, r.Sim)
			t.Name, t.Title = "comparison-sim", "Peak throughput compared in the simulator's model of this cluster run (%)"
			out = append(out, t)
		}
	}
	if s.wants(OutCausalSites) {
		out = append(out, causalSitesTable(s, r))
	}
	if s.wants(OutCausalTimeline) {
		out = append(out, causalTimelineTable(s, r))
		if len(s.Schedule) > 0 {
			out = append(out, causalPhasesTable(s, r))
		}
	}
	return out
}

// causalColumns name a causal run: series, the sweep's point and the
// seed when the scenario has them, and the strategy.
func causalColumns(s *Scenario) []string { return append(pointColumns(s), "strategy") }

func causalCells(s *Scenario, c CausalRun) []string {
	return append(pointCells(s, c.Series, c.Point, c.Seed), c.Strategy)
}

// causalPaper finds the paper's number for a metric of a causal run, as
// a cell ("" when it does not survive): the bound first when the paper
// gives only one (< 2). A value without a point is the paper's at every
// point.
func causalPaper(s *Scenario, metric, strategy, point, series, baseline string) string {
	for _, v := range s.Paper.Values {
		if v.Metric == metric && v.Strategy == strategy && (v.Point == "" || v.Point == point) && v.Series == series && v.Baseline == baseline {
			return v.Bound + strconv.FormatFloat(v.Value, 'f', -1, 64)
		}
	}
	return ""
}

// causalTable has one row per run: the whole system's figures.
func causalTable(s *Scenario, r *Result) Table {
	t := Table{Name: "causal", Title: "Causal table runs: throughput, latency (ms), local and restricted shares, where Gets were served (Karma Figs 7, 11, 12)",
		Header: append(causalColumns(s), "sessions", "ops/s", "get mean", "get p50", "get p99", "put mean", "put p99",
			"local %", "paper", "restricted %", "paper", "in flight %", "buffer %", "cache %", "cache hit %", "paper", "hit by half", "ring here %", "ring elsewhere %", "failed %", "failed", "failed at", "abandoned reads")}
	for _, c := range r.Causal {
		row := append(causalCells(s, c), strconv.Itoa(c.Sessions), f1(c.ThroughputOpsPerS),
			f2(c.GetLatencyMS.Mean), f2(c.GetLatencyMS.P50), f2(c.GetLatencyMS.P99), f2(c.PutLatencyMS.Mean), f2(c.PutLatencyMS.P99),
			f1(c.LocalPct), causalPaper(s, "local_pct", c.Strategy, c.Point, c.Series, ""),
			f2(c.RestrictedPct), causalPaper(s, "restricted_pct", c.Strategy, c.Point, c.Series, ""),
			f1(c.InFlightPct), f1(c.BufferPct), f1(c.CachePct), pctCell(c.CacheHitPct), causalPaper(s, "cache_hit_pct", c.Strategy, c.Point, c.Series, ""), halvesCell(c.CacheHitHalvesPct),
			f1(c.RingLocalPct), f1(c.RingRemotePct), f2(c.FailedPct),
			strconv.FormatInt(c.Failed, 10), failedAtCell(c.FailedAt), strconv.FormatUint(c.AbandonedReads, 10))
		t.Rows = append(t.Rows, row)
	}
	t.Caption = "All client sites of a run drive one world at once; sessions are their total, a closed loop each. ops/s counts the operations that succeeded between the warmup's end and the run's, per second. " +
		"Local: Gets served at the client's own site (its session's write buffer, its site's cache, or a storage node there, directly or through the cache on a miss; Karma 6.1). " +
		"Restricted: accesses (Gets and Puts) made while the session was bound to a ring by a dynamic ring restriction (Karma 4.2, Fig. 11); cops-pr and cops-ideal bind every session to its site's ring anyway, and for them it counts the accesses of sessions holding in-flight reads. In flight: Gets of a version not yet in every ring. " +
		"Buffer, cache, ring here and ring elsewhere split the Gets by where they were served (Fig. 12's local share is the first three). " +
		"Cache hit: of the reads that reached a cache after the warmup, those it served from an entry rather than filled from a ring (Karma 6.4: a 31% miss ratio at 95-5); - where no read reached one (no cache, or a cluster run); hit by half: the same over the measured window's first and second halves, which agree when the caches were warm. " +
		"Failed: operations after the warmup that failed; failed at: the nodes that did not answer them, most first; abandoned reads: reads that storage nodes and caches dropped over the whole run because their sender had stopped waiting (simulator only). A paper cell with < or > is a bound the paper gives."
	t.Caption += virtualNote(r)
	return t
}

// failedAtCell lists the nodes that failed operations, most first, with
// their counts; - where none failed.
func failedAtCell(at map[string]int64) string {
	if len(at) == 0 {
		return "-"
	}
	nodes := slices.Sorted(maps.Keys(at))
	slices.SortStableFunc(nodes, func(a, b string) int { return cmp.Compare(at[b], at[a]) })
	cells := make([]string, len(nodes))
	for i, n := range nodes {
		cells[i] = fmt.Sprintf("%s %d", n, at[n])
	}
	return strings.Join(cells, ", ")
}

// pctCell formats a share that may be missing as "-".
func pctCell(p *float64) string {
	if p == nil {
		return "-"
	}
	return f1(*p)
}

// halvesCell formats the hit ratio's halves as "first/second", "-"
// without them.
func halvesCell(h []float64) string {
	if len(h) != 2 {
		return "-"
	}
	return f1(h[0]) + "/" + f1(h[1])
}

// saturationTable has one row per (series, strategy): its peak over the
// sweep's points (Karma Figs 7a and 10: throughput at saturation).
func saturationTable(s *Scenario, r *Result) Table {
	h := seriesColumn(s, "series")
	t := Table{Name: "saturation", Title: "Peak throughput of each strategy over the sweep (Karma Figs 7, 10; 6.5)",
		Header: append(h, "strategy", "points", "peak ops/s", "sessions", "get mean ms", "get p99 ms", "local %", "restricted %", "plateau reached")}
	order, ps := peaks(r)
	for _, k := range order {
		series, strategy, _ := strings.Cut(k, "\x00")
		p := ps[[2]string{series, strategy}]
		row := seriesColumn(s, series)
		plateau := "no"
		if p.saturated {
			plateau = "yes"
		} else if p.points < 2 {
			plateau = "-"
		}
		t.Rows = append(t.Rows, append(row, strategy, strconv.Itoa(p.points), f1(p.run.ThroughputOpsPerS), strconv.Itoa(p.run.Sessions),
			f2(p.run.GetLatencyMS.Mean), f2(p.run.GetLatencyMS.P99), f1(p.run.LocalPct), f2(p.run.RestrictedPct), plateau))
	}
	t.Caption = fmt.Sprintf("The peak is the point of highest throughput (the first seed's runs). Plateau reached: the sweep's last point raised throughput by less than %.0f%% over the one before, so the peak is the saturation throughput; \"no\" means saturation lies beyond the sweep.", 100*saturationGain)
	return t
}

// comparisonTable sets the strategies' peaks against one another
// (Karma 6.1, 6.3) and each series' against the first series' (6.5),
// beside the paper's.
func comparisonTable(s *Scenario, r *Result) Table {
	h := seriesColumn(s, "series")
	t := Table{Name: "comparison", Title: "Peak throughput compared: strategy vs strategy, series vs series (%)",
		Header: append(h, "strategy", "vs", "ops/s", "vs ops/s", "gain %", "paper")}
	order, ps := peaks(r)
	var series, strategies []string
	for _, k := range order {
		se, st, _ := strings.Cut(k, "\x00")
		if !slices.Contains(series, se) {
			series = append(series, se)
		}
		if !slices.Contains(strategies, st) {
			strategies = append(strategies, st)
		}
	}
	type pair struct{ a, b string }
	var pairs []pair
	for _, b := range strategies[min(1, len(strategies)):] {
		pairs = append(pairs, pair{strategies[0], b})
	}
	for _, v := range s.Paper.Values {
		if v.Metric == "throughput_gain_pct" && !slices.Contains(pairs, pair{v.Strategy, v.Baseline}) {
			pairs = append(pairs, pair{v.Strategy, v.Baseline})
		}
	}
	add := func(se, st, vs string, a, b peak, metric, paperSeries, baseline string) {
		row := seriesColumn(s, se)
		g := gainPct(a.run.ThroughputOpsPerS, b.run.ThroughputOpsPerS)
		cell := ""
		if !math.IsNaN(g) {
			cell = strconv.FormatFloat(g, 'f', 1, 64)
			if !strings.HasPrefix(cell, "-") {
				cell = "+" + cell
			}
		}
		t.Rows = append(t.Rows, append(row, st, vs, f1(a.run.ThroughputOpsPerS), f1(b.run.ThroughputOpsPerS), cell,
			causalPaper(s, metric, st, "", paperSeries, baseline)))
	}
	for _, se := range series {
		for _, p := range pairs {
			a, oka := ps[[2]string{se, p.a}]
			b, okb := ps[[2]string{se, p.b}]
			if oka && okb {
				add(se, p.a, p.b, a, b, "throughput_gain_pct", se, p.b)
			}
		}
	}
	if len(series) > 1 {
		for _, st := range strategies {
			for _, se := range series[1:] {
				a, oka := ps[[2]string{se, st}]
				b, okb := ps[[2]string{series[0], st}]
				if oka && okb {
					add(se, st, "series "+series[0], a, b, "throughput_change_pct", se, series[0])
				}
			}
		}
	}
	t.Caption = "Gain is the first peak's throughput over the second's, minus one. The paper's numbers are the text's (Karma 6.1: Karma 43% above COPS-PR on average; 6.3: within 13% of COPS-Ideal at 80-20, 32% above it at 50-50; 6.5: within 13% at 1 KB and 32% at 4 KB of the 200 B throughput); a bound (<, >) is given as such."
	return t
}

// causalSitesTable splits each run by client site.
func causalSitesTable(s *Scenario, r *Result) Table {
	t := Table{Name: "causal-sites", Title: "Causal table runs per client site",
		Header: append(causalColumns(s), "site", "sessions", "ops/s", "get mean ms", "get p99 ms", "local %", "restricted %", "buffer %", "cache %", "ring here %", "ring elsewhere %", "failed %")}
	for _, c := range r.Causal {
		for _, st := range c.Sites {
			t.Rows = append(t.Rows, append(causalCells(s, c), st.Site, strconv.Itoa(st.Sessions), f1(st.ThroughputOpsPerS),
				f2(st.GetLatencyMS.Mean), f2(st.GetLatencyMS.P99), f1(st.LocalPct), f2(st.RestrictedPct),
				f1(st.BufferPct), f1(st.CachePct), f1(st.RingLocalPct), f1(st.RingRemotePct), f2(st.FailedPct)))
		}
	}
	t.Caption = "As the causal table, one row per client site of each run."
	return t
}

// stabilitySitesTable gives, per writer site of each run, the time its
// writes took from acknowledgement to completion (in every ring), over
// the measured window and each half of it.
func stabilitySitesTable(s *Scenario, r *Result) Table {
	t := Table{Name: "stability-sites", Title: "Time to stability by writer site (Karma 4.1.2: a write completes once every ring holds it)",
		Header: append(causalColumns(s), "site", "writes/s", "stability ms", "first half ms", "second half ms")}
	for _, c := range r.Causal {
		if c.Stability == nil {
			continue
		}
		for _, st := range c.Stability.Sites {
			if st.Acked == 0 {
				continue
			}
			t.Rows = append(t.Rows, append(causalCells(s, c), st.Name, f1(float64(st.Acked)/c.Stability.WindowS),
				f1(st.MeanMS), f1(st.FirstHalfMS), f1(st.SecondHalfMS)))
		}
	}
	t.Caption = "The mean time from a write's acknowledgement to its coordinator's completion (Little's law over the measured window, as the restriction model's stability), for the writes of each client site; the halves of the window beside it. " +
		"A time that grows from the first half to the second did not settle: a ring spanning several sites applies a chain of dependent writes one dependency check, a one-way trip between its nodes, a link at a time (put-after, Karma 2.2, 4.1.2), and a ring of one site whose sessions read each other's writes in flight makes such chains faster than that (README, Karma)."
	t.Caption += virtualNote(r)
	return t
}

// timelineTableStep is the step of the timeline's table, in seconds: the
// per-second figures averaged (results.json and the plots keep every
// second).
const timelineTableStep = 5

// causalLabel names a run in a timeline: its strategy, with its series
// and point when the scenario has several.
func causalLabel(s *Scenario, c CausalRun) string {
	parts := []string{c.Strategy}
	if c.Series != "" {
		parts = append(parts, c.Series)
	}
	if c.Point != "" {
		parts = append(parts, c.Point)
	}
	if s.Repeat > 1 {
		parts = append(parts, "seed "+strconv.FormatUint(c.Seed, 10))
	}
	return strings.Join(parts, " ")
}

// causalTimelineTable sets the runs side by side, timelineTableStep
// seconds a row.
func causalTimelineTable(s *Scenario, r *Result) Table {
	t := Table{Name: "causal-timeline", Title: fmt.Sprintf("Throughput and Get latency over time, %d s a row (Karma Fig. 8)", timelineTableStep),
		Header: []string{"from s"}}
	n := 0
	for _, c := range r.Causal {
		l := causalLabel(s, c)
		t.Header = append(t.Header, l+" ops/s", l+" normalized", l+" get ms", l+" cache hit %")
		n = max(n, len(c.Timeline))
	}
	for from := 0; from < n; from += timelineTableStep {
		row := []string{strconv.Itoa(from)}
		for _, c := range r.Causal {
			var ops, norm, lat, hit float64
			var k, kl, kh int
			for i := from; i < min(from+timelineTableStep, len(c.Timeline)); i++ {
				sec := c.Timeline[i]
				ops += sec.OpsPerS
				norm += sec.Normalized
				k++
				if sec.GetMeanMS > 0 {
					lat += sec.GetMeanMS
					kl++
				}
				if sec.CacheHitPct != nil {
					hit += *sec.CacheHitPct
					kh++
				}
			}
			if k == 0 {
				row = append(row, "", "", "", "")
				continue
			}
			latCell, hitCell := "", "-"
			if kl > 0 {
				latCell = f1(lat / float64(kl))
			}
			if kh > 0 {
				hitCell = f1(hit / float64(kh))
			}
			row = append(row, f1(ops/float64(k)), f3(norm/float64(k)), latCell, hitCell)
		}
		t.Rows = append(t.Rows, row)
	}
	t.Caption = "Operations completed per second, the Gets' mean latency and the caches' hit ratio (- without caches), each averaged over the row's seconds; normalized is throughput over the run's mean from the warmup's end to the first scheduled change. The events are listed above."
	return t
}

// causalPhasesTable gives each run's figures between scheduled changes,
// relative to before the first (Karma Fig. 9's degradation).
func causalPhasesTable(s *Scenario, r *Result) Table {
	t := Table{Name: "causal-phases", Title: "Throughput and Get latency between scheduled changes (Karma Figs 8-9)",
		Header: append(causalColumns(s), "phase", "from s", "to s", "ops/s", "change %", "get mean ms", "change %")}
	for _, c := range r.Causal {
		for _, p := range c.Phases {
			t.Rows = append(t.Rows, append(causalCells(s, c), p.Phase, f1(p.FromS), f1(p.ToS), f1(p.OpsPerS),
				f1(p.ThroughputChangePct), f1(p.GetMeanMS), f1(p.LatencyChangePct)))
		}
	}
	t.Caption = "Phases run from the warmup's end to the first change (before), then from each change to the next, in whole seconds; changes are relative to before. Fig. 9 reports the throughput and latency degradation averaged over the congestion event."
	return t
}

// sessionsSwept reports whether the scenario sweeps its sessions.
func sessionsSwept(s *Scenario) bool {
	return s.Sweep != nil && (s.Sweep.Param == "sessions" || s.Sweep.Param == "total_sessions")
}

// plots builds the plots of the causal outputs the scenario asks
// for.
func (karmaPlugin) plots(s *Scenario, r *Result) ([]Figure, error) {
	var figs []Figure
	add := func(f Figure, err error) error {
		if err == nil {
			figs = append(figs, f)
		}
		return err
	}
	if s.wants(OutCausal) || s.wants(OutSaturation) {
		metrics := []struct {
			name, title, y string
			v              func(CausalRun) float64
		}{
			{"causal-throughput", "Throughput (Karma Figs 7a, 10)", "operations/s", func(c CausalRun) float64 { return c.ThroughputOpsPerS }},
			{"causal-latency", "Mean Get latency (Karma Fig. 7b)", "ms", func(c CausalRun) float64 { return c.GetLatencyMS.Mean }},
			{"causal-local", "Gets served at the client's site (Karma Fig. 12)", "% of Gets", func(c CausalRun) float64 { return c.LocalPct }},
			{"causal-restricted", "Accesses under a dynamic ring restriction (Karma Fig. 11)", "% of accesses", func(c CausalRun) float64 { return c.RestrictedPct }},
		}
		for _, m := range metrics {
			plotFn := causalBars
			if sessionsSwept(s) {
				plotFn = causalCurves
			}
			if err := add(plotFn(s, r, m.name, m.title, m.y, m.v)); err != nil {
				return nil, err
			}
		}
	}
	if s.wants(OutCausalTimeline) {
		if err := add(causalTimelinePlot(s, r, "causal-timeline-throughput", "Normalized throughput over time (Karma Fig. 8)", "throughput / mean before the first change",
			func(c CausalSecond) float64 { return c.Normalized })); err != nil {
			return nil, err
		}
		if err := add(causalTimelinePlot(s, r, "causal-timeline-latency", "Mean Get latency over time (Karma Fig. 8)", "ms",
			func(c CausalSecond) float64 { return c.GetMeanMS })); err != nil {
			return nil, err
		}
	}
	return figs, nil
}

// causalCurves draws a metric against the total sessions, one line per
// (series, strategy).
func causalCurves(s *Scenario, r *Result, name, title, y string, v func(CausalRun) float64) (Figure, error) {
	p := newPlot(title, "sessions (all sites)", y)
	p.Y.Min = 0
	var labels []string
	lines := map[string]plotter.XYs{}
	results := curveResults(r)
	for _, res := range results {
		for _, c := range res.Causal {
			if c.Seed != res.Seed {
				continue
			}
			l := c.Strategy
			if c.Series != "" {
				l = c.Series + " " + l
			}
			if len(results) > 1 {
				// A cluster's curves beside its model's.
				l = res.Mode + " " + l
			}
			if _, ok := lines[l]; !ok {
				labels = append(labels, l)
			}
			lines[l] = append(lines[l], plotter.XY{X: float64(c.Sessions), Y: v(c)})
		}
	}
	for i, l := range labels {
		line, points, err := plotter.NewLinePoints(lines[l])
		if err != nil {
			return Figure{}, err
		}
		line.Color, line.Dashes, points.Color = plotutil.Color(i), plotutil.Dashes(i), plotutil.Color(i)
		p.Add(line, points)
		p.Legend.Add(l, line, points)
	}
	p.Legend.Top = true
	return Figure{Name: name, Title: title, plot: p}, nil
}

// causalBars draws a metric as bars: one group per (series, point), one
// bar per strategy.
func causalBars(s *Scenario, r *Result, name, title, y string, v func(CausalRun) float64) (Figure, error) {
	p := newPlot(title, "", y)
	p.Y.Min = 0
	var groups, strategies []string
	cells := map[[2]string]float64{}
	for _, c := range r.Causal {
		if c.Seed != r.Seed {
			continue
		}
		g := strings.TrimSpace(c.Series + " " + c.Point)
		if g == "" {
			g = "run"
		}
		if !slices.Contains(groups, g) {
			groups = append(groups, g)
		}
		if !slices.Contains(strategies, c.Strategy) {
			strategies = append(strategies, c.Strategy)
		}
		cells[[2]string{g, c.Strategy}] = v(c)
	}
	err := groupedBars(p, groups, strategies, func(g, st int) float64 { return cells[[2]string{groups[g], strategies[st]}] })
	return Figure{Name: name, Title: title, plot: p}, err
}

// causalTimelinePlot draws a per-second figure of every run against time,
// with the scheduled changes marked.
func causalTimelinePlot(s *Scenario, r *Result, name, title, y string, v func(CausalSecond) float64) (Figure, error) {
	p := newPlot(title, "time since the workload started (s)", y)
	p.Y.Min = 0
	for i, c := range r.Causal {
		var xys plotter.XYs
		for _, sec := range c.Timeline {
			xys = append(xys, plotter.XY{X: sec.AtS, Y: v(sec)})
		}
		if len(xys) == 0 {
			continue
		}
		line, err := plotter.NewLine(xys)
		if err != nil {
			return Figure{}, err
		}
		line.Color, line.Dashes = plotutil.Color(i), plotutil.Dashes(i)
		p.Add(line)
		p.Legend.Add(causalLabel(s, c), line)
	}
	p.Legend.Top = true
	return Figure{Name: name, Title: title, plot: p}, nil
}
