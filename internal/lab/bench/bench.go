// Package bench runs a YCSB core workload (package workload) on the
// driver (package driver) and measures it as YCSB's client does (Cooper et
// al. SoCC'10, section 5): latency percentiles per operation kind,
// throughput and error counts. It is the core of `cosla bench`; the store
// is any driver.Target (a cosla cluster through driver.HostTarget, another
// store through driver.StoreTarget).
//
// A System (OpenSystem) is a store by name, started on loopback or
// reached where the user runs it: cosla (a running cluster, or a one-site
// cluster started for the comparison), cosla-nofsync, and the stores of
// package adapters. Its Plan maps a run's weak or strong reads and writes
// to the store's own options (Strength) and names them in the Result's
// Setup. Compare runs one workload on several systems, one run after
// another, at several client counts and read strengths, as many times as
// asked in interleaved rounds, and holds each run's figures (or their
// medians, Summarize) beside the first system's ratios to them (`cosla
// bench compare`).
//
// Run's duties, in order:
//
//  1. Optionally load: a group of Options.Clients sessions writes records 0
//     to RecordCount-1 (workload.Key of each), each once (driver.LoadMix).
//  2. Run: a group of Options.Clients sessions, each in a closed loop,
//     performs the workload's operations (driver.YCSBMix) until
//     Options.Operations have started or Options.Duration has passed; the
//     operations in flight then finish and are counted.
//  3. Report progress every Options.ProgressInterval and once at the end of
//     each phase, and return a Result, with the CPU the run phase used:
//     this process's (the client's), the store's servers' where this
//     process started them (Options.Servers), and the machine's (CPU).
//
// If the caller's context is cancelled, the phase in progress starts no
// more operations; those in flight finish, or are cut short and counted as
// aborted, and Run returns what it measured with an error wrapping
// ctx.Err().
//
// How workload operations become store operations is driver.YCSBMix's
// rule: a read is a Get, an update or insert a Put of
// FieldCount*FieldLength bytes, a read-modify-write a Get then a Put of the
// same key and a scan of n records n Gets, each measured as one operation
// that fails at its first failed Get or Put.
package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/cosla/cosla/internal/lab/driver"
	"github.com/cosla/cosla/internal/lab/workload"
)

// ErrInvalid is wrapped by Options.Validate errors.
var ErrInvalid = errors.New("bench: invalid option")

// MaxClients bounds Options.Clients ("put a limit on everything").
const MaxClients = 4096

// MaxDrain bounds the wait, once the caller's context is cancelled, for
// the operations in flight to finish; those still in flight after it are
// left out of the Result.
const MaxDrain = 10 * time.Second

// DefaultProgressInterval is YCSB's default status interval.
const DefaultProgressInterval = 10 * time.Second

// Options configure Run. The zero value is usable: EnsureDefaults fills in
// what is unset.
type Options struct {
	// Clients is the number of sessions of each phase, each with at most
	// one operation in flight. Default 1, at most MaxClients.
	Clients int
	// Operations bounds the operations of the run phase. Default 0 means
	// the workload's OperationCount; to be bounded by Duration alone, set
	// it to math.MaxUint64.
	Operations uint64
	// Duration bounds the run phase on the loop's clock: no operation
	// starts after it. 0 means no bound. The load phase is bounded by
	// RecordCount and the context only.
	Duration time.Duration
	// Load makes Run write the workload's records before the run phase.
	// Without it the store must already hold them.
	Load bool
	// Seed seeds the operation sequence and the values written. With the
	// same seed and workload the sequence of operations drawn is the same
	// whatever Clients is; which session performs which operation depends
	// on the store's latencies. Print it with the results (STYLE.md
	// habit 2).
	Seed uint64
	// Site is the client site of the sessions, and Cosla their SLA,
	// strategy and client options, for a cosla target (driver.Group's Site
	// and Cosla); other targets ignore them.
	Site  string
	Cosla driver.Cosla
	// ReadOption and WriteOption are the options of every Get and Put
	// (driver.Op.Option), for a store target (driver.StoreTarget): one of
	// the store's read and write options (package adapters); "" is the
	// store's default. A cosla target has none.
	ReadOption, WriteOption string
	// Setup names the store and what its reads and writes do there, for
	// the Result; Run copies it. System.Plan fills it in.
	Setup Setup
	// Servers are the process groups of the store's servers that this
	// process started, whose CPU the run phase's CPU counts as the
	// store's; System.Plan fills them in. None: the store's CPU is not
	// measured.
	Servers []int
	// Progress, if set, is called on the loop every ProgressInterval
	// during each phase and once when the phase ends (Progress.Done). A
	// slow callback delays the loop, and so the operations' completions.
	Progress func(Progress)
	// ProgressInterval is the time between Progress calls. Default
	// DefaultProgressInterval.
	ProgressInterval time.Duration
}

// EnsureDefaults returns a copy of o with every unset field given its
// default (the options idiom of package node), Operations w's.
func (o Options) EnsureDefaults(w *workload.Workload) Options {
	o.Clients = cmp.Or(o.Clients, 1)
	if o.Operations == 0 {
		o.Operations = w.Properties().OperationCount
	}
	o.ProgressInterval = cmp.Or(o.ProgressInterval, DefaultProgressInterval)
	return o
}

// Validate returns an error wrapping ErrInvalid that names the first bad
// field.
func (o Options) Validate() error {
	switch {
	case o.Clients < 1 || o.Clients > MaxClients:
		return fmt.Errorf("%w: Clients = %d, want 1 <= Clients <= %d", ErrInvalid, o.Clients, MaxClients)
	case o.Operations == 0:
		return fmt.Errorf("%w: Operations = 0, want > 0", ErrInvalid)
	case o.Duration < 0:
		return fmt.Errorf("%w: Duration = %v, want >= 0", ErrInvalid, o.Duration)
	case o.ProgressInterval <= 0:
		return fmt.Errorf("%w: ProgressInterval = %v, want > 0", ErrInvalid, o.ProgressInterval)
	}
	return nil
}

// String renders the effective options for logging (STYLE.md habit 5).
func (o Options) String() string {
	return fmt.Sprintf("clients=%d operations=%d duration=%v load=%t seed=%d site=%q sla=%q strategy=%s read_option=%q write_option=%q progress_interval=%v",
		o.Clients, o.Operations, o.Duration, o.Load, o.Seed, o.Site, o.Cosla.SLA.String(), o.Cosla.Strategy, o.ReadOption, o.WriteOption, o.ProgressInterval)
}

// Progress is a snapshot of a phase in progress.
type Progress struct {
	Phase PhaseName
	// Elapsed is the time since the phase started, on the loop's clock.
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

// String renders a progress line: "run 5s  1200 ops, 0 errors, 240 ops/s".
func (p Progress) String() string {
	return fmt.Sprintf("%s %5.0fs  %d ops, %d errors, %.0f ops/s", p.Phase, p.Elapsed.Seconds(), p.Operations, p.Errors, p.ThroughputOpsPerS)
}

// Run runs w against target as opts say, on loop, and returns what it
// measured. It runs loop on the calling goroutine, so loop must not be
// running, and target must hand its results to loop (a driver.HostTarget
// or driver.StoreTarget whose Loop is loop). It returns once the run phase
// is bounded (by operations or duration) and its operations have finished,
// or the caller's context is cancelled: then it returns the partial Result
// with an error wrapping ctx.Err(), so that a command interrupted by a
// signal can still print what it measured.
//
// Run draws from w and so advances it; w must not be used by anything else
// while Run runs.
func Run(ctx context.Context, loop *driver.Loop, target driver.Target, w *workload.Workload, opts Options) (Result, error) {
	opts = opts.EnsureDefaults(w)
	if err := opts.Validate(); err != nil {
		return Result{}, err
	}
	props := w.Properties()
	res := Result{Setup: opts.Setup, Seed: opts.Seed, Clients: opts.Clients, Workload: props.String()}
	r := &runner{ctx: ctx, loop: loop, target: target, opts: opts}

	if opts.Load {
		load := r.withOptions(&driver.LoadMix{N: props.RecordCount, ValueSize: props.ValueBytes()})
		p, err := r.phase(PhaseLoad, load, rand.New(rand.NewPCG(opts.Seed, 2)), steps(props.RecordCount), 0)
		res.Load = &p
		if err != nil {
			return res, err
		}
	}
	// One source for the whole sequence of operations: the draws depend
	// on the seed alone, whatever the number of clients.
	before := sampleCPU(opts.Servers)
	p, err := r.phase(PhaseRun, r.withOptions(driver.YCSBMix{W: w}), rand.New(rand.NewPCG(opts.Seed, 0)), steps(opts.Operations), opts.Duration)
	p.CPU = cpuBetween(before, sampleCPU(opts.Servers))
	res.Run = p
	return res, err
}

// steps converts a count of operations to a driver.Spec's Steps.
func steps(n uint64) int { return int(min(n, math.MaxInt)) }

// runner runs the phases of one Run.
type runner struct {
	ctx    context.Context
	loop   *driver.Loop
	target driver.Target
	opts   Options
}

// withOptions makes mix's Gets and Puts carry the store options, if any.
func (r *runner) withOptions(mix driver.Mix) driver.Mix {
	if r.opts.ReadOption == "" && r.opts.WriteOption == "" {
		return mix
	}
	return optionMix{mix: mix, read: r.opts.ReadOption, write: r.opts.WriteOption}
}

// optionMix sets the option of every Get to read and of every Put to
// write.
type optionMix struct {
	mix         driver.Mix
	read, write string
}

func (m optionMix) Next(r *rand.Rand) (driver.Step, bool) {
	s, ok := m.mix.Next(r)
	for i := range s.Ops {
		switch s.Ops[i].Kind {
		case driver.Get:
			s.Ops[i].Option = m.read
		case driver.Put:
			s.Ops[i].Option = m.write
		}
	}
	return s, ok
}

// phase runs one phase: a group of Clients sessions in a closed loop over
// mix, bounded by maxSteps steps and duration (0: none).
func (r *runner) phase(name PhaseName, mix driver.Mix, rnd *rand.Rand, maxSteps int, duration time.Duration) (Phase, error) {
	rec := &driver.Recorder{}
	g := &driver.Group{Name: string(name), Site: r.opts.Site, Sessions: r.opts.Clients,
		Streams: []driver.Stream{{Mix: mix}}, Rand: rnd, Cosla: r.opts.Cosla}
	d, err := driver.New(r.target, driver.Spec{Groups: []*driver.Group{g}, Steps: maxSteps, Duration: duration, Recorder: rec})
	if err != nil {
		return Phase{Name: name, Stop: StopError}, fmt.Errorf("bench: %s phase: %w", name, err)
	}
	defer d.Close()
	d.Start(r.loop)
	stopProgress := r.progressEvery(name, d, rec)
	ctxErr := r.loop.Run(r.ctx, d.Done)
	stopProgress()
	if ctxErr != nil {
		// The loop is not running, and this goroutine is its only user: it
		// stops the driver and runs the loop again until the operations in
		// flight have finished or been cut short, within MaxDrain.
		d.Stop()
		drain, cancel := context.WithTimeout(context.Background(), MaxDrain)
		_ = r.loop.Run(drain, d.Done)
		cancel()
	}
	p := summarize(name, d.Now(), rec)
	switch {
	case ctxErr != nil:
		p.Stop, err = StopCanceled, fmt.Errorf("bench: %s phase: %w", name, ctxErr)
	case d.Err() != nil:
		p.Stop, err = StopError, fmt.Errorf("bench: %s phase: %w", name, d.Err())
	case p.Operations >= uint64(maxSteps):
		p.Stop = StopComplete
	default:
		p.Stop = StopDuration
	}
	if r.opts.Progress != nil {
		r.opts.Progress(p.progress(true))
	}
	return p, err
}

// progressEvery calls Options.Progress every ProgressInterval on the loop
// until the returned function is called.
func (r *runner) progressEvery(name PhaseName, d *driver.Driver, rec *driver.Recorder) (stop func()) {
	if r.opts.Progress == nil {
		return func() {}
	}
	live := true
	var tick func()
	tick = func() {
		if !live {
			return
		}
		r.opts.Progress(summarize(name, d.Now(), rec).progress(false))
		r.loop.After(r.opts.ProgressInterval, tick)
	}
	r.loop.After(r.opts.ProgressInterval, tick)
	return func() { live = false }
}

// kindOrder orders the kinds of a phase: YCSB's, then any other label.
var kindOrder = func() map[string]int {
	m := map[string]int{}
	for k := range workload.Kind(workload.NumKinds) {
		m[k.String()] = int(k)
	}
	return m
}()

// summarize renders what rec holds of a phase that has lasted elapsed
// (its Stop is left unset).
func summarize(name PhaseName, elapsed time.Duration, rec *driver.Recorder) Phase {
	p := Phase{Name: name, ElapsedMS: float64(elapsed) / float64(time.Millisecond)}
	for _, g := range rec.Groups() {
		p.Operations += uint64(g.Steps)
		p.Aborted += uint64(g.Aborted)
	}
	for _, s := range rec.Stats() {
		p.Errors += uint64(s.Errors)
		p.Kinds = append(p.Kinds, KindStats{Kind: s.Op, Operations: uint64(s.Count), Errors: uint64(s.Errors),
			FirstError: s.FirstError, LatencyMS: s.LatencyMS, LatencyCDF: rec.LatencyCDF(s.Group, s.Op)})
	}
	slices.SortStableFunc(p.Kinds, func(a, b KindStats) int {
		return cmp.Compare(order(a.Kind), order(b.Kind))
	})
	if elapsed > 0 {
		p.ThroughputOpsPerS = float64(p.Operations-p.Errors) / elapsed.Seconds()
	}
	return p
}

func order(kind string) int {
	if i, ok := kindOrder[kind]; ok {
		return i
	}
	return workload.NumKinds
}

func (p Phase) progress(done bool) Progress {
	return Progress{Phase: p.Name, Elapsed: time.Duration(p.ElapsedMS * float64(time.Millisecond)), Operations: p.Operations,
		Errors: p.Errors, ThroughputOpsPerS: p.ThroughputOpsPerS, Done: done}
}
