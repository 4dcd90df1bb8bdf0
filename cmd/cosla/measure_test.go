package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cosla/cosla/internal/lab/measure"
	mrun "github.com/cosla/cosla/internal/lab/measure/run"
)

func runCosla(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestMeasureBadFlags(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"no subcommand", []string{"measure"}},
		{"unknown subcommand", []string{"measure", "frobnicate"}},
		{"no target", []string{"measure", "run", "--out", dir}},
		{"no out", []string{"measure", "run", "--target", "sim"}},
		{"unknown target", []string{"measure", "run", "--target", "oracle", "--out", dir}},
		{"bad placement", []string{"measure", "run", "--target", "sim", "--placement", "fibers", "--out", dir}},
		{"bad read option", []string{"measure", "run", "--target", "sim", "--read-option", "sometimes", "--out", dir}},
		{"bad preset", []string{"measure", "run", "--target", "sim", "--preset", "dynamo", "--out", dir}},
		{"bad duration", []string{"measure", "run", "--target", "sim", "--duration", "-1s", "--out", dir}},
		{"three keys", []string{"measure", "run", "--target", "sim", "--keys", "a,b,c", "--out", dir}},
		{"sweep in sim", []string{"measure", "run", "--target", "sim", "--sweep", "1,2", "--out", dir}},
		{"bad sweep", []string{"measure", "run", "--target", "mem", "--sweep", "1,x", "--out", dir}},
		{"mem processes", []string{"measure", "run", "--target", "mem", "--placement", "processes", "--out", dir}},
		{"mem read option", []string{"measure", "run", "--target", "mem", "--read-option", "eventual", "--out", dir}},
		{"cosla write option", []string{"measure", "run", "--target", "cosla", "--write-option", "wait", "--out", dir}},
		{"sim with connect", []string{"measure", "run", "--target", "sim", "--connect", "127.0.0.1:1", "--out", dir}},
		{"mem with connect", []string{"measure", "run", "--target", "mem", "--connect", "127.0.0.1:1", "--out", dir}},
		{"cosla with connect", []string{"measure", "run", "--target", "cosla", "--connect", "127.0.0.1:1", "--out", dir}},
		{"unknown flag", []string{"measure", "run", "--frob"}},
		{"stray argument", []string{"measure", "run", "--target", "sim", "--out", dir, "extra"}},
		{"analyze nothing", []string{"measure", "analyze"}},
		{"worker without spec", []string{"measure", "worker", "--target", "cosla"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCosla(t, tc.args...)
			if code != exitUsage {
				t.Errorf("cosla %s: exit %d, want %d; stderr:\n%s", strings.Join(tc.args, " "), code, exitUsage, stderr)
			}
		})
	}
	// A file named on the command line that is not there is bad input.
	if code, _, _ := runCosla(t, "measure", "analyze", filepath.Join(dir, "missing.jsonl")); code != exitUsage {
		t.Errorf("analyze of a missing file: exit %d, want %d", code, exitUsage)
	}
}

// TestMeasureSimpleDB runs a minute of the simpledb preset in the
// simulator through the command line and checks the summary it prints
// (Wada's figures over the preset's full run are
// internal/lab/measure/run's TestSimpleDBReproducesWada), that analyze
// reproduces report.json from the trace alone, and that the seed
// reproduces the trace.
func TestMeasureSimpleDB(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	args := []string{"measure", "run", "--target", "sim", "--preset", "simpledb", "--seed", "3", "--duration", "1m", "--out", dir, "--json"}
	code, stdout, stderr := runCosla(t, args...)
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "seed 3") {
		t.Errorf("the run does not print its seed:\n%s", stderr)
	}
	var s map[string]any
	if err := json.Unmarshal([]byte(stdout), &s); err != nil {
		t.Fatalf("--json output: %v\n%s", err, stdout)
	}
	num := func(k string) float64 {
		v, ok := s[k].(float64)
		if !ok {
			t.Fatalf("summary has no number %q: %s", k, stdout)
		}
		return v
	}
	// A minute of one write every 3 s and reads at 50 Hz, half of them
	// consistent: some weak reads in the first 450 ms after a write are
	// stale, none after 510 ms, and no consistent read is.
	for _, c := range []struct {
		key    string
		lo, hi float64
	}{
		{"p_fresh_0_450ms", 0.01, 0.99},
		{"p_fresh_510_1000ms", 0.99, 1},
		{"p_fresh_consistent", 1, 1},
		{"mr_violation_fraction", 0.01, 1},
		{"ryw_violation_fraction", 0.01, 1},
		{"gamma_positive_fraction", 0.01, 1},
		{"reads_consistent", 3000, 3000},
		{"seed", 3, 3},
	} {
		if v := num(c.key); v < c.lo || v > c.hi {
			t.Errorf("%s = %v, want in [%v, %v]; rerun: cosla %s", c.key, v, c.lo, c.hi, strings.Join(args, " "))
		}
	}

	// analyze: the same report from the trace alone.
	code, stdout, stderr = runCosla(t, "measure", "analyze", "--json", filepath.Join(dir, "trace.jsonl"))
	if code != 0 {
		t.Fatalf("analyze: exit %d; stderr:\n%s", code, stderr)
	}
	var fromTrace, fromRun struct {
		measure.Report
		Wada *mrun.Summary `json:"wada_summary"`
	}
	if err := json.Unmarshal([]byte(stdout), &fromTrace); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &fromRun); err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(fromTrace.Report)
	b, _ := json.Marshal(fromRun.Report)
	if !bytes.Equal(a, b) {
		t.Errorf("analyze gave another report than run")
	}
	fromRun.Wada.Target, fromRun.Wada.Seed = "", nil
	if *fromTrace.Wada != *fromRun.Wada {
		t.Errorf("analyze summary %+v, run summary %+v", *fromTrace.Wada, *fromRun.Wada)
	}
	var meta struct {
		Meta map[string]string `json:"meta"`
	}
	if err := json.Unmarshal(data, &meta); err != nil || meta.Meta["seed"] != "3" || meta.Meta["target"] != "sim" {
		t.Errorf("report.json meta %v (%v)", meta.Meta, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "trace.csv")); err != nil {
		t.Error(err)
	}
}

func TestMeasureSameSeedSameTrace(t *testing.T) {
	t.Parallel()
	var traces []string
	for range 2 {
		dir := t.TempDir()
		if code, _, stderr := runCosla(t, "measure", "run", "--target", "sim", "--preset", "simpledb", "--duration", "1m", "--seed", "9", "--out", dir); code != 0 {
			t.Fatalf("exit %d; stderr:\n%s", code, stderr)
		}
		data, err := os.ReadFile(filepath.Join(dir, "trace.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		traces = append(traces, string(data))
	}
	if traces[0] != traces[1] || len(traces[0]) == 0 {
		t.Errorf("seed 9 gave two different traces")
	}
}

// TestMeasureMem measures the in-memory lagging store in real time for a
// fraction of a second, with the text report.
func TestMeasureMem(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time run")
	}
	t.Parallel()
	dir := t.TempDir()
	code, stdout, stderr := runCosla(t, "measure", "run", "--target", "mem", "--lag", "20ms", "--write-every", "50ms",
		"--read-hz", "200", "--read-option", "replica", "--read-option", "primary", "--duration", "400ms", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	for _, want := range []string{"Probability of reading the freshest value", "Summary (Wada 2.1.1)", "P(fresh) primary reads"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("report lacks %q:\n%s", want, stdout)
		}
	}
	dir2 := t.TempDir()
	if code, stdout, stderr := runCosla(t, "measure", "run", "--target", "mem", "--sweep", "1,3", "--client-hz", "20",
		"--duration", "200ms", "--out", dir2); code != 0 || !strings.Contains(stdout, "Load sweep") {
		t.Errorf("sweep: exit %d; stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}
