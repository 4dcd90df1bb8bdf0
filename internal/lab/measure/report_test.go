package measure

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestCheckLinearizable(t *testing.T) {
	atomic := []Op{
		wr("w", "x", "a", 0, 10*ms),
		rd("r1", "x", "a", 20*ms, 30*ms),
		wr("w", "x", "b", 100*ms, 110*ms),
		rd("r1", "x", "a", 105*ms, 115*ms),
		rd("r2", "x", "b", 106*ms, 116*ms),
		wr("w", "y", "c", 0, 10*ms), // another register
		rd("r2", "y", "", 5*ms, 6*ms),
		failed(rd("r2", "x", "", 200*ms, 210*ms)), // dropped
		failed(wr("w", "x", "z", 300*ms, 310*ms)), // unobserved: dropped
		failed(wr("w", "y", "d", 300*ms, 310*ms)), // observed below: pending
		rd("r1", "y", "d", 400*ms, 410*ms),
	}
	stale := []Op{
		wr("w", "x", "a", 0, 10*ms),
		wr("w", "x", "b", 1000*ms, 1010*ms),
		rd("r", "x", "a", 1060*ms, 1070*ms),
	}
	for _, tc := range []struct {
		name    string
		ops     []Op
		verdict Verdict
	}{
		{"atomic", atomic, VerdictLinearizable},
		{"stale read", stale, VerdictNotLinearizable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var vis bytes.Buffer
			res, err := CheckLinearizable(tc.ops, Config{Visualization: &vis})
			if err != nil {
				t.Fatal(err)
			}
			if res.Verdict != tc.verdict {
				t.Errorf("verdict %s, want %s", res.Verdict, tc.verdict)
			}
			failedCheck := tc.verdict == VerdictNotLinearizable
			if res.Visualized != failedCheck || (vis.Len() > 0) != failedCheck {
				t.Errorf("visualized %v with %d bytes, want visualization only on failure", res.Visualized, vis.Len())
			}
			if failedCheck && !strings.Contains(vis.String(), "<html") {
				t.Errorf("visualization is not HTML: %.100s", vis.String())
			}
		})
	}
	res, _ := CheckLinearizable(atomic, Config{})
	if res.Ops != 9 || res.Registers != 2 || res.FailedReads != 1 || res.UnobservedWrites != 1 || res.Indeterminate != 1 {
		t.Errorf("%+v", res)
	}
	res, err := CheckLinearizable(atomic, Config{LinearizabilityMaxOps: 8})
	if !errors.Is(err, ErrHistoryTooLarge) || !strings.Contains(err.Error(), "9 ops exceed the limit of 8") || res.Skipped == "" {
		t.Errorf("over the limit: %+v, %v", res, err)
	}
}

func TestLatency(t *testing.T) {
	// Eventual reads take 1, 2, ..., 100 ms: nearest-rank p50 = 50 ms,
	// p99 = 99 ms, max 100 ms, within HDR's 0.1% (3 significant digits).
	// Two writes take 10 ms, one fails.
	var ops []Op
	for i := int64(1); i <= 100; i++ {
		ops = append(ops, withOption(rd("r", "x", "", i*1000*ms, i*1000*ms+i*ms), "eventual"))
	}
	ops = append(ops, wr("w", "x", "a", 0, 10*ms), wr("w", "x", "b", 20*ms, 30*ms), failed(wr("w", "x", "c", 40*ms, 45*ms)))
	res := Latency(ops)
	if len(res.Groups) != 2 || res.Groups[0].Kind != KindWrite || res.Groups[1].Option != "eventual" {
		t.Fatalf("groups %+v", res.Groups)
	}
	w, r := res.Groups[0], res.Groups[1]
	if w.OK != 2 || w.Failed != 1 || w.Latency.Count != 2 {
		t.Errorf("writes %+v", w)
	}
	approx(t, "write failure rate", w.FailureRate, 1.0/3, 1e-12)
	approx(t, "write p50", w.Latency.P50MS, 10, 0.01)
	approx(t, "read p50", r.Latency.P50MS, 50, 0.05)
	approx(t, "read p90", r.Latency.P90MS, 90, 0.09)
	approx(t, "read p99", r.Latency.P99MS, 99, 0.1)
	approx(t, "read max", r.Latency.MaxMS, 100, 0.1)
	approx(t, "read mean", r.Latency.MeanMS, 50.5, 0.06)
}

func TestSweep(t *testing.T) {
	// 20 clients: 8 OK ops and 2 failed within one second, offered 10
	// ops/s: 8 ops/s, 80%, failure rate 0.2. 10 clients: 5 OK ops in
	// 0.5 s: 10 ops/s.
	var heavy, light []Op
	for i := int64(0); i < 10; i++ {
		op := rd("c", "x", "", i*100*ms, i*100*ms+100*ms)
		if i%5 == 4 {
			op = failed(op)
		}
		heavy = append(heavy, op)
	}
	for i := int64(0); i < 5; i++ {
		light = append(light, rd("c", "x", "", i*100*ms, i*100*ms+100*ms))
	}
	res := Sweep([]SweepInput{{Clients: 20, OfferedOpsPerS: 10, Ops: heavy}, {Clients: 10, Ops: light}})
	if len(res.Points) != 2 || res.Points[0].Clients != 10 {
		t.Fatalf("points %+v", res.Points)
	}
	l, h := res.Points[0], res.Points[1]
	approx(t, "light throughput", l.ThroughputOpsPerS, 10, 1e-9)
	approx(t, "heavy throughput", h.ThroughputOpsPerS, 8, 1e-9)
	approx(t, "heavy percent", h.ThroughputPercent, 80, 1e-9)
	approx(t, "heavy failure rate", h.FailureRate, 0.2, 1e-12)
	if h.OK != 8 || h.Failed != 2 || h.DurationS != 1 || len(h.Groups) != 1 || h.Groups[0].Latency.Count != 8 {
		t.Errorf("heavy %+v", h)
	}
	if !strings.Contains(res.String(), "80.0%") {
		t.Errorf("text:\n%s", res.String())
	}
}

func TestAnalyze(t *testing.T) {
	ops := syntheticRun("run1", 500)
	ops = append(ops, withRun(rd("r", "x", "never", 9500*ms, 9501*ms), "run1"))
	rep := Analyze(ops, Config{LinearizabilityMaxOps: 100})
	if len(rep.Errors) != 0 {
		t.Errorf("errors %v", rep.Errors)
	}
	if rep.Summary.Ops != len(ops) || rep.Summary.Writes != 3 || rep.Summary.Runs != 1 || rep.Summary.Clients != 3 {
		t.Errorf("summary %+v", rep.Summary)
	}
	if rep.Anomalies.NeverWrittenReads != 1 {
		t.Errorf("anomalies %+v", rep.Anomalies)
	}
	if rep.Linearizability.Skipped == "" || rep.Linearizability.Verdict != "" {
		t.Errorf("linearizability over the limit should be skipped: %+v", rep.Linearizability)
	}
	// Stale eventual reads make the values read stale positive in Gamma:
	// every one of the three values is read after being overwritten,
	// except the last; the initial value is read after the first write.
	if rep.Gamma.Values != 4 || rep.Gamma.Positive != 3 {
		t.Errorf("gamma %+v", rep.Gamma)
	}
	if rep.InterElement.Skipped == "" {
		t.Errorf("one key: inter-element should be skipped: %+v", rep.InterElement)
	}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`"freshness":`, `"monotonic_reads":`, `"gamma":`, `"latency":`, `"p999_ms":`} {
		if !bytes.Contains(b, []byte(s)) {
			t.Errorf("JSON lacks %s", s)
		}
	}
	text := rep.String()
	for _, s := range []string{"Trace: 1792 ops", "never-written-value", "Wada Table 1", "Wada Table 2", "Read-your-writes", "Gamma scores", "Porcupine): skipped", "Latency"} {
		if !strings.Contains(text, s) {
			t.Errorf("text lacks %q", s)
		}
	}

	rep = Analyze(ops, Config{BucketWidthMS: -1})
	if len(rep.Errors) != 1 || !strings.Contains(rep.Errors[0], "BucketWidthMS") || rep.Summary.Ops != 0 {
		t.Errorf("invalid config: %+v", rep.Errors)
	}
}
