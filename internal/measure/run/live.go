package run

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cosla/cosla/internal/measure"
)

// Store is a store under measurement: the methods of adapters.Store, with
// the store's report as an Outcome (the command line adapts one to the
// other, so this package does not depend on the external stores).
type Store interface {
	// Name names the store, for logs and reports.
	Name() string
	// Write writes value to key with a write option ("" for the default).
	Write(ctx context.Context, key, value, option string) (Outcome, error)
	// Read reads key with a read option; found is false when the key holds
	// no value.
	Read(ctx context.Context, key, option string) (value string, found bool, out Outcome, err error)
}

// Outcome is what the store reported about one op.
type Outcome struct {
	// Consistency is the guarantee the store claims the op met, Replica
	// the replica that served it; both may be empty.
	Consistency string
	Replica     string
}

// Clock gives the times of a live run in microseconds since the Unix epoch
// (see the package doc, "Clocks").
type Clock struct{ base time.Time }

// NewClock reads CLOCK_REALTIME once; Now adds the monotonic time since.
func NewClock() Clock { return Clock{base: time.Now()} }

// NowUS is the current time in microseconds since the Unix epoch.
func (c Clock) NowUS() int64 { return c.base.UnixMicro() + time.Since(c.base).Microseconds() }

// Sink receives the ops of a run as they complete. It streams them to a
// JSONL writer, flushed after every op so that an interrupted run loses
// nothing, and keeps them for the caller. It is safe for concurrent use.
type Sink struct {
	mu       sync.Mutex
	jw       *measure.JSONLWriter
	ops      []measure.Op
	progress Progress
	err      error
}

// NewSink returns a sink streaming to w, or only keeping the ops when w is
// nil.
func NewSink(w io.Writer) *Sink {
	s := &Sink{}
	if w != nil {
		s.jw = measure.NewJSONLWriter(w)
	}
	return s
}

// Add records one op.
func (s *Sink) Add(op measure.Op) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ops = append(s.ops, op)
	s.progress.add(op)
	if s.jw != nil && s.err == nil {
		if err := s.jw.Write(op); err != nil {
			s.err = err
		} else if err := s.jw.Flush(); err != nil {
			s.err = err
		}
	}
}

// Ops returns the ops recorded so far, in order of completion.
func (s *Sink) Ops() []measure.Op {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]measure.Op(nil), s.ops...)
}

// Progress returns the counts so far.
func (s *Sink) Progress() Progress {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.progress
}

// Err returns the first error writing the trace.
func (s *Sink) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// LiveOptions configures a run in real time against a store.
type LiveOptions struct {
	Workload Workload
	// Store is measured by PlacementThread and PlacementThreads.
	Store Store
	// WriterStore, if set, is used instead by the clients that only write
	// (a writer at another site than the readers).
	WriterStore Store
	// Trace receives every op as one JSONL line as soon as it completes.
	// Optional.
	Trace io.Writer
	// Progress, if set, is called every ProgressEvery (default 5s) and
	// once at the end.
	Progress      func(Progress)
	ProgressEvery time.Duration
	// Spawn starts the worker process of one role (PlacementProcesses):
	// it must run Worker with spec, startUS and a store like Store,
	// writing the role's trace to tracePath, and exit 0. The run waits for
	// it. Workers start their schedules together, at startUS (a second
	// after Live starts, to give the processes time to start).
	Spawn func(ctx context.Context, spec RoleSpec, startUS int64, tracePath string) (Process, error)
	// WorkDir holds the workers' traces (PlacementProcesses). Required
	// then.
	WorkDir string
}

// Process is a started worker process.
type Process interface {
	Wait() error
}

// Live runs the workload in real time and returns its ops in order of
// completion (for PlacementProcesses, the merged workers' traces in order
// of invocation). A cancelled context ends the run early without error:
// what was done is returned and was already streamed to Trace.
func Live(ctx context.Context, o LiveOptions) ([]measure.Op, error) {
	w := o.Workload
	w.EnsureDefaults()
	if err := w.Validate(); err != nil {
		return nil, err
	}
	if o.ProgressEvery <= 0 {
		o.ProgressEvery = 5 * time.Second
	}
	sink := NewSink(o.Trace)
	clock := NewClock()
	startUS := clock.NowUS()
	var err error
	if w.Placement == PlacementProcesses {
		paths := workerPaths(o.WorkDir, w.Roles())
		stopProgress := startProgress(o.Progress, o.ProgressEvery, w.Run, clock, startUS, func() Progress { return countOps(paths) })
		err = liveProcesses(ctx, o, w, sink, startUS+int64(workerStartDelay/time.Microsecond))
		stopProgress()
	} else {
		stopProgress := startProgress(o.Progress, o.ProgressEvery, w.Run, clock, startUS, sink.Progress)
		if o.Store == nil {
			stopProgress()
			return nil, errors.New("measure: Live needs a Store")
		}
		var count atomic.Int64
		var wg sync.WaitGroup
		for _, spec := range w.Roles() {
			spec.MaxOps = w.MaxOps // in-process roles share the run's count
			store := o.Store
			if o.WriterStore != nil && !spec.Read {
				store = o.WriterStore
			}
			wg.Go(func() { liveRole(ctx, store, spec, sink, clock, startUS, &count) })
		}
		wg.Wait()
		stopProgress()
	}
	if err == nil {
		err = sink.Err()
	}
	return sink.Ops(), err
}

// startProgress calls report every interval until the returned stop is
// called, which reports once more.
func startProgress(report func(Progress), every time.Duration, runName string, clock Clock, startUS int64, snapshot func() Progress) (stop func()) {
	if report == nil {
		return func() {}
	}
	snap := func() Progress {
		p := snapshot()
		p.Run, p.Elapsed = runName, time.Duration(clock.NowUS()-startUS)*time.Microsecond
		return p
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				report(snap())
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
		report(snap())
	}
}

// Worker runs one role in real time against store, streaming its ops to
// trace: the body of a worker process (PlacementProcesses). The role's
// schedule starts at startUS on the clock (the parent's choice, so that
// all workers share one schedule); until then the worker waits.
func Worker(ctx context.Context, store Store, spec RoleSpec, startUS int64, trace io.Writer) ([]measure.Op, error) {
	if spec.Client == "" || len(spec.Keys) == 0 || spec.Duration <= 0 || spec.MaxOps < 1 ||
		(spec.Write && spec.WriteEvery <= 0) || (spec.Read && spec.ReadHz <= 0) || (!spec.Write && !spec.Read) {
		return nil, fmt.Errorf("%w: worker spec %+v", ErrInvalidWorkload, spec)
	}
	sink := NewSink(trace)
	var count atomic.Int64
	liveRole(ctx, store, spec, sink, NewClock(), startUS, &count)
	return sink.Ops(), sink.Err()
}

// liveRole runs one role's plan until its schedule ends, the shared count
// reaches spec.MaxOps or ctx is done.
func liveRole(ctx context.Context, store Store, spec RoleSpec, sink *Sink, clock Clock, startUS int64, count *atomic.Int64) {
	p := newPlan(spec, nil)
	c := newOpMaker(spec)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for ctx.Err() == nil {
		now := time.Duration(clock.NowUS()-startUS) * time.Microsecond
		s, at, ok := p.next(max(now, 0))
		if !ok {
			return
		}
		if wait := at - now; wait > 0 {
			// Wake up every 100 ms to notice the other roles have used up
			// the op limit.
			for wait > 0 && count.Load() < int64(spec.MaxOps) {
				timer.Reset(min(wait, 100*time.Millisecond))
				select {
				case <-ctx.Done():
					return
				case <-timer.C:
				}
				wait = at - time.Duration(clock.NowUS()-startUS)*time.Microsecond
			}
		}
		if count.Add(1) > int64(spec.MaxOps) {
			return
		}
		callUS := clock.NowUS()
		op := c.start(s, callUS)
		if s.write {
			out, err := store.Write(ctx, s.key, op.Value, spec.WriteOption)
			c.finish(&op, clock.NowUS(), out, err)
		} else {
			value, found, out, err := store.Read(ctx, s.key, spec.ReadOption)
			if !found {
				value = ""
			}
			op.Value = value
			c.finish(&op, clock.NowUS(), out, err)
		}
		if ctx.Err() != nil && !op.OK {
			return // interrupted mid-call: not a store failure
		}
		sink.Add(op)
	}
}

// opMaker makes the ops of one client.
type opMaker struct {
	spec RoleSpec
	seq  int
}

func newOpMaker(spec RoleSpec) *opMaker { return &opMaker{spec: spec} }

// start returns the op for step s invoked at callUS; a write's value is
// "<client>-<seq>-<call_us>", unique in the run (Wada 2: the value written
// is the current time).
func (c *opMaker) start(s step, callUS int64) measure.Op {
	op := measure.Op{Run: c.spec.Run, Client: c.spec.Client, Key: s.key, CallUS: callUS}
	if s.write {
		c.seq++
		op.Kind, op.Role, op.Option = measure.KindWrite, measure.RoleWriter, c.spec.WriteOption
		op.Value = fmt.Sprintf("%s-%d-%d", c.spec.Client, c.seq, callUS)
	} else {
		op.Kind, op.Role, op.Option = measure.KindRead, measure.RoleReader, c.spec.ReadOption
	}
	return op
}

func (c *opMaker) finish(op *measure.Op, returnUS int64, out Outcome, err error) {
	op.ReturnUS = max(returnUS, op.CallUS)
	op.OK = err == nil
	op.Consistency, op.Replica = out.Consistency, out.Replica
	if err != nil {
		op.Error = err.Error()
		if op.Kind == measure.KindRead {
			op.Value = ""
		}
	}
}

// liveProcesses starts a worker per role, waits for all of them and merges
// their traces into sink in order of invocation.
func liveProcesses(ctx context.Context, o LiveOptions, w Workload, sink *Sink, startUS int64) error {
	if o.Spawn == nil || o.WorkDir == "" {
		return errors.New("measure: PlacementProcesses needs Spawn and WorkDir")
	}
	if err := os.MkdirAll(o.WorkDir, 0o755); err != nil {
		return err
	}
	roles := w.Roles()
	paths := workerPaths(o.WorkDir, roles)
	procs := make([]Process, 0, len(roles))
	var firstErr error
	for i, spec := range roles {
		p, err := o.Spawn(ctx, spec, startUS, paths[i])
		if err != nil {
			firstErr = fmt.Errorf("measure: starting worker %s: %w", spec.Client, err)
			break
		}
		procs = append(procs, p)
	}
	for i, p := range procs {
		if err := p.Wait(); err != nil && firstErr == nil && ctx.Err() == nil {
			firstErr = fmt.Errorf("measure: worker %s: %w", roles[i].Client, err)
		}
	}
	merged, err := MergeTraces(paths[:len(procs)])
	if err != nil && firstErr == nil {
		firstErr = err
	}
	for _, op := range merged {
		sink.Add(op)
	}
	return firstErr
}

// MergeTraces reads the JSONL traces at paths (a missing file is empty)
// and returns all their ops ordered by invocation time, then by file
// order.
func MergeTraces(paths []string) ([]measure.Op, error) {
	var all []measure.Op
	for _, path := range paths {
		f, err := os.Open(path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		ops, err := measure.ReadJSONL(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("measure: %s: %w", path, err)
		}
		all = append(all, ops...)
	}
	sortByCall(all)
	return all, nil
}

// workerStartDelay is how long after Live starts the workers' common
// schedule begins, so that every process is up by then.
const workerStartDelay = time.Second

func workerPaths(dir string, roles []RoleSpec) []string {
	paths := make([]string, len(roles))
	for i, spec := range roles {
		paths[i] = filepath.Join(dir, spec.Client+".jsonl")
	}
	return paths
}

// countOps counts the lines the workers have written so far, for progress.
func countOps(paths []string) Progress {
	var p Progress
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		p.Ops += bytes.Count(data, []byte("\n"))
	}
	return p
}

// sortByCall orders ops by invocation time, keeping the order of ties.
func sortByCall(ops []measure.Op) {
	slices.SortStableFunc(ops, func(a, b measure.Op) int { return cmp.Compare(a.CallUS, b.CallUS) })
}
