package dcon

import (
	"math"
	"testing"
	"time"
)

func near(got, want, tolerance float64) bool { return math.Abs(got-want) <= tolerance }

func TestFitLine(t *testing.T) {
	var f Fit
	for i := range 20 {
		x := 1 + i%10
		f.Add(time.Duration(i)*time.Millisecond, x, time.Duration(100+10*x))
		if _, warm := f.Model(); warm != (i+1 >= WarmSamples) {
			t.Fatalf("after %d samples warm = %t", i+1, warm)
		}
	}
	m, _ := f.Model()
	if !near(m.A, 100, 1e-6) || !near(m.B, 10, 1e-6) {
		t.Fatalf("fit of y = 100 + 10x: %+v", m)
	}
}

// TestFitRecent: a step that slowed down a minute ago is modelled at its
// new cost, the old samples weighing 2^-6 of the new ones.
func TestFitRecent(t *testing.T) {
	var f Fit
	for i := range 100 {
		f.Add(time.Duration(i)*10*time.Millisecond, 1+i%4, time.Duration(1000+100*(1+i%4)))
	}
	for i := range 20 {
		f.Add(61*time.Second+time.Duration(i)*time.Millisecond, 1+i%4, time.Duration(5000+100*(1+i%4)))
	}
	m, _ := f.Model()
	// 100 old samples at weight 2^-6 against 20 new: the fixed part is
	// (100*1000/64 + 20*5000) / (100/64 + 20) = 4710, a little more as
	// the older of the old samples weigh less still.
	if !near(m.A, 4710, 15) || !near(m.B, 100, 1) {
		t.Fatalf("after the slowdown: %+v; want A about 4710, B 100", m)
	}
}

func TestFitDegenerate(t *testing.T) {
	var f Fit
	for i := range 10 {
		f.Add(time.Duration(i), 1, 200)
	}
	if m, _ := f.Model(); !near(m.A, 200, 1e-9) || m.B != 0 {
		t.Fatalf("one size only: %+v; want A 200, B 0", m)
	}
	// Larger batches measured faster: no negative slope.
	var g Fit
	for i := range 10 {
		g.Add(time.Duration(i), 1+i, time.Duration(1000-50*i))
	}
	if m, _ := g.Model(); m.B != 0 || m.A <= 0 {
		t.Fatalf("decreasing costs: %+v; want B 0 and a positive A", m)
	}
	// A slope that once was identified is kept while sizes stop varying.
	var h Fit
	for i := range 10 {
		h.Add(time.Duration(i), 1+i%2, time.Duration(100+50*(1+i%2)))
	}
	for i := range 200 {
		h.Add(time.Minute+time.Duration(i)*time.Second, 4, 300)
	}
	if m, _ := h.Model(); !near(m.B, 50, 1e-3) || !near(m.A, 100, 1) {
		t.Fatalf("after sizes stopped varying: %+v; want the slope 50 kept and A 100", m)
	}
}

func TestMost(t *testing.T) {
	l := Linear{A: 100, B: 10}
	for _, tc := range []struct {
		budget      time.Duration
		limit, want int
	}{
		{150, 100, 5},
		{150, 3, 3},
		{109, 100, 0},
		{110, 100, 1},
		{50, 100, 0},
		{-1, 100, 0},
		{1000, 0, 0},
	} {
		if got := l.Most(tc.budget, tc.limit); got != tc.want {
			t.Errorf("%+v.Most(%d, %d) = %d; want %d", l, tc.budget, tc.limit, got, tc.want)
		}
	}
	if got := (Linear{A: 100}).Most(100, 7); got != 7 {
		t.Errorf("a fixed cost that fits takes the limit: %d", got)
	}
	if got := (Linear{A: 100, B: 10}).Plus(Linear{A: 1, B: 2}); got != (Linear{A: 101, B: 12}) {
		t.Errorf("Plus: %+v", got)
	}
}
