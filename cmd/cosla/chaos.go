package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/cosla/cosla/internal/lab/chaos"
	"github.com/cosla/cosla/internal/runtime/cluster"
	"github.com/cosla/cosla/internal/runtime/private"
)

// chaosFlags are the flags of cosla chaos.
type chaosFlags struct {
	topo                                                             topologyFlags
	dir, sites, faults                                               string
	pull, duration, gap, hold, think, writerThink, timeout, converge time.Duration
	every, failoverHold                                              time.Duration
	push, insecure, jsonOut                                          bool
	seed                                                             uint64
	kills, failovers, puts, keys, sessions, writers                  int
	windowsMax                                                       int
}

func (c *chaosFlags) add(fs *flag.FlagSet) {
	c.topo.add(fs)
	fs.StringVar(&c.dir, "dir", filepath.Join(filepath.Dir(cluster.DefaultDir()), "chaos"), "directory for the campaign's cluster: data, configs and logs (a previous run's data there is deleted)")
	fs.StringVar(&c.sites, "sites", "", "comma-separated sites holding the table's replicas, the primary's site first (default: every site with storage nodes)")
	fs.DurationVar(&c.pull, "pull-interval", time.Second, "how often secondaries pull from the primary (Pileus 4.3)")
	fs.BoolVar(&c.push, "push", false, "also push every Put to the secondaries at once")
	fs.BoolVar(&c.insecure, "insecure", false, "run the cluster without TLS")
	fs.Uint64Var(&c.seed, "seed", 0, "seed of the plan: the workload's keys, the faults' sites and times (0: from the clock)")
	fs.StringVar(&c.faults, "faults", "all", "faults to inject, comma-separated: kill (SIGKILL a site's process, restart it), partition (cut a site off the WAN, heal), pause (SIGSTOP, then SIGCONT), "+
		"all (those three), or failover (strike the current primary's site by kill, partition and pause in turn, for longer than a lease, so that another replica becomes primary); "+
		"with a topology of rings (--preset karma8), az-b (a site's storage nodes fail), az-f (its coordinator and cache fail), ring-partition (a zone of a site of one ring is cut from a zone of a site of another) or karma (those three)")
	fs.IntVar(&c.kills, "kills", 10, "go on until at least this many kills (0 without kill in --faults)")
	fs.IntVar(&c.failovers, "failovers", 0, "go on until at least this many failovers (with failover in --faults)")
	fs.DurationVar(&c.failoverHold, "failover-hold", 0, "least time a failover fault lasts; it lasts on until another node holds the primary's lease "+
		"(default: a raft election, a lease and its margin, Collect and 1s: 8.65s with the configuration service's defaults)")
	fs.IntVar(&c.puts, "puts", 10000, "go on until at least this many acknowledged Puts")
	fs.DurationVar(&c.duration, "duration", 10*time.Minute, "bound on the campaign: reaching it before the targets is a failure")
	fs.DurationVar(&c.gap, "gap", 2*time.Second, "mean time between one fault's end and the next one's start")
	fs.DurationVar(&c.hold, "hold", 2*time.Second, "mean time a fault lasts (a killed process stays down for up to this long)")
	fs.IntVar(&c.keys, "keys", 32, "keys the guarantee sessions share")
	fs.IntVar(&c.sessions, "sessions", 2, "sessions of each guarantee client (two per site; with failover, of a client of strong reads too)")
	fs.IntVar(&c.writers, "writers", 4, "sessions per site writing fresh keys, each once (with failover: as many again at write level QUORUM)")
	fs.DurationVar(&c.think, "think", 10*time.Millisecond, "guarantee sessions' pause between operations")
	fs.DurationVar(&c.writerThink, "writer-think", 0, "writers' pause between Puts (a long failover campaign wants one: every fresh key grows the table, and with it the catch-up of a replica that wiped at a rollback)")
	fs.DurationVar(&c.timeout, "timeout", 2*time.Second, "request timeout of Puts and of Gets with an unbounded subSLA")
	fs.DurationVar(&c.converge, "converge-timeout", 0, "bound on the wait for the secondaries to converge after the faults (default 1m plus 3 pull intervals)")
	fs.DurationVar(&c.every, "progress", 5*time.Second, "how often to print the counts on stderr")
	fs.BoolVar(&c.jsonOut, "json", false, "print the report as JSON")
	fs.IntVar(&c.windowsMax, "windows", 5, "unavailability windows listed per client, the longest first (--json lists all)")
}

// chaosDoc is the help of cosla chaos.
const chaosDoc = `Runs a fault campaign on a cluster of real processes it starts in --dir (as cluster up
does) and stops at the end: clients at every site issue durable Puts and Gets
under session guarantees while the campaign kills (SIGKILL) and restarts the primary's
and secondaries' processes, partitions a site off the emulated WAN and heals it, and
pauses a process (SIGSTOP, SIGCONT), one fault at a time. Afterwards it reads every key
written at the primary, waits for the secondaries to converge and checks the recorded
history, and reports acknowledged Puts, faults, acknowledged Puts missing at the primary,
convergence, guarantee violations and each client's unavailability windows. It exits 1
unless nothing was lost or violated, the replicas converged and the targets were reached.

With --faults failover it strikes the current primary's site (from the cluster's status)
by kill, partition and pause in turn, each until another replica holds the primary's
lease, then heals it and waits for one leased primary per tablet; writers at QUORUM and at
ONE and strong readers join the workload at every site. It also reports the failover time
(the fault's start to the first Put the new primary acknowledged: p50, p99, max), writes
acknowledged and lost per write level against the sites' rollback files (no QUORUM write
may be lost, and every ONE write lost must be in them), Porcupine's verdict on the strong
reads with the QUORUM writes, and the share of SLA Gets that met a subSLA during the
failovers. --failovers N goes on until N failovers (raise --duration to fit: about 20s each).

With --faults karma (or az-b, az-f, ring-partition) on a topology of rings (--preset karma8)
it checks Karma 4.4's claims on the causal table: one client of --sessions sessions at every
site puts and gets --keys shared keys while a site's storage nodes (AZ-B) or its coordinator
and cache (AZ-F) fail, or a zone of a site of one ring is cut from a zone of a site of
another, each fault emulated inside the site's process. It checks the history (multi-writer
causal) and reports, per fault and client, the failed operations and the longest
unavailability. It exits 1 if the campaign could not run as planned or the history breaks
causal consistency, and 3 if a client the claims keep available (all but those of a failed
AZ-F) had an operation fail during a fault.`

func runChaos(args []string, stdout, stderr io.Writer) error {
	fs := newCommand("chaos", "cosla chaos [--faults all|kill,partition,pause|failover|karma] [--kills N] [--failovers N] [--puts N] [--duration D] [--dir DIR]", chaosDoc, stderr)
	var c chaosFlags
	c.add(fs)
	if err := parseArgs(fs, args, noOperands); err != nil {
		return err
	}
	o, err := c.options(fs)
	if err != nil {
		return err
	}
	if c.seed == 0 {
		c.seed = uint64(time.Now().UnixNano())
		args = append(args, "--seed", fmt.Sprint(c.seed))
	}
	o.Seed = c.seed
	command := "cosla chaos " + strings.Join(args, " ")
	if err := private.MkdirAll(c.dir); err != nil {
		return err
	}
	logFile, err := private.OpenFile(filepath.Join(c.dir, "chaos.log"), os.O_WRONLY|os.O_TRUNC)
	if err != nil {
		return err
	}
	defer logFile.Close()
	o.Logger, o.Progress = slog.New(slog.NewTextHandler(logFile, nil)), clockLines(stderr)
	if err := o.EnsureDefaults().Validate(); err != nil {
		return usagef("%v", err)
	}
	fmt.Fprintf(stderr, "cosla chaos: seed %d; data and logs in %s; the same plan again: %s\n", c.seed, c.dir, command)
	ctx, cancel := interruptible()
	defer cancel()
	rep, err := chaos.Run(ctx, o)
	if err != nil {
		return fmt.Errorf("%w\nthe same plan again: %s", err, command)
	}
	if err := emit(stdout, c.jsonOut, rep, func() error { rep.WriteText(stdout, c.windowsMax); return nil }); err != nil {
		return err
	}
	if rep.Karma != nil && rep.Sound() && !rep.OK() {
		return testFailedError{fmt.Errorf("cosla: Karma 4.4's claims not met: a client they keep available had operations fail during a fault; "+
			"data and logs in %s; the same plan again (process scheduling is not reproducible): %s", c.dir, command)}
	}
	if !rep.OK() {
		return fmt.Errorf("the campaign failed (lost %d, unread %d, violations %d, converged %t, targets reached %t, fault errors %d, interrupted %t%s); "+
			"data and logs in %s; the same plan again (process scheduling is not reproducible): %s",
			rep.Lost, rep.Unverified, rep.Violations, rep.Converged, rep.TargetsReached, len(rep.FaultErrors), rep.Interrupted, failoverVerdict(rep), c.dir, command)
	}
	return nil
}

// failoverVerdict is what the failover checks found, for the error of a
// failed campaign.
func failoverVerdict(rep *chaos.Report) string {
	f := rep.Failover
	if f == nil {
		return ""
	}
	return fmt.Sprintf(", QUORUM writes lost %d, rule durable %d and rollback %d violations, strong history %s",
		f.Lost["quorum"], f.Durable, f.Rollback, f.Linearizability.Verdict)
}

// options checks the flags that need no cluster and returns the
// campaign's options, less its seed, logger and progress.
func (c *chaosFlags) options(fs *flag.FlagSet) (chaos.Options, error) {
	t, err := c.topo.resolve()
	if err != nil {
		return chaos.Options{}, err
	}
	kinds, err := chaos.ParseFaults(c.faults)
	if err != nil {
		return chaos.Options{}, usagef("--faults: %v", err)
	}
	if c.kills > 0 && !slices.Contains(kinds, chaos.Kill) {
		if fs.Lookup("kills").Value.String() != fs.Lookup("kills").DefValue {
			return chaos.Options{}, usagef("--kills %d without kill in --faults %s", c.kills, c.faults)
		}
		c.kills = 0
	}
	if c.failovers > 0 && !slices.Contains(kinds, chaos.Failover) {
		return chaos.Options{}, usagef("--failovers %d without failover in --faults %s", c.failovers, c.faults)
	}
	return chaos.Options{Dir: c.dir, Topology: t, Sites: commaList(c.sites), PullInterval: c.pull, Push: c.push, Insecure: c.insecure,
		Faults: kinds, Kills: c.kills, Failovers: c.failovers, Puts: c.puts, Duration: c.duration, Gap: c.gap, Hold: c.hold, FailoverHold: c.failoverHold,
		Keys: c.keys, Sessions: c.sessions, Writers: c.writers, Think: c.think, WriterThink: c.writerThink, RequestTimeout: c.timeout, ConvergeTimeout: c.converge,
		ProgressEvery: c.every}, nil
}
