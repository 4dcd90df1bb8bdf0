package measure

import (
	"strings"
	"testing"
)

func TestMonotonicReads(t *testing.T) {
	// a is written at 0 ms, b at 1000 ms (returning at 1010). The reader
	// reads x at 1020 (b, fresh), 1030 (a, stale), 1040 (a, stale),
	// 1050 (b, fresh), 1060 (b, fresh); reads of y, a failed read of x and
	// another reader's single read do not break or make pairs.
	// Pairs: F->S (and b->a is older: a violation), S->S, S->F, F->F.
	ops := []Op{
		wr("w", "x", "a", 0, 10*ms),
		wr("w", "y", "y1", 0, 10*ms),
		wr("w", "x", "b", 1000*ms, 1010*ms),
		rd("r", "x", "b", 1020*ms, 1021*ms),
		rd("r", "y", "y1", 1022*ms, 1023*ms),
		rd("r", "x", "a", 1030*ms, 1031*ms),
		failed(rd("r", "x", "", 1035*ms, 1036*ms)),
		rd("r", "x", "a", 1040*ms, 1041*ms),
		rd("r", "x", "b", 1050*ms, 1051*ms),
		rd("r", "x", "b", 1060*ms, 1061*ms),
		rd("r2", "x", "b", 1060*ms, 1061*ms),
	}
	res := MonotonicReads(ops, Config{})
	if len(res.Options) != 1 {
		t.Fatalf("options %+v", res.Options)
	}
	got := res.Options[0]
	if got.Pairs != 4 || got.FreshFresh != 1 || got.FreshStale != 1 || got.StaleFresh != 1 || got.StaleStale != 1 || got.Violations != 1 {
		t.Errorf("table %+v", got)
	}
	if got.FreshStaleFrac != 0.25 || got.ViolationRate != 0.25 {
		t.Errorf("fractions %+v", got)
	}
	// n11 = n10 = n01 = n00 = 1: phi = (1*1 - 1*1)/sqrt(2*2*2*2) = 0.
	if !got.CorrelationDefined || got.Correlation != 0 {
		t.Errorf("correlation %v defined %v, want 0", got.Correlation, got.CorrelationDefined)
	}
	// Window [0, 35) ms after the write's start (1000 ms): only the reads
	// at 1020 and 1030 qualify, one F->S pair.
	res = MonotonicReads(ops, Config{MonotonicWindow: RangeMS{0, 35}})
	if got := res.Options[0]; got.Pairs != 1 || got.FreshStale != 1 || got.CorrelationDefined {
		t.Errorf("windowed table %+v", got)
	}
	if text := res.String(); !strings.Contains(text, "100.00% (1)") || !strings.Contains(text, "correlation undefined") {
		t.Errorf("text:\n%s", text)
	}
}

func TestMonotonicReadsCorrelation(t *testing.T) {
	// Reads F F F S S give pairs FF, FF, FS, SS: n11 = 2, n10 = 1, n01 = 0,
	// n00 = 1, phi = (2*1 - 1*0)/sqrt(3*1*2*2) = 2/sqrt(12).
	ops := []Op{
		wr("w", "x", "a", 0, 10*ms),
		wr("w", "x", "b", 100*ms, 110*ms),
	}
	for i, v := range []string{"b", "b", "b", "a", "a"} {
		c := int64(200+10*i) * ms
		ops = append(ops, withOption(rd("r", "x", v, c, c+ms), "eventual"))
	}
	got := MonotonicReads(ops, Config{}).Options[0]
	if got.Option != "eventual" || got.FreshFresh != 2 || got.FreshStale != 1 || got.StaleStale != 1 || got.Violations != 1 {
		t.Errorf("table %+v", got)
	}
	approx(t, "correlation", got.Correlation, 2/3.4641016151377544, 1e-12)
}

func TestReadYourWrites(t *testing.T) {
	// c writes a, then reads "" (older than its own a: violation), a, and
	// a again after w2 wrote b (stale, but b is not c's write: no
	// violation). c writes cc, reads cc, and later reads b, older than cc:
	// violation. o never wrote x and is not checked. 5 checked, 2 bad.
	ops := []Op{
		wr("c", "x", "a", 0, 10*ms),
		rd("c", "x", "", 20*ms, 30*ms),
		rd("c", "x", "a", 40*ms, 50*ms),
		wr("w2", "x", "b", 100*ms, 110*ms),
		rd("c", "x", "a", 120*ms, 130*ms),
		wr("c", "x", "cc", 200*ms, 210*ms),
		rd("c", "x", "cc", 220*ms, 230*ms),
		rd("c", "x", "b", 300*ms, 310*ms),
		rd("o", "x", "a", 300*ms, 310*ms),
		rd("c", "y", "", 320*ms, 330*ms), // c never wrote y
	}
	res := ReadYourWrites(ops, Config{})
	if len(res.Options) != 1 {
		t.Fatalf("options %+v", res.Options)
	}
	got := res.Options[0]
	if got.Checked != 5 || got.Violations != 2 || got.Rate != 0.4 {
		t.Errorf("%+v", got)
	}
	if len(got.Examples) != 2 || got.Examples[0].CallUS != 20*ms || got.Examples[1].Value != "b" ||
		!strings.Contains(got.Examples[1].Detail, `"cc"`) {
		t.Errorf("examples %+v", got.Examples)
	}
}

func TestReadYourWritesConcurrentOwnWrite(t *testing.T) {
	// A client whose write is still in flight when it reads (a pipelined
	// client) is held only to writes that returned before the read.
	ops := []Op{
		wr("c", "x", "a", 0, 10*ms),
		wr("c", "x", "b", 20*ms, 60*ms),
		rd("c", "x", "a", 30*ms, 40*ms), // b had not returned
		rd("c", "x", "a", 70*ms, 80*ms), // b had: violation
	}
	got := ReadYourWrites(ops, Config{}).Options[0]
	if got.Checked != 2 || got.Violations != 1 {
		t.Errorf("%+v", got)
	}
}

func TestInterElement(t *testing.T) {
	// Every second the writer writes X, then Y (two PutAttributes); the
	// reader reads X then Y 100 ms later. Per period k the values read are
	// chosen to give: k=0 A, k=1 B, k=2 C, k=3 D, k=4 A (read Y then X),
	// k=5 D but 600 ms after the writes. A lone read of X makes no
	// observation. Without a window: A 2, B 1, C 1, D 2 of 6.
	var ops []Op
	prevX, prevY := "", ""
	outcomes := []struct{ xFresh, yFresh bool }{{true, true}, {true, false}, {false, true}, {false, false}, {true, true}, {false, false}}
	for k, o := range outcomes {
		t0 := int64(k) * 1000 * ms
		x, y := "x"+string(rune('0'+k)), "y"+string(rune('0'+k))
		ops = append(ops, wr("w", "kx", x, t0, t0+10*ms), wr("w", "ky", y, t0+10*ms, t0+20*ms))
		gotX, gotY := prevX, prevY
		if o.xFresh {
			gotX = x
		}
		if o.yFresh {
			gotY = y
		}
		readAt := t0 + 100*ms
		if k == 5 {
			readAt = t0 + 600*ms
		}
		rx, ry := rd("r", "kx", gotX, readAt, readAt+5*ms), rd("r", "ky", gotY, readAt+5*ms, readAt+10*ms)
		if k == 4 {
			rx.CallUS, rx.ReturnUS, ry.CallUS, ry.ReturnUS = ry.CallUS, ry.ReturnUS, rx.CallUS, rx.ReturnUS
		}
		ops = append(ops, rx, ry)
		if k == 1 {
			ops = append(ops, rd("r", "kx", x, t0+300*ms, t0+305*ms))
		}
		prevX, prevY = x, y
	}
	res := InterElement(ops, Config{})
	if res.Skipped != "" || res.KeyX != "kx" || res.KeyY != "ky" || len(res.Options) != 1 {
		t.Fatalf("%+v", res)
	}
	g := res.Options[0]
	if g.Observations != 6 || g.A != 2 || g.B != 1 || g.C != 1 || g.D != 2 {
		t.Errorf("without window %+v", g)
	}
	approx(t, "A", g.AFrac, 2.0/6, 1e-12)
	// Wada 3.2 counts reads 0-450 ms after the write: k=5 drops out.
	g = InterElement(ops, Config{InterElementWindow: RangeMS{0, 450}}).Options[0]
	if g.Observations != 5 || g.A != 2 || g.B != 1 || g.C != 1 || g.D != 1 || g.DFrac != 0.2 {
		t.Errorf("window [0,450) %+v", g)
	}
	// Naming the keys the other way round swaps B and C.
	g = InterElement(ops, Config{InterElementKeys: [2]string{"ky", "kx"}}).Options[0]
	if g.B != 1 || g.C != 1 || g.A != 2 {
		t.Errorf("swapped %+v", g)
	}
	if res := InterElement(append(ops, wr("w", "kz", "z", 0, 1)), Config{}); !strings.Contains(res.Skipped, "3 keys") {
		t.Errorf("three keys: %+v", res)
	}
}
