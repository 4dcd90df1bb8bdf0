package experiment

import (
	"strconv"
	"time"

	"github.com/cosla/cosla/internal/lab/driver"
	"github.com/cosla/cosla/internal/lab/measure"
)

// cpqPlugin is CPQ's (consistency-latency trade-offs, Figs 1-3) part of
// the lab: the Gamma analysis of each run's trace, latency and
// staleness per read and write level, and, beyond the paper, the
// windows the tuner is judged by. Its scenarios draw the engine's Puts
// and Gets.
type cpqPlugin struct{}

func (cpqPlugin) outputs() []string { return []string{OutStaleness, OutLevels, OutWindows} }

func (cpqPlugin) metrics() []string { return nil }

func (cpqPlugin) tables(s *Scenario, r *Result) []Table {
	var out []Table
	if s.wants(OutStaleness) {
		out = append(out, stalenessTable(s, r))
	}
	if s.wants(OutLevels) {
		out = append(out, levelsTable(s, r))
	}
	if s.wants(OutWindows) {
		out = append(out, windowsTable(s, r), windowsEachTable(s, r))
		if s.Repeat > 1 {
			out = append(out, windowsMeanTable(s, r))
		}
	}
	return out
}

func (cpqPlugin) plots(*Scenario, *Result) ([]Figure, error) { return nil, nil }

// stalenessTable is the Gamma analysis of each run's trace.
func stalenessTable(s *Scenario, r *Result) Table {
	t := Table{Name: "staleness", Title: "Staleness from the trace: Gamma scores (CPQ 2)",
		Header: append(runColumns(s), "values", "positive", "positive %", "p50 ms", "p95 ms", "p99 ms", "max ms")}
	for _, run := range r.Runs {
		st := run.Staleness
		if st == nil {
			continue
		}
		t.Rows = append(t.Rows, append(runCells(s, run), strconv.Itoa(st.Values), strconv.Itoa(st.Positive),
			f2(100*st.PositiveFraction), f3(st.P50MS), f3(st.P95MS), f3(st.P99MS), f3(st.MaxMS)))
	}
	t.Caption = "A value's Gamma score is how far its write and the reads that returned it deviate from linearizability (Golab et al.); the fraction of positive scores estimates the fraction of stale reads, and the percentiles are of the positive scores. Values read that no Put of the run wrote (the loaded ones) are not scored."
	if r.Mode == "cluster" && len(s.Strategies)*len(s.Clients) > 1 {
		t.Caption += " On a cluster the runs of a point go at once on the same keys, so each row covers all of them."
	}
	return t
}

// levelsTable sets each run's read and write p95 latency beside the
// share of its values read stale (CPQ Figs 1-3).
func levelsTable(s *Scenario, r *Result) Table {
	t := Table{Name: "levels", Title: "Latency and staleness per read and write level choice (CPQ Figs 1-3)",
		Header: append(runColumns(s), "reads", "read p95 ms", "writes", "write p95 ms", "values", "stale %", "stale >= 2 ms %")}
	for _, run := range r.Runs {
		row := runCells(s, run)
		for _, op := range []string{"get", "put"} {
			count, p95 := "0", ""
			for _, o := range run.Ops {
				if o.Op == op {
					count, p95 = strconv.FormatInt(o.Count, 10), f3(o.LatencyMS.P95)
				}
			}
			row = append(row, count, p95)
		}
		if st := run.Staleness; st != nil {
			row = append(row, strconv.Itoa(st.Values), f2(100*st.PositiveFraction), f2(100*st.PositiveOver2MSFraction))
		} else {
			row = append(row, "", "", "")
		}
		t.Rows = append(t.Rows, row)
	}
	t.Caption = "p95 is over the operations that succeeded (HDR histograms). Stale % is the share of values with a positive Gamma score (CPQ 2), CPQ's estimate of the stale-read fraction; the trace's times come from one clock (the simulator's, or on a cluster the experiment process's), so every positive score counts. CPQ 3.1.3 dropped scores below about 2 ms, its hosts' clock uncertainty: the last column does the same."
	t.Caption += virtualNote(r)
	return t
}

// cpqClockMS is the clock-synchronization threshold of CPQ 3.1.3: scores
// below about 2 ms were dropped there.
const cpqClockMS = 2

// stalenessOf computes the Gamma scores of a trace. The runs' own clock
// is the one clock of the trace, so no score is within clock
// uncertainty.
func stalenessOf(ops []measure.Op) *Staleness {
	g := measure.Gamma(ops, measure.Config{})
	cpq := measure.Gamma(ops, measure.Config{ClockUncertaintyMS: cpqClockMS})
	return &Staleness{Values: g.Values, Positive: g.Positive, PositiveFraction: g.PositiveFraction, PositiveOver2MSFraction: cpq.PositiveFraction,
		P50MS: g.Positives.P50MS, P95MS: g.Positives.P95MS, P99MS: g.Positives.P99MS, MaxMS: g.Positives.MaxMS}
}

// record is CPQ's share of a unit: the Gamma analysis of the unit's
// trace (staleness and levels outputs; on a cluster the runs of a unit
// share keys, so it covers all of them) and each run judged window by
// window from the warmup's end against the mode's targets (windows
// output).
func (cpqPlugin) record(u *unit, t timing) unitPart {
	s := u.s
	p := &cpqPart{runs: u.runs, staleness: s.wants(OutStaleness) || s.wants(OutLevels), windows: s.wants(OutWindows)}
	if !p.staleness && !p.windows {
		return nil
	}
	if p.windows {
		p.from, p.targets, p.wops = t.scaled(s.Workload.Warmup), targetsFor(s, t.cluster), map[*run][]windowOp{}
	}
	return p
}

// cpqPart keeps what the staleness and windows outputs need.
type cpqPart struct {
	runs               []*run
	staleness, windows bool
	from               time.Duration
	targets            TargetsSpec
	wops               map[*run][]windowOp
}

func (p *cpqPart) keepsOps() bool { return p.staleness }

func (p *cpqPart) op(r *run, op *driver.Op, _ bool) {
	if p.windows {
		p.wops[r] = append(p.wops[r], newWindowOp(op))
	}
}

func (p *cpqPart) finish(rec *driver.Recorder) {
	var staleness *Staleness
	if p.staleness {
		staleness = stalenessOf(rec.Ops())
	}
	for _, r := range p.runs {
		r.r.Staleness = staleness
		if p.windows {
			w := windowsOf(p.wops[r], p.from, p.targets)
			r.r.Windows = &w
		}
	}
}

// LevelsResult is CPQ's section of a run's result.
type LevelsResult struct {
	// Staleness is the Gamma analysis of the run's trace (staleness
	// output). On a cluster the runs of a point share keys, so it covers
	// all of them.
	Staleness *Staleness `json:"staleness,omitempty"`
	// Windows judges the run window by window against the scenario's
	// targets (windows output).
	Windows *Windows `json:"windows,omitempty"`
}

// Staleness is what the Gamma scores of a run's trace say (Golab et
// al.; CPQ 2; package measure): the fraction of values whose score is
// positive, CPQ's estimate of the stale-read fraction, and how stale
// they were.
type Staleness struct {
	Values           int     `json:"values"`
	Positive         int     `json:"positive"`
	PositiveFraction float64 `json:"positive_fraction"`
	// PositiveOver2MSFraction counts only the scores of 2 ms or more, as
	// CPQ 3.1.3 did to stay above its hosts' clock-synchronization
	// uncertainty.
	PositiveOver2MSFraction float64 `json:"positive_over_2ms_fraction"`
	// P50MS ... MaxMS are percentiles of the positive scores.
	P50MS float64 `json:"p50_ms"`
	P95MS float64 `json:"p95_ms"`
	P99MS float64 `json:"p99_ms"`
	MaxMS float64 `json:"max_ms"`
}

// CPQ's outputs: the Gamma analysis, latency and staleness per level,
// and the windows the tuner is judged by.
const (
	OutStaleness = "staleness"
	OutLevels    = "levels"
	OutWindows   = "windows"
)
