package driver

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/cosla/cosla/internal/core/clientcore"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/sla"
)

// ErrInvalid is wrapped by the errors of a bad Spec or Mix.
var ErrInvalid = errors.New("driver: invalid run")

// ErrUnsupported is an op's error when its target cannot perform its
// kind or option.
var ErrUnsupported = errors.New("driver: operation not supported by the target")

// A Target is the store a run drives (a cosla client in the simulator or
// over the network, or another store): it opens a client per group.
type Target interface {
	// Open prepares group g's client: called by New, before the run
	// starts and not on the loop; in the simulator it may run the
	// simulation (to open a table, say).
	Open(g *Group) (Client, error)
}

// A Client is one group's connection to the target.
type Client interface {
	// Begin begins a session; it is called on the loop.
	Begin(name string) (Session, error)
	// Close releases the client once the run is over.
	Close()
}

// A Session performs one op at a time.
type Session interface {
	// Do performs op, whose Kind, Key, Option, Client, Session, Value and
	// ValueID are set. It sets op's Start and End, on the runtime's clock,
	// and its outcome, then calls done on the loop, once, and never before
	// Do has returned.
	Do(op *Op, done func())
	// End ends the session; later ops in it fail.
	End()
}

// ParallelTarget is a Target whose Open may run for several groups at
// once, as over a real network, where each client's connections and
// first probes wait on round trips of their own: New then opens them
// concurrently.
type ParallelTarget interface {
	Target
	ParallelOpen()
}

// Prober is a Client that counts the probes its monitor sent (Pileus 4.5).
type Prober interface {
	Probes() uint64
}

// Cosla is how a cosla target opens a group's client and sessions.
type Cosla struct {
	// SLA and Strategy are the sessions' defaults for Gets (Pileus 3.1);
	// Get the options of every Get.
	SLA      sla.SLA
	Strategy clientcore.Strategy
	Get      clientcore.GetOptions
	// PutBound bounds the Puts whose op carries no bound (dConssandra);
	// Get.Bound does the same for Gets.
	PutBound wire.Bound
	// Policy sets each session's read and write levels and delay (CPQ).
	Policy clientcore.Policy
	// Client configures the group's client core; the target fills Nodes.
	Client clientcore.Options
}

// A Group is a set of sessions at one client site with one configuration
// and one source of steps: "the U.S. client with Pileus", "64 YCSB
// clients", "Wada's writer".
type Group struct {
	// Name names the group in statistics; its sessions are Name (one
	// session) or Name#1, Name#2, ... (several).
	Name string
	// Site is the client site (cosla targets).
	Site string
	// Sessions is the number of session slots. Default 1.
	Sessions int
	// SessionSteps, if positive, makes a slot begin a new session after
	// that many steps (Pileus 5.1: sessions of 400 operations).
	SessionSteps int
	// Streams drive each slot: one closed loop, or one or more periodic
	// streams. Used unless Rate is set.
	Streams []Stream
	// Rate, if positive, drives the group in an open loop instead: steps
	// drawn from Mix arrive as a Poisson process of Rate per second, each
	// taken by a free slot; an arrival that finds every slot busy is shed
	// (counted, not queued), so at most Sessions steps are in flight.
	Rate float64
	Mix  Mix
	// Rand is the group's random source: the steps drawn, jitter and open
	// loop arrivals. Required.
	Rand *rand.Rand
	// Cosla configures a cosla target's client.
	Cosla Cosla
}

// Spec is one run.
type Spec struct {
	Groups []*Group
	// Duration: no step starts at or after it on the run's clock. Steps:
	// no more than that many steps start in all. At least one is set.
	Duration time.Duration
	Steps    int
	// Warmup: steps that start before it run but are left out of the
	// statistics (not of the trace).
	Warmup time.Duration
	// Recorder records what happened. Required.
	Recorder *Recorder
}

// Driver runs a Spec: it starts each session's steps when their time
// comes, issues their ops to the target and hands what happened to the
// recorder. It lives on its runtime's loop: New, then Start, then run
// the loop (the simulator, or Loop.Run) until Done.
type Driver struct {
	spec    Spec
	rt      Runtime
	origin  time.Duration // the runtime's clock when the run started
	groups  []*group
	started int
	active  int // sessions and open-loop arrival processes not finished
	stopped bool
	err     error
}

type group struct {
	*Group
	d        *Driver
	client   Client
	sessions []*session
	free     []*session // open loop: slots not busy
	arriving bool       // open loop: arrivals continue
}

type session struct {
	g       *group
	name    string
	cur     Session
	begun   int // sessions begun in this slot
	inCur   int // steps started in the current session
	streams []*streamState
	writes  int        // values written, for their identities
	pad     *rand.Rand // the padding of values, apart from Rand's draws
	busy    bool
	step    Step
	stream  *streamState // the step's stream, nil in an open loop
	op      int          // index of the op in flight
	record  bool         // the step started after the warmup
	done    bool
}

// padStream is the PCG stream of the values' padding: a source of its own
// per session, so that the steps a group draws do not depend on when its
// sessions write.
const padStream = 0x76616c7565

// Validate reports the first thing wrong with the spec.
func (s *Spec) Validate() error {
	switch {
	case len(s.Groups) == 0:
		return fmt.Errorf("%w: no groups", ErrInvalid)
	case s.Duration < 0 || s.Steps < 0 || s.Warmup < 0:
		return fmt.Errorf("%w: negative duration, steps or warmup", ErrInvalid)
	case s.Duration == 0 && s.Steps == 0:
		return fmt.Errorf("%w: neither a duration nor a number of steps bounds the run", ErrInvalid)
	case s.Recorder == nil:
		return fmt.Errorf("%w: no recorder", ErrInvalid)
	}
	names := map[string]bool{}
	for i, g := range s.Groups {
		if g.Sessions == 0 {
			g.Sessions = 1
		}
		field := fmt.Sprintf("groups[%d] (%s)", i, g.Name)
		switch {
		case g.Name == "" || names[g.Name]:
			return fmt.Errorf("%w: %s: name empty or repeated", ErrInvalid, field)
		case g.Sessions < 0 || g.SessionSteps < 0:
			return fmt.Errorf("%w: %s: negative sessions or session steps", ErrInvalid, field)
		case g.Rand == nil:
			return fmt.Errorf("%w: %s: no random source", ErrInvalid, field)
		case g.Rate < 0:
			return fmt.Errorf("%w: %s: negative rate", ErrInvalid, field)
		case g.Rate > 0 && (g.Mix == nil || len(g.Streams) > 0):
			return fmt.Errorf("%w: %s: an open loop takes a mix and no streams", ErrInvalid, field)
		case g.Rate == 0 && len(g.Streams) == 0:
			return fmt.Errorf("%w: %s: no streams and no rate", ErrInvalid, field)
		}
		names[g.Name] = true
		for j, st := range g.Streams {
			switch {
			case st.Mix == nil:
				return fmt.Errorf("%w: %s: streams[%d] has no mix", ErrInvalid, field, j)
			case st.Every < 0 || st.Offset < 0 || st.Think < 0 || st.From < 0 || st.Until < 0:
				return fmt.Errorf("%w: %s: streams[%d] has a negative time", ErrInvalid, field, j)
			case st.Until > 0 && st.Until <= st.From:
				return fmt.Errorf("%w: %s: streams[%d] ends (until %v) before it begins (from %v)", ErrInvalid, field, j, st.Until, st.From)
			case st.Every == 0 && len(g.Streams) > 1:
				return fmt.Errorf("%w: %s: a closed-loop stream must be a session's only stream", ErrInvalid, field)
			}
		}
	}
	return nil
}

// New validates the spec and opens every group's client on the target.
func New(t Target, spec Spec) (*Driver, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	d := &Driver{spec: spec}
	clients, err := open(t, spec.Groups)
	if err != nil {
		return nil, err
	}
	for gi, g := range spec.Groups {
		gs := &group{Group: g, d: d, client: clients[gi]}
		for i := range g.Sessions {
			name := g.Name
			if g.Sessions > 1 {
				name += "#" + strconv.Itoa(i+1)
			}
			s := &session{g: gs, name: name, pad: rand.New(rand.NewPCG(uint64(i), padStream))}
			for j := range g.Streams {
				st := &streamState{Stream: &g.Streams[j], offset: g.Streams[j].Offset}
				if st.Stagger {
					st.offset += time.Duration(i) * st.Every / time.Duration(g.Sessions)
				}
				s.streams = append(s.streams, st)
			}
			gs.sessions = append(gs.sessions, s)
		}
		d.groups = append(d.groups, gs)
	}
	return d, nil
}

// open opens every group's client, at once on a ParallelTarget; on an
// error it closes those it opened.
func open(t Target, groups []*Group) ([]Client, error) {
	clients := make([]Client, len(groups))
	errs := make([]error, len(groups))
	openOne := func(i int) {
		if clients[i], errs[i] = t.Open(groups[i]); errs[i] != nil {
			errs[i] = fmt.Errorf("driver: group %s: %w", groups[i].Name, errs[i])
		}
	}
	if _, ok := t.(ParallelTarget); ok {
		var wg sync.WaitGroup
		for i := range groups {
			wg.Go(func() { openOne(i) })
		}
		wg.Wait()
	} else {
		for i := range groups {
			if openOne(i); errs[i] != nil {
				break
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		for _, c := range clients {
			if c != nil {
				c.Close()
			}
		}
		return nil, err
	}
	return clients, nil
}

// Start schedules the run on rt: the sessions' first steps, and the open
// loops' first arrivals. The run's clock reads zero now.
func (d *Driver) Start(rt Runtime) { d.StartAt(rt, rt.Now()) }

// StartAt is Start with the run's clock reading zero at origin on rt's
// clock, which may be past or to come: worker processes that share one
// schedule start their runs at its origin, and one that starts late skips
// the slots that have passed, as a late session does.
func (d *Driver) StartAt(rt Runtime, origin time.Duration) {
	d.rt, d.origin = rt, origin
	d.spec.Recorder.start(d.spec.Groups, d.spec.Warmup, d.origin)
	for _, g := range d.groups {
		if g.Rate > 0 {
			// The arrival process, and each slot until it finishes.
			d.active += 1 + len(g.sessions)
			g.arriving = true
			g.free = append(g.free, g.sessions...)
			rt.After(g.gap(), g.arrive)
			continue
		}
		for _, s := range g.sessions {
			d.active++
			rt.After(0, s.free)
		}
	}
}

// Done reports whether every session has finished and no op is in
// flight.
func (d *Driver) Done() bool { return d.rt != nil && d.active == 0 }

// Err returns the error that stopped the run early, if any.
func (d *Driver) Err() error { return d.err }

// Stop starts no more steps; the steps in flight finish. Call it on the
// loop.
func (d *Driver) Stop() {
	d.stopped = true
	d.endIdle()
}

// endIdle finishes every idle session and ends the open loops' arrivals
// once no step may start any more (Stop, or the step limit used up), so
// that the run is done as soon as the steps in flight are: the timers
// they wait on would start nothing.
func (d *Driver) endIdle() {
	for _, g := range d.groups {
		if g.arriving {
			g.arriving = false
			d.active--
		}
		g.finishIdle()
	}
}

// Close ends the sessions and closes the groups' clients. Call it once
// the run is done, or given up.
func (d *Driver) Close() {
	for _, g := range d.groups {
		for _, s := range g.sessions {
			if s.cur != nil {
				s.cur.End()
				s.cur = nil
			}
		}
		g.client.Close()
	}
}

// Clients returns each group's client, in the order of Spec.Groups.
func (d *Driver) Clients() []Client {
	out := make([]Client, len(d.groups))
	for i, g := range d.groups {
		out[i] = g.client
	}
	return out
}

// Now is the run's clock.
func (d *Driver) Now() time.Duration { return d.rt.Now() - d.origin }

func (d *Driver) fail(err error) {
	if d.err == nil {
		d.err = err
	}
	d.Stop()
}

// mayStart reports whether a step may start at now.
func (d *Driver) mayStart(now time.Duration) bool {
	return !d.stopped && (d.spec.Duration == 0 || now < d.spec.Duration) && (d.spec.Steps == 0 || d.started < d.spec.Steps)
}

// free is called when a session of a closed or periodic group is free:
// it schedules the session's next step.
func (s *session) free() {
	if s.done {
		return
	}
	d := s.g.d
	now := d.Now()
	var next *streamState
	at := time.Duration(-1)
	for _, st := range s.streams {
		if t := st.next(now, s.g.Rand); !st.over(t) && (next == nil || t < at) {
			next, at = st, t
		}
	}
	if next == nil || !d.mayStart(at) {
		s.finish()
		return
	}
	if at == now {
		s.run(next)
		return
	}
	d.rt.After(at-now, func() { s.run(next) })
}

// run starts a step of stream st (nil: the open loop's mix).
func (s *session) run(st *streamState) {
	if s.done {
		return
	}
	d := s.g.d
	now := d.Now()
	if !d.mayStart(now) {
		s.finish()
		return
	}
	mix := s.g.Mix
	if st != nil {
		mix = st.Mix
	}
	if s.cur == nil || (s.g.SessionSteps > 0 && s.inCur >= s.g.SessionSteps) {
		if s.cur != nil {
			s.cur.End()
		}
		s.begun++
		cur, err := s.g.client.Begin(s.name + "#" + strconv.Itoa(s.begun))
		if err != nil {
			d.fail(fmt.Errorf("driver: %s: begin session: %w", s.name, err))
			s.finish()
			return
		}
		s.cur, s.inCur = cur, 0
	}
	step, ok := mix.Next(s.g.Rand)
	if !ok || len(step.Ops) == 0 {
		s.finish()
		return
	}
	if st != nil {
		st.taken()
	}
	d.started++
	s.inCur++
	s.busy, s.step, s.stream, s.op = true, step, st, 0
	s.record = now >= d.spec.Warmup
	if d.spec.Steps > 0 && d.started >= d.spec.Steps {
		d.endIdle()
	}
	s.issue()
}

// issue sends the step's current op to the target.
func (s *session) issue() {
	d := s.g.d
	op := &s.step.Ops[s.op]
	op.Client, op.Session = s.name, s.name+"#"+strconv.Itoa(s.begun)
	op.Step = s.step.label()
	op.Met, op.Target = -1, -1
	if op.Kind.Writes() && op.Value == nil {
		s.writes++
		op.ValueID = valueID(s.name, s.writes, d.spec.Recorder.OriginUS+d.rt.Now().Microseconds())
		op.Value = MakeValue(op.ValueID, s.step.ValueSize, s.pad)
	}
	s.cur.Do(op, s.opDone)
}

// opDone records the op in flight and goes on with the step.
func (s *session) opDone() {
	d := s.g.d
	op := &s.step.Ops[s.op]
	op.Start -= d.origin
	op.End -= d.origin
	if d.stopped && errors.Is(op.Err, context.Canceled) {
		// Cut short by the run's end, not a failure of the store.
		d.spec.Recorder.abort(s.g.Group)
		s.stepDone()
		return
	}
	d.spec.Recorder.op(s.g.Group, op, s.record)
	if op.Refused {
		d.fail(fmt.Errorf("driver: %s: %s %q refused: %w", s.name, op.Kind, op.Key, op.Err))
	}
	if op.Err == nil && s.op+1 < len(s.step.Ops) {
		s.op++
		s.issue()
		return
	}
	first, last := &s.step.Ops[0], op
	d.spec.Recorder.step(s.g.Group, s.step.label(), last.End-first.Start, last.End, op.Err, s.record)
	s.stepDone()
}

// stepDone frees the session for its next step.
func (s *session) stepDone() {
	s.busy = false
	d := s.g.d
	switch {
	case s.stream == nil:
		g := s.g
		if g.arriving {
			g.free = append(g.free, s)
			return
		}
		s.finish()
		g.finishIdle()
	case s.stream.Every == 0:
		d.rt.After(s.stream.Think, s.free)
	default:
		s.free()
	}
}

func (s *session) finish() {
	if s.done {
		return
	}
	s.done = true
	s.g.d.active--
}

// arrive is an open-loop arrival: a step for a free slot, or a shed one.
func (g *group) arrive() {
	if !g.arriving {
		return
	}
	d := g.d
	if !d.mayStart(d.Now()) {
		g.arriving = false
		d.active--
		g.finishIdle()
		return
	}
	if n := len(g.free); n > 0 {
		s := g.free[n-1]
		g.free = g.free[:n-1]
		s.run(nil)
	} else {
		d.spec.Recorder.shed(g.Group)
	}
	d.rt.After(g.gap(), g.arrive)
}

// finishIdle finishes an open loop's idle slots once arrivals have ended.
func (g *group) finishIdle() {
	if g.arriving {
		return
	}
	for _, s := range g.sessions {
		if !s.busy {
			s.finish()
		}
	}
	g.free = nil
}

// gap draws the time to the next open-loop arrival.
func (g *group) gap() time.Duration {
	return time.Duration(g.Rand.ExpFloat64() / g.Rate * float64(time.Second))
}
