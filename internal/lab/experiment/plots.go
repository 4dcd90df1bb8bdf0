package experiment

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Figure is one plot of a report, saved as plots/NAME.png and NAME.svg.
type Figure struct {
	Name, Title string
	plot        *plot.Plot
}

// Save renders the figure; the file's extension picks the format.
func (f Figure) Save(path string) error {
	return f.plot.Save(7*vg.Inch, 4.5*vg.Inch, path)
}

// Plots builds the scenario's plots from a result.
func Plots(s *Scenario, r *Result) ([]Figure, error) {
	var figs []Figure
	add := func(f Figure, err error) error {
		if err != nil {
			return err
		}
		figs = append(figs, f)
		return nil
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
		var bases []string
		for _, v := range s.slas {
			if v.Factor != 0 && !slices.Contains(bases, v.Base) {
				bases = append(bases, v.Base)
			}
		}
		for _, base := range bases {
			for _, c := range s.Clients.Sites() {
				if err := add(sensitivityPlot(s, r, base, c)); err != nil {
					return nil, err
				}
			}
		}
	}
	if s.wants(OutOps) && s.Sweep != nil {
		if err := add(throughputPlot(s, r)); err != nil {
			return nil, err
		}
		if err := add(latencyCurvePlot(s, r)); err != nil {
			return nil, err
		}
	}
	for _, f := range []struct {
		out  string
		plot func(*Scenario, *Result) (Figure, error)
	}{{OutBoundLatency, boundLatencyPlot}, {OutReadLatency, readLatencyPlot}, {OutReturned, returnedPlot}, {OutPlanner, plannerPlot}} {
		if !s.wants(f.out) {
			continue
		}
		if fig, err := f.plot(s, r); !errors.Is(err, errNoPlot) {
			if err := add(fig, err); err != nil {
				return nil, err
			}
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
	causal, err := causalPlots(s, r)
	if err != nil {
		return nil, err
	}
	return append(figs, causal...), nil
}

func fileName(parts ...string) string {
	name := strings.Join(parts, "-")
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, name)
}

// groupedBars draws one bar per (group, series), groups along x.
func groupedBars(p *plot.Plot, groups, series []string, value func(g, s int) float64) error {
	// Bars fill about two thirds of the plot's width.
	width := vg.Points(320 / float64(max(1, len(series)*len(groups))))
	top := 0.0
	for j, name := range series {
		vals := make(plotter.Values, len(groups))
		for i := range groups {
			vals[i] = value(i, j)
			top = max(top, vals[i])
		}
		bc, err := plotter.NewBarChart(vals, width)
		if err != nil {
			return err
		}
		bc.LineStyle.Width = 0
		bc.Color = plotutil.Color(j)
		bc.Offset = width * vg.Length(float64(j)-float64(len(series)-1)/2)
		p.Add(bc)
		p.Legend.Add(name, bc)
	}
	p.NominalX(groups...)
	p.X.Min, p.X.Max = -0.5, float64(len(groups))-0.5
	// Headroom for the legend above the tallest bar.
	p.Y.Max = max(p.Y.Max, 1.3*top)
	p.Legend.Top = true
	return nil
}

func latencyPlot(s *Scenario, r *Result) (Figure, error) {
	p := plot.New()
	p.Title.Text = "Average Get latency per consistency and client site (Fig. 3)"
	p.Y.Label.Text = "ms"
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
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Average utility, %s SLA (Figs 11-12)", slaName)
	p.Y.Label.Text = "average delivered utility"
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
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Utility vs scaling of lower subSLAs, %s SLA, client %s (Fig. 14)", base, client)
	p.X.Label.Text = "factor on the utilities of the scaled subSLAs"
	p.Y.Label.Text = "average delivered utility"
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

// pointX is a sweep value as a number for a plot's x axis: durations in
// milliseconds.
func pointX(v string) float64 {
	if x, err := strconv.ParseFloat(v, 64); err == nil {
		return x
	}
	if d, err := time.ParseDuration(v); err == nil {
		return ms(d)
	}
	return 0
}

// curveResults are the results a sweep's plots draw: the run's own, and
// beside a cluster run the simulator's.
func curveResults(r *Result) []*Result {
	out := []*Result{r}
	if r.Sim != nil {
		out = append(out, r.Sim)
	}
	return out
}

// seriesName names a curve: the client site and strategy when there are
// several, and the mode when two modes share the plot.
func seriesName(r *Result, sm Summary, several, modes bool, suffix string) string {
	var parts []string
	if modes || (!several && suffix == "") {
		parts = append(parts, r.Mode)
	}
	if several {
		parts = append(parts, sm.Client+"/"+sm.Strategy)
	}
	if suffix != "" {
		parts = append(parts, suffix)
	}
	return strings.Join(parts, " ")
}

// addCurve draws one series of a sweep's plot.
func addCurve(p *plot.Plot, i int, name string, xys plotter.XYs) error {
	line, points, err := plotter.NewLinePoints(xys)
	if err != nil {
		return err
	}
	line.Color, line.Dashes = plotutil.Color(i), plotutil.Dashes(i)
	points.Color, points.Shape = plotutil.Color(i), plotutil.Shape(i)
	p.Add(line, points)
	p.Legend.Add(name, line, points)
	return nil
}

// throughputPlot is each run's throughput against the swept parameter:
// it rises, then flattens at capacity.
func throughputPlot(s *Scenario, r *Result) (Figure, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Throughput against %s", s.Sweep.Param)
	p.X.Label.Text = s.Sweep.Param
	p.Y.Label.Text = "successful operations per second"
	if s.Sweep.Param == "sessions" {
		p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	}
	results := curveResults(r)
	several := len(s.Clients)*len(s.Strategies) > 1
	i := 0
	for _, res := range results {
		for _, key := range summaryKeys(res) {
			var xys plotter.XYs
			for _, sm := range res.Summaries {
				if sm.Client == key.Client && sm.Strategy == key.Strategy && sm.SLA == key.SLA {
					xys = append(xys, plotter.XY{X: pointX(sm.Point), Y: sm.Throughput.Mean})
				}
			}
			if err := addCurve(p, i, seriesName(res, key, several, len(results) > 1, ""), xys); err != nil {
				return Figure{}, err
			}
			i++
		}
	}
	p.Legend.Top, p.Legend.Left = true, true
	return Figure{Name: "capacity-throughput", Title: p.Title.Text, plot: p}, nil
}

// latencyCurvePlot is the throughput-latency curve: each op label's p95
// against the run's throughput, one point per sweep point.
func latencyCurvePlot(s *Scenario, r *Result) (Figure, error) {
	p := plot.New()
	p.Title.Text = "Latency (p95) against throughput"
	p.X.Label.Text = "successful operations per second"
	p.Y.Label.Text = "p95 latency (ms)"
	results := curveResults(r)
	several := len(s.Clients)*len(s.Strategies) > 1
	i := 0
	for _, res := range results {
		for _, key := range summaryKeys(res) {
			var labels []string
			for _, sm := range res.Summaries {
				if sm.Client == key.Client && sm.Strategy == key.Strategy && sm.SLA == key.SLA {
					for _, o := range sm.Ops {
						if !slices.Contains(labels, o.Op) {
							labels = append(labels, o.Op)
						}
					}
				}
			}
			for _, label := range labels {
				var xys plotter.XYs
				for _, sm := range res.Summaries {
					if sm.Client != key.Client || sm.Strategy != key.Strategy || sm.SLA != key.SLA {
						continue
					}
					for _, o := range sm.Ops {
						if o.Op == label {
							xys = append(xys, plotter.XY{X: sm.Throughput.Mean, Y: o.P95MS.Mean})
						}
					}
				}
				if err := addCurve(p, i, seriesName(res, key, several, len(results) > 1, label), xys); err != nil {
					return Figure{}, err
				}
				i++
			}
		}
	}
	p.Legend.Top, p.Legend.Left = true, true
	return Figure{Name: "capacity-latency", Title: p.Title.Text, plot: p}, nil
}

// summaryKeys are the (SLA, client, strategy) of a result's summaries,
// in order.
func summaryKeys(r *Result) []Summary {
	var out []Summary
	for _, sm := range r.Summaries {
		if !slices.ContainsFunc(out, func(o Summary) bool {
			return o.SLA == sm.SLA && o.Client == sm.Client && o.Strategy == sm.Strategy
		}) {
			out = append(out, Summary{SLA: sm.SLA, Client: sm.Client, Strategy: sm.Strategy})
		}
	}
	return out
}
