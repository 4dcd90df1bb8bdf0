package bench

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
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
	}
	return nil
}

// Comparison is what Compare measured. It is a plain snapshot: safe to
// copy and encode as JSON.
type Comparison struct {
	Seed uint64 `json:"seed"`
	// Workload is the effective workload, in properties-file form; Mix
	// says it in a line.
	Workload string `json:"workload"`
	Mix      string `json:"mix"`
	// Limit says what bounded each run ("10s each", "200 operations
	// each, at most 1m"): CompareOptions's Duration and Operations,
	// which replace the workload's operationcount.
	Limit string `json:"limit"`
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

// Row is one run.
type Row struct {
	// Strength is the read strength asked for; Result.Setup says what it
	// was on the system.
	Strength Strength `json:"strength"`
	Result   Result   `json:"result"`
	// VsReference compares the reference system's run at the same client
	// count and read strength with this one. It is nil on the reference's
	// own rows, and when the reference has no such run.
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
// client count, for each read strength, for each system in order. The
// systems stay open throughout; the caller opened them and closes them.
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
	c := Comparison{Seed: o.Seed, Workload: o.Workload.String(), Mix: mixLine(o.Workload), Limit: limitLine(o.Duration, o.Operations),
		Reference: names[0], Reads: o.Reads, Write: o.Write}
	loaded := make([]bool, len(systems))
	var err error
	for _, n := range o.Clients {
		t := Table{Clients: n}
		for _, read := range o.Reads {
			for i, s := range systems {
				if err = ctx.Err(); err != nil {
					err = fmt.Errorf("bench: %w", err)
					break
				}
				var res Result
				res, err = compareRun(ctx, s, o, read, n, operations, o.Load && !loaded[i])
				loaded[i] = true
				t.Rows = append(t.Rows, Row{Strength: read, Result: res})
				if err != nil {
					err = fmt.Errorf("bench: %s, %s reads, %d clients: %w", s.Name(), read, n, err)
					break
				}
			}
			if err != nil {
				break
			}
		}
		if len(t.Rows) > 0 {
			t.ratios(c.Reference)
			c.Tables = append(c.Tables, t)
		}
		if err != nil {
			break
		}
	}
	return c, err
}

// compareRun is one run of a comparison.
func compareRun(ctx context.Context, s System, o CompareOptions, read Strength, clients int, operations uint64, load bool) (Result, error) {
	w, err := workload.New(o.Workload)
	if err != nil {
		return Result{}, err
	}
	loop := driver.NewLoop(time.Now())
	target, opts, err := s.Plan(ctx, loop, read, o.Write)
	if err != nil {
		return Result{Setup: Setup{Target: s.Name()}}, err
	}
	opts.Clients, opts.Operations, opts.Duration, opts.Load, opts.Seed = clients, operations, o.Duration, load, o.Seed
	opts.ProgressInterval = o.ProgressInterval
	opts.Progress = func(p Progress) { fmt.Fprintf(o.Log, "  %s\n", p) }
	fmt.Fprintf(o.Log, "cosla bench compare: %s; %s reads, %s\n", opts.Setup, read, clientsLabel(clients))
	return Run(ctx, loop, target, w, opts)
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

// limitLine says what bounds each run.
func limitLine(d time.Duration, operations uint64) string {
	switch {
	case operations == 0:
		return d.String() + " each"
	case d == 0:
		return fmt.Sprintf("%d operations each", operations)
	}
	return fmt.Sprintf("%d operations each, at most %s", operations, d)
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

// Grid renders the table as cells: a row per run with the system, what
// its reads and writes were, its throughput and errors, the p50 and p99
// latency of each operation kind in milliseconds, and the reference's
// ratios to it ("-" on the reference's rows, "n/a" where there is none).
func (t Table) Grid(reference string) (header []string, rows [][]string) {
	kinds := t.Kinds()
	header = []string{"target", "reads", "read option", "write option", "ops/s", "errors"}
	for _, k := range kinds {
		header = append(header, k+" p50 ms", k+" p99 ms")
	}
	header = append(header, reference+"/this ops/s")
	for _, k := range kinds {
		header = append(header, reference+"/this "+k+" p50")
	}
	for _, r := range t.Rows {
		res := r.Result
		cells := []string{res.Target, string(r.Strength), res.Read, res.Write,
			strconv.FormatFloat(res.Run.ThroughputOpsPerS, 'f', 0, 64), strconv.FormatUint(res.Run.Errors, 10)}
		for _, k := range kinds {
			if j := slices.IndexFunc(res.Run.Kinds, func(s KindStats) bool { return s.Kind == k }); j >= 0 && res.Run.Kinds[j].LatencyMS.Count > 0 {
				l := res.Run.Kinds[j].LatencyMS
				cells = append(cells, ms(l.P50), ms(l.P99))
			} else {
				cells = append(cells, "n/a", "n/a")
			}
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

func ratioCell(r Row, isRef bool, f func(*Ratio) float64) string {
	switch {
	case isRef:
		return "-"
	case r.VsReference == nil || f(r.VsReference) == 0:
		return "n/a"
	}
	return strconv.FormatFloat(f(r.VsReference), 'f', 2, 64)
}

// RatioNote says how to read the ratios.
func (c Comparison) RatioNote() string {
	return fmt.Sprintf("%s/this is %s's figure over the row's, at the same read strength and client count: "+
		"ops/s above 1 and p50 below 1 mean %s did better.", c.Reference, c.Reference, c.Reference)
}

// WriteText writes the comparison as aligned text: a table per client
// count.
func (c Comparison) WriteText(w io.Writer) error {
	if _, err := fmt.Fprintf(w, "seed %d; %s; writes %s; runs of %s\n%s\n", c.Seed, c.Mix, c.Write, c.Limit, c.RatioNote()); err != nil {
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
			for _, p := range []*Phase{r.Result.Load, &r.Result.Run} {
				if p != nil && (p.Stop == StopCanceled || p.Stop == StopError) {
					fmt.Fprintf(w, "%s (%s reads) stopped early (%s) in its %s phase, after %d operations\n", r.Result.Target, r.Strength, p.Stop, p.Name, p.Operations)
				}
			}
			for _, k := range r.Result.Run.Kinds {
				if k.FirstError != "" {
					fmt.Fprintf(w, "first %s error of %s (%s reads): %s\n", k.Kind, r.Result.Target, r.Strength, k.FirstError)
				}
			}
		}
	}
	return nil
}
