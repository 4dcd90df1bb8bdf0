package bench

import (
	"context"
	"encoding/json"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/cosla/cosla/internal/lab/driver"
)

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		vs   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{7}, 7},
		{[]float64{3, 1}, 2},
		{[]float64{5, 1, 3}, 3},
		{[]float64{10, 1, 4, 2}, 3},
		{[]float64{2, 2, 9}, 2},
	} {
		if got := median(tc.vs); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.vs, got, tc.want)
		}
	}
	vs := []float64{3, 1, 2}
	median(vs)
	if !slices.Equal(vs, []float64{3, 1, 2}) {
		t.Errorf("median reordered its argument: %v", vs)
	}
	if got := rangeOf([]float64{3, 1, 2}); got != (Range{Min: 1, Max: 3}) {
		t.Errorf("rangeOf = %+v", got)
	}
}

// repeatResult is a made-up repeat: a run phase with its stop, its
// throughput, a read kind with p50 and p99 (none when p50 is 0), and the
// client's CPU.
func repeatResult(stop Stop, opsPerS, p50, p99, client float64) Result {
	r := Result{Setup: Setup{Target: "redis", Read: "replica"}, Clients: 4, Seed: 3}
	r.Run = Phase{Name: PhaseRun, Stop: stop, ElapsedMS: 1000, Operations: 100, Errors: 1, ThroughputOpsPerS: opsPerS}
	if p50 > 0 {
		r.Run.Kinds = []KindStats{{Kind: "read", Operations: 100, Errors: 1, LatencyMS: driver.Latency{Count: 99, P50: p50, P99: p99, Max: 2 * p99},
			LatencyCDF: []driver.Quantile{{Q: 0, MS: p50 / 2}, {Q: 0.5, MS: p50}, {Q: 1, MS: 2 * p99}}}}
	}
	r.Run.CPU = &CPU{Cores: 2, Client: client, Store: 0.5, StoreProcesses: 2, Machine: client + 0.6, Other: 0.1}
	return r
}

// TestSummarize checks a cell's summary of its repeats on made-up runs:
// medians of what says how fast, totals of counts, the ranges, and the
// repeats that did not reach their bound left out of the medians.
func TestSummarize(t *testing.T) {
	repeats := []Result{
		repeatResult(StopDuration, 30000, 0.10, 0.50, 0.9),
		repeatResult(StopDuration, 34000, 0.12, 0.70, 1.1),
		repeatResult(StopDuration, 31000, 0.11, 0.40, 1.0),
	}
	repeats[0].Load = &Phase{Name: PhaseLoad, Operations: 1000}
	repeats[1].Run.CPU.ClientBound = true
	repeats[2].Run.Kinds[0].FirstError = "boom"
	sum, spread := Summarize(repeats)

	if sum.Setup != repeats[0].Setup || sum.Clients != 4 || sum.Seed != 3 || sum.Load != repeats[0].Load {
		t.Errorf("summary of %+v: not the repeats' setup and first load", sum)
	}
	r := sum.Run
	if r.ThroughputOpsPerS != 31000 || r.Operations != 300 || r.Errors != 3 || r.ElapsedMS != 3000 || r.Stop != StopDuration {
		t.Errorf("run %+v: want median 31000 ops/s, 300 operations, 3 errors, 3000 ms", r)
	}
	k := r.Kinds[0]
	if k.Kind != "read" || k.Operations != 300 || k.Errors != 3 || k.FirstError != "boom" ||
		k.LatencyMS != (driver.Latency{Count: 297, P50: 0.11, P99: 0.50, Max: 1.0}) {
		t.Errorf("read %+v: want medians p50 0.11, p99 0.50, max 1.0 over 297 latencies", k)
	}
	if want := []driver.Quantile{{Q: 0, MS: 0.055}, {Q: 0.5, MS: 0.11}, {Q: 1, MS: 1.0}}; !reflect.DeepEqual(k.LatencyCDF, want) {
		t.Errorf("CDF %v, want the median at each quantile %v", k.LatencyCDF, want)
	}
	if c := r.CPU; c == nil || c.Client != 1.0 || c.Store != 0.5 || c.StoreProcesses != 2 || c.Machine != 1.6 || !c.ClientBound || c.Shared {
		t.Errorf("CPU %+v: want the medians, client-bound as one repeat was", c)
	}
	wantSpread := &Spread{ThroughputOpsPerS: Range{30000, 34000},
		P50: map[string]Range{"read": {0.10, 0.12}}, P99: map[string]Range{"read": {0.40, 0.70}}}
	if !reflect.DeepEqual(spread, wantSpread) {
		t.Errorf("spread %+v, want %+v", spread, wantSpread)
	}

	// A repeat cut short counts in the totals, not in the medians.
	cut := append(slices.Clone(repeats), repeatResult(StopCanceled, 10, 9, 9, 0.1))
	sum, spread = Summarize(cut)
	if sum.Run.ThroughputOpsPerS != 31000 || sum.Run.Operations != 400 || spread.ThroughputOpsPerS != (Range{30000, 34000}) ||
		sum.Run.Kinds[0].LatencyMS.P50 != 0.11 {
		t.Errorf("with a canceled repeat: %+v, %+v; want it left out of the medians", sum.Run, spread)
	}
	// When none reached its bound, all count.
	sum, _ = Summarize([]Result{repeatResult(StopCanceled, 10, 1, 2, 0.1), repeatResult(StopError, 30, 3, 4, 0.3)})
	if sum.Run.ThroughputOpsPerS != 20 || sum.Run.Stop != StopCanceled {
		t.Errorf("all cut short: %+v; want the median of both, the first's stop", sum.Run)
	}
	// A repeat with no successful read has no latency to take a median
	// of, nor a range.
	sum, spread = Summarize([]Result{repeatResult(StopDuration, 0, 0, 0, 0.1), repeatResult(StopDuration, 0, 0, 0, 0.2)})
	if len(sum.Run.Kinds) != 0 || len(spread.P50) != 0 {
		t.Errorf("no reads: %+v, %+v", sum.Run.Kinds, spread)
	}
	if sum, spread := Summarize(nil); spread != nil || !reflect.DeepEqual(sum, Result{}) {
		t.Errorf("Summarize(nil) = %+v, %+v", sum, spread)
	}
}

func TestSchedule(t *testing.T) {
	o := CompareOptions{Clients: []int{1, 8}, Reads: []Strength{Weak, Strong}}
	cells := compareCells(o, 2)
	want := []cell{{1, Weak, 0}, {1, Weak, 1}, {1, Strong, 0}, {1, Strong, 1}, {8, Weak, 0}, {8, Weak, 1}, {8, Strong, 0}, {8, Strong, 1}}
	if !slices.Equal(cells, want) {
		t.Errorf("compareCells = %v, want %v", cells, want)
	}
	for _, tc := range []struct {
		cells, repeat int
		want          []scheduled
	}{
		{2, 1, []scheduled{{0, 0}, {0, 1}}},
		{3, 2, []scheduled{{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}, {1, 2}}},
		{1, 3, []scheduled{{0, 0}, {1, 0}, {2, 0}}},
	} {
		if got := schedule(tc.cells, tc.repeat); !slices.Equal(got, tc.want) {
			t.Errorf("schedule(%d, %d) = %v, want %v", tc.cells, tc.repeat, got, tc.want)
		}
	}
}

func TestRepeatCells(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{
		{0, "0"}, {812.4, "812"}, {999.4, "999"}, {999.6, "1.0k"}, {33412, "33.4k"}, {99949, "99.9k"}, {99951, "100k"}, {128300, "128k"},
	} {
		if got := compactOps(tc.v); got != tc.want {
			t.Errorf("compactOps(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
	row := func(opsPerS float64, spread *Spread) Row {
		r := Row{Spread: spread}
		r.Result.Run.ThroughputOpsPerS = opsPerS
		return r
	}
	for _, tc := range []struct {
		row  Row
		want string
	}{
		{row(33412.4, nil), "33412"},
		{row(33412.4, &Spread{ThroughputOpsPerS: Range{31900, 34049}}), "33.4k (31.9-34.0k)"},
		{row(1010, &Spread{ThroughputOpsPerS: Range{990, 1030}}), "1.0k (990-1.0k)"},
		{row(512, &Spread{ThroughputOpsPerS: Range{480, 530}}), "512 (480-530)"},
	} {
		if got := opsCell(tc.row); got != tc.want {
			t.Errorf("opsCell(%v, %+v) = %q, want %q", tc.row.Result.Run.ThroughputOpsPerS, tc.row.Spread, got, tc.want)
		}
	}

	// A table of repeats: medians with their ranges, the CPU, the ratios
	// of the medians.
	ref, _ := Summarize([]Result{repeatResult(StopDuration, 30000, 0.10, 0.50, 0.9), repeatResult(StopDuration, 31000, 0.12, 0.70, 1.1)})
	other, spread := Summarize([]Result{repeatResult(StopDuration, 60000, 0.05, 0.25, 1.2), repeatResult(StopDuration, 62000, 0.07, 0.35, 1.2)})
	ref.Target = "cosla"
	tab := Table{Clients: 4, Rows: []Row{{Strength: Weak, Result: ref, Spread: &Spread{ThroughputOpsPerS: Range{30000, 31000}}},
		{Strength: Weak, Result: other, Spread: spread}}}
	tab.ratios("cosla")
	header, cells := tab.Grid("cosla")
	wantHeader := []string{"target", "reads", "read option", "write option", "ops/s", "errors", "read p50 ms", "read p99 ms",
		"client cores", "store cores", "machine cores", "cosla/this ops/s", "cosla/this read p50"}
	if !slices.Equal(header, wantHeader) {
		t.Errorf("header %q, want %q", header, wantHeader)
	}
	want := []string{"redis", "weak", "replica", "", "61.0k (60.0-62.0k)", "2", "0.060 (0.050-0.070)", "0.300 (0.250-0.350)",
		"1.20", "0.50", "1.80", "0.50", "1.83"}
	if !slices.Equal(cells[1], want) {
		t.Errorf("row of repeats %q, want %q", cells[1], want)
	}
}

// TestCompareRepeat compares two stores twice over: the runs go round
// by round, each store is loaded once, and each row holds both repeats,
// their medians and range; the text says so.
func TestCompareRepeat(t *testing.T) {
	ref := optionStore("ref", []string{"replica", "primary"}, []string{"async"})
	other := optionStore("other", []string{"serializable", "linearizable"}, []string{"linearizable"})
	const records, operations = 10, 30
	var log strings.Builder
	c, err := Compare(context.Background(), []System{NewStoreSystem(ref), NewStoreSystem(other)}, CompareOptions{
		Workload: smallWorkload(t, "c", records), Clients: []int{1, 2}, Reads: []Strength{Weak, Strong}, Operations: operations,
		Repeat: 2, Load: true, Seed: 4, Log: &log})
	if err != nil {
		t.Fatalf("Compare: %v; %s", err, repro(t))
	}
	// Round 1 makes every run once in the order of a comparison without
	// repeats, then round 2 again.
	var order []string
	for _, m := range regexp.MustCompile(`cosla bench compare: (\w+), reads (\w+).*; (\w+) reads, (\d+) clients?, round (\d) of 2`).FindAllStringSubmatch(log.String(), -1) {
		order = append(order, strings.Join(m[1:], " "))
	}
	var want []string
	for _, round := range []string{"1", "2"} {
		for _, n := range []string{"1", "2"} {
			want = append(want, "ref replica weak "+n+" "+round, "other serializable weak "+n+" "+round,
				"ref primary strong "+n+" "+round, "other linearizable strong "+n+" "+round)
		}
	}
	if !slices.Equal(order, want) {
		t.Errorf("runs in the order\n%s\nwant\n%s", strings.Join(order, "\n"), strings.Join(want, "\n"))
	}
	if c.Repeat != 2 || c.Limit != "30 operations each, 2 times in interleaved rounds" || len(c.Tables) != 2 {
		t.Fatalf("comparison: repeat %d, limit %q, %d tables", c.Repeat, c.Limit, len(c.Tables))
	}
	for ti, tab := range c.Tables {
		for i, r := range tab.Rows {
			if len(r.Repeats) != 2 || r.Spread == nil || r.Result.Run.Operations != 2*operations {
				t.Fatalf("table %d row %d: %d repeats, spread %+v, %d operations; want 2, a spread, %d", ti, i, len(r.Repeats), r.Spread, r.Result.Run.Operations, 2*operations)
			}
			for ri, rep := range r.Repeats {
				if rep.Run.Operations != operations || rep.Run.Stop != StopComplete {
					t.Errorf("table %d row %d repeat %d: %+v", ti, i, ri, rep.Run)
				}
				// Loaded once per store: in the first repeat of its first row.
				if first := ti == 0 && i < 2 && ri == 0; (rep.Load != nil) != first {
					t.Errorf("table %d row %d repeat %d: load %+v", ti, i, ri, rep.Load)
				}
			}
			if s := r.Spread.ThroughputOpsPerS; s.Min > r.Result.Run.ThroughputOpsPerS || r.Result.Run.ThroughputOpsPerS > s.Max {
				t.Errorf("table %d row %d: median %v outside its range %+v", ti, i, r.Result.Run.ThroughputOpsPerS, s)
			}
		}
	}
	if got := ref.optionCount("write async"); got != records {
		t.Errorf("ref: %d writes, want its %d records loaded once", got, records)
	}

	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var back Comparison
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, c) {
		t.Errorf("JSON round trip changed the comparison (%v):\n%s", err, b)
	}
	for _, want := range []string{`"repeat":2`, `"repeats":[{`, `"spread":{"throughput_ops_per_s":{"min":`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("JSON lacks %s", want)
		}
	}
	var text strings.Builder
	if err := c.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"runs of 30 operations each, 2 times in interleaved rounds; the client on ", "Each row is 2 runs, one per round: the median",
		"\n1 client\n", "\n2 clients\n"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	if !regexp.MustCompile(`\nref +weak +replica +async +[0-9.]+k? \([0-9.]+k?-[0-9.]+k?\) +0 `).MatchString(text.String()) {
		t.Errorf("text has no row of medians and ranges:\n%s", text.String())
	}
}

// TestRowNotes checks the lines under a table: a repeat stopped early,
// and the warnings with the number of repeats they held in.
func TestRowNotes(t *testing.T) {
	repeats := []Result{
		repeatResult(StopDuration, 30000, 0.1, 0.5, 1.2),
		repeatResult(StopCanceled, 100, 0.1, 0.5, 1.3),
		repeatResult(StopDuration, 31000, 0.1, 0.5, 0.2),
	}
	repeats[0].Run.CPU.ClientBound = true
	repeats[1].Run.CPU.ClientBound = true
	sum, spread := Summarize(repeats)
	var text strings.Builder
	writeRowNotes(&text, Row{Strength: Weak, Result: sum, Spread: spread, Repeats: repeats})
	want := "repeat 2 of redis (weak reads) stopped early (canceled) in its run phase, after 100 operations\n" +
		"warning: redis (weak reads) in 2 of 3 repeats: the client may be the bottleneck: the machine was at least 90% busy and the client used as much CPU as the store " +
		"(medians: client 0.70, store 0.50 (2 processes), other 0.10, machine 1.30 of 2 cores)\n"
	if text.String() != want {
		t.Errorf("notes\n%s\nwant\n%s", text.String(), want)
	}
	text.Reset()
	one := repeatResult(StopDuration, 30000, 0.1, 0.5, 1.2)
	one.Run.CPU.Shared = true
	writeRowNotes(&text, Row{Strength: Strong, Result: one})
	if want := "warning: redis (strong reads): the machine was shared: "; !strings.HasPrefix(text.String(), want) || strings.Count(text.String(), "\n") != 1 ||
		!strings.HasSuffix(text.String(), "(client 1.20, store 0.50 (2 processes), other 0.10, machine 1.80 of 2 cores)\n") {
		t.Errorf("notes of one run:\n%s\nwant one line starting %q, with the CPU", text.String(), want)
	}
	// Both warnings: the figures once.
	text.Reset()
	one.Run.CPU.ClientBound = true
	writeRowNotes(&text, Row{Strength: Strong, Result: one})
	if lines := strings.Split(strings.TrimSpace(text.String()), "\n"); len(lines) != 2 || !strings.Contains(lines[0], "bottleneck") ||
		!strings.Contains(lines[0], "(client 1.20") || !strings.HasSuffix(lines[1], "quiet machine's (as above)") {
		t.Errorf("notes with both warnings:\n%s", text.String())
	}
}
