package experiment

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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

// Tables builds the scenario's tables from a result.
func Tables(s *Scenario, r *Result) []Table {
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
	if s.wants(OutOps) {
		out = append(out, opsTable(s, r))
		if s.Repeat > 1 {
			out = append(out, summaryTable(s, r))
		}
	}
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
	if s.wants(OutBoundLatency) {
		out = append(out, boundLatencyTable(s, r))
	}
	if s.wants(OutReadLatency) {
		out = append(out, readLatencyTable(s, r))
	}
	if s.wants(OutReturned) {
		out = append(out, returnedTable(s, r))
	}
	if s.wants(OutCosts) {
		out = append(out, costsTable(s, r))
	}
	if s.wants(OutPlanner) {
		out = append(out, plannerTable(s, r))
	}
	if s.wants(OutBounded) {
		out = append(out, boundedTable(s, r), costsLearnedTable(s, r))
	}
	return append(out, causalTables(s, r)...)
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
	if r.Mode == "sim" {
		t.Caption += " Times are virtual."
	}
	return t
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
	var h []string
	if len(s.Series) > 0 {
		h = append(h, "series")
	}
	if s.Sweep != nil {
		h = append(h, s.Sweep.Param)
	}
	if s.Repeat > 1 {
		h = append(h, "seed")
	}
	return h
}

func pointCells(s *Scenario, series, point string, seed uint64) []string {
	var c []string
	if len(s.Series) > 0 {
		c = append(c, series)
	}
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
	if r.Mode == "sim" {
		t.Caption += " Times are virtual."
	}
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

func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
func f3(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }

func paperCell(v float64, ok bool, format func(float64) string) string {
	if !ok {
		return ""
	}
	return format(v)
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
	if s.causal() {
		b.WriteString(s.causalDescription())
		if r.Mode == "cluster" {
			b.WriteString(s.causalClusterDescription())
		}
	} else {
		fmt.Fprintf(&b, "- topology: %s; %d tablet(s) (%s), %d replicas each over %s (primaries at %s), pull every %s",
			s.topo.Name, s.Table.Tablets, s.Table.Partition, s.Table.Replicas, strings.Join(s.replicaSites(), ", "), s.Table.Primary, s.Table.PullInterval)
		if s.Table.Push {
			b.WriteString(", push")
		}
	}
	w := s.Workload
	switch {
	case w.YCSB != "":
		fmt.Fprintf(&b, "\n- workload: YCSB %s over %d keys, ", w.YCSB, w.Keys)
	case w.Group != nil:
		reset := ""
		if w.Group.Reset {
			reset = ", then a consistent (unbounded) reset read"
		}
		fmt.Fprintf(&b, "\n- workload: %d keys loaded (load bound %s), then groups of %d writes of one fresh key at %s, a read of it at %s%s; ",
			w.Keys, s.boundText(w.LoadBound, ""), w.Group.Writes, s.boundText(w.Group.WriteBound, w.Bound), s.boundText(w.Group.ReadBound, w.Bound), reset)
	case s.dcon():
		put := "Puts"
		if w.RTW {
			put = "read-test-writes (conditional inserts)"
		}
		fmt.Fprintf(&b, "\n- workload: %d keys loaded (load bound %s), %s of %s keys at %s (fraction %g), Gets at %s, ",
			w.Keys, s.boundText(w.LoadBound, ""), put, w.Distribution, s.boundText(w.PutBound, w.Bound), w.PutFraction, s.boundText(w.GetBound, w.Bound))
	default:
		fmt.Fprintf(&b, "\n- workload: %d keys (%s), put fraction %g, ", w.Keys, w.Distribution, w.PutFraction)
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
		fmt.Fprintf(&b, "- series, each run apart: %s\n", strings.Join(s.describeSeries(), "; "))
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
	if !s.causal() {
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
		for _, row := range t.Rows {
			cells := make([]string, len(row))
			for i, c := range row {
				cells[i] = c
				if c == "" && strings.HasSuffix(t.Header[i], "paper") {
					cells[i] = "–"
				}
			}
			b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
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

// boundText names an op's bound: its own, else the workload's, else the
// swept one or none.
func (s *Scenario) boundText(own, workload string) string {
	switch {
	case own != "":
		return own
	case workload != "":
		return workload
	case s.Sweep != nil && s.Sweep.Param == "bound":
		return "the swept bound"
	}
	return "none"
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
