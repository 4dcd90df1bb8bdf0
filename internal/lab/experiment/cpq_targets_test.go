package experiment

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cosla/cosla/internal/core/hlc"
)

// TestWindowsOf checks the judgement of reads window by window: a read is
// stale only if it returned a version older than a Put acknowledged
// before it began, and a window meets a target over its own reads.
func TestWindowsOf(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	ts := func(n int64) hlc.Timestamp { return hlc.Timestamp{WallNanos: n} }
	ops := []windowOp{
		{key: "k", put: true, ok: true, start: ms(0), end: ms(10), ts: ts(1)},
		{key: "k", put: true, ok: true, start: ms(100), end: ms(110), ts: ts(2)},
		// Window 0 (from 0 to 1 s): a read during the second Put may
		// return the first version; one after it may not.
		{key: "k", ok: true, start: ms(105), end: ms(106), ts: ts(1)},
		{key: "k", ok: true, start: ms(200), end: ms(201), ts: ts(1)},
		// Window 1: fresh but slow.
		{key: "k", ok: true, start: ms(1100), end: ms(1150), ts: ts(2)},
		// Window 2: fresh and fast; a failed read does not count.
		{key: "k", ok: true, start: ms(2100), end: ms(2101), ts: ts(2)},
		{key: "k", start: ms(2200), end: ms(2300)},
	}
	// The read of window 1 asked two replicas.
	ops[4].level = 2
	w := windowsOf(ops, 0, TargetsSpec{ReadP95: ms(10), Stale: 0.4, Window: time.Second})
	want := Windows{Count: 3, MetBoth: 1, MetLatency: 2, MetStale: 2, StaleFraction: 0.25, Each: []Window{
		{StartS: 0, Reads: 2, P95MS: 1, StaleFraction: 0.5, Latency: true},
		{StartS: 1, Reads: 1, P95MS: 50, QuorumFraction: 1, Fresh: true},
		{StartS: 2, Reads: 1, P95MS: 1, Latency: true, Fresh: true},
	}}
	if !reflect.DeepEqual(w, want) {
		t.Errorf("windows %+v, want %+v", w, want)
	}
}

// TestWindowsTables checks the window-by-window table and the mean over
// seeds.
func TestWindowsTables(t *testing.T) {
	s := &Scenario{Repeat: 2, Targets: &TargetsSpec{ReadP95: time.Millisecond, Stale: 0.01, Window: time.Second}}
	r := &Result{Mode: "sim", Runs: []RunResult{
		{Seed: 1, SLA: "e", Client: "a", Strategy: "cpq-tune", LevelsResult: LevelsResult{Windows: &Windows{Count: 2, MetBoth: 2, MetLatency: 2, MetStale: 2,
			Each: []Window{{Latency: true, Fresh: true, QuorumFraction: 0.25}, {Latency: true, Fresh: true, QuorumFraction: 0.75}}}}},
		{Seed: 2, SLA: "e", Client: "a", Strategy: "cpq-tune", LevelsResult: LevelsResult{Windows: &Windows{Count: 2, MetBoth: 1, MetLatency: 1, MetStale: 2,
			Each: []Window{{Latency: true, Fresh: true}, {Fresh: true}}}}},
	}}
	each := windowsEachTable(s, r)
	if got, want := strings.Join(each.Header, ","), "seed,sla,client,strategy,0s,1s"; got != want {
		t.Errorf("header %s, want %s", got, want)
	}
	if got, want := strings.Join(each.Rows[0][4:], ","), "LS 0.25,LS 0.75"; got != want {
		t.Errorf("first row %s, want %s", got, want)
	}
	if got, want := strings.Join(each.Rows[1][4:], ","), "LS 0.00,.S 0.00"; got != want {
		t.Errorf("second row %s, want %s", got, want)
	}
	mean := windowsMeanTable(s, r)
	if len(mean.Rows) != 1 {
		t.Fatalf("%d rows, want one per strategy", len(mean.Rows))
	}
	if got, want := strings.Join(mean.Rows[0][3:], ","), "2,75.0 ± 317.6,50.0,100.0,75.0,100.0"; got != want {
		t.Errorf("mean row %s, want %s", got, want)
	}
}
