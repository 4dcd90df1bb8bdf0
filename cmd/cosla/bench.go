package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/cosla/cosla/internal/bench"
	"github.com/cosla/cosla/internal/driver"
	"github.com/cosla/cosla/internal/workload"
)

func runBench(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench", stderr)
	var f clientFlags
	addClientFlags(fs, &f, true)
	wl := fs.String("workload", "b", "YCSB core workload: a-f, or a workload property file")
	clients := fs.Int("clients", 1, "concurrent clients")
	duration := fs.Duration("duration", 30*time.Second, "stop the run phase after this long")
	operations := fs.Uint64("operations", 0, "stop after this many operations (default: the workload's operationcount)")
	records := fs.Uint64("records", 0, "records to load (default: the workload's recordcount)")
	load := fs.Bool("load", true, "insert the records before the run phase")
	seed := fs.Uint64("seed", 1, "seed of the operation sequence")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: cosla bench [flags]\n\nRuns a YCSB core workload against the local cluster from one client site: reads are Gets\nunder --sla, updates and inserts are Puts. Prints latency percentiles per operation and\nthroughput; --json for machines.\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	if *clients < 1 || *clients > bench.MaxClients {
		return usagef("--clients must be between 1 and %d", bench.MaxClients)
	}
	props, err := workload.Resolve(*wl)
	if err != nil {
		return usagef("--workload: %v", err)
	}
	if *records > 0 {
		props.RecordCount = *records
	}
	if *operations > 0 {
		props.OperationCount = *operations
	}
	w, err := workload.New(props)
	if err != nil {
		return usagef("--workload: %v", err)
	}
	tg, err := resolveTarget(&f)
	if err != nil {
		return err
	}

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	loop := driver.NewLoop(time.Now())
	target := &driver.HostTarget{Loop: loop, Nodes: tg.info.NodesFor, Table: tg.table, OpenTimeout: f.timeout}
	fmt.Fprintf(stderr, "cosla bench: workload %s, %d clients at site %s, SLA %s, strategy %s, seed %d\n",
		*wl, *clients, tg.site, tg.agreement, tg.strategy, *seed)
	res, err := bench.Run(ctx, loop, target, w, bench.Options{
		Clients: *clients, Duration: *duration, Load: *load, Seed: *seed,
		Site: tg.site, Cosla: driver.Cosla{SLA: tg.agreement, Strategy: tg.strategy},
		ProgressInterval: 5 * time.Second,
		Progress: func(p bench.Progress) {
			fmt.Fprintf(stderr, "  %s %5.0fs  %d ops, %d errors, %.0f ops/s\n", p.Phase, p.Elapsed.Seconds(), p.Operations, p.Errors, p.ThroughputOpsPerS)
		},
	})
	if err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	if f.jsonOut {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	return res.WriteText(stdout)
}
