package clientcore

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/storage"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/sla"
)

var epoch = time.Unix(0, 0)

// testReplica builds a replica with the given round trips (all taken now)
// and known high timestamp (in seconds).
func testReplica(id string, primary bool, highSec int64, rtts ...time.Duration) *replicaState {
	r := &replicaState{id: wire.NodeID(id), primary: primary, rtt: newRTTStats(64), high: hlc.FromTime(highSec * int64(time.Second))}
	for _, d := range rtts {
		r.rtt.Add(epoch, d)
	}
	return r
}

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func ts(sec int64) hlc.Timestamp { return hlc.FromTime(sec * int64(time.Second)) }

var (
	shoppingCart = sla.SLA{
		{Consistency: sla.ReadMyWritesConsistency, Latency: ms(300), Utility: 1},
		{Consistency: sla.EventualConsistency, Latency: ms(300), Utility: 0.5},
	}
	passwordChecking = sla.SLA{
		{Consistency: sla.StrongConsistency, Latency: ms(150), Utility: 1},
		{Consistency: sla.EventualConsistency, Latency: ms(150), Utility: 0.5},
		{Consistency: sla.StrongConsistency, Latency: time.Second, Utility: 0.25},
	}
)

// TestSelectTarget checks SelectTarget (Pileus Fig. 8) on the situations
// section 5 describes.
func TestSelectTarget(t *testing.T) {
	for _, tc := range []struct {
		name       string
		agreement  sla.SLA
		mins       []minTS
		replicas   []*replicaState
		wantTarget int
		wantNode   string
		wantUtil   float64
	}{{
		// 5.2: a U.S. client reads read-my-writes from its local secondary
		// when it is fresh enough...
		name:      "shopping cart, local secondary fresh",
		agreement: shoppingCart,
		mins:      []minTS{{ts: ts(10)}, {}},
		replicas: []*replicaState{
			testReplica("england", true, 0, ms(147), ms(148)),
			testReplica("us", false, 20, ms(1), ms(1)),
			testReplica("india", false, 20, ms(250)),
		},
		wantTarget: 0, wantNode: "us", wantUtil: 1,
	}, {
		// ... and from the primary when it is not.
		name:      "shopping cart, local secondary stale",
		agreement: shoppingCart,
		mins:      []minTS{{ts: ts(30)}, {}},
		replicas: []*replicaState{
			testReplica("england", true, 0, ms(147), ms(148)),
			testReplica("us", false, 20, ms(1), ms(1)),
			testReplica("india", false, 20, ms(250)),
		},
		wantTarget: 0, wantNode: "england", wantUtil: 1,
	}, {
		// A node the first probes have not reached yet promises as much as
		// a measured local one, but the measured one is preferred.
		name:      "unmeasured node loses a tie",
		agreement: sla.SLA{{Consistency: sla.EventualConsistency, Latency: ms(200), Utility: 1}},
		mins:      []minTS{{}},
		replicas: []*replicaState{
			testReplica("england", true, 0),
			testReplica("us", false, 20, ms(1)),
			testReplica("india", false, 20),
		},
		wantTarget: 0, wantNode: "us", wantUtil: 1,
	}, {
		// 5.2: an India client whose neighbours cannot give read-my-writes
		// in 300 ms targets the second subSLA at the closest node.
		name:      "shopping cart, fall back to eventual",
		agreement: shoppingCart,
		mins:      []minTS{{ts: ts(30)}, {}},
		replicas: []*replicaState{
			testReplica("england", true, 0, ms(435)),
			testReplica("us", false, 20, ms(250)),
			testReplica("india", false, 20, ms(1)),
		},
		wantTarget: 1, wantNode: "india", wantUtil: 0.5,
	}, {
		// 5.3: the U.S. client goes to the primary for strong within
		// 150 ms even though a few round trips miss it.
		name:      "password, primary usually in time",
		agreement: passwordChecking,
		mins:      []minTS{{primaryOnly: true}, {}, {primaryOnly: true}},
		replicas: []*replicaState{
			testReplica("england", true, 0, ms(146), ms(147), ms(148), ms(152)),
			testReplica("us", false, 20, ms(1)),
			testReplica("india", false, 20, ms(250)),
		},
		wantTarget: 0, wantNode: "england", wantUtil: 0.75,
	}, {
		// 5.3: the China client forgoes the first two subSLAs.
		name:      "password, only the third subSLA is attainable",
		agreement: passwordChecking,
		mins:      []minTS{{primaryOnly: true}, {}, {primaryOnly: true}},
		replicas: []*replicaState{
			testReplica("england", true, 0, ms(307)),
			testReplica("us", false, 20, ms(160)),
			testReplica("india", false, 20, ms(220)),
		},
		wantTarget: 2, wantNode: "england", wantUtil: 0.25,
	}, {
		// Equal expected utility: the closest node wins (4.6.1).
		name:      "tie broken by round-trip time",
		agreement: sla.SLA{{Consistency: sla.EventualConsistency, Latency: time.Second, Utility: 1}},
		mins:      []minTS{{}},
		replicas: []*replicaState{
			testReplica("a", true, 0, ms(90)),
			testReplica("b", false, 0, ms(30)),
			testReplica("c", false, 0, ms(30)),
		},
		wantTarget: 0, wantNode: "b", wantUtil: 1,
	}, {
		// Fig. 8 adds a node whose utility for a lower subSLA equals the
		// best to the candidates, keeping the higher target.
		name: "equal utility from a lower subSLA joins the candidates",
		agreement: sla.SLA{
			{Consistency: sla.StrongConsistency, Latency: ms(100), Utility: 1},
			{Consistency: sla.EventualConsistency, Latency: ms(100), Utility: 1},
		},
		mins: []minTS{{primaryOnly: true}, {}},
		replicas: []*replicaState{
			testReplica("primary", true, 0, ms(80)),
			testReplica("near", false, 0, ms(2)),
		},
		wantTarget: 0, wantNode: "near", wantUtil: 1,
	}, {
		// Nothing attainable: every expected utility is zero; the target
		// is the first subSLA and the node the closest.
		name:      "nothing attainable",
		agreement: sla.SLA{{Consistency: sla.StrongConsistency, Latency: ms(10), Utility: 1}},
		mins:      []minTS{{primaryOnly: true}},
		replicas: []*replicaState{
			testReplica("primary", true, 0, ms(300)),
			testReplica("near", false, 0, ms(2)),
		},
		wantTarget: 0, wantNode: "near", wantUtil: 0,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			target, node, util, _ := selectTarget(tc.agreement, tc.mins, tc.replicas, 0)
			if target != tc.wantTarget || string(tc.replicas[node].id) != tc.wantNode || util != tc.wantUtil {
				t.Fatalf("selectTarget = subSLA %d at %s with expected utility %v; want subSLA %d at %s with %v",
					target+1, tc.replicas[node].id, util, tc.wantTarget+1, tc.wantNode, tc.wantUtil)
			}
		})
	}
}

// TestMetSubSLA checks the decision of which subSLA a reply met (4.6.2).
func TestMetSubSLA(t *testing.T) {
	for _, tc := range []struct {
		name      string
		agreement sla.SLA
		mins      []minTS
		rtt       time.Duration
		high      hlc.Timestamp
		primary   bool
		want      int
	}{
		// Fig. 9: aiming for eventual at a node thought stale, the reply
		// shows the node had caught up: read-my-writes was met.
		{"higher than target", shoppingCart, []minTS{{ts: ts(10)}, {}}, ms(20), ts(12), false, 0},
		{"target met", shoppingCart, []minTS{{ts: ts(10)}, {}}, ms(20), ts(8), false, 1},
		{"too slow for any", shoppingCart, []minTS{{ts: ts(10)}, {}}, ms(301), ts(12), false, -1},
		{"latency bound is inclusive", shoppingCart, []minTS{{ts: ts(10)}, {}}, ms(300), ts(12), false, 0},
		{"primary gives strong", passwordChecking, []minTS{{primaryOnly: true}, {}, {primaryOnly: true}}, ms(149), ts(0), true, 0},
		{"slow primary gives the third", passwordChecking, []minTS{{primaryOnly: true}, {}, {primaryOnly: true}}, ms(151), ts(0), true, 2},
		{"secondary never gives strong", passwordChecking, []minTS{{primaryOnly: true}, {}, {primaryOnly: true}}, ms(400), ts(99), false, -1},
		{"secondary gives eventual", passwordChecking, []minTS{{primaryOnly: true}, {}, {primaryOnly: true}}, ms(1), ts(0), false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := metSubSLA(tc.agreement, tc.mins, int64(tc.rtt), tc.high, tc.primary); got != tc.want {
				t.Fatalf("metSubSLA = %d, want %d (1-based %d)", got+1, tc.want+1, tc.want+1)
			}
		})
	}
}

// TestMetByQuorum: a quorum read whose levels intersect meets a strong
// subSLA within its round trip, ranked above what its high timestamp
// met, and no other: seed 1388's SLA ranks causal first, which a quorum
// read below the session's causal minimum does not meet.
func TestMetByQuorum(t *testing.T) {
	causalFirst, err := sla.Parse("causal 193ms 1; strong 949ms 0.9; strong 152ms 0.8")
	if err != nil {
		t.Fatal(err)
	}
	mins := []minTS{{ts: ts(9)}, {primaryOnly: true}, {primaryOnly: true}}
	for _, tc := range []struct {
		name string
		rtt  time.Duration
		met  int
		want int
	}{
		{"causal not met: the first strong", ms(53), -1, 1},
		{"causal met by the high timestamp", ms(53), 0, 0},
		{"too slow for the first strong: none", ms(950), -1, -1},
	} {
		if got := metByQuorum(causalFirst, mins, int64(tc.rtt), tc.met); got != tc.want {
			t.Errorf("%s: metByQuorum = %d, want %d (0-based)", tc.name, got, tc.want)
		}
	}
	if got := metByQuorum(passwordChecking, []minTS{{primaryOnly: true}, {}, {primaryOnly: true}}, int64(ms(10)), 1); got != 0 {
		t.Errorf("password checking: metByQuorum = %d, want 0, the strong subSLA above eventual", got)
	}
}

// TestMinReadTS checks the minimum acceptable read timestamps of 4.4.
func TestMinReadTS(t *testing.T) {
	s := &Session{putTS: map[string]hlc.Timestamp{}, readTS: map[string]hlc.Timestamp{}}
	s.recordPut("a", ts(5))
	s.recordRead("b", ts(7))
	s.recordRead("a", ts(3))
	now := 100 * int64(time.Second)
	for _, tc := range []struct {
		c    sla.Consistency
		key  string
		want hlc.Timestamp
	}{
		{sla.ReadMyWritesConsistency, "a", ts(5)},
		{sla.ReadMyWritesConsistency, "b", hlc.Timestamp{}},
		{sla.MonotonicConsistency, "a", ts(3)},
		{sla.MonotonicConsistency, "b", ts(7)},
		{sla.CausalConsistency, "z", ts(7)},
		{sla.BoundedBy(30 * time.Second), "a", ts(70)},
		{sla.EventualConsistency, "a", hlc.Timestamp{}},
	} {
		t.Run(fmt.Sprintf("%s/%s", tc.c, tc.key), func(t *testing.T) {
			if got := s.minReadTS(tc.c, tc.key, now, 0); got != tc.want {
				t.Fatalf("minReadTS = %s, want %s", got, tc.want)
			}
		})
	}
	// Clock uncertainty makes bounded staleness demand more freshness.
	if got, want := s.minReadTS(sla.BoundedBy(30*time.Second), "a", now, int64(2*time.Second)), ts(72); got != want {
		t.Fatalf("bounded with uncertainty: minReadTS = %s, want %s", got, want)
	}
}

// TestSelectTargetQuorum checks quorum candidates (DESIGN.md section 4):
// under the password-checking SLA, a client 200 ms from the primary with
// two secondaries near it reads a quorum of them for strong consistency
// in 150 ms when the table's write level makes that quorum strong, and
// falls back to what single replicas offer when it does not, or when the
// quorum is too slow too.
func TestSelectTargetQuorum(t *testing.T) {
	mins := []minTS{{primaryOnly: true}, {}, {primaryOnly: true}}
	near := func() []*replicaState {
		return []*replicaState{
			testReplica("primary", true, 0, ms(200), ms(210)),
			testReplica("near1", false, 0, ms(2), ms(3)),
			testReplica("near2", false, 0, ms(5), ms(6)),
		}
	}
	far := func() []*replicaState {
		rs := near()
		rs[2] = testReplica("far", false, 0, ms(300), ms(320))
		return rs
	}
	for _, tc := range []struct {
		name       string
		replicas   []*replicaState
		quorum     int
		wantTarget int
		wantQuorum bool
		wantNode   string
		wantUtil   float64
	}{
		{"quorum of the two near secondaries", near(), 2, 0, true, "", 1},
		{"no write level: eventual from the nearest", near(), 0, 1, false, "near1", 0.5},
		{"quorum too slow: eventual from the nearest", far(), 2, 1, false, "near1", 0.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target, node, util, useQuorum := selectTarget(passwordChecking, mins, tc.replicas, tc.quorum)
			gotNode := ""
			if node >= 0 {
				gotNode = string(tc.replicas[node].id)
			}
			if target != tc.wantTarget || useQuorum != tc.wantQuorum || gotNode != tc.wantNode || util != tc.wantUtil {
				t.Fatalf("selectTarget = subSLA %d, quorum %v, node %q, utility %v; want subSLA %d, quorum %v, node %q, utility %v",
					target, useQuorum, gotNode, util, tc.wantTarget, tc.wantQuorum, tc.wantNode, tc.wantUtil)
			}
		})
	}
	// The candidate waits for the quorum's slowest reply: near2 meets
	// 150 ms half the time, so the quorum's expected utility halves, and
	// near1's eventual subSLA (0.5) ties it. As in Fig. 8 the target stays
	// the higher subSLA, and the closer candidate, near1 alone, is read.
	rs := near()
	rs[2] = testReplica("near2", false, 0, ms(5), ms(400))
	if target, node, util, useQuorum := selectTarget(passwordChecking, mins, rs, 2); useQuorum || target != 0 || node != 1 || util != 0.5 {
		t.Errorf("half-slow quorum: subSLA %d, node %d, utility %v, quorum %v; want target 0 read at near1 alone with 0.5", target, node, util, useQuorum)
	}
}

// BenchmarkSelectTarget measures a Get's target selection with 8 replicas,
// 4 subSLAs and a warm monitor, including the minimum read timestamps:
// without quorum candidates, and with a quorum of 4 (a table whose write
// level is 5 of 8) as a candidate for the strong subSLA.
func BenchmarkSelectTarget(b *testing.B) {
	agreement := sla.SLA{
		{Consistency: sla.StrongConsistency, Latency: ms(150), Utility: 1},
		{Consistency: sla.ReadMyWritesConsistency, Latency: ms(200), Utility: 0.8},
		{Consistency: sla.BoundedBy(30 * time.Second), Latency: ms(300), Utility: 0.5},
		{Consistency: sla.EventualConsistency, Latency: time.Second, Utility: 0.1},
	}
	c := &Client{opts: Options{}.EnsureDefaults(), env: benchEnv{}}
	s := &Session{sla: agreement, putTS: map[string]hlc.Timestamp{"k": ts(50)}, readTS: map[string]hlc.Timestamp{}}
	var replicas []*replicaState
	for i := range 8 {
		r := testReplica(fmt.Sprintf("n%d", i), i == 0, int64(40+i*5))
		for j := range c.opts.RTTSamplesMax {
			r.rtt.Add(epoch, ms(10+i*40+j%17))
		}
		replicas = append(replicas, r)
	}
	for _, quorum := range []int{0, 4} {
		b.Run(fmt.Sprintf("quorum=%d", quorum), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				mins := c.minReadTimestamps(s, agreement, "k")
				selectTarget(agreement, mins, replicas, quorum)
			}
		})
	}
}

// benchEnv is a frozen environment: time stands still and nothing is sent.
type benchEnv struct{}

func (benchEnv) ID() wire.NodeID            { return "bench" }
func (benchEnv) Now() time.Time             { return epoch }
func (benchEnv) WallNanos() int64           { return 100 * int64(time.Second) }
func (benchEnv) Send(wire.NodeID, wire.Msg) {}
func (benchEnv) After(time.Duration, any)   {}
func (benchEnv) Rand() *rand.Rand           { return rand.New(rand.NewPCG(1, 1)) }
func (benchEnv) Engine() storage.Engine     { return nil }
func (benchEnv) Logger() *slog.Logger       { return slog.New(slog.DiscardHandler) }
