package clientcore

import (
	"fmt"
	"slices"
	"time"

	"github.com/cosla/cosla/internal/hlc"
	"github.com/cosla/cosla/internal/invariants"
	"github.com/cosla/cosla/internal/wire"
	"github.com/cosla/cosla/sla"
)

// GetOptions overrides a session's defaults for one Get.
type GetOptions struct {
	// SLA replaces the session's default SLA when not nil (Pileus 3.1).
	SLA sla.SLA
	// Strategy replaces the session's strategy when not zero.
	Strategy Strategy
	// RetryAfterMiss: when the reply meets no subSLA but another node is
	// expected to meet a lower one within the latency left, ask it
	// (beyond the paper: Pileus 5.4 describes the case, 6 invites it).
	// At most one retry.
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
	// Retried is set when the first reply met no subSLA and the Get went
	// to a second node (GetOptions.RetryAfterMiss); Node is then that
	// node and RTT the whole time from the Get's start.
	Retried bool
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
// operations (bounded.go) is letting it go.
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
		c.hold(s, c.opts.RequestTimeout, func() bool { return s.getClear(key) },
			func() {
				if err := c.get(s, key, o, done, true); err != nil {
					done(GetResult{Met: -1, Target: -1}, err)
				}
			},
			func() {
				done(GetResult{Met: -1, Target: -1}, fmt.Errorf("%w: get %q: the session's pending writes of the key were not ordered within %s", ErrTimeout, key, c.opts.RequestTimeout))
			})
		return nil
	}
	agreement := s.sla
	if o.SLA != nil {
		if err := o.SLA.Validate(); err != nil {
			return err
		}
		agreement = o.SLA
	}
	strategy := s.strategy
	if o.Strategy != 0 {
		strategy = o.Strategy
	}
	tv := &s.table.tablets[s.table.layout.TabletFor(key)]
	done = c.countGet(agreement, tv, done)
	read, delay := s.policy.Read, s.policy.Delay
	var tn *tuner
	switch {
	case o.Read.set():
		read = o.Read
	case s.policy.Tune.set():
		tn = c.tunerFor(s.policy.Tune)
		read = Mix(tn.adjust(tv, s.policy.Tune), One, Quorum)
	}
	if err := read.validate(); err != nil {
		return err
	}
	repair, err := o.readRepair(s.policy.ReadRepair)
	if err != nil {
		return err
	}
	if err := checkBound(o.Bound); err != nil {
		return err
	}
	res0 := GetResult{Met: -1, Target: -1, Strategy: strategy, Level: 1, Bound: o.Bound}
	if c.fromSession(s, key, agreement, res0, o.since, done) {
		return nil
	}
	s.markRead()
	if o.Bound != wire.NoBound {
		c.getBounded(s, tv, key, agreement, o, done)
		return nil
	}
	if o.Delay > 0 {
		delay = o.Delay
	}
	level := read.draw(c.env.Rand())
	if err := level.Check(len(tv.replicas)); err != nil {
		return fmt.Errorf("%w: read %w", ErrInvalid, err)
	}
	r := level.Count(len(tv.replicas))
	mins := c.minReadTimestamps(s, agreement, key)
	res := GetResult{Met: -1, Target: -1, Strategy: strategy, Level: r, Delay: delay}
	if tn != nil {
		res.TuneP = read.P
	}
	quorum := 0
	if r == 1 && strategy == Pileus && !o.NoQuorum {
		quorum = tv.quorumRead
	}
	var pick int
	switch {
	case r > 1:
		if len(tv.replicas) > maxReplicas {
			return fmt.Errorf("%w: a read of %d replicas among more than %d", ErrInvalid, r, maxReplicas)
		}
		q := c.newQuorum(s, key, agreement, mins, tv, c.pickTargets(tv, r, strategy), repair, res, o.since, done)
		q.tuner, q.sampleOne = tn, tn != nil && strategy != Primary
		c.after(res.Delay, key, q.start, func() { c.getQuorum(q) })
		return nil
	case strategy == Pileus:
		var useQuorum bool
		res.Target, pick, res.ExpectedUtility, useQuorum = selectTarget(agreement, mins, tv.replicas, quorum)
		if useQuorum {
			res.Level = quorum
			if repair == RepairAuto {
				// A quorum Pileus chose for a strong subSLA meets it
				// as Pileus defines strong (every Put that returned
				// before the Get) without writing back, which would
				// cost a trip to the primary, the trip it avoids.
				repair = RepairOff
			}
			q := c.newQuorum(s, key, agreement, mins, tv, c.pickTargets(tv, quorum, Closest), repair, res, o.since, done)
			c.after(res.Delay, key, q.start, func() { c.getQuorum(q) })
			return nil
		}
	}
	switch strategy {
	case Pileus:
	case Primary:
		pick = 0
	case Random:
		pick = c.env.Rand().IntN(len(tv.replicas))
	case Closest:
		pick = closest(tv.replicas)
	default:
		return fmt.Errorf("%w: unknown strategy %d", ErrInvalid, strategy)
	}
	g := &getCall{s: s, key: key, agreement: agreement, mins: slices.Clone(mins), tv: tv,
		retry: o.RetryAfterMiss, tuner: tn, start: o.since, res: res, done: done}
	var hedge *replicaState
	if strategy == Pileus && o.HedgeCost > 0 {
		hedge = hedgeTarget(agreement, g.mins, tv.replicas, pick, o.HedgeCost)
	}
	c.after(delay, key, g.start, func() {
		c.getFrom(g, tv.replicas[pick])
		if hedge != nil {
			g.res.Hedged = true
			c.getFrom(g, hedge)
		}
	})
	return nil
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
		r.Staleness = staleness(tv, r.HighTS, r.Primary, c.env.WallNanos())
		met := r.Met
		if err != nil {
			met = -1
		}
		c.recordGet(agreement, met)
		done(r, err)
	}
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

// getCall is a Get in flight: what it asks for and what it has so far.
type getCall struct {
	s         *Session
	key       string
	agreement sla.SLA
	mins      []minTS // c.mins is scratch space; this is the Get's own copy
	tv        *tabletView
	retry     bool   // retry after a miss, if not done yet
	tuner     *tuner // the tuner that drew the Get's level, told its latency
	start     time.Time
	res       GetResult
	done      func(GetResult, error)
	// outstanding counts the requests not yet answered or timed out;
	// finished is set once done has been called. A hedged Get has two
	// requests and finishes with the first reply that meets a subSLA.
	outstanding int
	finished    bool
	// held is the best reply so far of a hedged Get whose other request
	// might still meet a higher subSLA; it is used when that request
	// fails, or when the held subSLA's latency is about to run out.
	held *heldReply
}

type heldReply struct {
	r     *replicaState
	reply *wire.GetReply
	met   int
}

// holdMargin is how long before its subSLA's latency runs out a held
// reply is handed to the caller. A real timer fires late (the Go runtime,
// a loaded machine), and a reply handed over even a microsecond after the
// latency has run out meets that subSLA no more: on a local cluster,
// holding to the last moment lost most held replies. Our choice: 5 ms,
// several times the lateness we saw under load.
const holdMargin = 5 * time.Millisecond

// holdTimer fires when a held reply's subSLA latency is about to run out.
type holdTimer struct{ g *getCall }

// String names the timer by the Get's key and start, not the pointer, so
// that a simulator's trace of it is the same in every run.
func (t holdTimer) String() string {
	return fmt.Sprintf("{%q %s}", t.g.key, t.g.start.Format(time.RFC3339Nano))
}

// finish reports the Get's outcome, once.
func (g *getCall) finish(err error) {
	if !g.finished {
		g.finished = true
		if g.tuner != nil {
			g.tuner.readDone(g.res)
		}
		g.done(g.res, err)
	}
}

// getFrom sends the Get to replica r. Its round trip counts from the
// Get's start, so that a retry's reply is judged by the whole time the
// caller waited.
func (c *Client) getFrom(g *getCall, r *replicaState) {
	res := &g.res
	if g.outstanding == 0 {
		res.Node, res.Primary = r.id, r.primary
	}
	g.outstanding++
	timeout, unmetErr := g.agreement.MaxLatency()-c.env.Now().Sub(g.start), ErrSLAUnmet
	if timeout > c.opts.RequestTimeout {
		timeout, unmetErr = c.opts.RequestTimeout, ErrTimeout
	}
	sent := c.env.Now()
	req := c.newReq()
	c.send(r.id, &wire.GetRequest{Req: req, Tablet: g.tv.ref, Key: g.key}, req, timeout, &pending{
		onReply: func(_ wire.NodeID, m wire.Msg) {
			g.outstanding--
			reply := m.(*wire.GetReply)
			c.observeRTT(r, sent)
			if reply.Code == wire.OK {
				c.observeHigh(g.tv, r, reply.HighTS)
			}
			if g.finished {
				return // the other request of a hedged Get answered first
			}
			rtt := c.env.Now().Sub(g.start)
			if reply.Code != wire.OK {
				if g.outstanding == 0 {
					res.Node, res.Primary, res.RTT = r.id, r.primary, rtt
					g.finish(fmt.Errorf("get %q from %s: %w", g.key, r.id, codeError(reply.Code)))
				}
				return
			}
			met := metSubSLA(g.agreement, g.mins, int64(rtt), reply.HighTS, reply.Primary)
			if g.outstanding > 0 && (met < 0 || g.higherStillPossible(met, rtt)) {
				// A hedged Get whose other request may do better: keep
				// the better reply and wait, at most until holdMargin
				// before its subSLA's latency runs out.
				if met >= 0 && (g.held == nil || met < g.held.met) {
					g.held = &heldReply{r: r, reply: reply, met: met}
					// An unbounded subSLA never runs out: the held
					// reply waits for the other request's answer or
					// timeout.
					if latency := g.agreement[met].Latency; latency != sla.Unbounded {
						c.env.After(max(0, latency-rtt-holdMargin), holdTimer{g})
					}
				}
				return
			}
			if met < 0 && g.held != nil {
				c.finishHeld(g)
				return
			}
			res.Node, res.RTT, res.Met = r.id, rtt, met
			res.HighTS, res.VersionTS, res.Primary = reply.HighTS, reply.VersionTS, reply.Primary
			if met < 0 {
				if next := c.retryTarget(g, r); next != nil {
					g.retry = false
					res.Retried = true
					c.getFrom(g, next)
					return
				}
				g.finish(fmt.Errorf("%w: get %q from %s took %s with high timestamp %s", ErrSLAUnmet, g.key, r.id, rtt, reply.HighTS))
				return
			}
			res.SubSLA = g.agreement[met]
			if invariants.Enabled {
				m := g.mins[met]
				invariants.Check(rtt <= res.SubSLA.Latency && (reply.Primary || (!m.primaryOnly && !reply.HighTS.Less(m.ts))),
					"subSLA %d (%s) reported met by %s with rtt %s, high %s, minimum %s", met+1, res.SubSLA, r.id, rtt, reply.HighTS, m.ts)
			}
			res.Value, res.Found = reply.Value, reply.Found
			g.s.recordRead(g.key, reply.VersionTS)
			g.finish(nil)
		},
		onTimeout: func() {
			g.outstanding--
			// The replica was at least this slow: count it, so that a
			// node that stops answering loses its appeal (4.5).
			c.observeRTT(r, sent)
			if g.finished || g.outstanding > 0 {
				return
			}
			if g.held != nil {
				c.finishHeld(g)
				return
			}
			res.Node, res.Primary = r.id, r.primary
			res.RTT = c.env.Now().Sub(g.start)
			res.TimedOut = true
			g.finish(fmt.Errorf("%w: get %q: no reply from %s within %s", unmetErr, g.key, r.id, timeout))
		},
	})
}

// higherStillPossible reports whether a subSLA above met still has
// latency left at rtt, so a request still out might meet it.
func (g *getCall) higherStillPossible(met int, rtt time.Duration) bool {
	for i := range met {
		if g.agreement[i].Latency > rtt {
			return true
		}
	}
	return false
}

// finishHeld ends a hedged Get with its held reply, judged at the time it
// is handed to the caller.
func (c *Client) finishHeld(g *getCall) {
	if g.finished || g.held == nil {
		return
	}
	h, res := g.held, &g.res
	res.RTT = c.env.Now().Sub(g.start)
	res.Node, res.Primary = h.r.id, h.reply.Primary
	res.HighTS, res.VersionTS = h.reply.HighTS, h.reply.VersionTS
	res.Met = metSubSLA(g.agreement, g.mins, int64(res.RTT), h.reply.HighTS, h.reply.Primary)
	if res.Met < 0 {
		g.finish(fmt.Errorf("%w: get %q: the reply from %s came in time for no subSLA", ErrSLAUnmet, g.key, h.r.id))
		return
	}
	res.SubSLA = g.agreement[res.Met]
	res.Value, res.Found = h.reply.Value, h.reply.Found
	g.s.recordRead(g.key, h.reply.VersionTS)
	g.finish(nil)
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

// retryTarget is retry-after-miss, beyond the paper (its 5.4 describes the
// case between #3 and #4, where a reply misses every subSLA but another
// node could still have met a lower one): if the Get may retry, the node
// other than missed with the highest expected utility for a subSLA whose
// latency has not yet run out, judged on the time that is left. It returns
// nil when no node is expected to deliver anything.
func (c *Client) retryTarget(g *getCall, missed *replicaState) *replicaState {
	if !g.retry {
		return nil
	}
	elapsed := c.env.Now().Sub(g.start)
	var best *replicaState
	bestUtility := 0.0
	for i := range g.agreement {
		sub := &g.agreement[i]
		left := sub.Latency - elapsed
		if left <= 0 {
			continue
		}
		for _, r := range g.tv.replicas {
			if r == missed {
				continue
			}
			if u := pNodeCons(r, g.mins[i]) * r.rtt.pWithin(left) * sub.Utility; u > bestUtility {
				best, bestUtility = r, u
			}
		}
	}
	return best
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
// operations (bounded.go) is letting it go.
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
	write := s.policy.Write
	switch {
	case o.Write.set():
		write = o.Write
	case s.policy.Tune.set():
		write = Mix(c.tunerFor(s.policy.Tune).p, One, Quorum)
	}
	if err := write.validate(); err != nil {
		return err
	}
	if o.Timeout < 0 {
		return fmt.Errorf("%w: negative timeout %s", ErrInvalid, o.Timeout)
	}
	if err := checkBound(o.Bound); err != nil {
		return err
	}
	tv := &s.table.tablets[s.table.layout.TabletFor(key)]
	timeout := c.opts.RequestTimeout
	if o.Timeout > 0 {
		timeout = min(timeout, o.Timeout)
	}
	if o.Test != nil {
		if len(o.Test.Key) > c.opts.MaxKeyBytes {
			return fmt.Errorf("%w: test key of %d bytes, limit %d", ErrTooLarge, len(o.Test.Key), c.opts.MaxKeyBytes)
		}
		if s.table.layout.TabletFor(o.Test.Key) != s.table.layout.TabletFor(key) {
			return fmt.Errorf("%w: read-test-write keys %q and %q lie in different tablets", ErrInvalid, o.Test.Key, key)
		}
	}
	if !released && (len(s.held) > 0 || !c.putClear(s, tv, key, o)) {
		c.hold(s, timeout, func() bool { return c.putClear(s, tv, key, o) },
			func() {
				if err := c.put(s, key, value, o, done, true); err != nil {
					done(PutResult{}, err)
				}
			},
			func() {
				done(PutResult{Bound: o.Bound}, fmt.Errorf("%w: put %q: the session's earlier writes were not ordered within %s", ErrTimeout, key, timeout))
			})
		return nil
	}
	done = c.countPut(done)
	if o.Bound != wire.NoBound || o.Test != nil {
		c.putBounded(s, tv, key, value, o, timeout, done)
		return nil
	}
	level := write.draw(c.env.Rand())
	if err := level.Check(len(tv.replicas)); err != nil {
		return fmt.Errorf("%w: write %w", ErrInvalid, err)
	}
	w := max(level.Count(len(tv.replicas)), tv.writeCount)
	r := tv.replicas[0]
	sent := c.env.Now()
	req := c.newReq()
	m := &wire.PutRequest{Req: req, Tablet: tv.ref, Key: key, Value: slices.Clone(value), MinTS: s.maxTS}
	if w > 1 {
		m.W, m.Wait = int32(w), levelWait(timeout, r)
	}
	c.send(r.id, m, req, timeout, &pending{
		onReply: func(_ wire.NodeID, m wire.Msg) {
			reply := m.(*wire.PutReply)
			// Pileus 4.5: the monitor learns from Puts as from Gets. A
			// Put's round trip also holds the primary's synced write, a
			// little more than a Get's; but leaving Puts out starves the
			// estimate of a primary that only takes Puts until the next
			// probe, which costs more (a client stuck on a bad first
			// sample), so they count.
			res := PutResult{Node: r.id, RTT: c.observeRTT(r, sent), Level: w}
			if reply.Code != wire.OK && reply.Code != wire.QuorumTimeout {
				done(res, fmt.Errorf("put %q at %s: %w", key, r.id, codeError(reply.Code)))
				return
			}
			// Pileus 4.5: a Put's timestamp is a lower bound on the
			// primary's high timestamp.
			c.observeHigh(tv, r, reply.TS)
			res.TS, res.Acks = reply.TS, int(reply.Acks)
			s.recordPut(key, reply.TS)
			if reply.Code == wire.QuorumTimeout {
				done(res, &QuorumTimeoutError{Key: key, TS: reply.TS, Level: w, Acks: res.Acks})
				return
			}
			done(res, nil)
		},
		onTimeout: func() {
			c.observeRTT(r, sent)
			done(PutResult{Node: r.id, Level: w}, fmt.Errorf("%w: put %q: no reply from primary %s within %s", ErrTimeout, key, r.id, timeout))
		},
	})
	return nil
}

// countPut wraps a Put's done to count its outcome for Metrics.
func (c *Client) countPut(done func(PutResult, error)) func(PutResult, error) {
	return func(r PutResult, err error) {
		c.puts++
		if err != nil {
			c.putErrors++
		}
		done(r, err)
	}
}

// probe asks a replica for its high timestamp, measuring the round trip.
// finished, if not nil, is called when the probe is answered or times out;
// a probe already in flight is not repeated, and then finished is not
// called.
func (c *Client) probe(tv *tabletView, r *replicaState, finished func()) {
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
			mean, measured := r.rtt.mean(), r.rtt.size > 0
			c.adaptProbe(r, sent, mean, measured, c.observeRTT(r, sent), false)
			if reply := m.(*wire.ProbeReply); reply.Code == wire.OK {
				c.observeHigh(tv, r, reply.HighTS)
			}
			if finished != nil {
				finished()
			}
		},
		onTimeout: func() {
			r.probing = false
			mean, measured := r.rtt.mean(), r.rtt.size > 0
			c.adaptProbe(r, sent, mean, measured, c.observeRTT(r, sent), true)
			if finished != nil {
				finished()
			}
		},
	})
}

// probeIdle probes every replica of every open table that the client has
// not heard from within the probe interval (Pileus 4.5; its own under
// Options.AdaptiveProbing, 6.1), and forgets round-trip samples that have
// left the window.
func (c *Client) probeIdle() {
	now := c.env.Now()
	for _, s := range c.rtt {
		s.expire(now.Add(-c.opts.RTTWindow))
	}
	for _, name := range sortedKeys(c.tables) {
		t := c.tables[name]
		for i := range t.tablets {
			for _, r := range t.tablets[i].replicas {
				if now.Sub(r.lastContact) >= c.probeInterval(r) {
					c.probe(&t.tablets[i], r, nil)
				}
			}
		}
	}
}

func sortedKeys[K ~string, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
