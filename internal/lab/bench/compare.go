package bench

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cosla/cosla/internal/lab/driver"
	"github.com/cosla/cosla/internal/lab/workload"
)

// CompareOptions configure Compare.
type CompareOptions struct {
	// Workload is the YCSB workload. Each run draws from a Workload of
	// its own made from it, so that every run's operations are drawn
	// alike from Seed.
	Workload workload.Properties
	// Clients are the client counts, a table each, in order: at least
	// one, each between 1 and MaxClients, none repeated.
	Clients []int
	// Reads are the read strengths run on each system at each count, in
	// order, none repeated. Default {Weak}.
	Reads []Strength
	// Write is the write strength of every run. Default Weak.
	Write Strength
	// Duration and Operations bound each run phase as Options's do,
	// except that Operations 0 means no bound by count: Duration alone.
	// At least one is set.
	Duration   time.Duration
	Operations uint64
	// Repeat is the number of times each run (each client count, read
	// strength and system: a cell) is made, in rounds: every round makes
	// every run once, in the order of one, before the next round starts,
	// so that a change on the machine during the comparison (another job,
	// a warming cache) falls on every system rather than on one. The rows
	// then hold medians (Row). Default 1, at most MaxRepeat.
	Repeat int
	// Load makes the first run on each system load the workload's
	// records first; the later runs find them there.
	Load bool
	// Seed seeds every run (Options.Seed).
	Seed uint64
	// Log receives a line as each run starts and its progress lines.
	// Default: discard.
	Log io.Writer
	// ProgressInterval is the time between progress lines. Default
	// DefaultProgressInterval.
	ProgressInterval time.Duration
}

// EnsureDefaults returns a copy of o with every unset field given its
// default (the options idiom of package node).
func (o CompareOptions) EnsureDefaults() CompareOptions {
	if len(o.Reads) == 0 {
		o.Reads = []Strength{Weak}
	}
	o.Write = cmp.Or(o.Write, Weak)
	o.Repeat = cmp.Or(o.Repeat, 1)
	if o.Log == nil {
		o.Log = io.Discard
	}
	o.ProgressInterval = cmp.Or(o.ProgressInterval, DefaultProgressInterval)
	return o
}

// Validate returns an error wrapping ErrInvalid that names the first bad
// field.
func (o CompareOptions) Validate() error {
	if err := o.Workload.Validate(); err != nil {
		return fmt.Errorf("%w: Workload: %w", ErrInvalid, err)
	}
	if len(o.Clients) == 0 {
		return fmt.Errorf("%w: no Clients", ErrInvalid)
	}
	for i, n := range o.Clients {
		if n < 1 || n > MaxClients || slices.Contains(o.Clients[:i], n) {
			return fmt.Errorf("%w: Clients[%d] = %d: want 1 to %d, none repeated", ErrInvalid, i, n, MaxClients)
		}
	}
	for i, s := range o.Reads {
		if _, err := ParseStrength(string(s)); err != nil || slices.Contains(o.Reads[:i], s) {
			return fmt.Errorf("%w: Reads[%d] = %q: want weak or strong, none repeated", ErrInvalid, i, s)
		}
	}
	if _, err := ParseStrength(string(o.Write)); err != nil {
		return fmt.Errorf("%w: Write = %q: want weak or strong", ErrInvalid, o.Write)
	}
	switch {
	case o.Duration < 0:
		return fmt.Errorf("%w: Duration = %v, want >= 0", ErrInvalid, o.Duration)
	case o.Duration == 0 && o.Operations == 0:
		return fmt.Errorf("%w: neither Duration nor Operations bounds the runs", ErrInvalid)
	case o.ProgressInterval <= 0:
		return fmt.Errorf("%w: ProgressInterval = %v, want > 0", ErrInvalid, o.ProgressInterval)
	case o.Repeat < 1 || o.Repeat > MaxRepeat:
		return fmt.Errorf("%w: Repeat = %d, want 1 to %d", ErrInvalid, o.Repeat, MaxRepeat)
	}
	return nil
}

// MaxRepeat bounds CompareOptions.Repeat ("put a limit on everything").
const MaxRepeat = 100

// Comparison is what Compare measured. It is a plain snapshot: safe to
// copy and encode as JSON.
type Comparison struct {
	Seed uint64 `json:"seed"`
	// Workload is the effective workload, in properties-file form; Mix
	// says it in a line.
	Workload string `json:"workload"`
	Mix      string `json:"mix"`
	// Limit says what bounded each run and how many times each was made
	// ("10s each", "200 operations each, at most 1m", "4s each, 3 times
	// in interleaved rounds"): CompareOptions's Duration and Operations,
	// which replace the workload's operationcount, and Repeat.
	Limit string `json:"limit"`
	// ClientProcs is the Go Ps (GOMAXPROCS) this process, the client of
	// every system, ran on, of the machine's Cores (cosla bench compare
	// --client-procs): the servers it starts keep their own.
	ClientProcs int `json:"client_procs"`
	Cores       int `json:"cores"`
	// Repeat is CompareOptions.Repeat: the runs made of each cell, in as
	// many rounds.
	Repeat int `json:"repeat"`
	// Reference is the system whose ratios to every other the rows hold:
	// the first one compared.
	Reference string     `json:"reference"`
	Reads     []Strength `json:"reads"`
	Write     Strength   `json:"write"`
	// Tables holds a table per client count, in the order of
	// CompareOptions.Clients; a comparison cut short lacks the counts it
	// did not reach.
	Tables []Table `json:"tables"`
}

// Table is the runs at one client count: for each read strength, each
// system's run, in the order compared.
type Table struct {
	Clients int   `json:"clients"`
	Rows    []Row `json:"rows"`
}

// Row is one cell: one system at one client count and read strength.
type Row struct {
	// Strength is the read strength asked for; Result.Setup says what it
	// was on the system.
	Strength Strength `json:"strength"`
	// Result is the cell's run; when it was run more than once, the
	// summary of its repeats (Summarize): the median throughput,
	// latencies and CPU, the total counts.
	Result Result `json:"result"`
	// Spread is the least and greatest of the figures Result holds as
	// medians, and Repeats every repeat's Result in the order made; both
	// are nil when CompareOptions.Repeat is 1.
	Spread  *Spread  `json:"spread,omitempty"`
	Repeats []Result `json:"repeats,omitempty"`
	// VsReference compares the reference system's figures at the same
	// client count and read strength with this row's (with repeats, the
	// medians'). It is nil on the reference's own rows, and when the
	// reference has no such run.
	VsReference *Ratio `json:"vs_reference,omitempty"`
}

// Ratio is the reference's figures over a row's.
type Ratio struct {
	// Throughput is the reference's successful operations per second over
	// the row's: above 1, the reference did more. 0 when either did none.
	Throughput float64 `json:"throughput"`
	// P50 is, per operation kind, the reference's median latency over
	// the row's: below 1, the reference was faster. A kind either lacks is
	// left out.
	P50 map[string]float64 `json:"p50"`
}

// Compare runs the workload on each system, one run at a time: for each
// client count, for each read strength, for each system in order; as many
// rounds of that as CompareOptions.Repeat. The systems stay open
// throughout; the caller opened them and closes them.
//
// If a run fails or the caller's context is cancelled, Compare returns
// what it measured so far, the failed run included, with the error.
func Compare(ctx context.Context, systems []System, o CompareOptions) (Comparison, error) {
	o = o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		return Comparison{}, err
	}
	if len(systems) == 0 {
		return Comparison{}, fmt.Errorf("%w: no systems to compare", ErrInvalid)
	}
	names := make([]string, len(systems))
	for i, s := range systems {
		names[i] = s.Name()
		if slices.Contains(names[:i], names[i]) {
			return Comparison{}, fmt.Errorf("%w: system %s given twice", ErrInvalid, names[i])
		}
	}
	operations := o.Operations
	if operations == 0 {
		operations = math.MaxUint64
	}
	c := Comparison{Seed: o.Seed, Workload: o.Workload.String(), Mix: mixLine(o.Workload), Limit: limitLine(o.Duration, o.Operations, o.Repeat),
		Repeat: o.Repeat, Reference: names[0], Reads: o.Reads, Write: o.Write, ClientProcs: runtime.GOMAXPROCS(0), Cores: runtime.NumCPU()}
	cells := compareCells(o, len(systems))
	runs := make([][]Result, len(cells))
	loaded := make([]bool, len(systems))
	var err error
	for _, run := range schedule(len(cells), o.Repeat) {
		cl := cells[run.cell]
		s := systems[cl.system]
		if err = ctx.Err(); err != nil {
			err = fmt.Errorf("bench: %w", err)
			break
		}
		var res Result
		res, err = compareRun(ctx, s, o, cl, run.round, operations, o.Load && !loaded[cl.system])
		loaded[cl.system] = true
		runs[run.cell] = append(runs[run.cell], res)
		if err != nil {
			err = fmt.Errorf("bench: %s, %s reads, %s%s: %w", s.Name(), cl.read, clientsLabel(cl.clients), roundLabel(run.round, o.Repeat), err)
			break
		}
	}
	c.Tables = tables(cells, runs, o.Repeat, c.Reference)
	return c, err
}

// cell is one system at one client count and read strength: a row of
// the comparison.
type cell struct {
	clients int
	read    Strength
	system  int
}

// compareCells lists the cells in the order of a round: for each client
// count, for each read strength, each system in order.
func compareCells(o CompareOptions, systems int) []cell {
	var cells []cell
	for _, n := range o.Clients {
		for _, read := range o.Reads {
			for i := range systems {
				cells = append(cells, cell{clients: n, read: read, system: i})
			}
		}
	}
	return cells
}

// scheduled is one run of a comparison: the index of its cell, in round
// round (from 0).
type scheduled struct{ round, cell int }

// schedule orders the runs of cells cells repeated repeat times: round
// after round, each the cells in order, so that no cell's repeats run
// back to back and drift on the machine spreads over all of them.
func schedule(cells, repeat int) []scheduled {
	var out []scheduled
	for r := range repeat {
		for c := range cells {
			out = append(out, scheduled{round: r, cell: c})
		}
	}
	return out
}

// roundLabel says which round a run is in, when there are several:
// ", round 2 of 3".
func roundLabel(round, repeat int) string {
	if repeat == 1 {
		return ""
	}
	return fmt.Sprintf(", round %d of %d", round+1, repeat)
}

// tables makes the comparison's tables from the cells' runs: a table per
// client count that has a run, a row per cell that has one, the
// reference's ratios to the others.
func tables(cells []cell, runs [][]Result, repeat int, reference string) []Table {
	var out []Table
	for i, cl := range cells {
		if len(runs[i]) == 0 {
			continue
		}
		if len(out) == 0 || out[len(out)-1].Clients != cl.clients {
			out = append(out, Table{Clients: cl.clients})
		}
		row := Row{Strength: cl.read, Result: runs[i][0]}
		if repeat > 1 {
			row.Result, row.Spread = Summarize(runs[i])
			row.Repeats = runs[i]
		}
		t := &out[len(out)-1]
		t.Rows = append(t.Rows, row)
	}
	for i := range out {
		out[i].ratios(reference)
	}
	return out
}

// compareRun is one run of a comparison.
func compareRun(ctx context.Context, s System, o CompareOptions, cl cell, round int, operations uint64, load bool) (Result, error) {
	w, err := workload.New(o.Workload)
	if err != nil {
		return Result{}, err
	}
	loop := driver.NewLoop(time.Now())
	target, opts, err := s.Plan(ctx, loop, cl.read, o.Write)
	if err != nil {
		return Result{Setup: Setup{Target: s.Name()}}, err
	}
	opts.Clients, opts.Operations, opts.Duration, opts.Load, opts.Seed = cl.clients, operations, o.Duration, load, o.Seed
	opts.ProgressInterval = o.ProgressInterval
	opts.Progress = func(p Progress) { fmt.Fprintf(o.Log, "  %s\n", p) }
	fmt.Fprintf(o.Log, "cosla bench compare: %s; %s reads, %s%s\n", opts.Setup, cl.read, clientsLabel(cl.clients), roundLabel(round, o.Repeat))
	res, err := Run(ctx, loop, target, w, opts)
	if c := res.Run.CPU; c != nil {
		fmt.Fprintf(o.Log, "  cpu: %s\n", c)
	}
	return res, err
}

// ratios fills in the rows' VsReference.
func (t *Table) ratios(reference string) {
	for i := range t.Rows {
		row := &t.Rows[i]
		if row.Result.Target == reference {
			continue
		}
		ref := slices.IndexFunc(t.Rows, func(r Row) bool { return r.Result.Target == reference && r.Strength == row.Strength })
		if ref < 0 {
			continue
		}
		a, b := t.Rows[ref].Result.Run, row.Result.Run
		ratio := &Ratio{Throughput: quotient(a.ThroughputOpsPerS, b.ThroughputOpsPerS), P50: map[string]float64{}}
		for _, k := range a.Kinds {
			if j := slices.IndexFunc(b.Kinds, func(l KindStats) bool { return l.Kind == k.Kind }); j >= 0 {
				if q := quotient(k.LatencyMS.P50, b.Kinds[j].LatencyMS.P50); q > 0 {
					ratio.P50[k.Kind] = q
				}
			}
		}
		row.VsReference = ratio
	}
}

// quotient is a/b, or 0 when either is 0 (or not finite).
func quotient(a, b float64) float64 {
	q := a / b
	if !(a > 0) || !(b > 0) || math.IsInf(q, 0) || math.IsNaN(q) {
		return 0
	}
	return q
}

// mixLine says a workload in a line: "1000 records; read 95%, update 5%;
// zipfian keys; 1000-byte values".
func mixLine(p workload.Properties) string {
	props := p.Proportions()
	sum := 0.0
	for _, v := range props {
		sum += v
	}
	var parts []string
	for k, v := range props {
		if v > 0 {
			parts = append(parts, fmt.Sprintf("%s %s%%", workload.Kind(k), strconv.FormatFloat(100*v/sum, 'g', 3, 64)))
		}
	}
	return fmt.Sprintf("%d records; %s; %s keys; %d-byte values", p.RecordCount, strings.Join(parts, ", "), p.RequestDistribution, p.ValueBytes())
}

// limitLine says what bounds each run, and how many times each is made.
func limitLine(d time.Duration, operations uint64, repeat int) string {
	var line string
	switch {
	case operations == 0:
		line = d.String() + " each"
	case d == 0:
		line = fmt.Sprintf("%d operations each", operations)
	default:
		line = fmt.Sprintf("%d operations each, at most %s", operations, d)
	}
	if repeat > 1 {
		line += fmt.Sprintf(", %d times in interleaved rounds", repeat)
	}
	return line
}

// Kinds returns the operation kinds of the table's run phases, in
// workload.Kind order.
func (t Table) Kinds() []string {
	var kinds []string
	for _, r := range t.Rows {
		for _, k := range r.Result.Run.Kinds {
			if !slices.Contains(kinds, k.Kind) {
				kinds = append(kinds, k.Kind)
			}
		}
	}
	slices.SortStableFunc(kinds, func(a, b string) int { return order(a) - order(b) })
	return kinds
}

// Title names the table: "1 client", "8 clients".
func (t Table) Title() string { return clientsLabel(t.Clients) }

func clientsLabel(n int) string {
	if n == 1 {
		return "1 client"
	}
	return fmt.Sprintf("%d clients", n)
}

// Grid renders the table as cells: a row per cell with the system, what
// its reads and writes were, its throughput and errors, the p50 and p99
// latency of each operation kind in milliseconds, the CPU in cores when
// it was measured, and the reference's ratios to it ("-" on the
// reference's rows, "n/a" where there is none). A row of repeats shows
// the medians with the least and greatest in parentheses.
func (t Table) Grid(reference string) (header []string, rows [][]string) {
	kinds := t.Kinds()
	withCPU := slices.ContainsFunc(t.Rows, func(r Row) bool { return r.Result.Run.CPU != nil })
	header = []string{"target", "reads", "read option", "write option", "ops/s", "errors"}
	for _, k := range kinds {
		header = append(header, k+" p50 ms", k+" p99 ms")
	}
	if withCPU {
		header = append(header, "client cores", "store cores", "machine cores")
	}
	header = append(header, reference+"/this ops/s")
	for _, k := range kinds {
		header = append(header, reference+"/this "+k+" p50")
	}
	for _, r := range t.Rows {
		res := r.Result
		cells := []string{res.Target, string(r.Strength), res.Read, res.Write, opsCell(r), strconv.FormatUint(res.Run.Errors, 10)}
		for _, k := range kinds {
			if j := slices.IndexFunc(res.Run.Kinds, func(s KindStats) bool { return s.Kind == k }); j >= 0 && res.Run.Kinds[j].LatencyMS.Count > 0 {
				l := res.Run.Kinds[j].LatencyMS
				cells = append(cells, latencyCell(l.P50, r.Spread, func(s *Spread) Range { return s.P50[k] }),
					latencyCell(l.P99, r.Spread, func(s *Spread) Range { return s.P99[k] }))
			} else {
				cells = append(cells, "n/a", "n/a")
			}
		}
		if withCPU {
			cells = append(cells, cpuCells(res.Run.CPU)...)
		}
		isRef := res.Target == reference
		cells = append(cells, ratioCell(r, isRef, func(v *Ratio) float64 { return v.Throughput }))
		for _, k := range kinds {
			cells = append(cells, ratioCell(r, isRef, func(v *Ratio) float64 { return v.P50[k] }))
		}
		rows = append(rows, cells)
	}
	return header, rows
}

// opsCell is a row's throughput: "33412" for one run, "33.4k
// (31.9-34.0k)" for the median of repeats and their range.
func opsCell(r Row) string {
	v := r.Result.Run.ThroughputOpsPerS
	if r.Spread == nil {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	lo, hi := compactOps(r.Spread.ThroughputOpsPerS.Min), compactOps(r.Spread.ThroughputOpsPerS.Max)
	if strings.HasSuffix(lo, "k") && strings.HasSuffix(hi, "k") {
		lo = strings.TrimSuffix(lo, "k")
	}
	return fmt.Sprintf("%s (%s-%s)", compactOps(v), lo, hi)
}

// compactOps renders a throughput in three or four figures: "812",
// "33.4k", "128k".
func compactOps(v float64) string {
	switch {
	case v >= 99950:
		return strconv.FormatFloat(v/1000, 'f', 0, 64) + "k"
	case v >= 999.5:
		return strconv.FormatFloat(v/1000, 'f', 1, 64) + "k"
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

// latencyCell is a latency in milliseconds, with its range over the
// repeats when there are some: "0.125 (0.120-0.131)".
func latencyCell(v float64, spread *Spread, of func(*Spread) Range) string {
	if spread == nil {
		return ms(v)
	}
	r := of(spread)
	return fmt.Sprintf("%s (%s-%s)", ms(v), ms(r.Min), ms(r.Max))
}

// cpuCells are a row's client, store and machine cores.
func cpuCells(c *CPU) []string {
	if c == nil {
		return []string{"n/a", "n/a", "n/a"}
	}
	store := "n/a"
	if c.StoreProcesses > 0 {
		store = strconv.FormatFloat(c.Store, 'f', 2, 64)
	}
	return []string{strconv.FormatFloat(c.Client, 'f', 2, 64), store, strconv.FormatFloat(c.Machine, 'f', 2, 64)}
}

func ratioCell(r Row, isRef bool, f func(*Ratio) float64) string {
	switch {
	case isRef:
		return "-"
	case r.VsReference == nil || f(r.VsReference) == 0:
		return "n/a"
	}
	return strconv.FormatFloat(f(r.VsReference), 'f', 2, 64)
}

// RatioNote says how to read the tables: the ratios, the medians and
// ranges of repeats, the CPU.
func (c Comparison) RatioNote() string {
	note := fmt.Sprintf("%s/this is %s's figure over the row's, at the same read strength and client count: "+
		"ops/s above 1 and p50 below 1 mean %s did better.", c.Reference, c.Reference, c.Reference)
	if c.Repeat > 1 {
		note += fmt.Sprintf(" Each row is %d runs, one per round: the median, the least and greatest in parentheses; the ratios are the medians'.", c.Repeat)
	}
	if cores := c.cores(); cores > 0 {
		note += fmt.Sprintf(" Cores are CPU seconds per second of the run phase, of the machine's %d: the bench process's (the client), "+
			"the store's servers' that it started, the whole machine's.", cores)
	}
	return note
}

// cores is the number of processors of the first run that measured its
// CPU; 0 if none did.
func (c Comparison) cores() int {
	for _, t := range c.Tables {
		for _, r := range t.Rows {
			if r.Result.Run.CPU != nil {
				return r.Result.Run.CPU.Cores
			}
		}
	}
	return 0
}

// runs are the row's runs: its repeats, or its one run.
func (r Row) runs() []Result {
	if len(r.Repeats) > 0 {
		return r.Repeats
	}
	return []Result{r.Result}
}

// WriteText writes the comparison as aligned text: a table per client
// count, then under it what went wrong in its runs and a warning for each
// row whose client may have been the bottleneck.
func (c Comparison) WriteText(w io.Writer) error {
	if _, err := fmt.Fprintf(w, "seed %d; %s; writes %s; runs of %s; the client on %d Go Ps (GOMAXPROCS) of %d cores\n%s\n",
		c.Seed, c.Mix, c.Write, c.Limit, c.ClientProcs, c.Cores, c.RatioNote()); err != nil {
		return err
	}
	for _, t := range c.Tables {
		fmt.Fprintf(w, "\n%s\n", t.Title())
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		header, rows := t.Grid(c.Reference)
		fmt.Fprintln(tw, strings.Join(header, "\t"))
		for _, r := range rows {
			fmt.Fprintln(tw, strings.Join(r, "\t"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, r := range t.Rows {
			writeRowNotes(w, r)
		}
	}
	return nil
}

// writeRowNotes writes the lines under a table about one of its rows:
// runs stopped early, first errors, the client as a bottleneck.
func writeRowNotes(w io.Writer, r Row) {
	runs := r.runs()
	for i, res := range runs {
		which := ""
		if len(r.Repeats) > 0 {
			which = fmt.Sprintf("repeat %d of ", i+1)
		}
		for _, p := range []*Phase{res.Load, &res.Run} {
			if p != nil && (p.Stop == StopCanceled || p.Stop == StopError) {
				fmt.Fprintf(w, "%s%s (%s reads) stopped early (%s) in its %s phase, after %d operations\n", which, res.Target, r.Strength, p.Stop, p.Name, p.Operations)
			}
		}
	}
	for _, k := range r.Result.Run.Kinds {
		if k.FirstError != "" {
			fmt.Fprintf(w, "first %s error of %s (%s reads): %s\n", k.Kind, r.Result.Target, r.Strength, k.FirstError)
		}
	}
	c := r.Result.Run.CPU
	if c == nil {
		return
	}
	figures := c.String()
	if len(r.Repeats) > 0 {
		figures = "medians: " + figures
	}
	for _, warn := range []struct {
		text string
		flag func(CPU) bool
	}{
		{c.clientWarning(), func(c CPU) bool { return c.ClientBound }},
		{c.sharedWarning(), func(c CPU) bool { return c.Shared }},
	} {
		if warn.text == "" {
			continue
		}
		in := ""
		if len(r.Repeats) > 0 {
			in = fmt.Sprintf(" in %d of %d repeats", countRepeats(runs, warn.flag), len(runs))
		}
		fmt.Fprintf(w, "warning: %s (%s reads)%s: %s (%s)\n", r.Result.Target, r.Strength, in, warn.text, figures)
		figures = "as above"
	}
}
