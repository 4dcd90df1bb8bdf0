package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cosla/cosla/internal/lab/experiment"
)

// TestExperimentRunSim runs `cosla experiment run` in the simulator on
// testdata/experiment-sim.yaml, a few runs of the Pileus table (the
// presets' own figures are internal/lab/experiment's): the tables with the
// paper's utility beside ours, the files of the report, the seed and
// trace hash, and with --json the results.json of the same run.
func TestExperimentRunSim(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	scenario := filepath.Join("testdata", "experiment-sim.yaml")
	code, stdout, stderr := runCosla(t, "experiment", "run", scenario, "--out", out)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "seed 1, trace hash") || !strings.Contains(stderr, "reproduce with: cosla experiment run "+scenario) {
		t.Errorf("stderr gives no seed, trace hash or command:\n%s", stderr)
	}
	for _, want := range []string{"Average delivered utility per SLA, client site and strategy",
		"Pileus's decisions", "Operations per run"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("no table %q in\n%s", want, stdout)
		}
	}
	// Pileus from India, with the paper's 0.50 beside it (Table 2).
	var india bool
	for line := range strings.Lines(stdout) {
		f := strings.Fields(line)
		india = india || len(f) > 5 && f[0] == "password-checking" && f[1] == "india" && f[2] == "pileus" && f[5] == "0.50"
	}
	if !india {
		t.Errorf("no utility row for Pileus from India with the paper's 0.50:\n%s", stdout)
	}
	for _, f := range []string{"results.json", "report.md", "tables/utility.csv", "tables/breakdown.csv", "tables/ops.csv"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	res, written := readResults(t, out)
	if res.Mode != "sim" || len(res.Runs) != 4 || len(res.Summaries) != 4 || res.Runs[0].Ops[0].Count == 0 {
		t.Errorf("results.json: mode %q, %d runs, %d summaries, ops %+v; want sim, 4 and 4 (2 sites x 2 strategies)",
			res.Mode, len(res.Runs), len(res.Summaries), res.Runs[0].Ops)
	}

	code, stdout, stderr = runCosla(t, "experiment", "run", scenario, "--out", t.TempDir(), "--json")
	if code != 0 {
		t.Fatalf("--json: exit %d\n%s", code, stderr)
	}
	var printed experiment.Result
	if err := json.Unmarshal([]byte(stdout), &printed); err != nil {
		t.Fatalf("--json: %v\n%s", err, stdout)
	}
	if !bytes.Equal(mustMarshal(t, printed), written) {
		t.Errorf("--json printed other results than the same seed's results.json:\n%s", stdout)
	}
}

// readResults decodes dir/results.json; it returns the results and
// their JSON as json.Marshal writes them.
func readResults(t *testing.T, dir string) (experiment.Result, []byte) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res experiment.Result
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatalf("results.json: %v", err)
	}
	return res, mustMarshal(t, res)
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestExperimentRunSweep runs the capacity preset in the simulator,
// shortened: a row per sweep point and op, and the throughput-latency
// plots.
func TestExperimentRunSweep(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	code, stdout, stderr := runCosla(t, "experiment", "run", "capacity-lan", "--scale", "0.02", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	points := map[string]bool{}
	for line := range strings.Lines(stdout) {
		if f := strings.Fields(line); len(f) > 5 && f[1] == "eventual" && f[4] == "read" {
			points[f[0]] = true
		}
	}
	if len(points) != 9 {
		t.Errorf("read rows for %d sweep points, want 9\n%s", len(points), stdout)
	}
	for _, f := range []string{"plots/capacity-throughput.png", "plots/capacity-latency.svg", "tables/ops.csv"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
}

func TestExperimentRunBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"experiment", "run"}, "name a scenario"},
		{[]string{"experiment", "run", "no-such-scenario"}, "neither a shipped scenario"},
		{[]string{"experiment", "run", "capacity-lan", "--mode", "moon"}, "--mode"},
		{[]string{"experiment", "run", "capacity-lan", "--scale", "-1"}, "--scale"},
	} {
		code, _, stderr := runCosla(t, tc.args...)
		if code == 0 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want an error saying %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestPrintRunResult: a run's progress line gives its utility, or for a
// causal table's run (no SLA to deliver utility for) where its reads
// went.
func TestPrintRunResult(t *testing.T) {
	var b strings.Builder
	printRunResult(&b, "[1/2]", experiment.RunResult{SLA: "shopping-cart", Client: "us", Strategy: "pileus", AvgUtility: 0.75})
	printRunResult(&b, "[2/2]", experiment.RunResult{Client: "brazil", Strategy: "karma",
		Causal: &experiment.CausalStats{LocalPct: 63.5, RestrictedPct: 12.25, ThroughputOpsPerS: 1000}})
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "shopping-cart") || !strings.Contains(lines[0], "utility 0.750") ||
		!strings.Contains(lines[1], "local 63.5%  restricted 12.2%") || strings.Contains(lines[1], "utility") {
		t.Errorf("progress lines:\n%s", b.String())
	}
}
