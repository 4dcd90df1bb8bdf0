package experiment

import (
	"testing"
	"time"

	"github.com/cosla/cosla/internal/hlc"
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
	w := windowsOf(ops, 0, TargetsSpec{ReadP95: ms(10), Stale: 0.4, Window: time.Second})
	want := Windows{Count: 3, MetBoth: 1, MetLatency: 2, MetStale: 2, StaleFraction: 0.25}
	if w != want {
		t.Errorf("windows %+v, want %+v", w, want)
	}
}
