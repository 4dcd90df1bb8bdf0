package dcon

import (
	"testing"
	"time"
)

var testCosts = Costs{
	Coordinate: Linear{A: float64(150 * time.Millisecond), B: float64(time.Millisecond)},
	Spread:     Linear{A: float64(400 * time.Millisecond)},
	Acquire:    Linear{A: float64(150 * time.Millisecond), B: float64(100 * time.Microsecond)},
}

func TestDecideWrite(t *testing.T) {
	for _, tc := range []struct {
		budget              time.Duration
		queue               int
		coordinated, spread bool
	}{
		{0, 1, false, false},
		{150 * time.Millisecond, 1, false, false},
		{151 * time.Millisecond, 1, true, false},
		{160 * time.Millisecond, 20, false, false}, // 20 writes ahead need 170 ms
		{170 * time.Millisecond, 20, true, false},
		{550 * time.Millisecond, 1, true, false},
		{551 * time.Millisecond, 1, true, true},
	} {
		p := Decide(tc.budget, &testCosts, Work{Write: true, Queue: tc.queue})
		if p.Coordinated != tc.coordinated || p.Spread != tc.spread {
			t.Errorf("budget %s queue %d: %+v, want coordinated %t spread %t", tc.budget, tc.queue, p, tc.coordinated, tc.spread)
		}
		if p.Cost > tc.budget {
			t.Errorf("budget %s queue %d: predicted %s over the budget", tc.budget, tc.queue, p.Cost)
		}
	}
}

func TestDecideRead(t *testing.T) {
	for _, tc := range []struct {
		budget                      time.Duration
		work                        Work
		coordinate, acquire, isNull bool
	}{
		{time.Second, Work{}, false, false, false},
		{0, Work{Missing: 1}, false, false, false},
		{200 * time.Millisecond, Work{Missing: 1}, false, true, false},
		{200 * time.Millisecond, Work{KeyStaged: 1}, false, false, true},
		{302 * time.Millisecond, Work{KeyStaged: 1}, true, true, false},
		{302 * time.Millisecond, Work{KeyStaged: 5}, false, false, true},
	} {
		p := Decide(tc.budget, &testCosts, tc.work)
		if p.Coordinate != tc.coordinate || p.Acquire != tc.acquire || p.Null != tc.isNull {
			t.Errorf("budget %s %+v: %+v, want coordinate %t acquire %t null %t", tc.budget, tc.work, p, tc.coordinate, tc.acquire, tc.isNull)
		}
	}
}

// BenchmarkPlan is the cost of one decision (DESIGN.md section 4: well
// under a microsecond, no allocations; dConssandra Fig. 11: 99% under
// 0.5 µs).
func BenchmarkPlan(b *testing.B) {
	works := []Work{{Write: true, Queue: 3}, {KeyStaged: 2, Missing: 1}, {Missing: 4}, {Write: true, Queue: 40}}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		Decide(time.Duration(i%400)*time.Millisecond, &testCosts, works[i%len(works)])
	}
}
