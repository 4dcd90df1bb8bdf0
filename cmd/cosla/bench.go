package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
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

func runBench(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "compare" {
		return runBenchCompare(args[1:], stdout, stderr)
	}
	fs := newFlags("bench", stderr)
	var f clientFlags
	addClientFlags(fs, &f, true)
	f.levels.add(fs, true, true)
	fs.Lookup("dir").Usage = "directory of the store: of the running cluster for target cosla; for the others, where their servers start (default: a temporary directory, removed afterwards)"
	target := fs.String("target", bench.SystemCosla, "store: "+strings.Join(bench.SystemNames(), ", "))
	connect := fs.String("connect", "", "comma-separated addresses of the store's servers that you run, used instead of starting its own ("+connectHelp()+")")
	read := fs.String("read", "", "read strength: weak or strong, mapped to the store's own read option (default: weak; on cosla, --sla and --strategy)")
	write := fs.String("write", "weak", "write strength: weak or strong, mapped to the store's own write option (cosla's Puts are always durable)")
	var wf workloadFlags
	wf.add(fs)
	clients := fs.Int("clients", 1, "concurrent clients")
	duration := fs.Duration("duration", 30*time.Second, "stop the run phase after this long")
	operations := fs.Uint64("operations", 0, "stop after this many operations (default: the workload's operationcount)")
	load := fs.Bool("load", true, "insert the records before the run phase")
	seed := fs.Uint64("seed", 1, "seed of the operation sequence")
	boundFlag := fs.String("bound", "", "target cosla: bound every Put and Get (dConssandra): immediate, unbounded or a duration such as 50ms; Gets go to the nearest replica, Puts are staged there")
	metricsListen := fs.String("metrics-listen", "", "serve the cosla client's Prometheus metrics (SLA shares, RTT and staleness per replica) at http://ADDR/metrics during the run; an ADDR without a host (:9464) is on loopback")
	fs.Usage = func() {
		fmt.Fprintln(stderr, `Usage: cosla bench [flags]
       cosla bench compare [flags]   (run "cosla bench compare -h")

Runs a YCSB core workload against a store and prints latency percentiles per operation and
throughput; --json for machines. Reads are Gets, updates and inserts Puts.

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

The output names the options used.

Flags:`)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	if err := f.check(); err != nil {
		return err
	}
	if err := bench.CheckNames([]string{*target}); err != nil {
		return usagef("--target: %v", err)
	}
	if *clients < 1 || *clients > bench.MaxClients {
		return usagef("--clients must be between 1 and %d", bench.MaxClients)
	}
	set := flagsSet(fs)
	isCosla := *target == bench.SystemCosla || *target == bench.SystemCoslaNoFsync
	if isCosla && *connect != "" {
		return usagef("--connect is for %s; cosla is reached through --dir or --config", adapters.StoreNames())
	}
	if !isCosla && *metricsListen != "" {
		return usagef("--metrics-listen serves a cosla client's metrics: it is for targets %s and %s", bench.SystemCosla, bench.SystemCoslaNoFsync)
	}
	for _, name := range []string{"config", "sla", "strategy", "site", "table", "read-level", "write-level", "cpq", "delay", "read-repair", "bound"} {
		if set[name] && *target != bench.SystemCosla {
			return usagef("--%s is for target cosla", name)
		}
	}
	if set["read"] && (set["sla"] || set["strategy"]) {
		return usagef("--read replaces --sla and --strategy: give one or the other")
	}
	bound, err := parseBound(*boundFlag)
	if err != nil {
		return err
	}
	if bound != 0 && (f.levels.set() || set["strategy"] || set["read"] || set["write"]) {
		return usagef("--bound goes to the nearest replica alone: not with --strategy, --read, --write or the level flags")
	}
	var readStrength bench.Strength
	if *read != "" {
		var err error
		if readStrength, err = parseStrength("read", *read); err != nil {
			return err
		}
	}
	writeStrength, err := parseStrength("write", *write)
	if err != nil {
		return err
	}
	props, err := wf.properties()
	if err != nil {
		return err
	}
	if *operations > 0 {
		props.OperationCount = *operations
	}
	w, err := workload.New(props)
	if err != nil {
		return usagef("--workload: %v", err)
	}
	agreement, strategy, err := coslaGets(&f)
	if err != nil {
		return err
	}
	levels, err := f.levels.levels()
	if err != nil {
		return err
	}
	gets := driver.CoslaOf(agreement, strategy, levels, bound)
	o := bench.SystemOptions{Connect: splitList(*connect), Site: f.site, Table: f.table, OpenTimeout: f.timeout}
	removeDir := func() {}
	if *target == bench.SystemCosla {
		o.ClusterDir, o.ClientConfig, o.Cosla = f.dir, f.config, gets
	} else {
		dir := ""
		if set["dir"] {
			dir = f.dir
		}
		if o.Dir, removeDir, err = serversDir(dir); err != nil {
			return err
		}
	}
	defer removeDir()

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	systems, closeAll, err := openSystems(ctx, []string{*target}, func(string) bench.SystemOptions { return o }, stderr)
	if err != nil {
		return err
	}
	defer closeAll()
	loop := driver.NewLoop(time.Now())
	tg, opts, err := systems[0].Plan(ctx, loop, readStrength, writeStrength)
	if err != nil {
		return err
	}
	if *metricsListen != "" {
		addr, stop, err := bench.ServeMetrics(*metricsListen, tg)
		if err != nil {
			return err
		}
		defer stop()
		fmt.Fprintf(stderr, "cosla bench: client metrics at http://%s/metrics\n", addr)
	}
	opts.Clients, opts.Duration, opts.Load, opts.Seed = *clients, *duration, *load, *seed
	opts.ProgressInterval = 5 * time.Second
	opts.Progress = func(p bench.Progress) { fmt.Fprintf(stderr, "  %s\n", p) }
	at := ""
	if opts.Site != "" {
		at = " at site " + opts.Site
	}
	fmt.Fprintf(stderr, "cosla bench: workload %s, %d clients%s; %s; seed %d\n", wf.name, *clients, at, opts.Setup, *seed)
	res, err := bench.Run(ctx, loop, tg, w, opts)
	if err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	if f.jsonOut {
		return printJSON(stdout, res)
	}
	return res.WriteText(stdout)
}

// connectHelp says what --connect takes for each store.
func connectHelp() string {
	var parts []string
	for _, s := range adapters.Stores() {
		parts = append(parts, s.Name+": "+s.Addrs)
	}
	return strings.Join(parts, "; ")
}

func runBenchCompare(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench compare", stderr)
	targets := fs.String("targets", "cosla,redis,etcd", "comma-separated stores, compared in order; the ratios are the first's to each other ("+strings.Join(bench.SystemNames(), ", ")+")")
	var wf workloadFlags
	wf.add(fs)
	clientList := fs.String("clients", "1", "comma-separated client counts: a table each")
	reads := fs.String("read", "weak", "comma-separated read strengths, weak and/or strong, each run on every store at every count")
	write := fs.String("write", "weak", "write strength of every run: weak or strong")
	duration := fs.Duration("duration", 10*time.Second, "length of each run")
	operations := fs.Uint64("operations", 0, "stop each run after this many operations (default: --duration alone)")
	load := fs.Bool("load", true, "insert the records into each store before its first run")
	seed := fs.Uint64("seed", 1, "seed of the operation sequence of every run")
	dir := fs.String("dir", "", "directory to start the servers and cosla clusters in, a new DIR/NAME-* each (default: a temporary directory, removed afterwards)")
	clusterDir := fs.String("cluster-dir", "", "directory of a running cosla cluster (cosla cluster up) for target cosla (default: start a one-site cluster)")
	site := fs.String("site", "", "client site on --cluster-dir's cluster (default: its first site)")
	table := fs.String("table", "", "table on --cluster-dir's cluster (default: the table it created)")
	config := fs.String("config", "", "client config file of a running cosla cluster on several hosts (see cosla cluster plan), instead of --cluster-dir")
	var connect stringList
	fs.Var(&connect, "connect", "NAME=ADDRS: use the servers of store NAME that you run at the comma-separated ADDRS instead of starting them; repeatable ("+connectHelp()+")")
	out := fs.String("out", "", "directory for report.md, report.html, "+report.BenchFileName+" and plots/ (a latency CDF per operation kind, throughput against clients)")
	jsonOut := fs.Bool("json", false, "print the comparison as JSON instead of text")
	timeout := fs.Duration("timeout", 30*time.Second, "give up opening a cosla client after this long")
	fs.Usage = func() {
		fmt.Fprintln(stderr, `Usage: cosla bench compare [flags]

Runs one YCSB workload through the same driver on several stores, one run after another: for
each --clients count, for each --read strength, each of --targets. Each store is started once
(or reached at --connect) and stopped at the end; the records are loaded into each once. cosla
and cosla-nofsync are one-site clusters started here (a storage node, no emulated network;
cosla-nofsync never fsyncs), unless --cluster-dir (or --config) names a running one for cosla.

Prints a table per client count: a row per run with the store and the options its reads and
writes used (see "cosla bench -h"), ops/s, p50 and p99 latency per operation kind, and the first
target's ratio to each other at the same read strength. --json prints it all as JSON; --out
writes a report.

Flags:`)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	names := splitList(*targets)
	if len(names) == 0 {
		return usagef("--targets names no store")
	}
	if err := bench.CheckNames(names); err != nil {
		return usagef("--targets: %v", err)
	}
	var clients []int
	for _, c := range splitList(*clientList) {
		n, err := strconv.Atoi(c)
		if err != nil {
			return usagef("--clients: %q is not a client count", c)
		}
		clients = append(clients, n)
	}
	var strengths []bench.Strength
	for _, r := range splitList(*reads) {
		s, err := parseStrength("read", r)
		if err != nil {
			return err
		}
		strengths = append(strengths, s)
	}
	writeStrength, err := parseStrength("write", *write)
	if err != nil {
		return err
	}
	props, err := wf.properties()
	if err != nil {
		return err
	}
	addrs := map[string][]string{}
	for _, c := range connect {
		name, list, ok := strings.Cut(c, "=")
		switch {
		case !ok:
			return usagef("--connect %q: want NAME=ADDRS", c)
		case !slices.Contains(names, name):
			return usagef("--connect %q: %s is not among --targets", c, name)
		case name == bench.SystemCosla || name == bench.SystemCoslaNoFsync:
			return usagef("--connect %q: cosla is reached through --cluster-dir or --config", c)
		}
		addrs[name] = splitList(list)
	}
	switch {
	case (*clusterDir != "" || *config != "") && !slices.Contains(names, bench.SystemCosla):
		return usagef("--cluster-dir and --config are for target cosla, which --targets lacks")
	case *clusterDir != "" && *config != "":
		return usagef("--cluster-dir or --config: give one")
	case (*site != "" || *table != "") && *clusterDir == "" && *config == "":
		return usagef("--site and --table choose on a running cluster: give --cluster-dir or --config")
	}
	co := bench.CompareOptions{Workload: props, Clients: clients, Reads: strengths, Write: writeStrength,
		Duration: *duration, Operations: *operations, Load: *load, Seed: *seed, Log: stderr}
	co.EnsureDefaults()
	if err := co.Validate(); err != nil {
		return usagef("%v", err)
	}
	serverDir, removeDir, err := serversDir(*dir)
	if err != nil {
		return err
	}
	defer removeDir()

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	systems, closeAll, err := openSystems(ctx, names, func(name string) bench.SystemOptions {
		o := bench.SystemOptions{Dir: serverDir, Connect: addrs[name], OpenTimeout: *timeout}
		if name == bench.SystemCosla {
			o.ClusterDir, o.ClientConfig, o.Site, o.Table = *clusterDir, *config, *site, *table
		}
		return o
	}, stderr)
	if err != nil {
		return err
	}
	defer closeAll()
	c, err := bench.Compare(ctx, systems, co)
	if err != nil && !errors.Is(err, context.Canceled) && len(c.Tables) == 0 {
		return err
	}
	if len(c.Tables) > 0 && *out != "" {
		if werr := report.WriteBench(*out, c); werr != nil {
			return errors.Join(err, werr)
		}
		fmt.Fprintf(stderr, "cosla bench compare: wrote %s, %s, %s and %s\n", filepath.Join(*out, "report.md"), filepath.Join(*out, "report.html"),
			filepath.Join(*out, report.BenchFileName), filepath.Join(*out, "plots"))
	}
	var perr error
	if *jsonOut {
		perr = printJSON(stdout, c)
	} else {
		perr = c.WriteText(stdout)
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return perr
}
