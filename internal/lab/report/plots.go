package report

import (
	"bytes"
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/cosla/cosla/internal/lab/measure"
)

// The size of every plot's axes; the legend strip below them adds to the
// height.
const (
	plotWidth  = 7 * vg.Inch
	plotHeight = 4.5 * vg.Inch
)

// figure is one rendered plot.
type figure struct {
	name    string // file name without extension, under plots/
	title   string
	caption string
	png     []byte
	svg     []byte
}

// series is one line of a plot.
type series struct {
	label string
	xys   plotter.XYs
	// step draws the line as a post-step function (an empirical CDF);
	// points marks the data points.
	step, points bool
	// style picks the color and the dashes, so that the same (run,
	// option) looks the same in every plot.
	style int
	// dashed overrides the style's dashes with a dashed line.
	dashed bool
}

// chart is what a plot shows, before rendering.
type chart struct {
	name, title, caption string
	xLabel, yLabel       string
	series               []series
	// nominalX names the x positions 0, 1, ... instead of numbering them.
	nominalX []string
	// logX and logY draw the x or y axis in log scale when every x or y
	// is positive.
	logX, logY bool
	// yMin and yMax fix the y range when yMax > yMin.
	yMin, yMax float64
	// hline draws an unlabelled horizontal reference line at *hline.
	hline *float64
}

// clean drops the points plotting cannot take: non-finite ones, and
// non-positive x or y on a log axis.
func clean(xys plotter.XYs, logX, logY bool) plotter.XYs {
	out := xys[:0:0]
	for _, p := range xys {
		if finite(p.X) && finite(p.Y) && (!logX || p.X > 0) && (!logY || p.Y > 0) {
			out = append(out, p)
		}
	}
	return out
}

// render draws c as PNG and SVG, the legend in a strip below the axes so
// that it never hides a line however many runs are compared. Every input
// has been checked, but a report must not take its caller down with it: a
// panic inside the plotting library is returned as an error.
func render(c chart) (fig figure, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("report: plot %s: %v", c.name, r)
		}
	}()
	fig = figure{name: c.name, title: c.title, caption: c.caption}
	p := plot.New()
	p.Title.Text = c.title
	p.X.Label.Text = c.xLabel
	p.Y.Label.Text = c.yLabel
	p.Add(plotter.NewGrid())
	legend := plot.NewLegend()
	legend.Top, legend.Left = true, true
	logX, logY := c.logX, c.logY
	for _, s := range c.series {
		for _, xy := range s.xys {
			if !(xy.X > 0) {
				logX = false
			}
			if !(xy.Y > 0) {
				logY = false
			}
		}
	}
	drawn := 0
	for _, s := range c.series {
		xys := clean(s.xys, logX, logY)
		if len(xys) == 0 {
			continue
		}
		line, err := plotter.NewLine(xys)
		if err != nil {
			return figure{}, fmt.Errorf("report: plot %s: %s: %w", c.name, s.label, err)
		}
		line.Color = plotutil.Color(s.style)
		line.Width = vg.Points(1.5)
		line.Dashes = plotutil.Dashes(s.style / len(plotutil.DefaultColors))
		if s.dashed {
			line.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		}
		if s.step {
			line.StepStyle = plotter.PostStep
		}
		p.Add(line)
		if s.points {
			scatter, err := plotter.NewScatter(xys)
			if err != nil {
				return figure{}, fmt.Errorf("report: plot %s: %s: %w", c.name, s.label, err)
			}
			scatter.Color = line.Color
			scatter.Shape = plotutil.Shape(s.style)
			p.Add(scatter)
			legend.Add(plainText(s.label), line, scatter)
		} else {
			legend.Add(plainText(s.label), line)
		}
		drawn++
	}
	if drawn == 0 {
		p.Title.Text += " (no data)"
		p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, 1, 0, 1
		logX, logY = false, false
	}
	if logX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = logTicks{}
	}
	if logY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = logTicks{}
	}
	if c.yMax > c.yMin && drawn > 0 {
		p.Y.Min, p.Y.Max = c.yMin, c.yMax
	}
	// A degenerate axis (every point at one x or y) still needs a width.
	if p.X.Min == p.X.Max {
		if logX {
			p.X.Min, p.X.Max = p.X.Min/2, p.X.Max*2
		} else {
			p.X.Max = p.X.Min + 1
		}
	}
	if p.Y.Min == p.Y.Max {
		if logY {
			p.Y.Min, p.Y.Max = p.Y.Min/2, p.Y.Max*2
		} else {
			p.Y.Max = p.Y.Min + 1
		}
	}
	if c.hline != nil && drawn > 0 {
		y := *c.hline
		ref, err := plotter.NewLine(plotter.XYs{{X: p.X.Min, Y: y}, {X: p.X.Max, Y: y}})
		if err == nil {
			ref.Color = color.Gray{Y: 128}
			ref.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
			p.Add(ref)
		}
	}
	if len(c.nominalX) > 0 {
		p.NominalX(c.nominalX...)
		// Room for the glyphs of the first and last positions.
		p.X.Min, p.X.Max = -0.3, float64(len(c.nominalX))-0.7
	} else if drawn > 0 && logX {
		// Room for a step or a glyph at the largest x.
		p.X.Max *= 1.1
	} else if drawn > 0 {
		p.X.Max += 0.03 * (p.X.Max - p.X.Min)
	}

	legendHeight := legend.Rectangle(draw.Canvas{}).Size().Y
	if drawn > 0 {
		legendHeight += 2 * legendMargin
	}
	height := plotHeight + legendHeight
	drawAll := func(canvas vg.CanvasSizer) {
		dc := draw.New(canvas)
		dc.SetColor(color.White)
		dc.Fill(dc.Rectangle.Path())
		p.Draw(draw.Crop(dc, 0, 0, legendHeight, 0))
		if drawn > 0 {
			legend.Draw(draw.Crop(dc, legendMargin, -legendMargin, legendMargin, -(height - legendHeight + legendMargin)))
		}
	}
	png := vgimg.PngCanvas{Canvas: vgimg.New(plotWidth, height)}
	drawAll(png)
	svg := vgsvg.New(plotWidth, height)
	drawAll(svg)
	for _, out := range []struct {
		canvas io.WriterTo
		bytes  *[]byte
	}{{png, &fig.png}, {svg, &fig.svg}} {
		var buf bytes.Buffer
		if _, err := out.canvas.WriteTo(&buf); err != nil {
			return figure{}, fmt.Errorf("report: plot %s: %w", c.name, err)
		}
		*out.bytes = buf.Bytes()
	}
	return fig, nil
}

// legendMargin separates the legend from the axes and the image's edges.
const legendMargin = 6 * vg.Millimeter / 2

// logTicks labels a log axis at 1, 2 and 5 times powers of ten, and at
// every integer multiple when that gives fewer than three labels, so that
// a range narrower than a decade is still readable (gonum's LogTicks
// labels powers of ten only).
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(lo > 0) || !(hi >= lo) || !finite(hi) {
		return nil
	}
	var ticks []plot.Tick
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		for m := 1; m <= 9; m++ {
			v := float64(m) * math.Pow(10, e)
			if v < lo || v > hi {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || m == 2 || m == 5 {
				t.Label = strconv.FormatFloat(v, 'g', 4, 64)
			}
			ticks = append(ticks, t)
		}
	}
	labelled := 0
	for _, t := range ticks {
		if t.Label != "" {
			labelled++
		}
	}
	if labelled < 3 {
		for i := range ticks {
			ticks[i].Label = strconv.FormatFloat(ticks[i].Value, 'g', 4, 64)
		}
	}
	return ticks
}

// freshnessChart is Wada Fig. 2: the probability of reading the freshest
// value against the time elapsed since the start of the write, one line
// per (run, read option).
func freshnessChart(runs []Run, cols []column) chart {
	c := chart{name: "freshness", title: "P(fresh) vs time since write start (Wada Fig. 2)",
		xLabel: "time since write start (ms)", yLabel: "P(fresh read)", yMin: 0, yMax: 1.05}
	if th := thresholds(runs); len(th) == 1 {
		c.hline = &th[0]
		c.caption = fmt.Sprintf("Each point is one %s ms bucket; the dotted line is the Fig. 3 threshold, %g%%.",
			bucketWidths(runs), 100*th[0])
	}
	for i, col := range cols {
		if col.fresh == nil || len(col.fresh.Buckets) == 0 {
			continue
		}
		s := series{label: col.label, style: i}
		for _, b := range col.fresh.Buckets {
			s.xys = append(s.xys, plotter.XY{X: b.StartMS, Y: b.P})
		}
		c.series = append(c.series, s)
	}
	return c
}

// bucketWidths names the runs' bucket width, "several" when they differ.
func bucketWidths(runs []Run) string {
	var widths []float64
	for _, r := range runs {
		if w := r.Report.Freshness.BucketWidthMS; w > 0 && !slices.Contains(widths, w) {
			widths = append(widths, w)
		}
	}
	if len(widths) == 1 {
		return fmt.Sprintf("%g", widths[0])
	}
	return "several"
}

// percentileNames are the x positions of the latency plot.
var percentileNames = []string{"p50", "p90", "p95", "p99", "p99.9", "max"}

func percentileValues(p measure.Percentiles) []float64 {
	return []float64{p.P50MS, p.P90MS, p.P95MS, p.P99MS, p.P999MS, p.MaxMS}
}

// latencyChart draws the latency percentiles of every (run, kind, option),
// reads solid and writes dashed (after Wada Figs 7-9, at one load).
func latencyChart(runs []Run, labels []string) chart {
	c := chart{name: "latency", title: "Latency percentiles of OK ops", xLabel: "percentile",
		yLabel: "latency (ms)", nominalX: percentileNames, logY: true}
	c.caption = "Reads solid, writes dashed; log scale when every latency is positive."
	style := 0
	for i, r := range runs {
		for _, g := range r.Report.Latency.Groups {
			if g.Latency.Count == 0 {
				continue
			}
			s := series{label: seriesLabel(labels[i], string(g.Kind)+" "+optionLabel(g.Option)), style: style,
				points: true, dashed: g.Kind == measure.KindWrite}
			style++
			for x, v := range percentileValues(g.Latency) {
				s.xys = append(s.xys, plotter.XY{X: float64(x), Y: v})
			}
			c.series = append(c.series, s)
		}
	}
	return c
}

// gammaChart is the CDF of the Gamma scores of every run (CPQ 2): the
// fraction of values whose score is at most x.
func gammaChart(runs []Run, labels []string) chart {
	c := chart{name: "gamma", title: "Gamma score CDF (CPQ 2)", xLabel: "Gamma score (ms)",
		yLabel: "fraction of values", yMin: 0, yMax: 1.05}
	c.caption = "Exact where the run carries every score; otherwise a lower bound drawn through the reported percentiles, marked (percentiles)."
	for i, r := range runs {
		g := r.Report.Gamma
		if g.Values == 0 {
			continue
		}
		s := series{label: labels[i], style: i, step: true}
		if len(g.Scores) > 0 {
			s.xys = ecdf(g.Scores)
		} else {
			s.label += " (percentiles)"
			s.points = true
			s.xys = percentileCDF(g)
		}
		c.series = append(c.series, s)
	}
	// Every CDF reaches 1 at its largest score; drawn on to the largest
	// score of all, a run whose scores are all 0 still shows.
	maxX := 0.0
	for _, s := range c.series {
		maxX = math.Max(maxX, s.xys[len(s.xys)-1].X)
	}
	for i := range c.series {
		if last := c.series[i].xys[len(c.series[i].xys)-1]; last.X < maxX {
			c.series[i].xys = append(c.series[i].xys, plotter.XY{X: maxX, Y: last.Y})
		}
	}
	return c
}

// ecdf is the empirical CDF of the scores, one point per distinct score.
func ecdf(scores []measure.ValueScore) plotter.XYs {
	xs := make([]float64, len(scores))
	for i, s := range scores {
		xs[i] = s.ScoreMS
	}
	slices.Sort(xs)
	var out plotter.XYs
	n := float64(len(xs))
	for i, x := range xs {
		if i+1 < len(xs) && xs[i+1] == x {
			continue
		}
		out = append(out, plotter.XY{X: x, Y: float64(i+1) / n})
	}
	return out
}

// percentileCDF draws the CDF through the nearest-rank percentiles of a
// GammaResult: at its q-th percentile v, at least q of the scores are at
// most v. With no clock uncertainty, every score that is not positive is
// zero, which pins the CDF at 0.
func percentileCDF(g measure.GammaResult) plotter.XYs {
	var out plotter.XYs
	if g.ClockUncertaintyMS == 0 && g.Values > 0 {
		out = append(out, plotter.XY{X: 0, Y: 1 - g.PositiveFraction})
	}
	qs := []float64{0.5, 0.9, 0.95, 0.99, 0.999, 1}
	for i, v := range percentileValues(g.All) {
		out = append(out, plotter.XY{X: v, Y: qs[i]})
	}
	slices.SortStableFunc(out, func(a, b plotter.XY) int {
		switch {
		case a.X < b.X:
			return -1
		case a.X > b.X:
			return 1
		}
		return 0
	})
	// A CDF never falls: a lower percentile at the same score says less.
	for i := 1; i < len(out); i++ {
		out[i].Y = math.Max(out[i].Y, out[i-1].Y)
	}
	return out
}

// sweepSeries is one (run, read option) of a load sweep, in order of
// client count.
type sweepSeries struct {
	label  string
	style  int
	points []measure.SweepPoint
}

func sweepSeriesOf(runs []Run, labels []string) []sweepSeries {
	var out []sweepSeries
	for i, r := range runs {
		if r.Sweep == nil {
			continue
		}
		byOption := map[string]int{}
		for _, p := range r.Sweep.Points {
			option := sweepOption(p)
			j, ok := byOption[option]
			if !ok {
				j = len(out)
				byOption[option] = j
				label := labels[i]
				if option != "" {
					label = seriesLabel(labels[i], option)
				}
				out = append(out, sweepSeries{label: label, style: j})
			}
			out[j].points = append(out[j].points, p)
		}
	}
	for i := range out {
		slices.SortStableFunc(out[i].points, func(a, b measure.SweepPoint) int { return a.Clients - b.Clients })
	}
	return out
}

// sweepPlotNames are the plots of a load sweep, written only for runs
// that have one.
var sweepPlotNames = []string{"sweep_throughput", "sweep_latency", "sweep_failures"}

// sweepCharts are Wada Figs 7-12 for the runs that carry a load sweep: nil
// when none does.
func sweepCharts(runs []Run, labels []string) []chart {
	all := sweepSeriesOf(runs, labels)
	if len(all) == 0 {
		return nil
	}
	through := chart{name: sweepPlotNames[0], title: "Throughput vs clients (Wada Fig. 10)", xLabel: "clients",
		yLabel: "OK ops/s"}
	latency := chart{name: sweepPlotNames[1], title: "Read latency vs clients (Wada Figs 7-9)", xLabel: "clients",
		yLabel: "read latency (ms)", logY: true, caption: "p50 solid, p99 dashed."}
	failures := chart{name: sweepPlotNames[2], title: "Failure rate vs clients (Wada Fig. 12)", xLabel: "clients",
		yLabel: "failed ops / all ops", yMin: 0, yMax: 1.05}
	for _, s := range all {
		t := series{label: s.label, style: s.style, points: true}
		f := series{label: s.label, style: s.style, points: true}
		p50 := series{label: s.label + " p50", style: s.style, points: true}
		p99 := series{label: s.label + " p99", style: s.style, points: true, dashed: true}
		for _, p := range s.points {
			x := float64(p.Clients)
			t.xys = append(t.xys, plotter.XY{X: x, Y: p.ThroughputOpsPerS})
			if p.OK+p.Failed > 0 {
				f.xys = append(f.xys, plotter.XY{X: x, Y: p.FailureRate})
			}
			if g := sweepGroup(p, measure.KindRead); g != nil && g.Latency.Count > 0 {
				p50.xys = append(p50.xys, plotter.XY{X: x, Y: g.Latency.P50MS})
				p99.xys = append(p99.xys, plotter.XY{X: x, Y: g.Latency.P99MS})
			}
		}
		through.series = append(through.series, t)
		failures.series = append(failures.series, f)
		latency.series = append(latency.series, p50, p99)
	}
	return []chart{through, latency, failures}
}

// charts returns every plot of the report, in order.
func charts(runs []Run, labels []string, cols []column) []chart {
	out := []chart{freshnessChart(runs, cols), latencyChart(runs, labels), gammaChart(runs, labels)}
	return append(out, sweepCharts(runs, labels)...)
}
