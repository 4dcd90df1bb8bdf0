package experiment

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
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

// Plots builds the scenario's plots from a result: each plug-in's, in
// the order of the registry.
func Plots(s *Scenario, r *Result) ([]Figure, error) {
	var figs []Figure
	for _, p := range plugins {
		f, err := p.plots(s, r)
		if err != nil {
			return nil, err
		}
		figs = append(figs, f...)
	}
	return figs, nil
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
	p := newPlot(fmt.Sprintf("Throughput against %s", s.Sweep.Param), s.Sweep.Param, "successful operations per second")
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
	p := newPlot("Latency (p95) against throughput", "successful operations per second", "p95 latency (ms)")
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

// newPlot is a plot with its title and axis labels.
func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, x, y
	return p
}
