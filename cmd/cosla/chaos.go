package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/cosla/cosla/internal/lab/chaos"
	"github.com/cosla/cosla/internal/runtime/cluster"
	"github.com/cosla/cosla/internal/runtime/private"
)

func runChaos(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("chaos", stderr)
	var topo topologyFlags
	topo.add(fs)
	dir := fs.String("dir", filepath.Join(filepath.Dir(cluster.DefaultDir()), "chaos"), "directory for the campaign's cluster: data, configs and logs (a previous run's data there is deleted)")
	sites := fs.String("sites", "", "comma-separated sites holding the table's replicas, the primary's site first (default: every site with storage nodes)")
	pull := fs.Duration("pull-interval", time.Second, "how often secondaries pull from the primary (Pileus 4.3)")
	push := fs.Bool("push", false, "also push every Put to the secondaries at once")
	insecure := fs.Bool("insecure", false, "run the cluster without TLS")
	seed := fs.Uint64("seed", 0, "seed of the plan: the workload's keys, the faults' sites and times (0: from the clock)")
	faults := fs.String("faults", "all", "faults to inject, comma-separated: kill (SIGKILL a site's process, restart it), partition (cut a site off the WAN, heal), pause (SIGSTOP, then SIGCONT), or all")
	kills := fs.Int("kills", 10, "go on until at least this many kills (0 without kill in --faults)")
	puts := fs.Int("puts", 10000, "go on until at least this many acknowledged Puts")
	duration := fs.Duration("duration", 10*time.Minute, "bound on the campaign: reaching it before the targets is a failure")
	gap := fs.Duration("gap", 2*time.Second, "mean time between one fault's end and the next one's start")
	hold := fs.Duration("hold", 2*time.Second, "mean time a fault lasts (a killed process stays down for up to this long)")
	keys := fs.Int("keys", 32, "keys the guarantee sessions share")
	sessions := fs.Int("sessions", 2, "sessions of each guarantee client (two per site)")
	writers := fs.Int("writers", 4, "sessions per site writing fresh keys, each once")
	think := fs.Duration("think", 10*time.Millisecond, "guarantee sessions' pause between operations")
	timeout := fs.Duration("timeout", 2*time.Second, "request timeout of Puts and of Gets with an unbounded subSLA")
	converge := fs.Duration("converge-timeout", 0, "bound on the wait for the secondaries to converge after the faults (default 1m plus 3 pull intervals)")
	every := fs.Duration("progress", 5*time.Second, "how often to print the counts on stderr")
	jsonOut := fs.Bool("json", false, "print the report as JSON")
	windowsMax := fs.Int("windows", 5, "unavailability windows listed per client, the longest first (--json lists all)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, `Usage: cosla chaos [--faults all|kill,partition,pause] [--kills N] [--puts N] [--duration D] [--dir DIR]

Runs a fault campaign on a cluster of real processes it starts in --dir (as cluster up
does) and stops at the end: clients at every site issue durable Puts and Gets
under session guarantees while the campaign kills (SIGKILL) and restarts the primary's
and secondaries' processes, partitions a site off the emulated WAN and heals it, and
pauses a process (SIGSTOP, SIGCONT), one fault at a time. Afterwards it reads every key
written at the primary, waits for the secondaries to converge and checks the recorded
history, and reports acknowledged Puts, faults, acknowledged Puts missing at the primary,
convergence, guarantee violations and each client's unavailability windows. It exits 1
unless nothing was lost or violated, the replicas converged and the targets were reached.

Flags:`)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	t, err := topo.resolve()
	if err != nil {
		return usagef("%v", err)
	}
	kinds, err := chaos.ParseFaults(*faults)
	if err != nil {
		return usagef("--faults: %v", err)
	}
	if *kills > 0 && !slices.Contains(kinds, chaos.Kill) {
		if fs.Lookup("kills").Value.String() != fs.Lookup("kills").DefValue {
			return usagef("--kills %d without kill in --faults %s", *kills, *faults)
		}
		*kills = 0
	}
	if *seed == 0 {
		*seed = uint64(time.Now().UnixNano())
		args = append(args, "--seed", fmt.Sprint(*seed))
	}
	command := "cosla chaos " + strings.Join(args, " ")
	if err := private.MkdirAll(*dir); err != nil {
		return err
	}
	logFile, err := private.OpenFile(filepath.Join(*dir, "chaos.log"), os.O_WRONLY|os.O_TRUNC)
	if err != nil {
		return err
	}
	defer logFile.Close()
	o := chaos.Options{Dir: *dir, Topology: t, Sites: commaList(*sites), PullInterval: *pull, Push: *push, Insecure: *insecure,
		Seed: *seed, Faults: kinds, Kills: *kills, Puts: *puts, Duration: *duration, Gap: *gap, Hold: *hold,
		Keys: *keys, Sessions: *sessions, Writers: *writers, Think: *think, RequestTimeout: *timeout, ConvergeTimeout: *converge,
		ProgressEvery: *every, Logger: slog.New(slog.NewTextHandler(logFile, nil)),
		Progress: func(line string) { fmt.Fprintf(stderr, "%s %s\n", time.Now().Format("15:04:05"), line) }}
	if err := o.EnsureDefaults().Validate(); err != nil {
		return usagef("%v", err)
	}
	fmt.Fprintf(stderr, "cosla chaos: seed %d; data and logs in %s; the same plan again: %s\n", *seed, *dir, command)
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	rep, err := chaos.Run(ctx, o)
	if err != nil {
		return fmt.Errorf("%w\nthe same plan again: %s", err, command)
	}
	if *jsonOut {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		rep.WriteText(stdout, *windowsMax)
	}
	if !rep.OK() {
		return fmt.Errorf("the campaign failed (lost %d, unread %d, violations %d, converged %t, targets reached %t, fault errors %d, interrupted %t); "+
			"data and logs in %s; the same plan again (process scheduling is not reproducible): %s",
			rep.Lost, rep.Unverified, rep.Violations, rep.Converged, rep.TargetsReached, len(rep.FaultErrors), rep.Interrupted, *dir, command)
	}
	return nil
}
