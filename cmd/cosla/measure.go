package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cosla/cosla/internal/lab/adapters"
	mrun "github.com/cosla/cosla/internal/lab/measure/run"
	"github.com/cosla/cosla/internal/lab/report"
)

// splitList splits a comma-separated flag value, dropping empty entries
// and blanks around them: "" is no entries.
func splitList(v string) []string {
	var out []string
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// stringList is a repeatable flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

func runMeasureRun(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("measure run", stderr)
	target := fs.String("target", "", "store to measure: "+mrun.TargetNames()+" (required)")
	preset := fs.String("preset", "", "workload preset: simpledb (Wada 2.1.1; in the simulator also Wada 4.3's guessed SimpleDB)")
	var readOptions stringList
	fs.Var(&readOptions, "read-option", "read option, repeatable; the first is the weak one of the summary, the second the consistent one ("+mrun.OptionsHelp(false)+")")
	writeOption := fs.String("write-option", "", "write option ("+mrun.OptionsHelp(true)+")")
	writers := fs.Int("writers", 1, "writer clients")
	readers := fs.Int("readers", 1, "reader clients per read option")
	writeEvery := fs.Duration("write-every", 3*time.Second, "each writer's period (Wada: 3s)")
	readHz := fs.Float64("read-hz", 50, "each reader's rate (Wada: 50)")
	placement := fs.String("placement", "threads", "where roles run: thread (one loop writes then reads), threads or processes")
	keys := fs.String("keys", "", "one key, or two comma-separated keys X,Y for the two-element test (Wada 3.2); default a fresh key per run")
	duration := fs.Duration("duration", 5*time.Minute, "length of the run (virtual time in the simulator)")
	maxOps := fs.Int("max-ops", 1_000_000, "stop after this many operations")
	seed := fs.Uint64("seed", 1, "seed of a simulated run (and of a sweep's read/write choice)")
	out := fs.String("out", "", "directory for trace.jsonl, trace.csv and report.json (required)")
	jsonOut := fs.Bool("json", false, "print a JSON summary instead of the text report")
	clusterDir := fs.String("cluster-dir", defaultDir(), "directory of the local cluster (target cosla; $COSLA_DIR sets the default)")
	config := fs.String("config", "", "client config file of a cluster on several hosts (target cosla; see cosla cluster plan), instead of --cluster-dir")
	writerSite := fs.String("writer-site", "", "site of the writers (target cosla; default: the cluster's first site)")
	readerSite := fs.String("reader-site", "", "site of the readers (target cosla; default: the writers' site)")
	lag := fs.Duration("lag", 100*time.Millisecond, "replica lag of the in-memory store (target mem)")
	connect := fs.String("connect", "", "comma-separated addresses of "+adapters.StoreNames()+" servers you run, measured instead of servers started in DIR/servers (see Targets)")
	sweep := fs.String("sweep", "", "comma-separated client counts: run a load sweep (Wada 4.1) instead")
	clientHz := fs.Float64("client-hz", 1, "sweep: each client's request rate")
	readFraction := fs.Float64("read-fraction", 0.99, "sweep: fraction of reads")
	var levels levelFlags
	levels.add(fs, true, true)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: cosla measure run --target T --out DIR [flags]")
		fmt.Fprintln(stderr, "\nRuns the consistency benchmark of Wada et al. (CIDR'11): writers write a key every --write-every,")
		fmt.Fprintln(stderr, "readers read it at --read-hz with each --read-option, and every operation is recorded in")
		fmt.Fprintln(stderr, "DIR/trace.jsonl as it completes. Prints the analyses (fresh reads against time since the write,")
		fmt.Fprintln(stderr, "monotonic reads, read-your-writes, Gamma, latency); --json prints a summary.")
		fmt.Fprintln(stderr, "\nTargets:")
		for _, t := range mrun.Targets() {
			fmt.Fprintf(stderr, "  %-9s %s\n", t.Name, t.About)
		}
		fmt.Fprintln(stderr, "\nFlags:")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return usagef("unexpected argument %q", fs.Arg(0))
	case *target == "":
		return usagef("--target is required (%s)", mrun.TargetNames())
	case *out == "":
		return usagef("--out is required")
	case levels.set() && *target != "cosla" && *target != "sim":
		return usagef("--read-level, --write-level, --cpq, --delay and --read-repair are for targets cosla and sim")
	}
	policy, err := levels.levels()
	if err != nil {
		return err
	}
	w := mrun.Workload{Writers: *writers, Readers: *readers, WriteEvery: *writeEvery, ReadHz: *readHz,
		ReadOptions: readOptions, WriteOption: *writeOption, Placement: mrun.Placement(*placement),
		Duration: *duration, MaxOps: *maxOps}
	if *preset != "" {
		p, err := mrun.Preset(*preset)
		if err != nil {
			return usagef("--preset: %v", err)
		}
		// Flags given explicitly override the preset.
		override := map[string]func(){
			"writers": func() { p.Writers = w.Writers }, "readers": func() { p.Readers = w.Readers },
			"write-every": func() { p.WriteEvery = w.WriteEvery }, "read-hz": func() { p.ReadHz = w.ReadHz },
			"read-option": func() { p.ReadOptions = w.ReadOptions }, "write-option": func() { p.WriteOption = w.WriteOption },
			"placement": func() { p.Placement = w.Placement }, "duration": func() { p.Duration = w.Duration },
			"max-ops": func() { p.MaxOps = w.MaxOps },
		}
		fs.Visit(func(f *flag.Flag) {
			if apply, ok := override[f.Name]; ok {
				apply()
			}
		})
		w = p
	}
	if *keys != "" {
		w.Keys = strings.Split(*keys, ",")
	}
	w.Policy = policy.Policy()
	c := mrun.Config{Target: *target, Preset: *preset, Workload: w, Seed: *seed, Out: *out, Connect: splitList(*connect),
		ClusterDir: *clusterDir, ClientConfig: *config, WriterSite: *writerSite, ReaderSite: *readerSite, Lag: *lag,
		ClientHz: *clientHz, ReadFraction: *readFraction, Spawn: spawnWorker(stderr), Log: stderr,
		Command: "cosla measure run " + strings.Join(args, " ")}
	if *sweep != "" {
		for _, f := range strings.Split(*sweep, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				return usagef("--sweep: %q is not a client count", f)
			}
			c.Sweep = append(c.Sweep, n)
		}
	}
	if err := c.EnsureDefaults().Validate(); err != nil {
		return usagef("%v", err)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	rf, err := mrun.Measure(ctx, c)
	if err != nil {
		return err
	}
	if *jsonOut {
		return printJSON(stdout, rf.Wada)
	}
	return rf.WriteText(stdout, *preset == "simpledb" && *target == "sim")
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// workerProcess is a started `cosla measure worker`.
type workerProcess struct{ cmd *exec.Cmd }

func (p workerProcess) Wait() error { return p.cmd.Wait() }

// spawnWorker starts this binary as `cosla measure worker` for one role.
func spawnWorker(stderr io.Writer) func(context.Context, mrun.WorkerConfig) (mrun.Process, error) {
	return func(ctx context.Context, w mrun.WorkerConfig) (mrun.Process, error) {
		self, err := os.Executable()
		if err != nil {
			return nil, err
		}
		specJSON, err := json.Marshal(w.Spec)
		if err != nil {
			return nil, err
		}
		cmd := exec.CommandContext(ctx, self, "measure", "worker", "--target", w.Target, "--cluster-dir", w.ClusterDir, "--config", w.ClientConfig,
			"--site", w.Site, "--connect", strings.Join(w.Connect, ","), "--spec", string(specJSON),
			"--start-us", strconv.FormatInt(w.StartUS, 10), "--trace", w.TracePath)
		cmd.Stderr = stderr
		// Interrupted, a worker gets SIGINT and stops after its current op.
		cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
		cmd.WaitDelay = 10 * time.Second
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		return workerProcess{cmd}, nil
	}
}

// runMeasureWorker is one role of a run with --placement processes.
func runMeasureWorker(args []string, _ io.Writer, stderr io.Writer) error {
	fs := newFlags("measure worker", stderr)
	target := fs.String("target", "", "store: cosla, redis, etcd or postgres")
	connect := fs.String("connect", "", "comma-separated addresses of the store's servers, as measure run --connect takes them")
	clusterDir := fs.String("cluster-dir", defaultDir(), "directory of the local cluster")
	config := fs.String("config", "", "client config file of a cluster on several hosts, instead of --cluster-dir")
	site := fs.String("site", "", "site of the client")
	specJSON := fs.String("spec", "", "the role, as JSON (mrun.RoleSpec)")
	startUS := fs.Int64("start-us", 0, "CLOCK_REALTIME microseconds at which the run's schedule starts")
	tracePath := fs.String("trace", "", "file for the role's trace")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: cosla measure worker --target T --spec JSON --start-us N --trace FILE [flags]\n\nRuns one role (a writer or a reader) of a cosla measure run with --placement processes,\nwhich starts it; not meant to be run by hand.\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	w := mrun.WorkerConfig{Target: *target, Connect: splitList(*connect), ClusterDir: *clusterDir, ClientConfig: *config, Site: *site,
		StartUS: *startUS, TracePath: *tracePath}
	if err := json.Unmarshal([]byte(*specJSON), &w.Spec); err != nil {
		return usagef("--spec: %v", err)
	}
	if *tracePath == "" || *startUS <= 0 {
		return usagef("--trace and --start-us are required")
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	return mrun.Worker(ctx, w)
}

func runMeasureAnalyze(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("measure analyze", stderr)
	jsonOut := fs.Bool("json", false, "print the report (with the Wada summary) as JSON")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: cosla measure analyze [--json] TRACE\n\nReruns every analysis of `cosla measure run` on a JSONL trace.\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("want one trace file")
	}
	rf, err := mrun.AnalyzeFile(fs.Arg(0))
	if err != nil {
		return err
	}
	if *jsonOut {
		return printJSON(stdout, rf)
	}
	return rf.WriteText(stdout, false)
}

func runMeasureReport(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("measure report", stderr)
	out := fs.String("out", "", "directory for report.md, report.html and plots/ (required)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: cosla measure report --out OUT DIR...\n\nCompares the runs that `cosla measure run --out DIR` wrote, side by side: a Markdown and an\nHTML report with P(fresh) against time since the write (Wada Fig. 2), latency and Gamma plots.\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *out == "" || fs.NArg() == 0 {
		return usagef("want --out OUT and at least one run directory")
	}
	var runs []report.Run
	for _, dir := range fs.Args() {
		r, err := report.Load(dir)
		if err != nil {
			return err
		}
		runs = append(runs, r)
	}
	if err := report.Write(*out, runs); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s and %s, plots in %s\n", filepath.Join(*out, "report.md"), filepath.Join(*out, "report.html"), filepath.Join(*out, "plots"))
	return nil
}
