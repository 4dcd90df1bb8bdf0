package cosla_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/cosla/cosla"
	"github.com/cosla/cosla/sla"
)

// TestResultJSON: a Result's JSON is one flat object named by its groups'
// struct tags, with timestamps, strategy, bound and causal source in
// their text forms, durations in nanoseconds, and a group's optional
// fields left out when unset.
func TestResultJSON(t *testing.T) {
	strong, err := sla.Parse("strong 1s 1")
	if err != nil {
		t.Fatal(err)
	}
	ts := cosla.Timestamp{WallNanos: 1_500_000_000, Logical: 2}
	for _, tc := range []struct {
		name string
		r    cosla.Result
		want map[string]any
	}{
		{"quorum read", cosla.Result{Met: 0, SubSLA: strong[0], Consistency: strong[0].Consistency,
			Read:      cosla.Read{Found: true, Node: "a/r1", Primary: true, VersionTS: ts, HighTS: ts, RTT: 3 * time.Millisecond},
			Selection: cosla.Selection{Strategy: cosla.Pileus, Target: 0, ExpectedUtility: 1},
			Replicas:  cosla.Replicas{Level: 2, Replies: []cosla.ReplicaRead{{Node: "b/r1", VersionTS: ts, RTT: time.Millisecond}}, Held: 2}},
			map[string]any{"met": 0.0, "sub_sla": "strong 1s 1", "consistency": "strong", "found": true, "node": "a/r1", "primary": true,
				"version_ts": "1.500000000,2", "high_ts": "1.500000000,2", "rtt_ns": 3e6, "strategy": "pileus", "target": 0.0,
				"expected_utility": 1.0, "retried": false, "hedged": false, "level": 2.0, "held": 2.0,
				"replies": []any{map[string]any{"node": "b/r1", "primary": false, "found": false, "version_ts": "1.500000000,2", "high_ts": "0.000000000,0", "rtt_ns": 1e6}}}},
		{"bounded causal miss", cosla.Result{Met: -1,
			Selection: cosla.Selection{Strategy: cosla.Closest, Target: -1},
			Bounded:   cosla.Bounded{Bound: cosla.Immediate, Pending: 1, Null: true},
			Causal:    &cosla.CausalRead{Version: ts, Origin: "a/cc", Source: cosla.FromCache, Ring: -1}},
			map[string]any{"met": -1.0, "found": false, "node": "", "primary": false, "version_ts": "0.000000000,0", "high_ts": "0.000000000,0",
				"rtt_ns": 0.0, "strategy": "closest", "target": -1.0, "expected_utility": 0.0, "retried": false, "hedged": false, "level": 0.0,
				"bound": "immediate", "pending": 1.0, "null": true,
				"causal": map[string]any{"version": "1.500000000,2", "origin": "a/cc", "source": "cache", "ring": -1.0, "in_flight": false, "restricted": false}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			js, err := json.Marshal(tc.r)
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := json.Unmarshal(js, &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("JSON\n%s\nwant\n%v", js, tc.want)
			}
		})
	}
}
