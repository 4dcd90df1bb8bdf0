package measure

import (
	"fmt"
	"strings"
	"testing"
)

// syntheticRun is a Wada 2.1.1 measurement in miniature: three writes,
// 3 s apart, each taking 10 ms; after write k an eventual reader reads
// every 10 ms from 20 ms to 2990 ms after the write starts (j = 0..297)
// and a consistent reader reads at the same times. Before switchMS the
// eventual read is fresh iff (j+k) % 3 == 0 and otherwise returns the
// previous value (the initial "" after the first write); from switchMS on
// it is fresh.
func syntheticRun(run string, switchMS int64) []Op {
	var ops []Op
	prev := ""
	for k := int64(0); k < 3; k++ {
		startUS := k * 3000 * ms
		v := fmt.Sprintf("%s-w-%d", run, startUS)
		ops = append(ops, withRun(wr("w", "x", v, startUS, startUS+10*ms), run))
		for j := int64(0); j < 298; j++ {
			elapsedMS := 20 + 10*j
			callUS := startUS + elapsedMS*ms
			got := v
			if elapsedMS < switchMS && (j+k)%3 != 0 {
				got = prev
			}
			ops = append(ops,
				withRun(withOption(rd("r", "x", got, callUS, callUS+5*ms), "eventual"), run),
				withRun(withOption(rd("c", "x", v, callUS, callUS+5*ms), "consistent"), run))
		}
		prev = v
	}
	return ops
}

func TestFreshnessSynthetic(t *testing.T) {
	ops := append(syntheticRun("run1", 500), syntheticRun("run2", 600)...)
	res := Freshness(ops, Config{})
	if len(res.Options) != 2 || res.Options[0].Option != "consistent" || res.Options[1].Option != "eventual" {
		t.Fatalf("options %+v", res.Options)
	}
	cons, ev := res.Options[0], res.Options[1]
	if cons.Reads != 2*3*298 || cons.P != 1 {
		t.Errorf("consistent: %d reads, P %v; want 1788, 1", cons.Reads, cons.P)
	}
	// run1, per write k, [0,450) holds j = 0..42 (43 reads); fresh are
	// j ≡ -k (mod 3): 15 + 14 + 14 = 43 of 129. run2 is the same there.
	// [450,500): j = 43..47, 1 + 2 + 2 = 5 of 15 fresh in run1; run2 too.
	// [500,1000): j = 48..97, 50 a write, all fresh in run1; in run2 the
	// j = 48..57 (elapsed 500..590 ms) follow the 1/3 pattern: per write
	// k, j ≡ -k mod 3 among 48..57 gives 4, 3, 3 fresh of 10 = 10 of 30.
	// [1000,∞): j = 98..297, 200 a write, all fresh.
	want := []struct {
		reads, fresh int
		p            float64
	}{
		{2 * 129, 2 * 43, 1.0 / 3},
		{2 * 15, 2 * 5, 1.0 / 3},
		{2 * 150, 150 + 120 + 10, 280.0 / 300},
		{2 * 600, 2 * 600, 1},
	}
	for i, w := range want {
		got := ev.Ranges[i]
		if got.Reads != w.reads || got.Fresh != w.fresh {
			t.Errorf("eventual %s: %d/%d fresh, want %d/%d", got.Range, got.Fresh, got.Reads, w.fresh, w.reads)
		}
		approx(t, "P "+got.Range.String(), got.P, w.p, 1e-12)
	}
	// The 1 ms curve: 30 ms after the write, three reads (one per write)
	// per run, one of them fresh.
	for _, b := range ev.Buckets {
		if b.StartMS == 30 {
			approx(t, "P(30 ms)", b.P, 1.0/3, 1e-12)
			if b.Reads != 6 {
				t.Errorf("bucket 30 ms has %d reads, want 6", b.Reads)
			}
		}
	}
	// Fig. 3: run1 is first above 99% at 500 ms, last below 100% at
	// 490 ms; run2 at 600 and 590 ms. Median 550, CV = 50/550.
	if len(ev.Runs) != 2 {
		t.Fatalf("runs %+v", ev.Runs)
	}
	for i, w := range []struct{ first, last float64 }{{500, 490}, {600, 590}} {
		r := ev.Runs[i]
		if !r.HasFirstAbove || r.FirstAboveMS != w.first || !r.HasLastBelow || r.LastBelowMS != w.last {
			t.Errorf("run %s: %+v, want first %v last %v", r.Run, r, w.first, w.last)
		}
	}
	approx(t, "median first above", ev.MedianFirstAboveMS, 550, 1e-9)
	approx(t, "CV first above", ev.CVFirstAbove, 50.0/550, 1e-9)
	if r := cons.Runs[0]; !r.HasFirstAbove || r.FirstAboveMS != 20 || r.HasLastBelow {
		t.Errorf("consistent run: %+v, want fresh from the first bucket (20 ms)", r)
	}
	text := res.String()
	for _, s := range []string{"[0, 450) ms", "33.33% (86/258)", "100.00% (1788/1788)", "median 550.00 ms"} {
		if !strings.Contains(text, s) {
			t.Errorf("text lacks %q:\n%s", s, text)
		}
	}
}

func TestFreshnessDefinitionEdges(t *testing.T) {
	ops := []Op{
		rd("r", "x", "", 0, 1*ms), // before any write returned: no reference
		wr("w", "x", "a", 5*ms, 15*ms),
		rd("r", "x", "a", 10*ms, 12*ms), // a still in progress: no reference yet
		rd("r", "x", "", 15*ms, 16*ms),  // a returned at the instant r began: concurrent, no reference
		rd("r", "x", "", 16*ms, 17*ms),  // stale, elapsed 11 ms
		wr("w", "x", "b", 20*ms, 30*ms),
		rd("r", "x", "b", 25*ms, 27*ms),        // newer than the reference (a): fresh, elapsed 20 ms
		rd("r", "x", "q", 40*ms, 41*ms),        // never written: unknown
		failed(rd("r", "x", "", 42*ms, 43*ms)), // failed: ignored
	}
	res := Freshness(ops, Config{BucketWidthMS: 10})
	o := res.Options[0]
	if o.Reads != 2 || o.Fresh != 1 || o.NoReference != 3 || o.Unknown != 1 {
		t.Fatalf("%+v", o)
	}
	// 10 ms buckets: elapsed 11 ms (stale) in [10,20), 20 ms (fresh) in [20,30).
	if len(o.Buckets) != 2 || o.Buckets[0].StartMS != 10 || o.Buckets[0].P != 0 || o.Buckets[1].StartMS != 20 || o.Buckets[1].P != 1 {
		t.Errorf("buckets %+v", o.Buckets)
	}
}
