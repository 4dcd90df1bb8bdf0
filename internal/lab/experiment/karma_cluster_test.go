package experiment

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/cosla/cosla/internal/core/clientcore"
	"github.com/cosla/cosla/internal/runtime/cluster"
	"github.com/cosla/cosla/internal/runtime/cluster/clustertest"
	"github.com/cosla/cosla/sla"
)

// TestMain lets the test binary stand in for `cosla serve --config FILE`,
// the command a cluster runs once per site (clustertest).
func TestMain(m *testing.M) { clustertest.Main(m) }

// causalCluster3 is causalWorld3 scaled down for a cluster: one storage
// node per site, half the sessions, Karma and a baseline.
const causalCluster3 = causalWorld3 + `strategies: [karma, cops-pr]
cluster: {replicas_per_site: 1, sessions_scale: 0.5}
paper: {values: [{metric: throughput_gain_pct, strategy: karma, baseline: cops-pr, value: 43}]}
`

// TestCausalClusterUnits: on a cluster a causal scenario runs each
// strategy alone, each unit on a table of its own, every
// client site at once with its sessions scaled, through client cores
// whose sessions a causal table accepts; the cluster's topology has the
// rings and the storage nodes kept; the simulator's model of it has
// every strategy.
func TestCausalClusterUnits(t *testing.T) {
	s := parse(t, causalCluster3)
	units, err := planUnits(s, testSeed, timing{cluster: true, scale: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(units) != 2 || len(units[0].runs) != 3 || len(units[1].runs) != 3 {
		t.Fatalf("%d units, want 2 (one per strategy) of 3 runs (one per client site)", len(units))
	}
	info := cluster.Info{Table: "usertable"}
	for i, want := range []struct{ strategy, table string }{{"karma", "usertable-0-karma"}, {"cops-pr", "usertable-1-cops-pr"}} {
		if got := units[i].table(info); got != want.table {
			t.Errorf("unit %d runs on table %s, want %s", i, got, want.table)
		}
		for _, r := range units[i].runs {
			g := r.group
			if r.r.Strategy != want.strategy || g.Sessions != 2 || r.r.Sessions != 2 {
				t.Errorf("%s: %s with %d sessions (recorded %d); want %s with 2 (4 times 0.5)", r.r.Client, r.r.Strategy, g.Sessions, r.r.Sessions, want.strategy)
			}
			if !slices.Equal(g.Cosla.SLA, causalSessionSLA) || g.Cosla.Strategy != clientcore.Closest || g.Cosla.SLA[0].Latency != sla.Unbounded {
				t.Errorf("%s: session SLA %v, strategy %v", r.r.Client, g.Cosla.SLA, g.Cosla.Strategy)
			}
		}
	}
	topo := clusterTopology(s)
	if len(topo.Rings) != 2 || len(topo.Sites[0].Replicas) != 1 || len(s.topo.Sites[0].Replicas) != 2 {
		t.Errorf("cluster topology: rings %v, %d storage nodes at a (scenario's %d); want 2 rings, 1 node", topo.Rings, len(topo.Sites[0].Replicas), len(s.topo.Sites[0].Replicas))
	}
	if err := topo.Validate(); err != nil {
		t.Error(err)
	}
	m := s.ClusterModel()
	mu, err := planUnits(m, testSeed, timing{scale: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(mu) != 2 || mu[0].runs[0].group.Sessions != 2 || len(mu[0].s.topo.Sites[0].Replicas) != 1 {
		t.Errorf("model: %d units (want 2 strategies), %d sessions a site, %d storage nodes at a", len(mu), mu[0].runs[0].group.Sessions, len(mu[0].s.topo.Sites[0].Replicas))
	}
	s = parse(t, strings.Replace(causalCluster3, "no_load: true", "no_load: true, machines: 3", 1))
	if m := s.ClusterModel(); m.Causal.Machines != 0 || s.Causal.Machines != 3 {
		t.Errorf("machines: model %d, scenario %d; want 0 (a machine per node, as on the cluster) and 3 kept", m.Causal.Machines, s.Causal.Machines)
	}
	// Units of a non-causal scenario keep their sessions.
	if _, err := Parse([]byte("slas: [{sla: password-checking}]\ncluster: {replicas_per_site: 1}\n"), "test"); err == nil || !strings.Contains(err.Error(), "cluster.replicas_per_site") {
		t.Errorf("replicas_per_site without a causal table: %v", err)
	}
}

// TestCausalCluster runs a small causal scenario on a local cluster of
// this test binary's processes: keys loaded through the rings, Gets,
// Puts and get-transactions from every site at once, a site's links
// slowed on the way, under Karma and then COPS-PR (each on a table of
// its own).
// The reads say where they were served from (Karma: caches at every
// site; COPS-PR: none, and never a restriction), the loaded keys are
// found, and the comparison table sets the two beside the paper's
// number. No assertion depends on the machine's speed.
func TestCausalCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-site local cluster")
	}
	yaml := strings.NewReplacer("no_load: true", "load_sessions: 4, warm_keys: 50, get_tx_fraction: 0.1, tx_keys: 3",
		"keys: 2000", "keys: 200", "duration: 1s, warmup: 200ms", "duration: 4s, warmup: 1s").Replace(causalCluster3) +
		`schedule:
  - {label: slow-c, at: 2s, action: add-rtt, from: c, to: a, rtt: 300ms}
outputs: [causal, saturation, causal-sites, causal-timeline]
`
	s := parse(t, yaml)
	var lines []string
	r, err := RunCluster(context.Background(), s, ClusterRunOptions{Dir: t.TempDir(), Seed: testSeed,
		Progress: func(l string) { lines = append(lines, l) }})
	if err != nil {
		t.Fatalf("RunCluster: %v\n%s", err, strings.Join(lines, "\n"))
	}
	log := strings.Join(lines, "\n")
	if r.Mode != "cluster" || len(r.Causal) != 2 || len(r.Runs) != 6 {
		t.Fatalf("mode %s, %d causal runs, %d site runs; want cluster, 2 (karma, cops-pr), 6", r.Mode, len(r.Causal), len(r.Runs))
	}
	for i, c := range r.Causal {
		if c.Strategy != s.Strategies[i] || c.Sessions != 6 || len(c.Sites) != 3 || c.Gets == 0 || c.Puts == 0 || c.GetTxs == 0 || c.ThroughputOpsPerS <= 0 {
			t.Errorf("%s: %d sessions, %d sites, %d gets, %d puts, %d get-transactions, %.0f ops/s", c.Strategy, c.Sessions, len(c.Sites), c.Gets, c.Puts, c.GetTxs, c.ThroughputOpsPerS)
		}
		if accesses := c.Ops + c.Failed; c.Failed*20 > accesses {
			t.Errorf("%s: %d of %d accesses failed", c.Strategy, c.Failed, accesses)
		}
		if sum := c.BufferPct + c.CachePct + c.RingLocalPct + c.RingRemotePct; sum < 99.9 || sum > 100.1 {
			t.Errorf("%s: sources sum to %.2f%%", c.Strategy, sum)
		}
		if c.LocalPct <= 0 || c.NotFoundPct != 0 {
			t.Errorf("%s: local %.1f%%, not found %.1f%%: want local reads, every loaded key found", c.Strategy, c.LocalPct, c.NotFoundPct)
		}
		if c.GetLatencyMS.Count != c.Gets || c.GetTxLatencyMS == nil {
			t.Errorf("%s: get latency %+v, get-transaction latency %v", c.Strategy, c.GetLatencyMS, c.GetTxLatencyMS)
		}
		if len(c.Events) != 1 || !strings.Contains(c.Events[0].Description, "c-a: rtt now 380ms") || len(c.Phases) != 2 {
			t.Errorf("%s: events %+v, phases %+v; want c-a raised to 380ms, two phases", c.Strategy, c.Events, c.Phases)
		}
	}
	if k, pr := r.Causal[0], r.Causal[1]; k.CachePct <= 0 || pr.CachePct != 0 || pr.RestrictedPct != 0 {
		t.Errorf("cache %.1f%% under karma, %.1f%% under cops-pr (restricted %.1f%%); want cache hits under karma only, no restriction under cops-pr",
			k.CachePct, pr.CachePct, pr.RestrictedPct)
	}
	// Karma's caches were warmed, and their counters read over the
	// measured window from the sites' status.
	if k, pr := r.Causal[0], r.Causal[1]; k.CacheHitPct == nil || *k.CacheHitPct <= 0 || pr.CacheHitPct != nil ||
		!strings.Contains(log, "warming the caches: 50 keys") {
		t.Errorf("cache hit ratio %v under karma, %v under cops-pr; want karma's measured, above 0, after warming 50 keys\n%s", k.CacheHitPct, pr.CacheHitPct, log)
	}
	for _, run := range r.Runs {
		if run.Causal == nil || run.Causal.Site != run.Client {
			t.Errorf("%s/%s: causal %+v", run.Client, run.Strategy, run.Causal)
		}
	}
	tables := map[string]Table{}
	for _, tb := range Tables(s, r) {
		tables[tb.Name] = tb
	}
	t.Logf("%v\n%v\n%s", tables["causal"].Header, tables["causal"].Rows, log)
	if rows := tables["causal"].Rows; len(rows) != 2 {
		t.Errorf("causal table: %d rows, want 2", len(rows))
	}
	cmp := tables["comparison"].Rows
	if len(cmp) != 1 || cmp[0][0] != "karma" || cmp[0][1] != "cops-pr" || cmp[0][len(cmp[0])-1] != "43" {
		t.Errorf("comparison rows %v: want karma vs cops-pr beside the paper's 43", cmp)
	}
	report := Markdown(s, r, Tables(s, r), nil, WriteOptions{})
	if !bytes.Contains(report, []byte("each run on a fresh table of its own")) {
		t.Errorf("report.md does not say how the cluster ran the strategies")
	}
}
