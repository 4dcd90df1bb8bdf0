package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
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

// measureFlags are the flags of cosla measure run.
type measureFlags struct {
	target, preset, writeOption, placement, keys, out          string
	clusterDir, config, writerSite, readerSite, connect, sweep string
	readOptions                                                stringList
	writers, readers, maxOps                                   int
	writeEvery, duration, lag                                  time.Duration
	readHz, clientHz, readFraction                             float64
	seed                                                       uint64
	jsonOut                                                    bool
	levels                                                     levelFlags
}

func (m *measureFlags) add(fs *flag.FlagSet) {
	fs.StringVar(&m.target, "target", "", "store to measure: "+mrun.TargetNames()+" (required)")
	fs.StringVar(&m.preset, "preset", "", "workload preset: simpledb (Wada 2.1.1; in the simulator also Wada 4.3's guessed SimpleDB)")
	fs.Var(&m.readOptions, "read-option", "read option, repeatable; the first is the weak one of the summary, the second the consistent one ("+mrun.OptionsHelp(false)+")")
	fs.StringVar(&m.writeOption, "write-option", "", "write option ("+mrun.OptionsHelp(true)+")")
	fs.IntVar(&m.writers, "writers", 1, "writer clients")
	fs.IntVar(&m.readers, "readers", 1, "reader clients per read option")
	fs.DurationVar(&m.writeEvery, "write-every", 3*time.Second, "each writer's period (Wada: 3s)")
	fs.Float64Var(&m.readHz, "read-hz", 50, "each reader's rate (Wada: 50)")
	fs.StringVar(&m.placement, "placement", "threads", "where roles run: thread (one loop writes then reads), threads or processes")
	fs.StringVar(&m.keys, "keys", "", "one key, or two comma-separated keys X,Y for the two-element test (Wada 3.2); default a fresh key per run")
	fs.DurationVar(&m.duration, "duration", 5*time.Minute, "length of the run (virtual time in the simulator)")
	fs.IntVar(&m.maxOps, "max-ops", 1_000_000, "stop after this many operations")
	fs.Uint64Var(&m.seed, "seed", 1, "seed of a simulated run (and of a sweep's read/write choice)")
	fs.StringVar(&m.out, "out", "", "directory for trace.jsonl, trace.csv and report.json (required)")
	fs.BoolVar(&m.jsonOut, "json", false, "print a JSON summary instead of the text report")
	fs.StringVar(&m.clusterDir, "cluster-dir", defaultDir(), "directory of the local cluster (target cosla; $COSLA_DIR sets the default)")
	fs.StringVar(&m.config, "config", "", "client config file of a cluster on several hosts (target cosla; see cosla cluster plan), instead of --cluster-dir")
	fs.StringVar(&m.writerSite, "writer-site", "", "site of the writers (target cosla; default: the cluster's first site)")
	fs.StringVar(&m.readerSite, "reader-site", "", "site of the readers (target cosla; default: the writers' site)")
	fs.DurationVar(&m.lag, "lag", 100*time.Millisecond, "replica lag of the in-memory store (target mem)")
	fs.StringVar(&m.connect, "connect", "", "comma-separated addresses of "+adapters.StoreNames()+" servers you run, measured instead of servers started in DIR/servers (see Targets)")
	fs.StringVar(&m.sweep, "sweep", "", "comma-separated client counts: run a load sweep (Wada 4.1) instead")
	fs.Float64Var(&m.clientHz, "client-hz", 1, "sweep: each client's request rate")
	fs.Float64Var(&m.readFraction, "read-fraction", 0.99, "sweep: fraction of reads")
	m.levels.add(fs, true, true)
}

// measureRunDoc is the help of cosla measure run, with its targets.
func measureRunDoc() string {
	var b strings.Builder
	b.WriteString(`Runs the consistency benchmark of Wada et al. (CIDR'11): writers write a key every --write-every,
readers read it at --read-hz with each --read-option, and every operation is recorded in
DIR/trace.jsonl as it completes. Prints the analyses (fresh reads against time since the write,
monotonic reads, read-your-writes, Gamma, latency); --json prints a summary.

Targets:`)
	for _, t := range mrun.Targets() {
		fmt.Fprintf(&b, "\n  %-9s %s", t.Name, t.About)
	}
	return b.String()
}

func runMeasureRun(args []string, stdout, stderr io.Writer) error {
	fs := newCommand("measure run", "cosla measure run --target T --out DIR [flags]", measureRunDoc(), stderr)
	var m measureFlags
	m.add(fs)
	if err := parseArgs(fs, args, noOperands); err != nil {
		return err
	}
	c, err := m.runConfig(fs, stderr)
	if err != nil {
		return err
	}
	c.Command = "cosla measure run " + strings.Join(args, " ")
	ctx, cancel := interruptible()
	defer cancel()
	rf, err := mrun.Measure(ctx, c)
	if err != nil {
		return err
	}
	return emit(stdout, m.jsonOut, rf.Wada, func() error { return rf.WriteText(stdout, m.preset == "simpledb" && m.target == "sim") })
}

// runConfig checks the flags and returns the run they ask for.
func (m *measureFlags) runConfig(fs *flag.FlagSet, stderr io.Writer) (mrun.Config, error) {
	switch {
	case m.target == "":
		return mrun.Config{}, usagef("--target is required (%s)", mrun.TargetNames())
	case m.out == "":
		return mrun.Config{}, usagef("--out is required")
	case m.levels.set() && m.target != "cosla" && m.target != "sim":
		return mrun.Config{}, usagef("--read-level, --write-level, --cpq, --delay and --read-repair are for targets cosla and sim")
	}
	policy, err := m.levels.levels()
	if err != nil {
		return mrun.Config{}, err
	}
	w, err := m.workload(fs)
	if err != nil {
		return mrun.Config{}, err
	}
	w.Policy = policy.Policy()
	c := mrun.Config{Target: m.target, Preset: m.preset, Workload: w, Seed: m.seed, Out: m.out, Connect: splitList(m.connect),
		ClusterDir: m.clusterDir, ClientConfig: m.config, WriterSite: m.writerSite, ReaderSite: m.readerSite, Lag: m.lag,
		ClientHz: m.clientHz, ReadFraction: m.readFraction, Spawn: spawnWorker(stderr), Log: stderr}
	if m.sweep != "" {
		for _, f := range strings.Split(m.sweep, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				return c, usagef("--sweep: %q is not a client count", f)
			}
			c.Sweep = append(c.Sweep, n)
		}
	}
	if err := c.EnsureDefaults().Validate(); err != nil {
		return c, usagef("%v", err)
	}
	return c, nil
}

// workload is the run's workload: the flags', or --preset's with the
// flags given explicitly overriding it.
func (m *measureFlags) workload(fs *flag.FlagSet) (mrun.Workload, error) {
	w := mrun.Workload{Writers: m.writers, Readers: m.readers, WriteEvery: m.writeEvery, ReadHz: m.readHz,
		ReadOptions: m.readOptions, WriteOption: m.writeOption, Placement: mrun.Placement(m.placement),
		Duration: m.duration, MaxOps: m.maxOps}
	if m.preset != "" {
		p, err := mrun.Preset(m.preset)
		if err != nil {
			return w, usagef("--preset: %v", err)
		}
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
	if m.keys != "" {
		w.Keys = strings.Split(m.keys, ",")
	}
	return w, nil
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
	fs := newCommand("measure worker", "cosla measure worker --target T --spec JSON --start-us N --trace FILE [flags]",
		"Runs one role (a writer or a reader) of a cosla measure run with --placement processes,\nwhich starts it; not meant to be run by hand.", stderr)
	target := fs.String("target", "", "store: cosla, redis, etcd or postgres")
	connect := fs.String("connect", "", "comma-separated addresses of the store's servers, as measure run --connect takes them")
	clusterDir := fs.String("cluster-dir", defaultDir(), "directory of the local cluster")
	config := fs.String("config", "", "client config file of a cluster on several hosts, instead of --cluster-dir")
	site := fs.String("site", "", "site of the client")
	specJSON := fs.String("spec", "", "the role, as JSON (mrun.RoleSpec)")
	startUS := fs.Int64("start-us", 0, "CLOCK_REALTIME microseconds at which the run's schedule starts")
	tracePath := fs.String("trace", "", "file for the role's trace")
	if err := parseArgs(fs, args, anyOperands); err != nil {
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
	ctx, cancel := interruptible()
	defer cancel()
	return mrun.Worker(ctx, w)
}

func runMeasureAnalyze(args []string, stdout, stderr io.Writer) error {
	fs := newCommand("measure analyze", "cosla measure analyze [--json] TRACE", "Reruns every analysis of `cosla measure run` on a JSONL trace.", stderr)
	jsonOut := fs.Bool("json", false, "print the report (with the Wada summary) as JSON")
	if err := parseArgs(fs, args, operandCount(1, 1, "want one trace file")); err != nil {
		return err
	}
	rf, err := mrun.AnalyzeFile(fs.Arg(0))
	if err != nil {
		return err
	}
	return emit(stdout, *jsonOut, rf, func() error { return rf.WriteText(stdout, false) })
}

func runMeasureReport(args []string, stdout, stderr io.Writer) error {
	fs := newCommand("measure report", "cosla measure report --out OUT DIR...", "Compares the runs that `cosla measure run --out DIR` wrote, side by side: a Markdown and an\n"+
		"HTML report with P(fresh) against time since the write (Wada Fig. 2), latency and Gamma plots.", stderr)
	out := fs.String("out", "", "directory for report.md, report.html and plots/ (required)")
	if err := parseArgs(fs, args, anyOperands); err != nil {
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
