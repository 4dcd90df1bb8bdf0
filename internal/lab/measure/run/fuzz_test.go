package run

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/cosla/cosla/internal/lab/measure"
)

// FuzzAnalyze does with arbitrary bytes what `cosla measure analyze`
// does with a trace file: ReadJSONL, then, if it reads, Analyze and the
// report as text (with and without the paper's numbers) and as JSON. It
// also runs every analysis with a second Config (windows, inter-element
// keys, a clock uncertainty, a small linearizability bound) and the load
// sweep. None may panic, the analyses may report no error, and the JSON
// must encode (no NaN or infinity).
//
// Run it with: go test -run x -fuzz FuzzAnalyze ./internal/lab/measure/run
func FuzzAnalyze(f *testing.F) {
	for _, keys := range [][]string{nil, {"x", "y"}} {
		w := SimpleDBWorkload()
		w.Duration, w.Keys = 2*time.Second, keys
		var trace bytes.Buffer
		if _, err := Sim(SimOptions{Workload: w, Seed: 1, Trace: &trace}); err != nil {
			f.Fatal(err)
		}
		// The first lines: a seed the fuzzer can mutate quickly.
		lines := bytes.SplitAfter(trace.Bytes(), []byte("\n"))
		f.Add(bytes.Join(lines[:min(len(lines), 40)], nil))
	}
	f.Add([]byte(`{"run":"r1","client":"w","role":"writer","kind":"write","key":"x","value":"1","call_us":10,"return_us":20,"ok":true}
{"run":"r1","client":"r","role":"reader","kind":"read","key":"x","value":"","call_us":12,"return_us":14,"ok":true,"option":"eventual"}
{"run":"r1","client":"w","role":"writer","kind":"write","key":"x","value":"3","call_us":41,"return_us":50,"ok":false,"error":"timeout"}
{"run":"r1","client":"r","role":"reader","kind":"read","key":"x","value":"3","call_us":55,"return_us":57,"ok":true,"option":"consistent"}
{"run":"r1","client":"r","role":"reader","kind":"read","key":"x","value":"1","call_us":58,"return_us":59,"ok":true,"option":"eventual"}
{"run":"r2","client":"c","kind":"read","key":"x","value":"zz","call_us":3,"return_us":4,"ok":true}
`))
	f.Add([]byte(`{"client":"a","kind":"write","key":"k","value":"v1","call_us":0,"return_us":1152921504606846976,"ok":true}
{"client":"b","kind":"write","key":"k","value":"v1","call_us":5,"return_us":5,"ok":true}
{"client":"b","kind":"read","key":"k","value":"v1","call_us":0,"return_us":0,"ok":true}
`))
	other := measure.Config{
		BucketWidthMS: 0.5, FreshThreshold: 0.5, MinBucketReads: 2,
		MonotonicWindow: measure.RangeMS{FromMS: 0, ToMS: 0.02}, InterElementKeys: [2]string{"x", "y"},
		InterElementWindow: measure.RangeMS{FromMS: 0.001, ToMS: 1}, ClockUncertaintyMS: 0.003,
		LinearizabilityMaxOps: 20, MaxExamples: 1,
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ops, err := measure.ReadJSONL(bytes.NewReader(data))
		if err != nil {
			return // FuzzReadJSONL checks the errors
		}
		rf := Analyze(ops)
		if len(rf.Report.Errors) > 0 {
			t.Fatalf("Analyze: %q", rf.Report.Errors)
		}
		if rf.Report.Summary.Ops != len(ops) {
			t.Fatalf("Analyze counted %d ops of %d", rf.Report.Summary.Ops, len(ops))
		}
		for _, paper := range []bool{false, true} {
			if err := rf.WriteText(io.Discard, paper); err != nil {
				t.Fatalf("WriteText: %v", err)
			}
		}
		if _, err := json.Marshal(rf); err != nil {
			t.Fatalf("the report does not encode as JSON: %v", err)
		}
		rep := measure.Analyze(ops, other)
		if len(rep.Errors) > 0 {
			t.Fatalf("Analyze with %s: %q", other, rep.Errors)
		}
		if err := rep.WriteText(io.Discard); err != nil {
			t.Fatalf("WriteText: %v", err)
		}
		sweep := measure.Sweep([]measure.SweepInput{{Clients: 1, OfferedOpsPerS: 10, Ops: ops}, {Clients: 2, Ops: ops}})
		if err := sweep.WriteText(io.Discard); err != nil {
			t.Fatalf("Sweep.WriteText: %v", err)
		}
		if _, err := json.Marshal(sweep); err != nil {
			t.Fatalf("the sweep does not encode as JSON: %v", err)
		}
	})
}
