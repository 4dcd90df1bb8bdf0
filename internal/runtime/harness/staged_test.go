package harness_test

import (
	"cmp"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cosla/cosla/internal/core/clientcore"
	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/lab/check"
	"github.com/cosla/cosla/internal/lab/driver"
	"github.com/cosla/cosla/internal/runtime/harness"
	"github.com/cosla/cosla/internal/runtime/sim"
)

// Staged writes and bounded reads in TestRandomized (dConssandra;
// DESIGN.md section 4). Half the worlds, drawn from a stream of their own
// so that the other half are the worlds their seeds made before, run a
// share of their Puts with a bound (Immediate, 1 ms to 2 s, or
// Unbounded), some as ReadTestWrites, and a share of their Gets with a
// bound, through stagedTarget. Beside the random faults, a receiver that
// sends a staged write to its primary is now and then crashed before the
// primary's acknowledgement can reach it, and the link between a client's
// receiver and the primary now and then cut as the write is sent.
//
// Every world's ledger watches what the nodes send (harness
// Options.Observe) and rebuilds each primary's order of versions: the
// primary sends the timestamp of each write it orders in the event that
// orders it (a ForwardAck to the receiver, a PutReply, or a Push), and
// the outcome of each ReadTestWrite it evaluates. From the order it
// checks that every acknowledged Put took effect exactly once, at the
// timestamp its client was given, that each ReadTestWrite's test read the
// test key's value at the write's place in the order, and gives the
// history checker (package check) the timestamps of the pending writes.

// stagedStream numbers the random stream of a world's staged operations;
// the stream stagedStream+1+i draws group i's.
const stagedStream = 0x7374616765

// stagedWorld is a world's share of bounded operations.
type stagedWorld struct {
	on bool
	// boundShare of the Puts and Gets have a bound; testShare of the
	// Puts are ReadTestWrites.
	boundShare, testShare float64
	// crashes and cuts are the targeted faults left (see target), and
	// crashed and cut those done.
	crashes, cuts, crashed, cut int
	r                           *rand.Rand
}

// randomStaged makes half the worlds staged, if allowed.
func randomStaged(seed uint64, allowed bool) stagedWorld {
	r := rand.New(rand.NewPCG(seed, stagedStream))
	sw := stagedWorld{on: r.IntN(2) == 0 && allowed, r: r}
	if sw.on {
		sw.boundShare = 0.2 + 0.7*r.Float64()
		sw.testShare = 0.3 * r.Float64()
		sw.crashes, sw.cuts = r.IntN(5), r.IntN(5)
	}
	return sw
}

// bounds are the bounds staged operations draw from.
var bounds = []wire.Bound{wire.Immediate, wire.Bound(time.Millisecond), wire.Bound(10 * time.Millisecond),
	wire.Bound(100 * time.Millisecond), wire.Bound(500 * time.Millisecond), wire.Bound(2 * time.Second), wire.Unbounded}

// stagedOp is what a staged world's op did beyond what driver.Op holds.
type stagedOp struct {
	bound       wire.Bound
	test        *wire.Test
	stage       wire.Stage
	writeID     uint64
	tested      wire.Outcome
	acks        int
	fromSession bool
}

// stagedTarget runs each group of a staged world as its client node of
// the world (the group's name), as driver.SimTarget does, and performs
// some of its ops with a bound or a test, drawn from the world's streams.
// It is driver.doCosla's executor with PutOptions.Bound and Test and
// GetOptions.Bound set: a ReadTestWrite's test here may be of any key of
// its tablet and expect any value, which driver ops do not express.
type stagedTarget struct {
	world *harness.World
	rw    *randomWorld
	sw    *stagedWorld
	keys  map[string]int // keys of each group's mix
	seed  uint64
	ops   map[*driver.Op]*stagedOp
	// counts of the ops, for the run's result.
	bounded, tests int
}

// take returns what op did, once.
func (t *stagedTarget) take(op *driver.Op) *stagedOp {
	s := t.ops[op]
	delete(t.ops, op)
	return s
}

// Open implements driver.Target.
func (t *stagedTarget) Open(g *driver.Group) (driver.Client, error) {
	id := wire.NodeID(g.Name)
	core, err := t.world.Client(id)
	if err != nil {
		return nil, err
	}
	table, err := t.world.OpenTable(id, "t")
	if err != nil {
		return nil, fmt.Errorf("open table t at %s: %w", id, err)
	}
	i := slices.IndexFunc(t.rw.clients, func(c wire.NodeID) bool { return c == id })
	return &stagedClient{t: t, core: core, table: table, cfg: g.Cosla, keys: t.keys[g.Name],
		r: rand.New(rand.NewPCG(t.seed, stagedStream+1+uint64(i)))}, nil
}

type stagedClient struct {
	t     *stagedTarget
	core  *clientcore.Client
	table *clientcore.Table
	cfg   driver.Cosla
	keys  int
	r     *rand.Rand
}

func (c *stagedClient) Begin(string) (driver.Session, error) {
	s, err := c.core.BeginSession(c.table, c.cfg.SLA, c.cfg.Strategy)
	if err == nil {
		err = s.SetPolicy(c.cfg.Policy)
	}
	if err != nil {
		return nil, err
	}
	return &stagedSession{c: c, s: s, seen: map[string][]byte{}}, nil
}

func (c *stagedClient) Close() {}

type stagedSession struct {
	c *stagedClient
	s *clientcore.Session
	// seen is the value the session last wrote or read of each key, which
	// its ReadTestWrites mostly expect.
	seen map[string][]byte
}

func (s *stagedSession) End() { s.c.core.EndSession(s.s) }

// bound draws a bound, or none.
func (s *stagedSession) bound() wire.Bound {
	r := s.c.r
	if r.Float64() >= s.c.t.sw.boundShare {
		return wire.NoBound
	}
	return bounds[r.IntN(len(bounds))]
}

// test draws a ReadTestWrite's test of key or another key of its
// tablet: mostly that it holds the value the session last saw.
func (s *stagedSession) test(key string) *wire.Test {
	r, rw := s.c.r, s.c.t.rw
	if r.Float64() >= s.c.t.sw.testShare {
		return nil
	}
	testKey := key
	if r.IntN(2) == 0 {
		other := fmt.Sprintf("k%d", r.IntN(s.c.keys))
		if rw.layout.TabletFor(other) == rw.layout.TabletFor(key) {
			testKey = other
		}
	}
	t := &wire.Test{Key: testKey}
	if v, ok := s.seen[testKey]; ok && r.IntN(4) != 0 {
		t.Found, t.Value = true, v
	}
	return t
}

func (s *stagedSession) Do(op *driver.Op, done func()) {
	c, w := s.c, s.c.t.world
	inDo := true
	finish := func() {
		if inDo {
			w.Sim.After(0, done)
			return
		}
		done()
	}
	defer func() { inDo = false }()
	info := &stagedOp{}
	c.t.ops[op] = info
	now := func() time.Duration { return w.Sim.Now() }
	op.Start = now()
	var err error
	switch op.Kind {
	case driver.Put:
		o := clientcore.PutOptions{Bound: s.bound(), Test: s.test(op.Key)}
		info.bound, info.test = o.Bound, o.Test
		if o.Bound != wire.NoBound {
			c.t.bounded++
		}
		if o.Test != nil {
			c.t.tests++
			op.Option = "read-test-write"
		}
		value := op.Value
		err = c.core.Put(s.s, op.Key, value, o, func(r clientcore.PutResult, err error) {
			op.End, op.Err, op.Node, op.TS, op.RTT = now(), err, string(r.Node), r.TS, r.RTT
			op.Primary = r.Node == c.t.rw.layout.Tablets[c.t.rw.layout.TabletFor(op.Key)].Primary
			op.Level, op.Acks = r.Level, r.Acks
			info.stage, info.writeID, info.tested, info.acks = r.Stage, r.WriteID, r.Tested, r.Acks
			if err == nil && (o.Test == nil || r.Tested == wire.Held) {
				s.seen[op.Key] = value
			}
			finish()
		})
	case driver.Get:
		o := c.cfg.Get
		o.Bound = s.bound()
		info.bound = o.Bound
		if o.Bound != wire.NoBound {
			c.t.bounded++
		}
		err = c.core.Get(s.s, op.Key, o, func(r clientcore.GetResult, err error) {
			op.End, op.Err = now(), err
			op.Node, op.Primary, op.RTT, op.Met, op.Target = string(r.Node), r.Primary, r.RTT, r.Met, r.Target
			op.Level = r.Level
			op.Extra += r.Retries
			if r.Hedged {
				op.Extra++
			}
			if r.Met >= 0 {
				op.SubSLA, op.Consistency = r.SubSLA, r.SubSLA.Consistency.String()
			}
			info.fromSession = r.FromSession
			if err == nil {
				op.Found, op.TS = r.Found, r.VersionTS
				if r.Found {
					op.ValueID = driver.ValueID(r.Value)
					s.seen[op.Key] = r.Value
				}
			}
			finish()
		})
	default:
		err = fmt.Errorf("%w: %s on cosla", driver.ErrUnsupported, op.Kind)
	}
	if err != nil {
		op.End, op.Err, op.Refused = now(), err, true
		finish()
	}
}

// apply makes the checker's view of a staged world's op: a pending write
// is acknowledged without a timestamp (the ledger gives it later); a
// ReadTestWrite whose test failed, or whose outcome its client does not
// know, is indeterminate; a Put's level is the replicas that held it
// when it was answered, and a Get answered from the session asked none.
func (s *stagedOp) apply(c *check.Op) {
	switch c.Kind {
	case check.Put:
		if s.bound == wire.NoBound && s.test == nil {
			return
		}
		c.Level = 0
		switch {
		case !c.OK:
		case s.test != nil && c.TS.IsZero():
			c.OK = false
		case c.TS.IsZero():
			c.Pending = true
		default:
			c.Level = s.acks
		}
	case check.Get:
		if s.fromSession {
			c.FromSession, c.Level = true, 0
		}
	}
}

// target injects the targeted faults as the nodes send: it crashes a
// receiver that forwards a staged write, mostly before the primary's
// acknowledgement can come back, and cuts the link between a bounded
// Put's receiver and the primary as the client sends it, so that the
// forward or its acknowledgement is lost (healing it may end a
// partition of the random faults early). Nothing is injected within a
// few seconds of workEnd, when the run heals the world.
func (sw *stagedWorld) target(w *harness.World, rw *randomWorld, workEnd time.Duration, from, to wire.NodeID, m wire.Msg) {
	now := w.Sim.Now()
	if !sw.on || now+8*time.Second > workEnd {
		return
	}
	r := sw.r
	switch m := m.(type) {
	case *wire.Forward:
		if sw.crashes == 0 || r.IntN(20) != 0 {
			return
		}
		sw.crashes--
		sw.crashed++
		crash := time.Duration(r.Int64N(int64(300 * time.Millisecond)))
		restart := crash + time.Duration(r.Int64N(int64(5*time.Second)))
		w.Sim.After(crash, func() { _ = w.Sim.Crash(from) })
		w.Sim.After(restart, func() { _ = w.Sim.Restart(from) })
	case *wire.PutRequest:
		primary := rw.layout.Tablets[m.Tablet.Tablet].Primary
		if m.Bound == wire.NoBound || to == primary || sw.cuts == 0 || r.IntN(10) != 0 {
			return
		}
		sw.cuts--
		sw.cut++
		a, _ := w.Sim.Site(to)
		b, _ := w.Sim.Site(primary)
		cut := time.Duration(r.Int64N(int64(3 * time.Second)))
		_ = w.Sim.Partition(a, b)
		w.Sim.After(cut, func() { _ = w.Sim.Heal(a, b) })
	}
}

// forwardID names a staged write: its receiver, tablet and number.
type forwardID struct {
	receiver wire.NodeID
	tablet   int32
	seq      uint64
}

// requestID names a client's request.
type requestID struct {
	client wire.NodeID
	req    uint64
}

// versionID names a version in its tablet.
type versionID struct {
	tablet int32
	ts     hlc.Timestamp
}

// evaluation is one write a primary ordered, or one ReadTestWrite whose
// test failed (ts zero), at position pos of its tablet's order.
type evaluation struct {
	tablet     int32
	pos        int
	key, value string
	ts         hlc.Timestamp
	test       *wire.Test
	refused    wire.Code // not OK: the primary refused the write
	at         time.Duration
	// gone: a failover's new epoch started below ts, so the version is
	// rolled back wherever it is held (DESIGN.md section 10), from
	// position gonePos of the order on: a test evaluated before that
	// read it.
	gone    bool
	gonePos int
	// by is the node that sent it, a primary of the tablet.
	by wire.NodeID
}

func (e *evaluation) String() string {
	s := fmt.Sprintf("%q=%q", e.key, e.value)
	switch {
	case e.refused != wire.OK:
		s += fmt.Sprintf(" refused (%s)", e.refused)
	case e.ts.IsZero():
		s += " not written (test failed)"
	default:
		s += "@" + e.ts.String()
	}
	if e.test != nil {
		s += fmt.Sprintf(" test %s", testString(e.test))
	}
	s += fmt.Sprintf(" at %s, #%d of tablet %d", sim.FormatTime(e.at), e.pos, e.tablet)
	if e.gone {
		s += ", rolled back"
	}
	return s
}

func testString(t *wire.Test) string {
	if !t.Found {
		return fmt.Sprintf("%q absent", t.Key)
	}
	return fmt.Sprintf("%q=%q", t.Key, t.Value)
}

// ledger rebuilds each primary's order of versions from the messages the
// nodes send (see the top of this file). A tablet's order runs on across
// failovers: the configuration service's EpochChange names the next
// primary and the epoch's start, above which the old epoch's versions
// are gone (rolled back).
type ledger struct {
	w  *harness.World
	rw *randomWorld
	// layout is the table's layout as the configuration service last
	// changed it, epochs each tablet's epoch and starts its start,
	// primaries every node that has been a tablet's primary (whose
	// messages carry its order).
	layout    wire.Layout
	epochs    map[int32]uint64
	starts    map[int32]hlc.Timestamp
	primaries map[int32][]wire.NodeID
	// from is the sender of the message being observed.
	from wire.NodeID
	// acks are the Puts the primaries acknowledged, at their epochs
	// (check.CheckEpochs).
	acks []check.Ack
	// origin is the simulated time when the driver's run began: the
	// history's times, and the evaluations', count from it.
	origin time.Duration

	puts     map[requestID]*wire.PutRequest
	gets     map[requestID]*wire.GetRequest
	forwards map[forwardID]*wire.Forward
	// acked holds the first acknowledgement of each staged write: the one
	// sent as the primary ordered it.
	acked map[forwardID]*wire.ForwardAck
	// resolved holds the Resolved messages sent for each staged write.
	resolved map[forwardID][]*wire.Resolved
	// answered holds the requests a primary evaluated a test of.
	answered map[requestID]bool

	order   map[int32][]*evaluation
	byTS    map[versionID]*evaluation
	byValue map[string][]*evaluation
	// problems are inconsistencies seen as the messages went by.
	problems []string
	// Counts for the run's result: forwards sent again, acknowledgements
	// sent again.
	resent, reacked int
}

func newLedger(w *harness.World, rw *randomWorld) *ledger {
	primaries := map[int32][]wire.NodeID{}
	for i, tb := range rw.layout.Tablets {
		primaries[int32(i)] = []wire.NodeID{tb.Primary}
	}
	return &ledger{w: w, rw: rw, layout: rw.layout, epochs: map[int32]uint64{}, starts: map[int32]hlc.Timestamp{}, primaries: primaries,
		puts: map[requestID]*wire.PutRequest{}, gets: map[requestID]*wire.GetRequest{},
		forwards: map[forwardID]*wire.Forward{}, acked: map[forwardID]*wire.ForwardAck{},
		resolved: map[forwardID][]*wire.Resolved{}, answered: map[requestID]bool{},
		order: map[int32][]*evaluation{}, byTS: map[versionID]*evaluation{}, byValue: map[string][]*evaluation{}}
}

func (l *ledger) problem(format string, args ...any) {
	if len(l.problems) < 20 {
		l.problems = append(l.problems, fmt.Sprintf("%s: ", sim.FormatTime(l.w.Sim.Now()))+fmt.Sprintf(format, args...))
	}
}

// primary reports whether id is, or has been, the primary of ref's
// tablet: what it sends of the tablet's versions comes from the order.
func (l *ledger) primary(ref wire.TabletRef, id wire.NodeID) bool {
	return ref.Table == l.rw.layout.ID && slices.Contains(l.primaries[ref.Tablet], id)
}

// epochChanged takes the configuration service's word that a tablet has
// a new primary: versions ordered above the epoch's start are gone.
func (l *ledger) epochChanged(m *wire.EpochChange) {
	if m.Layout.ID != l.rw.layout.ID || m.Epoch <= max(l.epochs[m.Tablet], 1) {
		return // a resend, a new leader's word on the epoch, or a change of replicas only
	}
	l.epochs[m.Tablet], l.starts[m.Tablet] = m.Epoch, m.Start
	l.layout = m.Layout
	if p := m.Layout.Tablets[m.Tablet].Primary; !slices.Contains(l.primaries[m.Tablet], p) {
		l.primaries[m.Tablet] = append(l.primaries[m.Tablet], p)
	}
	for _, e := range l.order[m.Tablet] {
		if m.Start.Less(e.ts) && !e.gone {
			e.gone, e.gonePos = true, len(l.order[m.Tablet])
		}
	}
}

// ackedPut records a primary's acknowledgement of a Put at its epoch.
func (l *ledger) ackedPut(from wire.NodeID, ref wire.TabletRef) {
	r, err := l.w.Replica(from)
	if err != nil {
		return
	}
	for _, st := range r.Metrics().Tablets {
		if st.Ref == ref {
			l.acks = append(l.acks, check.Ack{Tablet: fmt.Sprint(ref.Tablet), Epoch: st.Epoch, Node: string(from), At: l.w.Sim.Now()})
		}
	}
}

// observe is the world's Options.Observe.
func (l *ledger) observe(from, to wire.NodeID, m wire.Msg) {
	l.from = from
	switch m := m.(type) {
	case *wire.PutRequest:
		l.puts[requestID{from, m.Req}] = m
	case *wire.GetRequest:
		l.gets[requestID{from, m.Req}] = m
	case *wire.Forward:
		id := forwardID{from, m.Tablet.Tablet, m.Seq}
		if f, ok := l.forwards[id]; ok {
			l.resent++
			if f.Key != m.Key || string(f.Value) != string(m.Value) {
				l.problem("%s forwarded write %d of tablet %d as %q=%q, and before as %q=%q", from, m.Seq, id.tablet, m.Key, m.Value, f.Key, f.Value)
			}
			return
		}
		l.forwards[id] = m
	case *wire.ForwardAck:
		// A node the service has named primary, not yet told so, sends
		// a receiver NotPrimary: it ordered nothing.
		if !l.primary(m.Tablet, from) || m.Code == wire.NotPrimary {
			return
		}
		l.forwardAck(from, to, m)
	case *wire.EpochChange:
		l.epochChanged(m)
	case *wire.Resolved:
		id := forwardID{from, m.Tablet.Tablet, m.WriteID}
		l.resolved[id] = append(l.resolved[id], m)
	case *wire.PutReply:
		req, ok := l.puts[requestID{to, m.Req}]
		if _, relayed := l.forwards[forwardID{from, req.Tablet.Tablet, m.WriteID}]; !ok || !l.primary(req.Tablet, from) || relayed {
			// A receiver's answer relays its primary's acknowledgement:
			// also one that is, or was, a primary itself.
			return
		}
		if !m.TS.IsZero() {
			if m.Code == wire.OK && req.Bound == wire.NoBound {
				l.ackedPut(from, req.Tablet)
			}
			l.ordered(req.Tablet.Tablet, req.Key, string(req.Value), m.TS, req.Test, "reply to "+string(to))
		} else if m.Tested == wire.Failed && !l.answered[requestID{to, m.Req}] {
			l.answered[requestID{to, m.Req}] = true
			l.evaluated(&evaluation{tablet: req.Tablet.Tablet, key: req.Key, value: string(req.Value), test: req.Test})
		}
	case *wire.Push:
		if l.primary(m.Tablet, from) {
			l.ordered(m.Tablet.Tablet, m.Entry.Key, string(m.Entry.Value), m.Entry.TS, nil, "push to "+string(to))
		}
	case *wire.PullReply:
		if l.primary(m.Tablet, from) {
			for _, e := range m.Entries {
				l.known(m.Tablet.Tablet, e.Key, string(e.Value), e.TS, fmt.Sprintf("%s's pull reply to %s", from, to))
			}
		}
	case *wire.GetReply:
		req, ok := l.gets[requestID{to, m.Req}]
		if ok && m.Code == wire.OK && m.Found {
			l.known(req.Tablet.Tablet, req.Key, string(m.Value), m.VersionTS, fmt.Sprintf("%s's get reply to %s", from, to))
		}
	}
}

// forwardAck takes a primary's acknowledgement of a staged write: the
// first for the write is sent as the primary orders it. A write whose
// version a failover rolled back before its receiver had the
// acknowledgement is still staged there, and the next epoch's primary
// orders it anew.
func (l *ledger) forwardAck(from, to wire.NodeID, m *wire.ForwardAck) {
	id := forwardID{to, m.Tablet.Tablet, m.Seq}
	if first, ok := l.acked[id]; ok && !l.gone(id.tablet, first) {
		l.reacked++
		if first.Code == wire.OK && first.Tested != wire.Failed && m.TS != first.TS {
			l.problem("%s acknowledged write %d of %s in tablet %d at %s, and before at %s", from, m.Seq, to, id.tablet, m.TS, first.TS)
		}
		return
	}
	l.acked[id] = m
	f, ok := l.forwards[id]
	if !ok {
		l.problem("%s acknowledged write %d of %s in tablet %d, which was never forwarded", from, m.Seq, to, id.tablet)
		return
	}
	switch {
	case m.Code != wire.OK:
		l.evaluated(&evaluation{tablet: id.tablet, key: f.Key, value: string(f.Value), test: f.Test, refused: m.Code})
	case m.Tested == wire.Failed:
		l.evaluated(&evaluation{tablet: id.tablet, key: f.Key, value: string(f.Value), test: f.Test})
	default:
		l.ordered(id.tablet, f.Key, string(f.Value), m.TS, f.Test, "acknowledgement to "+string(to))
	}
}

// gone reports whether the version an acknowledgement ordered was
// rolled back.
func (l *ledger) gone(tablet int32, ack *wire.ForwardAck) bool {
	e, ok := l.byTS[versionID{tablet, ack.TS}]
	return ack.Code == wire.OK && !ack.TS.IsZero() && ok && e.gone
}

// ordered takes a message of a primary that carries the timestamp of a
// version: the first one is sent as the primary orders it.
func (l *ledger) ordered(tablet int32, key, value string, ts hlc.Timestamp, test *wire.Test, how string) {
	e, ok := l.byTS[versionID{tablet, ts}]
	if !ok || e.gone {
		l.evaluated(&evaluation{tablet: tablet, key: key, value: value, ts: ts, test: test})
		return
	}
	if e.key != key || e.value != value {
		l.problem("the %s says tablet %d's version at %s is %q=%q, but it is %s", how, tablet, ts, key, value, e)
	}
	if e.test == nil {
		e.test = test // the Push of a ReadTestWrite came first
	}
}

// known checks a version a node sends against the primary's order.
func (l *ledger) known(tablet int32, key, value string, ts hlc.Timestamp, how string) {
	e, ok := l.byTS[versionID{tablet, ts}]
	switch {
	case !ok:
		l.problem("%s holds %q=%q@%s, which the primary of tablet %d never ordered", how, key, value, ts, tablet)
	case e.key != key || e.value != value:
		l.problem("%s holds %q=%q@%s, but the primary ordered %s", how, key, value, ts, e)
	}
}

// evaluated appends an evaluation to its tablet's order.
func (l *ledger) evaluated(e *evaluation) {
	e.at = l.w.Sim.Now() - l.origin
	e.pos = len(l.order[e.tablet])
	e.by = l.from
	if l.epochs[e.tablet] > 0 && e.by != l.layout.Tablets[e.tablet].Primary && l.starts[e.tablet].Less(e.ts) {
		// A version of an earlier epoch's primary, above the latest
		// epoch's start, first seen after that epoch began (a reply
		// held for its write level): rolled back wherever it is.
		e.gone, e.gonePos = true, e.pos
	}
	if n := e.pos; n > 0 && !e.ts.IsZero() && !e.gone {
		// A primary's timestamps only go up; those of two epochs'
		// primaries are ordered by the epoch's start instead.
		for i := n - 1; i >= 0; i-- {
			if prev := l.order[e.tablet][i]; !prev.ts.IsZero() && !prev.gone && prev.by == e.by {
				if !prev.ts.Less(e.ts) {
					l.problem("the primary of tablet %d ordered %s after %s", e.tablet, e, prev)
				}
				break
			}
		}
	}
	l.order[e.tablet] = append(l.order[e.tablet], e)
	if !e.ts.IsZero() {
		l.byTS[versionID{e.tablet, e.ts}] = e
	}
	l.byValue[e.value] = append(l.byValue[e.value], e)
}

// drained returns "" if every staged write forwarded was ordered, or
// describes the first (by receiver, tablet and number) that was not.
func (l *ledger) drained() string {
	var left []forwardID
	for id := range l.forwards {
		if _, ok := l.acked[id]; !ok {
			left = append(left, id)
		}
	}
	if len(left) == 0 {
		return ""
	}
	id := slices.MinFunc(left, func(a, b forwardID) int {
		return cmp.Or(strings.Compare(string(a.receiver), string(b.receiver)), cmp.Compare(a.tablet, b.tablet), cmp.Compare(a.seq, b.seq))
	})
	f := l.forwards[id]
	return fmt.Sprintf("%s's staged write %d of tablet %d (%q=%q) and %d more were never ordered", id.receiver, id.seq, id.tablet, f.Key, f.Value, len(left)-1)
}

// testValue returns the test key's version just before position pos of
// its tablet's order, as it was then: a version a later failover rolled
// back was the key's version until then.
func (l *ledger) testValue(e *evaluation) *evaluation {
	order := l.order[e.tablet]
	for i := e.pos - 1; i >= 0; i-- {
		if v := order[i]; v.key == e.test.Key && !v.ts.IsZero() && !(v.gone && v.gonePos <= e.pos) {
			return v
		}
	}
	return nil
}

// stagedPut is a Put of the history as the ledger checks it.
type stagedPut struct {
	index int // in the history
	op    driver.Op
	info  *stagedOp // nil: an ordinary Put
}

// stagedCounts counts what a run's staged operations did.
type stagedCounts struct {
	// bounded counts the Puts and Gets with a bound, tests the
	// ReadTestWrites, pending the Puts acknowledged before they were
	// ordered, fromSession the Gets their session answered.
	bounded, tests, pending, fromSession int
	// held, failed and notEvaluated count the acknowledged
	// ReadTestWrites by the outcome their client was given.
	held, failed, notEvaluated int
	// resent counts the staged writes forwarded again, reacked their
	// acknowledgements sent again, resolvedAbove the pending writes
	// resolved to a timestamp above their own.
	resent, reacked, resolvedAbove int
	// crashed counts the receivers crashed as they forwarded a staged
	// write, cut the links cut as a bounded Put was sent (target).
	crashed, cut int
}

func (c *stagedCounts) add(d stagedCounts) {
	c.bounded += d.bounded
	c.tests += d.tests
	c.pending += d.pending
	c.fromSession += d.fromSession
	c.held += d.held
	c.failed += d.failed
	c.notEvaluated += d.notEvaluated
	c.resent += d.resent
	c.reacked += d.reacked
	c.resolvedAbove += d.resolvedAbove
	c.crashed += d.crashed
	c.cut += d.cut
}

// check checks the puts of the history against the ledger, fills in the
// timestamps of the pending ones, and returns the problems found.
func (l *ledger) check(history []check.Op, puts []stagedPut, counts *stagedCounts) []string {
	problems := slices.Clone(l.problems)
	report := func(format string, args ...any) {
		if len(problems) < 20 {
			problems = append(problems, fmt.Sprintf(format, args...))
		}
	}
	// The last version of each key in each order is the primary's.
	for i, tb := range l.layout.Tablets {
		rep, err := l.w.Replica(tb.Primary)
		if err != nil {
			report("%v", err)
			continue
		}
		latest := map[string]*evaluation{}
		for _, e := range l.order[int32(i)] {
			if !e.ts.IsZero() && !e.gone {
				latest[e.key] = e
			}
		}
		held := rep.Versions(wire.TabletRef{Table: l.rw.layout.ID, Tablet: int32(i)})
		for _, v := range held {
			e := latest[v.Key]
			delete(latest, v.Key)
			if e == nil || e.ts != v.TS || e.value != string(v.Value) {
				report("primary %s holds %q=%q@%s, but its last version of the key was %v", tb.Primary, v.Key, v.Value, v.TS, e)
			}
		}
		for _, key := range slices.Sorted(maps.Keys(latest)) {
			report("primary %s does not hold %s", tb.Primary, latest[key])
		}
	}
	// Every test read the test key's value at its write's place.
	for i := range l.rw.layout.Tablets {
		for _, e := range l.order[int32(i)] {
			if e.test == nil || e.refused != wire.OK || e.gone {
				continue
			}
			v := l.testValue(e)
			held := (v != nil) == e.test.Found && (v == nil || v.value == string(e.test.Value))
			if held != !e.ts.IsZero() {
				report("ReadTestWrite %s: the test key's version before it was %v", e, v)
			}
		}
	}
	for _, p := range puts {
		op, c := p.op, &history[p.index]
		value := op.ValueID
		es, gone := live(l.byValue[value])
		if len(es) == 0 && gone {
			// Ordered, then rolled back at a failover: lost, which
			// the history checker allows only below a durable write
			// level (check.CheckDurable, check.CheckRollback).
			c.Lost = true
			continue
		}
		for _, e := range l.byValue[value] {
			if e.gone && !e.ts.IsZero() {
				// Ordered, rolled back, and forwarded again by its
				// receiver: a Get may have read the first version.
				c.RolledBack = append(c.RolledBack, e.ts)
			}
		}
		desc := fmt.Sprintf("put %q=%q (session %s, %s to %s", op.Key, value, op.Session,
			sim.FormatTime(op.Start), sim.FormatTime(op.End))
		if p.info != nil {
			desc += fmt.Sprintf(", bound %s, stage %s at %s, write %d", p.info.bound, p.info.stage, op.Node, p.info.writeID)
			if p.info.test != nil {
				desc += fmt.Sprintf(", test %s %s", testString(p.info.test), p.info.tested)
			}
		}
		if op.Err != nil {
			desc += fmt.Sprintf(", failed: %v", op.Err)
		} else if !op.TS.IsZero() {
			desc += ", ts " + op.TS.String()
		}
		desc += ")"
		if len(es) > 1 {
			var b strings.Builder
			for _, e := range es {
				fmt.Fprintf(&b, "\n\t%s", e)
			}
			report("%s took effect %d times:%s", desc, len(es), b.String())
			continue
		}
		var e *evaluation
		if len(es) == 1 {
			e = es[0]
		}
		if op.Err != nil {
			continue // indeterminate: once or never
		}
		tested := wire.NotEvaluated
		if p.info != nil && p.info.test != nil {
			tested = p.info.tested
		}
		switch {
		case e == nil:
			report("%s was acknowledged, but its primary never ordered or evaluated it: lost", desc)
			continue
		case e.refused != wire.OK:
			report("%s was acknowledged, but its primary refused it: %s", desc, e)
			continue
		case tested == wire.Held && e.ts.IsZero(), tested == wire.Failed && !e.ts.IsZero():
			report("%s, but its primary evaluated it as %s", desc, e)
			continue
		case p.info != nil && p.info.test == nil && e.ts.IsZero():
			report("%s was not written: %s", desc, e)
			continue
		case !op.TS.IsZero() && op.TS != e.ts:
			report("%s was acknowledged at %s, but its primary ordered it as %s", desc, op.TS, e)
			continue
		}
		if p.info == nil {
			continue
		}
		switch tested {
		case wire.Held:
			counts.held++
		case wire.Failed:
			counts.failed++
		default:
			if p.info.test != nil {
				counts.notEvaluated++
			}
		}
		if !c.Pending {
			continue
		}
		// The timestamp the pending write resolved to is that of its
		// place in the primary's order; Resolved may tell its client a
		// later one (an upper bound, when its own acknowledgement was
		// lost: stage.go), never an earlier one.
		counts.pending++
		c.TS = e.ts
		id := forwardID{wire.NodeID(op.Node), int32(l.rw.layout.TabletFor(op.Key)), p.info.writeID}
		for _, r := range l.resolved[id] {
			switch {
			case r.Code != wire.OK || r.TS.Less(e.ts):
				report("%s was resolved as %s at %s, but its primary ordered it as %s", desc, r.Code, r.TS, e)
			case e.ts.Less(r.TS):
				counts.resolvedAbove++
			}
		}
	}
	counts.resent, counts.reacked = l.resent, l.reacked
	return problems
}

// newTestLedger returns a ledger of a bug world's table, tablet 0 with
// its primary at england, the tablet, and a timestamp of s seconds.
func newTestLedger(t *testing.T) (*ledger, wire.TabletRef, func(s int64) hlc.Timestamp) {
	b := newStagedBugWorld(t, nil)
	rw := &randomWorld{layout: wire.Layout{Name: "t", ID: 1, Tablets: []wire.Tablet{{Primary: england, Secondaries: []wire.NodeID{usR1}}}}}
	led := newLedger(b.w, rw)
	// The order's times count from here, however long the world took to
	// start (its configuration service grants the first leases).
	led.origin = b.w.Sim.Now()
	ts := func(s int64) hlc.Timestamp { return hlc.Timestamp{WallNanos: s * int64(time.Second)} }
	return led, wire.TabletRef{Table: 1}, ts
}

// TestLedger feeds a ledger the messages of writes that went wrong and
// checks that it reports each: a staged write ordered twice under two
// numbers, an acknowledged write never ordered, a reply with another
// write's timestamp, and ReadTestWrites whose outcome contradicts the
// order.
func TestLedger(t *testing.T) {
	led, ref, ts := newTestLedger(t)
	forward := func(seq uint64, key, value string, test *wire.Test, ack wire.ForwardAck) {
		led.observe(usR1, england, &wire.Forward{Tablet: ref, Seq: seq, Key: key, Value: []byte(value), Test: test})
		ack.Tablet, ack.Seq = ref, seq
		led.observe(england, usR1, &ack)
	}
	forward(1, "k", "twice", nil, wire.ForwardAck{TS: ts(1)})
	forward(2, "k", "twice", nil, wire.ForwardAck{TS: ts(2)})
	forward(3, "k", "wrong-ts", nil, wire.ForwardAck{TS: ts(3)})
	// k holds "wrong-ts": a test that k is absent cannot hold, one that
	// k holds it cannot fail.
	forward(4, "x", "held", &wire.Test{Key: "k"}, wire.ForwardAck{TS: ts(4), Tested: wire.Held})
	forward(5, "x", "failed", &wire.Test{Key: "k", Found: true, Value: []byte("wrong-ts")}, wire.ForwardAck{TS: ts(4), Tested: wire.Failed})
	put := func(value string, reported hlc.Timestamp, stage wire.Stage) stagedPut {
		return stagedPut{op: driver.Op{Kind: driver.Put, Key: "k", ValueID: value, TS: reported, Node: string(usR1)},
			info: &stagedOp{bound: wire.Immediate, stage: stage}}
	}
	puts := []stagedPut{put("twice", ts(1), wire.Coordinated), put("lost", hlc.Timestamp{}, wire.Received),
		put("wrong-ts", ts(2), wire.Coordinated)}
	history := make([]check.Op, len(puts))
	for i := range puts {
		puts[i].index = i
		history[i] = puts[i].op.CheckOp()
		puts[i].info.apply(&history[i])
	}
	got := strings.Join(led.check(history, puts, &stagedCounts{}), "\n")
	for _, want := range []string{
		`put "k"="twice" (session , 0.000ms to 0.000ms, bound immediate, stage coordinated at us/r1, write 0, ts 1.000000000,0) took effect 2 times`,
		`put "k"="lost" (session , 0.000ms to 0.000ms, bound immediate, stage received at us/r1, write 0) was acknowledged, but its primary never ordered or evaluated it: lost`,
		`"wrong-ts" (session , 0.000ms to 0.000ms, bound immediate, stage coordinated at us/r1, write 0, ts 2.000000000,0) was acknowledged at 2.000000000,0, but its primary ordered it as "k"="wrong-ts"@3.000000000,0`,
		`ReadTestWrite "x"="held"@4.000000000,0 test "k" absent at 0.000ms, #3 of tablet 0: the test key's version before it was "k"="wrong-ts"@3.000000000,0`,
		`ReadTestWrite "x"="failed" not written (test failed) test "k"="wrong-ts" at 0.000ms, #4 of tablet 0: the test key's version before it was "k"="wrong-ts"@3.000000000,0`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the ledger's problems\n%s\ndo not include\n%s", got, want)
		}
	}
}

// live returns the evaluations of a value that no failover rolled back,
// and whether some were.
func live(es []*evaluation) ([]*evaluation, bool) {
	var out []*evaluation
	for _, e := range es {
		if !e.gone {
			out = append(out, e)
		}
	}
	return out, len(out) < len(es)
}

// TestLedgerFailover feeds a ledger what a failover may legitimately
// make the nodes send, and checks that it reports none of it: england
// orders us/r1's write 1 at 2, whose acknowledgement us/r1 never gets,
// and evaluates write 2, a ReadTestWrite whose test that k is absent
// fails on it; the tablet moves to us/r1 from 1, so k's version at 2 is
// rolled back; us/r1, named and not yet told, answers england's forward
// NotPrimary, then orders it; it orders its own write 1 anew, and
// answers write 2's client with the outcome england acknowledged.
func TestLedgerFailover(t *testing.T) {
	led, ref, ts := newTestLedger(t)
	again := &wire.Forward{Tablet: ref, Seq: 1, Key: "k", Value: []byte("again")}
	tested := &wire.Forward{Tablet: ref, Seq: 2, Key: "x", Value: []byte("tested"), Test: &wire.Test{Key: "k"}}
	moved := &wire.Forward{Tablet: ref, Seq: 1, Key: "y", Value: []byte("moved")}
	led.observe(usC1, usR1, &wire.PutRequest{Req: 7, Tablet: ref, Key: "x", Value: []byte("tested"), Test: tested.Test, Bound: wire.Immediate})
	led.observe(usR1, england, again)
	led.observe(england, usR1, &wire.ForwardAck{Tablet: ref, Seq: 1, TS: ts(2)})
	led.observe(usR1, england, tested)
	led.observe(england, usR1, &wire.ForwardAck{Tablet: ref, Seq: 2, Tested: wire.Failed})
	layout := wire.Layout{Name: "t", ID: 1, Tablets: []wire.Tablet{{Primary: usR1, Secondaries: []wire.NodeID{england}}}}
	led.observe("us/cfg", usR1, &wire.EpochChange{Layout: layout, Epoch: 2, Start: ts(1)})
	led.observe(england, usR1, moved)
	led.observe(usR1, england, &wire.ForwardAck{Tablet: ref, Seq: 1, Code: wire.NotPrimary, Epoch: 1, Primary: usR1})
	led.observe(usR1, england, &wire.ForwardAck{Tablet: ref, Seq: 1, TS: ts(3)})
	led.observe(usR1, usR1, again)
	led.observe(usR1, usR1, &wire.ForwardAck{Tablet: ref, Seq: 1, TS: ts(4)})
	led.observe(usR1, usC1, &wire.PutReply{Req: 7, Stage: wire.Coordinated, WriteID: 2, Tested: wire.Failed})
	put := func(key, value string, node wire.NodeID, id uint64, test *wire.Test, tested wire.Outcome) stagedPut {
		return stagedPut{op: driver.Op{Kind: driver.Put, Key: key, ValueID: value, Node: string(node)},
			info: &stagedOp{bound: wire.Immediate, stage: wire.Transmitted, writeID: id, test: test, tested: tested}}
	}
	puts := []stagedPut{put("k", "again", usR1, 1, nil, wire.NotEvaluated), put("x", "tested", usR1, 2, tested.Test, wire.Failed),
		put("y", "moved", england, 1, nil, wire.NotEvaluated)}
	history := make([]check.Op, len(puts))
	for i := range puts {
		puts[i].index = i
		history[i] = puts[i].op.CheckOp()
		puts[i].info.apply(&history[i])
	}
	for _, p := range led.check(history, puts, &stagedCounts{}) {
		// The world's nodes hold none of these versions.
		if !strings.HasPrefix(p, "primary us/r1 does not hold") {
			t.Errorf("the ledger reports %s", p)
		}
	}
}
