package rtt

import (
	"testing"
	"time"
)

func TestSmoothed(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	for _, tc := range []struct {
		name    string
		s       Smoothed
		samples []time.Duration
		want    time.Duration
		set     bool
	}{
		{"empty", NewSmoothed(8), nil, 0, false},
		{"first sample sets it", NewSmoothed(8), []time.Duration{ms(100)}, ms(100), true},
		// 100 + (180-100)/8 = 110; 110 + (30-110)/8 = 100.
		{"later samples move 1/8", NewSmoothed(8), []time.Duration{ms(100), ms(180), ms(30)}, ms(100), true},
		{"seed", Seeded(4, ms(40)), nil, ms(40), true},
		// 40 + (80-40)/4 = 50.
		{"seed then a sample moves 1/4", Seeded(4, ms(40)), []time.Duration{ms(80)}, ms(50), true},
		// Integer division of nanoseconds, as the estimators it replaced:
		// 10 + (13-10)/4 = 10 (not 10.75).
		{"truncates", Seeded(4, 10), []time.Duration{13}, 10, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.s
			for _, x := range tc.samples {
				s.Add(x)
			}
			got, set := s.Value()
			if got != tc.want || set != tc.set || s.Samples() != int64(len(tc.samples)) {
				t.Errorf("Value() = %s, %v with %d samples; want %s, %v with %d", got, set, s.Samples(), tc.want, tc.set, len(tc.samples))
			}
		})
	}
}
