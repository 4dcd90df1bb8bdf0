package experiment

import (
	"bytes"
	"errors"
	"math"
	"os"
	"regexp"
	"strings"
	"testing"
)

// lan is a scenario prefix: one site of six nodes, three replicas of six
// hash tablets, YCSB B.
const lan = `
topology_inline:
  name: lan
  local_rtt: 400us
  sites:
    - {name: lan, replicas: [n1, n2, n3, n4, n5, n6], clients: [c1]}
table: {replicas: 3, tablets: 6, partition: hash, push: true, pull_interval: 1s}
slas: [{name: eventual, sla: "eventual unbounded 1"}]
strategies: [random]
`

func parse(t *testing.T, yaml string) *Scenario {
	t.Helper()
	s, err := Parse([]byte(yaml), "test")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func runSim(t *testing.T, s *Scenario) *Result {
	t.Helper()
	r, err := Run(s, RunOptions{Seed: testSeed})
	if err != nil {
		t.Fatalf("%v (seed %d)", err, testSeed)
	}
	return r
}

// opStats returns a run's statistics of one op label.
func opStats(t *testing.T, r RunResult, op string) (count int64, throughput, p95 float64) {
	t.Helper()
	for _, o := range r.Ops {
		if o.Op == op {
			return o.Count, o.ThroughputOpsPerS, o.LatencyMS.P95
		}
	}
	t.Fatalf("run %s/%s %s has no %s statistics: %+v", r.Client, r.Strategy, r.Point, op, r.Ops)
	return 0, 0, 0
}

// TestCapacitySaturates sweeps the sessions of a LAN site in the
// simulator: throughput grows with them while the nodes have room, then
// flattens at the modelled capacity while p95 climbs; and the same seed
// gives the same results.
func TestCapacitySaturates(t *testing.T) {
	needLong(t, "three sweeps up to 256 sessions (TestPresetsScaled runs capacity-lan small)")
	yaml := lan + `
workload: {ycsb: b, keys: 2000, duration: 400ms, warmup: 100ms}
clients: {lan: 1}
sweep: {param: sessions, values: [1, 16, 256]}
cluster: {sim: {cores: 2, client: 30us}}
`
	s := parse(t, yaml)
	r := runSim(t, s)
	if len(r.Runs) != 3 {
		t.Fatalf("%d runs, want one per point", len(r.Runs))
	}
	tp := map[string]float64{}
	p95 := map[string]float64{}
	for _, run := range r.Runs {
		if run.Sessions != map[string]int{"1": 1, "16": 16, "256": 256}[run.Point] {
			t.Errorf("point %s ran %d sessions", run.Point, run.Sessions)
		}
		_, tp[run.Point], p95[run.Point] = opStats(t, run, "read")
	}
	// 16 sessions are far from capacity: nearly 16 times one session's
	// throughput. 256 sessions offer about twice what six nodes serve: far
	// less than 16 times more, and queueing shows in p95.
	if tp["16"] < 14*tp["1"] {
		t.Errorf("16 sessions read %.0f/s, one %.0f/s: want nearly 16 times", tp["16"], tp["1"])
	}
	if tp["256"] > 10*tp["16"] || tp["256"] < tp["16"] {
		t.Errorf("256 sessions read %.0f/s, 16 sessions %.0f/s: want more, but far from 16 times more", tp["256"], tp["16"])
	}
	if p95["256"] < 2*p95["1"] {
		t.Errorf("p95 %.3f ms at 256 sessions, %.3f ms at 1: want it to climb", p95["256"], p95["1"])
	}
	// The same six nodes and their clients on one machine of two cores
	// (the scenario's model of a local cluster) serve far less: each op
	// costs a core about 23 us at its node and 30 us at its client.
	one := runSim(t, s.ClusterModel())
	_, tpOne, _ := opStats(t, one.Runs[2], "read")
	if tpOne > 40_000 || tpOne < 25_000 {
		t.Errorf("one 2-core machine read %.0f/s at 256 sessions, want 25,000 to 40,000 (six machines: %.0f/s)", tpOne, tp["256"])
	}
	again := runSim(t, parse(t, yaml))
	a, _ := MarshalResult(r)
	b, _ := MarshalResult(again)
	if !bytes.Equal(a, b) {
		t.Errorf("seed %d: results differ between two runs", testSeed)
	}
}

// TestRepeatsAndOpenLoop runs an open loop at a fixed rate over three
// seeds: each repeat offers the rate, and the summary estimates the mean
// with a confidence interval.
func TestRepeatsAndOpenLoop(t *testing.T) {
	s := parse(t, lan+`
workload: {keys: 1000, put_fraction: 0.2, value_size: 128, duration: 2s, rate: 2000}
clients: {lan: 8}
repeat: 3
`)
	r := runSim(t, s)
	if len(r.Runs) != 3 || len(r.Summaries) != 1 {
		t.Fatalf("%d runs and %d summaries, want 3 and 1", len(r.Runs), len(r.Summaries))
	}
	seeds := map[uint64]bool{}
	var sum float64
	for _, run := range r.Runs {
		seeds[run.Seed] = true
		sum += run.ThroughputOpsPerS
		if math.Abs(run.ThroughputOpsPerS-2000) > 150 || run.Shed != 0 {
			t.Errorf("seed %d: %.0f ops/s offered 2,000/s, %d shed", run.Seed, run.ThroughputOpsPerS, run.Shed)
		}
	}
	if len(seeds) != 3 {
		t.Errorf("repeats ran seeds %v, want three", seeds)
	}
	sm := r.Summaries[0]
	if sm.Repeats != 3 || math.Abs(sm.Throughput.Mean-sum/3) > 1e-9 || !(sm.Throughput.CI95 > 0) {
		t.Errorf("summary %+v: want the mean of %v and a positive interval", sm.Throughput, sum/3)
	}
	for _, want := range []string{"get", "put"} {
		if !strings.Contains(string(Markdown(s, r, Tables(s, r), nil, WriteOptions{})), "| "+want+" |") {
			t.Errorf("report has no %s row", want)
		}
	}
}

// TestStaleness checks the Gamma analysis of the trace: reads from a
// secondary that pulls once a minute return stale values; reads at the
// primary never do.
func TestStaleness(t *testing.T) {
	r := runSim(t, parse(t, `
slas: [{name: eventual, sla: "eventual unbounded 1"}]
table: {primary: england, secondaries: [us], pull_interval: 1m}
clients: [us]
strategies: [closest, primary]
workload: {keys: 20, ops: 2000, think: 100ms}
outputs: [ops, staleness]
`))
	byStrategy := map[string]*Staleness{}
	for _, run := range r.Runs {
		byStrategy[run.Strategy] = run.Staleness
	}
	closest, primary := byStrategy["closest"], byStrategy["primary"]
	if closest == nil || primary == nil {
		t.Fatalf("no staleness in %+v", byStrategy)
	}
	if closest.Values == 0 || closest.PositiveFraction < 0.1 || closest.P50MS < 1000 {
		t.Errorf("reads at the U.S. secondary: %+v; want many stale values, seconds stale", closest)
	}
	if primary.Values == 0 || primary.Positive != 0 {
		t.Errorf("reads at the primary: %+v; want no stale value", primary)
	}
}

// TestRangeTablets places a table over several range tablets split at the
// workload's keys.
func TestRangeTablets(t *testing.T) {
	s := parse(t, strings.Replace(lan, "partition: hash", "partition: range", 1)+`
workload: {keys: 600, ops: 300}
`)
	l, err := s.layout()
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Tablets) != 6 || l.Tablets[1].Start == "" {
		t.Fatalf("layout %+v", l)
	}
	if r := runSim(t, s); r.Runs[0].Gets+r.Runs[0].Puts != 300 {
		t.Errorf("%d ops, want 300", r.Runs[0].Gets+r.Runs[0].Puts)
	}
}

// TestClientsForms reads the client sites as a list and as a map.
func TestClientsForms(t *testing.T) {
	s := parse(t, "slas: [{sla: password-checking}]\nclients: {india: 3, us: 1}\n")
	if got := s.Clients; len(got) != 2 || got[0] != (ClientSite{"india", 3}) || got[1] != (ClientSite{"us", 1}) {
		t.Errorf("clients %+v", got)
	}
	s = parse(t, "slas: [{sla: password-checking}]\nclients: [china, us]\n")
	if got := s.Clients; len(got) != 2 || got[0] != (ClientSite{"china", 1}) {
		t.Errorf("clients %+v", got)
	}
}

// TestNothingMeasuredSaysWhy checks that a run too short for any
// operation to complete after its warmup fails with ErrNothingMeasured,
// naming the run and its sessions, rather than a bare "no operation
// ran" (karma-fig10 at --scale 0.1 did so): a client in China, 300 ms
// from England's primary, measures for 100 ms.
func TestNothingMeasuredSaysWhy(t *testing.T) {
	s := parse(t, `
slas: [{name: strong, sla: "strong 5s 1"}]
table: {primary: england, secondaries: [us], pull_interval: 1m}
clients: [china]
strategies: [primary]
workload: {keys: 20, duration: 150ms, warmup: 50ms}
outputs: [ops]
`)
	_, err := Run(s, RunOptions{Seed: testSeed})
	if !errors.Is(err, ErrNothingMeasured) || !strings.Contains(err.Error(), "china/primary") || !strings.Contains(err.Error(), "sessions") {
		t.Fatalf("a 100 ms run of 300 ms round trips: %v, want ErrNothingMeasured naming china/primary and its sessions", err)
	}
}

// engineFiles are the engine's files (plugin.go).
var engineFiles = []string{"engine.go", "simrun.go", "cluster_run.go", "record.go", "output.go", "schedule.go",
	"sweep.go", "scenario.go", "validate.go", "result.go", "network.go", "plots.go"}

// TestEngineNamesNoPaper: the engine reaches a paper only through its
// plug-in, so the engine's files name none, not even in a comment.
func TestEngineNamesNoPaper(t *testing.T) {
	paper := regexp.MustCompile(`(?i)pileus|cpq|dcon|karma|conssandra`)
	for _, f := range engineFiles {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			if paper.MatchString(line) {
				t.Errorf("%s:%d names a paper (move it to the paper's plug-in): %s", f, i+1, strings.TrimSpace(line))
			}
		}
	}
}
