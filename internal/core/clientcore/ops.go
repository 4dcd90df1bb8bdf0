package clientcore

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/keyfmt"
	"github.com/cosla/cosla/sla"
)

// GetOptions overrides a session's defaults for one Get.
type GetOptions struct {
	// SLA replaces the session's default SLA when not nil (Pileus 3.1).
	SLA sla.SLA
	// Strategy replaces the session's strategy when not zero.
	Strategy Strategy
	// RetryAfterMiss lets a Get fall back after a miss (beyond the paper:
	// Pileus 5.4 describes the case, 6 invites it): when a reply meets no
	// subSLA, or its target subSLA's latency passes with no reply, the
	// Get also asks the node not yet asked that is expected to deliver
	// the most utility in the time left, if any is; and so on while the
	// SLA has time, each node once. Requests already out stay open until
	// the Get's deadline, as a late reply may still meet a lower subSLA
	// (Fig. 9); the best reply wins, as for a hedged Get. For an
	// unbounded target the wait ends at Options.ProbeTimeout, after which
	// the monitor takes a silent node for unreachable.
	RetryAfterMiss bool
	// HedgeCost, when positive, lets a Pileus Get go to a second node at
	// once if that raises its expected utility by more than HedgeCost, the
	// price of an extra request in utility (beyond the paper: its 6.3).
	// The Get returns a reply that meets a subSLA as soon as the other
	// request can no longer do better.
	HedgeCost float64
	// Read replaces the session's read level choice when set.
	Read Choice
	// Delay, when positive, replaces the session's artificial delay.
	Delay time.Duration
	// ReadRepair, when not RepairAuto, replaces the session's read
	// repair setting (Policy.ReadRepair) for this Get.
	ReadRepair ReadRepair
	// NoQuorum leaves quorums out of Pileus's selection even when the
	// table's write level makes them strong: only single replicas are
	// candidates, as in the paper.
	NoQuorum bool
	// Bound, when not wire.NoBound, makes the Get a bounded read
	// (dConssandra; see bounded.go): it goes to one replica, which
	// brings in what writes it can within the bound before it reads.
	Bound wire.Bound

	// since is when a Get held back (bounded.go) was called: its round
	// trip, and the time its SLA's latencies allow, count from there.
	since time.Time
}

// GetResult describes a Get: what it returned and how.
type GetResult struct {
	// Value is the version read; Found is false if the replica held no
	// version of the key. Both are empty when no subSLA was met.
	Value []byte
	Found bool
	// Met is the index in the SLA of the subSLA met, or -1.
	Met int
	// SubSLA is the subSLA met.
	SubSLA sla.SubSLA
	// Target is the index of the subSLA that selection aimed for, or -1
	// for the fixed strategies; ExpectedUtility is its expected utility.
	Target          int
	ExpectedUtility float64
	Strategy        Strategy
	// Node is the replica the Get went to; Primary says whether it was the
	// tablet's primary.
	Node    wire.NodeID
	Primary bool
	// RTT is the measured round-trip time.
	RTT time.Duration
	// VersionTS is the timestamp of the version read, HighTS the replica's
	// high timestamp.
	VersionTS, HighTS hlc.Timestamp
	// Causal says, for a causal table, where the value came from.
	Causal *CausalRead
	// TimedOut is set when no reply came before every subSLA's latency
	// had passed.
	TimedOut bool
	// Retries counts the nodes the Get fell back to after a miss
	// (GetOptions.RetryAfterMiss); Node is then the one whose reply was
	// used and RTT the whole time from the Get's start.
	Retries int
	// Hedged is set when the Get also went to a second node at once
	// (GetOptions.HedgeCost); Node is then the one whose reply was used.
	Hedged bool
	// Level is the number of replicas the Get asked (its read level).
	// With more than one, Replies holds each one's answer in the order
	// they came, Node is the one whose version was returned (the
	// newest; the primary when it answered, as it holds the newest), and
	// HighTS the largest high timestamp among the replies; Quorum says
	// that the Get met a strong subSLA without the primary, because its
	// read level and the table's write level overlap (r + w > N).
	// Repaired counts the stale replicas asked to catch up to the
	// version returned (read repair, ReadRepair), and Held the replicas
	// known to hold it when the Get answered: those whose high
	// timestamp reached it, and those that caught up when asked. A Get
	// that writes back answers only once Held is a majority.
	Level    int
	Replies  []ReplicaRead
	Quorum   bool
	Repaired int
	Held     int
	// Delay is the artificial delay the Get waited before it was sent;
	// it counts in RTT.
	Delay time.Duration
	// TuneP is the tuner's probability of QUORUM when the Get's level was
	// drawn (Policy.Tune), zero without the tuner.
	TuneP float64
	// Staleness is the client's estimate, when the reply came, of how far
	// the replica read (with several, the freshest) trailed the tablet's
	// primary: ReplicaEstimate.Staleness for HighTS. It is zero when the
	// primary answered, and while HighTS is zero (no reply came, or the
	// replica has received nothing of the tablet).
	Staleness time.Duration
	// A bounded read (GetOptions.Bound) reports its Bound, the writes
	// the replica Applied within it and those still Pending, and Null
	// when writes of the key were pending and the bound did not allow
	// even one (the error is then ErrNull). FromSession says the value is
	// the session's own pending write (see bounded.go), on any Get.
	Bound       wire.Bound
	Applied     int
	Pending     int
	Null        bool
	FromSession bool
}

// Utility returns the utility delivered: the met subSLA's, or zero.
func (r GetResult) Utility() float64 {
	if r.Met < 0 {
		return 0
	}
	return r.SubSLA.Utility
}

// PutResult describes an acknowledged Put: its timestamp, the primary
// that ordered it, the round trip, the write level it waited for (a
// number of replicas) and how many replicas held it when the primary
// answered, the primary included.
//
// A bounded Put (PutOptions.Bound) also reports its Bound, the Stage the
// write reached, its WriteID at Node (the replica that received it), and
// the Holders known to have applied it; TS is zero before Coordinated. A
// ReadTestWrite reports whether its test held (Tested).
type PutResult struct {
	TS      hlc.Timestamp
	Node    wire.NodeID
	RTT     time.Duration
	Level   int
	Acks    int
	Bound   wire.Bound
	Stage   wire.Stage
	WriteID uint64
	Holders []wire.NodeID
	Tested  wire.Outcome
}

func (c *Client) checkSession(s *Session, key string) error {
	if s.ended {
		return ErrSessionEnded
	}
	if len(key) > c.opts.MaxKeyBytes {
		return fmt.Errorf("%w: key of %d bytes, limit %d", ErrTooLarge, len(key), c.opts.MaxKeyBytes)
	}
	return nil
}

// Get reads key in session s (Pileus Fig. 2). If Get returns an error,
// done is never called; otherwise done is called exactly once, later. When
// no subSLA was met done gets ErrSLAUnmet (or ErrTimeout when the request
// timed out before every subSLA's latency had passed) and a result that
// describes the attempt but carries no data (3.3).
func (c *Client) Get(s *Session, key string, o GetOptions, done func(GetResult, error)) error {
	return c.get(s, key, o, done, false)
}

// get is Get; released says that the session's queue of held
// operations (bounded.go) is letting it go. It routes: a causal table's
// Get (causal.go), one held back behind the session's pending writes
// (bounded.go), one answered from them, a bounded Get (bounded.go), or
// an unbounded one (getSLA).
func (c *Client) get(s *Session, key string, o GetOptions, done func(GetResult, error), released bool) error {
	if err := c.checkSession(s, key); err != nil {
		return err
	}
	if s.table.causal != nil {
		return c.getCausal(s, key, o, done)
	}
	if o.since.IsZero() {
		o.since = c.env.Now()
	}
	if !released && (len(s.held) > 0 || !s.getClear(key)) {
		c.holdGet(s, key, o, done)
		return nil
	}
	agreement, strategy, err := o.choose(s)
	if err != nil {
		return err
	}
	tv := &s.table.tablets[s.table.layout.TabletFor(key)]
	if c.awaitProbe(s, tv, key, agreement, strategy, o, done) {
		return nil
	}
	g, err := c.planGet(s, tv, key, agreement, strategy, o, done)
	if err != nil {
		return err
	}
	// pendingValue first: counted makes a closure, for a Get that
	// fromSession may answer only.
	if s.pendingValue(key) != nil && c.fromSession(s, key, agreement, GetResult{Met: -1, Target: -1, Strategy: strategy, Level: 1, Bound: o.Bound}, o.since, g.counted(c)) {
		return nil
	}
	s.markRead()
	if o.Bound != wire.NoBound {
		c.getBounded(s, tv, key, agreement, o, g.counted(c))
		return nil
	}
	return c.getSLA(&g)
}

// holdGet holds a Get back until the session's pending writes of its
// key are ordered (see bounded.go).
func (c *Client) holdGet(s *Session, key string, o GetOptions, done func(GetResult, error)) {
	c.hold(s, c.opts.RequestTimeout, func() bool { return s.getClear(key) },
		func() {
			if err := c.get(s, key, o, done, true); err != nil {
				done(GetResult{Met: -1, Target: -1}, err)
			}
		},
		func() {
			done(GetResult{Met: -1, Target: -1}, fmt.Errorf("%w: get %s: the session's pending writes of the key were not ordered within %s", ErrTimeout, keyfmt.Quote(key), c.opts.RequestTimeout))
		})
}

// choose returns the Get's SLA and strategy: its own if set, else the
// session's.
func (o GetOptions) choose(s *Session) (sla.SLA, Strategy, error) {
	agreement := s.sla
	if o.SLA != nil {
		if err := o.SLA.Validate(); err != nil {
			return nil, 0, err
		}
		agreement = o.SLA
	}
	strategy := s.strategy
	if o.Strategy != 0 {
		strategy = o.Strategy
	}
	return agreement, strategy, nil
}

// getPlan is an unbounded Get as its route step settled it, for the
// mode that sends it.
type getPlan struct {
	s         *Session
	key       string
	o         GetOptions
	agreement sla.SLA
	strategy  Strategy
	tv        *tabletView
	read      Choice
	tuner     *tuner // the tuner that chose read, or nil
	repair    ReadRepair
	// done is the caller's: counted wraps it for the modes that do not
	// count the Get themselves (a getCall does, in finish).
	done func(GetResult, error)
}

// counted returns the Get's done, counting its outcome (countGet).
func (g *getPlan) counted(c *Client) func(GetResult, error) {
	return c.countGet(g.agreement, g.tv, g.done)
}

// planGet settles a Get's read level (its own, the tuner's or the
// session's) and read repair, and checks them and its bound. The plan is
// a value: it lives on the stack of the Get's route step.
func (c *Client) planGet(s *Session, tv *tabletView, key string, agreement sla.SLA, strategy Strategy, o GetOptions, done func(GetResult, error)) (getPlan, error) {
	g := getPlan{s: s, key: key, o: o, agreement: agreement, strategy: strategy, tv: tv, read: s.policy.Read, done: done}
	switch {
	case o.Read.set():
		g.read = o.Read
	case s.policy.Tune.set():
		g.tuner = c.tunerFor(s.policy.Tune)
		g.read = Mix(g.tuner.adjust(tv, s.policy.Tune), One, Quorum)
	}
	if err := g.read.check(len(tv.replicas), "read"); err != nil {
		return getPlan{}, err
	}
	var err error
	if g.repair, err = o.readRepair(s.policy.ReadRepair); err != nil {
		return getPlan{}, err
	}
	if err := checkBound(o.Bound); err != nil {
		return getPlan{}, err
	}
	return g, nil
}

// getSLA sends an unbounded Get after its artificial delay: to the
// replicas of its read level when it is above one (getLevel), else to
// the replica its strategy chooses (getPileus, or a fixed strategy's).
func (c *Client) getSLA(g *getPlan) error {
	delay := g.s.policy.Delay
	if g.o.Delay > 0 {
		delay = g.o.Delay
	}
	r := g.read.draw(c.env.Rand()).Count(len(g.tv.replicas))
	mins := c.minReadTimestamps(g.s, g.agreement, g.key)
	c.noteUtility(g.tv, g.agreement, mins)
	res := GetResult{Met: -1, Target: -1, Strategy: g.strategy, Level: r, Delay: delay}
	if g.tuner != nil {
		res.TuneP = g.read.P
	}
	switch {
	case r > 1:
		return c.getLevel(g, mins, res)
	case g.strategy == Pileus:
		c.getPileus(g, mins, res)
		return nil
	}
	var pick int
	switch g.strategy {
	case Primary:
		pick = 0
	case Random:
		pick = c.env.Rand().IntN(len(g.tv.replicas))
	case Closest:
		pick = closest(g.tv.replicas)
	default:
		return fmt.Errorf("%w: unknown strategy %d", ErrInvalid, g.strategy)
	}
	c.getOne(g, mins, res, pick, nil)
	return nil
}

// getLevel sends a Get to res.Level replicas chosen by its strategy
// (CPQ's read level; quorum.go).
func (c *Client) getLevel(g *getPlan, mins []minTS, res GetResult) error {
	if len(g.tv.replicas) > maxReplicas {
		return fmt.Errorf("%w: a read of %d replicas among more than %d", ErrInvalid, res.Level, maxReplicas)
	}
	q := c.newQuorum(g.s, g.key, g.agreement, mins, g.tv, c.pickTargets(g.tv, res.Level, g.strategy), g.repair, res, g.o.since, g.counted(c))
	q.tuner, q.sampleOne = g.tuner, g.tuner != nil && g.strategy != Primary
	c.after(res.Delay, g.key, q.start, func() { c.getQuorum(q) })
	return nil
}

// getPileus sends a Get to the replica, or the quorum, that Pileus's
// selection expects to deliver the most utility (Pileus 4.4), and at
// once to a second replica if hedging pays (GetOptions.HedgeCost).
func (c *Client) getPileus(g *getPlan, mins []minTS, res GetResult) {
	quorum := 0
	if !g.o.NoQuorum {
		quorum = g.tv.quorumRead
	}
	var pick int
	var useQuorum bool
	res.Target, pick, res.ExpectedUtility, useQuorum = selectTarget(g.agreement, mins, g.tv.replicas, quorum)
	if useQuorum {
		res.Level = quorum
		repair := g.repair
		if repair == RepairAuto {
			// A quorum Pileus chose for a strong subSLA meets it
			// as Pileus defines strong (every Put that returned
			// before the Get) without writing back, which would
			// cost a trip to the primary, the trip it avoids.
			repair = RepairOff
		}
		q := c.newQuorum(g.s, g.key, g.agreement, mins, g.tv, c.pickTargets(g.tv, quorum, Closest), repair, res, g.o.since, g.counted(c))
		c.after(res.Delay, g.key, q.start, func() { c.getQuorum(q) })
		return
	}
	var hedge *replicaState
	if g.o.HedgeCost > 0 {
		hedge = hedgeTarget(g.agreement, mins, g.tv.replicas, pick, g.o.HedgeCost)
	}
	c.getOne(g, mins, res, pick, hedge)
}

// getOne sends a Get to replica pick, and to hedge too if not nil
// (getcall.go). The getCall holds the Get's minimum timestamps, the
// replicas it asked and its first request: a Get that neither hedges nor
// falls back allocates only it and its request's timeout (timeoutTimer)
// in this package.
func (c *Client) getOne(g *getPlan, mins []minTS, res GetResult, pick int, hedge *replicaState) {
	call := &getCall{c: c, s: g.s, key: g.key, agreement: g.agreement, tv: g.tv,
		retry: g.o.RetryAfterMiss, tuner: g.tuner, start: g.o.since, res: res, done: g.done}
	call.mins = append(call.minsSpace[:0], mins...)
	call.asked = call.askedSpace[:0]
	r, target := g.tv.replicas[pick], res.Target
	if res.Delay <= 0 {
		c.sendGet(call, r, target, hedge)
		return
	}
	c.after(res.Delay, g.key, call.start, func() { c.sendGet(call, r, target, hedge) })
}

// sendGet sends the Get to replica r for subSLA target, and to hedge
// too if not nil.
func (c *Client) sendGet(g *getCall, r *replicaState, target int, hedge *replicaState) {
	c.getFrom(g, r, target)
	if hedge != nil {
		g.res.Hedged = true
		c.getFrom(g, hedge, -1)
	}
}

// readRepair returns the Get's read repair setting: its own if set,
// else session, the session's.
func (o GetOptions) readRepair(session ReadRepair) (ReadRepair, error) {
	switch {
	case o.ReadRepair > RepairOff:
		return 0, fmt.Errorf("%w: read repair setting %d", ErrInvalid, o.ReadRepair)
	case o.ReadRepair != RepairAuto:
		return o.ReadRepair, nil
	}
	return session, nil
}

// countGet wraps a Get's done: it estimates the staleness of what was
// read and counts the Get's outcome under agreement for Metrics.
func (c *Client) countGet(agreement sla.SLA, tv *tabletView, done func(GetResult, error)) func(GetResult, error) {
	return func(r GetResult, err error) {
		c.noteGet(agreement, tv, &r, err)
		done(r, err)
	}
}

// noteGet estimates the staleness of what a Get read, into r, and counts
// its outcome under agreement for Metrics.
func (c *Client) noteGet(agreement sla.SLA, tv *tabletView, r *GetResult, err error) {
	r.Staleness = staleness(tv, r.HighTS, r.Primary, c.env.WallNanos())
	met := r.Met
	if err != nil {
		met = -1
	}
	c.counters.get(agreement, met, c.env.Now())
}

// newQuorum prepares a Get of several replicas.
func (c *Client) newQuorum(s *Session, key string, agreement sla.SLA, mins []minTS, tv *tabletView, targets []*replicaState,
	repair ReadRepair, res GetResult, start time.Time, done func(GetResult, error)) *quorumCall {
	return &quorumCall{s: s, key: key, agreement: agreement, mins: slices.Clone(mins), tv: tv, targets: targets,
		start: start, startWall: c.env.WallNanos(), repair: repair, res: res, done: done}
}

// after runs send at once, or after an artificial delay (AD, CPQ 3.2).
func (c *Client) after(delay time.Duration, key string, start time.Time, send func()) {
	if delay <= 0 {
		send()
		return
	}
	c.env.After(delay, delayTimer{key: key, start: start, send: send})
}

// hedgeTarget is hedging, beyond the paper (its 6.3 suggests sending a Get
// to several nodes): the second replica to send a Get to at once, when the
// expected utility of the pair exceeds that of pick alone by more than
// cost, the price of one extra request in utility. nil if none does.
func hedgeTarget(agreement sla.SLA, mins []minTS, replicas []*replicaState, pick int, cost float64) *replicaState {
	alone := pairUtility(agreement, mins, replicas[pick], nil)
	var best *replicaState
	bestGain := cost
	for j, r := range replicas {
		if j == pick {
			continue
		}
		if gain := pairUtility(agreement, mins, replicas[pick], r) - alone; gain > bestGain {
			best, bestGain = r, gain
		}
	}
	return best
}

// pairUtility estimates the expected utility of sending a Get to a (and b,
// if not nil) and taking the best subSLA either meets. Each node meets
// subSLA i with probability PNodeCons*PNodeLat (Pileus 4.5), independently
// of the other node and, as an approximation, of the other subSLAs.
func pairUtility(agreement sla.SLA, mins []minTS, a, b *replicaState) float64 {
	utility, noneHigher := 0.0, 1.0
	for i := range agreement {
		sub := &agreement[i]
		missA := 1 - pNodeSLA(a, sub, mins[i])
		missB := 1.0
		if b != nil {
			missB = 1 - pNodeSLA(b, sub, mins[i])
		}
		meet := 1 - missA*missB
		utility += noneHigher * meet * sub.Utility
		noneHigher *= 1 - meet
	}
	return utility
}

// Put writes key in session s at the tablet's primary (Pileus 4.2), which
// answers once the Put's write level is reached (CPQ). If Put returns an
// error, done is never called; otherwise done is called exactly once,
// later. A *QuorumTimeoutError passed to done says the version is durable
// at the primary but the write level was not reached in time; any other
// error leaves the outcome unknown: the Put may still take effect.
func (c *Client) Put(s *Session, key string, value []byte, o PutOptions, done func(PutResult, error)) error {
	return c.put(s, key, value, o, done, false)
}

// put is Put; released says that the session's queue of held
// operations (bounded.go) is letting it go. It routes: a causal table's
// Put (causal.go), one held back behind the session's pending writes or
// the first probe of its receiver (bounded.go), a bounded Put or a
// ReadTestWrite (bounded.go), or a Put at the primary (putLevel).
func (c *Client) put(s *Session, key string, value []byte, o PutOptions, done func(PutResult, error), released bool) error {
	if err := c.checkSession(s, key); err != nil {
		return err
	}
	if len(value) > c.opts.MaxValueBytes {
		return fmt.Errorf("%w: value of %d bytes, limit %d", ErrTooLarge, len(value), c.opts.MaxValueBytes)
	}
	if s.table.causal != nil {
		return c.putCausal(s, key, value, o, done)
	}
	p, err := c.planPut(s, key, o)
	if err != nil {
		return err
	}
	retry := func() {
		if err := c.put(s, key, value, o, done, true); err != nil {
			done(PutResult{}, err)
		}
	}
	switch {
	case !released && (len(s.held) > 0 || !s.putClear(p.tv, o)):
		c.hold(s, p.timeout, func() bool { return s.putClear(p.tv, o) }, retry, func() {
			done(PutResult{Bound: o.Bound}, fmt.Errorf("%w: put %s: the session's earlier writes were not ordered within %s", ErrTimeout, keyfmt.Quote(key), p.timeout))
		})
	case o.Bound != wire.NoBound && c.opts.Measure == MeasureNeeded && s.receiver(p.tv).warming:
		// A bounded Put goes to the nearest replica: see awaitProbe.
		c.mon.await(retry)
	case o.Bound != wire.NoBound || o.Test != nil:
		c.putBounded(s, p.tv, key, value, o, p.timeout, c.newPutRetry(p.timeout), c.countPut(done))
	default:
		p.retry = c.newPutRetry(p.timeout)
		c.putLevel(s, p, key, value, c.countPut(done))
	}
	return nil
}

// putPlan is a Put as its route step settled it: its tablet, its write
// level (its own, the tuner's or the session's) and its timeout.
type putPlan struct {
	tv      *tabletView
	write   Choice
	timeout time.Duration
	// retry is the Put's time and backoff across the primaries it is
	// sent to (failover.go).
	retry *putRetry
}

// planPut settles a Put's tablet, write level and timeout, and checks
// them, its bound and its test.
func (c *Client) planPut(s *Session, key string, o PutOptions) (putPlan, error) {
	tablet := s.table.layout.TabletFor(key)
	p := putPlan{tv: &s.table.tablets[tablet], write: s.policy.Write, timeout: c.opts.RequestTimeout}
	switch {
	case o.Write.set():
		p.write = o.Write
	case s.policy.Tune.set():
		p.write = Mix(c.tunerFor(s.policy.Tune).p, One, Quorum)
	}
	if err := p.write.check(len(p.tv.replicas), "write"); err != nil {
		return p, err
	}
	if o.Timeout < 0 {
		return p, fmt.Errorf("%w: negative timeout %s", ErrInvalid, o.Timeout)
	}
	if err := checkBound(o.Bound); err != nil {
		return p, err
	}
	if o.Timeout > 0 {
		p.timeout = min(p.timeout, o.Timeout)
	}
	if o.Test != nil {
		if len(o.Test.Key) > c.opts.MaxKeyBytes {
			return p, fmt.Errorf("%w: test key of %d bytes, limit %d", ErrTooLarge, len(o.Test.Key), c.opts.MaxKeyBytes)
		}
		if s.table.layout.TabletFor(o.Test.Key) != tablet {
			return p, fmt.Errorf("%w: read-test-write keys %s and %s lie in different tablets", ErrInvalid, keyfmt.Quote(o.Test.Key), keyfmt.Quote(key))
		}
	}
	return p, nil
}

// putLevel sends a Put to the tablet's primary (Pileus 4.2), which
// answers once its write level holds it (CPQ).
func (c *Client) putLevel(s *Session, p putPlan, key string, value []byte, done func(PutResult, error)) {
	w := max(p.write.draw(c.env.Rand()).Count(len(p.tv.replicas)), p.tv.writeCount)
	r := p.tv.replicas[0]
	sent := c.env.Now()
	req := c.newReq()
	m := &wire.PutRequest{Req: req, Tablet: p.tv.ref, Key: key, Value: slices.Clone(value), MinTS: s.maxTS, Epoch: p.tv.epoch}
	if w > 1 {
		m.W, m.Wait = int32(w), levelWait(p.timeout, r)
	}
	c.send(r.id, m, req, p.timeout, &pending{
		onReply: func(_ wire.NodeID, m wire.Msg) {
			reply := m.(*wire.PutReply)
			// Pileus 4.5: the monitor learns from Puts as from Gets. A
			// Put's round trip also holds the primary's synced write, a
			// little more than a Get's; but leaving Puts out starves the
			// estimate of a primary that only takes Puts until the next
			// probe, which costs more (a client stuck on a bad first
			// sample), so they count.
			res := PutResult{Node: r.id, RTT: c.mon.observe(r, sent, c.env.Now()), Level: w}
			again := func(timeout time.Duration) {
				p.timeout = timeout
				c.putLevel(s, p, key, value, done)
			}
			if c.retryPut(s.table, p.tv, key, r.id, reply, p.retry, again, func(err error) { done(res, err) }) {
				return
			}
			if reply.Code != wire.OK && reply.Code != wire.QuorumTimeout {
				done(res, fmt.Errorf("put %s at %s: %w", keyfmt.Quote(key), r.id, codeError(reply.Code)))
				return
			}
			// Pileus 4.5: a Put's timestamp is a lower bound on the
			// primary's high timestamp.
			c.observeHigh(p.tv, r, reply.TS)
			res.TS, res.Acks = reply.TS, int(reply.Acks)
			s.recordPut(key, reply.TS)
			if reply.Code == wire.QuorumTimeout {
				done(res, &QuorumTimeoutError{Key: key, TS: reply.TS, Level: w, Acks: res.Acks})
				return
			}
			done(res, nil)
		},
		onTimeout: func() {
			c.mon.silence(r, sent, c.env.Now())
			c.seekPrimary(p.tv)
			done(PutResult{Node: r.id, Level: w}, fmt.Errorf("%w: put %s: no reply from primary %s within %s", ErrTimeout, keyfmt.Quote(key), r.id, p.timeout))
		},
		onDeposed: func(primary wire.NodeID) {
			done(PutResult{Node: r.id, Level: w}, fmt.Errorf("%w: put %s: no reply from %s before %s took the tablet over; it may or may not take effect", ErrTimeout, keyfmt.Quote(key), r.id, primary))
		},
	})
}

// countPut wraps a Put's done to count its outcome for Metrics.
func (c *Client) countPut(done func(PutResult, error)) func(PutResult, error) {
	return func(r PutResult, err error) {
		c.counters.put(err)
		done(r, err)
	}
}

// probe asks a replica for its high timestamp, measuring the round trip;
// a probe already in flight is not repeated. A warm-up probe measures
// nothing: OpenTable sends one to each replica under
// MeasureNeeded, on connections that may not be set up yet, and
// its reply sends the replica's first measured probe. Once that is
// answered or times out, the operations that waited for it go on
// (awaitProbe).
func (c *Client) probe(tv *tabletView, r *replicaState, warmUp bool) {
	if r.probing {
		return
	}
	r.probing = true
	c.probesSent++
	sent := c.env.Now()
	req := c.newReq()
	c.send(r.id, &wire.ProbeRequest{Req: req, Tablet: tv.ref}, req, c.opts.ProbeTimeout, &pending{
		onReply: func(_ wire.NodeID, m wire.Msg) {
			r.probing = false
			if reply := m.(*wire.ProbeReply); reply.Code == wire.OK {
				c.observeRead(tv, r, reply.HighTS, reply.Primary)
			}
			if warmUp {
				r.coldUntil = c.env.Now()
				c.probe(tv, r, false)
				return
			}
			r.warming = false
			mean, measured := r.rtt.Mean(), r.rtt.Len() > 0
			c.mon.adapt(r, sent, mean, measured, c.mon.observe(r, sent, c.env.Now()), false)
			c.mon.probed()
		},
		onTimeout: func() {
			r.probing, r.warming = false, false
			mean, measured := r.rtt.Mean(), r.rtt.Len() > 0
			c.mon.adapt(r, sent, mean, measured, c.mon.silence(r, sent, c.env.Now()), true)
			c.mon.probed()
		},
	})
}

// probeIdle probes every replica of every open table that the client has
// not heard from within the probe interval (Pileus 4.5; its own under
// Options.AdaptiveProbing, 6.1), and forgets round-trip samples that have
// left the window.
func (c *Client) probeIdle() {
	now := c.env.Now()
	for _, s := range c.mon.rtt {
		s.Expire(now.Add(-c.mon.window))
	}
	for _, name := range slices.Sorted(maps.Keys(c.tables)) {
		t := c.tables[name]
		for i := range t.tablets {
			for _, r := range t.tablets[i].replicas {
				if now.Sub(r.lastContact) >= c.mon.probeInterval(r) {
					c.probe(&t.tablets[i], r, false)
				}
			}
		}
	}
}
