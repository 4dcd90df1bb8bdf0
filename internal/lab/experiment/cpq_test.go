package experiment

import (
	"fmt"
	"testing"
	"time"

	"github.com/cosla/cosla/internal/core/clientcore"
)

// TestLevelStrategies checks the names of CPQ's strategies, and beyond
// them of any read and write levels, numbers among them, with or without
// read repair.
func TestLevelStrategies(t *testing.T) {
	for _, tc := range []struct {
		name        string
		read, write clientcore.Choice
		delay       string
	}{
		{"one-one", clientcore.Fixed(clientcore.One), clientcore.Fixed(clientcore.One), "0s"},
		{"quo-one", clientcore.Fixed(clientcore.Quorum), clientcore.Fixed(clientcore.One), "0s"},
		{"3-3", clientcore.Fixed(3), clientcore.Fixed(3), "0s"},
		{"all-one", clientcore.Fixed(clientcore.All), clientcore.Fixed(clientcore.One), "0s"},
		{"quorum-2", clientcore.Fixed(clientcore.Quorum), clientcore.Fixed(2), "0s"},
		{"cpq(0.3)", clientcore.Mix(0.3, clientcore.One, clientcore.Quorum), clientcore.Mix(0.3, clientcore.One, clientcore.Quorum), "0s"},
		{"ad(20ms)", clientcore.Fixed(clientcore.One), clientcore.Fixed(clientcore.One), "20ms"},
	} {
		v, err := parseStrategyVariant(&Scenario{}, tc.name, timing{})
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if v.policy.Read != tc.read || v.policy.Write != tc.write || v.policy.Delay.String() != tc.delay || v.strategy != clientcore.Random {
			t.Errorf("%s: %+v with strategy %s, want read %v, write %v, delay %s at random replicas", tc.name, v.policy, v.strategy, tc.read, tc.write, tc.delay)
		}
	}
	if v, err := parseStrategyVariant(&Scenario{}, "cpq-tune(5ms, 0.01)", timing{}); err != nil || v.policy.Tune != (clientcore.Tune{Latency: 5e6, Stale: 0.01}) {
		t.Errorf("cpq-tune(5ms, 0.01): %+v, %v", v.policy, err)
	}
	if v, err := parseStrategyVariant(&Scenario{}, "3-2+norepair", timing{}); err != nil || v.policy.ReadRepair != clientcore.RepairOff || v.policy.Read != clientcore.Fixed(3) {
		t.Errorf("3-2+norepair: %+v, %v", v.policy, err)
	}
	for _, bad := range []string{"one-x", "quo-0", "2-+norepair", "one-quo+repair", "cpq(2)", "cpq(x)", "ad(-5ms)", "ad(soon)", "cpq-tune(5ms)", "cpq-tune(0s, 0.1)", "quo(1)"} {
		if _, err := parseStrategyVariant(&Scenario{}, bad, timing{}); err == nil {
			t.Errorf("%s parsed", bad)
		}
	}
}

// TestLevelsStaleness runs CPQ's fixed levels on a busy LAN in the
// simulator: reads of one replica after writes to one return stale
// values now and then (a push's jittered trip outlasting a client's
// round trip), reads and writes at QUORUM never do and cost more write
// latency; and the same seed gives the same table.
func TestLevelsStaleness(t *testing.T) {
	yaml := `
topology_inline:
  name: lan
  local_rtt: 400us
  local_jitter: 100us
  sites:
    - {name: lan, replicas: [n1, n2, n3, n4, n5, n6], clients: [c1]}
table: {replicas: 3, tablets: 6, partition: hash, push: true, pull_interval: 1s}
slas: [{name: eventual, sla: "eventual unbounded 1"}]
workload: {keys: 200, distribution: latest, put_fraction: 0.2, value_size: 128, rate: 20000, duration: 1100ms, warmup: 100ms}
clients: {lan: 256}
strategies: [one-one]
sweep: {param: strategy, values: [one-one, quo-quo]}
outputs: [levels]
`
	r := runSim(t, parse(t, yaml))
	if len(r.Runs) != 2 || r.Runs[0].Staleness == nil || r.Runs[1].Staleness == nil {
		t.Fatalf("runs %+v, want one-one and quo-quo with staleness", r.Runs)
	}
	one, quo := r.Runs[0], r.Runs[1]
	if one.Staleness.Positive == 0 || quo.Staleness.Positive != 0 {
		t.Errorf("stale values: one-one %d of %d, quo-quo %d of %d; want some, then none",
			one.Staleness.Positive, one.Staleness.Values, quo.Staleness.Positive, quo.Staleness.Values)
	}
	_, _, oneWrite := opStats(t, one, "put")
	_, _, quoWrite := opStats(t, quo, "put")
	if quoWrite <= oneWrite {
		t.Errorf("write p95 %.3f ms at QUORUM, %.3f ms at ONE: a quorum should cost more", quoWrite, oneWrite)
	}
	again := runSim(t, parse(t, yaml))
	if again.Runs[0].Staleness.Positive != one.Staleness.Positive || again.Runs[1].Ops[0] != quo.Ops[0] {
		t.Errorf("the same seed gave another result")
	}
}

// TestTunerScenarioTargets checks that cpq-tune without arguments aims at
// the scenario's targets: targets in the simulator, cluster.targets on a
// cluster, where the windows output judges by them too.
func TestTunerScenarioTargets(t *testing.T) {
	s := parse(t, `
slas: [{name: eventual, sla: "eventual unbounded 1"}]
clients: [us]
strategies: [cpq-tune, "cpq(0.5)"]
workload: {keys: 100, duration: 10s}
targets: {read_p95: 200ms, stale: 0.05}
cluster: {targets: {read_p95: 300ms, stale: 0.1, window: 2s}}
outputs: [windows]
`)
	for _, tc := range []struct {
		cluster bool
		want    clientcore.Tune
		window  time.Duration
	}{
		{false, clientcore.Tune{Latency: 200 * time.Millisecond, Stale: 0.05}, time.Second},
		{true, clientcore.Tune{Latency: 300 * time.Millisecond, Stale: 0.1}, 2 * time.Second},
	} {
		units, err := planUnits(s, testSeed, timing{cluster: tc.cluster, scale: 1})
		if err != nil {
			t.Fatal(err)
		}
		var runs []*run
		for _, u := range units {
			runs = append(runs, u.runs...)
		}
		if len(runs) != 2 {
			t.Fatalf("cluster %v: %d runs, want 2", tc.cluster, len(runs))
		}
		if got := runs[0].variant.policy.Tune; got != tc.want {
			t.Errorf("cluster %v: cpq-tune aims at %v, want %v", tc.cluster, got, tc.want)
		}
		if got := runs[1].variant.policy.Tune; got != (clientcore.Tune{}) {
			t.Errorf("cluster %v: cpq(0.5) tuned to %v", tc.cluster, got)
		}
		for _, u := range units {
			var judge *cpqPart
			for _, p := range u.parts {
				if c, ok := p.(*cpqPart); ok {
					judge = c
				}
			}
			if judge == nil || judge.targets.ReadP95 != tc.want.Latency || judge.targets.Window != tc.window {
				t.Errorf("cluster %v: unit %d judged by %+v, want %s in windows of %s", tc.cluster, u.index, judge, tc.want.Latency, tc.window)
			}
		}
	}
}

// TestCPQTuner runs the cpq-tuner preset with the tuner and two fixed p,
// one seed: the tuner reads mostly at QUORUM while the streaming makes
// ONE reads stale and mostly at ONE while the stalls make QUORUM reads
// slow, and so meets both targets in more windows than either fixed p,
// each of which misses one of the phases.
func TestCPQTuner(t *testing.T) {
	needLong(t, "3 x 18 s of a 10,000 ops/s workload")
	s, err := Resolve("cpq-tuner")
	if err != nil {
		t.Fatal(err)
	}
	s.Sweep.Values, s.Repeat, s.Outputs = []string{"cpq-tune", "cpq(0.2)", "cpq(0.8)"}, 1, []string{OutWindows}
	r, err := Run(s, RunOptions{Seed: testSeed})
	if err != nil {
		t.Fatal(err)
	}
	repro := fmt.Sprintf("cosla experiment run cpq-tuner --seed %d", testSeed)
	met := map[string]int{}
	for _, run := range r.Runs {
		w := run.Windows
		if w == nil || w.Count != 17 {
			t.Fatalf("%s: windows %+v, want 17 (%s)", run.Strategy, w, repro)
		}
		met[run.Strategy] = w.MetBoth
		if run.Strategy != "cpq-tune" {
			continue
		}
		// Windows 3-7 are the streaming (ONE reads stale), 10-14 the
		// stalls (QUORUM reads slow); the first of each is the tuner's
		// to learn in.
		for i, e := range w.Each {
			switch {
			case i >= 4 && i <= 7 && e.QuorumFraction < 0.6:
				t.Errorf("streaming window %d: %.2f of reads at QUORUM, want at least 0.6 (%s)", i, e.QuorumFraction, repro)
			case i >= 11 && i <= 14 && e.QuorumFraction > 0.35:
				t.Errorf("stall window %d: %.2f of reads at QUORUM, want at most 0.35 (%s)", i, e.QuorumFraction, repro)
			}
		}
	}
	if met["cpq-tune"] <= max(met["cpq(0.2)"], met["cpq(0.8)"]) {
		t.Errorf("windows meeting both targets: tuner %d, cpq(0.2) %d, cpq(0.8) %d of 17; want the tuner ahead (%s)",
			met["cpq-tune"], met["cpq(0.2)"], met["cpq(0.8)"], repro)
	}
}
