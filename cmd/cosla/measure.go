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
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cosla/cosla/internal/adapters"
	"github.com/cosla/cosla/internal/cluster"
	"github.com/cosla/cosla/internal/measure"
	mrun "github.com/cosla/cosla/internal/measure/run"
	"github.com/cosla/cosla/internal/report"
)

// measureStore is a store under measurement that the command must close.
type measureStore interface {
	mrun.Store
	Close() error
}

// externalStores start the external stores of internal/adapters (Redis
// primary and replica, a 3-member etcd, PostgreSQL primary and standby) on
// loopback in a directory, stopped by Close.
var externalStores = map[string]func(ctx context.Context, dir string) (measureStore, error){
	"redis": func(ctx context.Context, dir string) (measureStore, error) {
		s, err := adapters.StartRedis(ctx, dir)
		return adapted{s}, err
	},
	"etcd": func(ctx context.Context, dir string) (measureStore, error) {
		s, err := adapters.StartEtcd(ctx, dir)
		return adapted{s}, err
	},
	"postgres": func(ctx context.Context, dir string) (measureStore, error) {
		s, err := adapters.StartPostgres(ctx, dir)
		return adapted{s}, err
	},
}

// adapted turns an adapters.Store into a measureStore.
type adapted struct{ s adapters.Store }

func (a adapted) Name() string { return a.s.Name() }
func (a adapted) Close() error { return a.s.Close() }

func (a adapted) Write(ctx context.Context, key, value, option string) (mrun.Outcome, error) {
	rep, err := a.s.Write(ctx, key, value, option)
	return mrun.Outcome(rep), err
}

func (a adapted) Read(ctx context.Context, key, option string) (string, bool, mrun.Outcome, error) {
	v, found, rep, err := a.s.Read(ctx, key, option)
	return v, found, mrun.Outcome(rep), err
}

func runMeasure(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usagef("want a subcommand: measure run|analyze|report|worker")
	}
	switch args[0] {
	case "run":
		return runMeasureRun(args[1:], stdout, stderr)
	case "analyze":
		return runMeasureAnalyze(args[1:], stdout, stderr)
	case "report":
		return runMeasureReport(args[1:], stdout, stderr)
	case "worker":
		return runMeasureWorker(args[1:], stderr)
	case "-h", "--help", "help":
		fmt.Fprintln(stdout, "Usage: cosla measure run|analyze|report|worker [flags]\n\nRun \"cosla measure run -h\" for the benchmark's flags.")
		return nil
	}
	return usagef("unknown subcommand %q (want run, analyze, report or worker)", args[0])
}

// stringList is a repeatable flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

// measureTargets are the targets of measure run, for messages.
const measureTargets = "sim, mem, cosla, redis, etcd or postgres"

func runMeasureRun(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("measure run", stderr)
	target := fs.String("target", "", "store to measure: "+measureTargets+" (required)")
	preset := fs.String("preset", "", "workload preset: simpledb (Wada 2.1.1; in the simulator also Wada 4.3's guessed SimpleDB)")
	var readOptions stringList
	fs.Var(&readOptions, "read-option", "read option, repeatable; the first is the weak one of the summary, the second the consistent one (sim: eventual, consistent, strong, read-my-writes, pileus-<preset>)")
	writeOption := fs.String("write-option", "", "write option (redis: async or wait)")
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
	clusterDir := fs.String("cluster-dir", cluster.DefaultDir(), "directory of the local cluster (target cosla)")
	writerSite := fs.String("writer-site", "", "site of the writers (target cosla; default: the cluster's first site)")
	readerSite := fs.String("reader-site", "", "site of the readers (target cosla; default: the writers' site)")
	lag := fs.Duration("lag", 100*time.Millisecond, "replica lag of the in-memory store (target mem)")
	sweep := fs.String("sweep", "", "comma-separated client counts: run a load sweep (Wada 4.1) instead")
	clientHz := fs.Float64("client-hz", 1, "sweep: each client's request rate")
	readFraction := fs.Float64("read-fraction", 0.99, "sweep: fraction of reads")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: cosla measure run --target T --out DIR [flags]")
		fmt.Fprintln(stderr, "\nRuns the consistency benchmark of Wada et al. (CIDR'11): writers write a key every --write-every,")
		fmt.Fprintln(stderr, "readers read it at --read-hz with each --read-option, and every operation is recorded in")
		fmt.Fprintln(stderr, "DIR/trace.jsonl as it completes. Prints the analyses (fresh reads against time since the write,")
		fmt.Fprintln(stderr, "monotonic reads, read-your-writes, Gamma, latency); --json prints a summary. Target sim runs in the")
		fmt.Fprintln(stderr, "deterministic simulator (times are virtual); redis, etcd and postgres start servers in DIR/servers.")
		fmt.Fprintln(stderr, "\nFlags:")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch {
	case *target == "":
		return usagef("--target is required (%s)", measureTargets)
	case *out == "":
		return usagef("--out is required")
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
		for name, apply := range map[string]func(){
			"writers": func() { p.Writers = w.Writers }, "readers": func() { p.Readers = w.Readers },
			"write-every": func() { p.WriteEvery = w.WriteEvery }, "read-hz": func() { p.ReadHz = w.ReadHz },
			"read-option": func() { p.ReadOptions = w.ReadOptions }, "write-option": func() { p.WriteOption = w.WriteOption },
			"placement": func() { p.Placement = w.Placement }, "duration": func() { p.Duration = w.Duration },
			"max-ops": func() { p.MaxOps = w.MaxOps },
		} {
			if set[name] {
				apply()
			}
		}
		w = p
	}
	if *keys != "" {
		w.Keys = strings.Split(*keys, ",")
	} else if *target != "sim" {
		// A key no earlier run wrote: every key starts empty (measure:
		// the empty value is every key's initial state).
		w.Keys = []string{fmt.Sprintf("cosla-measure-%d", time.Now().UnixMicro())}
	}
	w.EnsureDefaults()
	if err := w.Validate(); err != nil {
		return usagef("%v", err)
	}
	var counts []int
	if *sweep != "" {
		for _, f := range strings.Split(*sweep, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 || n > mrun.MaxClients {
				return usagef("--sweep: %q is not a client count in [1, %d]", f, mrun.MaxClients)
			}
			counts = append(counts, n)
		}
		if *target == "sim" {
			return usagef("--sweep needs a live target: the simulator models no server load")
		}
	}
	if *target == "sim" {
		for _, o := range w.ReadOptions {
			if _, _, err := mrun.SimReadOption(o); err != nil {
				return usagef("--read-option: %v", err)
			}
		}
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	traceFile, err := os.Create(filepath.Join(*out, "trace.jsonl"))
	if err != nil {
		return err
	}
	defer traceFile.Close()
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	meta := map[string]string{
		"target": *target, "preset": *preset, "placement": string(w.Placement),
		"read_options": strings.Join(w.ReadOptions, ","), "write_option": w.WriteOption,
		"writers": strconv.Itoa(w.Writers), "readers": strconv.Itoa(w.Readers),
		"write_every": w.WriteEvery.String(), "read_hz": strconv.FormatFloat(w.ReadHz, 'g', -1, 64),
		"keys": strings.Join(w.Keys, ","), "duration": w.Duration.String(), "max_ops": strconv.Itoa(w.MaxOps),
		"command":    "cosla measure run " + strings.Join(args, " "),
		"started_at": time.Now().UTC().Format(time.RFC3339),
	}
	progress := func(p mrun.Progress) {
		fmt.Fprintf(stderr, "  %8.1fs  %d ops (%d writes, %d reads, %d failed)\n", p.Elapsed.Seconds(), p.Ops, p.Writes, p.Reads, p.Failed)
	}
	var ops []measure.Op
	var sweepResult *measure.SweepResult
	var seedOut *uint64
	switch *target {
	case "sim":
		fmt.Fprintf(stderr, "cosla measure: simulated run, seed %d: %s\n", *seed, w)
		res, err := mrun.Sim(mrun.SimOptions{Workload: w, Seed: *seed, Trace: traceFile, Progress: progress, ProgressEvery: 2 * time.Minute})
		if err != nil {
			return err
		}
		ops, seedOut = res.Ops, seed
		meta["seed"] = strconv.FormatUint(*seed, 10)
		meta["trace_hash"] = fmt.Sprintf("%016x", res.TraceHash)
		meta["topology"] = res.Topology.Name
		fmt.Fprintf(stderr, "seed %d, trace hash %016x; rerun with: cosla measure run %s\n", *seed, res.TraceHash, strings.Join(args, " "))
	default:
		store, writerStore, err := openMeasureStore(ctx, *target, *out, *clusterDir, *writerSite, *readerSite, *lag, w.Placement)
		if err != nil {
			return err
		}
		defer store.Close()
		if writerStore != nil {
			defer writerStore.Close()
		}
		meta["store"] = store.Name()
		if counts != nil {
			fmt.Fprintf(stderr, "cosla measure: load sweep of %s, clients %v, %g Hz each, %.0f%% reads, %s per point\n",
				store.Name(), counts, *clientHz, 100**readFraction, w.Duration)
			var inputs []measure.SweepInput
			ops, inputs, err = mrun.LoadSweep(ctx, mrun.SweepOptions{Store: store, Clients: counts, ClientHz: *clientHz,
				ReadFraction: *readFraction, ReadOptions: w.ReadOptions, WriteOption: w.WriteOption, Key: w.Keys[0],
				Duration: w.Duration, MaxOps: w.MaxOps, Seed: *seed, Trace: traceFile,
				Progress: func(p mrun.Progress) {
					fmt.Fprintf(stderr, "  %s: %d ops, %d failed, %.1fs\n", p.Run, p.Ops, p.Failed, p.Elapsed.Seconds())
				}})
			if err != nil {
				return err
			}
			sr := measure.Sweep(inputs)
			sweepResult = &sr
			meta["sweep"], meta["client_hz"], meta["read_fraction"] = *sweep, fmt.Sprint(*clientHz), fmt.Sprint(*readFraction)
			break
		}
		fmt.Fprintf(stderr, "cosla measure: %s: %s\n", store.Name(), w)
		lo := mrun.LiveOptions{Workload: w, Store: store, Trace: traceFile, Progress: progress,
			WorkDir: filepath.Join(*out, "workers")}
		if writerStore != nil {
			lo.WriterStore = writerStore
		}
		if w.Placement == mrun.PlacementProcesses {
			lo.Spawn = spawnWorker(*target, *clusterDir, *writerSite, *readerSite, connectAddrs(store), stderr)
		}
		ops, err = mrun.Live(ctx, lo)
		if err != nil {
			return err
		}
		if w.Placement == mrun.PlacementProcesses {
			// The workers wrote their own traces; the merged one replaces
			// what was streamed (nothing, for this placement).
			if err := rewriteTrace(traceFile, ops); err != nil {
				return err
			}
		}
	}
	if err := traceFile.Sync(); err != nil {
		return err
	}
	weak, strong := weakStrong(w.ReadOptions)
	rf, err := writeMeasureOutputs(*out, ops, meta, weak, strong, sweepResult)
	if err != nil {
		return err
	}
	rf.Wada.Target, rf.Wada.Seed = *target, seedOut
	fmt.Fprintf(stderr, "cosla measure: %d ops; wrote %s\n", len(ops), strings.Join([]string{
		filepath.Join(*out, "trace.jsonl"), filepath.Join(*out, "trace.csv"), filepath.Join(*out, "report.json")}, ", "))
	return printMeasure(stdout, rf, *jsonOut, *preset == "simpledb" && *target == "sim")
}

// reportFile is DIR/report.json: measure.Report's fields, the Wada
// summary, the sweep if any, and the run's metadata.
type reportFile struct {
	measure.Report
	Wada  *mrun.Summary        `json:"wada_summary,omitempty"`
	Sweep *measure.SweepResult `json:"sweep,omitempty"`
	Meta  map[string]string    `json:"meta,omitempty"`
}

func writeMeasureOutputs(dir string, ops []measure.Op, meta map[string]string, weak, strong string, sweep *measure.SweepResult) (*reportFile, error) {
	rep := measure.Analyze(ops, mrun.AnalysisConfig())
	s := mrun.Summarize(ops, rep, weak, strong)
	rf := &reportFile{Report: rep, Wada: &s, Sweep: sweep, Meta: meta}
	csvFile, err := os.Create(filepath.Join(dir, "trace.csv"))
	if err != nil {
		return nil, err
	}
	if err := measure.WriteCSV(csvFile, ops); err != nil {
		csvFile.Close()
		return nil, err
	}
	if err := csvFile.Close(); err != nil {
		return nil, err
	}
	data, err := json.MarshalIndent(rf, "", "  ")
	if err != nil {
		return nil, err
	}
	return rf, os.WriteFile(filepath.Join(dir, "report.json"), append(data, '\n'), 0o644)
}

// summaryJSON is what --json prints: the Wada summary and where the files
// are.
func printMeasure(w io.Writer, rf *reportFile, jsonOut, paper bool) error {
	if jsonOut {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rf.Wada)
	}
	if err := rf.Report.WriteText(w); err != nil {
		return err
	}
	if rf.Sweep != nil {
		fmt.Fprintln(w)
		if err := rf.Sweep.WriteText(w); err != nil {
			return err
		}
	}
	fmt.Fprintln(w)
	var ref *mrun.Summary
	if paper {
		ref = &mrun.PaperSimpleDB
	}
	return rf.Wada.WriteText(w, ref)
}

// weakStrong picks the summary's weak and consistent read options: a
// known pair when both are present, else the first two.
func weakStrong(options []string) (weak, strong string) {
	for _, pair := range [][2]string{{"eventual", "consistent"}, {"replica", "primary"}, {"serializable", "linearizable"}, {"standby", "primary"}} {
		if slices.Contains(options, pair[0]) && slices.Contains(options, pair[1]) {
			return pair[0], pair[1]
		}
	}
	if len(options) > 0 {
		weak = options[0]
	}
	if len(options) > 1 {
		strong = options[1]
	}
	return weak, strong
}

func rewriteTrace(f *os.File, ops []measure.Op) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	return measure.WriteJSONL(f, ops)
}

// openMeasureStore opens the store of a live target; writerStore is set
// when the writers run at another cosla site than the readers.
func openMeasureStore(ctx context.Context, target, out, clusterDir, writerSite, readerSite string, lag time.Duration, p mrun.Placement) (store, writerStore measureStore, err error) {
	switch target {
	case "mem":
		if p == mrun.PlacementProcesses {
			return nil, nil, usagef("--target mem lives in one process: use --placement thread or threads")
		}
		return memStore{mrun.NewLagStore(lag)}, nil, nil
	case "cosla":
		if readerSite == "" {
			readerSite = writerSite
		}
		reader, err := mrun.OpenCosla(ctx, clusterDir, readerSite, "")
		if err != nil {
			return nil, nil, err
		}
		if writerSite == readerSite || p == mrun.PlacementThread {
			return reader, nil, nil
		}
		writer, err := mrun.OpenCosla(ctx, clusterDir, writerSite, "")
		if err != nil {
			reader.Close()
			return nil, nil, err
		}
		return reader, writer, nil
	}
	start, ok := externalStores[target]
	switch {
	case !ok:
		return nil, nil, usagef("--target %q is not %s", target, measureTargets)
	}
	s, err := start(ctx, filepath.Join(out, "servers"))
	return s, nil, err
}

type memStore struct{ *mrun.LagStore }

func (memStore) Close() error { return nil }

// workerProcess is a started `cosla measure worker`.
type workerProcess struct{ cmd *exec.Cmd }

func (p workerProcess) Wait() error { return p.cmd.Wait() }

// connectAddrs lists the addresses a worker process dials to reach the
// external store this command started: Redis primary and replica, the etcd
// members, PostgreSQL primary and standby.
func connectAddrs(s measureStore) []string {
	a, ok := s.(adapted)
	if !ok {
		return nil
	}
	switch st := a.s.(type) {
	case *adapters.Redis:
		return []string{st.PrimaryAddr(), st.ReplicaAddr()}
	case *adapters.Etcd:
		return st.Endpoints()
	case *adapters.Postgres:
		return []string{st.PrimaryAddr(), st.StandbyAddr()}
	}
	return nil
}

// connectExternal connects a worker process to an external store that the
// parent command started, at the addresses connectAddrs gave.
func connectExternal(ctx context.Context, target string, addrs []string) (measureStore, error) {
	switch {
	case target == "redis" && len(addrs) == 2:
		s, err := adapters.ConnectRedis(addrs[0], addrs[1])
		return adapted{s}, err
	case target == "etcd" && len(addrs) > 0:
		s, err := adapters.ConnectEtcd(ctx, addrs)
		return adapted{s}, err
	case target == "postgres" && len(addrs) == 2:
		dsn := func(addr string) string { return "postgres://postgres@" + addr + "/postgres?sslmode=disable" }
		s, err := adapters.ConnectPostgres(ctx, dsn(addrs[0]), dsn(addrs[1]))
		return adapted{s}, err
	}
	return nil, usagef("--target %q with --connect %q: want redis (2 addresses), etcd (the members) or postgres (2 addresses)", target, strings.Join(addrs, ","))
}

// spawnWorker starts this binary as `cosla measure worker` for one role.
func spawnWorker(target, clusterDir, writerSite, readerSite string, connect []string, stderr io.Writer) func(context.Context, mrun.RoleSpec, int64, string) (mrun.Process, error) {
	return func(ctx context.Context, spec mrun.RoleSpec, startUS int64, tracePath string) (mrun.Process, error) {
		self, err := os.Executable()
		if err != nil {
			return nil, err
		}
		specJSON, err := json.Marshal(spec)
		if err != nil {
			return nil, err
		}
		site := readerSite
		if !spec.Read || site == "" {
			site = writerSite
		}
		cmd := exec.CommandContext(ctx, self, "measure", "worker", "--target", target, "--cluster-dir", clusterDir,
			"--site", site, "--connect", strings.Join(connect, ","), "--spec", string(specJSON),
			"--start-us", strconv.FormatInt(startUS, 10), "--trace", tracePath)
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
func runMeasureWorker(args []string, stderr io.Writer) error {
	fs := newFlags("measure worker", stderr)
	target := fs.String("target", "", "store: cosla, redis, etcd or postgres")
	connect := fs.String("connect", "", "comma-separated addresses of an external store's servers")
	clusterDir := fs.String("cluster-dir", cluster.DefaultDir(), "directory of the local cluster")
	site := fs.String("site", "", "site of the client")
	specJSON := fs.String("spec", "", "the role, as JSON (mrun.RoleSpec)")
	startUS := fs.Int64("start-us", 0, "CLOCK_REALTIME microseconds at which the run's schedule starts")
	tracePath := fs.String("trace", "", "file for the role's trace")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	var spec mrun.RoleSpec
	if err := json.Unmarshal([]byte(*specJSON), &spec); err != nil {
		return usagef("--spec: %v", err)
	}
	if *tracePath == "" || *startUS <= 0 {
		return usagef("--trace and --start-us are required")
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	var store measureStore
	var err error
	if *target == "cosla" {
		store, err = mrun.OpenCosla(ctx, *clusterDir, *site, "")
	} else {
		store, err = connectExternal(ctx, *target, strings.Split(*connect, ","))
	}
	if err != nil {
		return err
	}
	defer store.Close()
	f, err := os.Create(*tracePath)
	if err != nil {
		return err
	}
	_, err = mrun.Worker(ctx, store, spec, *startUS, f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
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
	f, err := os.Open(fs.Arg(0))
	if err != nil {
		return err
	}
	ops, err := measure.ReadJSONL(f)
	f.Close()
	if err != nil {
		return err
	}
	var options []string
	for _, op := range ops {
		if op.Kind == measure.KindRead && !slices.Contains(options, op.Option) {
			options = append(options, op.Option)
		}
	}
	weak, strong := weakStrong(options)
	rep := measure.Analyze(ops, mrun.AnalysisConfig())
	s := mrun.Summarize(ops, rep, weak, strong)
	rf := &reportFile{Report: rep, Wada: &s}
	if *jsonOut {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rf)
	}
	return printMeasure(stdout, rf, false, false)
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
