package main

import (
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/cosla/cosla/internal/lab/experiment"
	"github.com/cosla/cosla/internal/runtime/cluster"
)

func runDemo(args []string, stdout, stderr io.Writer) error {
	fs := newCommand("demo", "cosla demo [flags]", "Starts the pileus4 cluster on this machine (England primary, U.S. and India secondaries,\n"+
		"the WAN between them and China emulated), runs the shopping-cart and password-checking SLAs\nfrom the four client sites with Pileus and the Primary, Random and Closest strategies over\n"+
		"the network, prints what each delivered, and shuts the cluster down.", stderr)
	dir := fs.String("dir", filepath.Join(filepath.Dir(cluster.DefaultDir()), "demo"), "directory for the demo cluster (emptied first)")
	perSLA := fs.Duration("duration", 25*time.Second, "how long each SLA runs")
	pull := fs.Duration("pull-interval", 10*time.Second, "how often secondaries pull (the paper's 1 minute, scaled to the shorter run)")
	keys := fs.Int("keys", 1000, "number of keys, chosen with YCSB's zipfian distribution")
	sessionOps := fs.Int("session-ops", 100, "operations per session")
	seed := fs.Uint64("seed", 1, "seed of the clients' workloads")
	jsonOut := fs.Bool("json", false, "print results.json, as cosla experiment run --json")
	if err := parseArgs(fs, args, noOperands); err != nil {
		return err
	}
	if *perSLA <= 0 || *pull <= 0 || *keys <= 0 || *sessionOps <= 0 {
		return usagef("--duration, --pull-interval, --keys and --session-ops must be positive")
	}
	s, err := experiment.PileusTables()
	if err != nil {
		return err
	}
	s.Table.PullInterval, s.Workload.SessionOps = *pull, *sessionOps
	s.Cluster.TimeScale, s.Cluster.Duration, s.Cluster.Keys = 1, *perSLA, *keys
	s.Outputs = []string{experiment.OutUtility}
	ctx, cancel := interruptible()
	defer cancel()
	res, err := experiment.RunCluster(ctx, s, experiment.ClusterRunOptions{Dir: *dir, Seed: *seed, Progress: clockLines(stderr)})
	if err != nil {
		return err
	}
	if !*jsonOut {
		fmt.Fprintln(stdout, "Pileus on a local cluster (real TCP, emulated WAN); paper = the paper's Tables 1-2")
		fmt.Fprintln(stdout)
	}
	return printResult(stdout, s, res, *jsonOut)
}
