package experiment

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/cosla/cosla/internal/lab/driver"
)

// causalWorld3 is a scenario prefix: three sites of two storage nodes
// and a client each, two rings.
const causalWorld3 = `
topology_inline:
  name: three
  local_rtt: 1ms
  sites:
    - {name: a, replicas: [r1, r2], clients: [c1]}
    - {name: b, replicas: [r1, r2], clients: [c1]}
    - {name: c, replicas: [r1, r2], clients: [c1]}
  links:
    - {a: a, b: b, rtt: 20ms}
    - {a: a, b: c, rtt: 80ms}
    - {a: b, b: c, rtt: 90ms}
causal: {rings: [[a, b], [c]], no_load: true}
workload: {keys: 2000, put_fraction: 0.05, value_size: 50, duration: 1s, warmup: 200ms}
clients: {a: 4, b: 4, c: 4}
`

// TestCausalScenario checks the causal block's defaults and that
// validation accepts a causal scenario without SLAs and names the field
// of every mistake.
func TestCausalScenario(t *testing.T) {
	s := parse(t, causalWorld3)
	if strings.Join(s.Strategies, " ") != "karma karma-nc cops-pr cops-ideal" || strings.Join(s.Outputs, " ") != "causal saturation" {
		t.Errorf("defaults: strategies %v, outputs %v", s.Strategies, s.Outputs)
	}
	if s.Workload.SessionOps != 0 || s.Causal.LoadSessions != 64 || len(s.slas) != 1 {
		t.Errorf("defaults: session ops %d (want 0: sessions last the run), load sessions %d, %d SLA variants",
			s.Workload.SessionOps, s.Causal.LoadSessions, len(s.slas))
	}
	for _, tc := range []struct {
		name, yaml, field string
	}{
		{"slas", causalWorld3 + "slas: [{sla: password-checking}]\n", "slas"},
		{"strategy", causalWorld3 + "strategies: [karma, pileus]\n", "strategies[1]"},
		{"ring site", strings.Replace(causalWorld3, "[[a, b], [c]]", "[[a, b], [d]]", 1), "causal.rings"},
		{"site in no ring", strings.Replace(causalWorld3, "[[a, b], [c]]", "[[a, b]]", 1), "causal.rings"},
		{"no rings", strings.Replace(causalWorld3, "rings: [[a, b], [c]], ", "", 1), "causal.rings"},
		{"pileus output", causalWorld3 + "outputs: [utility]\n", "outputs[0]"},
		{"tx fraction", strings.Replace(causalWorld3, "no_load: true", "no_load: true, get_tx_fraction: 0.99", 1), "causal.get_tx_fraction"},
		{"machines", strings.Replace(causalWorld3, "no_load: true", "no_load: true, machines: 2", 1), "causal.machines"},
		{"bound", strings.Replace(causalWorld3, "value_size: 50", "value_size: 50, bound: 10ms", 1), "workload"},
		{"warm keys", strings.Replace(causalWorld3, "no_load: true", "no_load: true, warm_keys: -1", 1), "causal.warm_keys"},
		{"warm hotspot", strings.Replace(strings.Replace(causalWorld3, "no_load: true", "no_load: true, warm_keys: 10", 1),
			"keys: 2000", "keys: 2000, distribution: hotspot", 1), "causal.warm_keys"},
		{"cluster warm keys", causalWorld3 + "cluster: {warm_keys: -1}\n", "cluster.warm_keys"},
		{"timeout", strings.Replace(causalWorld3, "no_load: true", "no_load: true, read_timeout: -1s", 1), "causal.read_timeout"},
		{"max buffered", strings.Replace(causalWorld3, "no_load: true", "no_load: true, max_buffered: -1", 1), "causal.max_buffered"},
		{"paper bound", causalWorld3 + "paper: {values: [{metric: local_pct, value: 77, bound: '~'}]}\n", "paper.values[0].bound"},
		{"causal output elsewhere", "slas: [{sla: password-checking}]\noutputs: [saturation]\n", "outputs[0]"},
		{"causal metric elsewhere", "slas: [{sla: password-checking}]\npaper: {values: [{metric: local_pct, value: 77}]}\n", "paper.values[0].metric"},
		{"sweep", causalWorld3 + "sweep: {param: total_sessions, values: ['2']}\n", "sweep.values[0]"},
		{"read_write", causalWorld3 + "sweep: {param: read_write, values: ['95']}\n", "sweep.values[0]"},
	} {
		_, err := Parse([]byte(tc.yaml), "test")
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.field+":") {
			t.Errorf("%s: err %v, want ErrInvalid naming %s", tc.name, err, tc.field)
		}
	}
	s = parse(t, causalWorld3+"sweep: {param: total_sessions, values: ['13']}\n")
	points, err := pointScenarios(s)
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for _, c := range points[0].s.Clients {
		got = append(got, c.Sessions)
	}
	if len(got) != 3 || got[0] != 5 || got[1] != 4 || got[2] != 4 {
		t.Errorf("total_sessions 13 over three sites: %v, want [5 4 4]", got)
	}
	s = parse(t, causalWorld3+"sweep: {param: read_write, values: ['80-20']}\n")
	if points, err = pointScenarios(s); err != nil || points[0].s.Workload.PutFraction != 0.2 {
		t.Errorf("read_write 80-20: %v, put fraction %v", err, points[0].s.Workload.PutFraction)
	}
}

// TestCausalRun runs a small causal scenario under Karma and
// COPS-Ideal: every client site drives one world, Karma's reads hit its
// caches, COPS-Ideal's are all local, the tables and plots are made, and
// the same seed gives the same result, byte for byte.
func TestCausalRun(t *testing.T) {
	s := parse(t, causalWorld3+"strategies: [karma, cops-ideal]\noutputs: [causal, saturation, causal-sites, causal-timeline, ops]\n")
	r := runSim(t, s)
	if len(r.Causal) != 2 || len(r.Runs) != 6 {
		t.Fatalf("%d causal runs and %d site runs, want 2 and 6", len(r.Causal), len(r.Runs))
	}
	byStrategy := map[string]CausalRun{}
	for _, c := range r.Causal {
		byStrategy[c.Strategy] = c
		if c.Sessions != 12 || len(c.Sites) != 3 || c.Gets == 0 || c.Puts == 0 || c.ThroughputOpsPerS <= 0 || c.Failed != 0 {
			t.Errorf("%s: %d sessions, %d sites, %d gets, %d puts, %.0f ops/s, %d failed", c.Strategy, c.Sessions, len(c.Sites), c.Gets, c.Puts, c.ThroughputOpsPerS, c.Failed)
		}
		if c.GetLatencyMS.Count != c.Gets || c.PutLatencyMS.Mean <= 0 || c.PutLatencyMS.P99 > 10 {
			t.Errorf("%s: get latency %+v, put latency %+v (puts are local)", c.Strategy, c.GetLatencyMS, c.PutLatencyMS)
		}
		if sum := c.BufferPct + c.CachePct + c.RingLocalPct + c.RingRemotePct; sum < 99.9 || sum > 100.1 {
			t.Errorf("%s: sources sum to %.2f%%", c.Strategy, sum)
		}
		if c.NotFoundPct == 0 {
			t.Errorf("%s: every read found a value, but no key was loaded", c.Strategy)
		}
		if len(c.Timeline) == 0 || c.TraceHash == "" {
			t.Errorf("%s: %d seconds of timeline, trace hash %q", c.Strategy, len(c.Timeline), c.TraceHash)
		}
	}
	if k := byStrategy["karma"]; k.CachePct <= 0 || k.LocalPct >= 100 {
		t.Errorf("karma: cache %.1f%%, local %.1f%%: want cache hits, and some reads elsewhere", k.CachePct, k.LocalPct)
	}
	if i := byStrategy["cops-ideal"]; i.LocalPct != 100 || i.CachePct != 0 || i.RingRemotePct != 0 {
		t.Errorf("cops-ideal: local %.1f%%, cache %.1f%%, remote %.1f%%; want every read local", i.LocalPct, i.CachePct, i.RingRemotePct)
	}
	for _, run := range r.Runs {
		if run.Causal == nil || run.Causal.Site != run.Client || run.Gets == 0 || run.AvgLatencyMS <= 0 || len(run.Ops) == 0 {
			t.Errorf("%s/%s: causal %+v, %d gets, latency %.1f, ops %v", run.Client, run.Strategy, run.Causal, run.Gets, run.AvgLatencyMS, run.Ops)
		}
	}
	tables := map[string]Table{}
	for _, tb := range Tables(s, r) {
		tables[tb.Name] = tb
	}
	for name, rows := range map[string]int{"causal": 2, "saturation": 2, "comparison": 1, "causal-sites": 6, "ops": 12} {
		if len(tables[name].Rows) != rows {
			t.Errorf("table %s: %d rows, want %d", name, len(tables[name].Rows), rows)
		}
	}
	if len(tables["causal-timeline"].Rows) == 0 {
		t.Error("no timeline rows")
	}
	figs, err := Plots(s, r)
	if err != nil || len(figs) != 6 {
		t.Errorf("%d plots, %v; want 6", len(figs), err)
	}
	again := runSim(t, parse(t, causalWorld3+"strategies: [karma, cops-ideal]\noutputs: [causal, saturation, causal-sites, causal-timeline, ops]\n"))
	a, _ := MarshalResult(r)
	b, _ := MarshalResult(again)
	if !bytes.Equal(a, b) || r.TraceHash != again.TraceHash {
		t.Errorf("the same seed gave different results (trace hashes %s, %s)", r.TraceHash, again.TraceHash)
	}
}

// TestCausalLoadScheduleAndTransactions loads the keys through the
// rings, runs get-transactions beside Gets and Puts, and congests a site
// halfway: the phases are reported, the loaded keys read back found.
func TestCausalLoadScheduleAndTransactions(t *testing.T) {
	yaml := strings.NewReplacer("no_load: true", "load_sessions: 4, get_tx_fraction: 0.1, tx_keys: 3, read_timeout: 3s",
		"keys: 2000", "keys: 300", "duration: 1s, warmup: 200ms", "duration: 4s, warmup: 1s").Replace(causalWorld3) +
		`strategies: [karma-nc, cops-pr]
schedule:
  - {label: slow-c, at: 2s, action: add-rtt, from: c, to: a, rtt: 500ms}
  - {label: slow-c, at: 2s, action: add-rtt, from: c, to: b, rtt: 500ms}
outputs: [causal, causal-timeline]
`
	s := parse(t, yaml)
	r := runSim(t, s)
	for _, c := range r.Causal {
		if c.GetTxs == 0 || c.GetTxLatencyMS == nil || c.Failed != 0 || c.NotFoundPct != 0 {
			t.Errorf("%s: %d get-transactions (latency %v), %d failed, %.1f%% not found", c.Strategy, c.GetTxs, c.GetTxLatencyMS, c.Failed, c.NotFoundPct)
		}
		if len(c.Phases) != 2 || c.Phases[0].Phase != "before" || c.Phases[1].Phase != "slow-c" || c.Phases[1].FromS != 2 {
			t.Errorf("%s: phases %+v", c.Strategy, c.Phases)
		}
		if len(c.Events) != 2 {
			t.Errorf("%s: %d events recorded", c.Strategy, len(c.Events))
		}
	}
	tables := map[string]bool{}
	for _, tb := range Tables(s, r) {
		tables[tb.Name] = len(tb.Rows) > 0
	}
	if !tables["causal-phases"] || !tables["causal-timeline"] {
		t.Errorf("tables %v: want causal-phases and causal-timeline with rows", tables)
	}
}

// TestCausalCacheHitWindow checks that the caches' hit ratio is the
// measured window's: the same world (warmup changes only what is
// recorded) measured after a warmup has a higher hit ratio than measured
// from its cold start, whose first half misses more than its second, its
// first second misses more than its last, and the causal table sets the paper's ratio beside Karma's, "-" beside a
// strategy without caches.
func TestCausalCacheHitWindow(t *testing.T) {
	run := func(warmup string) CausalRun {
		yaml := strings.Replace(causalWorld3, "keys: 2000", "keys: 300", 1)
		yaml = strings.Replace(yaml, "duration: 1s, warmup: 200ms", "duration: 3s, warmup: "+warmup, 1) +
			"strategies: [karma, cops-ideal]\noutputs: [causal, causal-timeline]\npaper: {values: [{metric: cache_hit_pct, strategy: karma, value: 69}]}\n"
		s := parse(t, yaml)
		r := runSim(t, s)
		tb := Tables(s, r)[0]
		col := slices.Index(tb.Header, "cache hit %")
		for _, row := range tb.Rows {
			hit, paper := row[col], row[col+1]
			if want := map[string]string{"karma": "69", "cops-ideal": ""}[row[0]]; paper != want || (row[0] == "cops-ideal") != (hit == "-") {
				t.Errorf("warmup %s, %s: cache hit %q, paper %q; want the paper's %q, and - without a cache", warmup, row[0], hit, paper, want)
			}
		}
		return r.Causal[0]
	}
	cold, warm := run("0s"), run("1s")
	if cold.CacheHitPct == nil || warm.CacheHitPct == nil {
		t.Fatalf("karma: cache hit %v cold, %v warm; want both", cold.CacheHitPct, warm.CacheHitPct)
	}
	if *warm.CacheHitPct <= *cold.CacheHitPct {
		t.Errorf("karma: cache hit %.1f%% after a 1 s warmup, %.1f%% over the whole run; want the warm window higher", *warm.CacheHitPct, *cold.CacheHitPct)
	}
	if h := cold.CacheHitHalvesPct; len(h) != 2 || h[0] >= h[1] || len(warm.CacheHitHalvesPct) != 2 {
		t.Errorf("karma: cache hit by half %v from the cold start, %v after the warmup; want both, the cold start's first half lower", h, warm.CacheHitHalvesPct)
	}
	first, last := warm.Timeline[0].CacheHitPct, warm.Timeline[len(warm.Timeline)-1].CacheHitPct
	if first == nil || last == nil || *first >= *last {
		t.Errorf("karma: cache hit %v in the first second, %v in the last; want it to rise as the caches fill", first, last)
	}
}

// TestCacheCountSince checks what a cache counted between two readings,
// a restart in between included.
func TestCacheCountSince(t *testing.T) {
	from := cacheReading{"a/cache": {hits: 10, misses: 30}, "b/cache": {hits: 5, misses: 5}}
	to := cacheReading{"a/cache": {hits: 40, misses: 40}, "b/cache": {hits: 2, misses: 1}, "c/cache": {hits: 3, misses: 1}}
	for _, tc := range []struct {
		site string
		want cacheCount
	}{
		{"a", cacheCount{30, 10}},
		{"b", cacheCount{2, 1}}, // restarted: counts from zero
		{"c", cacheCount{3, 1}}, // not running at the first reading
		{"", cacheCount{35, 12}},
	} {
		if got := between(from, to, tc.site); got != tc.want {
			t.Errorf("site %q: %+v, want %+v", tc.site, got, tc.want)
		}
	}
	if p := (cacheCount{}).hitPct(); p != nil {
		t.Errorf("no reads: hit ratio %v, want none", *p)
	}
	if p := (cacheCount{3, 1}).hitPct(); p == nil || *p != 75 {
		t.Errorf("3 hits, 1 miss: hit ratio %v, want 75", p)
	}
}

// TestWarmCaches runs Karma with and without warm caches: reading the
// 600 most popular of 2,000 zipfian keys at each client site before the
// run raises the measured hit ratio, and the run's own writes are still
// the ones the stability probe counts (its clients are then the sites'
// second client nodes, which the probe must see too).
func TestWarmCaches(t *testing.T) {
	cold := causalWorld3 + "strategies: [karma]\noutputs: [causal]\n"
	warm := strings.Replace(cold, "no_load: true", "no_load: true, warm_keys: 600", 1)
	hit := func(yaml string) (float64, int64) {
		r := runSim(t, parse(t, yaml))
		if len(r.Causal) != 1 || r.Causal[0].CacheHitPct == nil || r.Causal[0].Stability == nil {
			t.Fatalf("causal runs %+v: want one, with a hit ratio and a time to stability", r.Causal)
		}
		var acked int64
		for _, st := range r.Causal[0].Stability.Sites {
			acked += st.Acked
		}
		return *r.Causal[0].CacheHitPct, acked
	}
	coldHit, coldAcked := hit(cold)
	warmHit, warmAcked := hit(warm)
	if warmHit < coldHit+10 {
		t.Errorf("hit ratio %.1f%% warm, %.1f%% cold: want warming to add at least 10 points (seed %d)", warmHit, coldHit, testSeed)
	}
	if coldAcked == 0 || warmAcked < coldAcked/2 {
		t.Errorf("writes the stability probe counted: %d warm, %d cold; want the warm run's counted too (seed %d)", warmAcked, coldAcked, testSeed)
	}
}

func TestFailedAt(t *testing.T) {
	rec := newCausalRecord()
	for _, node := range []string{"b/s1", "a/s2", "b/s1", "", "a/s2", "b/s1"} {
		rec.add(&driver.Op{Kind: driver.Get, Node: node, Err: errors.New("no answer")}, "a")
	}
	rec.add(&driver.Op{Kind: driver.Get, Node: "a/s1", Found: true}, "a")
	st := rec.stats("a", 0, 0)
	if st.Failed != 6 || st.FailedAt["b/s1"] != 3 || st.FailedAt["a/s2"] != 2 || st.FailedAt["unknown"] != 1 || len(st.FailedAt) != 3 {
		t.Fatalf("failed %d at %v, want 6 at b/s1 3, a/s2 2, unknown 1", st.Failed, st.FailedAt)
	}
	if got, want := failedAtCell(st.FailedAt), "b/s1 3, a/s2 2, unknown 1"; got != want {
		t.Errorf("failed at %q, want %q", got, want)
	}
	if got := failedAtCell(nil); got != "-" {
		t.Errorf("none failed: %q, want -", got)
	}
}
