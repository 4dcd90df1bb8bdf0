package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cosla/cosla/internal/lab/experiment"
)

// TestExperimentClusterMode runs a scenario with one scheduled change on a
// local cluster and checks that the change reached the emulated WAN: every
// Get that started after it took at least the added round trip.
func TestExperimentClusterMode(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	r := coslaCmd(t, 3*time.Minute, "experiment", "run", filepath.Join("testdata", "experiment-cluster.yaml"),
		"--mode", "cluster", "--out", out)
	if r.code != 0 {
		t.Fatalf("%s", r)
	}
	data, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res experiment.Result
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	if res.Mode != "cluster" || len(res.Runs) != 2 {
		t.Fatalf("mode %q, %d runs; want cluster, 2 (pileus, primary)", res.Mode, len(res.Runs))
	}
	const added = 400 * time.Millisecond
	for _, run := range res.Runs {
		if len(run.Events) != 1 || !strings.Contains(run.Events[0].Description, "rtt now 401ms") {
			t.Fatalf("%s: events %+v, want one raising england-england to 401ms", run.Strategy, run.Events)
		}
		changed := run.Events[0].AtS
		var before, after int
		for _, p := range run.Timeline {
			rtt := time.Duration(p.RTTMS * float64(time.Millisecond))
			switch started := p.AtS - rtt.Seconds(); {
			case p.AtS < changed:
				before++
			case started > changed:
				after++
				if rtt < added || p.Utility > 0.25 {
					t.Errorf("%s: a Get started %.3fs after the change took %s with utility %.2f; want >= %s and <= 0.25",
						run.Strategy, started-changed, rtt, p.Utility, added)
				}
			}
		}
		if before == 0 || after == 0 {
			t.Errorf("%s: %d Gets before the change, %d started after it; want some of each", run.Strategy, before, after)
		}
	}
	report, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(report), "- mode: cluster") {
		t.Errorf("report.md does not say it ran on a cluster")
	}
	if _, err := os.Stat(filepath.Join(out, "cluster", "england", "serve.log")); err != nil {
		t.Errorf("the cluster's logs are not kept in --out/cluster: %v", err)
	}
}
