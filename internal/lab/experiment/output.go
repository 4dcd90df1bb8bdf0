package experiment

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Table is one table of a report: written as tables/NAME.csv and as a
// Markdown table in report.md. Cells hold plain numbers; a paper column
// beside ours is empty where the paper's number does not survive.
type Table struct {
	Name    string
	Title   string
	Header  []string
	Rows    [][]string
	Caption string
}

// Cells returns row i's cells with missing, a mark, for each empty cell
// of a paper column: a number that did not survive in the paper's text.
func (t Table) Cells(i int, missing string) []string {
	cells := make([]string, len(t.Rows[i]))
	for j, c := range t.Rows[i] {
		cells[j] = c
		if c == "" && strings.HasSuffix(t.Header[j], "paper") {
			cells[j] = missing
		}
	}
	return cells
}

// Tables builds the scenario's tables from a result: each plug-in's, in
// the order of the registry.
func Tables(s *Scenario, r *Result) []Table {
	var out []Table
	for _, p := range plugins {
		out = append(out, p.tables(s, r)...)
	}
	return out
}

// enginePlugin is the engine's own output, every paper's: latency
// percentiles, throughput and failures per op and strategy (with a
// sweep, throughput-latency curves).
type enginePlugin struct{}

func (enginePlugin) outputs() []string { return []string{OutOps} }

func (enginePlugin) metrics() []string { return nil }

func (enginePlugin) tables(s *Scenario, r *Result) []Table {
	if !s.wants(OutOps) {
		return nil
	}
	out := []Table{opsTable(s, r)}
	if s.Repeat > 1 {
		out = append(out, summaryTable(s, r))
	}
	return out
}

func (enginePlugin) plots(s *Scenario, r *Result) ([]Figure, error) {
	if !s.wants(OutOps) || s.Sweep == nil {
		return nil, nil
	}
	throughput, err := throughputPlot(s, r)
	if err != nil {
		return nil, err
	}
	latency, err := latencyCurvePlot(s, r)
	if err != nil {
		return nil, err
	}
	return []Figure{throughput, latency}, nil
}

// runColumns are the columns that name a run: the sweep's point and the
// seed when the scenario has them.
func runColumns(s *Scenario) []string {
	return append(pointColumns(s), "sla", "client", "strategy")
}

func runCells(s *Scenario, r RunResult) []string {
	return append(pointCells(s, r.Series, r.Point, r.Seed), r.SLA, r.Client, r.Strategy)
}

// pointColumns name where in the scenario a run stands: its series, the
// sweep's point and the seed, when the scenario has them; pointCells are
// a run's values of them.
func pointColumns(s *Scenario) []string {
	h := seriesColumn(s, "series")
	if s.Sweep != nil {
		h = append(h, s.Sweep.Param)
	}
	if s.Repeat > 1 {
		h = append(h, "seed")
	}
	return h
}

// seriesColumn is a table's series column (its header or a row's cell)
// when the scenario has series, else nothing.
func seriesColumn(s *Scenario, cell string) []string {
	if len(s.Series) > 0 {
		return []string{cell}
	}
	return nil
}

func pointCells(s *Scenario, series, point string, seed uint64) []string {
	c := seriesColumn(s, series)
	if s.Sweep != nil {
		c = append(c, point)
	}
	if s.Repeat > 1 {
		c = append(c, strconv.FormatUint(seed, 10))
	}
	return c
}

func f2(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

// opsTable has one row per run and op label: what the driver measured.
func opsTable(s *Scenario, r *Result) Table {
	sessions := s.Sweep == nil || s.Sweep.Param != "sessions"
	t := Table{Name: "ops", Title: "Operations per run: count, throughput, latency percentiles (ms) and failures",
		Header: runColumns(s)}
	if sessions {
		t.Header = append(t.Header, "sessions")
	}
	t.Header = append(t.Header, "op", "count", "ops/s", "mean", "p50", "p95", "p99", "p99.9", "failed %")
	for _, run := range r.Runs {
		for _, o := range run.Ops {
			l := o.LatencyMS
			row := runCells(s, run)
			if sessions {
				row = append(row, strconv.Itoa(run.Sessions))
			}
			t.Rows = append(t.Rows, append(row, o.Op, strconv.FormatInt(o.Count, 10),
				f1(o.ThroughputOpsPerS), f3(l.Mean), f3(l.P50), f3(l.P95), f3(l.P99), f3(l.P999), f2(100*o.FailureRate)))
		}
	}
	t.Caption = "Latency is over the operations that succeeded; ops/s counts them per second of the run after its warmup. An op is a step of the workload: a Get or a Put, or a YCSB operation (a read-modify-write or a scan counts once)."
	t.Caption += virtualNote(r)
	return t
}

// summaryTable sets each (point, SLA, client, strategy) over its
// repeats: means with 95% confidence intervals.
func summaryTable(s *Scenario, r *Result) Table {
	var h []string
	if s.Sweep != nil {
		h = append(h, s.Sweep.Param)
	}
	t := Table{Name: "summary", Title: fmt.Sprintf("Over %d seeds: mean ± 95%% confidence interval", s.Repeat),
		Header: append(h, "sla", "client", "strategy", "avg utility", "ops/s", "op", "p50 ms", "p95 ms", "p99 ms")}
	pm := func(e Estimate, format func(float64) string) string { return format(e.Mean) + " ± " + format(e.CI95) }
	for _, sm := range r.Summaries {
		for _, o := range sm.Ops {
			var row []string
			if s.Sweep != nil {
				row = append(row, sm.Point)
			}
			row = append(row, sm.SLA, sm.Client, sm.Strategy, pm(sm.AvgUtility, f3), pm(sm.Throughput, f1),
				o.Op, pm(o.P50MS, f3), pm(o.P95MS, f3), pm(o.P99MS, f3))
			t.Rows = append(t.Rows, row)
		}
	}
	t.Caption = "Student's t interval over the repeats' values, each repeat a run with its own seed."
	return t
}

func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
func f3(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }

func paperCell(v float64, ok bool, format func(float64) string) string {
	if !ok {
		return ""
	}
	return format(v)
}

// WriteOptions says how a result was produced, for the report.
type WriteOptions struct {
	// Command is the exact command line that reproduces the run.
	Command string
}

// Write writes results.json, tables/*.csv, plots/*.png and *.svg, and
// report.md into dir, creating it. It returns the files written.
func Write(dir string, s *Scenario, r *Result, o WriteOptions) ([]string, error) {
	var files []string
	for _, sub := range []string{"tables", "plots"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return nil, err
		}
	}
	js, err := MarshalResult(r)
	if err != nil {
		return nil, err
	}
	write := func(name string, data []byte) error {
		p := filepath.Join(dir, name)
		files = append(files, p)
		return os.WriteFile(p, data, 0o644)
	}
	if err := write("results.json", js); err != nil {
		return nil, err
	}
	tables := Tables(s, r)
	for _, t := range tables {
		var buf bytes.Buffer
		cw := csv.NewWriter(&buf)
		if err := cw.Write(t.Header); err != nil {
			return nil, err
		}
		if err := cw.WriteAll(t.Rows); err != nil {
			return nil, err
		}
		if err := write(filepath.Join("tables", t.Name+".csv"), buf.Bytes()); err != nil {
			return nil, err
		}
	}
	figs, err := Plots(s, r)
	if err != nil {
		return nil, err
	}
	for _, f := range figs {
		for _, ext := range []string{".png", ".svg"} {
			name := filepath.Join("plots", f.Name+ext)
			if err := f.Save(filepath.Join(dir, name)); err != nil {
				return nil, fmt.Errorf("plot %s: %w", name, err)
			}
			files = append(files, filepath.Join(dir, name))
		}
	}
	if err := write("report.md", Markdown(s, r, tables, figs, o)); err != nil {
		return nil, err
	}
	return files, nil
}

// MarshalResult is results.json: indented JSON, identical for identical
// results.
func MarshalResult(r *Result) ([]byte, error) {
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(js, '\n'), nil
}

// Markdown renders report.md.
func Markdown(s *Scenario, r *Result, tables []Table, figs []Figure, o WriteOptions) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# %s\n\n%s\n\n", s.Name, s.Description)
	if s.Reference != "" {
		fmt.Fprintf(&b, "Reproduces: %s.\n\n", s.Reference)
	}
	if r.Mode == "cluster" {
		fmt.Fprintf(&b, "- mode: cluster (real processes, TCP and an emulated WAN on this machine; real time, scaled by %g: the workload's duration, the schedule, the pull interval and the clients' probe interval and RTT window; latencies unscaled)\n- seed: %d (the workload; the network's timing is not reproducible)\n", r.Scale, r.Seed)
	} else {
		fmt.Fprintf(&b, "- mode: %s (deterministic simulator, virtual time)\n- seed: %d\n- scale: %g\n- trace hash: %s\n", r.Mode, r.Seed, r.Scale, r.TraceHash)
	}
	if o.Command != "" {
		fmt.Fprintf(&b, "- reproduce with: `%s`\n", o.Command)
	}
	wp, own := worldOf(s)
	if own {
		b.WriteString(wp.describe(s, r.Mode))
	} else {
		fmt.Fprintf(&b, "- topology: %s; %d tablet(s) (%s), %d replicas each over %s (primaries at %s), pull every %s",
			s.topo.Name, s.Table.Tablets, s.Table.Partition, s.Table.Replicas, strings.Join(replicaSites(s), ", "), s.Table.Primary, s.Table.PullInterval)
		if s.Table.Push {
			b.WriteString(", push")
		}
	}
	w := s.Workload
	switch {
	case w.YCSB != "":
		fmt.Fprintf(&b, "\n- workload: YCSB %s over %d keys, ", w.YCSB, w.Keys)
	default:
		b.WriteString(workloadText(s))
	}
	if w.ValueSize > 0 {
		fmt.Fprintf(&b, "%d-byte values, ", w.ValueSize)
	}
	if w.SessionOps > 0 {
		fmt.Fprintf(&b, "%d operations per session, ", w.SessionOps)
	} else {
		b.WriteString("sessions lasting the run, ")
	}
	if w.Rate > 0 {
		fmt.Fprintf(&b, "an open loop of %g operations/s per client site and strategy, ", w.Rate)
	}
	switch {
	case r.Mode == "cluster" && w.Duration == 0 && s.Cluster.Ops > 0:
		fmt.Fprintf(&b, "%d operations per run on the cluster (cluster.ops)\n", s.Cluster.Ops)
	case r.Mode == "cluster":
		d := w.Duration
		if d == 0 {
			d = s.Cluster.Duration
		}
		fmt.Fprintf(&b, "%s per run on the cluster (%s times %g), a pause of %s after each operation\n",
			time.Duration(float64(d)*r.Scale), d, r.Scale, max(w.Think, s.Cluster.Think))
	case w.Duration > 0:
		fmt.Fprintf(&b, "%s of virtual time per run (times %g)\n", w.Duration, r.Scale)
	default:
		fmt.Fprintf(&b, "%d operations per run (times %g)\n", w.Ops, r.Scale)
	}
	if w.Warmup > 0 {
		warmup := w.Warmup.String()
		if r.Mode == "cluster" && r.Scale != 1 {
			warmup = fmt.Sprintf("%s (%s times %g)", time.Duration(float64(w.Warmup)*r.Scale), w.Warmup, r.Scale)
		}
		fmt.Fprintf(&b, "- warmup: operations starting in the first %s are left out of the statistics\n", warmup)
	}
	var clients []string
	for _, c := range s.Clients {
		clients = append(clients, fmt.Sprintf("%s (%d sessions)", c.Site, c.Sessions))
	}
	fmt.Fprintf(&b, "- clients: %s; strategies: %s\n", strings.Join(clients, ", "), strings.Join(s.Strategies, ", "))
	if len(s.Series) > 0 {
		fmt.Fprintf(&b, "- series, each run apart: %s\n", strings.Join(describeSeries(s), "; "))
	}
	if s.Sweep != nil {
		fmt.Fprintf(&b, "- sweep: %s over %s, one row per point\n", s.Sweep.Param, strings.Join(s.Sweep.Values, ", "))
	}
	if s.Repeat > 1 {
		fmt.Fprintf(&b, "- repeats: %d seeds (%d to %d), means with 95%% confidence intervals\n", s.Repeat, r.Seed, r.Seed+uint64(s.Repeat)-1)
	}
	if r.Mode == "sim" {
		fmt.Fprintf(&b, "- where time goes in the simulator: %s\n", s.Sim.describe())
	}
	if r.Sim != nil {
		fmt.Fprintf(&b, "- beside the cluster's, the simulator's model of it (seed %d, trace hash %s): %s\n",
			r.Sim.Seed, r.Sim.TraceHash, s.ClusterModel().Sim.describe())
	}
	if !own {
		b.WriteString("- SLAs:\n")
		for _, v := range s.slas {
			fmt.Fprintf(&b, "  - %s: `%s`\n", v.Name, v.SLA)
		}
	}
	if len(s.Schedule) > 0 {
		b.WriteString("- schedule (virtual time since the workload started):\n")
		for _, e := range s.Schedule {
			when := fmt.Sprintf("at %s", e.At)
			if e.AfterGets > 0 {
				when = fmt.Sprintf("after %d Gets", e.AfterGets)
			}
			if e.Node != "" {
				fmt.Fprintf(&b, "  - %s %s: %s %s%s\n", e.Label, when, e.Action, e.Node, rttText(e))
				continue
			}
			fmt.Fprintf(&b, "  - %s %s: %s from %s to %s %s%s\n", e.Label, when, e.Action, e.From, e.To, e.Node, rttText(e))
		}
	}
	if s.Paper.Notes != "" {
		fmt.Fprintf(&b, "\n## The paper's numbers\n\n%s\n", strings.TrimSpace(s.Paper.Notes))
		b.WriteString("\nIn the tables a column named \"paper\" sits beside ours; an empty paper cell (–) is a number that did not survive in the paper's text.\n")
	}
	for _, t := range tables {
		fmt.Fprintf(&b, "\n## %s\n\n", t.Title)
		b.WriteString("| " + strings.Join(t.Header, " | ") + " |\n")
		b.WriteString(strings.Repeat("|---", len(t.Header)) + "|\n")
		for i := range t.Rows {
			b.WriteString("| " + strings.Join(t.Cells(i, "–"), " | ") + " |\n")
		}
		if t.Caption != "" {
			fmt.Fprintf(&b, "\n%s\n", t.Caption)
		}
		fmt.Fprintf(&b, "\nCSV: `tables/%s.csv`\n", t.Name)
	}
	if len(figs) > 0 {
		b.WriteString("\n## Plots\n")
		for _, f := range figs {
			fmt.Fprintf(&b, "\n### %s\n\n![%s](plots/%s.png)\n\n(also `plots/%s.svg`)\n", f.Title, f.Title, f.Name, f.Name)
		}
	}
	return b.Bytes()
}

func rttText(e EventSpec) string {
	switch {
	case e.Action == ActionSpikes:
		return fmt.Sprintf(" rtt %s for %s every %s on average until %s", e.RTT, e.For, e.Every, e.Until)
	case e.Action == ActionSlow:
		return fmt.Sprintf(" service %s", e.Service)
	case e.RTT != 0:
		return fmt.Sprintf(" rtt %s", e.RTT)
	}
	return ""
}

// A workloadDescriber is a mixer that says what its mix draws, for the
// report.
type workloadDescriber interface {
	describeWorkload(s *Scenario) string
}

// workloadText is the report's words on a workload of Puts and Gets, or
// on the mix of the plug-in that claims the scenario, if it says.
func workloadText(s *Scenario) string {
	if m, ok := mixerOf(s); ok {
		if d, ok := m.(workloadDescriber); ok {
			return d.describeWorkload(s)
		}
	}
	w := s.Workload
	return fmt.Sprintf("\n- workload: %d keys (%s), put fraction %g, ", w.Keys, w.Distribution, w.PutFraction)
}

// virtualNote is what a caption says of a result's times: in the
// simulator, that they are virtual.
func virtualNote(r *Result) string {
	if r.Mode == "sim" {
		return " Times are virtual."
	}
	return ""
}
