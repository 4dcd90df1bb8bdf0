package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/cosla/cosla/internal/experiment"
	"github.com/cosla/cosla/sla"
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
		fmt.Fprintln(stderr, "strategies.\n\nFlags:")
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
	fmt.Fprintf(stderr, "cosla sim pileus: seed %d\n", *seed)
	rows, hash, err := experiment.RunPileus(experiment.PileusOptions{
		Seed:     *seed,
		Sessions: *sessions,
		Progress: func(done, total int, row experiment.PileusRow) {
			fmt.Fprintf(stderr, "  [%2d/%d] %-17s %-8s %-8s utility %.3f\n", done, total, row.SLA, row.Client, row.Strategy, row.AvgUtility)
		},
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "seed %d, trace hash %016x; rerun with: cosla sim pileus --seed %d --sessions %d\n", *seed, hash, *seed, *sessions)
	if *jsonOut {
		enc := json.NewEncoder(stdout)
		for _, r := range rows {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return nil
	}
	printPileusTables(stdout, rows)
	return nil
}

func printPileusTables(w io.Writer, rows []experiment.PileusRow) {
	for i, r := range rows {
		if i == 0 || rows[i-1].SLA != r.SLA {
			if i > 0 {
				fmt.Fprintln(w)
			}
			agreement, _ := sla.Preset(r.SLA)
			fmt.Fprintf(w, "%s SLA: %s\n", r.SLA, agreement)
			tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
			printPileusGroup(tw, rows[i:], r.SLA)
			tw.Flush()
		}
	}
}

func printPileusGroup(tw *tabwriter.Writer, rows []experiment.PileusRow, slaName string) {
	header := []string{"client", "strategy", "avg utility", "paper"}
	for i := range rows[0].Met {
		header = append(header, fmt.Sprintf("met %d", i+1))
	}
	header = append(header, "unmet", "avg get ms")
	fmt.Fprintln(tw, strings.Join(header, "\t")+"\t")
	for _, r := range rows {
		if r.SLA != slaName {
			break
		}
		paper := ""
		if r.PaperUtility != nil {
			paper = fmt.Sprintf("%.2f", *r.PaperUtility)
		}
		cells := []string{r.Client, r.Strategy, fmt.Sprintf("%.3f ±%.3f", r.AvgUtility, r.UtilityStdErr), paper}
		for _, m := range r.Met {
			cells = append(cells, fmt.Sprintf("%.1f%%", 100*m))
		}
		cells = append(cells, fmt.Sprintf("%.1f%%", 100*r.Unmet), fmt.Sprintf("%.1f", r.AvgLatencyMS))
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
}
