package experiment

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// pileusPlugin is Pileus's (SOSP'13) part of the lab: utility per SLA,
// client site and strategy (Figs 11-12) with the options beyond the
// paper, the decisions' breakdown (Tables 1-2), the latency per
// consistency (Fig. 3), the adaptation to a schedule (Fig. 13) and the
// sensitivity to the utilities (Fig. 14). Its scenarios draw the
// engine's Puts and Gets.
type pileusPlugin struct{}

func (pileusPlugin) outputs() []string {
	return []string{OutUtility, OutBreakdown, OutLatency, OutTimeline, OutSensitivity}
}

func (pileusPlugin) metrics() []string {
	return []string{"avg_utility", "avg_latency_ms", "gets_pct", "met_pct"}
}

func (pileusPlugin) tables(s *Scenario, r *Result) []Table {
	var out []Table
	if s.wants(OutLatency) {
		out = append(out, latencyTable(s, r))
	}
	if s.wants(OutUtility) {
		out = append(out, utilityTable(s, r))
		if t, ok := optionsTable(r); ok {
			out = append(out, t)
		}
	}
	if s.wants(OutBreakdown) {
		out = append(out, breakdownTable(s, r))
	}
	if s.wants(OutSensitivity) {
		out = append(out, sensitivityTable(r))
	}
	if s.wants(OutTimeline) {
		out = append(out, adaptationTable(r))
	}
	return out
}

func (pileusPlugin) plots(s *Scenario, r *Result) ([]Figure, error) {
	var figs []Figure
	add := func(f Figure, err error) error {
		if err == nil {
			figs = append(figs, f)
		}
		return err
	}
	if s.wants(OutLatency) {
		if err := add(latencyPlot(s, r)); err != nil {
			return nil, err
		}
	}
	if s.wants(OutUtility) {
		for _, v := range s.slas {
			if v.Factor != 0 {
				continue
			}
			if err := add(utilityPlot(s, r, v.Name)); err != nil {
				return nil, err
			}
		}
	}
	if s.wants(OutSensitivity) {
		if err := sensitivityPlots(s, r, add); err != nil {
			return nil, err
		}
	}
	if s.wants(OutTimeline) {
		for _, run := range r.Runs {
			if len(run.Timeline) == 0 {
				continue
			}
			if err := add(timelinePlot(run, r.Mode)); err != nil {
				return nil, err
			}
		}
	}
	return figs, nil
}

// sensitivityPlots adds one plot per base SLA and client site.
func sensitivityPlots(s *Scenario, r *Result, add func(Figure, error) error) error {
	var bases []string
	for _, v := range s.slas {
		if v.Factor != 0 && !slices.Contains(bases, v.Base) {
			bases = append(bases, v.Base)
		}
	}
	for _, base := range bases {
		for _, c := range s.Clients.Sites() {
			if err := add(sensitivityPlot(s, r, base, c)); err != nil {
				return err
			}
		}
	}
	return nil
}

func latencyTable(s *Scenario, r *Result) Table {
	t := Table{Name: "latency", Title: "Average Get latency (ms) per consistency and client site (Fig. 3)",
		Header: []string{"consistency"}}
	for _, c := range s.Clients.Sites() {
		t.Header = append(t.Header, c, c+" paper")
	}
	for _, v := range s.slas {
		row := []string{v.Name}
		for _, c := range s.Clients.Sites() {
			cell := ""
			for _, run := range r.Runs {
				if run.SLA == v.Name && run.Client == c {
					cell = f1(run.AvgLatencyMS)
					break
				}
			}
			p, ok := s.paperValue("avg_latency_ms", v.Name, c, "", 0, "", 0)
			row = append(row, cell, paperCell(p, ok, func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }))
		}
		t.Rows = append(t.Rows, row)
	}
	t.Caption = "Ours: mean round trip of the Pileus client's Gets under a single-subSLA SLA with no latency bound (the first strategy listed)."
	return t
}

func utilityTable(s *Scenario, r *Result) Table {
	t := Table{Name: "utility", Title: "Average delivered utility per SLA, client site and strategy (Figs 11-12)",
		Header: []string{"sla", "client", "strategy", "avg utility", "± stderr", "paper"}}
	maxMet := 0
	for _, run := range r.Runs {
		maxMet = max(maxMet, len(run.Met))
	}
	for i := range maxMet {
		t.Header = append(t.Header, fmt.Sprintf("met %d %%", i+1))
	}
	t.Header = append(t.Header, "unmet %", "avg get ms", "paper ms", "gets", "extra requests", "probes")
	for _, run := range r.Runs {
		p, ok := s.paperValue("avg_utility", run.BaseSLA, run.Client, run.Strategy, 0, "", run.Factor)
		row := []string{run.SLA, run.Client, run.Strategy, f3(run.AvgUtility), f3(run.UtilityStdErr), paperCell(p, ok, func(x float64) string { return strconv.FormatFloat(x, 'f', 2, 64) })}
		for i := range maxMet {
			cell := ""
			if i < len(run.Met) {
				cell = f1(100 * run.Met[i])
			}
			row = append(row, cell)
		}
		pl, okl := s.paperValue("avg_latency_ms", run.BaseSLA, run.Client, run.Strategy, 0, "", run.Factor)
		row = append(row, f1(100*run.Unmet), f1(run.AvgLatencyMS), paperCell(pl, okl, func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }), strconv.Itoa(run.Gets), strconv.Itoa(run.ExtraRequests), strconv.Itoa(run.Probes))
		t.Rows = append(t.Rows, row)
	}
	return t
}

// optionsTable sets each option of Pileus beyond the paper (a strategy
// pileus+...) beside plain Pileus for the same SLA and client: the
// utility it gains and the extra requests it spends. It is not ok when
// no run has both.
func optionsTable(r *Result) (Table, bool) {
	t := Table{Name: "options", Title: "Beyond the paper: utility gained and extra requests spent by each option of Pileus",
		Header: []string{"sla", "client", "strategy", "avg utility", "gain vs pileus", "unmet %", "extra requests", "extra per 100 gets"}}
	type group struct{ sla, client string }
	plain := map[group]RunResult{}
	options := map[group]bool{}
	for _, run := range r.Runs {
		g := group{run.SLA, run.Client}
		switch {
		case run.Strategy == "pileus":
			plain[g] = run
		case strings.HasPrefix(run.Strategy, "pileus+"):
			options[g] = true
		}
	}
	for _, run := range r.Runs {
		g := group{run.SLA, run.Client}
		base, ok := plain[g]
		if !ok || !options[g] || !strings.HasPrefix(run.Strategy, "pileus") {
			continue
		}
		gain := strconv.FormatFloat(run.AvgUtility-base.AvgUtility, 'f', 3, 64)
		if !strings.HasPrefix(gain, "-") {
			gain = "+" + gain
		}
		t.Rows = append(t.Rows, []string{run.SLA, run.Client, run.Strategy, f3(run.AvgUtility), gain, f1(100 * run.Unmet),
			strconv.Itoa(run.ExtraRequests), f1(100 * float64(run.ExtraRequests) / float64(run.Gets))})
	}
	t.Caption = "Extra requests are the retries and hedged requests sent beyond one per Get; the monitor's probes are not among them (see the utility table). With a workload given by duration the runs need not make the same number of Gets."
	return t, len(t.Rows) > 0
}

func breakdownTable(s *Scenario, r *Result) Table {
	t := Table{Name: "breakdown", Title: "Pileus's decisions: % of Gets per target subSLA and node, % meeting each subSLA (Tables 1-2)",
		Header: []string{"sla", "client", "target subSLA"}}
	for _, n := range r.Nodes {
		t.Header = append(t.Header, "get from "+n+" %", "paper")
	}
	t.Header = append(t.Header, "subSLA met %", "paper", "avg utility", "paper")
	pct := func(x float64) string { return f1(x) }
	for _, run := range r.Runs {
		// Plain Pileus's, as in the paper: the table has no strategy
		// column for the options' own.
		if len(run.Breakdown) == 0 || run.Strategy != "pileus" {
			continue
		}
		for i, b := range run.Breakdown {
			row := []string{run.SLA, run.Client, strconv.Itoa(b.Target)}
			for _, n := range r.Nodes {
				p, ok := s.paperValue("gets_pct", run.BaseSLA, run.Client, "", b.Target, n, run.Factor)
				row = append(row, pct(b.GetsPct[n]), paperCell(p, ok, pct))
			}
			p, ok := s.paperValue("met_pct", run.BaseSLA, run.Client, "", b.Target, "", run.Factor)
			row = append(row, pct(b.MetPct), paperCell(p, ok, pct))
			if i == 0 {
				pu, oku := s.paperValue("avg_utility", run.BaseSLA, run.Client, run.Strategy, 0, "", run.Factor)
				row = append(row, f3(run.AvgUtility), paperCell(pu, oku, func(x float64) string { return strconv.FormatFloat(x, 'f', 2, 64) }))
			} else {
				row = append(row, "", "")
			}
			t.Rows = append(t.Rows, row)
		}
	}
	t.Caption = "Paper columns hold Table 1 or 2 of the paper where it survives. A target row counts the Gets Pileus aimed at that subSLA; the met column counts the Gets that met that subSLA, whatever they aimed at (as in the paper)."
	return t
}

func sensitivityTable(r *Result) Table {
	t := Table{Name: "sensitivity", Title: "Average delivered utility as the utilities of subSLAs are scaled (Fig. 14)",
		Header: []string{"sla", "factor", "client"}}
	var strategies []string
	for _, run := range r.Runs {
		if !slices.Contains(strategies, run.Strategy) {
			strategies = append(strategies, run.Strategy)
		}
	}
	t.Header = append(t.Header, strategies...)
	t.Header = append(t.Header, "pileus - best fixed")
	type key struct {
		sla, client string
		factor      float64
	}
	var order []key
	cells := map[key]map[string]float64{}
	for _, run := range r.Runs {
		k := key{run.BaseSLA, run.Client, run.Factor}
		if cells[k] == nil {
			cells[k] = map[string]float64{}
			order = append(order, k)
		}
		cells[k][run.Strategy] = run.AvgUtility
	}
	for _, k := range order {
		row := []string{k.sla, strconv.FormatFloat(k.factor, 'g', -1, 64), k.client}
		best, pileus, hasPileus := -1.0, 0.0, false
		for _, st := range strategies {
			u, ok := cells[k][st]
			if !ok {
				row = append(row, "")
				continue
			}
			row = append(row, f3(u))
			if st == "pileus" {
				pileus, hasPileus = u, true
			} else {
				best = max(best, u)
			}
		}
		diff := ""
		if hasPileus && best >= 0 {
			diff = strconv.FormatFloat(pileus-best, 'f', 3, 64)
		}
		t.Rows = append(t.Rows, append(row, diff))
	}
	t.Caption = "The paper's Fig. 14 values did not survive in our copy; see the notes."
	return t
}

func adaptationTable(r *Result) Table {
	t := Table{Name: "adaptation", Title: "Adaptation after each scheduled change (5.4, Fig. 13)",
		Header: []string{"client", "strategy", "event", "change", "at s", "best choice", "best utility", "adapted", "gets to adapt", "seconds to adapt", "utility before", "utility after", "gets in phase"}}
	for _, run := range r.Runs {
		events := scheduled(run.Events)
		for i, a := range run.Adaptation {
			e := events[i]
			adapted := "no"
			if a.Adapted {
				adapted = "yes"
			}
			t.Rows = append(t.Rows, []string{run.Client, run.Strategy, a.Event, e.Description, f1(e.AtS),
				strings.Join(a.Best, " "), f3(a.BestUtility), adapted, strconv.Itoa(a.GetsToAdapt),
				f1(a.SecondsToAdapt), f3(a.UtilityBefore), f3(a.UtilityAfter), strconv.Itoa(a.GetsInPhase)})
		}
	}
	t.Caption = "Best choice is subSLA@site of highest utility that the configured round trips allow (see Adaptation in run.go). Adapted: the first Get after the change that starts N consecutive Gets making a best choice; utility before/after average the phase's delivered utility before and from that Get."
	return t
}

func latencyPlot(s *Scenario, r *Result) (Figure, error) {
	p := newPlot("Average Get latency per consistency and client site (Fig. 3)", "", "ms")
	var names []string
	for _, v := range s.slas {
		names = append(names, v.Name)
	}
	clients := s.Clients.Sites()
	err := groupedBars(p, names, clients, func(g, c int) float64 {
		for _, run := range r.Runs {
			if run.SLA == names[g] && run.Client == clients[c] {
				return run.AvgLatencyMS
			}
		}
		return 0
	})
	return Figure{Name: "latency", Title: p.Title.Text, plot: p}, err
}

func utilityPlot(s *Scenario, r *Result, slaName string) (Figure, error) {
	p := newPlot(fmt.Sprintf("Average utility, %s SLA (Figs 11-12)", slaName), "", "average delivered utility")
	p.Y.Min, p.Y.Max = 0, 1.35
	clients := s.Clients.Sites()
	err := groupedBars(p, clients, s.Strategies, func(c, st int) float64 {
		for _, run := range r.Runs {
			if run.SLA == slaName && run.Client == clients[c] && run.Strategy == s.Strategies[st] {
				return run.AvgUtility
			}
		}
		return 0
	})
	return Figure{Name: fileName("utility", slaName), Title: p.Title.Text, plot: p}, err
}

func sensitivityPlot(s *Scenario, r *Result, base, client string) (Figure, error) {
	p := newPlot(fmt.Sprintf("Utility vs scaling of lower subSLAs, %s SLA, client %s (Fig. 14)", base, client), "factor on the utilities of the scaled subSLAs", "average delivered utility")
	p.Y.Min = 0
	for j, st := range s.Strategies {
		var xys plotter.XYs
		for _, run := range r.Runs {
			if run.BaseSLA == base && run.Client == client && run.Strategy == st && run.Factor != 0 {
				xys = append(xys, plotter.XY{X: run.Factor, Y: run.AvgUtility})
			}
		}
		line, points, err := plotter.NewLinePoints(xys)
		if err != nil {
			return Figure{}, err
		}
		line.Color = plotutil.Color(j)
		line.Dashes = plotutil.Dashes(j)
		points.Color = plotutil.Color(j)
		points.Shape = plotutil.Shape(j)
		p.Add(line, points)
		p.Legend.Add(st, line, points)
	}
	p.Legend.Top = true
	p.Legend.Left = true
	return Figure{Name: fileName("sensitivity", base, client), Title: p.Title.Text, plot: p}, nil
}

// timelinePlot is Fig. 13's kind of plot for one run; mode (sim or
// cluster) says whether its time is virtual.
func timelinePlot(run RunResult, mode string) (Figure, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Delivered utility per Get, %s SLA, client %s, %s", run.SLA, run.Client, run.Strategy)
	p.X.Label.Text = "time since the workload started (s)"
	if mode == "sim" {
		p.X.Label.Text = "virtual " + p.X.Label.Text
	}
	p.Y.Label.Text = "utility delivered"
	p.Y.Min, p.Y.Max = -0.05, 1.25
	xys := make(plotter.XYs, len(run.Timeline))
	for i, g := range run.Timeline {
		xys[i] = plotter.XY{X: g.AtS, Y: g.Utility}
	}
	sc, err := plotter.NewScatter(xys)
	if err != nil {
		return Figure{}, err
	}
	sc.GlyphStyle.Radius = vg.Points(1.2)
	sc.GlyphStyle.Shape = draw.CircleGlyph{}
	sc.GlyphStyle.Color = plotutil.Color(0)
	p.Add(sc)
	if err := addSpikes(p, run.Events); err != nil {
		return Figure{}, err
	}
	events := scheduled(run.Events)
	var labels plotter.XYLabels
	for _, e := range events {
		l, err := plotter.NewLine(plotter.XYs{{X: e.AtS, Y: -0.05}, {X: e.AtS, Y: 1.15}})
		if err != nil {
			return Figure{}, err
		}
		l.Color = plotutil.Color(1)
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(l)
		labels.XYs = append(labels.XYs, plotter.XY{X: e.AtS, Y: 1.17})
		labels.Labels = append(labels.Labels, e.Label)
	}
	for i, a := range run.Adaptation {
		if a.Adapted {
			labels.XYs = append(labels.XYs, plotter.XY{X: events[i].AtS + a.SecondsToAdapt, Y: 1.08})
			labels.Labels = append(labels.Labels, "adapted "+events[i].Label)
		}
	}
	if len(labels.XYs) > 0 {
		lb, err := plotter.NewLabels(labels)
		if err != nil {
			return Figure{}, err
		}
		for i := range lb.TextStyle {
			lb.TextStyle[i].XAlign = text.XCenter
		}
		p.Add(lb)
	}
	return Figure{Name: fileName("timeline", run.SLA, run.Client, run.Strategy), Title: p.Title.Text, plot: p}, nil
}

// addSpikes draws the spikes of each spikes event as bars below the
// Gets, one row per event label, named in the legend: dozens of spikes
// drawn as lines would hide the Gets.
func addSpikes(p *plot.Plot, events []EventRecord) error {
	var names []string
	start := map[string]float64{}
	inLegend := map[string]bool{}
	for _, e := range events {
		switch e.Spike {
		case 1:
			start[e.Label] = e.AtS
			if !slices.Contains(names, e.Label) {
				names = append(names, e.Label)
			}
		case -1:
			row := slices.Index(names, e.Label)
			y := -0.06 - 0.03*float64(row)
			bar, err := plotter.NewLine(plotter.XYs{{X: start[e.Label], Y: y}, {X: e.AtS, Y: y}})
			if err != nil {
				return err
			}
			bar.Color = plotutil.Color(2 + row)
			bar.Width = vg.Points(3)
			p.Add(bar)
			if !inLegend[e.Label] {
				p.Legend.Add("spikes: "+e.Label, bar)
				inLegend[e.Label] = true
			}
		}
	}
	if len(names) > 0 {
		p.Y.Min = min(p.Y.Min, -0.06-0.03*float64(len(names)))
		p.Legend.Top = true
	}
	return nil
}

// BreakdownResult is Pileus's section of a run's result.
type BreakdownResult struct {
	// Breakdown is Pileus's decisions (Tables 1-2): one row per subSLA.
	Breakdown []BreakdownRow `json:"breakdown,omitempty"`
}

// BreakdownRow is one row of Table 1 or 2: for subSLA Target (from 1), the
// percentage of all Gets that targeted it at each node site, and the
// percentage of all Gets that met it.
type BreakdownRow struct {
	Target  int                `json:"target"`
	GetsPct map[string]float64 `json:"gets_pct"`
	MetPct  float64            `json:"met_pct"`
}

// Pileus's outputs: utility per client site and strategy, the breakdown
// of its decisions (Tables 1-2), latency, the timeline (Fig. 13) and
// the sensitivity to the SLA's factors (Fig. 14).
const (
	OutUtility     = "utility"
	OutBreakdown   = "breakdown"
	OutLatency     = "latency"
	OutTimeline    = "timeline"
	OutSensitivity = "sensitivity"
)
