// Command cosla is the one binary of the cosla store: it serves a site's
// storage nodes, runs a whole geo-replicated cluster on one machine, reads
// and writes under consistency-based SLAs, benchmarks, and reruns the
// papers' evaluations in the simulator.
//
// Usage:
//
//	cosla demo [--json]
//	cosla cluster up [--preset pileus4 | --topology FILE] [--dir DIR] [--port-base N]
//	cosla cluster status|down [--dir DIR]
//	cosla cluster link set A B [--latency D] [--jitter D] [--down|--up]
//	cosla cluster plan --host SITE=ADDRESS ... [--dir DIR]
//	cosla cluster init --config FILE
//	cosla cluster cert client NAME [--dir DIR]
//	cosla cluster failover [--table T] [--tablet N] --to SITE [--json]
//	cosla cluster replica add|remove [--table T] [--tablet N] --node SITE/NAME [--json]
//	cosla put [--site S] [--bound B] KEY VALUE
//	cosla put [--site S] --value-file FILE|- KEY
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
//	cosla version
//
// Flags may come before or after the operands. COSLA_DIR, if set, is the
// default --dir of the commands that use a local cluster. The exit code is
// 0 when done, 1 when the store or the network failed, 2 on bad input
// (checked before anything is sent) and 3 when an SLA was not met or a
// read-test-write's test failed (see exitCode).
//
// Run "cosla help" for details.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

// command is a command or a group of subcommands.
type command struct {
	name, summary string
	// run runs the command with the arguments after its name; nil for a
	// group, which only routes to subs.
	run func(args []string, stdout, stderr io.Writer) error
	// subs are the subcommands, picked by the first argument; a command
	// with run too (bench) runs itself when no sub matches.
	subs []command
	// hidden commands are left out of the help: measure worker is run
	// by measure run itself.
	hidden bool
}

func commands() []command {
	return []command{
		{name: "demo", summary: "start a local geo-replicated cluster and compare Pileus with fixed strategies on it", run: runDemo},
		{name: "cluster", summary: "run a multi-site cluster on this machine, or plan one on several hosts", subs: []command{
			{name: "up", summary: "start a cluster on this machine (up --preset pileus4)", run: runClusterUp},
			{name: "down", summary: "stop the cluster, keeping its data", run: runClusterDown},
			{name: "status", summary: "show the sites, their addresses, tablets, high timestamps, lag and links", run: runClusterStatus},
			{name: "link", summary: "change the emulated network between two sites", subs: []command{
				{name: "set", summary: "set a link's latency and jitter, or cut and heal it (link set A B --latency 400ms)", run: runClusterLink},
			}},
			{name: "plan", summary: "plan a cluster whose sites run on their own hosts (plan --host SITE=ADDRESS ...)", run: runClusterPlan},
			{name: "init", summary: "create the table of a planned cluster once every site runs", run: runClusterInit},
			{name: "failover", summary: "move a tablet's primary to another site with no write lost (failover --table T --to SITE)", run: runClusterFailover},
			{name: "replica", summary: "change a tablet's replicas", subs: []command{
				{name: "add", summary: "add a secondary, which catches up from the primary (replica add --table T --node SITE/NAME)", run: runClusterReplicaAdd},
				{name: "remove", summary: "remove a secondary (replica remove --table T --node SITE/NAME)", run: runClusterReplicaRemove},
			}},
			{name: "cert", summary: "issue certificates from the cluster's authority", subs: []command{
				{name: "client", summary: "issue a client a certificate of its own (cert client NAME)", run: runClusterCertClient},
			}},
		}},
		{name: "put", summary: "write a key (put KEY VALUE, put --value-file FILE KEY)", run: runPut},
		{name: "get", summary: "read a key under an SLA (get --sla shopping-cart --site china KEY)", run: runGet},
		{name: "rtw", summary: "write a key only if a key holds a given value, or none (rtw [--bound B] TESTKEY EXPECT WRITEKEY VALUE)", run: runRTW},
		{name: "gettx", summary: "read keys of a causal table as one causally consistent snapshot (gettx KEY...)", run: runGetTx},
		{name: "session", summary: "run scripts of operations in one session", subs: []command{
			{name: "run", summary: "run a script of puts, gets and sleeps in one session (session run FILE)", run: runSessionRun},
		}},
		{name: "bench", summary: "run a YCSB workload against cosla, Redis, etcd or PostgreSQL (bench --workload b --clients 50), or compare them", run: runBench, subs: []command{
			{name: "compare", summary: "run one workload on several stores and compare them side by side", run: runBenchCompare},
		}},
		{name: "serve", summary: "host one site's storage nodes (serve --config FILE)", run: runServe},
		{name: "experiment", summary: "run a scenario file or shipped experiment and write tables, plots and a report", subs: []command{
			{name: "list", summary: "list the shipped experiments", run: runExperimentList},
			{name: "run", summary: "run a shipped experiment or a scenario file (run pileus-table1)", run: runExperimentRun},
		}},
		{name: "measure", summary: "measure the consistency a store delivers, Wada-style", subs: []command{
			{name: "run", summary: "run the benchmark against a store (run --target sim --preset simpledb --out DIR)", run: runMeasureRun},
			{name: "analyze", summary: "rerun every analysis on a trace (analyze TRACE)", run: runMeasureAnalyze},
			{name: "report", summary: "compare runs side by side in a report (report --out OUT DIR...)", run: runMeasureReport},
			{name: "worker", summary: "one role of a run with --placement processes", run: runMeasureWorker, hidden: true},
		}},
		{name: "sla", summary: "show or check an SLA", subs: []command{
			{name: "show", summary: "print an SLA's subSLAs (show NAME|FILE|TEXT)", run: runSLAShow},
			{name: "check", summary: "validate an SLA file, naming the bad field (check FILE)", run: runSLACheck},
		}},
		{name: "chaos", summary: "kill, partition and pause a local cluster's sites under load, then check for lost Puts, convergence and the guarantees", run: runChaos},
		{name: "version", summary: "print the version and the source revision of this binary", run: runVersion},
	}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs the command line args and returns the exit code (see exitCode).
func run(args []string, stdout, stderr io.Writer) int {
	root := command{name: "cosla", summary: "a geo-replicated key-value store with consistency-based SLAs", subs: commands()}
	path, err := dispatch(root, nil, args, stdout, stderr)
	return reportError(stderr, strings.Join(path, " "), err)
}

// dispatch routes args to the command they name under c, whose path
// (the names after "cosla") is path, and returns the path of the command
// that ran and its error. A group without a subcommand, or with an
// unknown one, is a usage error that prints the group's help on stderr;
// -h, --help and help print it on stdout.
func dispatch(c command, path, args []string, stdout, stderr io.Writer) ([]string, error) {
	if len(c.subs) > 0 && len(args) > 0 {
		for _, sub := range c.subs {
			if sub.name == args[0] {
				return dispatch(sub, append(path, sub.name), args[1:], stdout, stderr)
			}
		}
	}
	if c.run != nil {
		return path, c.run(args, stdout, stderr)
	}
	switch {
	case len(args) == 0:
		groupHelp(stderr, c, path)
		return path, usagef("want a command: %s", strings.Join(subNames(c), ", "))
	case args[0] == "-h" || args[0] == "--help" || args[0] == "help":
		groupHelp(stdout, c, path)
		return path, nil
	}
	groupHelp(stderr, c, path)
	return path, usagef("unknown command %q (want %s)", args[0], strings.Join(subNames(c), ", "))
}

// subNames are the names of c's subcommands that the help shows.
func subNames(c command) []string {
	var names []string
	for _, sub := range c.subs {
		if !sub.hidden {
			names = append(names, sub.name)
		}
	}
	return names
}

// groupHelp prints the help of a group of commands: what it does and its
// subcommands.
func groupHelp(w io.Writer, c command, path []string) {
	name := strings.Join(append([]string{"cosla"}, path...), " ")
	fmt.Fprintf(w, "%s: %s\n\nUsage: %s <command> [arguments]\n\nCommands:\n", name, c.summary, name)
	for _, sub := range c.subs {
		if !sub.hidden {
			fmt.Fprintf(w, "  %-10s %s\n", sub.name, sub.summary)
		}
	}
	fmt.Fprintf(w, "\nRun \"%s <command> -h\" for a command's flags.\n", name)
}

// newCommand returns the flag set of the command "cosla name". Its help
// (-h) is the usage line "Usage: synopsis", the doc, and the flags, if
// the command has any.
func newCommand(name, synopsis, doc string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("cosla "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { printHelp(stderr, fs, synopsis, doc) }
	return fs
}

// printHelp prints a command's help: see newCommand.
func printHelp(w io.Writer, fs *flag.FlagSet, synopsis, doc string) {
	fmt.Fprintf(w, "Usage: %s\n\n%s\n", synopsis, doc)
	hasFlags := false
	fs.VisitAll(func(*flag.Flag) { hasFlags = true })
	if hasFlags {
		fmt.Fprintln(w, "\nFlags:")
		fs.PrintDefaults()
	}
}

// parseArgs parses args, flags before or after the operands (see
// interleave), turning flag errors into usage errors, then checks the
// operands with operands (noOperands, operandCount).
func parseArgs(fs *flag.FlagSet, args []string, operands func(*flag.FlagSet) error) error {
	if err := fs.Parse(interleave(fs, args)); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	return operands(fs)
}

// noOperands refuses any operand.
func noOperands(fs *flag.FlagSet) error {
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// operandCount wants from least to most operands (most < 0: any number)
// and says want otherwise.
func operandCount(least, most int, want string) func(*flag.FlagSet) error {
	return func(fs *flag.FlagSet) error {
		if fs.NArg() < least || (most >= 0 && fs.NArg() > most) {
			return usageError{errors.New(want)}
		}
		return nil
	}
}

// anyOperands leaves the operands to the command.
func anyOperands(*flag.FlagSet) error { return nil }

// interruptible returns a context that an interrupt or SIGTERM cancels,
// for the commands that run until done or stopped.
func interruptible() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// clockLines returns a progress callback that prints each line on w after
// the time of day.
func clockLines(w io.Writer) func(line string) {
	return func(line string) { fmt.Fprintf(w, "%s %s\n", time.Now().Format("15:04:05"), line) }
}

// emit prints a command's result: v as indented JSON when asJSON, else
// text.
func emit(w io.Writer, asJSON bool, v any, text func() error) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	return text()
}

// emitLine prints v as one line of JSON when asJSON, else text: the form
// of a command that prints a record per operation.
func emitLine(w io.Writer, asJSON bool, v any, text func() error) error {
	if asJSON {
		return json.NewEncoder(w).Encode(v)
	}
	return text()
}
