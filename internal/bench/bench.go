// Package bench runs a YCSB core workload (package workload) against a
// key-value store and measures it: latency histograms per operation kind,
// throughput and error counts, as YCSB's client does (Cooper et al. SoCC'10,
// section 5). It is the core of a "cosla bench" command; the store is
// anything that implements Store (the cosla client, a simulator adapter, the
// in-memory fake of the tests).
//
// Run's duties, in order:
//
//  1. Optionally load: insert records 0 to RecordCount-1 (workload.Key of
//     each) with Options.Clients concurrent clients.
//  2. Run: the clients draw operations from the workload, one shared
//     sequence under a lock, and perform them until Options.Operations have
//     been issued, Options.Duration has passed, or the caller's context is
//     cancelled, whichever comes first.
//  3. Report progress every Options.ProgressInterval and once at the end of
//     each phase, and return a Result.
//
// How workload operations become Store calls:
//
//   - Read, Update and Insert are one call each. Update and Insert write a
//     fresh value of FieldCount*FieldLength bytes: cosla keeps one value per
//     key, so YCSB's fields are concatenated.
//   - ReadModifyWrite is Read then Update of the same key, measured as one
//     operation (YCSB also reports its read and update separately; here the
//     kinds' counts add up to the operations issued).
//   - Scan: cosla has no range scans, so a Scan of n records starting at item
//     i is n point Reads of workload.Key(i), ..., workload.Key(i+n-1), in
//     order, measured as one operation that fails at the first failed read.
//     Keys are hashed, so these are not neighbours in key order; the
//     operation measures the cost of reading n records.
package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cosla/cosla/internal/workload"
)

// Store is what the driver runs a workload against. Implementations must be
// safe for concurrent use by Options.Clients goroutines and should return
// promptly, with ctx.Err() or an error wrapping it, once ctx is done: that
// is how the driver stops clients that are waiting on the store.
type Store interface {
	// Read reads key. A key that has no value is not an error: a workload
	// may read a record whose insert another client has drawn but not yet
	// completed (see workload.Workload.Next).
	Read(ctx context.Context, key string) error
	// Update writes value to an existing key. The store owns value once
	// called; the driver never touches it again.
	Update(ctx context.Context, key string, value []byte) error
	// Insert writes value to a new key. The store owns value once called.
	Insert(ctx context.Context, key string, value []byte) error
}

// ErrInvalid is wrapped by Options.Validate errors.
var ErrInvalid = errors.New("bench: invalid option")

// Limits on options ("put a limit on everything"). MaxClients bounds the
// goroutines Run starts; MaxLatency is the largest latency the histograms
// hold, and longer operations are recorded as MaxLatency.
const (
	MaxClients = 4096
	MaxLatency = time.Hour
)

// DefaultProgressInterval is YCSB's default status interval.
const DefaultProgressInterval = 10 * time.Second

// Options configure Run. The zero value is usable: EnsureDefaults fills in
// what is unset.
type Options struct {
	// Clients is the number of concurrent clients, each a goroutine with at
	// most one operation outstanding. Default 1, at most MaxClients.
	Clients int
	// Operations bounds the operations of the run phase. Default 0 means
	// the workload's OperationCount; to be bounded by Duration alone, set
	// it to math.MaxUint64.
	Operations uint64
	// Duration bounds the run phase in wall-clock time; 0 means no bound.
	// The load phase is bounded by RecordCount and the context only.
	Duration time.Duration
	// Load makes Run insert the workload's records before the run phase.
	// Without it the store must already hold them.
	Load bool
	// Seed seeds the operation sequence and the values written. With the
	// same seed and workload the sequence of operations drawn is the same
	// whatever Clients is; which client performs which operation is up to
	// the scheduler. Print it with the results (STYLE.md habit 2).
	Seed uint64
	// Progress, if set, is called every ProgressInterval during each phase
	// and once when the phase ends (Progress.Done). Calls are never
	// concurrent, and a slow callback delays the next call, not the clients.
	Progress func(Progress)
	// ProgressInterval is the time between Progress calls. Default
	// DefaultProgressInterval.
	ProgressInterval time.Duration
	// Clock is read before and after every operation to measure its
	// latency, and at the start and end of each phase to measure its
	// duration. Default time.Now. Tests inject a fake clock to get exact
	// latencies.
	Clock func() time.Time

	// newTicker, if set, replaces time.NewTicker for Progress, so that a
	// test decides when ticks happen. It returns the tick channel and a
	// function that stops the ticker.
	newTicker func(time.Duration) (<-chan time.Time, func())
	// withDuration, if set, replaces context.WithTimeout for the Duration
	// bound, so that a test decides when the bound passes.
	withDuration func(context.Context, time.Duration) (context.Context, context.CancelFunc)
}

// EnsureDefaults fills unset fields with their defaults, taking Operations
// from w.
func (o *Options) EnsureDefaults(w *workload.Workload) {
	if o.Clients == 0 {
		o.Clients = 1
	}
	if o.Operations == 0 {
		o.Operations = w.Properties().OperationCount
	}
	if o.ProgressInterval == 0 {
		o.ProgressInterval = DefaultProgressInterval
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.withDuration == nil {
		o.withDuration = context.WithTimeout
	}
	if o.newTicker == nil {
		o.newTicker = func(d time.Duration) (<-chan time.Time, func()) {
			t := time.NewTicker(d)
			return t.C, t.Stop
		}
	}
}

// Validate returns an error wrapping ErrInvalid that names the first bad
// field.
func (o Options) Validate() error {
	switch {
	case o.Clients < 1 || o.Clients > MaxClients:
		return fmt.Errorf("%w: Clients = %d, want 1 <= Clients <= %d", ErrInvalid, o.Clients, MaxClients)
	case o.Duration < 0:
		return fmt.Errorf("%w: Duration = %v, want >= 0", ErrInvalid, o.Duration)
	case o.ProgressInterval <= 0:
		return fmt.Errorf("%w: ProgressInterval = %v, want > 0", ErrInvalid, o.ProgressInterval)
	case o.Clock == nil:
		return fmt.Errorf("%w: Clock is nil", ErrInvalid)
	}
	return nil
}

// String renders the effective options for logging (STYLE.md habit 5).
func (o Options) String() string {
	return fmt.Sprintf("clients=%d operations=%d duration=%v load=%t seed=%d progress_interval=%v",
		o.Clients, o.Operations, o.Duration, o.Load, o.Seed, o.ProgressInterval)
}

// Progress is a snapshot of a phase in progress.
type Progress struct {
	Phase PhaseName
	// Elapsed is the time since the phase started, by Options.Clock.
	Elapsed time.Duration
	// Operations counts completed operations, failed ones included.
	Operations uint64
	// Errors counts failed operations.
	Errors uint64
	// ThroughputOpsPerS is successful operations per second of Elapsed.
	ThroughputOpsPerS float64
	// Done is set on the last call of a phase.
	Done bool
}

// Run runs w against store as opts say and returns what it measured. It
// returns when the run phase is bounded (by operations or duration) or ctx
// is cancelled, and all clients have returned. On cancellation it returns
// the partial Result together with an error wrapping ctx.Err(), so a command
// interrupted by a signal can still print what it measured.
//
// Run draws from w and so advances it; w must not be used by anything else
// while Run runs.
func Run(ctx context.Context, store Store, w *workload.Workload, opts Options) (Result, error) {
	opts.EnsureDefaults(w)
	if err := opts.Validate(); err != nil {
		return Result{}, err
	}
	res := Result{Seed: opts.Seed, Clients: opts.Clients, Workload: w.Properties().String()}
	valueBytes := w.Properties().ValueBytes()

	if opts.Load {
		records := w.Properties().RecordCount
		var next atomic.Uint64
		load := newPhase(PhaseLoad, opts, store, valueBytes)
		// Load records are claimed from a counter, not drawn: every record
		// is inserted exactly once whatever the number of clients.
		loadPhase := load.run(ctx, ctx, func() (workload.Op, bool) {
			i := next.Add(1) - 1
			if i >= records {
				return workload.Op{}, false
			}
			return workload.Op{Kind: workload.Insert, Item: i, Key: workload.Key(i)}, true
		})
		res.Load = &loadPhase
		if err := ctx.Err(); err != nil {
			return res, fmt.Errorf("bench: load phase: %w", err)
		}
	}

	runCtx, cancel := ctx, context.CancelFunc(func() {})
	if opts.Duration > 0 {
		runCtx, cancel = opts.withDuration(ctx, opts.Duration)
	}
	defer cancel()
	// One source and one lock for the whole sequence of operations: the
	// workload is a state machine (inserts grow it) and drawing under the
	// lock that also counts issued operations makes the operation count
	// exact and the sequence independent of the number of clients.
	var (
		mu     sync.Mutex
		issued uint64
		r      = rand.New(rand.NewPCG(opts.Seed, 0))
	)
	run := newPhase(PhaseRun, opts, store, valueBytes)
	res.Run = run.run(ctx, runCtx, func() (workload.Op, bool) {
		mu.Lock()
		defer mu.Unlock()
		if issued >= opts.Operations {
			return workload.Op{}, false
		}
		issued++
		return w.Next(r), true
	})
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("bench: run phase: %w", err)
	}
	return res, nil
}

// phase runs one phase: clients take operations from next until it says
// stop or the context is done, and record what happens.
type phase struct {
	name       PhaseName
	opts       Options
	store      Store
	valueBytes int

	completed atomic.Uint64 // operations completed, failed ones included
	failed    atomic.Uint64 // operations failed
	aborted   atomic.Uint64 // operations cut short by the phase's context
	exhausted atomic.Bool   // next has said there are no more operations
	kinds     [workload.NumKinds]recorder
}

func newPhase(name PhaseName, opts Options, store Store, valueBytes int) *phase {
	p := &phase{name: name, opts: opts, store: store, valueBytes: valueBytes}
	for k := range p.kinds {
		p.kinds[k].latencyUS = newHistogram()
	}
	return p
}

// run runs the phase under phaseCtx, a child of the caller's ctx that also
// carries the phase's deadline, and returns its summary.
func (p *phase) run(ctx, phaseCtx context.Context, next func() (workload.Op, bool)) Phase {
	start := p.opts.Clock()
	stopProgress := p.startProgress(start)

	var wg sync.WaitGroup
	for c := range p.opts.Clients {
		wg.Go(func() {
			// The stream 1+c keeps values independent of the operation
			// sequence, which uses stream 0.
			cl := client{phase: p, r: rand.New(rand.NewPCG(p.opts.Seed, 1+uint64(c)))}
			for phaseCtx.Err() == nil {
				op, ok := next()
				if !ok {
					p.exhausted.Store(true)
					return
				}
				cl.do(phaseCtx, op)
			}
		})
	}
	wg.Wait()
	stopProgress()
	end := p.opts.Clock()

	// A deadline that passes after the last operation has completed did not
	// stop anything: the phase was complete.
	stop := StopComplete
	switch {
	case ctx.Err() != nil:
		stop = StopCanceled
	case phaseCtx.Err() != nil && (!p.exhausted.Load() || p.aborted.Load() > 0):
		stop = StopDuration
	}
	summary := p.summary(end.Sub(start), stop)
	if p.opts.Progress != nil {
		p.opts.Progress(p.progress(end.Sub(start), true))
	}
	return summary
}

// startProgress starts the goroutine that calls Options.Progress every
// ProgressInterval and returns a function that stops it and waits for it,
// so that the final call Run makes never overlaps a periodic one.
func (p *phase) startProgress(start time.Time) (stop func()) {
	if p.opts.Progress == nil {
		return func() {}
	}
	ticks, stopTicker := p.opts.newTicker(p.opts.ProgressInterval)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			case <-ticks:
				p.opts.Progress(p.progress(p.opts.Clock().Sub(start), false))
			}
		}
	})
	return func() {
		stopTicker()
		close(done)
		wg.Wait()
	}
}

func (p *phase) progress(elapsed time.Duration, done bool) Progress {
	completed, failed := p.completed.Load(), p.failed.Load()
	return Progress{
		Phase:             p.name,
		Elapsed:           elapsed,
		Operations:        completed,
		Errors:            failed,
		ThroughputOpsPerS: perSecond(completed-failed, elapsed),
		Done:              done,
	}
}

// client performs operations for one goroutine.
type client struct {
	phase *phase
	r     *rand.Rand // for values only
}

// do performs op and records it. An operation that fails because the
// phase's context is done was cut short by the driver stopping, not by the
// store, so it is counted as aborted rather than as an error.
func (c *client) do(ctx context.Context, op workload.Op) {
	p := c.phase
	before := p.opts.Clock()
	err := c.perform(ctx, op)
	after := p.opts.Clock()
	if err != nil && ctx.Err() != nil {
		p.aborted.Add(1)
		return
	}
	p.kinds[op.Kind].record(after.Sub(before), err)
	if err != nil {
		p.failed.Add(1)
	}
	p.completed.Add(1)
}

func (c *client) perform(ctx context.Context, op workload.Op) error {
	s := c.phase.store
	switch op.Kind {
	case workload.Read:
		return s.Read(ctx, op.Key)
	case workload.Update:
		return s.Update(ctx, op.Key, c.value())
	case workload.Insert:
		return s.Insert(ctx, op.Key, c.value())
	case workload.ReadModifyWrite:
		if err := s.Read(ctx, op.Key); err != nil {
			return err
		}
		return s.Update(ctx, op.Key, c.value())
	case workload.Scan:
		for i := range uint64(op.ScanLength) {
			if err := s.Read(ctx, workload.Key(op.Item+i)); err != nil {
				return err
			}
		}
		return nil
	default:
		return fmt.Errorf("bench: unknown operation kind %v", op.Kind)
	}
}

// value returns a fresh value of random lower-case letters, as YCSB writes
// printable values; a fresh slice because the store owns what it is given.
func (c *client) value() []byte {
	v := make([]byte, c.phase.valueBytes)
	for i := 0; i < len(v); i += 8 {
		bits := c.r.Uint64()
		for j := i; j < min(i+8, len(v)); j++ {
			v[j] = 'a' + byte(bits%26)
			bits >>= 8
		}
	}
	return v
}
