package chaos

import (
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cosla/cosla/internal/core/config"
	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/replica"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/lab/check"
	"github.com/cosla/cosla/internal/lab/measure"
	"github.com/cosla/cosla/internal/runtime/cluster"
	"github.com/cosla/cosla/internal/runtime/server"
	"github.com/cosla/cosla/sla"
)

func TestDefaultFailoverHoldOutlastsAFailover(t *testing.T) {
	o := config.NodeOptions{}.EnsureDefaults()
	// The least a failover takes with the leader alive: the lease lapses
	// at the leader (length and margin), then Collect.
	if least, got := o.Lease.Length+o.Lease.Margin+o.Collect, defaultFailoverHold(); got <= least || got != 8650*time.Millisecond {
		t.Errorf("defaultFailoverHold() = %s; want more than %s (a lease, its margin and Collect), 8.65s with the defaults", got, least)
	}
	if got := (Options{}).EnsureDefaults().FailoverHold; got != defaultFailoverHold() {
		t.Errorf("Options.FailoverHold defaults to %s, want %s", got, defaultFailoverHold())
	}
}

// catchingUp marks s's tablet 0 of table as catching up.
func catchingUp(s cluster.SiteStatus) cluster.SiteStatus {
	s.Serve.Nodes[0].Metrics.Tablets[0].CatchingUp = true
	return s
}

// siteStatus is a site whose node takes tablet 0 of table as described.
func siteStatus(site string, primary, leased bool, epoch uint64) cluster.SiteStatus {
	tb := replica.TabletStatus{Table: table, Ref: wire.TabletRef{Tablet: 0}, Primary: primary, Leased: leased, Epoch: epoch}
	other := replica.TabletStatus{Table: "other", Ref: wire.TabletRef{Tablet: 0}, Primary: true, Leased: true, Epoch: 9}
	n := server.NodeStatus{ID: wire.NodeID(site + "/r1")}
	n.Metrics.Tablets = []replica.TabletStatus{tb, other}
	return cluster.SiteStatus{Name: site, Up: true, Serve: &server.Status{Nodes: []server.NodeStatus{n}}}
}

func TestPrimaries(t *testing.T) {
	down := cluster.SiteStatus{Name: "england", Error: "connection refused"}
	for _, tc := range []struct {
		name        string
		sites       []cluster.SiteStatus
		want        map[int32]wire.NodeID
		wantSettled bool
	}{
		{"settled", []cluster.SiteStatus{siteStatus("england", true, true, 1), siteStatus("us", false, false, 1)},
			map[int32]wire.NodeID{0: "england/r1"}, true},
		{"the old primary cut off, a new one leased", []cluster.SiteStatus{siteStatus("england", true, false, 1), siteStatus("us", true, true, 2)},
			map[int32]wire.NodeID{0: "us/r1"}, false},
		{"two leased: the newer epoch's", []cluster.SiteStatus{siteStatus("england", true, true, 1), siteStatus("us", true, true, 2)},
			map[int32]wire.NodeID{0: "us/r1"}, false},
		{"the old primary down, a new one leased", []cluster.SiteStatus{down, siteStatus("us", true, true, 2)},
			map[int32]wire.NodeID{0: "us/r1"}, false},
		{"no lease yet", []cluster.SiteStatus{siteStatus("england", false, false, 1), siteStatus("us", true, false, 2)},
			map[int32]wire.NodeID{}, false},
		{"a secondary catching up", []cluster.SiteStatus{siteStatus("england", true, true, 2), catchingUp(siteStatus("us", false, false, 2))},
			map[int32]wire.NodeID{0: "england/r1"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, settled := primaries(cluster.Status{Sites: tc.sites}, table, 1)
			if !reflect.DeepEqual(got, tc.want) || settled != tc.wantSettled {
				t.Errorf("primaries = %v, settled %t; want %v, %t", got, settled, tc.want, tc.wantSettled)
			}
		})
	}
	if _, settled := primaries(cluster.Status{Sites: []cluster.SiteStatus{siteStatus("england", true, true, 1)}}, table, 2); settled {
		t.Errorf("a table of 2 tablets with a primary for tablet 0 only is settled")
	}
}

func sec(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// get is a Get of key called at call seconds that met a subSLA or not.
func get(key string, call float64, met bool) check.Op {
	return check.Op{Kind: check.Get, Key: key, Call: sec(call), Return: sec(call + 0.1), OK: met}
}

func TestFailoverWindows(t *testing.T) {
	events := []Event{
		{Kind: Failover, Method: "kill", From: "england/r1", To: "us/r1", StartS: 10},
		{Kind: Kill, Site: "us", StartS: 25},
		{Kind: Failover, Method: "partition", From: "us/r1", To: "india/r1", StartS: 30},
		{Kind: Failover, Method: "pause", From: "india/r1", StartS: 40}, // no move
	}
	acks := []ack{
		{"us/r1", sec(5)},        // before the fault
		{"england/r1", sec(12)},  // the old primary
		{"us/r1", sec(21)},       // later than the first
		{"us/r1", sec(19.5)},     // the first at the new primary
		{"england/r1", sec(35)},  // not the new primary
		{"us/r1", sec(36)},       // the old one
		{"india/r1", sec(0.5)},   // before the fault
		{"england/r1", sec(100)}, // after the third fault, which did not move
	}
	h := []check.Op{
		get("k1", 9, true),    // before the window
		get("k1", 11, true),   // in it
		get("k2", 15, false),  // in it, failed
		get("k3", 19.5, true), // at its end
		get("k1", 20, false),  // after it
		get("q7", 12, false),  // a strong reader's, not an SLA client's
		get("k1", 31, false),  // in the second failover, unmeasured
		{Kind: check.Put, Key: "k1", Call: sec(12), OK: true},
	}
	got := failoverWindows(events, acks, h)
	want := []FailoverWindow{
		{Method: "kill", From: "england/r1", To: "us/r1", StartS: 10, FailoverS: 9.5, SLAGets: 3, SLAMet: 2},
		{Method: "partition", From: "us/r1", To: "india/r1", StartS: 30, FailoverS: -1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("failoverWindows:\n got %+v\nwant %+v", got, want)
	}

	f := &FailoverReport{Windows: append(want, FailoverWindow{FailoverS: 3, SLAGets: 4, SLAMet: 4}, FailoverWindow{FailoverS: 12, SLAGets: 10, SLAMet: 1})}
	f.times()
	if f.Unmeasured != 1 || f.TimeP50S != 9.5 || f.TimeP99S != 12 || f.TimeMaxS != 12 {
		t.Errorf("times: unmeasured %d, p50 %v, p99 %v, max %v; want 1, 9.5, 12, 12", f.Unmeasured, f.TimeP50S, f.TimeP99S, f.TimeMaxS)
	}
	if f.SLAGets != 17 || f.SLAMet != 7 || f.Share != 7.0/17 || f.ShareMin != 0.1 || f.ShareMedian != 2.0/3 {
		t.Errorf("SLA Gets %d, met %d, share %v, min %v, median %v; want 17, 7, 7/17, 0.1, 2/3", f.SLAGets, f.SLAMet, f.Share, f.ShareMin, f.ShareMedian)
	}
}

func ts(wall int64) hlc.Timestamp { return hlc.Timestamp{WallNanos: wall} }

// put is an acknowledged Put (or not) of value to key at write level w
// of 3 replicas, with version ts.
func put(key, value string, w int, at int64, ok bool) check.Op {
	op := check.Op{Kind: check.Put, Session: "s", Key: key, Value: value, Level: w, Replicas: 3, OK: ok, Call: sec(float64(at)), Return: sec(float64(at) + 0.1)}
	if ok {
		op.TS = ts(at)
	}
	return op
}

func TestWritesLostPerLevel(t *testing.T) {
	h := []check.Op{
		put("d1", "v1", 1, 10, true),  // ONE, rolled back
		put("d2", "v2", 1, 11, true),  // ONE, held
		put("d3", "v3", 1, 12, false), // ONE, not acknowledged, rolled back
		put("q1", "v4", 2, 13, true),  // QUORUM, held
		put("q2", "v5", 2, 14, true),  // QUORUM, held under a newer version
		put("q2", "v6", 2, 15, true),
		put("d4", "v7", 1, 16, true), // ONE, held
		put("k5", "v8", 1, 17, true), // ONE, rolled back, and its key written again
		put("k5", "v9", 1, 18, true),
	}
	rolled := markLost(h, []server.RolledBackVersion{
		{Table: table, Key: "d1", Value: []byte("v1"), TS: ts(10)},
		{Table: table, Key: "d3", Value: []byte("v3 padding"), TS: ts(12)},
		{Table: table, Key: "k5", Value: []byte("v8"), TS: ts(17)},
	})
	if !h[0].Lost || !h[2].Lost || h[1].Lost || h[3].Lost {
		t.Fatalf("markLost marked %v %v %v %v; want d1 and d3 only", h[0].Lost, h[1].Lost, h[2].Lost, h[3].Lost)
	}
	final := map[string]hlc.Timestamp{"d1": {}, "d2": ts(11), "d3": {}, "q1": ts(13), "q2": ts(15), "d4": ts(16), "k5": ts(18)}
	f := writeChecks(h, final, rolled, 3)
	f.Linearizability.Verdict = measure.VerdictLinearizable
	if want := map[string]int{"one": 5, "quorum": 3}; !reflect.DeepEqual(f.Acked, want) {
		t.Errorf("acked %v, want %v", f.Acked, want)
	}
	if want := map[string]int{"one": 2}; !reflect.DeepEqual(f.Lost, want) || !reflect.DeepEqual(f.RolledBackAcked, want) {
		t.Errorf("lost %v, rolled back acked %v; want %v for both", f.Lost, f.RolledBackAcked, want)
	}
	if f.RolledBack != 3 || f.RolledBackUnacked != 1 || f.Durable != 0 || f.Rollback != 0 || !f.ok() {
		t.Errorf("rolled back %d (%d unacknowledged), violations durable %d rollback %d; want 3 (1), 0, 0", f.RolledBack, f.RolledBackUnacked, f.Durable, f.Rollback)
	}

	// A QUORUM write the primary does not hold at the end, in no
	// rollback file, and a ONE write likewise: both lost, both
	// violations.
	final["q1"], final["d4"] = ts(0), ts(0)
	f = writeChecks(h, final, rolled, 3)
	f.Linearizability.Verdict = measure.VerdictLinearizable
	if f.Lost["quorum"] != 1 || f.Lost["one"] != 3 || f.RolledBackAcked["one"] != 2 || f.Durable != 1 || f.Rollback != 2 || len(f.Examples) != 3 {
		t.Errorf("with q1 and d4 gone: lost %v, rolled back %v, violations durable %d rollback %d, examples %q; want quorum 1 and one 3 lost, one 2 rolled back, 1 and 2 violations",
			f.Lost, f.RolledBackAcked, f.Durable, f.Rollback, f.Examples)
	}
	if f.ok() {
		t.Errorf("a lost QUORUM write, yet the failover checks are ok")
	}
}

// strongGet is a strong read of key returning value ("" for none).
func strongGet(key, value string, call, ret float64) check.Op {
	return check.Op{Kind: check.Get, Session: "r", Key: key, Value: value, Found: value != "", OK: true, Call: sec(call), Return: sec(ret),
		Met: sla.SubSLA{Consistency: sla.Consistency{Kind: sla.Strong}}}
}

func TestStrongHistory(t *testing.T) {
	lost := put("q2", "v2", 2, 3, false)
	lost.Lost = true
	eventual := strongGet("q1", "", 5, 6)
	eventual.Met.Consistency.Kind = sla.Eventual
	h := []check.Op{
		put("q1", "v1", 2, 1, true),
		lost,
		strongGet("q1", "v1", 2, 2.5),
		strongGet("q2", "v2", 4, 4.5), // read the rolled-back write
		eventual,                      // not a strong read
		strongGet("k1", "", 5, 6),     // not a QUORUM writer's key
		put("d1", "v9", 1, 1, true),   // nor is this
		strongGet("q3", "", 7, 8),
	}
	ops, dropped := strongHistory(h)
	if len(ops) != 3 || dropped != 2 || ops[0].Kind != measure.KindWrite || ops[2].Key != "q3" || ops[2].Value != "" {
		t.Fatalf("strongHistory = %+v, %d dropped; want the Put of q1 and the reads of q1 and q3, 2 dropped", ops, dropped)
	}
	res, err := measure.CheckLinearizable(ops, measure.Config{})
	if err != nil || res.Verdict != measure.VerdictLinearizable {
		t.Errorf("linearizable history: %+v, %v", res, err)
	}
	// A strong read that misses an acknowledged QUORUM write.
	h = append(h, strongGet("q1", "", 9, 9.5))
	ops, _ = strongHistory(h)
	if res, err := measure.CheckLinearizable(ops, measure.Config{}); err != nil || res.Verdict != measure.VerdictNotLinearizable {
		t.Errorf("a stale strong read: %+v, %v; want not linearizable", res, err)
	}
}

func TestRecentMix(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	fresh := &freshMix{prefix: quorumPrefix}
	m := &recentMix{of: fresh, window: 4}
	for range 20 {
		if step, _ := m.Next(r); step.Ops[0].Key != "q1" {
			t.Fatalf("before any write: read %s, want q1", step.Ops[0].Key)
		}
	}
	for range 10 {
		fresh.Next(r)
	}
	seen := map[string]bool{}
	for range 200 {
		step, ok := m.Next(r)
		key := step.Ops[0].Key
		n, err := strconv.Atoi(strings.TrimPrefix(key, quorumPrefix))
		if !ok || err != nil || n < 8 || n > 11 {
			t.Fatalf("after q10: read %s, want q8..q11", key)
		}
		seen[key] = true
	}
	if len(seen) != 4 {
		t.Errorf("read %v, want each of q8..q11", seen)
	}
}

func TestLevelName(t *testing.T) {
	for _, tc := range []struct {
		w, n int
		want string
	}{{1, 3, "one"}, {2, 3, "quorum"}, {3, 3, "all"}, {3, 5, "quorum"}, {2, 5, "w=2"}, {1, 1, "one"}} {
		if got := levelName(tc.w, tc.n); got != tc.want {
			t.Errorf("levelName(%d, %d) = %q, want %q", tc.w, tc.n, got, tc.want)
		}
	}
}

func TestWriteTextShowsTheFailovers(t *testing.T) {
	f := &FailoverReport{ByMethod: map[string]int{"kill": 1, "pause": 1},
		Windows: []FailoverWindow{{Method: "kill", From: "england/r1", To: "us/r1", StartS: 3, FailoverS: 9.5, SLAGets: 4, SLAMet: 3}},
		Acked:   map[string]int{"one": 10, "quorum": 5}, Lost: map[string]int{"one": 2}, RolledBackAcked: map[string]int{"one": 2},
		RolledBack: 3, RolledBackUnacked: 1, Epochs: epochsUnchecked,
		Linearizability: measure.LinearizabilityResult{Verdict: measure.VerdictLinearizable, Ops: 40, Registers: 6}}
	f.times()
	rep := &Report{Failovers: 1, Failover: f, Converged: true, TargetsReached: true}
	var b strings.Builder
	rep.WriteText(&b, 0)
	for _, want := range []string{
		"1 failovers (kill 1, pause 1)",
		"p50 9.5s, p99 9.5s, max 9.5s over 1 failovers",
		"one 10 acknowledged, 2 lost (2 rolled back); quorum 5 acknowledged, 0 lost (0 rolled back)",
		"3 versions in the rollback files, 1 of them never acknowledged",
		"linearizable (Porcupine): 40 ops over 6 keys",
		"3 of 4 met a subSLA (75.0%)",
		"england/r1 -> us/r1 at     3.0s:   9.5s",
		"result:     OK",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report text lacks %q:\n%s", want, b.String())
		}
	}
	f.Linearizability.Verdict = measure.VerdictNotLinearizable
	if rep.OK() {
		t.Errorf("a history that is not linearizable, yet the report is OK")
	}
}
