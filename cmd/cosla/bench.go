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

	"github.com/cosla/cosla"
	"github.com/cosla/cosla/internal/bench"
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
	props, err := workload.Preset(*wl)
	if err != nil {
		file, ferr := os.Open(*wl)
		if ferr != nil {
			return usagef("--workload: %q is neither a core workload (a-f) nor a readable file", *wl)
		}
		props, err = workload.ParseProperties(file)
		file.Close()
		if err != nil {
			return usagef("--workload %s: %v", *wl, err)
		}
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
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	openCtx, openCancel := context.WithTimeout(ctx, f.timeout)
	defer openCancel()
	store, err := newBenchStore(openCtx, &f, *clients)
	if err != nil {
		return err
	}
	defer store.client.Close()
	fmt.Fprintf(stderr, "cosla bench: workload %s, %d clients at site %s, SLA %s, strategy %s, seed %d\n",
		*wl, *clients, store.site, store.sla, f.strategy, *seed)
	res, err := bench.Run(ctx, store, w, bench.Options{
		Clients: *clients, Duration: *duration, Load: *load, Seed: *seed,
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

// benchStore runs the benchmark's operations through one client, with a
// session per benchmark client: each goroutine takes a session from the
// pool for an operation and gives it back.
type benchStore struct {
	client   *cosla.Client
	sessions chan *cosla.Session
	site     string
	sla      string
}

func newBenchStore(ctx context.Context, f *clientFlags, clients int) (*benchStore, error) {
	if clients < 1 || clients > bench.MaxClients {
		return nil, usagef("--clients must be between 1 and %d", bench.MaxClients)
	}
	cs, err := openSession(ctx, f)
	if err != nil {
		return nil, err
	}
	st := &benchStore{client: cs.client, sessions: make(chan *cosla.Session, clients), site: cs.site, sla: cs.sla.String()}
	st.sessions <- cs.session
	for range clients - 1 {
		s, err := cs.client.BeginSession(cs.table, cs.sla, cosla.WithStrategy(cs.strategy))
		if err != nil {
			cs.client.Close()
			return nil, err
		}
		st.sessions <- s
	}
	return st, nil
}

func (b *benchStore) withSession(ctx context.Context, fn func(*cosla.Session) error) error {
	var s *cosla.Session
	select {
	case s = <-b.sessions:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { b.sessions <- s }()
	return fn(s)
}

func (b *benchStore) Read(ctx context.Context, key string) error {
	return b.withSession(ctx, func(s *cosla.Session) error {
		_, _, err := b.client.Get(ctx, s, key)
		return err
	})
}

func (b *benchStore) Update(ctx context.Context, key string, value []byte) error {
	return b.withSession(ctx, func(s *cosla.Session) error {
		_, err := b.client.Put(ctx, s, key, value)
		return err
	})
}

func (b *benchStore) Insert(ctx context.Context, key string, value []byte) error {
	return b.Update(ctx, key, value)
}
