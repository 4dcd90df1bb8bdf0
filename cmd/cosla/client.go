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
	"github.com/cosla/cosla/internal/cluster"
	"github.com/cosla/cosla/internal/driver"
	"github.com/cosla/cosla/sla"
)

// defaultGetSLA is the SLA of a Get that names none: the latest value when
// the primary answers within 5 s, else any value.
const defaultGetSLA = "strong 5s 1; eventual unbounded 0.5"

// clientFlags are the flags every command that talks to a cluster takes.
type clientFlags struct {
	dir, config, site, table, slaSpec, strategy string
	jsonOut                                     bool
	timeout                                     time.Duration
	// levels are the CPQ flags, for the commands that add them.
	levels levelFlags
}

func addClientFlags(fs *flag.FlagSet, f *clientFlags, withSLA bool) {
	fs.StringVar(&f.dir, "dir", cluster.DefaultDir(), "directory of the local cluster (see cosla cluster up)")
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
	a, err := cluster.Reach(f.dir, f.config)
	if err != nil {
		return nil, err
	}
	tg := &target{site: cmp.Or(f.site, a.DefaultSite), table: cmp.Or(f.table, a.Table)}
	if tg.table == "" {
		return nil, usagef("--table: %s names no table; give one", f.config)
	}
	if tg.config, err = a.Config(tg.site); err != nil {
		return nil, usageError{err.Error()}
	}
	gets, err := coslaGets(f)
	if err != nil {
		return nil, err
	}
	tg.agreement, tg.strategy = gets.SLA, gets.Strategy
	return tg, nil
}

// coslaGets parses --sla and --strategy: the SLA and strategy of Gets,
// defaultGetSLA and pileus when not given.
func coslaGets(f *clientFlags) (driver.Cosla, error) {
	spec := f.slaSpec
	if spec == "" {
		spec = defaultGetSLA
	}
	agreement, err := sla.Resolve(spec)
	if err != nil {
		return driver.Cosla{}, usagef("--sla: %v", err)
	}
	strategy := cosla.Pileus
	if f.strategy != "" {
		if strategy, err = cosla.ParseStrategy(f.strategy); err != nil {
			return driver.Cosla{}, usagef("--strategy: %v", err)
		}
	}
	return driver.Cosla{SLA: agreement, Strategy: strategy}, nil
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
	policy, err := f.levels.policy()
	if err != nil {
		c.Close()
		return nil, err
	}
	s, err := c.BeginSession(t, tg.agreement, append(sessionOptions(policy), cosla.WithStrategy(tg.strategy))...)
	if err != nil {
		c.Close()
		return nil, err
	}
	return &clientSession{client: c, table: t, session: s, sla: tg.agreement, strategy: tg.strategy, site: tg.site}, nil
}

func runPut(args []string, stdout, stderr io.Writer) error {
	return runOneOp("put", "KEY VALUE", "Writes KEY at its primary; prints the version's timestamp once it is durable (and held by\n--write-level replicas; if they do not all hold it within --timeout, says how many do and\nexits 1).", 2, false,
		args, stderr, func(ctx context.Context, cs *clientSession, f *clientFlags, opArgs []string) error {
			return cs.put(ctx, stdout, f.jsonOut, opArgs[0], opArgs[1])
		})
}

func runGet(args []string, stdout, stderr io.Writer) error {
	return runOneOp("get", "KEY", "Reads KEY under an SLA and says which subSLA was met. Exit status 3 when none was.", 1, true,
		args, stderr, func(ctx context.Context, cs *clientSession, f *clientFlags, opArgs []string) error {
			return cs.get(ctx, stdout, f.jsonOut, opArgs[0], nil)
		})
}

// runOneOp parses a one-operation command line, opens a session and runs
// the operation in it.
func runOneOp(name, operands, doc string, nargs int, withSLA bool, args []string, stderr io.Writer,
	op func(context.Context, *clientSession, *clientFlags, []string) error) error {
	fs := newFlags(name, stderr)
	var f clientFlags
	addClientFlags(fs, &f, withSLA)
	f.levels.add(fs, withSLA, !withSLA)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: cosla %s [flags] %s\n\n%s\n\nFlags:\n", name, operands, doc)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != nargs {
		return usagef("want %s", operands)
	}
	if _, err := f.levels.policy(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), f.timeout)
	defer cancel()
	cs, err := openSession(ctx, &f)
	if err != nil {
		return err
	}
	defer cs.client.Close()
	return op(ctx, cs, &f, fs.Args())
}

func (cs *clientSession) put(ctx context.Context, w io.Writer, jsonOut bool, key, value string) error {
	start := time.Now()
	ts, err := cs.client.Put(ctx, cs.session, key, []byte(value))
	if qe := (*cosla.QuorumTimeoutError)(nil); errors.As(err, &qe) {
		// The error names the key, the version and how many replicas of
		// the level hold it; unlike other failures, the outcome is known.
		if jsonOut {
			if encErr := json.NewEncoder(w).Encode(map[string]any{"op": "put", "key": key, "ts": ts.String(), "site": cs.site,
				"error": err.Error(), "level": qe.Level, "acks": qe.Acks}); encErr != nil {
				return encErr
			}
		}
		return fmt.Errorf("%w; the version is durable at the primary and may still reach more", err)
	}
	if err != nil {
		return fmt.Errorf("put %q: %w", key, err)
	}
	if jsonOut {
		return json.NewEncoder(w).Encode(map[string]any{"op": "put", "key": key, "ts": ts.String(), "site": cs.site,
			"latency_ms": float64(time.Since(start)) / float64(time.Millisecond)})
	}
	fmt.Fprintf(w, "put %s: ok, version %s (%.1f ms from %s)\n", key, ts, float64(time.Since(start))/float64(time.Millisecond), cs.site)
	return nil
}

func (cs *clientSession) get(ctx context.Context, w io.Writer, jsonOut bool, key string, override sla.SLA) error {
	agreement := cs.sla
	var opts []cosla.GetOption
	if override != nil {
		agreement = override
		opts = append(opts, cosla.WithSLA(override))
	}
	value, res, err := cs.client.Get(ctx, cs.session, key, opts...)
	if jsonOut {
		out := map[string]any{"op": "get", "key": key, "site": cs.site, "sla": agreement.String(), "result": res}
		if err == nil {
			out["value"] = string(value)
		} else {
			out["error"] = err.Error()
		}
		if encErr := json.NewEncoder(w).Encode(out); encErr != nil {
			return encErr
		}
		return err
	}
	if err != nil {
		return fmt.Errorf("get %q: %w", key, err)
	}
	shown := strconv.Quote(string(value))
	if !res.Found {
		shown = "(not found)"
	}
	role := "secondary"
	if res.Primary {
		role = "primary"
	}
	fmt.Fprintf(w, "%s = %s\n", key, shown)
	fmt.Fprintf(w, "  met subSLA %d of %d: %s\n", res.Met+1, len(agreement), res.SubSLA)
	fmt.Fprintf(w, "  from %s (%s) in %.1f ms; version %s, replica high %s\n", res.Node, role,
		float64(res.RTT)/float64(time.Millisecond), res.VersionTS, res.HighTS)
	if !res.Primary && !res.HighTS.IsZero() {
		fmt.Fprintf(w, "  estimated staleness %.1f ms behind the primary\n", float64(res.Staleness)/float64(time.Millisecond))
	}
	if res.Level > 1 {
		fmt.Fprintf(w, "  read %d replicas, the newest version winning:\n", res.Level)
		for _, r := range res.Replies {
			version := "no version"
			if r.Found {
				version = "version " + r.VersionTS.String()
			}
			fmt.Fprintf(w, "    %s: %s, high %s, %.1f ms\n", r.Node, version, r.HighTS, float64(r.RTT)/float64(time.Millisecond))
		}
		if res.Quorum {
			fmt.Fprintf(w, "  strong without the primary: the read overlaps the table's write level\n")
		}
		if res.Repaired > 0 {
			fmt.Fprintf(w, "  read repair sent the newest version to %d stale replicas\n", res.Repaired)
		}
	}
	if res.Target >= 0 {
		fmt.Fprintf(w, "  strategy %s aimed at subSLA %d (expected utility %.3g)\n", res.Strategy, res.Target+1, res.ExpectedUtility)
	} else {
		fmt.Fprintf(w, "  strategy %s\n", res.Strategy)
	}
	return nil
}

func runSession(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "run" {
		return usagef("want: cosla session run [flags] FILE")
	}
	fs := newFlags("session run", stderr)
	var f clientFlags
	addClientFlags(fs, &f, true)
	f.levels.add(fs, true, true)
	fs.Usage = func() {
		fmt.Fprintln(stderr, `Usage: cosla session run [flags] FILE

Runs a script of operations in one session, one per line ("-" reads stdin):

  put KEY VALUE
  get KEY [SLA]          the SLA (text or preset) overrides --sla for this Get
  sleep DURATION         e.g. sleep 2s
  # comment

It stops at the first error other than an unmet SLA, which it reports and
goes on; the exit status is 3 if any Get met no subSLA.

Flags:`)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("want FILE")
	}
	if _, err := f.levels.policy(); err != nil {
		return err
	}
	script, err := readScript(fs.Arg(0))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), f.timeout)
	defer cancel()
	cs, err := openSession(ctx, &f)
	if err != nil {
		return err
	}
	defer cs.client.Close()
	var unmet error
	for _, st := range script {
		switch st.op {
		case "put":
			err = cs.put(ctx, stdout, f.jsonOut, st.args[0], st.args[1])
		case "get":
			err = cs.get(ctx, stdout, f.jsonOut, st.args[0], st.sla)
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
			return fmt.Errorf("line %d: %w", st.line, err)
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

// readScript parses a session script, checking every line before any runs.
func readScript(path string) ([]scriptStep, error) {
	var r io.Reader = os.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	var steps []scriptStep
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		st := scriptStep{line: n, op: fields[0], args: fields[1:]}
		want := map[string]string{"put": "KEY VALUE", "get": "KEY [SLA]", "sleep": "DURATION"}[st.op]
		ok := false
		switch st.op {
		case "put":
			ok = len(st.args) == 2
		case "get":
			ok = len(st.args) >= 1
			if len(st.args) > 1 {
				var err error
				if st.sla, err = sla.Resolve(strings.Join(st.args[1:], " ")); err != nil {
					return nil, fmt.Errorf("%s:%d: %w", path, n, err)
				}
			}
		case "sleep":
			ok = len(st.args) == 1
			if ok {
				var err error
				if st.sleep, err = time.ParseDuration(st.args[0]); err != nil || st.sleep < 0 {
					return nil, fmt.Errorf("%s:%d: sleep %q: want a duration such as 2s", path, n, st.args[0])
				}
			}
		default:
			return nil, fmt.Errorf("%s:%d: unknown operation %q (want put, get or sleep)", path, n, st.op)
		}
		if !ok {
			return nil, fmt.Errorf("%s:%d: want %s %s", path, n, st.op, want)
		}
		steps = append(steps, st)
	}
	return steps, sc.Err()
}
