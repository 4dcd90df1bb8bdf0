package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/cosla/cosla/internal/experiment"
)

func runExperiment(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usagef("want a subcommand: experiment list | experiment run NAME|FILE")
	}
	switch args[0] {
	case "list":
		if len(args) > 1 {
			return usagef("experiment list takes no arguments")
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
	case "run":
		return runExperimentRun(args[1:], stdout, stderr)
	}
	return usagef("unknown subcommand %q (want list or run)", args[0])
}

// errClusterMode is returned for --mode cluster, which is not built yet.
var errClusterMode = errors.New("--mode cluster is not implemented yet; use --mode sim (or `cosla demo` for the Pileus tables on a local cluster)")

func runExperimentRun(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("experiment run", stderr)
	mode := fs.String("mode", "sim", "where to run: sim (deterministic simulator); cluster is not implemented yet")
	seed := fs.Uint64("seed", 1, "seed of the simulated run; the same seed gives the same results.json")
	out := fs.String("out", "", "output directory (default ./experiments/NAME-seedN)")
	scale := fs.Float64("scale", 1, "multiply the workload's operations or duration and the schedule by this")
	jsonOut := fs.Bool("json", false, "print results.json on stdout instead of the tables")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: cosla experiment run NAME|FILE [--mode sim] [--seed N] [--out DIR] [--json]")
		fmt.Fprintln(stderr, "\nRuns a scenario (a shipped one, see `cosla experiment list`, or a YAML file) and writes")
		fmt.Fprintln(stderr, "results.json, tables/*.csv, plots/*.png and *.svg and report.md into --out.\n\nFlags:")
		fs.PrintDefaults()
	}
	// Accept the scenario before or after the flags.
	var name string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, args = args[0], args[1:]
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if name == "" && fs.NArg() > 0 {
		name = fs.Arg(0)
		if fs.NArg() > 1 {
			return usagef("unexpected argument %q", fs.Arg(1))
		}
	} else if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	if name == "" {
		return usagef("name a scenario: cosla experiment run NAME|FILE (see cosla experiment list)")
	}
	switch *mode {
	case "sim":
	case "cluster":
		return errClusterMode
	default:
		return usagef("--mode %q: want sim or cluster", *mode)
	}
	if !(*scale > 0 && *scale <= 100) {
		return usagef("--scale must be in (0, 100], got %v", *scale)
	}
	s, err := experiment.Resolve(name)
	if err != nil {
		return err
	}
	dir := *out
	if dir == "" {
		dir = filepath.Join("experiments", fmt.Sprintf("%s-seed%d", s.Name, *seed))
	}
	command := fmt.Sprintf("cosla experiment run %s --mode sim --seed %d --out %s", name, *seed, dir)
	if *scale != 1 {
		command += fmt.Sprintf(" --scale %g", *scale)
	}
	fmt.Fprintf(stderr, "cosla experiment run %s: seed %d, mode sim, output %s\n", s.Name, *seed, dir)
	res, err := experiment.Run(s, experiment.RunOptions{
		Seed: *seed, Scale: *scale,
		Progress: func(done, total int, r experiment.RunResult) {
			fmt.Fprintf(stderr, "  [%3d/%d] %-22s %-8s %-8s utility %.3f  latency %.1f ms  (%d Gets, %.0fs virtual)\n",
				done, total, r.SLA, r.Client, r.Strategy, r.AvgUtility, r.AvgLatencyMS, r.Gets, r.VirtualS)
		},
	})
	if err != nil {
		return fmt.Errorf("%w\nreproduce with: %s", err, command)
	}
	files, err := experiment.Write(dir, s, res, experiment.WriteOptions{Command: command})
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "seed %d, trace hash %s; wrote %d files into %s (report.md, results.json, tables/, plots/)\n", *seed, res.TraceHash, len(files), dir)
	fmt.Fprintf(stderr, "reproduce with: %s\n", command)
	if *jsonOut {
		js, err := experiment.MarshalResult(res)
		if err != nil {
			return err
		}
		_, err = stdout.Write(js)
		return err
	}
	for _, t := range experiment.Tables(s, res) {
		fmt.Fprintf(stdout, "%s\n", t.Title)
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, strings.Join(t.Header, "\t")+"\t")
		for _, row := range t.Rows {
			cells := make([]string, len(row))
			for i, c := range row {
				cells[i] = c
				if c == "" && strings.HasSuffix(t.Header[i], "paper") {
					cells[i] = "-"
				}
			}
			fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintln(stdout)
	}
	return nil
}
