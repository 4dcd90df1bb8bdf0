package clientcore

import (
	"testing"
	"time"
)

// TestTunerAdjust checks the tuner's choice of p from the monitor's round
// trips and its estimate of how often the nearest replica is stale.
func TestTunerAdjust(t *testing.T) {
	// The nearest replica answers in 1-2 ms; a quorum of two waits for a
	// replica at 8-9 ms.
	tv := &tabletView{replicas: []*replicaState{
		testReplica("primary", true, 0, ms(8), ms(9)),
		testReplica("near", false, 0, ms(1), ms(2)),
		testReplica("far", false, 0, ms(30), ms(31)),
	}}
	warm := func(staleEvery int) *tuner {
		tn := &tuner{p: 1}
		for i := range 100 {
			tn.observe(staleEvery > 0 && i%staleEvery == 0)
		}
		return tn
	}
	for _, tc := range []struct {
		name   string
		tn     *tuner
		target Tune
		want   float64 // -1: the middle of 1 - S/s1 (s1 near 0.2) and 1; -2: 1 - S/s1
	}{
		{"warming up: quorum only", &tuner{p: 1}, Tune{Latency: ms(20), Stale: 0.1}, 1},
		{"never stale: the middle of 0..1", warm(0), Tune{Latency: ms(20), Stale: 0.01}, 0.5},
		// s1 near 0.2 and S = 0.05: p at least 1 - 0.05/0.2, about 0.75,
		// and a quorum is within 20 ms, so latency allows up to 1.
		{"stale fifth: quorum three quarters", warm(5), Tune{Latency: ms(20), Stale: 0.05}, -1},
		// A quorum is never within 5 ms, the nearest always: p95 <= 5 ms
		// allows p up to 0.05; staleness asks about 0.75 and wins.
		{"infeasible: staleness wins", warm(5), Tune{Latency: ms(5), Stale: 0.05}, -2},
		// Staleness allows p = 0, but the exploration share cannot be
		// kept within 1.5 ms, where the nearest replica answers half the
		// time: p falls to the latency bound, 0.
		{"latency bound below exploration", warm(0), Tune{Latency: 1500 * time.Microsecond, Stale: 0.5}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.want
			if want < 0 {
				if tc.tn.stale < 0.18 || tc.tn.stale > 0.22 {
					t.Fatalf("s1 = %v after one stale read in five, want about 0.2", tc.tn.stale)
				}
				low := 1 - tc.target.Stale/tc.tn.stale
				want = (low + 1) / 2
				if tc.want == -2 {
					want = low
				}
			}
			if got := tc.tn.adjust(tv, tc.target); got < want-1e-9 || got > want+1e-9 {
				t.Errorf("p = %v, want %v (s1 %v after %d samples)", got, want, tc.tn.stale, tc.tn.samples)
			}
		})
	}
}

// TestTuneValidate checks that a tuner target is checked and excludes
// fixed levels.
func TestTuneValidate(t *testing.T) {
	for _, p := range []Policy{
		{Tune: Tune{Latency: 0, Stale: 0.1}},
		{Tune: Tune{Latency: ms(5), Stale: 1.5}},
		{Tune: Tune{Latency: ms(5), Stale: 0.1}, Read: Fixed(Quorum)},
		{Read: Mix(2, One, Quorum)},
		{Delay: -ms(1)},
	} {
		if err := p.Validate(); err == nil {
			t.Errorf("Policy %+v validated", p)
		}
	}
	if err := (Policy{Tune: Tune{Latency: ms(5), Stale: 0.1}}).Validate(); err != nil {
		t.Errorf("a tuner target alone: %v", err)
	}
}
