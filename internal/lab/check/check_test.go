package check

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/sla"
)

// Histories below are written in milliseconds, and timestamps in whole
// seconds of the primary's clock: ts(2) is "2.000000000,0". Sessions are
// one letter; the client of session "a" is "client-a".

func ts(seconds int64) hlc.Timestamp { return hlc.Timestamp{WallNanos: seconds * int64(time.Second)} }

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// put is an acknowledged Put that got timestamp ts(t).
func put(session, key, value string, call, ret int, t int64) Op {
	return Op{Client: "client-" + session, Session: session, Kind: Put, Key: key, Value: value,
		Call: ms(call), Return: ms(ret), OK: true, TS: ts(t)}
}

// lostPut is an unacknowledged (indeterminate) Put.
func lostPut(session, key, value string, call, ret int) Op {
	return Op{Client: "client-" + session, Session: session, Kind: Put, Key: key, Value: value,
		Call: ms(call), Return: ms(ret)}
}

// get is a Get that returned value@ts(t) and reports meeting <c, unbounded>
// at rank 1.
func get(session, key, value string, call, ret int, t int64, c sla.Consistency) Op {
	return Op{Client: "client-" + session, Session: session, Kind: Get, Key: key, Value: value, Found: true,
		Call: ms(call), Return: ms(ret), OK: true, TS: ts(t),
		Met: sla.SubSLA{Consistency: c, Latency: sla.Unbounded, Utility: 1}, MetRank: 1}
}

// miss is a Get that found no version and reports meeting c.
func miss(session, key string, call, ret int, c sla.Consistency) Op {
	op := get(session, key, "", call, ret, 0, c)
	op.Found, op.TS = false, hlc.Timestamp{}
	return op
}

// pendingPut is a Put acknowledged before its primary ordered it, which
// took effect at ts(t), or at an unknown timestamp when t is 0.
func pendingPut(session, key, value string, call, ret int, t int64) Op {
	op := put(session, key, value, call, ret, t)
	op.Pending = true
	if t == 0 {
		op.TS = hlc.Timestamp{}
	}
	return op
}

// fromSession is a Get that returned its session's pending write value
// and reports meeting c.
func fromSession(session, key, value string, call, ret int, c sla.Consistency) Op {
	op := get(session, key, value, call, ret, 0, c)
	op.TS, op.FromSession = hlc.Timestamp{}, true
	return op
}

// level gives op a read or write level of l among n replicas.
func level(op Op, l, n int) Op {
	op.Level, op.Replicas = l, n
	return op
}

// held sets a Get's Held.
func held(op Op, h int) Op {
	op.Held = h
	return op
}

var (
	strong   = sla.StrongConsistency
	causal   = sla.CausalConsistency
	rmw      = sla.ReadMyWritesConsistency
	mono     = sla.MonotonicConsistency
	eventual = sla.EventualConsistency
)

type want struct {
	op   int
	rule string
}

func violationsOf(vs []Violation) []want {
	got := make([]want, len(vs))
	for i, v := range vs {
		got[i] = want{v.Op, v.Rule}
	}
	return got
}

func sortWants(ws []want) {
	slices.SortFunc(ws, func(a, b want) int {
		if c := cmp.Compare(a.op, b.op); c != 0 {
			return c
		}
		return cmp.Compare(a.rule, b.rule)
	})
}

func TestCheck(t *testing.T) {
	latencyGet := get("b", "k", "a", 100, 400, 1, strong)
	latencyGet.Met.Latency = ms(200)
	fastGet := get("b", "k", "a", 500, 650, 1, strong)
	fastGet.Met.Latency = ms(200)
	badMet := get("b", "k", "a", 100, 110, 1, sla.Consistency{Kind: sla.Bounded})
	rank0 := get("b", "k", "a", 200, 210, 1, eventual)
	rank0.MetRank = 0
	unmet := get("b", "k", "zzz", 300, 310, 9, strong)
	unmet.OK = false
	unknownKind := put("c", "k", "x", 0, 10, 9)
	unknownKind.Kind = 0
	otherClient := get("a", "k", "a", 40, 50, 1, eventual)
	otherClient.Client = "client-z"

	tests := []struct {
		name string
		h    []Op
		want []want
	}{
		{
			name: "empty history",
		},
		{
			// One session writes and reads its own writes with every
			// guarantee; another session reads the latest version. Nothing
			// is stale, so nothing is reported. The bounded(1s) Get at
			// 100ms requires only Puts that returned before -900ms: none.
			name: "clean sequential history",
			h: []Op{
				put("a", "k", "a", 0, 10, 1),                                // 0
				get("a", "k", "a", 20, 30, 1, strong),                       // 1
				put("a", "k", "b", 40, 50, 2),                               // 2
				get("a", "k", "b", 60, 70, 2, causal),                       // 3
				get("a", "k", "b", 70, 80, 2, rmw),                          // 4
				get("a", "k", "b", 80, 90, 2, mono),                         // 5
				get("a", "k", "a", 100, 110, 1, sla.BoundedBy(time.Second)), // 6
				get("a", "k", "a", 120, 130, 1, eventual),                   // 7
				get("b", "k", "b", 200, 210, 2, strong),                     // 8
				miss("b", "other", 220, 230, strong),                        // 9
				unmet,                                                       // 10: met nothing, not checked
			},
		},
		{
			// Put #1 returned at 30ms, before get #2 was called at 40ms, so
			// a strong read must see ts(2) or later; it read ts(1).
			name: "strong: stale read after a completed put",
			h: []Op{
				put("a", "k", "a", 0, 10, 1),
				put("a", "k", "b", 20, 30, 2),
				get("b", "k", "a", 40, 50, 1, strong),
			},
			want: []want{{2, RuleStrong}},
		},
		{
			// Put #1 runs 20..60ms and overlaps get #2 (40..50ms): the get
			// may miss it.
			name: "strong: concurrent put missed",
			h: []Op{
				put("a", "k", "a", 0, 10, 1),
				put("a", "k", "b", 20, 60, 2),
				get("b", "k", "a", 40, 50, 1, strong),
			},
		},
		{
			// ... or see it.
			name: "strong: concurrent put seen",
			h: []Op{
				put("a", "k", "a", 0, 10, 1),
				put("a", "k", "b", 20, 60, 2),
				get("b", "k", "b", 40, 50, 2, strong),
			},
		},
		{
			// Put #1 of another session returned at the very instant get
			// #2 was called: not strictly before, so it is concurrent.
			name: "strong: put returning at the call instant in another session",
			h: []Op{
				put("a", "k", "a", 0, 10, 1),
				put("a", "k", "b", 10, 20, 2),
				get("b", "k", "a", 20, 30, 1, strong),
			},
		},
		{
			// The same put in the Get's own session precedes it in session
			// order, so the strong Get must see it.
			name: "strong: put earlier in the session returning at the call instant",
			h: []Op{
				put("a", "k", "a", 0, 10, 1),
				put("a", "k", "b", 10, 20, 2),
				get("a", "k", "a", 20, 30, 1, strong),
			},
			want: []want{{2, RuleStrong}},
		},
		{
			// bounded(100ms) at 200ms requires every put that returned
			// before 100ms: put #1 returned at 30ms with ts(2).
			name: "bounded: put completed more than t before",
			h: []Op{
				put("a", "k", "a", 0, 10, 1),
				put("a", "k", "b", 20, 30, 2),
				get("b", "k", "a", 200, 210, 1, sla.BoundedBy(ms(100))),
			},
			want: []want{{2, RuleBounded}},
		},
		{
			// bounded(100ms) at 120ms requires puts that returned before
			// 20ms: only put #0 (10ms), which it read. Put #1 returned at
			// 30ms, within the bound.
			name: "bounded: put completed within t",
			h: []Op{
				put("a", "k", "a", 0, 10, 1),
				put("a", "k", "b", 20, 30, 2),
				get("b", "k", "a", 120, 130, 1, sla.BoundedBy(ms(100))),
			},
		},
		{
			// bounded(100ms) at 120ms reads nothing although put #0
			// returned at 10ms, before 20ms.
			name: "bounded: not found after an old put",
			h: []Op{
				put("a", "k", "a", 0, 10, 1),
				miss("b", "k", 120, 130, sla.BoundedBy(ms(100))),
			},
			want: []want{{1, RuleBounded}},
		},
		{
			// Session a wrote ts(2) and then read ts(1).
			name: "read-my-writes: own put missed",
			h: []Op{
				put("a", "k", "a", 0, 10, 1),
				put("a", "k", "b", 20, 30, 2),
				get("a", "k", "a", 40, 50, 1, rmw),
			},
			want: []want{{2, RuleReadMyWrites}},
		},
		{
			// Put #1 is session b's; session a's own newest write is ts(1).
			name: "read-my-writes: other session's put does not count",
			h: []Op{
				put("a", "k", "a", 0, 10, 1),
				put("b", "k", "b", 20, 30, 2),
				get("a", "k", "a", 40, 50, 1, rmw),
			},
		},
		{
			// Session a read ts(1) for key k, then found nothing.
			name: "read-my-writes: not found after own put",
			h: []Op{
				put("a", "k", "a", 0, 10, 1),
				miss("a", "k", 20, 30, rmw),
			},
			want: []want{{1, RuleReadMyWrites}},
		},
		{
			// Session b read ts(2), then ts(1): going back.
			name: "monotonic: going back in the session",
			h: []Op{
				put("a", "k", "a", 0, 10, 1),
				put("a", "k", "b", 20, 30, 2),
				get("b", "k", "b", 40, 50, 2, eventual),
				get("b", "k", "a", 60, 70, 1, mono),
				miss("b", "k", 80, 90, mono),
			},
			want: []want{{3, RuleMonotonic}, {4, RuleMonotonic}},
		},
		{
			// Session b read ts(2); session c reading ts(1) is unaffected.
			name: "monotonic: other session's reads do not count",
			h: []Op{
				put("a", "k", "a", 0, 10, 1),
				put("a", "k", "b", 20, 30, 2),
				get("b", "k", "b", 40, 50, 2, eventual),
				get("c", "k", "a", 60, 70, 1, mono),
			},
		},
		{
			// a puts x; b reads x, then puts y; c reads y, then finds no x.
			// put #0 < get #1 (reads-from) < put #2 (session b) < get #3
			// (reads-from) < get #4 (session c): the x put causally
			// precedes get #4, which had to return ts(1) or later.
			name: "causal: transitive chain through another session's get",
			h: []Op{
				put("A", "x", "x1", 0, 10, 1),
				get("B", "x", "x1", 20, 30, 1, causal),
				put("B", "y", "y2", 40, 50, 2),
				get("C", "y", "y2", 60, 70, 2, causal),
				miss("C", "x", 80, 90, causal),
			},
			want: []want{{4, RuleCausal}},
		},
		{
			// The same chain, and get #4 returns the x put: satisfied.
			name: "causal: transitive chain satisfied",
			h: []Op{
				put("A", "x", "x1", 0, 10, 1),
				get("B", "x", "x1", 20, 30, 1, causal),
				put("B", "y", "y2", 40, 50, 2),
				get("C", "y", "y2", 60, 70, 2, causal),
				get("C", "x", "x1", 80, 90, 1, causal),
			},
		},
		{
			// b never read x, so put #0 does not precede get #3 although it
			// completed long before: causal, unlike strong, allows it.
			name: "causal: no chain, no requirement",
			h: []Op{
				put("A", "x", "x1", 0, 10, 1),
				put("B", "y", "y2", 40, 50, 2),
				get("C", "y", "y2", 60, 70, 2, causal),
				miss("C", "x", 80, 90, causal),
			},
		},
		{
			// x1 precedes y2 in session A (rule a); c reads y2 (rule b), so
			// x1 precedes get #3 (rule c).
			name: "causal: chain through the writer's session order",
			h: []Op{
				put("A", "x", "x1", 0, 10, 1),
				put("A", "y", "y2", 20, 30, 2),
				get("C", "y", "y2", 40, 50, 2, causal),
				miss("C", "x", 60, 70, causal),
			},
			want: []want{{3, RuleCausal}},
		},
		{
			// Put #0 failed but took effect: get #1 read it at ts(1). Its
			// version then precedes get #4 through b and c.
			name: "causal: unacknowledged put revealed by a read",
			h: []Op{
				lostPut("A", "x", "x1", 0, 10),
				get("B", "x", "x1", 20, 30, 1, causal),
				put("B", "y", "y2", 40, 50, 2),
				get("C", "y", "y2", 60, 70, 2, causal),
				miss("C", "x", 80, 90, causal),
			},
			want: []want{{4, RuleCausal}},
		},
		{
			// Put #0 failed and nobody read it: its timestamp is unknown
			// and cannot be required.
			name: "causal: unacknowledged put never read",
			h: []Op{
				lostPut("A", "x", "x1", 0, 10),
				miss("A", "x", 20, 30, causal),
			},
		},
		{
			// Put #0 failed, and get #2 later shows that it took effect.
			// Session A never learned its timestamp, so get #1 is not held
			// to it (see checkCausal); only readers of x1 and their causal
			// future are.
			name: "causal: unacknowledged put not required of its own session",
			h: []Op{
				lostPut("A", "x", "x1", 0, 10),
				miss("A", "x", 20, 30, causal),
				get("B", "x", "x1", 40, 50, 1, eventual),
			},
		},
		{
			// A value nobody wrote violates even eventual consistency; not
			// finding anything never does.
			name: "eventual: value never written",
			h: []Op{
				put("a", "k", "a", 0, 10, 1),
				get("b", "k", "zzz", 20, 30, 5, eventual),
				miss("b", "k", 40, 50, eventual),
			},
			want: []want{{1, RuleEventual}},
		},
		{
			// Get #1 took 300ms against a 200ms target; get #2 took 150ms.
			name: "latency",
			h: []Op{
				put("a", "k", "a", 0, 10, 1),
				latencyGet,
				fastGet,
			},
			want: []want{{1, RuleLatency}},
		},
		{
			name: "history: duplicate put values",
			h: []Op{
				put("a", "k", "a", 0, 10, 1),
				put("b", "other", "a", 20, 30, 2),
			},
			want: []want{{1, RuleHistory}},
		},
		{
			// Put #1 was called at 20ms after put #0 returned at 10ms but
			// got the older timestamp.
			name: "history: real-time order against timestamps",
			h: []Op{
				put("a", "k", "a", 0, 10, 5),
				put("b", "k", "b", 20, 30, 3),
			},
			want: []want{{1, RuleHistory}},
		},
		{
			// Overlapping puts may be ordered either way, but not share a
			// timestamp.
			name: "history: equal timestamps",
			h: []Op{
				put("a", "k", "a", 0, 30, 3),
				put("b", "k", "b", 10, 20, 3),
			},
			want: []want{{1, RuleHistory}},
		},
		{
			// Put #1 was called at the instant put #0 of the same session
			// returned; session order still requires a later timestamp.
			name: "history: session order against timestamps",
			h: []Op{
				put("a", "k", "a", 0, 10, 2),
				put("a", "k", "b", 10, 20, 1),
			},
			want: []want{{1, RuleHistory}},
		},
		{
			name: "history: wrong timestamp for a value",
			h: []Op{
				put("a", "k", "a", 0, 10, 1),
				get("b", "k", "a", 20, 30, 7, eventual),
			},
			want: []want{{1, RuleHistory}},
		},
		{
			name: "history: get returns a value of another key",
			h: []Op{
				put("a", "k", "a", 0, 10, 1),
				get("b", "other", "a", 20, 30, 1, eventual),
			},
			want: []want{{1, RuleHistory}},
		},
		{
			// Get #0 returned at 10ms the value that put #1 started
			// writing at 20ms.
			name: "history: read from the future",
			h: []Op{
				get("b", "k", "a", 0, 10, 1, eventual),
				put("a", "k", "a", 20, 30, 1),
			},
			want: []want{{0, RuleHistory}},
		},
		{
			// Get #1 fixes the unacknowledged put's timestamp at ts(1);
			// get #2 claims ts(2) for the same version.
			name: "history: reads disagree on an unacknowledged put's timestamp",
			h: []Op{
				lostPut("a", "k", "a", 0, 10),
				get("b", "k", "a", 20, 30, 1, eventual),
				get("c", "k", "a", 20, 30, 2, eventual),
			},
			want: []want{{2, RuleHistory}},
		},
		{
			name: "history: returned before called",
			h: []Op{
				put("a", "k", "a", 10, 5, 1),
			},
			want: []want{{0, RuleHistory}},
		},
		{
			// Get #1 starts at 10ms while put #0 of its session runs to
			// 20ms; op #2 of session a names another client.
			name: "history: session overlap and client mismatch",
			h: []Op{
				put("a", "k", "a", 0, 20, 1),
				get("a", "k", "a", 10, 30, 1, eventual),
				otherClient,
			},
			want: []want{{1, RuleHistory}, {2, RuleHistory}},
		},
		{
			// Everything happens at 5ms: get #0 reads put #3, which follows
			// it through put #1 (session a) and get #2 (reads put #1): a
			// cycle, broken at the lowest get.
			name: "history: causal cycle",
			h: []Op{
				get("a", "x", "vb", 5, 5, 2, eventual),
				put("a", "y", "va", 5, 5, 1),
				get("b", "y", "va", 5, 5, 1, eventual),
				put("b", "x", "vb", 5, 5, 2),
			},
			want: []want{{0, RuleHistory}},
		},
		{
			// Put #1 was held by 2 of 3 replicas and returned at 30ms;
			// get #2 read 2 of them from 40ms: they overlap, so it must
			// see ts(2), whatever subSLA it reports (here eventual).
			name: "quorum: stale read after a completed put",
			h: []Op{
				level(put("a", "k", "a", 0, 10, 1), 1, 3),
				level(put("a", "k", "b", 20, 30, 2), 2, 3),
				level(get("b", "k", "a", 40, 50, 1, eventual), 2, 3),
			},
			want: []want{{2, RuleQuorum}},
		},
		{
			// The same, but the read of one replica need not overlap the
			// two that held put #1 (1 + 2 = 3); nor need a Get without a
			// level be checked.
			name: "quorum: levels that do not overlap",
			h: []Op{
				level(put("a", "k", "a", 0, 10, 1), 1, 3),
				level(put("a", "k", "b", 20, 30, 2), 2, 3),
				level(get("b", "k", "a", 40, 50, 1, eventual), 1, 3),
				get("b", "k", "a", 60, 70, 1, eventual),
			},
		},
		{
			// Put #1 of all three replicas binds a read of one.
			name: "quorum: a put of all binds a read of one",
			h: []Op{
				level(put("a", "k", "a", 0, 10, 1), 1, 3),
				level(put("a", "k", "b", 20, 30, 2), 3, 3),
				level(miss("b", "k", 40, 50, mono), 1, 3),
			},
			want: []want{{2, RuleQuorum}},
		},
		{
			// Put #1 missed its write level (a quorum timeout) or got no
			// reply: it is indeterminate, and a quorum read may miss it.
			// Put #2 returned at the instant get #3 was called in
			// another session: concurrent, so it may be missed too.
			name: "quorum: unacknowledged and concurrent puts",
			h: []Op{
				level(put("a", "k", "a", 0, 10, 1), 2, 3),
				level(lostPut("a", "k", "b", 20, 30), 2, 3),
				level(put("c", "x", "x1", 30, 40, 3), 2, 3),
				level(miss("b", "x", 40, 50, eventual), 2, 3),
				level(get("d", "k", "a", 40, 50, 1, eventual), 2, 3),
			},
		},
		{
			// Put #1 returned at the instant get #2 of the same session
			// was called: it precedes the get in session order.
			name: "quorum: put earlier in the session returning at the call instant",
			h: []Op{
				level(put("a", "k", "a", 0, 10, 1), 2, 3),
				level(put("a", "k", "b", 10, 20, 2), 2, 3),
				level(get("a", "k", "a", 20, 30, 1, eventual), 2, 3),
			},
			want: []want{{2, RuleQuorum}},
		},
		{
			// Put #1 (20..100ms) has reached one replica when get #2
			// reads it there; get #3, called after get #2 returned, asks
			// two others and reads the older version. A regular register
			// allows this new-old inversion; linearizability would not.
			name: "quorum: new-old inversion during a put",
			h: []Op{
				level(put("a", "k", "a", 0, 10, 1), 2, 3),
				level(put("a", "k", "b", 20, 100, 2), 2, 3),
				level(get("b", "k", "b", 40, 50, 2, eventual), 2, 3),
				level(get("c", "k", "a", 60, 70, 1, eventual), 2, 3),
			},
		},
		{
			// The same, but get #2 wrote back: it returned once two of
			// the three replicas held put #1's version, so get #3 must
			// see it. A get held by one replica binds nothing.
			name: "quorum: new-old inversion after a write-back",
			h: []Op{
				level(put("a", "k", "a", 0, 10, 1), 2, 3),
				level(put("a", "k", "b", 20, 100, 2), 2, 3),
				held(level(get("b", "k", "b", 40, 50, 2, eventual), 2, 3), 2),
				level(get("c", "k", "a", 60, 70, 1, eventual), 2, 3),
				held(level(miss("d", "x", 40, 50, eventual), 2, 3), 1),
				level(put("g", "x", "x1", 30, 100, 3), 2, 3),
				held(level(get("e", "x", "x1", 40, 50, 3, eventual), 2, 3), 1),
				level(miss("f", "x", 60, 70, eventual), 2, 3),
			},
			want: []want{{3, RuleQuorum}},
		},
		{
			// A strong quorum get is judged by rule strong as well.
			name: "quorum: a stale strong quorum read breaks both rules",
			h: []Op{
				level(put("a", "k", "a", 0, 10, 1), 2, 3),
				level(put("a", "k", "b", 20, 30, 2), 2, 3),
				level(get("b", "k", "a", 40, 50, 1, strong), 2, 3),
			},
			want: []want{{2, RuleQuorum}, {2, RuleStrong}},
		},
		{
			// A pending put is acknowledged without a timestamp; its
			// session reads it back from its own copy, and once it is
			// ordered at ts(2), from a replica.
			name: "pending: read back from the session, then from a replica",
			h: []Op{
				put("a", "k", "a", 0, 10, 1),
				pendingPut("a", "k", "b", 20, 30, 2),
				fromSession("a", "k", "b", 40, 40, rmw),
				fromSession("a", "k", "b", 50, 50, mono),
				get("a", "k", "b", 60, 70, 2, causal),
				pendingPut("a", "k", "c", 80, 90, 0), // never resolved
				fromSession("a", "k", "c", 100, 100, rmw),
			},
		},
		{
			// Pending put #1 took effect at ts(2): a later read-my-writes
			// get of the session must not return ts(1).
			name: "pending: read-my-writes after a pending put of known timestamp",
			h: []Op{
				put("a", "k", "a", 0, 10, 1),
				pendingPut("a", "k", "b", 20, 30, 2),
				get("a", "k", "a", 40, 50, 1, rmw),
			},
			want: []want{{2, RuleReadMyWrites}},
		},
		{
			// Pending put #1's timestamp is unknown: for session a it is
			// the newest version of k until a's next put to k, put #4.
			// Get #2 misses it under read-my-writes, get #3 under causal;
			// get #5 returns put #4 as it must.
			name: "pending: unknown timestamp is the session's newest write",
			h: []Op{
				put("a", "k", "a", 0, 10, 1),
				pendingPut("a", "k", "b", 20, 30, 0),
				get("a", "k", "a", 40, 50, 1, rmw),
				get("a", "k", "a", 60, 70, 1, causal),
				put("a", "k", "c", 80, 90, 3),
				get("a", "k", "c", 100, 110, 3, rmw),
				get("b", "k", "a", 120, 130, 1, rmw), // another session: not bound
			},
			want: []want{{2, RuleReadMyWrites}, {3, RuleCausal}},
		},
		{
			// After put #2, session a's newest write of k is ts(3); get #3
			// goes back to its older pending put #1, whose timestamp is
			// unknown, from its own copy.
			name: "pending: the session's own copy after a later put",
			h: []Op{
				put("a", "k", "a", 0, 10, 1),
				pendingPut("a", "k", "b", 20, 30, 0),
				put("a", "k", "c", 40, 50, 3),
				fromSession("a", "k", "b", 60, 60, rmw),
			},
			want: []want{{3, RuleReadMyWrites}},
		},
		{
			// Monotonic reads: having read pending put #1 of unknown
			// timestamp, session a must not read the older ts(1).
			name: "pending: monotonic after reading an unknown timestamp",
			h: []Op{
				put("a", "k", "a", 0, 10, 1),
				pendingPut("a", "k", "b", 20, 30, 0),
				get("a", "k", "a", 40, 50, 1, mono), // nothing read yet: fine
				fromSession("a", "k", "b", 60, 60, eventual),
				get("a", "k", "a", 70, 80, 1, mono),
			},
			want: []want{{4, RuleMonotonic}},
		},
		{
			// The session's own copy must be a pending put of the session
			// called before the get: not another session's (#2, which is
			// also older than b's own put #1), not an acknowledged one
			// (#4).
			name: "pending: from the session, but not the session's pending put",
			h: []Op{
				pendingPut("a", "k", "a", 0, 10, 1),
				put("b", "k", "b", 20, 30, 2),
				fromSession("b", "k", "a", 40, 40, rmw),
				put("b", "x", "x", 50, 60, 3),
				fromSession("b", "x", "x", 70, 70, rmw),
			},
			want: []want{{2, RuleHistory}, {2, RuleReadMyWrites}, {4, RuleHistory}},
		},
		{
			// A pending put takes effect after it returned, at a time the
			// history does not record: strong get #2 need not see it, and
			// neither need put #3, called after it returned, follow it;
			// but put #4, called after put #3 returned, must follow that.
			name: "pending: not bound in real time",
			h: []Op{
				put("a", "k", "a", 0, 10, 1),
				pendingPut("a", "k", "b", 20, 30, 5),
				get("b", "k", "a", 40, 50, 1, strong),
				put("b", "k", "c", 60, 70, 4),
				pendingPut("c", "k", "d", 80, 90, 3),
			},
			want: []want{{4, RuleHistory}},
		},
		{
			// Session a's pending put #0 was ordered after its later put
			// #1: the version order goes against session order.
			name: "pending: ordered after a later put of the session",
			h: []Op{
				pendingPut("a", "k", "a", 0, 10, 2),
				put("a", "k", "b", 20, 30, 1),
			},
			want: []want{{1, RuleHistory}},
		},
		{
			// x1, pending in session A, precedes y2 in session A; C reads
			// y2, then misses x1 (ts(1)): causal.
			name: "pending: in the causal past",
			h: []Op{
				pendingPut("A", "x", "x1", 0, 10, 1),
				put("A", "y", "y2", 20, 30, 2),
				get("C", "y", "y2", 40, 50, 2, causal),
				miss("C", "x", 60, 70, causal),
			},
			want: []want{{3, RuleCausal}},
		},
		{
			name: "history: malformed ops",
			h: []Op{
				put("a", "k", "a", 0, 10, 1),
				badMet,
				rank0,
				unknownKind,
				put("a", "k", "b", 300, 310, 0), // acknowledged without a timestamp
			},
			want: []want{{1, RuleHistory}, {2, RuleHistory}, {3, RuleHistory}, {4, RuleHistory}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { wantViolations(t, Check(tc.h), tc.want) })
	}
}

// wantViolations fails t unless vs break exactly want.
func wantViolations(t *testing.T, vs []Violation, want []want) {
	t.Helper()
	got := violationsOf(vs)
	sortWants(got)
	sortWants(want)
	if !slices.Equal(got, want) {
		var b strings.Builder
		for _, v := range vs {
			fmt.Fprintf(&b, "\n  #%d %s", v.Op, v)
		}
		t.Fatalf("got violations %v, want %v:%s", got, want, b.String())
	}
}

// rolledBack marks a Put Lost: rolled back at a failover.
func rolledBack(op Op) Op {
	op.Lost = true
	return op
}

// TestLost checks histories with Lost Puts, and the same histories with
// every Lost mark cleared: the marks alone make the difference.
func TestLost(t *testing.T) {
	tests := []struct {
		name string
		h    []Op
		// want with the Lost marks, without them.
		want, without []want
	}{
		{
			// Session b read v2 at the old primary; v2 was rolled back
			// at the failover, so v1 is the newest version again.
			name: "monotonic: a lost version read, then an older one",
			h: []Op{
				put("a", "k", "v1", 0, 10, 1),
				rolledBack(put("a", "k", "v2", 20, 30, 3)),
				get("b", "k", "v2", 40, 50, 3, mono),
				get("b", "k", "v1", 60, 70, 1, mono),
			},
			without: []want{{3, RuleMonotonic}},
		},
		{
			name: "monotonic: an unacknowledged lost version read, then an older one",
			h: []Op{
				put("a", "k", "v1", 0, 10, 1),
				rolledBack(lostPut("a", "k", "v2", 20, 30)),
				get("b", "k", "v2", 40, 50, 2, mono),
				get("b", "k", "v1", 60, 70, 1, mono),
			},
			without: []want{{3, RuleMonotonic}},
		},
		{
			// The Get that returned a lost version is held to what came
			// before it: v3 was read first.
			name: "monotonic: a lost version read after a newer one",
			h: []Op{
				put("a", "k", "v1", 0, 10, 1),
				rolledBack(put("a", "k", "v2", 20, 30, 2)),
				put("c", "k", "v3", 35, 45, 3),
				get("b", "k", "v3", 50, 60, 3, mono),
				get("b", "k", "v2", 70, 80, 2, mono),
			},
			want:    []want{{4, RuleMonotonic}},
			without: []want{{4, RuleMonotonic}},
		},
		{
			name: "strong: a lost put returned before the get",
			h: []Op{
				put("a", "k", "v1", 0, 10, 1),
				rolledBack(put("a", "k", "v2", 20, 30, 2)),
				get("b", "k", "v1", 40, 50, 1, strong),
			},
			without: []want{{2, RuleStrong}},
		},
		{
			name: "bounded: a lost put returned long before the get",
			h: []Op{
				put("a", "k", "v1", 0, 10, 1),
				rolledBack(put("a", "k", "v2", 20, 30, 2)),
				get("b", "k", "v1", 100, 110, 1, sla.BoundedBy(ms(20))),
			},
			without: []want{{2, RuleBounded}},
		},
		{
			name: "read-my-writes: the session's own lost put",
			h: []Op{
				put("a", "k", "v1", 0, 10, 1),
				rolledBack(put("a", "k", "v2", 20, 30, 2)),
				get("a", "k", "v1", 40, 50, 1, rmw),
			},
			without: []want{{2, RuleReadMyWrites}},
		},
		{
			// Session B read y2, lost: y has no version after the
			// rollback. x1, before y2 in session A, survived: B's
			// causal past holds it through y2.
			name: "causal: a lost put is not required, its causal past is",
			h: []Op{
				put("A", "x", "x1", 0, 10, 1),
				rolledBack(put("A", "y", "y2", 20, 30, 2)),
				get("B", "y", "y2", 40, 50, 2, causal),
				miss("B", "y", 60, 70, causal),
				miss("B", "x", 80, 90, causal),
			},
			want:    []want{{4, RuleCausal}},
			without: []want{{3, RuleCausal}, {4, RuleCausal}},
		},
		{
			name: "quorum: a lost put of write level 2 of 3",
			h: []Op{
				level(put("a", "k", "v1", 0, 10, 1), 2, 3),
				level(rolledBack(put("a", "k", "v2", 20, 30, 2)), 2, 3),
				level(get("b", "k", "v1", 40, 50, 1, eventual), 2, 3),
			},
			without: []want{{2, RuleQuorum}},
		},
		{
			// Get #2 wrote the lost version back to a second replica
			// before the failover; the rollback dropped it there too.
			name: "quorum: a read-repaired get of a lost version",
			h: []Op{
				level(put("a", "k", "v1", 0, 10, 1), 2, 3),
				level(rolledBack(put("a", "k", "v2", 20, 30, 2)), 1, 3),
				held(level(get("b", "k", "v2", 40, 50, 2, eventual), 2, 3), 2),
				level(get("c", "k", "v1", 60, 70, 1, eventual), 2, 3),
			},
			without: []want{{3, RuleQuorum}},
		},
		{
			// The session returns its pending put #1, the newest of k it
			// wrote, which a failover later rolled back.
			name: "read-my-writes: the session's own lost pending put from its copy",
			h: []Op{
				put("a", "k", "v1", 0, 10, 1),
				rolledBack(pendingPut("a", "k", "v2", 20, 30, 0)),
				fromSession("a", "k", "v2", 40, 40, rmw),
			},
		},
		{
			// The new primary's clock is behind the old one's.
			name: "history: a put after the rollback gets an older timestamp",
			h: []Op{
				put("a", "k", "v1", 0, 10, 1),
				rolledBack(put("a", "k", "v2", 20, 30, 5)),
				put("a", "k", "v3", 100, 110, 3),
			},
			without: []want{{2, RuleHistory}},
		},
		{
			name: "history: a lost version and a later one share a timestamp",
			h: []Op{
				put("a", "k", "v1", 0, 10, 1),
				rolledBack(put("a", "k", "v2", 20, 30, 3)),
				put("b", "k", "v3", 100, 110, 3),
			},
			without: []want{{2, RuleHistory}},
		},
		{
			name: "history: a lost put is still ordered after the puts before it",
			h: []Op{
				put("a", "k", "v1", 0, 10, 3),
				rolledBack(put("b", "k", "v2", 20, 30, 2)),
			},
			want:    []want{{1, RuleHistory}},
			without: []want{{1, RuleHistory}},
		},
		{
			name: "history: a get of a lost put returns its timestamp",
			h: []Op{
				rolledBack(put("a", "k", "v1", 0, 10, 2)),
				get("b", "k", "v1", 20, 30, 3, eventual),
			},
			want:    []want{{1, RuleHistory}},
			without: []want{{1, RuleHistory}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			unmarked := slices.Clone(tc.h)
			for i := range unmarked {
				unmarked[i].Lost = false
			}
			t.Run("with Lost", func(t *testing.T) { wantViolations(t, Check(tc.h), tc.want) })
			t.Run("without Lost", func(t *testing.T) { wantViolations(t, Check(unmarked), tc.without) })
		})
	}
}

// TestRolledBackVersion: a staged write ordered at 3, rolled back at a
// failover and forwarded again by its receiver takes effect at 5. A Get
// that returned its version at 3 returned one that no longer exists, as
// of a Lost Put: it binds no later Get. Without the mark, the version at
// 3 is one the Put was never assigned (TestRandomized seed 363).
func TestRolledBackVersion(t *testing.T) {
	h := []Op{
		put("a", "k", "v1", 0, 10, 1),
		put("a", "k", "v2", 20, 30, 5),
		get("b", "k", "v2", 40, 50, 3, mono),
		get("b", "k", "v1", 60, 70, 1, mono),
		get("c", "k", "v2", 80, 90, 4, eventual),
	}
	h[1].RolledBack = []hlc.Timestamp{ts(3)}
	wantViolations(t, Check(h), []want{{4, RuleHistory}})
	h[1].RolledBack = nil
	wantViolations(t, Check(h), []want{{2, RuleHistory}, {3, RuleMonotonic}, {4, RuleHistory}})
}

// TestRolledBackVersionCausal: a causal Get that returned the rolled-back
// version of a staged write (at 3) read that write: the same write at its
// later timestamp (5) is no version it missed. A Put of another session
// at 4 that it depends on still is (TestRandomized seed 1804).
func TestRolledBackVersionCausal(t *testing.T) {
	h := []Op{
		put("a", "k", "v1", 0, 10, 1),
		put("a", "k", "v2", 20, 30, 5),
		get("b", "k", "v2", 40, 50, 3, causal),
	}
	h[1].RolledBack = []hlc.Timestamp{ts(3)}
	wantViolations(t, Check(h), nil)
	// Session c writes k at 4, then j; b reads j, then k's version at 3.
	h = []Op{
		h[0], h[1],
		put("c", "k", "v3", 20, 25, 4),
		put("c", "j", "w1", 26, 28, 6),
		get("b", "j", "w1", 30, 31, 6, causal),
		get("b", "k", "v2", 40, 50, 3, causal),
	}
	wantViolations(t, Check(h), []want{{5, RuleCausal}})
}

func TestDetail(t *testing.T) {
	tests := []struct {
		name string
		h    []Op
		// wants are substrings of the one violation's String.
		wants []string
	}{
		{
			name: "read-my-writes",
			h: []Op{
				put("b", "k5", "v9", 0, 100, 1),
				put("a", "k5", "v11", 200, 340, 2),
				get("a", "k5", "v9", 400, 410, 1, rmw),
			},
			wants: []string{
				`read-my-writes: get #2 (client client-a, session a, key "k5", called 400ms, returned 410ms, met read-my-writes within unbounded at rank 1)`,
				`read "v9"@1.000000000,0`,
				`requires a version >= 2.000000000,0 from put #1 (client client-a, session a, key "k5", value "v11", called 200ms, returned 340ms, ts 2.000000000,0), earlier in the same session`,
			},
		},
		{
			name: "strong",
			h: []Op{
				put("a", "k", "v1", 0, 10, 1),
				miss("b", "k", 20, 30, strong),
			},
			wants: []string{"found no version", "from put #0", "which returned at 10ms, before the get was called at 20ms"},
		},
		{
			name: "causal chain",
			h: []Op{
				put("A", "x", "x1", 0, 10, 1),
				get("B", "x", "x1", 20, 30, 1, causal),
				put("B", "y", "y2", 40, 50, 2),
				get("C", "y", "y2", 60, 70, 2, causal),
				get("C", "z", "z", 70, 75, 2, eventual), // thin air, reported separately
				miss("C", "x", 80, 90, causal),
			},
			wants: []string{
				"causal: get #5",
				"from put #0",
				"which causally precedes it: put #0 (session A) -> get #1 (session B) reads put #0 -> put #2 later in session B -> get #3 (session C) reads put #2 -> get #5 later in session C",
			},
		},
		{
			name: "monotonic",
			h: []Op{
				lostPut("A", "x", "x1", 0, 10),
				get("B", "x", "x1", 20, 30, 1, causal),
				miss("B", "x", 40, 50, mono),
			},
			wants: []string{`from get #1 (client client-B, session B, key "x", called 20ms, returned 30ms, met causal within unbounded at rank 1) which read "x1"@1.000000000,0, earlier in the same session`},
		},
		{
			name: "quorum",
			h: []Op{
				level(put("a", "k", "v1", 0, 10, 1), 2, 3),
				level(miss("b", "k", 20, 30, eventual), 2, 3),
			},
			wants: []string{
				`quorum: get #1 (client client-b, session b, key "k", called 20ms, returned 30ms, met eventual within unbounded at rank 1, level 2 of 3) found no version`,
				`a read of 2 of 3 replicas requires a version >= 1.000000000,0 from put #0`,
				`ts 1.000000000,0, level 2 of 3), which 2 replicas held, which returned at 10ms, before the get was called at 20ms`,
			},
		},
		{
			name: "pending",
			h: []Op{
				put("a", "k", "v1", 0, 10, 1),
				pendingPut("a", "k", "v2", 20, 30, 0),
				get("a", "k", "v1", 40, 50, 1, rmw),
			},
			wants: []string{
				`read-my-writes: get #2 (client client-a, session a, key "k", called 40ms, returned 50ms, met read-my-writes within unbounded at rank 1) read "v1"@1.000000000,0`,
				`requires put #1 (client client-a, session a, key "k", value "v2", called 20ms, returned 30ms, pending, ts unknown), whose timestamp is unknown`,
			},
		},
		{
			name: "from the session",
			h: []Op{
				pendingPut("a", "k", "v1", 0, 10, 2),
				put("a", "k", "v2", 20, 30, 3),
				fromSession("a", "k", "v1", 40, 40, rmw),
			},
			wants: []string{
				`met read-my-writes within unbounded at rank 1, from the session) read "v1"@2.000000000,0 from its session's pending writes`,
				`requires a version >= 3.000000000,0 from put #1`,
			},
		},
		{
			name: "lost",
			h: []Op{
				put("a", "k", "v1", 0, 10, 3),
				rolledBack(put("b", "k", "v2", 20, 30, 2)),
			},
			wants: []string{`history: put #1 (client client-b, session b, key "k", value "v2", called 20ms, returned 30ms, ts 2.000000000,0, lost) was assigned a timestamp no later than that of put #0`},
		},
		{
			name: "unacknowledged writer",
			h: []Op{
				lostPut("A", "x", "x1", 0, 10),
				get("B", "x", "x1", 20, 30, 1, causal),
				put("B", "y", "y2", 40, 50, 2),
				get("C", "y", "y2", 60, 70, 2, causal),
				miss("C", "x", 80, 90, causal),
			},
			wants: []string{`from put #0 (client client-A, session A, key "x", value "x1", called 0s, returned 10ms, unacknowledged, ts 1.000000000,0 as read by get #1)`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got string
			for _, v := range Check(tc.h) {
				if v.Rule != RuleEventual {
					got += v.String()
				}
			}
			for _, w := range tc.wants {
				if !strings.Contains(got, w) {
					t.Errorf("violation %q\ndoes not contain %q", got, w)
				}
			}
		})
	}
}

func TestRuleNames(t *testing.T) {
	rules := map[sla.Kind]string{
		sla.Strong: RuleStrong, sla.Causal: RuleCausal, sla.Bounded: RuleBounded,
		sla.ReadMyWrites: RuleReadMyWrites, sla.Monotonic: RuleMonotonic, sla.Eventual: RuleEventual,
	}
	for _, k := range sla.Kinds {
		if rules[k] != k.String() {
			t.Errorf("rule for %s is %q", k, rules[k])
		}
	}
}

// randomHistory simulates a correct single-copy store: each op takes
// effect atomically when it is called, in call order, and a Put's
// timestamp is (call time, sequence number). Gets that report strong,
// causal, bounded, read-my-writes or monotonic return the latest version,
// which satisfies all of them; Gets reporting eventual may return any
// version. With probability stale, any Get may return any version instead,
// possibly breaking its guarantee. Some Puts fail (and take effect or not), some Gets meet no
// subSLA. Each of the sessions open at a time runs one op at a time. Ops
// have read and write levels among 3 replicas, drawn from a stream of
// their own so that the rest of a seed's history does not depend on them;
// a Get that reads the latest version meets rule "quorum" at any level,
// and one that returns any version but is not stale has no level.
func randomHistory(seed uint64, ops, keys, openSessions int, stale float64) []Op {
	r := rand.New(rand.NewPCG(seed, 0))
	levels := rand.New(rand.NewPCG(seed, 1))
	type session struct {
		id, client string
		busyUntil  time.Duration
		left       int
	}
	sessions := make([]*session, openSessions)
	started := 0
	newSession := func(client string) *session {
		started++
		return &session{id: fmt.Sprintf("%s#%d", client, started), client: client, left: 5 + r.IntN(30)}
	}
	for i := range sessions {
		sessions[i] = newSession(fmt.Sprintf("c%d", i))
	}
	type version struct {
		value string
		ts    hlc.Timestamp
	}
	versions := make(map[string][]version)
	guarantees := []sla.Consistency{strong, causal, rmw, mono, sla.BoundedBy(ms(50))}
	var h []Op
	var now time.Duration
	for seq := 1; len(h) < ops; seq++ {
		now += time.Duration(r.IntN(200)) * time.Microsecond
		s := sessions[r.IntN(len(sessions))]
		if s.busyUntil > now {
			continue
		}
		key := fmt.Sprintf("k%d", r.IntN(keys))
		if r.IntN(2) == 0 {
			key = fmt.Sprintf("k%d", r.IntN(10)) // hot keys
		}
		op := Op{Client: s.client, Session: s.id, Key: key, Call: now,
			Return: now + time.Duration(1+r.IntN(20))*time.Millisecond,
			Level:  1 + levels.IntN(3), Replicas: 3}
		stamp := hlc.Timestamp{WallNanos: int64(now), Logical: uint32(seq)}
		if r.IntN(2) == 0 {
			op.Kind, op.Value = Put, fmt.Sprintf("v%d", seq)
			op.OK = r.IntN(10) != 0
			if op.OK || r.IntN(2) == 0 {
				versions[key] = append(versions[key], version{op.Value, stamp})
			}
			if op.OK {
				op.TS = stamp
			}
		} else {
			op.Kind = Get
			op.OK = r.IntN(20) != 0
			vs := versions[key]
			pick := len(vs) - 1
			op.Met = sla.SubSLA{Consistency: guarantees[r.IntN(len(guarantees))], Latency: sla.Unbounded, Utility: 1}
			op.MetRank = 1
			if r.Float64() < stale {
				pick = r.IntN(len(vs)+1) - 1 // may break the guarantee
			} else if r.IntN(4) == 0 {
				pick = r.IntN(len(vs)+1) - 1
				op.Met = sla.SubSLA{Consistency: eventual, Latency: time.Second, Utility: 0.5}
				op.MetRank = 2
				op.Level = 0
			}
			if op.OK && pick >= 0 {
				op.Found, op.Value, op.TS = true, vs[pick].value, vs[pick].ts
			}
		}
		h = append(h, op)
		s.busyUntil = op.Return
		if s.left--; s.left == 0 {
			*s = *newSession(s.client)
			s.busyUntil = op.Return
		}
	}
	// Record in Return order, as a recorder appending on completion does.
	slices.SortStableFunc(h, func(a, b Op) int { return cmp.Compare(a.Return, b.Return) })
	return h
}

func TestRandomHistoriesPass(t *testing.T) {
	for seed := range uint64(20) {
		h := randomHistory(seed, 2000, 300, 30, 0)
		if vs := Check(h); len(vs) > 0 {
			t.Fatalf("seed %d: %d violations in a correct history, first: %s", seed, len(vs), vs[0])
		}
	}
}

// TestRandomPendingHistoriesPass makes a third of the acknowledged Puts
// of correct histories pending, with their timestamps known, and the Gets
// that read one of their own session's pending Puts return it from the
// session: that binds no Get more, so the histories stay correct.
func TestRandomPendingHistoriesPass(t *testing.T) {
	for seed := range uint64(10) {
		h := randomHistory(seed, 2000, 300, 30, 0)
		r := rand.New(rand.NewPCG(seed, 2))
		writer := make(map[string]int)
		for i := range h {
			if op := &h[i]; op.Kind == Put && op.OK && r.IntN(3) == 0 {
				op.Pending, op.Level = true, 0
				writer[op.Value] = i
			}
		}
		sessionGets := 0
		for i := range h {
			op := &h[i]
			w, ok := writer[op.Value]
			if op.Kind == Get && op.OK && op.Found && ok && h[w].Session == op.Session && h[w].Call < op.Call {
				op.FromSession, op.TS, op.Level = true, hlc.Timestamp{}, 0
				sessionGets++
			}
		}
		if vs := Check(h); len(vs) > 0 {
			t.Fatalf("seed %d: %d violations in a correct history, first: %s", seed, len(vs), vs[0])
		}
		if s := Summarize(h); s.PendingPuts == 0 || s.SessionGets != sessionGets || sessionGets == 0 {
			t.Fatalf("seed %d: summary counts %d pending puts and %d gets from the session, want some and %d", seed, s.PendingPuts, s.SessionGets, sessionGets)
		}
	}
}

// TestRandomStaleStrongReads makes strong Gets of correct histories find
// nothing where an acknowledged Put to the key had returned before they
// were called, or precedes them in their session, and expects each to be
// reported.
func TestRandomStaleStrongReads(t *testing.T) {
	for seed := range uint64(10) {
		h := randomHistory(seed, 2000, 300, 30, 0)
		var mutated []int
		for i, op := range h {
			if op.Kind != Get || !op.OK || op.Met.Consistency.Kind != sla.Strong || len(mutated) == 20 {
				continue
			}
			for _, p := range h {
				if p.Kind == Put && p.OK && p.Key == op.Key && (p.Return < op.Call || (p.Session == op.Session && p.Call < op.Call)) {
					h[i].Found, h[i].Value, h[i].TS = false, "", hlc.Timestamp{}
					h[i].Level = 0 // not a quorum read: rule "quorum" stays out of it
					mutated = append(mutated, i)
					break
				}
			}
		}
		if len(mutated) == 0 {
			t.Fatalf("seed %d: no strong get to make stale", seed)
		}
		var got []int
		for _, v := range Check(h) {
			if v.Rule != RuleStrong {
				t.Fatalf("seed %d: unexpected violation %s", seed, v)
			}
			got = append(got, v.Op)
		}
		if !slices.Equal(got, mutated) {
			t.Fatalf("seed %d: strong violations at %v, want %v", seed, got, mutated)
		}
	}
}

// reference computes the guarantee violations of a history without
// history violations straight from the definitions of the package
// documentation, by brute force: the oracle for Check's indexed algorithms.
// A Lost Put is never required, nor is the version of a Get that
// returned one.
func reference(h []Op) []want {
	writer := make(map[string]int) // value -> Put
	version := make(map[int]hlc.Timestamp)
	pred := make([]int, len(h)) // previous op in the session, or -1
	last := make(map[string]int)
	order := make([]int, len(h))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(h[a].Call, h[b].Call) })
	for _, i := range order {
		pred[i] = -1
		if p, ok := last[h[i].Session]; ok {
			pred[i] = p
		}
		last[h[i].Session] = i
	}
	for i, op := range h {
		if op.Kind == Put {
			writer[op.Value] = i
			if op.OK {
				version[i] = op.TS
			}
		}
	}
	for _, op := range h {
		if w, ok := writer[op.Value]; ok && op.Kind == Get && op.OK && op.Found {
			if _, known := version[w]; !known {
				version[w] = op.TS
			}
		}
	}
	returned := func(g int) hlc.Timestamp {
		if !h[g].Found {
			return hlc.Timestamp{}
		}
		return version[writer[h[g].Value]]
	}
	earlierInSession := func(a, g int) bool {
		return h[a].Session == h[g].Session && h[a].Call < h[g].Call
	}
	// causalPast returns the Puts with known timestamps that causally
	// precede g: acknowledged ones reached along any edge, unacknowledged
	// ones only as the writer of a Get reached.
	causalPast := func(g int) []int {
		seen := map[int]bool{}
		var puts []int
		queue := []int{g}
		for len(queue) > 0 {
			x := queue[0]
			queue = queue[1:]
			var from []int
			if pred[x] >= 0 {
				from = append(from, pred[x])
			}
			if h[x].Kind == Get && h[x].OK && h[x].Found {
				w := writer[h[x].Value]
				from = append(from, w)
				if !h[w].OK && !h[w].Lost {
					puts = append(puts, w)
				}
			}
			for _, y := range from {
				if !seen[y] {
					seen[y] = true
					queue = append(queue, y)
					if h[y].Kind == Put && h[y].OK && !h[y].Lost {
						puts = append(puts, y)
					}
				}
			}
		}
		return puts
	}
	var out []want
	for g, op := range h {
		if op.Kind != Get || !op.OK {
			continue
		}
		var need hlc.Timestamp
		require := func(ts hlc.Timestamp) { need = hlc.Max(need, ts) }
		c := op.Met.Consistency
		for p, o := range h {
			if o.Kind != Put || !o.OK || o.Lost || o.Key != op.Key {
				continue
			}
			switch {
			case c.Kind == sla.Strong && (o.Return < op.Call || earlierInSession(p, g)),
				c.Kind == sla.Bounded && o.Return < op.Call-c.Bound,
				c.Kind == sla.ReadMyWrites && earlierInSession(p, g):
				require(o.TS)
			}
		}
		switch c.Kind {
		case sla.Monotonic:
			for q, o := range h {
				if o.Kind == Get && o.OK && o.Key == op.Key && earlierInSession(q, g) && !(o.Found && h[writer[o.Value]].Lost) {
					require(returned(q))
				}
			}
		case sla.Causal:
			for _, p := range causalPast(g) {
				if h[p].Key == op.Key {
					require(version[p])
				}
			}
		}
		if returned(g).Less(need) {
			out = append(out, want{g, c.Kind.String()})
		}
		var quorum hlc.Timestamp
		for p, o := range h {
			if o.Kind == Put && o.OK && !o.Lost && o.Key == op.Key && op.Level > 0 && o.Level > 0 &&
				op.Level+o.Level > op.Replicas && (o.Return < op.Call || earlierInSession(p, g)) {
				quorum = hlc.Max(quorum, o.TS)
			}
		}
		if returned(g).Less(quorum) {
			out = append(out, want{g, RuleQuorum})
		}
	}
	return out
}

// TestReference compares Check with the brute-force reference on random
// histories in which many Gets return arbitrary versions.
func TestReference(t *testing.T) {
	perRule := map[string]int{}
	for seed := range uint64(30) {
		h := randomHistory(seed, 1500, 40, 12, 0.3)
		got := violationsOf(Check(h))
		want := reference(h)
		sortWants(got)
		sortWants(want)
		if !slices.Equal(got, want) {
			t.Fatalf("seed %d: Check found %v,\nreference %v", seed, got, want)
		}
		for _, w := range want {
			perRule[w.rule]++
		}
	}
	for _, rule := range []string{RuleStrong, RuleCausal, RuleBounded, RuleReadMyWrites, RuleMonotonic, RuleQuorum} {
		if perRule[rule] == 0 {
			t.Errorf("no %s violations in any history: the comparison checks nothing", rule)
		}
	}
	t.Logf("violations compared: %v", perRule)
}

// TestReferenceLost marks some Puts of the histories of TestReference
// Lost, acknowledged or not, and compares Check with the reference again:
// the marks must take exactly the requirements the Lost Puts imposed
// away, and some.
func TestReferenceLost(t *testing.T) {
	without, with := 0, 0
	for seed := range uint64(30) {
		h := randomHistory(seed, 1500, 40, 12, 0.3)
		without += len(Check(h))
		r := rand.New(rand.NewPCG(seed, 3))
		lostAcked := 0
		for i := range h {
			if h[i].Kind == Put && r.IntN(5) == 0 {
				h[i].Lost = true
				if h[i].OK {
					lostAcked++
				}
			}
		}
		if s := Summarize(h); s.LostPuts != lostAcked || lostAcked == 0 {
			t.Fatalf("seed %d: summary counts %d lost puts, want %d (and some)", seed, s.LostPuts, lostAcked)
		}
		got := violationsOf(Check(h))
		want := reference(h)
		sortWants(got)
		sortWants(want)
		if !slices.Equal(got, want) {
			t.Fatalf("seed %d: Check found %v,\nreference %v", seed, got, want)
		}
		with += len(got)
	}
	if with >= without {
		t.Errorf("%d violations with Lost Puts, %d without: the marks took no requirement away", with, without)
	}
	t.Logf("violations: %d without Lost Puts, %d with", without, with)
}

// TestLargeHistory checks that a history of the size the simulation
// produces completes and passes; BenchmarkCheck measures it.
func TestLargeHistory(t *testing.T) {
	h := randomHistory(1, 20000, 10000, 200, 0)
	if vs := Check(h); len(vs) > 0 {
		t.Fatalf("%d violations in a correct history, first: %s", len(vs), vs[0])
	}
	s := Summarize(h)
	if s.Puts+s.Gets != len(h) || s.MetGets == 0 || s.ByRank[1]+s.ByRank[2] != s.MetGets || s.QuorumGets == 0 || s.QuorumGets > s.MetGets {
		t.Fatalf("summary %+v does not add up for %d ops", s, len(h))
	}
}

func BenchmarkCheck(b *testing.B) {
	for _, size := range []struct{ ops, keys, sessions int }{
		{20000, 10000, 200},
		{50000, 10000, 200},
		{50000, 10000, 2000},
	} {
		h := randomHistory(1, size.ops, size.keys, size.sessions, 0)
		b.Run(fmt.Sprintf("ops=%d/keys=%d/sessions=%d", size.ops, size.keys, size.sessions), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Check(h)
			}
		})
	}
}
