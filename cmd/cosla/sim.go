package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/cosla/cosla/internal/experiment"
)

func runSim(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usagef("name an experiment: cosla sim pileus")
	}
	switch args[0] {
	case "pileus":
		return runSimPileus(args[1:], stdout, stderr)
	}
	return usagef("unknown experiment %q (known: pileus)", args[0])
}

func runSimPileus(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("sim pileus", stderr)
	seed := fs.Uint64("seed", 1, "seed of the simulated run; the same seed gives the same result")
	jsonOut := fs.Bool("json", false, "print one JSON object per row instead of tables")
	sessions := fs.Int("sessions", 20, "sessions of 400 operations each client runs per strategy")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: cosla sim pileus [flags]")
		fmt.Fprintln(stderr, "\nRuns the Pileus evaluation (section 5.1) in the simulator: primary in England, secondaries")
		fmt.Fprintln(stderr, "in the U.S. and India, a client in each of the U.S., England, India and China, for the")
		fmt.Fprintln(stderr, "shopping-cart and password-checking SLAs, with the Pileus, Primary, Random and Closest")
		fmt.Fprintln(stderr, "strategies. `cosla experiment run pileus-table1` (and table2) add plots, a report and the")
		fmt.Fprintln(stderr, "beyond-the-paper options.\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	if *sessions <= 0 {
		return usagef("--sessions must be positive, got %d", *sessions)
	}
	s, err := experiment.PileusTables()
	if err != nil {
		return err
	}
	s.Workload.Ops = *sessions * s.Workload.SessionOps
	fmt.Fprintf(stderr, "cosla sim pileus: seed %d\n", *seed)
	res, err := runExperimentSim(s, *seed, 1, stderr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "seed %d, trace hash %s; rerun with: cosla sim pileus --seed %d --sessions %d\n", *seed, res.TraceHash, *seed, *sessions)
	return printPileusTables(stdout, s, res, *jsonOut)
}

// printPileusTables prints one table per SLA, a row per client site and
// strategy with the paper's utility beside ours, or with asJSON one JSON
// object per row.
func printPileusTables(w io.Writer, s *experiment.Scenario, res *experiment.Result, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		for _, r := range res.Runs {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return nil
	}
	var tw *tabwriter.Writer
	for i, r := range res.Runs {
		if i == 0 || res.Runs[i-1].SLA != r.SLA {
			if i > 0 {
				if err := tw.Flush(); err != nil {
					return err
				}
				fmt.Fprintln(w)
			}
			fmt.Fprintf(w, "%s SLA: %s\n", r.SLA, r.SLAText)
			tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
			header := []string{"client", "strategy", "avg utility", "paper"}
			for j := range r.Met {
				header = append(header, fmt.Sprintf("met %d", j+1))
			}
			header = append(header, "unmet", "avg get ms", "gets")
			fmt.Fprintln(tw, strings.Join(header, "\t")+"\t")
		}
		paper := ""
		if v, ok := s.PaperUtility(r); ok {
			paper = fmt.Sprintf("%.2f", v)
		}
		cells := []string{r.Client, r.Strategy, fmt.Sprintf("%.3f ±%.3f", r.AvgUtility, r.UtilityStdErr), paper}
		for _, m := range r.Met {
			cells = append(cells, fmt.Sprintf("%.1f%%", 100*m))
		}
		cells = append(cells, fmt.Sprintf("%.1f%%", 100*r.Unmet), fmt.Sprintf("%.1f", r.AvgLatencyMS), fmt.Sprint(r.Gets))
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	if tw == nil {
		return nil
	}
	return tw.Flush()
}
