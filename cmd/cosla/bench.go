package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cosla/cosla/internal/lab/adapters"
	"github.com/cosla/cosla/internal/lab/bench"
	"github.com/cosla/cosla/internal/lab/driver"
	"github.com/cosla/cosla/internal/lab/report"
	"github.com/cosla/cosla/internal/lab/workload"
)

// workloadFlags are the flags that say the YCSB workload of `bench` and
// `bench compare`.
type workloadFlags struct {
	name      string
	props     stringList
	valueSize int
	records   uint64
}

func (wf *workloadFlags) add(fs *flag.FlagSet) {
	fs.StringVar(&wf.name, "workload", "b", "YCSB core workload: a-f, or a workload property file")
	fs.Var(&wf.props, "prop", "NAME=VALUE: set a workload property, as YCSB's -p does; repeatable (a write-only run: --workload a --prop readproportion=0 --prop updateproportion=1)")
	fs.IntVar(&wf.valueSize, "value-size", 0, "bytes per value: sets fieldcount=1 and fieldlength to it (default: the workload's fieldcount*fieldlength)")
	fs.Uint64Var(&wf.records, "records", 0, "records to load (default: the workload's recordcount)")
}

// properties resolves the workload, then applies --prop, --value-size
// and --records in that order.
func (wf *workloadFlags) properties() (workload.Properties, error) {
	p, err := workload.Resolve(wf.name)
	if err != nil {
		return p, usagef("--workload: %v", err)
	}
	for _, kv := range wf.props {
		name, value, ok := strings.Cut(kv, "=")
		if !ok {
			return p, usagef("--prop %q: want NAME=VALUE", kv)
		}
		if err := p.Set(strings.TrimSpace(name), strings.TrimSpace(value)); err != nil {
			return p, usagef("--prop: %v", err)
		}
	}
	switch {
	case wf.valueSize < 0:
		return p, usagef("--value-size must not be negative")
	case wf.valueSize > 0:
		p.FieldCount, p.FieldLength = 1, wf.valueSize
	}
	if wf.records > 0 {
		p.RecordCount = wf.records
	}
	if err := p.Validate(); err != nil {
		return p, usagef("--workload: %v", err)
	}
	return p, nil
}

// parseStrength parses a --read or --write value.
func parseStrength(flagName, v string) (bench.Strength, error) {
	s, err := bench.ParseStrength(v)
	if err != nil {
		return "", usagef("--%s %q: want weak or strong", flagName, v)
	}
	return s, nil
}

// flagsSet returns the names of the flags given on the command line.
func flagsSet(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// openSystems opens the named systems in order, saying so on stderr, and
// returns them with a function that closes them all; on an error it
// closes those it opened.
func openSystems(ctx context.Context, names []string, opts func(name string) bench.SystemOptions, stderr io.Writer) ([]bench.System, func(), error) {
	var systems []bench.System
	closeAll := func() {
		for _, s := range slices.Backward(systems) {
			if err := s.Close(); err != nil {
				fmt.Fprintf(stderr, "cosla bench: stopping %s: %v\n", s.Name(), err)
			}
		}
	}
	for _, name := range names {
		o := opts(name)
		switch {
		case len(o.Connect) > 0:
			fmt.Fprintf(stderr, "cosla bench: connecting to %s at %s\n", name, strings.Join(o.Connect, ","))
		case o.ClientConfig != "" && name == bench.SystemCosla:
			fmt.Fprintf(stderr, "cosla bench: using the cosla cluster of %s\n", o.ClientConfig)
		case o.ClusterDir != "" && name == bench.SystemCosla:
			fmt.Fprintf(stderr, "cosla bench: using the cosla cluster in %s\n", o.ClusterDir)
		default:
			fmt.Fprintf(stderr, "cosla bench: starting %s in %s\n", name, filepath.Join(o.Dir, name+"-*"))
		}
		s, err := bench.OpenSystem(ctx, name, o)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		systems = append(systems, s)
	}
	return systems, closeAll, nil
}

// serversDir returns dir, or, when it is empty, a new temporary directory
// that remove removes.
func serversDir(dir string) (_ string, remove func(), err error) {
	if dir != "" {
		return dir, func() {}, nil
	}
	tmp, err := os.MkdirTemp("", "cosla-bench-")
	if err != nil {
		return "", nil, err
	}
	return tmp, func() { os.RemoveAll(tmp) }, nil
}

// benchFlags are the flags of cosla bench.
type benchFlags struct {
	client                                             clientFlags
	wf                                                 workloadFlags
	target, connect, read, write, bound, metricsListen string
	clients                                            int
	duration                                           time.Duration
	operations, seed                                   uint64
	load                                               bool
}

func (b *benchFlags) add(fs *flag.FlagSet) {
	addClientFlags(fs, &b.client, true)
	b.client.levels.add(fs, true, true)
	fs.Lookup("dir").Usage = "directory of the store: of the running cluster for target cosla; for the others, where their servers start (default: a temporary directory, removed afterwards)"
	fs.StringVar(&b.target, "target", bench.SystemCosla, "store: "+strings.Join(bench.SystemNames(), ", "))
	fs.StringVar(&b.connect, "connect", "", "comma-separated addresses of the store's servers that you run, used instead of starting its own ("+connectHelp()+")")
	fs.StringVar(&b.read, "read", "", "read strength: weak or strong, mapped to the store's own read option (default: weak; on cosla, --sla and --strategy)")
	fs.StringVar(&b.write, "write", "weak", "write strength: weak or strong, mapped to the store's own write option (cosla's Puts are always durable)")
	b.wf.add(fs)
	fs.IntVar(&b.clients, "clients", 1, "concurrent clients")
	fs.DurationVar(&b.duration, "duration", 30*time.Second, "stop the run phase after this long")
	fs.Uint64Var(&b.operations, "operations", 0, "stop after this many operations (default: the workload's operationcount)")
	fs.BoolVar(&b.load, "load", true, "insert the records before the run phase")
	fs.Uint64Var(&b.seed, "seed", 1, "seed of the operation sequence")
	fs.StringVar(&b.bound, "bound", "", "target cosla: bound every Put and Get (dConssandra): immediate, unbounded or a duration such as 50ms; Gets go to the nearest replica, Puts are staged there")
	fs.StringVar(&b.metricsListen, "metrics-listen", "", "serve the cosla client's Prometheus metrics (SLA shares, RTT and staleness per replica) at http://ADDR/metrics during the run; an ADDR without a host (:9464) is on loopback")
}

// benchDoc is the help of cosla bench.
const benchDoc = `Runs a YCSB core workload against a store and prints latency percentiles per operation,
throughput, and the CPU of the run phase (this process, which is the client; the store's servers
it started; the machine); --json for machines. Reads are Gets, updates and inserts Puts.

--target cosla (the default) runs against the local cluster (--dir, default that of cosla
cluster up), or a cluster on several hosts (--config, see cosla cluster plan), from one client
site, its Gets under --sla and --strategy, or with --bound every Put and Get bounded
(dConssandra: at the nearest replica, answered within the bound). redis, etcd and postgres
start their servers on loopback in --dir (default: a temporary directory, removed afterwards)
and stop them at the end, or use the servers at --connect; cosla-nofsync starts a one-site
cluster that never fsyncs. --read and --write weak|strong pick each store's own options:

  target          weak read           strong read       weak write     strong write
  cosla           eventual (closest)  strong (primary)  durable        durable
  cosla-nofsync   eventual (closest)  strong (primary)  no-fsync       no-fsync
  redis           replica             primary           async          wait
  etcd            serializable        linearizable      linearizable   linearizable
  postgres        standby             primary           async          sync

The output names the options used.`

// benchRun is a checked bench command line: the strengths, the workload
// and the store to open.
type benchRun struct {
	read, write bench.Strength
	workload    *workload.Workload
	system      bench.SystemOptions
}

func runBench(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "compare" {
		return runBenchCompare(args[1:], stdout, stderr)
	}
	fs := newCommand("bench", "cosla bench [flags]\n       cosla bench compare [flags]   (run \"cosla bench compare -h\")", benchDoc, stderr)
	var b benchFlags
	b.add(fs)
	if err := parseArgs(fs, args, noOperands); err != nil {
		return err
	}
	set := flagsSet(fs)
	if err := b.checkTarget(set); err != nil {
		return err
	}
	r, err := b.run(set)
	if err != nil {
		return err
	}
	dir := ""
	if set["dir"] {
		dir = b.client.dir
	}
	if b.target != bench.SystemCosla {
		var removeDir func()
		if r.system.Dir, removeDir, err = serversDir(dir); err != nil {
			return err
		}
		defer removeDir()
	}
	ctx, cancel := interruptible()
	defer cancel()
	res, err := b.runOn(ctx, r, stderr)
	if err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return emit(stdout, b.client.jsonOut, res, func() error { return res.WriteText(stdout) })
}

// checkTarget checks the flags against --target; set are the flags given.
func (b *benchFlags) checkTarget(set map[string]bool) error {
	if err := b.client.check(); err != nil {
		return err
	}
	if err := bench.CheckNames([]string{b.target}); err != nil {
		return usagef("--target: %v", err)
	}
	if b.clients < 1 || b.clients > bench.MaxClients {
		return usagef("--clients must be between 1 and %d", bench.MaxClients)
	}
	isCosla := b.target == bench.SystemCosla || b.target == bench.SystemCoslaNoFsync
	if isCosla && b.connect != "" {
		return usagef("--connect is for %s; cosla is reached through --dir or --config", adapters.StoreNames())
	}
	if !isCosla && b.metricsListen != "" {
		return usagef("--metrics-listen serves a cosla client's metrics: it is for targets %s and %s", bench.SystemCosla, bench.SystemCoslaNoFsync)
	}
	for _, name := range []string{"config", "sla", "strategy", "site", "table", "read-level", "write-level", "cpq", "delay", "read-repair", "bound"} {
		if set[name] && b.target != bench.SystemCosla {
			return usagef("--%s is for target cosla", name)
		}
	}
	if set["read"] && (set["sla"] || set["strategy"]) {
		return usagef("--read replaces --sla and --strategy: give one or the other")
	}
	return nil
}

// run checks the rest of the flags and returns the run they ask for.
func (b *benchFlags) run(set map[string]bool) (benchRun, error) {
	var r benchRun
	bound, err := parseBound(b.bound)
	if err != nil {
		return r, err
	}
	if bound != 0 && (b.client.levels.set() || set["strategy"] || set["read"] || set["write"]) {
		return r, usagef("--bound goes to the nearest replica alone: not with --strategy, --read, --write or the level flags")
	}
	if b.read != "" {
		if r.read, err = parseStrength("read", b.read); err != nil {
			return r, err
		}
	}
	if r.write, err = parseStrength("write", b.write); err != nil {
		return r, err
	}
	props, err := b.wf.properties()
	if err != nil {
		return r, err
	}
	if b.operations > 0 {
		props.OperationCount = b.operations
	}
	if r.workload, err = workload.New(props); err != nil {
		return r, usagef("--workload: %v", err)
	}
	agreement, strategy, err := coslaGets(&b.client)
	if err != nil {
		return r, err
	}
	levels, err := b.client.levels.levels()
	if err != nil {
		return r, err
	}
	f := &b.client
	r.system = bench.SystemOptions{Connect: splitList(b.connect), Site: f.site, Table: f.table, OpenTimeout: f.timeout}
	if b.target == bench.SystemCosla {
		r.system.ClusterDir, r.system.ClientConfig, r.system.Cosla = f.dir, f.config, driver.CoslaOf(agreement, strategy, levels, bound)
	}
	return r, nil
}

// runOn opens the store and runs the workload on it.
func (b *benchFlags) runOn(ctx context.Context, r benchRun, stderr io.Writer) (bench.Result, error) {
	systems, closeAll, err := openSystems(ctx, []string{b.target}, func(string) bench.SystemOptions { return r.system }, stderr)
	if err != nil {
		return bench.Result{}, err
	}
	defer closeAll()
	loop := driver.NewLoop(time.Now())
	tg, opts, err := systems[0].Plan(ctx, loop, r.read, r.write)
	if err != nil {
		return bench.Result{}, err
	}
	if b.metricsListen != "" {
		addr, stop, err := bench.ServeMetrics(b.metricsListen, tg)
		if err != nil {
			return bench.Result{}, err
		}
		defer stop()
		fmt.Fprintf(stderr, "cosla bench: client metrics at http://%s/metrics\n", addr)
	}
	opts.Clients, opts.Duration, opts.Load, opts.Seed = b.clients, b.duration, b.load, b.seed
	opts.ProgressInterval = 5 * time.Second
	opts.Progress = func(p bench.Progress) { fmt.Fprintf(stderr, "  %s\n", p) }
	at := ""
	if opts.Site != "" {
		at = " at site " + opts.Site
	}
	fmt.Fprintf(stderr, "cosla bench: workload %s, %d clients%s; %s; seed %d\n", b.wf.name, b.clients, at, opts.Setup, b.seed)
	return bench.Run(ctx, loop, tg, r.workload, opts)
}

// connectHelp says what --connect takes for each store.
func connectHelp() string {
	var parts []string
	for _, s := range adapters.Stores() {
		parts = append(parts, s.Name+": "+s.Addrs)
	}
	return strings.Join(parts, "; ")
}

// compareFlags are the flags of cosla bench compare.
type compareFlags struct {
	wf                                                           workloadFlags
	targets, clients, reads, write, dir, clusterDir, site, table string
	config, out                                                  string
	connect                                                      stringList
	duration, timeout                                            time.Duration
	operations, seed                                             uint64
	repeat, clientProcs                                          int
	load, jsonOut                                                bool
}

func (c *compareFlags) add(fs *flag.FlagSet) {
	fs.StringVar(&c.targets, "targets", "cosla,redis,etcd", "comma-separated stores, compared in order; the ratios are the first's to each other ("+strings.Join(bench.SystemNames(), ", ")+")")
	c.wf.add(fs)
	fs.StringVar(&c.clients, "clients", "1", "comma-separated client counts: a table each")
	fs.StringVar(&c.reads, "read", "weak", "comma-separated read strengths, weak and/or strong, each run on every store at every count")
	fs.StringVar(&c.write, "write", "weak", "write strength of every run: weak or strong")
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "length of each run")
	fs.Uint64Var(&c.operations, "operations", 0, "stop each run after this many operations (default: --duration alone)")
	fs.IntVar(&c.repeat, "repeat", 1, fmt.Sprintf("make every run this many times, in interleaved rounds, and report medians with min-max (1 to %d)", bench.MaxRepeat))
	fs.IntVar(&c.clientProcs, "client-procs", 0, "run this process, the client of every store, on this many Go Ps (GOMAXPROCS; default: Go's, one per core); the servers it starts keep their own")
	fs.BoolVar(&c.load, "load", true, "insert the records into each store before its first run")
	fs.Uint64Var(&c.seed, "seed", 1, "seed of the operation sequence of every run")
	fs.StringVar(&c.dir, "dir", "", "directory to start the servers and cosla clusters in, a new DIR/NAME-* each (default: a temporary directory, removed afterwards)")
	fs.StringVar(&c.clusterDir, "cluster-dir", "", "directory of a running cosla cluster (cosla cluster up) for target cosla (default: start a one-site cluster)")
	fs.StringVar(&c.site, "site", "", "client site on --cluster-dir's cluster (default: its first site)")
	fs.StringVar(&c.table, "table", "", "table on --cluster-dir's cluster (default: the table it created)")
	fs.StringVar(&c.config, "config", "", "client config file of a running cosla cluster on several hosts (see cosla cluster plan), instead of --cluster-dir")
	fs.Var(&c.connect, "connect", "NAME=ADDRS: use the servers of store NAME that you run at the comma-separated ADDRS instead of starting them; repeatable ("+connectHelp()+")")
	fs.StringVar(&c.out, "out", "", "directory for report.md, report.html, "+report.BenchFileName+" and plots/ (a latency CDF per operation kind, throughput against clients)")
	fs.BoolVar(&c.jsonOut, "json", false, "print the comparison as JSON instead of text")
	fs.DurationVar(&c.timeout, "timeout", 30*time.Second, "give up opening a cosla client after this long")
}

// compareDoc is the help of cosla bench compare.
const compareDoc = `Runs one YCSB workload through the same driver on several stores, one run after another: for
each --clients count, for each --read strength, each of --targets. Each store is started once
(or reached at --connect) and stopped at the end; the records are loaded into each once. cosla
and cosla-nofsync are one-site clusters started here (a storage node, no emulated network;
cosla-nofsync never fsyncs), unless --cluster-dir (or --config) names a running one for cosla.

Prints a table per client count: a row per run with the store and the options its reads and
writes used (see "cosla bench -h"), ops/s, p50 and p99 latency per operation kind, the CPU of
the run phase in cores (the bench process, which is the client; the store's servers that it
started; the whole machine), and the first target's ratio to each other at the same read
strength. A warning under the table names a run whose client may have been the bottleneck: the
machine was at least 90% busy and the client used at least as much CPU as the store (as the
rest of the machine, for servers it did not start); another a run during which other work used
at least a quarter of the machine's cores.

--repeat N makes every run N times, in rounds: each round makes every run once, in the order
above, so that a change on the machine falls on every store alike. A row then shows the
medians, the least and greatest in parentheses ("33.4k (31.9-34.0k)"), and the ratios of the
medians. --json prints it all as JSON, every repeat's figures included; --out writes a report
of the medians.

--client-procs N runs this process, the client of every store alike, on N Go Ps. On a small
machine that the client shares with the servers, 1 leaves it one core's worth and keeps the
Go runtime from waking its goroutines on an idle core, which on some virtual machines costs
more than the request itself.`

func runBenchCompare(args []string, stdout, stderr io.Writer) error {
	fs := newCommand("bench compare", "cosla bench compare [flags]", compareDoc, stderr)
	var c compareFlags
	c.add(fs)
	if err := parseArgs(fs, args, noOperands); err != nil {
		return err
	}
	names := splitList(c.targets)
	if len(names) == 0 {
		return usagef("--targets names no store")
	}
	if err := bench.CheckNames(names); err != nil {
		return usagef("--targets: %v", err)
	}
	co, err := c.options(stderr)
	if err != nil {
		return err
	}
	if c.clientProcs > 0 {
		// The environment is untouched: the servers started keep Go's
		// default.
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(c.clientProcs))
	}
	addrs, err := c.connections(names)
	if err != nil {
		return err
	}
	serverDir, removeDir, err := serversDir(c.dir)
	if err != nil {
		return err
	}
	defer removeDir()
	ctx, cancel := interruptible()
	defer cancel()
	systems, closeAll, err := openSystems(ctx, names, func(name string) bench.SystemOptions {
		o := bench.SystemOptions{Dir: serverDir, Connect: addrs[name], OpenTimeout: c.timeout}
		if name == bench.SystemCosla {
			o.ClusterDir, o.ClientConfig, o.Site, o.Table = c.clusterDir, c.config, c.site, c.table
		}
		return o
	}, stderr)
	if err != nil {
		return err
	}
	defer closeAll()
	cmp, err := bench.Compare(ctx, systems, co)
	return c.report(stdout, stderr, cmp, err)
}

// options checks the runs' flags and returns the comparison's options.
func (c *compareFlags) options(stderr io.Writer) (bench.CompareOptions, error) {
	var clients []int
	for _, s := range splitList(c.clients) {
		n, err := strconv.Atoi(s)
		if err != nil {
			return bench.CompareOptions{}, usagef("--clients: %q is not a client count", s)
		}
		clients = append(clients, n)
	}
	var strengths []bench.Strength
	for _, r := range splitList(c.reads) {
		s, err := parseStrength("read", r)
		if err != nil {
			return bench.CompareOptions{}, err
		}
		strengths = append(strengths, s)
	}
	write, err := parseStrength("write", c.write)
	if err != nil {
		return bench.CompareOptions{}, err
	}
	props, err := c.wf.properties()
	if err != nil {
		return bench.CompareOptions{}, err
	}
	if c.repeat < 1 || c.repeat > bench.MaxRepeat {
		return bench.CompareOptions{}, usagef("--repeat must be between 1 and %d", bench.MaxRepeat)
	}
	if c.clientProcs < 0 {
		return bench.CompareOptions{}, usagef("--client-procs must be 0 (Go's default) or more, got %d", c.clientProcs)
	}
	co := bench.CompareOptions{Workload: props, Clients: clients, Reads: strengths, Write: write,
		Duration: c.duration, Operations: c.operations, Repeat: c.repeat, Load: c.load, Seed: c.seed, Log: stderr}
	co = co.EnsureDefaults()
	if err := co.Validate(); err != nil {
		return co, usagef("%v", err)
	}
	return co, nil
}

// connections checks --connect, --cluster-dir, --config, --site and
// --table against the stores named, and returns --connect's addresses by
// store.
func (c *compareFlags) connections(names []string) (map[string][]string, error) {
	addrs := map[string][]string{}
	for _, arg := range c.connect {
		name, list, ok := strings.Cut(arg, "=")
		switch {
		case !ok:
			return nil, usagef("--connect %q: want NAME=ADDRS", arg)
		case !slices.Contains(names, name):
			return nil, usagef("--connect %q: %s is not among --targets", arg, name)
		case name == bench.SystemCosla || name == bench.SystemCoslaNoFsync:
			return nil, usagef("--connect %q: cosla is reached through --cluster-dir or --config", arg)
		}
		addrs[name] = splitList(list)
	}
	switch {
	case (c.clusterDir != "" || c.config != "") && !slices.Contains(names, bench.SystemCosla):
		return nil, usagef("--cluster-dir and --config are for target cosla, which --targets lacks")
	case c.clusterDir != "" && c.config != "":
		return nil, usagef("--cluster-dir or --config: give one")
	case (c.site != "" || c.table != "") && c.clusterDir == "" && c.config == "":
		return nil, usagef("--site and --table choose on a running cluster: give --cluster-dir or --config")
	}
	return addrs, nil
}

// report writes --out's report and prints the comparison, whatever
// tables an interrupted or failed comparison (runErr) made.
func (c *compareFlags) report(stdout, stderr io.Writer, cmp bench.Comparison, runErr error) error {
	if runErr != nil && !errors.Is(runErr, context.Canceled) && len(cmp.Tables) == 0 {
		return runErr
	}
	if len(cmp.Tables) > 0 && c.out != "" {
		if err := report.WriteBench(c.out, cmp); err != nil {
			return errors.Join(runErr, err)
		}
		fmt.Fprintf(stderr, "cosla bench compare: wrote %s, %s, %s and %s\n", filepath.Join(c.out, "report.md"), filepath.Join(c.out, "report.html"),
			filepath.Join(c.out, report.BenchFileName), filepath.Join(c.out, "plots"))
	}
	perr := emit(stdout, c.jsonOut, cmp, func() error { return cmp.WriteText(stdout) })
	if runErr != nil && !errors.Is(runErr, context.Canceled) {
		return runErr
	}
	return perr
}
