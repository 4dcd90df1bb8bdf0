package rtt

import (
	"math"
	"testing"
	"time"
)

// TestWindow checks PNodeLat and the sliding window (Pileus 4.5).
func TestWindow(t *testing.T) {
	w := NewWindow(4)
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if p := w.Within(ms(1)); p != 1 {
		t.Fatalf("unmeasured node: PNodeLat = %v, want 1", p)
	}
	for i, d := range []time.Duration{ms(10), ms(20), ms(30), ms(40)} {
		w.Add(epoch.Add(time.Duration(i)*time.Second), d)
	}
	for _, tc := range []struct {
		latency time.Duration
		want    float64
	}{{ms(5), 0}, {ms(10), 0.25}, {ms(25), 0.5}, {ms(40), 1}, {math.MaxInt64, 1}} {
		if got := w.Within(tc.latency); got != tc.want {
			t.Errorf("PNodeLat(%s) = %v, want %v", tc.latency, got, tc.want)
		}
	}
	if got, want := w.Mean(), ms(25); got != want {
		t.Errorf("mean = %s, want %s", got, want)
	}
	// A fifth sample pushes out the oldest (the cap is 4).
	w.Add(epoch.Add(4*time.Second), ms(50))
	if got := w.Within(ms(10)); got != 0 {
		t.Errorf("after the cap, PNodeLat(10ms) = %v, want 0", got)
	}
	// Samples older than the window are forgotten, but the newest stays.
	w.Expire(epoch.Add(time.Hour))
	if w.Len() != 1 || w.Mean() != ms(50) {
		t.Errorf("after expiry: %d samples, mean %s; want 1 sample of 50ms", w.Len(), w.Mean())
	}
}
