package experiment

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gopkg.in/yaml.v3"

	"github.com/cosla/cosla/internal/core/replica"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/lab/driver"
)

// dConssandra's experiments (Zhu, Yu, Wang, section VI): bounded
// operations, their groups, series of them, what they report, and the
// planner's decisions. DESIGN.md section 4 maps the paper's stages onto
// cosla's write path.

// dconMetrics are the paper's numbers a dConssandra preset may carry,
// each found by its Point (and Series): Figs 9-10's reads returned,
// Tables III-IV's cost shares, latencies and throughput, Fig. 11's
// planner times.
var dconMetrics = []string{"returned", "write_cost_pct", "read_cost_pct", "ops_per_s", "write_avg_ms", "read_avg_ms",
	"write_p99_ms", "read_p99_ms", "planner_p99_us", "planner_max_us"}

// parseBound reads a scenario's bound (wire.ParseBound), at most maxService.
func parseBound(v string) (wire.Bound, error) {
	b, err := wire.ParseBound(v)
	switch {
	case err != nil:
		return 0, fmt.Errorf("bound %q: %v", v, err)
	case b > 0 && b != wire.Unbounded && b.Duration() > maxService:
		return 0, fmt.Errorf("bound %q outside (0, %s]", v, maxService)
	}
	return b, nil
}

// bound returns a bound that validate checked, or the default.
func bound(v, def string) wire.Bound {
	if v == "" {
		v = def
	}
	b, _ := parseBound(v)
	return b
}

// maxGroupWrites bounds a group's writes.
const maxGroupWrites = 10_000

// validate checks the workload's bounded operations.
func (dconPlugin) validate(s *Scenario) error {
	w := &s.Workload
	for _, f := range []struct{ field, v string }{{"bound", w.Bound}, {"put_bound", w.PutBound}, {"get_bound", w.GetBound},
		{"load_bound", w.LoadBound}} {
		if _, err := parseBound(f.v); err != nil {
			return invalid("workload."+f.field, "%v", err)
		}
	}
	if g := w.Group; g != nil {
		for _, f := range []struct{ field, v string }{{"write_bound", g.WriteBound}, {"read_bound", g.ReadBound}} {
			if _, err := parseBound(f.v); err != nil {
				return invalid("workload.group."+f.field, "%v", err)
			}
		}
		switch {
		case g.Writes < 0 || g.Writes > maxGroupWrites:
			return invalid("workload.group.writes", "%d outside [0, %d]", g.Writes, maxGroupWrites)
		case w.YCSB != "" || w.Rate > 0 || w.RTW:
			return invalid("workload.group", "a group workload takes no ycsb, rate or rtw")
		}
	}
	if w.RTW && w.YCSB != "" {
		return invalid("workload.rtw", "a YCSB workload has no read-test-writes")
	}
	return nil
}

// bounded reports whether the scenario's workload has bounded operations.
func bounded(s *Scenario) bool {
	w := s.Workload
	return w.Bound != "" || w.PutBound != "" || w.GetBound != "" || w.Group != nil || w.RTW ||
		(s.Sweep != nil && s.Sweep.Param == "bound")
}

// dconPlugin is dConssandra's part of the lab: it claims the scenarios
// whose workload has bounded operations or groups.
type dconPlugin struct{}

func (dconPlugin) outputs() []string {
	return []string{OutBounded, OutBoundLatency, OutReadLatency, OutReturned, OutCosts, OutPlanner}
}

func (dconPlugin) metrics() []string { return dconMetrics }

func (dconPlugin) claims(s *Scenario) bool { return bounded(s) }

func (dconPlugin) tables(s *Scenario, r *Result) []Table {
	var out []Table
	for _, t := range []struct {
		out   string
		table func(*Scenario, *Result) Table
	}{{OutBoundLatency, boundLatencyTable}, {OutReadLatency, readLatencyTable}, {OutReturned, returnedTable}, {OutCosts, costsTable}, {OutPlanner, plannerTable}} {
		if s.wants(t.out) {
			out = append(out, t.table(s, r))
		}
	}
	if s.wants(OutBounded) {
		out = append(out, boundedTable(s, r), costsLearnedTable(s, r))
	}
	return out
}

func (dconPlugin) plots(s *Scenario, r *Result) ([]Figure, error) {
	var figs []Figure
	for _, f := range []struct {
		out  string
		plot func(*Scenario, *Result) (Figure, error)
	}{{OutBoundLatency, boundLatencyPlot}, {OutReadLatency, readLatencyPlot}, {OutReturned, returnedPlot}, {OutPlanner, plannerPlot}} {
		if !s.wants(f.out) {
			continue
		}
		fig, err := f.plot(s, r)
		switch {
		case errors.Is(err, errNoPlot):
		case err != nil:
			return nil, err
		default:
			figs = append(figs, fig)
		}
	}
	return figs, nil
}

// describeWorkload says what the groups or bounded operations are.
func (dconPlugin) describeWorkload(s *Scenario) string {
	w := s.Workload
	if w.Group != nil {
		reset := ""
		if w.Group.Reset {
			reset = ", then a consistent (unbounded) reset read"
		}
		return fmt.Sprintf("\n- workload: %d keys loaded (load bound %s), then groups of %d writes of one fresh key at %s, a read of it at %s%s; ",
			w.Keys, boundText(s, w.LoadBound, ""), w.Group.Writes, boundText(s, w.Group.WriteBound, w.Bound), boundText(s, w.Group.ReadBound, w.Bound), reset)
	}
	put := "Puts"
	if w.RTW {
		put = "read-test-writes (conditional inserts)"
	}
	return fmt.Sprintf("\n- workload: %d keys loaded (load bound %s), %s of %s keys at %s (fraction %g), Gets at %s, ",
		w.Keys, boundText(s, w.LoadBound, ""), put, w.Distribution, boundText(s, w.PutBound, w.Bound), w.PutFraction, boundText(s, w.GetBound, w.Bound))
}

// mix is the mix of a workload with bounded operations or groups: fresh
// keys are numbered from freshFrom, past the loaded ones.
func (dconPlugin) mix(s *Scenario, freshFrom uint64) (driver.Mix, error) {
	w := s.Workload
	if g := w.Group; g != nil {
		return &driver.GroupMix{Writes: g.Writes, WriteBound: bound(g.WriteBound, w.Bound), ReadBound: bound(g.ReadBound, w.Bound),
			Reset: g.Reset, Keys: &driver.FreshKeys{From: freshFrom}, ValueSize: w.ValueSize}, nil
	}
	keys, err := s.keyGenerator()
	if err != nil {
		return nil, err
	}
	if f, ok := keys.(*driver.FreshKeys); ok {
		f.From = freshFrom
	}
	put := driver.Put
	if w.RTW {
		put = driver.RTW
	}
	m, err := driver.NewKeyMix([]driver.Weighted{{Kind: put, Weight: w.PutFraction}, {Kind: driver.Get, Weight: 1 - w.PutFraction}}, keys, w.ValueSize)
	if err != nil {
		return nil, err
	}
	m.Bound = map[driver.Kind]wire.Bound{put: bound(w.PutBound, w.Bound), driver.Get: bound(w.GetBound, w.Bound)}
	return m, nil
}

// sweptOps are the labels of the ops that take the workload's bound (the
// one the sweep parameter bound sets): those with no bound of their own.
func sweptOps(s *Scenario) []string {
	w := s.Workload
	if w.Bound == "" {
		return nil
	}
	var out []string
	if g := w.Group; g != nil {
		if g.WriteBound == "" && g.Writes > 0 {
			out = append(out, driver.GroupLabel+"/"+driver.WriteLabel)
		}
		if g.ReadBound == "" {
			out = append(out, driver.GroupLabel+"/"+driver.ReadLabel)
		}
		return out
	}
	put := driver.Put
	if w.RTW {
		put = driver.RTW
	}
	if w.PutBound == "" && w.PutFraction > 0 {
		out = append(out, put.String())
	}
	if w.GetBound == "" && w.PutFraction < 1 {
		out = append(out, driver.Get.String())
	}
	return out
}

// loadBound is the bound of the load's Puts.
func loadBound(s *Scenario) wire.Bound { return bound(s.Workload.LoadBound, "") }

// seriesScenario is one series' scenario: named "" without series.
type seriesScenario struct {
	name string
	s    *Scenario
}

// seriesScenarios returns the scenario of each series, or the scenario
// itself when it has none.
func seriesScenarios(s *Scenario) ([]seriesScenario, error) {
	if len(s.Series) == 0 {
		return []seriesScenario{{s: s}}, nil
	}
	var out []seriesScenario
	for i, sp := range s.Series {
		c, err := seriesOf(s, sp)
		if err != nil {
			return nil, invalid(fmt.Sprintf("series[%d] (%s)", i, sp.Name), "%v", err)
		}
		out = append(out, seriesScenario{name: sp.Name, s: c})
	}
	return out, nil
}

// seriesOf lays a series over the YAML the scenario was read from, makes
// the changes made since through with (the series' own sections in
// hand: a series may scale its cluster run apart), and validates the
// result. A field of the scenario changed directly does not reach it.
func seriesOf(s *Scenario, sp SeriesSpec) (*Scenario, error) {
	if s.raw == nil {
		return nil, fmt.Errorf("series need a scenario read from YAML (Parse)")
	}
	var c Scenario
	dec := yaml.NewDecoder(bytes.NewReader(s.raw))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		return nil, err
	}
	if !sp.Set.IsZero() {
		if sp.Set.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("set: want a mapping of scenario fields")
		}
		for i := 0; i < len(sp.Set.Content); i += 2 {
			if sp.Set.Content[i].Value == "series" {
				return nil, fmt.Errorf("set: a series may not give series")
			}
		}
		patch, err := yaml.Marshal(&sp.Set)
		if err != nil {
			return nil, err
		}
		dec = yaml.NewDecoder(bytes.NewReader(patch))
		dec.KnownFields(true)
		if err := dec.Decode(&c); err != nil {
			return nil, fmt.Errorf("set: %w", err)
		}
	}
	c.Series = nil
	if c.Name == "" {
		c.Name = s.Name
	}
	for _, f := range s.mods {
		f(&c)
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// describeSeries says what each series sets, for the report.
func describeSeries(s *Scenario) []string {
	var out []string
	for _, sp := range s.Series {
		set := "as the scenario"
		if !sp.Set.IsZero() {
			if b, err := yaml.Marshal(&sp.Set); err == nil {
				set = strings.Join(strings.Fields(string(b)), " ")
			}
		}
		out = append(out, fmt.Sprintf("%s (%s)", sp.Name, set))
	}
	return out
}

func (s *Scenario) validateSeries() error {
	for i, sp := range s.Series {
		if sp.Name == "" || slices.IndexFunc(s.Series, func(o SeriesSpec) bool { return o.Name == sp.Name }) != i {
			return invalid(fmt.Sprintf("series[%d].name", i), "%q empty or repeated", sp.Name)
		}
	}
	_, err := seriesScenarios(s)
	return err
}

// BoundedStats is what one op label's bounded ops reported in a run
// (dConssandra); latencies are in the run's Ops under the same label.
type BoundedStats struct {
	Op    string `json:"op"`
	Kind  string `json:"kind"`
	Bound string `json:"bound"`
	// Count counts the ops recorded, Failed those that failed (a NULL
	// read did not fail).
	Count  int `json:"count"`
	Failed int `json:"failed"`
	// OverBound counts the successful ops that took longer than a
	// positive bound, as the client measured them. The node keeps the
	// bound from a request's arrival; the round trip and the reception's
	// fsync come on top.
	OverBound int `json:"over_bound"`
	// A write's stage when answered (wire.Stage), and an RTW's test.
	Received     int `json:"received,omitempty"`
	Transmitted  int `json:"transmitted,omitempty"`
	Coordinated  int `json:"coordinated,omitempty"`
	Executed     int `json:"executed,omitempty"`
	Held         int `json:"held,omitempty"`
	TestFailed   int `json:"test_failed,omitempty"`
	NotEvaluated int `json:"not_evaluated,omitempty"`
	// A read's answer: Null, the paper's NULL; Returned, a value or "no
	// value" (the read succeeded and was not NULL); of the Known reads,
	// of keys the run had written, Newest returned the run's last write
	// of the key. Applied and Pending are summed over the reads.
	Null        int `json:"null,omitempty"`
	Returned    int `json:"returned,omitempty"`
	Known       int `json:"known,omitempty"`
	Newest      int `json:"newest,omitempty"`
	Applied     int `json:"applied,omitempty"`
	Pending     int `json:"pending,omitempty"`
	FromSession int `json:"from_session,omitempty"`
}

// boundedRecord accumulates a run's bounded ops per label.
type boundedRecord struct {
	byLabel map[string]*BoundedStats
	order   []string
	// last is the value ID of the run's last write of each key.
	last map[string]string
}

func newBoundedRecord() *boundedRecord {
	return &boundedRecord{byLabel: map[string]*BoundedStats{}, last: map[string]string{}}
}

// op records a completed op; recorded says it counts in the statistics
// (its step started after the warmup). Every write that wrote counts
// toward "newest".
func (b *boundedRecord) op(op *driver.Op, recorded bool) {
	if recorded && op.Bound != wire.NoBound {
		b.add(op)
	}
	if op.Wrote() {
		b.last[op.Key] = op.ValueID
	}
}

func (b *boundedRecord) add(op *driver.Op) {
	label := op.StatsLabel()
	st, ok := b.byLabel[label]
	if !ok {
		st = &BoundedStats{Op: label, Kind: op.Kind.String(), Bound: op.Bound.String()}
		b.byLabel[label] = st
		b.order = append(b.order, label)
	}
	st.Count++
	if op.Err != nil {
		st.Failed++
		return
	}
	if op.Bound > 0 && op.Bound != wire.Unbounded && op.Latency() > op.Bound.Duration() {
		st.OverBound++
	}
	switch op.Kind {
	case driver.Put, driver.RTW:
		switch op.Stage {
		case wire.Received:
			st.Received++
		case wire.Transmitted:
			st.Transmitted++
		case wire.Coordinated:
			st.Coordinated++
		case wire.Executed:
			st.Executed++
		}
		if op.Kind == driver.RTW {
			switch op.Tested {
			case wire.Held:
				st.Held++
			case wire.Failed:
				st.TestFailed++
			default:
				st.NotEvaluated++
			}
		}
	case driver.Get:
		st.Applied += op.Applied
		st.Pending += op.Pending
		if op.FromSession {
			st.FromSession++
		}
		if op.Null {
			st.Null++
		} else {
			st.Returned++
		}
		if last, ok := b.last[op.Key]; ok {
			st.Known++
			if !op.Null && op.ValueID == last {
				st.Newest++
			}
		}
	}
}

func (b *boundedRecord) stats() []BoundedStats {
	var out []BoundedStats
	for _, label := range b.order {
		out = append(out, *b.byLabel[label])
	}
	return out
}

// StepCostStats is one planned step's cost as the storage nodes learned
// it (dConssandra 5-B; replica.StepCost), at the run's end: the means
// over the (node, primary) fits that were warm.
type StepCostStats struct {
	Step       string  `json:"step"`
	Fits       int     `json:"fits"`
	Samples    int     `json:"samples"`
	FixedMS    float64 `json:"fixed_ms"`
	PerWriteMS float64 `json:"per_write_ms"`
}

// stepCosts averages the nodes' warm fits per step.
func stepCosts(costs []replica.StepCost) []StepCostStats {
	var out []StepCostStats
	for _, step := range []string{"coordinate", "spread", "acquire"} {
		st := StepCostStats{Step: step}
		for _, c := range costs {
			if c.Step != step || !c.Warm {
				continue
			}
			st.Fits++
			st.Samples += c.Samples
			st.FixedMS += ms(c.Fixed)
			st.PerWriteMS += ms(c.PerWrite)
		}
		if st.Fits > 0 {
			st.FixedMS /= float64(st.Fits)
			st.PerWriteMS /= float64(st.Fits)
			out = append(out, st)
		}
	}
	return out
}

// ---- Tables ----

// runOpStats returns a run's statistics of an op label.
func runOpStats(run RunResult, label string) (driver.Stats, bool) {
	for _, o := range run.Ops {
		if o.Op == label {
			return o, true
		}
	}
	return driver.Stats{}, false
}

func pct(n, of int) string {
	if of == 0 {
		return ""
	}
	return f1(100 * float64(n) / float64(of))
}

func avg(n, of int) string {
	if of == 0 {
		return ""
	}
	return f2(float64(n) / float64(of))
}

// boundedTable has one row per run and bounded op label.
func boundedTable(s *Scenario, r *Result) Table {
	t := Table{Name: "bounded", Title: "Bounded operations: latency, stage reached, reads' answers (dConssandra)",
		Header: append(runColumns(s), "op", "bound", "count", "p50 ms", "p99 ms", "max ms", "over bound %", "failed %",
			"received %", "transmitted %", "coordinated %", "executed %", "rtw held %", "null %", "newest %", "applied avg", "pending avg")}
	for _, run := range r.Runs {
		for _, b := range run.Bounded {
			l, _ := runOpStats(run, b.Op)
			ok := b.Count - b.Failed
			row := append(runCells(s, run), b.Op, b.Bound, strconv.Itoa(b.Count), f3(l.LatencyMS.P50), f3(l.LatencyMS.P99), f3(l.LatencyMS.Max))
			over := ""
			if bd, _ := parseBound(b.Bound); bd > 0 && bd != wire.Unbounded {
				over = pct(b.OverBound, ok)
			}
			row = append(row, over, pct(b.Failed, b.Count))
			if b.Kind == driver.Get.String() {
				row = append(row, "", "", "", "", "", pct(b.Null, ok), pct(b.Newest, b.Known), avg(b.Applied, ok), avg(b.Pending, ok))
			} else {
				held := ""
				if b.Kind == driver.RTW.String() {
					held = pct(b.Held, ok)
				}
				row = append(row, pct(b.Received, ok), pct(b.Transmitted, ok), pct(b.Coordinated, ok), pct(b.Executed, ok), held, "", "", "", "")
			}
			t.Rows = append(t.Rows, row)
		}
	}
	t.Caption = "Latency is the client's, over the ops that succeeded (a NULL read succeeded: it is the paper's answer to a bound too short). " +
		"Over bound counts the answers later than a positive bound: the node answers by the bound from a request's arrival (a deadline timer, beyond the paper), the round trip and the reception's fsync come on top. " +
		"A write's stage is the one it reached when answered: received (durable at the receiving replica), transmitted (forwarded to the primary), coordinated (ordered by the primary), executed (applied at every replica). " +
		"Newest: of the reads of keys the run had written, the share that returned the run's last write of the key; applied and pending: the writes a read brought in within its bound, and those it knew of and could not."
	t.Caption += virtualNote(r)
	return t
}

// costsLearnedTable has one row per run: the steps' costs the storage
// nodes learned.
func costsLearnedTable(s *Scenario, r *Result) Table {
	t := Table{Name: "costs-learned", Title: "Step costs the nodes learned, f(x) = fixed + x * per write (dConssandra 5-B), at each run's end",
		Header: runColumns(s)}
	steps := []string{"coordinate", "spread", "acquire"}
	for _, st := range steps {
		t.Header = append(t.Header, st+" fixed ms", st+" per write ms", st+" fits")
	}
	for _, run := range r.Runs {
		row := runCells(s, run)
		for _, st := range steps {
			i := slices.IndexFunc(run.Costs, func(c StepCostStats) bool { return c.Step == st })
			if i < 0 {
				row = append(row, "", "", "0")
				continue
			}
			c := run.Costs[i]
			row = append(row, f3(c.FixedMS), f3(c.PerWriteMS), strconv.Itoa(c.Fits))
		}
		t.Rows = append(t.Rows, row)
	}
	t.Caption = "Each receiving node fits each step's cost toward each primary from its own timings, recent ones weighing more (package dcon): coordinate is from a staged write's reception to the primary's acknowledgement (x: the staged writes up to it), spread from coordination to execution at every replica, acquire a pull's round trip (x: the writes it brought). The columns average the warm fits (dcon.WarmSamples samples or more); fits counts them."
	return t
}

// pointBound reads a sweep point as a bound in milliseconds (immediate:
// 0), for tables and plots.
func pointBound(v string) (float64, bool) {
	b, err := parseBound(v)
	switch {
	case err != nil || b == wire.NoBound || b == wire.Unbounded:
		return 0, false
	case b == wire.Immediate:
		return 0, true
	}
	return ms(b.Duration()), true
}

// seriesNames are the result's series, in order ("" when it has none).
func seriesNames(r *Result) []string {
	var out []string
	for _, run := range r.Runs {
		if !slices.Contains(out, run.Series) {
			out = append(out, run.Series)
		}
	}
	return out
}

// points are the result's sweep points, in order.
func points(r *Result) []string {
	var out []string
	for _, run := range r.Runs {
		if !slices.Contains(out, run.Point) {
			out = append(out, run.Point)
		}
	}
	return out
}

// runAt returns the first run (seed) of a point and series.
func runAt(r *Result, point, series string) (RunResult, bool) {
	for _, run := range r.Runs {
		if run.Point == point && run.Series == series {
			return run, true
		}
	}
	return RunResult{}, false
}

// sweptLabel returns the op label of a run that takes the swept bound:
// its first, a group's read before its writes.
func sweptLabel(run RunResult) string {
	for _, l := range run.SweptOps {
		if strings.HasSuffix(l, "/"+driver.ReadLabel) {
			return l
		}
	}
	if len(run.SweptOps) > 0 {
		return run.SweptOps[0]
	}
	return ""
}

func seriesTitle(name string) string {
	if name == "" {
		return "ops"
	}
	return name
}

// boundLatencyTable is Fig. 7: each series' swept op, its p50 and p99
// against the bound.
func boundLatencyTable(s *Scenario, r *Result) Table {
	t := Table{Name: "bound-latency", Title: "Latency against the bound, per series: p50 and p99 (Fig. 7)", Header: []string{"bound", "bound ms"}}
	series := seriesNames(r)
	for _, sn := range series {
		name := seriesTitle(sn)
		t.Header = append(t.Header, name+" op", name+" p50 ms", name+" p99 ms", name+" over bound %")
	}
	for _, p := range points(r) {
		x, _ := pointBound(p)
		row := []string{p, f1(x)}
		for _, sn := range series {
			run, ok := runAt(r, p, sn)
			label := sweptLabel(run)
			st, okStats := runOpStats(run, label)
			if !ok || !okStats {
				row = append(row, "", "", "", "")
				continue
			}
			over := ""
			if b, ok := runBounded(run, label); ok && x > 0 {
				over = pct(b.OverBound, b.Count-b.Failed)
			}
			row = append(row, label, f3(st.LatencyMS.P50), f3(st.LatencyMS.P99), over)
		}
		t.Rows = append(t.Rows, row)
	}
	t.Caption = "Each series' op that takes the swept bound (a group's read, not its quick writes), latency as the client measured it. The paper's Fig. 7 draws the p99 beside the expected line, latency = bound; its values did not survive in our copy (see the notes)."
	t.Caption += virtualNote(r)
	return t
}

// readLatencyTable is Fig. 8: a group's read, its mean and p95 against
// the writes' bound.
func readLatencyTable(s *Scenario, r *Result) Table {
	t := pointTable(s, r, Table{Name: "read-latency", Title: "A consistent read after writes at the bound: read latency (Fig. 8)",
		Header: []string{"write bound", "reads", "read mean ms", "read p95 ms", "read p99 ms", "write p99 ms", "writes coordinated %", "writes executed %", "read applied avg"}},
		func(p, _ string, run RunResult) []string {
			read, _ := runOpStats(run, groupRead)
			write, _ := runOpStats(run, groupWrite)
			w, _ := runBounded(run, groupWrite)
			rd, _ := runBounded(run, groupRead)
			writes := w.Count - w.Failed
			return []string{p, strconv.FormatInt(read.Count, 10), f3(read.LatencyMS.Mean), f3(read.LatencyMS.P95), f3(read.LatencyMS.P99), f3(write.LatencyMS.P99),
				pct(w.Coordinated+w.Executed, writes), pct(w.Executed, writes), avg(rd.Applied, rd.Count-rd.Failed)}
		})
	t.Caption = "Each group writes one fresh key at the bound, then reads it with an unbounded (consistent) read at the same receiving replica; writes coordinated counts those answered coordinated or executed. The paper's Fig. 8 draws the read's mean and p95; its values did not survive in our copy."
	t.Caption += virtualNote(r)
	return t
}

// returnedTable is Figs 9-10: the groups' reads at the bound, how many
// returned a value.
func returnedTable(s *Scenario, r *Result) Table {
	t := pointTable(s, r, Table{Name: "returned", Title: "Values returned by reads at the bound after immediate writes (Figs 9-10)",
		Header: []string{"read bound", "reads", "returned", "paper", "null", "newest", "applied avg", "pending avg", "read p99 ms"}},
		func(p, sn string, run RunResult) []string {
			st, _ := runOpStats(run, groupRead)
			b, _ := runBounded(run, groupRead)
			pv, pok := paperPoint(s, "returned", p, sn)
			return []string{p, strconv.Itoa(b.Count), strconv.Itoa(b.Returned), paperCell(pv, pok, func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }),
				strconv.Itoa(b.Null), strconv.Itoa(b.Newest), avg(b.Applied, b.Count-b.Failed), avg(b.Pending, b.Count-b.Failed), f3(st.LatencyMS.P99)}
		})
	t.Caption = "Returned (our reading of the paper's \"number of values returned\", 6-C): the reads, one a group, that answered with a value rather than the paper's NULL; newest: those that returned the group's last write; applied: the writes the read brought in within its bound. The paper gives only that no value returns below 20 ms (Fig. 9) or 30 ms with the slow link (Fig. 10); its curves did not survive in our copy."
	return t
}

// costsTable is Tables III-IV: the shares of the run's time its writes
// and reads took, their mean and p99 latencies and the throughput.
func costsTable(s *Scenario, r *Result) Table {
	t := Table{Name: "costs", Title: "Write and read cost shares, latencies and throughput per workload (Tables III-IV)",
		Header: []string{"mix", "requests", "write cost %", "paper", "read cost %", "paper", "ops/s", "paper",
			"write avg ms", "paper", "read avg ms", "paper", "write p99 ms", "paper", "read p99 ms", "paper"}}
	num := func(v float64, ok bool) string {
		return paperCell(v, ok, func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) })
	}
	for _, sn := range seriesNames(r) {
		for _, p := range points(r) {
			run, ok := runAt(r, p, sn)
			if !ok {
				continue
			}
			var write, read driver.Stats
			for _, o := range run.Ops {
				switch o.Op {
				case driver.Put.String(), driver.RTW.String():
					write = o
				case driver.Get.String():
					read = o
				}
			}
			wt := write.LatencyMS.Mean * float64(write.LatencyMS.Count)
			rt := read.LatencyMS.Mean * float64(read.LatencyMS.Count)
			var wshare, rshare float64
			if wt+rt > 0 {
				wshare, rshare = 100*wt/(wt+rt), 100*rt/(wt+rt)
			}
			paper := func(metric string) string { return num(paperPoint(s, metric, p, sn)) }
			t.Rows = append(t.Rows, []string{p, strconv.FormatInt(write.Count+read.Count, 10), f2(wshare), paper("write_cost_pct"), f2(rshare), paper("read_cost_pct"),
				f1(run.ThroughputOpsPerS), paper("ops_per_s"), f3(write.LatencyMS.Mean), paper("write_avg_ms"), f3(read.LatencyMS.Mean), paper("read_avg_ms"),
				f3(write.LatencyMS.P99), paper("write_p99_ms"), f3(read.LatencyMS.P99), paper("read_p99_ms")})
		}
	}
	t.Caption = "One closed-loop session, as the paper's throughputs imply (Table IV's 4 ops/s is 1 / (0.1 x 2547 ms + 0.9 x 1.33 ms)). Write cost %: the writes' summed latency over all operations' (successful ones); ops/s: successful operations per second of the run."
	t.Caption += virtualNote(r)
	return t
}

// paperPoint finds the paper's number for a metric at a sweep point and
// series.
func paperPoint(s *Scenario, metric, point, series string) (float64, bool) {
	for _, v := range s.Paper.Values {
		if v.Metric == metric && v.Point == point && v.Series == series {
			return v.Value, true
		}
	}
	return 0, false
}

// ---- Plots ----

// errNoPlot says a plot has nothing to draw (a cluster run's planner).
var errNoPlot = errors.New("experiment: nothing to plot")

// boundCurve draws one curve against the swept bound: y of each point
// of a series, where it has one.
func boundCurve(p *plot.Plot, i int, name string, r *Result, series string, y func(run RunResult) (float64, bool)) error {
	var xys plotter.XYs
	for _, pt := range points(r) {
		x, okX := pointBound(pt)
		run, okRun := runAt(r, pt, series)
		if !okX || !okRun {
			continue
		}
		if v, ok := y(run); ok {
			xys = append(xys, plotter.XY{X: x, Y: v})
		}
	}
	if len(xys) == 0 {
		return nil
	}
	return addCurve(p, i, name, xys)
}

// modeName names a result's curves when a cluster run's plot also draws
// the simulator's model of it.
func modeName(res *Result, several bool, name string) string {
	if several {
		return res.Mode + " " + name
	}
	return name
}

// boundLatencyPlot is Fig. 7: each series' p99 against the bound, and
// the expected line.
func boundLatencyPlot(s *Scenario, r *Result) (Figure, error) {
	p := newPlot("p99 latency against the bound (Fig. 7)", "bound (ms; immediate at 0)", "p99 latency (ms)")
	i, err := seriesCurves(p, r, []seriesCurve{{seriesTitle, func(run RunResult) (float64, bool) {
		st, ok := runOpStats(run, sweptLabel(run))
		return st.LatencyMS.P99, ok
	}}})
	if err != nil {
		return Figure{}, err
	}
	top := 0.0
	for _, pt := range points(r) {
		if x, ok := pointBound(pt); ok {
			top = max(top, x)
		}
	}
	if err := addCurve(p, i, "expected: latency = bound", plotter.XYs{{X: 0, Y: 0}, {X: top, Y: top}}); err != nil {
		return Figure{}, err
	}
	p.Legend.Top, p.Legend.Left = true, true
	return Figure{Name: "bound-latency", Title: p.Title.Text, plot: p}, nil
}

// readLatencyPlot is Fig. 8: the consistent read's mean and p95 against
// the writes' bound.
func readLatencyPlot(s *Scenario, r *Result) (Figure, error) {
	p := newPlot("Consistent read latency against the writes' bound (Fig. 8)", "write bound (ms; immediate at 0)", "read latency (ms)")
	latency := func(y func(driver.Latency) float64) func(RunResult) (float64, bool) {
		return func(run RunResult) (float64, bool) {
			st, ok := runOpStats(run, groupRead)
			return y(st.LatencyMS), ok
		}
	}
	_, err := seriesCurves(p, r, []seriesCurve{
		{named("read mean"), latency(func(l driver.Latency) float64 { return l.Mean })},
		{named("read p95"), latency(func(l driver.Latency) float64 { return l.P95 })},
	})
	if err != nil {
		return Figure{}, err
	}
	p.Legend.Top = true
	return Figure{Name: "read-latency", Title: p.Title.Text, plot: p}, nil
}

// returnedPlot is Figs 9-10: the reads that returned a value, and the
// newest, against their bound.
func returnedPlot(s *Scenario, r *Result) (Figure, error) {
	p := newPlot("Reads that returned a value against their bound (Figs 9-10)", "read bound (ms; immediate at 0)", "reads")
	count := func(y func(BoundedStats) int) func(RunResult) (float64, bool) {
		return func(run RunResult) (float64, bool) {
			b, ok := runBounded(run, groupRead)
			return float64(y(b)), ok
		}
	}
	_, err := seriesCurves(p, r, []seriesCurve{
		{named("returned"), count(func(b BoundedStats) int { return b.Returned })},
		{named("newest"), count(func(b BoundedStats) int { return b.Newest })},
	})
	if err != nil {
		return Figure{}, err
	}
	p.Y.Min = 0
	p.Legend.Top, p.Legend.Left = true, true
	return Figure{Name: "returned", Title: p.Title.Text, plot: p}, nil
}

// groupRead and groupWrite are the labels of a group's bounded read
// and writes.
const (
	groupRead  = driver.GroupLabel + "/" + driver.ReadLabel
	groupWrite = driver.GroupLabel + "/" + driver.WriteLabel
)

// runBounded is the run's bounded ops of a label, if it has them.
func runBounded(run RunResult, label string) (BoundedStats, bool) {
	for _, b := range run.Bounded {
		if b.Op == label {
			return b, true
		}
	}
	return BoundedStats{}, false
}

// pointTable is t with one row per series and sweep point (pointRows),
// and with series a series column first.
func pointTable(s *Scenario, r *Result, t Table, row func(point, series string, run RunResult) []string) Table {
	t.Header = append(seriesColumn(s, "series"), t.Header...)
	t.Rows = pointRows(s, r, row)
	return t
}

// pointRows are a table's rows, one per series and sweep point that has
// a run, each made by row; with series, the series' title first.
func pointRows(s *Scenario, r *Result, row func(point, series string, run RunResult) []string) [][]string {
	var out [][]string
	for _, sn := range seriesNames(r) {
		for _, p := range points(r) {
			run, ok := runAt(r, p, sn)
			if !ok {
				continue
			}
			out = append(out, append(seriesColumn(s, seriesTitle(sn)), row(p, sn, run)...))
		}
	}
	return out
}

// A seriesCurve is one curve per series of a plot against the bound:
// its name for a series and its value in a run.
type seriesCurve struct {
	name func(series string) string
	y    func(RunResult) (float64, bool)
}

// named names a series' curve what after the series.
func named(what string) func(string) string {
	return func(series string) string { return strings.TrimSpace(series + " " + what) }
}

// seriesCurves adds each curve for every series of every result (the
// simulator's beside a cluster's) and returns how many it added.
func seriesCurves(p *plot.Plot, r *Result, curves []seriesCurve) (int, error) {
	results := curveResults(r)
	i := 0
	for _, res := range results {
		for _, sn := range seriesNames(res) {
			for _, c := range curves {
				if err := boundCurve(p, i, modeName(res, len(results) > 1, c.name(sn)), res, sn, c.y); err != nil {
					return i, err
				}
				i++
			}
		}
	}
	return i, nil
}

// boundText names an op's bound: its own, else the workload's, else the
// swept one or none.
func boundText(s *Scenario, own, workload string) string {
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

// record is dConssandra's share of a unit of a scenario it claims: each
// run's bounded ops per label, and the labels the workload's bound
// reaches.
func (dconPlugin) record(u *unit, _ timing) unitPart {
	if !bounded(u.s) {
		return nil
	}
	p := boundedPart{s: u.s, runs: map[*run]*boundedRecord{}}
	for _, r := range u.runs {
		p.runs[r] = newBoundedRecord()
	}
	return p
}

// boundedPart is each run's boundedRecord.
type boundedPart struct {
	s    *Scenario
	runs map[*run]*boundedRecord
}

func (boundedPart) keepsOps() bool { return false }

func (p boundedPart) op(r *run, op *driver.Op, recorded bool) { p.runs[r].op(op, recorded) }

func (p boundedPart) finish(*driver.Recorder) {
	for r, b := range p.runs {
		r.r.Bounded, r.r.SweptOps = b.stats(), sweptOps(p.s)
	}
}

// BoundedResult is dConssandra's section of a run's result.
type BoundedResult struct {
	// Bounded is what the run's bounded ops reported, per op label;
	// SweptOps are the labels of the ops that take the workload's bound,
	// the one a bound sweep sets. Costs are the step costs the storage
	// nodes had learned at the run's end, Planner the planner's
	// decisions replayed (planner output).
	Bounded  []BoundedStats  `json:"bounded,omitempty"`
	SweptOps []string        `json:"swept_ops,omitempty"`
	Costs    []StepCostStats `json:"costs,omitempty"`
	Planner  *PlannerStats   `json:"planner,omitempty"`
}

func (dconPlugin) sweepParams() map[string]sweepParam {
	return map[string]sweepParam{
		// bound is the workload's bound: immediate, unbounded
		// or a duration, taken by the ops with none of their own.
		"bound": func(s *Scenario, v string) error {
			if _, err := parseBound(v); err != nil {
				return err
			}
			s.Workload.Bound = v
			return nil
		},
		// mix is a write:read ratio and a key distribution, "9:1 uniform"
		// (dConssandra Tables III-IV).
		"mix": func(s *Scenario, v string) error {
			ratio, dist, ok := strings.Cut(v, " ")
			ws, rs, ok2 := strings.Cut(ratio, ":")
			w, werr := strconv.ParseFloat(ws, 64)
			r, rerr := strconv.ParseFloat(rs, 64)
			if !ok || !ok2 || werr != nil || rerr != nil || !(w > 0) || !(r > 0) {
				return fmt.Errorf("mix %q: want W:R DISTRIBUTION, as 9:1 uniform, W and R positive", v)
			}
			s.Workload.PutFraction, s.Workload.Distribution = w/(w+r), dist
			return nil
		},
	}
}

// dConssandra's outputs: every bounded op's outcomes; latency against
// the bound (Fig. 7); a consistent read's latency against the writes'
// bound (Fig. 8); values returned against the read's bound (Figs 9-10);
// write and read cost shares and throughput (Tables III-IV); the
// planner's time per decision (Fig. 11).
const (
	OutBounded      = "bounded"
	OutBoundLatency = "bound-latency"
	OutReadLatency  = "read-latency"
	OutReturned     = "returned"
	OutCosts        = "costs"
	OutPlanner      = "planner"
)

// GroupSpec is a dConssandra group (driver.GroupMix): Writes Puts of one
// fresh key at WriteBound, a Get of it at ReadBound, then with Reset an
// unbounded Get of it (6-C: "so that later experimental groups are not
// affected by previous groups"). Unset bounds are the workload's bound.
type GroupSpec struct {
	Writes     int    `yaml:"writes"`
	WriteBound string `yaml:"write_bound"`
	ReadBound  string `yaml:"read_bound"`
	Reset      bool   `yaml:"reset"`
}
