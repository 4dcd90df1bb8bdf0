package experiment

import (
	"testing"

	"github.com/cosla/cosla/internal/clientcore"
)

// TestLevelStrategies checks the names of CPQ's strategies.
func TestLevelStrategies(t *testing.T) {
	for _, tc := range []struct {
		name        string
		read, write clientcore.Choice
		delay       string
	}{
		{"one-one", clientcore.Fixed(clientcore.One), clientcore.Fixed(clientcore.One), "0s"},
		{"quo-one", clientcore.Fixed(clientcore.Quorum), clientcore.Fixed(clientcore.One), "0s"},
		{"cpq(0.3)", clientcore.Mix(0.3, clientcore.One, clientcore.Quorum), clientcore.Mix(0.3, clientcore.One, clientcore.Quorum), "0s"},
		{"ad(20ms)", clientcore.Fixed(clientcore.One), clientcore.Fixed(clientcore.One), "20ms"},
	} {
		v, err := parseStrategyVariant(tc.name)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if v.policy.Read != tc.read || v.policy.Write != tc.write || v.policy.Delay.String() != tc.delay || v.strategy != clientcore.Random {
			t.Errorf("%s: %+v with strategy %s, want read %v, write %v, delay %s at random replicas", tc.name, v.policy, v.strategy, tc.read, tc.write, tc.delay)
		}
	}
	if v, err := parseStrategyVariant("cpq-tune(5ms, 0.01)"); err != nil || v.policy.Tune != (clientcore.Tune{Latency: 5e6, Stale: 0.01}) {
		t.Errorf("cpq-tune(5ms, 0.01): %+v, %v", v.policy, err)
	}
	for _, bad := range []string{"one-all", "cpq(2)", "cpq(x)", "ad(-5ms)", "ad(soon)", "cpq-tune(5ms)", "cpq-tune(0s, 0.1)", "quo(1)"} {
		if _, err := parseStrategyVariant(bad); err == nil {
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
