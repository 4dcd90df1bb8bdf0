package measure

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/anishathalye/porcupine"
)

func TestGammaScores(t *testing.T) {
	type want struct {
		value   string
		scoreMS float64
		future  bool
	}
	for _, tc := range []struct {
		name string
		ops  []Op
		want []want // every scored value, in version order
	}{
		{
			// Every read returns the latest completed write or a concurrent
			// one: the trace is linearizable, so every score is zero.
			name: "atomic",
			ops: []Op{
				wr("w", "x", "a", 0, 10*ms),
				rd("r1", "x", "a", 20*ms, 30*ms),
				wr("w", "x", "b", 100*ms, 110*ms),
				rd("r1", "x", "a", 105*ms, 115*ms), // concurrent with b's write
				rd("r2", "x", "b", 106*ms, 116*ms), // concurrent too
				rd("r1", "x", "b", 200*ms, 210*ms),
			},
			want: []want{{"a", 0, false}, {"b", 0, false}},
		},
		{
			// b overwrote a at 1010 ms; the read of a starts d = 50 ms later.
			// The writes are 990 ms apart, more than d, so
			// score(a) = min(d, 1000-10) = 50 ms; b is not to blame.
			name: "stale by d",
			ops: []Op{
				wr("w", "x", "a", 0, 10*ms),
				wr("w", "x", "b", 1000*ms, 1010*ms),
				rd("r", "x", "a", 1060*ms, 1070*ms),
			},
			want: []want{{"a", 50, false}, {"b", 0, false}},
		},
		{
			// The same stale read, but the writes are only 10 ms apart:
			// widening by 10 ms makes them concurrent, b may then precede a
			// and the read is fresh. score(a) = min(100, 20-10) = 10 ms.
			name: "stale, writes close together",
			ops: []Op{
				wr("w", "x", "a", 0, 10*ms),
				wr("w", "x", "b", 20*ms, 30*ms),
				rd("r", "x", "a", 130*ms, 140*ms),
			},
			want: []want{{"a", 10, false}, {"b", 0, false}},
		},
		{
			// Reads overlapping the write of b may return a or b, as long as
			// no read of a starts after a read of b finished.
			name: "overlapping ops",
			ops: []Op{
				wr("w", "x", "a", 0, 10*ms),
				wr("w", "x", "b", 100*ms, 200*ms),
				rd("r1", "x", "a", 150*ms, 160*ms),
				rd("r2", "x", "b", 195*ms, 205*ms),
				rd("r3", "x", "a", 200*ms, 210*ms), // touches the write's end: still concurrent
			},
			want: []want{{"a", 0, false}, {"b", 0, false}},
		},
		{
			// A read of a after another client's read of b had finished:
			// a's zone [10, 190] holds b's backward zone [150, 160] until
			// min(180, 150-10, 190-160) = 30 ms.
			name: "read of a after a read of b",
			ops: []Op{
				wr("w", "x", "a", 0, 10*ms),
				wr("w", "x", "b", 100*ms, 200*ms),
				rd("r2", "x", "b", 150*ms, 160*ms),
				rd("r3", "x", "a", 190*ms, 200*ms),
			},
			want: []want{{"a", 30, false}, {"b", 0, false}},
		},
		{
			// A read returned a at 50 ms, before a's write was invoked at
			// 100 ms: score = 100 - 50 = 50 ms.
			name: "read before its write",
			ops: []Op{
				rd("r", "x", "a", 0, 50*ms),
				wr("w", "x", "a", 100*ms, 110*ms),
			},
			want: []want{{"a", 50, true}},
		},
		{
			// The read found nothing 20 ms after a's write returned. The
			// initial value's zone is (-∞, 30] and a's backward zone
			// [0, 10] lies inside it until gamma = 30 - 10 = 20 ms.
			name: "stale initial value",
			ops: []Op{
				wr("w", "x", "a", 0, 10*ms),
				rd("r", "x", "", 30*ms, 40*ms),
			},
			want: []want{{"", 20, false}, {"a", 0, false}},
		},
		{
			// Zones a = [10, 110] and b = [50, 70] are nested forward zones.
			// They overlap until gamma = 20, when b's zone turns backward
			// and stays inside a's until min(100, 70-10, 110-50) = 60 ms.
			name: "nested forward zones",
			ops: []Op{
				wr("w", "x", "a", 5*ms, 10*ms),
				wr("w", "x", "b", 40*ms, 50*ms),
				rd("r1", "x", "b", 70*ms, 80*ms),
				rd("r2", "x", "a", 110*ms, 120*ms),
			},
			want: []want{{"a", 60, false}, {"b", 0, false}},
		},
		{
			// A failed write that a read saw may have taken effect any time
			// after its start; reading a after seeing b is then stale:
			// a's zone [10, 300] holds b's backward zone [200, 250] (its
			// write finishes at +∞) until min(290, 200-10, 300-250) = 50 ms.
			name: "indeterminate write seen",
			ops: []Op{
				wr("w", "x", "a", 0, 10*ms),
				failed(wr("w", "x", "b", 100*ms, 110*ms)),
				rd("r1", "x", "b", 200*ms, 250*ms),
				rd("r2", "x", "a", 300*ms, 310*ms),
			},
			want: []want{{"a", 50, false}, {"b", 0, false}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := Gamma(tc.ops, Config{})
			if len(g.Scores) != len(tc.want) {
				t.Fatalf("got %d scores %+v, want %d", len(g.Scores), g.Scores, len(tc.want))
			}
			positive := 0
			for i, w := range tc.want {
				s := g.Scores[i]
				if string(s.Value) != w.value || s.ScoreMS != w.scoreMS || s.FutureRead != w.future {
					t.Errorf("score %d = %+v, want value %q score %v ms future %v", i, s, w.value, w.scoreMS, w.future)
				}
				if w.scoreMS > 0 {
					positive++
				}
			}
			if g.Positive != positive {
				t.Errorf("Positive = %d, want %d", g.Positive, positive)
			}
			// The trace's Gamma agrees with Porcupine on the widened trace.
			checkTraceGamma(t, tc.ops, int64(g.TraceGammaMS*1000))
		})
	}
}

func TestGammaThresholdAndPercentiles(t *testing.T) {
	// Two keys; on x value a is 50 ms stale, on y value c is 5 ms stale;
	// b and d score 0. Four scores: 0, 0, 5, 50 ms.
	ops := []Op{
		wr("w", "x", "a", 0, 10*ms),
		wr("w", "x", "b", 1000*ms, 1010*ms),
		rd("r", "x", "a", 1060*ms, 1070*ms),
		wr("w", "y", "c", 0, 10*ms),
		wr("w", "y", "d", 1000*ms, 1010*ms),
		rd("r", "y", "c", 1015*ms, 1020*ms),
	}
	g := Gamma(ops, Config{})
	if g.Values != 4 || g.Positive != 2 || g.PositiveFraction != 0.5 {
		t.Errorf("values %d positive %d fraction %v, want 4, 2, 0.5", g.Values, g.Positive, g.PositiveFraction)
	}
	// Nearest rank over [0, 0, 5, 50]: p50 is the 2nd value, p90 the 4th.
	if g.All.P50MS != 0 || g.All.P90MS != 50 || g.All.MaxMS != 50 || g.TraceGammaMS != 50 {
		t.Errorf("all scores %+v, trace %v", g.All, g.TraceGammaMS)
	}
	if g.Positives.Count != 2 || g.Positives.P50MS != 5 {
		t.Errorf("positive scores %+v", g.Positives)
	}
	if len(g.Worst) != 2 || g.Worst[0].Value != "a" || g.Worst[0].Against != "b" {
		t.Errorf("worst %+v", g.Worst)
	}
	// CPQ 3.1.3: scores under the clock uncertainty are not counted.
	g = Gamma(ops, Config{ClockUncertaintyMS: 6})
	if g.Positive != 1 || g.Positives.MaxMS != 50 {
		t.Errorf("with 6 ms uncertainty: positive %d %+v, want 1", g.Positive, g.Positives)
	}
}

func TestGammaAnomalies(t *testing.T) {
	ops := []Op{
		wr("w", "x", "a", 0, 10*ms),
		wr("w", "x", "a", 20*ms, 30*ms), // duplicate value
		wr("w", "x", "b", 40*ms, 50*ms),
		rd("r", "x", "zzz", 60*ms, 70*ms), // never written
		rd("r", "x", "a", 80*ms, 90*ms),
		{Client: "bad", Kind: "delete", Key: "x", CallUS: 1, ReturnUS: 2},
	}
	g := Gamma(ops, Config{})
	// Only b is scored: a is excluded as a duplicate, zzz has no write.
	if g.Values != 1 || g.Excluded != 1 || g.Scores[0].Value != "b" {
		t.Errorf("values %d excluded %d scores %+v", g.Values, g.Excluded, g.Scores)
	}
	an := FindAnomalies(ops, Config{})
	if an.DuplicateValues != 1 || an.NeverWrittenReads != 1 || an.InvalidOps != 1 || an.FutureReads != 0 {
		t.Errorf("anomalies %+v", an)
	}
	kinds := map[AnomalyKind]int{}
	for _, ex := range an.Examples {
		kinds[ex.Kind]++
	}
	if kinds[AnomalyDuplicate] != 1 || kinds[AnomalyNeverWritten] != 1 || kinds[AnomalyInvalid] != 1 {
		t.Errorf("examples %+v", an.Examples)
	}
}

// TestGammaMatchesPorcupine checks the per-value formula against the
// definition on random small histories: the largest score G is the least
// gamma at which the widened trace is linearizable.
func TestGammaMatchesPorcupine(t *testing.T) {
	const seed = 20240601
	rng := rand.New(rand.NewPCG(seed, 0))
	for iter := 0; iter < 1000; iter++ {
		var ops []Op
		nWrites, nReads := 1+rng.IntN(3), rng.IntN(5)
		values := []string{""}
		for i := 0; i < nWrites; i++ {
			call := rng.Int64N(60)
			v := fmt.Sprintf("v%d", i)
			values = append(values, v)
			w := wr(fmt.Sprintf("w%d", i), "x", v, call, call+rng.Int64N(15))
			if rng.IntN(5) == 0 {
				w = failed(w)
			}
			ops = append(ops, w)
		}
		for i := 0; i < nReads; i++ {
			call := rng.Int64N(80)
			ops = append(ops, rd(fmt.Sprintf("r%d", i), "x", values[rng.IntN(len(values))], call, call+rng.Int64N(15)))
		}
		g := Gamma(ops, Config{})
		var gammaUS int64
		for _, s := range g.Scores {
			gammaUS = max(gammaUS, s.ScoreUS)
		}
		t.Run(fmt.Sprintf("iter%d", iter), func(t *testing.T) {
			checkTraceGamma(t, ops, gammaUS)
			if t.Failed() {
				t.Logf("seed %d iter %d: ops %+v scores %+v; reproduce: go test ./internal/lab/measure -run 'TestGammaMatchesPorcupine/iter%d$'",
					seed, iter, ops, g.Scores, iter)
			}
		})
	}
}

// checkTraceGamma asserts that ops widened by gammaUS/2 on each side are
// linearizable and, when gammaUS > 0, that ops widened by (gammaUS-1)/2
// are not. Times are doubled so that halves stay integers.
func checkTraceGamma(t *testing.T, ops []Op, gammaUS int64) {
	t.Helper()
	if !widenedLinearizable(ops, gammaUS) {
		t.Errorf("not linearizable after widening by gamma = %d us", gammaUS)
	}
	if gammaUS > 0 && widenedLinearizable(ops, gammaUS-1) {
		t.Errorf("already linearizable after widening by gamma = %d us, less than %d", gammaUS-1, gammaUS)
	}
}

func widenedLinearizable(ops []Op, gammaUS int64) bool {
	var history []porcupine.Operation
	for _, op := range ops {
		in := registerInput{reg: regKey{op.Run, op.Key}, write: op.Kind == KindWrite, value: op.Value}
		var out any = ""
		ret := 2*op.ReturnUS + gammaUS
		if op.Kind == KindRead {
			if !op.OK {
				continue
			}
			in.value, out = "", op.Value
		} else if !op.OK {
			ret = 1 << 50 // pending
		}
		history = append(history, porcupine.Operation{Input: in, Output: out, Call: 2*op.CallUS - gammaUS, Return: ret})
	}
	return porcupine.CheckOperations(registerModel, history)
}
