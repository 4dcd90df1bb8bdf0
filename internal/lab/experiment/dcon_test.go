package experiment

import (
	"bytes"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cosla/cosla/internal/core/dcon"
	"github.com/cosla/cosla/internal/core/replica"
	"github.com/cosla/cosla/internal/core/wire"
)

// twoDC is a small dConssandra world: two sites of two storage nodes,
// two replicas a tablet, one in each site, the client in the second, so
// that its nearest replica is a secondary whose primary is across the
// link; a 5 ms fsync, so that every stage takes time.
const twoDC = `
topology_inline:
  name: two
  local_rtt: 300us
  sites:
    - {name: dc1, replicas: [n1, n2]}
    - {name: dc2, replicas: [n1, n2], clients: [c1]}
  links:
    - {a: dc1, b: dc2, rtt: 1ms, bandwidth: 125000000}
table: {replicas: 2, tablets: 2, partition: hash}
slas: [{name: eventual, sla: "eventual unbounded 1"}]
strategies: [closest]
clients: {dc2: 1}
sim: {fsync: 5ms}
`

// groups is twoDC with Fig. 9's groups, small: 10 immediate writes of a
// key, a read of it at the swept bound, a reset.
const groups = twoDC + `
workload: {keys: 200, value_size: 100, load_bound: unbounded, ops: 10, group: {writes: 10, write_bound: immediate, reset: true}}
outputs: [returned, bounded]
`

// boundedOf returns a run's statistics of a bounded op label.
func boundedOf(t *testing.T, run RunResult, label string) BoundedStats {
	t.Helper()
	for _, b := range run.Bounded {
		if b.Op == label {
			return b
		}
	}
	t.Fatalf("%s %s: no bounded statistics of %s: %+v", run.Series, run.Point, label, run.Bounded)
	return BoundedStats{}
}

// TestGroupsReturned runs Fig. 9's experiment, small: a read with no time
// answers NULL while the group's last writes are staged; an unbounded one
// returns the last write, having brought the group's writes in. The
// runs report what the nodes learned, and the same seed gives the same
// result.
func TestGroupsReturned(t *testing.T) {
	s := parse(t, groups+"sweep: {param: bound, values: [immediate, unbounded]}\n")
	r := runSim(t, s)
	if len(r.Runs) != 2 {
		t.Fatalf("%d runs, want 2", len(r.Runs))
	}
	immediate, unbounded := r.Runs[0], r.Runs[1]
	for _, run := range r.Runs {
		if len(run.SweptOps) != 1 || run.SweptOps[0] != "group/read" {
			t.Errorf("%s: swept ops %v, want [group/read]", run.Point, run.SweptOps)
		}
		// Immediate: answered once received, or once ordered when the
		// receiver is the primary; never after execution.
		w := boundedOf(t, run, "group/write")
		if w.Count != 100 || w.Failed != 0 || w.Received+w.Transmitted+w.Coordinated != w.Count || w.Transmitted == 0 {
			t.Errorf("%s: immediate writes %+v: want 100, answered before execution", run.Point, w)
		}
		if len(run.Costs) == 0 || run.Costs[0].Step != "coordinate" || !(run.Costs[0].FixedMS > 5) {
			t.Errorf("%s: learned costs %+v: want a coordination above the 5 ms fsync", run.Point, run.Costs)
		}
	}
	null := boundedOf(t, immediate, "group/read")
	if null.Count != 10 || null.Null == 0 || null.Null+null.Returned != null.Count || null.Applied != 0 {
		t.Errorf("immediate reads %+v: want NULLs, nothing applied", null)
	}
	read := boundedOf(t, unbounded, "group/read")
	if read.Returned != 10 || read.Known != 10 || read.Newest != 10 || read.Applied < 10 || read.Pending != 0 {
		t.Errorf("unbounded reads %+v: want all 10 returning the last write, the writes applied", read)
	}
	tables := Tables(s, r)
	if len(tables) != 3 || tables[0].Name != "returned" || len(tables[0].Rows) != 2 || tables[0].Rows[1][2] != "10" {
		t.Fatalf("tables %+v", tables)
	}
	again := runSim(t, s)
	a, _ := MarshalResult(r)
	b, _ := MarshalResult(again)
	if !bytes.Equal(a, b) {
		t.Errorf("seed %d: results differ between two runs", testSeed)
	}
}

// TestSeries runs two series, one over a slow link: each runs apart
// under its name, and the slow link slows the consistent reads that
// pull the groups' writes across it.
func TestSeries(t *testing.T) {
	s := parse(t, twoDC+`
outputs: [returned, bounded]
workload: {keys: 200, value_size: 1000, load_bound: unbounded, ops: 10, bound: unbounded, group: {writes: 10, write_bound: immediate}}
series:
  - {name: fast}
  - {name: slow, set: {topology_inline: {links: [{a: dc1, b: dc2, rtt: 1ms, bandwidth: 125000}]}}}
`)
	r := runSim(t, s)
	if len(r.Runs) != 2 || r.Runs[0].Series != "fast" || r.Runs[1].Series != "slow" || len(r.Summaries) != 2 {
		t.Fatalf("runs %d (%s, %s), summaries %d; want fast then slow", len(r.Runs), r.Runs[0].Series, r.Runs[len(r.Runs)-1].Series, len(r.Summaries))
	}
	fast, _ := runOpStats(r.Runs[0], "group/read")
	slow, _ := runOpStats(r.Runs[1], "group/read")
	// Ten 1 KB writes take 80 ms at 1 Mb/s.
	if !(slow.LatencyMS.Mean > fast.LatencyMS.Mean+50) {
		t.Errorf("read mean %.3f ms over the slow link, %.3f ms over the fast one; want 50 ms more", slow.LatencyMS.Mean, fast.LatencyMS.Mean)
	}
	if got := runColumns(s); got[0] != "series" {
		t.Errorf("run columns %v: want series first", got)
	}
	// The series is laid over the YAML, then the scenario's changes since:
	// the cluster's model has the cluster's keys.
	if s.ClusterModel() != s {
		t.Error("ClusterModel without cluster settings changed the scenario")
	}
	s = parse(t, string(s.raw)+"cluster: {keys: 50}\n")
	series, err := seriesScenarios(s.ClusterModel())
	if err != nil || series[1].s.Workload.Keys != 50 || series[1].s.topo.Links[0].Bandwidth != 125000 || series[0].s.topo.Links[0].Bandwidth != 125000000 {
		t.Errorf("series of the cluster's model: %v; want its keys and each series' link", err)
	}
}

// TestCostsTable runs Table III's workload, small, over two mixes: the
// write and read shares of the time add up, the mix sets the writes'
// share of the requests.
func TestCostsTable(t *testing.T) {
	s := parse(t, twoDC+`
workload: {keys: 200, value_size: 100, load_bound: unbounded, put_bound: immediate, get_bound: unbounded, ops: 200}
sweep: {param: mix, values: ["9:1 uniform", "1:3 zipfian"]}
outputs: [costs]
paper: {values: [{metric: ops_per_s, point: "9:1 uniform", value: 92}]}
`)
	r := runSim(t, s)
	tb := Tables(s, r)[0]
	if tb.Name != "costs" || len(tb.Rows) != 2 {
		t.Fatalf("table %+v", tb)
	}
	col := func(name string) int {
		for i, h := range tb.Header {
			if h == name {
				return i
			}
		}
		t.Fatalf("no column %q in %v", name, tb.Header)
		return 0
	}
	for i, row := range tb.Rows {
		w, r := mustFloat(t, row[col("write cost %")]), mustFloat(t, row[col("read cost %")])
		if math.Abs(w+r-100) > 0.02 || !(w > 0 && r > 0) {
			t.Errorf("row %d: write %v%% + read %v%%: want both, adding to 100", i, w, r)
		}
	}
	if tb.Rows[0][col("ops/s")+1] != "92" {
		t.Errorf("row %v: want the paper's 92 ops/s beside ours", tb.Rows[0])
	}
	var puts, gets int64
	for _, o := range r.Runs[1].Ops {
		switch o.Op {
		case "put":
			puts = o.Count
		case "get":
			gets = o.Count
		}
	}
	if puts+gets != 200 || puts < 25 || puts > 75 {
		t.Errorf("1:3: %d puts and %d gets, want about 50 and 150", puts, gets)
	}
}

// TestPlanner runs bounded writes and reads and replays every decision:
// each is counted once among the plans and timed.
func TestPlanner(t *testing.T) {
	s := parse(t, twoDC+`
workload: {keys: 200, value_size: 100, load_bound: unbounded, put_fraction: 0.5, distribution: uniform, bound: 20ms, ops: 200}
outputs: [planner]
`)
	r := runSim(t, s)
	p := r.Runs[0].Planner
	if p == nil || p.Replayed == 0 || int64(p.Replayed) > p.Made {
		t.Fatalf("planner %+v: want decisions replayed", p)
	}
	if n := p.Coordinated + p.Spread + p.Received + p.Acquire + p.Null + p.ReadOnly; n != p.Replayed {
		t.Errorf("plans add up to %d, %d replayed", n, p.Replayed)
	}
	if !(p.P50NS > 0) || p.MaxNS < p.P99NS || len(p.CDF) == 0 || p.CDF[len(p.CDF)-1].Q != 1 {
		t.Errorf("times %+v", p)
	}
	for i := 1; i < len(p.CDF); i++ {
		if p.CDF[i].V < p.CDF[i-1].V {
			t.Errorf("CDF falls at %d: %+v", i, p.CDF)
		}
	}
	// The replay counts as Decide chose.
	d := []replica.Decision{
		{Budget: 10 * time.Millisecond, Work: dcon.Work{Write: true, Queue: 1}, Costs: dcon.Costs{Coordinate: dcon.Linear{A: 5e6}}},
		{Budget: time.Millisecond, Work: dcon.Work{Write: true, Queue: 1}, Costs: dcon.Costs{Coordinate: dcon.Linear{A: 5e6}}},
		{Budget: time.Millisecond, Work: dcon.Work{KeyStaged: 1}, Costs: dcon.Costs{Coordinate: dcon.Linear{A: 5e6}}},
	}
	if got := replayPlanner(3, d); got.Spread != 1 || got.Received != 1 || got.Null != 1 || got.Replayed != 3 {
		t.Errorf("replay of spread, received, null: %+v", got)
	}
}

// TestClusterTopology checks that a cluster emulates a link's bandwidth
// as delay: a message of one value each way.
func TestClusterTopology(t *testing.T) {
	s := parse(t, groups)
	got := clusterTopology(s).Links[0]
	// 2 x (100 + 100 bytes) at 125,000,000 bytes/s: 3.2 us.
	if want := time.Millisecond + 3200*time.Nanosecond; got.RTT != want || got.Bandwidth != 0 {
		t.Errorf("link %+v, want rtt %s, no bandwidth", got, want)
	}
	if s.topo.Links[0].RTT != time.Millisecond {
		t.Errorf("the scenario's own topology changed: %+v", s.topo.Links[0])
	}
	other := parse(t, strings.Replace(groups, "replicas: 2, tablets: 2", "replicas: 2, tablets: 4", 1))
	if err := sameCluster(s, other); !errors.Is(err, ErrInvalid) {
		t.Errorf("a series with another table on the same cluster: %v", err)
	}
}

// TestDconValidate checks that the bounded workloads' errors name the
// field.
func TestDconValidate(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, field string
	}{
		{"zero bound", "workload: {bound: 0ms}\n", "workload.bound"},
		{"bound", "workload: {put_bound: soon}\n", "workload.put_bound"},
		{"load bound", "workload: {load_bound: -1s}\n", "workload.load_bound"},
		{"group bound", "workload: {group: {writes: 1, read_bound: 0s}}\n", "workload.group.read_bound"},
		{"group writes", "workload: {group: {writes: -1}}\n", "workload.group.writes"},
		{"group rate", "workload: {rate: 10, group: {writes: 1}}\n", "workload.group"},
		{"rtw ycsb", "workload: {ycsb: a, rtw: true}\n", "workload.rtw"},
		{"sweep bound", "sweep: {param: bound, values: [0ms]}\n", "sweep.values[0]"},
		{"sweep mix", "sweep: {param: mix, values: [\"9-1 uniform\"]}\n", "sweep.values[0]"},
		{"sweep mix distribution", "sweep: {param: mix, values: [\"9:1 gaussian\"]}\n", "sweep.values[0]"},
		{"series name", "series: [{name: a}, {name: a}]\n", "series[1].name"},
		{"series field", "series: [{name: a, set: {workload: {colour: red}}}]\n", "series[0] (a)"},
		{"series value", "series: [{name: a, set: {workload: {bound: never}}}]\n", "series[0] (a)"},
		{"series of series", "series: [{name: a, set: {series: []}}]\n", "series[0] (a)"},
		{"paper metric", "paper: {values: [{metric: returned_pct, value: 1}]}\n", "paper.values[0].metric"},
		{"fsync jitter", "cluster: {sim: {fsync_jitter: -1ms}}\n", "cluster.sim.fsync_jitter"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(twoDC+tc.yaml), "test")
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.field) {
				t.Errorf("error %v does not name %s", err, tc.field)
			}
		})
	}
	if _, err := parseBound("immediate"); err != nil {
		t.Error(err)
	}
	if b, err := parseBound("20ms"); err != nil || b != wire.Bound(20*time.Millisecond) {
		t.Errorf("20ms: %v %v", b, err)
	}
	// A series needs the YAML it is laid over.
	s := parse(t, groups+"series: [{name: a}]\n")
	s.raw = nil
	if _, err := seriesScenarios(s); err == nil {
		t.Error("series of a scenario not read from YAML: no error")
	}
}

func mustFloat(t *testing.T, v string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		t.Fatalf("%q is not a number", v)
	}
	return f
}
