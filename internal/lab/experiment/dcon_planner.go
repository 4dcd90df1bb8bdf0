package experiment

import (
	"fmt"
	"strconv"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"

	"github.com/cosla/cosla/internal/core/dcon"
	"github.com/cosla/cosla/internal/core/replica"
)

// The planner's overhead (dConssandra 6-D, Fig. 11): every storage node
// keeps the inputs of its recent decisions (replica.Node.Decisions);
// after a run in the simulator each is replayed through dcon.Decide and
// timed on this machine's clock. The decisions are a function of the
// seed; their times are not: they are the one part of a simulated
// Result that is not.

// PlannerStats is the planner's decisions of a run, replayed.
type PlannerStats struct {
	// Made counts the decisions the nodes made (replica metrics);
	// Replayed those kept and timed (each node keeps its latest
	// replica.decisionsMax).
	Made     int64 `json:"made"`
	Replayed int   `json:"replayed"`
	// What the planner chose: a write answered once coordinated, once
	// executed everywhere, or received only; a read that acquires, one
	// answered NULL, one read as it is.
	Coordinated int `json:"coordinated"`
	Spread      int `json:"spread"`
	Received    int `json:"received"`
	Acquire     int `json:"acquire"`
	Null        int `json:"null"`
	ReadOnly    int `json:"read_only"`
	// The time of one decision, in nanoseconds, measured on this
	// machine: each one timed alone, so each holds one clock reading's
	// overhead, ClockNS (the fastest of many empty timings).
	ClockNS  float64    `json:"clock_ns"`
	P50NS    float64    `json:"p50_ns"`
	P90NS    float64    `json:"p90_ns"`
	P99NS    float64    `json:"p99_ns"`
	P999NS   float64    `json:"p99_9_ns"`
	MaxNS    float64    `json:"max_ns"`
	Under500 float64    `json:"under_500ns_fraction"`
	CDF      []Quantile `json:"cdf"`
}

// Quantile is a point of a distribution: a fraction Q of the values are
// at most V.
type Quantile struct {
	Q float64 `json:"q"`
	V float64 `json:"v"`
}

// plannerQuantiles are where the CDF is read, in percent: to 99%, as
// the paper's Fig. 11 draws it, then the tail.
var plannerQuantiles = []float64{1, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 97, 98, 99, 99.7, 99.9, 100}

// replayPlanner times every decision, and counts what it chose (which
// also keeps the compiler from dropping the timed calls).
func replayPlanner(made int64, decisions []replica.Decision) *PlannerStats {
	st := &PlannerStats{Made: made, Replayed: len(decisions)}
	clock := time.Hour
	for range 10_000 {
		t0 := time.Now()
		clock = min(clock, time.Since(t0))
	}
	st.ClockNS = float64(clock)
	h := hdrhistogram.New(1, int64(time.Second), 3)
	under := 0
	for _, d := range decisions {
		t0 := time.Now()
		p := dcon.Decide(d.Budget, &d.Costs, d.Work)
		took := time.Since(t0)
		if took < 500*time.Nanosecond {
			under++
		}
		_ = h.RecordValue(min(max(int64(took), 1), int64(time.Second)))
		switch {
		case d.Work.Write && p.Spread:
			st.Spread++
		case d.Work.Write && p.Coordinated:
			st.Coordinated++
		case d.Work.Write:
			st.Received++
		case p.Null:
			st.Null++
		case p.Acquire:
			st.Acquire++
		default:
			st.ReadOnly++
		}
	}
	if len(decisions) == 0 {
		return st
	}
	st.Under500 = float64(under) / float64(len(decisions))
	at := func(q float64) float64 { return float64(h.ValueAtQuantile(q)) }
	st.P50NS, st.P90NS, st.P99NS, st.P999NS, st.MaxNS = at(50), at(90), at(99), at(99.9), float64(h.Max())
	for _, q := range plannerQuantiles {
		st.CDF = append(st.CDF, Quantile{Q: q / 100, V: at(q)})
	}
	return st
}

// plannerTable is Fig. 11 in numbers.
func plannerTable(s *Scenario, r *Result) Table {
	t := Table{Name: "planner", Title: "The planner's time per decision (Fig. 11), decisions replayed and timed on this machine",
		Header: append(runColumns(s), "decisions", "replayed", "p50 ns", "p90 ns", "p99 ns", "paper p99 ns", "p99.9 ns", "max ns", "paper max ns",
			"under 500 ns %", "clock ns", "writes: received/coordinated/spread", "reads: as is/acquire/null")}
	p99, okP99 := paperPoint(s, "planner_p99_us", "", "")
	maxUS, okMax := paperPoint(s, "planner_max_us", "", "")
	nsCell := func(us float64, ok bool) string {
		return paperCell(us*1000, ok, func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) })
	}
	for _, run := range r.Runs {
		p := run.Planner
		if p == nil {
			continue
		}
		row := append(runCells(s, run), strconv.FormatInt(p.Made, 10), strconv.Itoa(p.Replayed))
		if p.Replayed == 0 {
			t.Rows = append(t.Rows, append(row, "", "", "", nsCell(p99, okP99), "", "", nsCell(maxUS, okMax), "", "", "", ""))
			continue
		}
		t.Rows = append(t.Rows, append(row, f1(p.P50NS), f1(p.P90NS), f1(p.P99NS), nsCell(p99, okP99), f1(p.P999NS), f1(p.MaxNS), nsCell(maxUS, okMax),
			f2(100*p.Under500), f1(p.ClockNS),
			fmt.Sprintf("%d/%d/%d", p.Received, p.Coordinated, p.Spread), fmt.Sprintf("%d/%d/%d", p.ReadOnly, p.Acquire, p.Null)))
	}
	t.Caption = "Every storage node keeps the inputs of its latest decisions (budget, learned costs, pending work); after the run each is replayed through dcon.Decide and timed alone on this machine's monotonic clock, so each time holds one clock reading (the clock column: the fastest of 10,000 empty timings). The decisions are the seed's; their times are this machine's and vary from run to run. The paper's numbers are bounds: 99% of its decisions under 0.5 us, the slowest 0.2 ms."
	if r.Mode == "cluster" {
		t.Caption += " On a cluster the decisions come from each site's /decisions and are replayed in the experiment's process; the nodes keep their latest 4,096 each, the load's among them."
	}
	return t
}

// plannerPlot is Fig. 11: the CDF of a decision's time, one curve a run.
func plannerPlot(s *Scenario, r *Result) (Figure, error) {
	p := newPlot("The planner's time per decision, CDF (Fig. 11)", "ns per decision (log scale)", "fraction of decisions")
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	p.Y.Min, p.Y.Max = 0, 1
	i := 0
	for _, run := range r.Runs {
		if run.Planner == nil || len(run.Planner.CDF) == 0 {
			continue
		}
		var xys plotter.XYs
		for _, q := range run.Planner.CDF {
			xys = append(xys, plotter.XY{X: max(q.V, 1), Y: q.Q})
		}
		name := run.Point
		if run.Series != "" {
			name = run.Series + " " + name
		}
		if name == "" {
			name = "decisions"
		}
		if err := addCurve(p, i, name, xys); err != nil {
			return Figure{}, err
		}
		i++
	}
	if i == 0 {
		return Figure{}, errNoPlot
	}
	// The paper's bound: 99% of decisions under half a microsecond.
	if err := addCurve(p, i, "paper: 99% under 500 ns", plotter.XYs{{X: 500, Y: 0}, {X: 500, Y: 0.99}}); err != nil {
		return Figure{}, err
	}
	p.Legend.Top, p.Legend.Left = false, false
	return Figure{Name: "planner-cdf", Title: p.Title.Text, plot: p}, nil
}
