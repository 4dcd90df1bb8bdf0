// Command cosla is the one binary of the cosla store: it serves a site's
// storage nodes, runs a whole geo-replicated cluster on one machine, reads
// and writes under consistency-based SLAs, benchmarks, and reruns the
// papers' evaluations in the simulator.
//
// Usage:
//
//	cosla demo [--json]
//	cosla cluster up [--preset pileus4 | --topology FILE] [--dir DIR]
//	cosla cluster status|down [--dir DIR]
//	cosla cluster link set A B [--latency D] [--jitter D] [--down|--up]
//	cosla cluster cert client NAME [--dir DIR]
//	cosla put [--site S] [--bound B] KEY VALUE
//	cosla get [--site S] [--sla SLA] [--strategy S] [--bound B] [--json] KEY
//	cosla rtw [--site S] [--bound B] [--json] TESTKEY EXPECT WRITEKEY VALUE
//	cosla gettx [--site S] [--json] KEY...
//	cosla session run [--site S] FILE
//	cosla bench [--target cosla|redis|etcd|postgres] [--workload a-f|FILE] [--clients N] [--duration D]
//	cosla bench compare [--targets cosla,redis,etcd] [--workload a-f|FILE] [--clients N,...] [--out DIR]
//	cosla measure run --target sim|cosla|redis|etcd|postgres [--connect ADDRS] --out DIR
//	cosla measure analyze TRACE
//	cosla measure report --out OUT DIR...
//	cosla serve --config FILE
//	cosla experiment list
//	cosla experiment run NAME|FILE [--mode sim|cluster] [--seed N] [--out DIR] [--json]
//	cosla sla show NAME|FILE|TEXT
//	cosla sla check FILE
//	cosla chaos [--faults all|kill,partition,pause] [--kills N] [--puts N] [--duration D] [--json]
//
// Run "cosla help" for details.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/cosla/cosla"
)

// Exit codes: 1 for failures, exitUsage for bad command lines, exitUnmet
// when a Get met none of its SLA's subSLAs.
const (
	exitUsage = 2
	exitUnmet = 3
)

type command struct {
	name    string
	summary string
	run     func(args []string, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		{"demo", "start a local geo-replicated cluster and compare Pileus with fixed strategies on it", runDemo},
		{"cluster", "run a multi-site cluster on this machine (cluster up|down|status|link set|cert client)", runCluster},
		{"put", "write a key on a local cluster (put KEY VALUE)", runPut},
		{"get", "read a key under an SLA (get --sla shopping-cart --site china KEY)", runGet},
		{"rtw", "write a key only if a key holds a given value, or none (rtw [--bound B] TESTKEY EXPECT WRITEKEY VALUE)", runRTW},
		{"gettx", "read keys of a causal table as one causally consistent snapshot (gettx KEY...)", runGetTx},
		{"session", "run a script of puts and gets in one session (session run FILE)", runSession},
		{"bench", "run a YCSB workload against cosla, Redis, etcd or PostgreSQL (bench --workload b --clients 50), or compare them (bench compare)", runBench},
		{"serve", "host one site's storage nodes (serve --config FILE)", runServe},
		{"experiment", "run a scenario file or shipped experiment and write tables, plots and a report (experiment list, experiment run pileus-table1)", runExperiment},
		{"measure", "measure the consistency a store delivers, Wada-style (measure run --target sim --preset simpledb --out DIR)", runMeasure},
		{"sla", "show or check an SLA (sla show NAME|FILE|TEXT, sla check FILE)", runSLA},
		{"chaos", "kill, partition and pause a local cluster's sites under load, then check for lost Puts, convergence and the guarantees (chaos --faults all --kills 10)", runChaos},
	}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stdout)
		if len(args) == 0 {
			return exitUsage
		}
		return 0
	}
	for _, c := range commands() {
		if c.name == args[0] {
			err := c.run(args[1:], stdout, stderr)
			switch {
			case err == nil:
				return 0
			case errors.Is(err, flag.ErrHelp):
				return 0
			case errors.As(err, new(usageError)):
				fmt.Fprintf(stderr, "cosla %s: %v\n", c.name, err)
				return exitUsage
			case errors.Is(err, cosla.ErrSLAUnmet):
				fmt.Fprintf(stderr, "cosla %s: %v\n", c.name, err)
				return exitUnmet
			default:
				fmt.Fprintf(stderr, "cosla %s: %v\n", c.name, err)
				return 1
			}
		}
	}
	fmt.Fprintf(stderr, "cosla: unknown command %q\n\n", args[0])
	usage(stderr)
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "cosla: a geo-replicated key-value store with consistency-based SLAs")
	fmt.Fprintln(w, "\nUsage: cosla <command> [arguments]\n\nCommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun \"cosla <command> -h\" for a command's flags.")
}

// usageError marks an error in the command line rather than in the work.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// newFlags returns a flag set that reports errors instead of exiting.
func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("cosla "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// parseFlags parses args, turning flag errors into usage errors.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err.Error()}
	}
	return nil
}
