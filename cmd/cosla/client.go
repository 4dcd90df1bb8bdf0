package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/cosla/cosla"
	"github.com/cosla/cosla/internal/runtime/cluster"
	"github.com/cosla/cosla/keyfmt"
	"github.com/cosla/cosla/sla"
)

// defaultGetSLA is the SLA of a Get that names none: the latest value when
// the primary answers within 5 s, else any value.
const defaultGetSLA = "strong 5s 1; eventual unbounded 0.5"

// defaultCausalSLA is the SLA of Gets of a causal table without --sla:
// causal consistency, which such a table always delivers (Karma).
const defaultCausalSLA = "causal unbounded 1"

// clientFlags are the flags every command that talks to a cluster takes.
type clientFlags struct {
	dir, config, site, table, slaSpec, strategy string
	jsonOut                                     bool
	timeout                                     time.Duration
	// levels are the CPQ flags, for the commands that add them.
	levels levelFlags
	// bound is --bound, for put, get and rtw (parseBound reads it).
	bound string
}

func addClientFlags(fs *flag.FlagSet, f *clientFlags, withSLA bool) {
	fs.StringVar(&f.dir, "dir", defaultDir(), "directory of the local cluster (see cosla cluster up; $COSLA_DIR sets the default)")
	fs.StringVar(&f.config, "config", "", "client config file of a cluster on several hosts (see cosla cluster plan), instead of --dir")
	fs.StringVar(&f.site, "site", "", "site the client runs at (default: the cluster's first site)")
	fs.StringVar(&f.table, "table", "", "table (default: the table the cluster created)")
	fs.BoolVar(&f.jsonOut, "json", false, "print JSON instead of text")
	fs.DurationVar(&f.timeout, "timeout", 30*time.Second, "give up after this long")
	if withSLA {
		fs.StringVar(&f.slaSpec, "sla", defaultGetSLA, "SLA of Gets: a preset name, a file or SLA text")
		fs.StringVar(&f.strategy, "strategy", "pileus", "replica choice: pileus, primary, random or closest")
	}
}

// clientSession is an open client, table and session for one command.
type clientSession struct {
	client   *cosla.Client
	table    *cosla.Table
	session  *cosla.Session
	sla      sla.SLA
	strategy cosla.Strategy
	site     string
}

// target is what the client flags name on a running cluster: the
// client's site and the addresses it dials from there, the SLA, strategy
// and table.
type target struct {
	config    cosla.Config // the client's, from the cluster
	site      string
	agreement sla.SLA
	strategy  cosla.Strategy
	table     string
}

// resolveTarget reads the cluster in f.dir, or the client config file
// f.config, and checks the flags against it, filling in the defaults.
func resolveTarget(f *clientFlags) (*target, error) {
	agreement, strategy, err := coslaGets(f)
	if err != nil {
		return nil, err
	}
	a, err := cluster.Reach(f.dir, f.config)
	if err != nil {
		return nil, err
	}
	tg := &target{site: cmp.Or(f.site, a.DefaultSite), table: cmp.Or(f.table, a.Table), agreement: agreement, strategy: strategy}
	if tg.table == "" {
		return nil, usagef("--table: %s names no table; give one", f.config)
	}
	if err := errors.Join(cosla.CheckName("--table", tg.table), cosla.CheckName("--site", tg.site)); err != nil {
		return nil, usageError{err}
	}
	nodes, err := a.Nodes(tg.site)
	if err != nil {
		return nil, usagef("--site: %w", err)
	}
	tg.config = cosla.Config{Site: tg.site, Nodes: nodes, TLS: a.TLS, Insecure: a.TLS == nil}
	return tg, nil
}

// coslaGets parses --sla and --strategy: the SLA and strategy of Gets,
// defaultGetSLA and pileus when not given.
func coslaGets(f *clientFlags) (sla.SLA, cosla.Strategy, error) {
	spec := f.slaSpec
	if spec == "" {
		spec = defaultGetSLA
	}
	agreement, err := sla.Resolve(spec)
	if err != nil {
		return nil, 0, usagef("--sla: %v", err)
	}
	strategy := cosla.Pileus
	if f.strategy != "" {
		if strategy, err = cosla.ParseStrategy(f.strategy); err != nil {
			return nil, 0, usagef("--strategy: %v", err)
		}
	}
	return agreement, strategy, nil
}

func openSession(ctx context.Context, f *clientFlags) (*clientSession, error) {
	tg, err := resolveTarget(f)
	if err != nil {
		return nil, err
	}
	c, err := cosla.Open(ctx, tg.config)
	if err != nil {
		return nil, err
	}
	t, err := c.OpenTable(ctx, tg.table)
	if err != nil {
		c.Close()
		return nil, err
	}
	levels, err := f.levels.levels()
	if err != nil {
		c.Close()
		return nil, err
	}
	if t.Causal() && (f.slaSpec == "" || f.slaSpec == defaultGetSLA) {
		// The default SLA asks for strong reads, which a causal table
		// does not serve.
		tg.agreement, _ = sla.Parse(defaultCausalSLA)
	}
	s, err := c.BeginSession(t, tg.agreement, append(sessionOptions(levels), cosla.WithStrategy(tg.strategy))...)
	if err != nil {
		c.Close()
		return nil, err
	}
	return &clientSession{client: c, table: t, session: s, sla: tg.agreement, strategy: tg.strategy, site: tg.site}, nil
}

func runPut(args []string, stdout, stderr io.Writer) error {
	var valueFile string
	var value []byte
	return runOneOp(opCommand{
		name: "put", levels: true,
		operands: func() string {
			if valueFile != "" {
				return "KEY"
			}
			return "KEY VALUE"
		},
		doc: "Writes KEY at its primary; prints the version's timestamp once it is durable (and held by\n" +
			"--write-level replicas; if they do not all hold it within --timeout, says how many do and\n" +
			"exits 1). With --bound it is a staged write (dConssandra): the nearest replica takes it and\n" +
			"answers within the bound with the stage it reached. The value is the VALUE operand, or with\n" +
			"--value-file the contents of a file (\"-\": stdin), up to 1 MiB.",
		boundDoc: "staged write: the nearest replica answers within `B` with the stage reached: immediate (once it holds the write durably), unbounded (once every replica has applied it) or a duration such as 50ms; not with --write-level or --cpq",
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&valueFile, "value-file", "", "write the contents of `FILE` (\"-\": stdin) instead of a VALUE operand")
		},
		check: func(operands []string) error {
			var err error
			if valueFile == "" {
				value = []byte(operands[1])
			} else {
				value, err = readValue(valueFile)
			}
			return err
		},
		op: func(ctx context.Context, cs *clientSession, f *clientFlags, bound cosla.Bound, opArgs []string) error {
			return cs.put(ctx, stdout, f.jsonOut, opArgs[0], value, bound)
		},
	}, args, stderr)
}

// readValue reads a value from a file, or stdin for "-", refusing one over
// the value limit.
func readValue(path string) ([]byte, error) {
	r, err := openInput(path)
	if err != nil {
		return nil, usagef("--value-file: %w", err)
	}
	defer r.Close()
	value, err := io.ReadAll(io.LimitReader(r, cosla.DefaultMaxValueBytes+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("--value-file %s: %w", path, err)
	case len(value) > cosla.DefaultMaxValueBytes:
		return nil, usagef("--value-file %s: over the value limit of %d bytes", path, cosla.DefaultMaxValueBytes)
	}
	return value, nil
}

// openInput opens a file named on the command line, or stdin for "-".
func openInput(path string) (io.ReadCloser, error) {
	if path == "-" {
		return io.NopCloser(os.Stdin), nil
	}
	return os.Open(path)
}

func runGet(args []string, stdout, stderr io.Writer) error {
	return runOneOp(opCommand{
		name: "get", operands: constOperands("KEY"), reads: true, levels: true,
		doc: "Reads KEY under an SLA and says which subSLA was met. Exit status 3 when none was.\n" +
			"A node that does not answer within its target subSLA's latency (an unbounded one's: 2s)\n" +
			"is passed over for the next best node the SLA still allows.\n" +
			"With --bound it is a bounded read (dConssandra): the nearest replica applies what pending\n" +
			"writes it can within the bound, then reads.",
		boundDoc: "bounded read: the nearest replica applies the pending writes it can within `B`, then reads: immediate (at once), unbounded (every write the primary ordered before the read) or a duration such as 50ms; not with --strategy or the level flags",
		op: func(ctx context.Context, cs *clientSession, f *clientFlags, bound cosla.Bound, opArgs []string) error {
			return cs.get(ctx, stdout, f.jsonOut, opArgs[0], nil, bound)
		},
	}, args, stderr)
}

// opCommand is a command that runs one operation in a session: put, get
// or rtw.
type opCommand struct {
	name, doc string
	// operands returns the operands the command wants, as the usage line
	// names them, once its own flags are parsed; their count is checked.
	operands func() string
	// reads: the command reads, and takes --sla, --strategy and (with
	// levels) the read level flags; else, with levels, the write level
	// flags.
	reads, levels bool
	// boundDoc is the help of --bound; flags adds the command's own.
	boundDoc string
	flags    func(*flag.FlagSet)
	// check, if set, checks the operands before anything is sent.
	check func(operands []string) error
	// op runs the operation; bound is --bound, zero without it.
	op func(ctx context.Context, cs *clientSession, f *clientFlags, bound cosla.Bound, operands []string) error
}

func constOperands(s string) func() string { return func() string { return s } }

// runOneOp parses a one-operation command line, opens a session and runs
// the operation in it.
func runOneOp(c opCommand, args []string, stderr io.Writer) error {
	fs := newCommand(c.name, "", c.doc, stderr)
	// The usage line names the operands that the flags given so far ask
	// for (put --value-file takes no VALUE).
	fs.Usage = func() { printHelp(stderr, fs, "cosla "+c.name+" [flags] "+c.operands(), c.doc) }
	var f clientFlags
	addClientFlags(fs, &f, c.reads)
	if c.levels {
		f.levels.add(fs, c.reads, !c.reads)
	}
	fs.StringVar(&f.bound, "bound", "", c.boundDoc)
	if c.flags != nil {
		c.flags(fs)
	}
	operands := func(fs *flag.FlagSet) error {
		want := c.operands()
		return operandCount(len(strings.Fields(want)), len(strings.Fields(want)), "want "+want)(fs)
	}
	if err := parseArgs(fs, args, operands); err != nil {
		return err
	}
	if err := f.check(); err != nil {
		return err
	}
	if c.check != nil {
		if err := c.check(fs.Args()); err != nil {
			return err
		}
	}
	bound, err := parseBound(f.bound)
	if err != nil {
		return err
	}
	if bound != 0 {
		// A bounded operation goes to the nearest replica alone and is
		// answered by the bound: the flags that choose replicas or wait
		// for more of them would be ignored, so they are refused.
		switch {
		case f.levels.set():
			return usagef("--bound goes to the nearest replica alone: not with --read-level, --write-level, --cpq, --delay or --read-repair")
		case flagsSet(fs)["strategy"]:
			return usagef("--bound goes to the nearest replica: not with --strategy")
		}
	}
	return inSession(&f, func(ctx context.Context, cs *clientSession) error {
		return f.explain(c.op(ctx, cs, &f, bound, fs.Args()))
	})
}

// inSession opens a session as the client flags f say and runs op in
// it, all within --timeout.
func inSession(f *clientFlags, op func(context.Context, *clientSession) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), f.timeout)
	defer cancel()
	cs, err := openSession(ctx, f)
	if err != nil {
		return f.explain(err)
	}
	defer cs.client.Close()
	return op(ctx, cs)
}

// check checks the client flags that need no cluster: --timeout and the
// level flags.
func (f *clientFlags) check() error {
	if f.timeout <= 0 {
		return usagef("--timeout %s: want a positive duration such as 30s", f.timeout)
	}
	_, err := f.levels.levels()
	return err
}

// explain says so when err is --timeout running out.
func (f *clientFlags) explain(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("no answer within --timeout %s: %w", f.timeout, err)
	}
	return err
}

// parseBound reads --bound (cosla.ParseBound); a bad one is a usage error.
func parseBound(s string) (cosla.Bound, error) {
	b, err := cosla.ParseBound(s)
	if err != nil {
		return 0, usagef("--bound %s: %v (for example --bound immediate, --bound unbounded or --bound 50ms)", s, err)
	}
	return b, nil
}

func (cs *clientSession) put(ctx context.Context, w io.Writer, jsonOut bool, key string, value []byte, bound cosla.Bound) error {
	start := time.Now()
	var wr cosla.WriteResult
	opts := []cosla.PutOption{cosla.WithWriteResult(&wr)}
	if bound != 0 {
		opts = append(opts, cosla.WithBound(bound))
	}
	ts, err := cs.client.Put(ctx, cs.session, key, value, opts...)
	if qe := (*cosla.QuorumTimeoutError)(nil); errors.As(err, &qe) {
		// The error names the key, the version and how many replicas of
		// the level hold it; unlike other failures, the outcome is known.
		if jsonOut {
			if encErr := json.NewEncoder(w).Encode(map[string]any{"op": "put", "key": keyfmt.JSON(key), "ts": ts.String(), "site": cs.site,
				"error": err.Error(), "level": qe.Level, "acks": qe.Acks}); encErr != nil {
				return encErr
			}
		}
		return fmt.Errorf("%w; the version is durable at the primary and may still reach more", err)
	}
	if err != nil {
		return fmt.Errorf("put %s: %w", keyfmt.Quote(key), err)
	}
	latency := time.Since(start)
	if jsonOut {
		out := map[string]any{"op": "put", "key": keyfmt.JSON(key), "ts": ts.String(), "site": cs.site, "latency_ns": latency}
		if bound != 0 {
			addWriteFields(out, wr, bound)
		}
		return json.NewEncoder(w).Encode(out)
	}
	shown := keyfmt.Text(key)
	if cs.table.Causal() {
		fmt.Fprintf(w, "put %s: ok, version %s, durable in the session's write buffer at %s/cc (%.1f ms from %s)\n",
			shown, ts, cs.site, milliseconds(latency), cs.site)
		return nil
	}
	if bound == 0 {
		fmt.Fprintf(w, "put %s: ok, version %s (%.1f ms from %s)\n", shown, ts, milliseconds(latency), cs.site)
		return nil
	}
	fmt.Fprintf(w, "put %s: %s (bound %s, %.1f ms from %s)\n", shown, stagedText(wr), bound, milliseconds(latency), cs.site)
	printHolders(w, wr)
	return nil
}

// stagedText says how far a bounded write got: its stage, the replica
// that took it and its number there, and its version once the primary
// ordered it.
func stagedText(wr cosla.WriteResult) string {
	var b strings.Builder
	b.WriteString(wr.Stage.String())
	if wr.WriteID != 0 {
		fmt.Fprintf(&b, " via %s as write %d", wr.Node, wr.WriteID)
	} else {
		// The primary took it: it ordered the write at once.
		fmt.Fprintf(&b, " at %s", wr.Node)
	}
	switch {
	case !wr.TS.IsZero():
		fmt.Fprintf(&b, ", version %s", wr.TS)
	case wr.Tested == cosla.Failed:
		b.WriteString(", nothing written")
	default:
		b.WriteString(", no version yet")
	}
	return b.String()
}

// printHolders prints the replicas known to hold a bounded write, or that
// none is known to yet.
func printHolders(w io.Writer, wr cosla.WriteResult) {
	switch {
	case len(wr.Holders) > 0:
		fmt.Fprintf(w, "  applied at %s\n", strings.Join(wr.Holders, ", "))
	case wr.Stage < cosla.Coordinated:
		fmt.Fprintf(w, "  durable at %s; the primary has yet to order it\n", wr.Node)
	}
}

// addWriteFields adds a WriteResult to a command's JSON output: the node
// that took the write, its round trip (rtt_ns), the replicas that held it when
// answered (acks) and its timestamp ("ts", left out while it has none);
// with a bound, also the bound, the stage reached, the write's number at
// the node and the replicas known to have applied it.
func addWriteFields(out map[string]any, wr cosla.WriteResult, bound cosla.Bound) {
	out["node"], out["rtt_ns"], out["acks"] = wr.Node, wr.RTT, wr.Acks
	if wr.TS.IsZero() {
		delete(out, "ts")
	} else {
		out["ts"] = wr.TS.String()
	}
	if bound == 0 {
		return
	}
	holders := wr.Holders
	if holders == nil {
		holders = []string{}
	}
	out["bound"], out["stage"], out["write_id"], out["holders"] = bound.String(), wr.Stage.String(), wr.WriteID, holders
}

func milliseconds(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func (cs *clientSession) get(ctx context.Context, w io.Writer, jsonOut bool, key string, override sla.SLA, bound cosla.Bound) error {
	agreement := cs.sla
	// A node that is down or slow costs a Get no more than its target
	// subSLA's latency: it falls back to another that the SLA allows.
	var opts []cosla.GetOption
	if override != nil {
		agreement = override
		opts = append(opts, cosla.WithSLA(override))
	}
	if bound != 0 {
		opts = append(opts, cosla.WithBound(bound))
	}
	value, res, err := cs.client.Get(ctx, cs.session, key, opts...)
	// A bounded Get returns what its replica read even when that meets
	// no subSLA; the command still exits 3 for it, as it says it does.
	delivered := err == nil
	if delivered && res.Met < 0 {
		err = fmt.Errorf("%w: the bounded read returned what %s held", cosla.ErrSLAUnmet, res.Node)
	}
	if jsonOut {
		out := map[string]any{"op": "get", "key": keyfmt.JSON(key), "site": cs.site, "sla": agreement.String(), "result": res}
		if delivered {
			out["value"] = keyfmt.JSON(value)
		}
		if err != nil {
			out["error"] = err.Error()
		}
		if encErr := json.NewEncoder(w).Encode(out); encErr != nil {
			return encErr
		}
		return err
	}
	if !delivered && !errors.Is(err, cosla.ErrNull) {
		return fmt.Errorf("get %s: %w", keyfmt.Quote(key), err)
	}
	printRead(w, key, value, res, agreement)
	if cr := res.Causal; cr != nil {
		fmt.Fprintf(w, "  %s in %.1f ms\n", causalText(*cr, res.Node), milliseconds(res.RTT))
		return err
	}
	printSource(w, res)
	if bound != 0 {
		printBounded(w, key, res, bound)
		if err != nil {
			return fmt.Errorf("get %s: %w", keyfmt.Quote(key), err)
		}
		return nil
	}
	printReplicas(w, res)
	if res.Target >= 0 {
		fmt.Fprintf(w, "  strategy %s aimed at subSLA %d (expected utility %.3g)\n", res.Strategy, res.Target+1, res.ExpectedUtility)
	} else {
		fmt.Fprintf(w, "  strategy %s\n", res.Strategy)
	}
	return err
}

// printRead prints the value a Get read and the subSLA it met.
func printRead(w io.Writer, key string, value []byte, res cosla.Result, agreement sla.SLA) {
	shown := strconv.Quote(string(value))
	switch {
	case res.Null:
		shown = "(null)"
	case !res.Found:
		shown = "(not found)"
	}
	fmt.Fprintf(w, "%s = %s\n", keyfmt.Text(key), shown)
	if res.Met >= 0 {
		fmt.Fprintf(w, "  met subSLA %d of %d: %s\n", res.Met+1, len(agreement), res.SubSLA)
	} else {
		fmt.Fprintf(w, "  met none of the %d subSLAs of %q\n", len(agreement), agreement)
	}
}

// printSource prints where a Get's value came from: the session's own
// pending write, or a replica, with its staleness and whether the Get
// fell back to it.
func printSource(w io.Writer, res cosla.Result) {
	if res.FromSession {
		fmt.Fprintf(w, "  the session's own write through %s, which the primary has yet to order\n", res.Node)
	} else {
		role := "secondary"
		if res.Primary {
			role = "primary"
		}
		version := "version " + res.VersionTS.String()
		if res.Null {
			version = "no version read"
		}
		fmt.Fprintf(w, "  from %s (%s) in %.1f ms; %s, replica high %s\n", res.Node, role,
			milliseconds(res.RTT), version, res.HighTS)
	}
	if !res.Primary && !res.HighTS.IsZero() {
		fmt.Fprintf(w, "  estimated staleness %.1f ms behind the primary\n", milliseconds(res.Staleness))
	}
	if res.Retried {
		fmt.Fprintf(w, "  fell back after a miss: the node first asked did not meet its target subSLA\n")
	}
}

// printBounded prints what a bounded Get applied before it read.
func printBounded(w io.Writer, key string, res cosla.Result, bound cosla.Bound) {
	fmt.Fprintf(w, "  bound %s: %d pending %s applied at %s before the read, %d still pending\n", bound,
		res.Applied, plural(res.Applied, "write", "writes"), res.Node, res.Pending)
	if res.Null {
		fmt.Fprintf(w, "  null: writes of %s are pending and the bound let none be applied\n", keyfmt.Text(key))
	}
}

// printReplicas prints the replies of a Get of several replicas.
func printReplicas(w io.Writer, res cosla.Result) {
	if res.Level <= 1 {
		return
	}
	fmt.Fprintf(w, "  read %d replicas, the newest version winning:\n", res.Level)
	for _, r := range res.Replies {
		version := "no version"
		if r.Found {
			version = "version " + r.VersionTS.String()
		}
		fmt.Fprintf(w, "    %s: %s, high %s, %.1f ms\n", r.Node, version, r.HighTS, milliseconds(r.RTT))
	}
	if res.Quorum {
		fmt.Fprintf(w, "  strong without the primary: the read overlaps the table's write level\n")
	}
	if res.Repaired > 0 {
		fmt.Fprintf(w, "  read repair asked %d stale %s to catch up\n", res.Repaired, plural(res.Repaired, "replica", "replicas"))
	}
	fmt.Fprintf(w, "  %d of the %d replicas read held it when the Get answered\n", res.Held, res.Level)
}

// causalText says where a causal read came from and what it means for
// the session (Karma Fig. 3).
func causalText(cr cosla.CausalRead, node string) string {
	var b strings.Builder
	switch cr.Source {
	case cosla.FromBuffer:
		fmt.Fprintf(&b, "from the session's write buffer at %s", node)
	case cosla.FromCache:
		fmt.Fprintf(&b, "from the site's cache %s", node)
	default:
		fmt.Fprintf(&b, "from ring %d (%s) at %s", cr.Ring, cr.RingName, node)
	}
	if !cr.Version.IsZero() {
		fmt.Fprintf(&b, ", version %s by %s", cr.Version, cr.Origin)
	}
	switch {
	case cr.Source == cosla.FromBuffer:
		b.WriteString(", not yet in every ring")
	case cr.InFlight:
		fmt.Fprintf(&b, ", in flight: the session is bound to ring %d until it is in every ring", cr.Ring)
	default:
		b.WriteString(", stable (in every ring)")
	}
	if cr.Restricted {
		b.WriteString("; read under a ring restriction")
	}
	return b.String()
}

func runGetTx(args []string, stdout, stderr io.Writer) error {
	fs := newCommand("gettx", "cosla gettx [flags] KEY...", "Reads the keys of a causal table as one causally consistent snapshot (Karma 4.5): all from\n"+
		"one ring, in rounds until two agree. Exit status 1 if the keys kept changing (try again).", stderr)
	var f clientFlags
	addClientFlags(fs, &f, false)
	if err := parseArgs(fs, args, operandCount(1, -1, "want KEY...")); err != nil {
		return err
	}
	if err := f.check(); err != nil {
		return err
	}
	return inSession(&f, func(ctx context.Context, cs *clientSession) error {
		if !cs.table.Causal() {
			return usagef("table %s is not a causal table: gettx reads causal tables", cs.table.Name())
		}
		items, res, err := cs.client.GetTx(ctx, cs.session, fs.Args())
		if err != nil {
			return f.explain(err)
		}
		return emitLine(stdout, f.jsonOut, snapshotRecord(cs.site, items, res), func() error { return printSnapshot(stdout, items, res) })
	})
}

// snapshotRecord is the JSON of gettx.
func snapshotRecord(site string, items []cosla.TxItem, res cosla.TxResult) map[string]any {
	out := map[string]any{"op": "gettx", "site": site, "ring": res.Ring, "ring_name": res.RingName, "rounds": res.Rounds,
		"restricted": res.Restricted, "rtt_ns": res.RTT}
	var list []map[string]any
	for _, it := range items {
		item := map[string]any{"key": keyfmt.JSON(it.Key), "found": it.Found, "causal": it.CausalRead}
		if it.Found {
			item["value"] = keyfmt.JSON(it.Value)
		}
		list = append(list, item)
	}
	out["items"] = list
	return out
}

// printSnapshot prints what gettx read: the ring, then each key.
func printSnapshot(stdout io.Writer, items []cosla.TxItem, res cosla.TxResult) error {
	fmt.Fprintf(stdout, "snapshot from ring %d (%s) in %d rounds, %.1f ms\n", res.Ring, res.RingName, res.Rounds, milliseconds(res.RTT))
	for _, it := range items {
		shown := strconv.Quote(string(it.Value))
		if !it.Found {
			shown = "(not found)"
		}
		flight := "stable"
		switch {
		case it.Source == cosla.FromBuffer:
			flight = "the session's own write"
		case it.InFlight:
			flight = "in flight"
		}
		fmt.Fprintf(stdout, "  %s = %s (%s)\n", keyfmt.Text(it.Key), shown, flight)
	}
	return nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func runSessionRun(args []string, stdout, stderr io.Writer) error {
	fs := newCommand("session run", "cosla session run [flags] FILE", sessionRunDoc, stderr)
	var f clientFlags
	addClientFlags(fs, &f, true)
	f.levels.add(fs, true, true)
	if err := parseArgs(fs, args, operandCount(1, 1, "want FILE")); err != nil {
		return err
	}
	if err := f.check(); err != nil {
		return err
	}
	script, err := readScript(fs.Arg(0))
	if err != nil {
		return err
	}
	return inSession(&f, func(ctx context.Context, cs *clientSession) error {
		return cs.runScript(ctx, script, &f, stdout, stderr)
	})
}

// sessionRunDoc is the help of cosla session run.
const sessionRunDoc = `Runs a script of operations in one session, one per line ("-" reads stdin):

  put KEY VALUE
  get KEY [SLA]          the SLA (text or preset) overrides --sla for this Get
  sleep DURATION         e.g. sleep 2s
  # comment

It stops at the first error other than an unmet SLA, which it reports and
goes on; the exit status is 3 if any Get met no subSLA.`

// runScript runs a session script's steps in order: see sessionRunDoc.
func (cs *clientSession) runScript(ctx context.Context, script []scriptStep, f *clientFlags, stdout, stderr io.Writer) error {
	var unmet error
	for _, st := range script {
		var err error
		switch st.op {
		case "put":
			err = cs.put(ctx, stdout, f.jsonOut, st.args[0], []byte(st.args[1]), 0)
		case "get":
			err = cs.get(ctx, stdout, f.jsonOut, st.args[0], st.sla, 0)
		case "sleep":
			select {
			case <-time.After(st.sleep):
			case <-ctx.Done():
				err = ctx.Err()
			}
		}
		if errors.Is(err, cosla.ErrSLAUnmet) {
			fmt.Fprintf(stderr, "line %d: %v\n", st.line, err)
			unmet = err
			continue
		}
		if err != nil {
			return fmt.Errorf("line %d: %w", st.line, f.explain(err))
		}
	}
	return unmet
}

type scriptStep struct {
	line  int
	op    string
	args  []string
	sla   sla.SLA       // a get's own SLA, if it names one
	sleep time.Duration // a sleep's length
}

// maxScriptLine bounds a line of a session script: a put of the largest
// key and value, with room for the operation and a get's SLA.
const maxScriptLine = cosla.DefaultMaxKeyBytes + cosla.DefaultMaxValueBytes + 4<<10

// readScript parses a session script, checking every line before any runs.
func readScript(path string) ([]scriptStep, error) {
	r, err := openInput(path)
	if err != nil {
		return nil, usagef("%w", err)
	}
	defer r.Close()
	var steps []scriptStep
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxScriptLine)
	n := 1
	for ; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		st, err := parseStep(line)
		if err != nil {
			return nil, usagef("%s:%d: %w", path, n, err)
		}
		st.line = n
		steps = append(steps, st)
	}
	if errors.Is(sc.Err(), bufio.ErrTooLong) {
		return nil, usagef("%s:%d: line longer than %d bytes (a put's key and value may have up to %d and %d)",
			path, n, maxScriptLine, cosla.DefaultMaxKeyBytes, cosla.DefaultMaxValueBytes)
	}
	return steps, sc.Err()
}

// parseStep parses one line of a session script.
func parseStep(line string) (scriptStep, error) {
	fields := strings.Fields(line)
	st := scriptStep{op: fields[0], args: fields[1:]}
	var err error
	switch st.op {
	case "put":
		if len(st.args) != 2 {
			return st, errors.New("want put KEY VALUE")
		}
	case "get":
		switch {
		case len(st.args) == 0:
			return st, errors.New("want get KEY [SLA]")
		case len(st.args) > 1:
			st.sla, err = sla.Resolve(strings.Join(st.args[1:], " "))
		}
	case "sleep":
		if len(st.args) != 1 {
			return st, errors.New("want sleep DURATION")
		}
		if st.sleep, err = time.ParseDuration(st.args[0]); err != nil || st.sleep < 0 {
			return st, fmt.Errorf("sleep %q: want a duration such as 2s", st.args[0])
		}
	default:
		return st, fmt.Errorf("unknown operation %q (want put, get or sleep)", st.op)
	}
	return st, err
}
