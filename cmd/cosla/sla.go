package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/cosla/cosla/sla"
)

func runSLAShow(args []string, stdout, stderr io.Writer) error {
	presets := strings.Join(sla.PresetNames(), ", ")
	fs := newCommand("sla show", "cosla sla show [--json] NAME|FILE|TEXT", "Prints an SLA's subSLAs, most preferred first, and its text form. The SLA is a preset\n("+
		presets+"), a YAML or text file, or SLA text such as \"strong 150ms 1; eventual 1s 0.5\".", stderr)
	jsonOut := fs.Bool("json", false, "print the SLA as JSON")
	if err := parseArgs(fs, args, operandCount(1, 1, "sla show takes one preset name, file or SLA text (presets: "+presets+")")); err != nil {
		return err
	}
	agreement, err := sla.Resolve(fs.Arg(0))
	if err != nil {
		return err
	}
	return emitLine(stdout, *jsonOut, slaJSON(agreement), func() error {
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "rank\tconsistency\tlatency\tutility")
		for i, sub := range agreement {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%v\n", i+1, sub.Consistency, latencyText(sub), sub.Utility)
		}
		tw.Flush()
		fmt.Fprintf(stdout, "\ntext form: %s\n", agreement)
		return nil
	})
}

func runSLACheck(args []string, stdout, stderr io.Writer) error {
	fs := newCommand("sla check", "cosla sla check FILE", "Validates an SLA file (YAML or the text format) and names the bad subSLA and field;\nexits 2 if it is invalid.", stderr)
	if err := parseArgs(fs, args, operandCount(1, 1, "sla check takes one file")); err != nil {
		return err
	}
	agreement, err := sla.Load(fs.Arg(0))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: ok, %d subSLAs: %s\n", fs.Arg(0), len(agreement), agreement)
	return nil
}

func latencyText(sub sla.SubSLA) string {
	if sub.Latency == sla.Unbounded {
		return "unbounded"
	}
	return sub.Latency.String()
}

type subSLAJSON struct {
	Rank        int     `json:"rank"`
	Consistency string  `json:"consistency"`
	Latency     string  `json:"latency"`
	Utility     float64 `json:"utility"`
}

func slaJSON(agreement sla.SLA) map[string]any {
	subs := make([]subSLAJSON, len(agreement))
	for i, sub := range agreement {
		subs[i] = subSLAJSON{Rank: i + 1, Consistency: sub.Consistency.String(), Latency: latencyText(sub), Utility: sub.Utility}
	}
	return map[string]any{"text": agreement.String(), "subslas": subs}
}
