package bench

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cosla/cosla/internal/lab/driver"
	"github.com/cosla/cosla/internal/lab/workload"
)

// optionStore is a memStore with the option lists of a store of package
// adapters: read and write options from the weakest to the strongest.
func optionStore(name string, reads, writes []string) *memStore {
	s := newMemStore()
	s.name, s.readOptions, s.writeOptions = name, reads, writes
	return s
}

func smallWorkload(t *testing.T, preset string, records uint64) workload.Properties {
	t.Helper()
	p, err := workload.Preset(preset)
	if err != nil {
		t.Fatal(err)
	}
	p.RecordCount = records
	return p
}

// kindCount sums the operations of one kind over rows.
func kindCount(rows []Row, kind string) int {
	n := 0
	for _, r := range rows {
		n += int(kindOps(r.Result.Run)[kind].Operations)
	}
	return n
}

// TestCompare compares two stores at two client counts, weak and strong
// reads: one table per count, a row per (strength, store) run, each store
// loaded once, every op with the option its strength maps to, ratios of
// the first store to the second.
func TestCompare(t *testing.T) {
	ref := optionStore("ref", []string{"replica", "primary"}, []string{"async", "wait"})
	other := optionStore("other", []string{"serializable", "linearizable"}, []string{"linearizable"})
	const records, operations = 20, 40
	var log strings.Builder
	c, err := Compare(context.Background(), []System{NewStoreSystem(ref), NewStoreSystem(other)}, CompareOptions{
		Workload: smallWorkload(t, "a", records), Clients: []int{1, 3}, Reads: []Strength{Weak, Strong}, Write: Strong,
		Operations: operations, Load: true, Seed: 5, Log: &log})
	if err != nil {
		t.Fatalf("Compare: %v; %s", err, repro(t))
	}
	if c.Reference != "ref" || c.Seed != 5 || !strings.Contains(c.Mix, "20 records; read 50%, update 50%; zipfian keys") {
		t.Errorf("comparison %+v; %s", c, repro(t))
	}
	if len(c.Tables) != 2 || c.Tables[0].Clients != 1 || c.Tables[1].Clients != 3 {
		t.Fatalf("tables %+v, want one for 1 client and one for 3; %s", c.Tables, repro(t))
	}
	type want struct {
		strength            Strength
		target, read, write string
	}
	wantRows := []want{
		{Weak, "ref", "replica", "wait"}, {Weak, "other", "serializable", "linearizable"},
		{Strong, "ref", "primary", "wait"}, {Strong, "other", "linearizable", "linearizable"},
	}
	var all []Row
	for ti, tab := range c.Tables {
		if len(tab.Rows) != len(wantRows) {
			t.Fatalf("table %d: %d rows, want %d; %s", ti, len(tab.Rows), len(wantRows), repro(t))
		}
		for i, r := range tab.Rows {
			w := wantRows[i]
			got := want{r.Strength, r.Result.Target, r.Result.Read, r.Result.Write}
			if got != w {
				t.Errorf("table %d row %d: %+v, want %+v; %s", ti, i, got, w, repro(t))
			}
			if r.Result.Clients != tab.Clients || r.Result.Run.Operations != operations || r.Result.Run.Errors != 0 || r.Result.Run.Stop != StopComplete {
				t.Errorf("table %d row %d: run %+v with %d clients; want %d operations, complete; %s", ti, i, r.Result.Run, r.Result.Clients, operations, repro(t))
			}
			// Loaded once per store: in its first run.
			if first := ti == 0 && i < 2; (r.Result.Load != nil) != first || (first && r.Result.Load.Operations != records) {
				t.Errorf("table %d row %d: load %+v; want %d inserts in each store's first run only; %s", ti, i, r.Result.Load, records, repro(t))
			}
			if (r.Result.Target == "ref") != (r.VsReference == nil) {
				t.Errorf("table %d row %d (%s): VsReference %+v; want one on the other store's rows only; %s", ti, i, r.Result.Target, r.VsReference, repro(t))
			}
			// The in-memory store answers within the histogram's
			// microsecond, so a p50 may be 0 and its ratio left out
			// (TestRatios checks the figures).
			if v := r.VsReference; v != nil {
				for k, q := range v.P50 {
					if (k != "read" && k != "update") || q <= 0 {
						t.Errorf("table %d row %d: ratios %+v; %s", ti, i, v, repro(t))
					}
				}
				if v.Throughput <= 0 {
					t.Errorf("table %d row %d: ratios %+v; %s", ti, i, v, repro(t))
				}
			}
			all = append(all, r)
		}
	}
	// Every op had the option of its run's strength.
	rows := func(target string, s Strength) []Row {
		var out []Row
		for _, r := range all {
			if r.Result.Target == target && (s == "" || r.Strength == s) {
				out = append(out, r)
			}
		}
		return out
	}
	for _, tc := range []struct {
		store  *memStore
		option string
		want   int
	}{
		{ref, "read replica", kindCount(rows("ref", Weak), "read")},
		{ref, "read primary", kindCount(rows("ref", Strong), "read")},
		{ref, "write wait", records + kindCount(rows("ref", ""), "update")},
		{other, "read serializable", kindCount(rows("other", Weak), "read")},
		{other, "read linearizable", kindCount(rows("other", Strong), "read")},
		{other, "write linearizable", records + kindCount(rows("other", ""), "update")},
	} {
		if got := tc.store.optionCount(tc.option); got != tc.want || got == 0 {
			t.Errorf("%s: %d calls %q, want %d (and some); %s", tc.store.name, got, tc.option, tc.want, repro(t))
		}
	}
	if n := strings.Count(log.String(), "cosla bench compare: "); n != 8 {
		t.Errorf("log has %d run lines, want 8:\n%s", n, log.String())
	}

	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var back Comparison
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, c) {
		t.Errorf("JSON round trip changed the comparison:\n%s", b)
	}

	var text strings.Builder
	if err := c.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if c.Limit != "40 operations each" {
		t.Errorf("Limit = %q", c.Limit)
	}
	if got := limitLine(time.Second, 0, 1) + "; " + limitLine(time.Minute, 7, 1) + "; " + limitLine(0, 9, 3); got != "1s each; 7 operations each, at most 1m0s; 9 operations each, 3 times in interleaved rounds" {
		t.Errorf("limitLine: %q", got)
	}
	for _, want := range []string{"seed 5; 20 records", "runs of 40 operations each; the client on ", "ref/this is ref's figure", "\n1 client\n", "\n3 clients\n",
		"read option", "read p50 ms", "update p99 ms", "ref/this ops/s", "ref/this update p50",
		"serializable", "linearizable", "primary"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	header, cells := c.Tables[0].Grid(c.Reference)
	if len(cells) != 4 || len(cells[0]) != len(header) || cells[0][len(header)-1] != "-" || cells[1][len(header)-1] == "-" {
		t.Errorf("grid %q %q", header, cells)
	}
}

// TestRatios checks the reference's ratios on made-up rows.
func TestRatios(t *testing.T) {
	row := func(target string, s Strength, opsPerS float64, p50 map[string]float64) Row {
		r := Row{Strength: s, Result: Result{Setup: Setup{Target: target}}}
		r.Result.Run.ThroughputOpsPerS = opsPerS
		for _, k := range []string{"read", "update", "scan"} {
			if v, ok := p50[k]; ok {
				r.Result.Run.Kinds = append(r.Result.Run.Kinds, KindStats{Kind: k, LatencyMS: driver.Latency{Count: 1, P50: v, P99: 2 * v}})
			}
		}
		return r
	}
	tab := Table{Clients: 4, Rows: []Row{
		row("cosla", Weak, 1000, map[string]float64{"read": 0.5, "update": 2}),
		row("redis", Weak, 4000, map[string]float64{"read": 0.25, "update": 0.5}),
		// No update here: that ratio is left out.
		row("etcd", Weak, 500, map[string]float64{"read": 1, "scan": 3}),
		// Nothing succeeded: no throughput ratio.
		row("postgres", Weak, 0, map[string]float64{}),
		// The reference has no strong run to compare with.
		row("redis", Strong, 2000, map[string]float64{"read": 0.5}),
	}}
	tab.ratios("cosla")
	want := []*Ratio{
		nil,
		{Throughput: 0.25, P50: map[string]float64{"read": 2, "update": 4}},
		{Throughput: 2, P50: map[string]float64{"read": 0.5}},
		{Throughput: 0, P50: map[string]float64{}},
		nil,
	}
	for i, r := range tab.Rows {
		if !reflect.DeepEqual(r.VsReference, want[i]) {
			t.Errorf("row %d (%s %s): VsReference %+v, want %+v", i, r.Result.Target, r.Strength, r.VsReference, want[i])
		}
	}
	if got := tab.Kinds(); !slices.Equal(got, []string{"read", "update", "scan"}) {
		t.Errorf("Kinds() = %q", got)
	}
	header, cells := tab.Grid("cosla")
	wantHeader := []string{"target", "reads", "read option", "write option", "ops/s", "errors",
		"read p50 ms", "read p99 ms", "update p50 ms", "update p99 ms", "scan p50 ms", "scan p99 ms",
		"cosla/this ops/s", "cosla/this read p50", "cosla/this update p50", "cosla/this scan p50"}
	if !slices.Equal(header, wantHeader) {
		t.Errorf("header %q, want %q", header, wantHeader)
	}
	for i, want := range [][]string{
		{"cosla", "weak", "", "", "1000", "0", "0.500", "1.000", "2.000", "4.000", "n/a", "n/a", "-", "-", "-", "-"},
		{"redis", "weak", "", "", "4000", "0", "0.250", "0.500", "0.500", "1.000", "n/a", "n/a", "0.25", "2.00", "4.00", "n/a"},
		{"etcd", "weak", "", "", "500", "0", "1.000", "2.000", "n/a", "n/a", "3.000", "6.000", "2.00", "0.50", "n/a", "n/a"},
		{"postgres", "weak", "", "", "0", "0", "n/a", "n/a", "n/a", "n/a", "n/a", "n/a", "n/a", "n/a", "n/a", "n/a"},
		{"redis", "strong", "", "", "2000", "0", "0.500", "1.000", "n/a", "n/a", "n/a", "n/a", "n/a", "n/a", "n/a", "n/a"},
	} {
		if !slices.Equal(cells[i], want) {
			t.Errorf("grid row %d = %q, want %q", i, cells[i], want)
		}
	}
}

// TestCompareCancel cancels the comparison in the second store's first
// run: the first store's run is kept, the second's is marked canceled,
// and the later client counts never run.
func TestCompareCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := newMemStore()
	second := optionStore("second", []string{""}, []string{""})
	var once sync.Once
	second.wait = func(ctx context.Context) error {
		once.Do(cancel)
		return ctx.Err()
	}
	c, err := Compare(ctx, []System{NewStoreSystem(first), NewStoreSystem(second)}, CompareOptions{
		Workload: smallWorkload(t, "c", 10), Clients: []int{1, 2}, Operations: 20, Seed: 1})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled; %s", err, repro(t))
	}
	if len(c.Tables) != 1 || len(c.Tables[0].Rows) != 2 {
		t.Fatalf("tables %+v, want one with two rows; %s", c.Tables, repro(t))
	}
	if r := c.Tables[0].Rows; r[0].Result.Run.Stop != StopComplete || r[1].Result.Run.Stop != StopCanceled {
		t.Errorf("stops %s, %s; want complete, canceled; %s", r[0].Result.Run.Stop, r[1].Result.Run.Stop, repro(t))
	}
	var text strings.Builder
	if err := c.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "second (weak reads) stopped early (canceled) in its run phase, after ") || strings.Contains(text.String(), "mem (weak reads) stopped") {
		t.Errorf("text does not say which run was cut short:\n%s", text.String())
	}
}

func TestCompareValidate(t *testing.T) {
	w := smallWorkload(t, "c", 10)
	ok := CompareOptions{Workload: w, Clients: []int{1}, Operations: 10}
	for _, tc := range []struct {
		name   string
		change func(o *CompareOptions)
		want   string
	}{
		{"no clients", func(o *CompareOptions) { o.Clients = nil }, "no Clients"},
		{"zero clients", func(o *CompareOptions) { o.Clients = []int{0} }, "Clients[0]"},
		{"too many clients", func(o *CompareOptions) { o.Clients = []int{MaxClients + 1} }, "Clients[0]"},
		{"repeated clients", func(o *CompareOptions) { o.Clients = []int{2, 2} }, "Clients[1]"},
		{"bad read", func(o *CompareOptions) { o.Reads = []Strength{"sometimes"} }, "Reads[0]"},
		{"repeated read", func(o *CompareOptions) { o.Reads = []Strength{Weak, Weak} }, "Reads[1]"},
		{"bad write", func(o *CompareOptions) { o.Write = "eventually" }, "Write"},
		{"no bound", func(o *CompareOptions) { o.Operations = 0 }, "neither Duration nor Operations"},
		{"negative duration", func(o *CompareOptions) { o.Duration = -1 }, "Duration"},
		{"bad workload", func(o *CompareOptions) { o.Workload.FieldLength = 0 }, "fieldlength"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := ok
			o.Clients = slices.Clone(ok.Clients)
			tc.change(&o)
			_, err := Compare(context.Background(), []System{NewStoreSystem(newMemStore())}, o)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Compare = %v, want ErrInvalid naming %q", err, tc.want)
			}
		})
	}
	if _, err := Compare(context.Background(), nil, ok); !errors.Is(err, ErrInvalid) {
		t.Errorf("no systems: %v, want ErrInvalid", err)
	}
	same := []System{NewStoreSystem(newMemStore()), NewStoreSystem(newMemStore())}
	if _, err := Compare(context.Background(), same, ok); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "twice") {
		t.Errorf("a system twice: %v, want ErrInvalid", err)
	}
}

func TestSystemNames(t *testing.T) {
	if got, want := SystemNames(), []string{"cosla", "cosla-nofsync", "redis", "etcd", "postgres"}; !slices.Equal(got, want) {
		t.Errorf("SystemNames() = %q, want %q", got, want)
	}
	if err := CheckNames([]string{"cosla", "redis", "etcd"}); err != nil {
		t.Errorf("CheckNames: %v", err)
	}
	for _, names := range [][]string{{"cosla", "oracle"}, {"redis", "redis"}} {
		if err := CheckNames(names); !errors.Is(err, ErrInvalid) {
			t.Errorf("CheckNames(%q) = %v, want ErrInvalid", names, err)
		}
	}
	for _, s := range []string{"weak", "strong"} {
		if got, err := ParseStrength(s); err != nil || string(got) != s {
			t.Errorf("ParseStrength(%q) = %q, %v", s, got, err)
		}
	}
	if _, err := ParseStrength("eventual"); !errors.Is(err, ErrInvalid) {
		t.Errorf("ParseStrength(eventual) = %v, want ErrInvalid", err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		o    SystemOptions
	}{
		{"oracle", SystemOptions{Dir: t.TempDir()}},
		{"redis", SystemOptions{}},
		{"cosla", SystemOptions{Connect: []string{"127.0.0.1:1"}}},
		{"cosla-nofsync", SystemOptions{}},
		{"cosla-nofsync", SystemOptions{Dir: t.TempDir(), Site: "us"}},
	} {
		if s, err := OpenSystem(ctx, tc.name, tc.o); !errors.Is(err, ErrInvalid) {
			if s != nil {
				s.Close()
			}
			t.Errorf("OpenSystem(%s, %+v) = %v, want ErrInvalid", tc.name, tc.o, err)
		}
	}
	if _, err := OpenSystem(ctx, "cosla", SystemOptions{ClusterDir: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "no cluster running") {
		t.Errorf("OpenSystem(cosla) on an empty cluster directory = %v, want an error saying no cluster runs", err)
	}
}
