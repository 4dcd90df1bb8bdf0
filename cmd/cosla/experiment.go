package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/cosla/cosla/internal/lab/experiment"
)

func runExperimentList(args []string, stdout, stderr io.Writer) error {
	fs := newCommand("experiment list", "cosla experiment list", "Lists the shipped experiments, each with what it reruns; run one with cosla experiment run NAME.", stderr)
	if err := parseArgs(fs, args, noOperands); err != nil {
		return err
	}
	presets, err := experiment.Presets()
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	for _, p := range presets {
		fmt.Fprintf(tw, "%s\t%s\n", p.Name, p.Description)
	}
	return tw.Flush()
}

func runExperimentRun(args []string, stdout, stderr io.Writer) error {
	fs := newCommand("experiment run", "cosla experiment run NAME|FILE [--mode sim|cluster] [--seed N] [--out DIR] [--scale X] [--json]",
		"Runs a scenario (a shipped one, see `cosla experiment list`, or a YAML file) and writes\n"+
			"results.json, tables/*.csv, plots/*.png and *.svg and report.md into --out. In cluster\n"+
			"mode the cluster's data and logs go into --out/cluster, and a scenario with a sweep also\n"+
			"runs in the simulator (as its cluster.sim models the cluster) for the report's curves.", stderr)
	mode := fs.String("mode", "sim", "where to run: sim (deterministic simulator, virtual time) or cluster (a local cluster of real processes, real time)")
	seed := fs.Uint64("seed", 1, "seed of the run; in sim mode the same seed gives the same results.json")
	out := fs.String("out", "", "output directory (default ./experiments/NAME-MODE-seedN)")
	scale := fs.Float64("scale", 0, "sim: multiply the workload's operations or duration, its warmup and the schedule by this (default 1);\ncluster: the time scale (default the scenario's cluster.time_scale); with active hours it compresses the day too\n(pileus-reconfig: 0.0025, a day in 3m36s of real time, each series on a fresh cluster)")
	jsonOut := fs.Bool("json", false, "print results.json on stdout instead of the tables")
	if err := parseArgs(fs, args, operandCount(1, -1, "name a scenario: cosla experiment run NAME|FILE (see cosla experiment list)")); err != nil {
		return err
	}
	if fs.NArg() > 1 {
		return usagef("unexpected argument %q", fs.Arg(1))
	}
	name := fs.Arg(0)
	if *mode != "sim" && *mode != "cluster" {
		return usagef("--mode %q: want sim or cluster", *mode)
	}
	if *scale != 0 && !(*scale > 0 && *scale <= 100) {
		return usagef("--scale must be in (0, 100], got %v", *scale)
	}
	s, err := experiment.Resolve(name)
	if err != nil {
		return err
	}
	dir := *out
	if dir == "" {
		dir = filepath.Join("experiments", fmt.Sprintf("%s-%s-seed%d", s.Name, *mode, *seed))
	}
	command := fmt.Sprintf("cosla experiment run %s --mode %s --seed %d --out %s", name, *mode, *seed, dir)
	if *scale != 0 {
		command += fmt.Sprintf(" --scale %g", *scale)
	}
	fmt.Fprintf(stderr, "cosla experiment run %s: seed %d, mode %s, output %s\n", s.Name, *seed, *mode, dir)
	var res *experiment.Result
	if *mode == "cluster" {
		res, err = runExperimentCluster(s, dir, *seed, *scale, stderr)
	} else {
		res, err = runExperimentSim(s, *seed, *scale, stderr)
	}
	if err != nil {
		return fmt.Errorf("%w\nreproduce with: %s", err, command)
	}
	files, err := experiment.Write(dir, s, res, experiment.WriteOptions{Command: command})
	if err != nil {
		return err
	}
	if res.Mode == "sim" {
		fmt.Fprintf(stderr, "seed %d, trace hash %s; ", *seed, res.TraceHash)
	}
	fmt.Fprintf(stderr, "wrote %d files into %s (report.md, results.json, tables/, plots/)\n", len(files), dir)
	fmt.Fprintf(stderr, "reproduce with: %s\n", command)
	return printResult(stdout, s, res, *jsonOut)
}

// printResult prints results.json, or with asJSON false the tables.
func printResult(stdout io.Writer, s *experiment.Scenario, res *experiment.Result, asJSON bool) error {
	if asJSON {
		js, err := experiment.MarshalResult(res)
		if err != nil {
			return err
		}
		_, err = stdout.Write(js)
		return err
	}
	return printTables(stdout, s, res)
}

// printTables prints the scenario's tables as aligned text, with "-" for
// the paper's numbers that did not survive.
func printTables(stdout io.Writer, s *experiment.Scenario, res *experiment.Result) error {
	for _, t := range experiment.Tables(s, res) {
		fmt.Fprintf(stdout, "%s\n", t.Title)
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, strings.Join(t.Header, "\t")+"\t")
		for i := range t.Rows {
			fmt.Fprintln(tw, strings.Join(t.Cells(i, "-"), "\t")+"\t")
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintln(stdout)
	}
	return nil
}

// printRunResult prints a run's progress line: a causal table's run
// (which has no SLA to deliver utility for) says where its reads went
// instead.
func printRunResult(stderr io.Writer, prefix string, r experiment.RunResult) {
	point := ""
	if r.Point != "" {
		point = r.Point + " "
	}
	if c := r.Causal; c != nil {
		fmt.Fprintf(stderr, "%s %s%-8s %-10s local %4.1f%%  restricted %4.1f%%  get %.1f ms  %.0f ops/s  (%d Gets, %d Puts, %.0fs)\n",
			prefix, point, r.Client, r.Strategy, c.LocalPct, c.RestrictedPct, c.GetLatencyMS.Mean, c.ThroughputOpsPerS, c.Gets, c.Puts, r.VirtualS)
		return
	}
	fmt.Fprintf(stderr, "%s %s%-22s %-8s %-14s utility %.3f  latency %.1f ms  %.0f ops/s  (%d Gets, %d Puts, %.0fs)\n",
		prefix, point, r.SLA, r.Client, r.Strategy, r.AvgUtility, r.AvgLatencyMS, r.ThroughputOpsPerS, r.Gets, r.Puts, r.VirtualS)
}

func runExperimentSim(s *experiment.Scenario, seed uint64, scale float64, stderr io.Writer) (*experiment.Result, error) {
	return experiment.Run(s, experiment.RunOptions{
		Seed: seed, Scale: scale,
		Progress: func(done, total int, r experiment.RunResult) {
			printRunResult(stderr, fmt.Sprintf("  [%3d/%d]", done, total), r)
		},
	})
}

// runExperimentCluster runs the scenario on a local cluster in dir/cluster;
// scale, if not 0, replaces the scenario's cluster.time_scale.
func runExperimentCluster(s *experiment.Scenario, dir string, seed uint64, scale float64, stderr io.Writer) (*experiment.Result, error) {
	if scale != 0 {
		s.Cluster.TimeScale = scale
	}
	ctx, cancel := interruptible()
	defer cancel()
	res, err := experiment.RunCluster(ctx, s, experiment.ClusterRunOptions{Dir: filepath.Join(dir, "cluster"), Seed: seed, Progress: clockLines(stderr)})
	if err != nil {
		return nil, err
	}
	for _, r := range res.Runs {
		printRunResult(stderr, " ", r)
	}
	if s.Sweep != nil {
		// The same sweep in the simulator, for the report's curves.
		fmt.Fprintf(stderr, "the same sweep in the simulator, seed %d:\n", seed)
		if res.Sim, err = runExperimentSim(s.ClusterModel(), seed, 1, stderr); err != nil {
			return nil, fmt.Errorf("simulator: %w", err)
		}
	}
	return res, nil
}
