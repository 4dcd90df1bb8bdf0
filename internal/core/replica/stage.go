package replica

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/cosla/cosla/internal/core/dcon"
	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/storage"
	"github.com/cosla/cosla/internal/core/wire"
)

// Staged writes (dConssandra, DESIGN.md section 4). A Put with a bound
// may go to any replica of its tablet. That replica, the receiver:
//
//  1. receives it: one synced batch writes a staging record under the
//     tablet's next sequence number (reception);
//  2. forwards it to the primary, at most forwardWindow writes in
//     flight, in sequence order (transmission);
//  3. the primary orders each receiver's writes exactly once, in
//     sequence order: the batch that logs and applies a write also
//     records, per receiver, the last sequence number ordered and its
//     timestamp, so a Forward delivered again is answered from that
//     record and not applied again (coordination);
//  4. the primary pushes the write and counts the replicas that hold it
//     (execution), as for a write level (write.go).
//
// The ForwardAck that reports coordination deletes the staging records
// it covers. A receiver that crashes finds its staging records when it
// starts and forwards them again. The receiver answers the client when
// the stage the planner chose (package dcon) is reached, or when the
// request's budget has passed since it arrived (the bound less the
// client's round trip, so that the answer reaches the client by the
// bound: a timer, beyond the paper, whose answers can overshoot it),
// with the stage reached; a write answered before coordination is
// later resolved to its timestamp with a Resolved message to the client.
//
// A receiver that is the tablet's primary orders the write at once, in
// the batch that would have staged it.

// forwardWindow is how many staged writes a receiver has in flight to a
// primary (our choice: enough to fill a transcontinental link at a few
// thousand writes a second, few enough that a lost Forward is resent
// with little else).
const forwardWindow = 128

// forwardResend is how long a receiver waits for a ForwardAck before it
// sends its unacknowledged writes again (our choice: above the longest
// round trip of the papers' topologies, Pileus's 400 ms England-India).
const forwardResend = time.Second

// stagedWrite is a write received and not yet ordered by the primary.
// Its record is durable; the fields after test are volatile.
type stagedWrite struct {
	seq    uint64
	client wire.NodeID
	key    string
	value  []byte
	minTS  hlc.Timestamp
	test   *wire.Test

	// sent: forwarded, at sentAt; queue: the staged writes up
	// to it when it arrived; received: when (volatile, for the cost
	// model; zero after a restart). answered: the client has had its
	// reply (or is gone, after a restart), so coordination is reported
	// with a Resolved. spread asks the primary to report execution at
	// every replica, within wait.
	sent     bool
	sentAt   time.Time
	queue    int
	received time.Time
	answered bool
	spread   bool
	wait     time.Duration
	// acked: the primary has acknowledged it, with ts; its record goes
	// once every earlier write is acknowledged too, and until then says
	// so once ackStored, so that a restart does not forward it again:
	// a primary of a later epoch that lacks it would order it anew,
	// after its client was told another timestamp.
	acked     bool
	ts        hlc.Timestamp
	ackStored bool
}

// boundedPut is a client waiting for its staged write's answer.
type boundedPut struct {
	id      uint64
	seq     uint64
	from    wire.NodeID
	req     uint64
	coord   bool // answer once coordinated
	spread  bool // answer once executed everywhere
	stage   wire.Stage
	ts      hlc.Timestamp
	acks    int32
	holders []wire.NodeID
	tested  wire.Outcome
	coordAt time.Time
}

// boundedRead is a bounded Get waiting for acquisition.
type boundedRead struct {
	id   uint64
	from wire.NodeID
	m    *wire.GetRequest
	// needSeq: wait until the staged writes up to it are ordered; mark:
	// then until a pull requested after that has caught up (pullsDone).
	needSeq uint64
	mark    uint64
	// applied is the tablet's applied count when the read arrived.
	applied int64
}

// deadlineTimer answers a bounded operation when its bound runs out.
type deadlineTimer struct {
	ref wire.TabletRef
	id  uint64
}

func (t deadlineTimer) String() string { return fmt.Sprintf("deadline(%s #%d)", t.ref, t.id) }

// forwardTimer resends a receiver's unacknowledged writes.
type forwardTimer struct{ ref wire.TabletRef }

func (t forwardTimer) String() string { return fmt.Sprintf("forward(%s)", t.ref) }

// origin is what a primary has ordered of one receiver's staged writes.
type origin struct {
	seq uint64
	ts  hlc.Timestamp
}

// stepCosts are the node's fits of the planned steps toward one
// primary (dConssandra 5-B: per node, from its own timings).
type stepCosts struct {
	coordinate, spread, acquire dcon.Fit
}

// Decision is one dCON decision's input, kept for the planner's timing
// experiment (dConssandra Fig. 11), which replays them.
type Decision struct {
	Budget time.Duration
	Costs  dcon.Costs
	Work   dcon.Work
}

// decisionsMax is how many recent decisions a node keeps.
const decisionsMax = 4096

// planner is a node's dCON planner state: the fits of the planned steps
// toward each primary, on a clock that starts when the node started
// (volatile: a restarted node warms up again, dConssandra 2-C), and the
// inputs of its recent decisions.
type planner struct {
	started   time.Time
	costs     map[wire.NodeID]*stepCosts
	decisions ring[Decision]
}

func newPlanner(started time.Time) planner {
	return planner{started: started, costs: map[wire.NodeID]*stepCosts{}, decisions: newRing[Decision](decisionsMax)}
}

// costsFor returns the fits toward primary.
func (p *planner) costsFor(primary wire.NodeID) *stepCosts {
	c := p.costs[primary]
	if c == nil {
		c = &stepCosts{}
		p.costs[primary] = c
	}
	return c
}

// elapsed is the node's monotonic time since it started, for the fits.
func (n *Node) elapsed() time.Duration { return n.env.Now().Sub(n.plan.started) }

// model returns the costs the planner uses. A step whose fit is not yet
// warm costs nothing: the operation tries it and the deadline timer
// answers if it runs long, which is how the fit warms up.
func (c *stepCosts) model() dcon.Costs {
	var out dcon.Costs
	for _, s := range []struct {
		dst *dcon.Linear
		fit *dcon.Fit
	}{{&out.Coordinate, &c.coordinate}, {&out.Spread, &c.spread}, {&out.Acquire, &c.acquire}} {
		if l, warm := s.fit.Model(); warm {
			*s.dst = l
		}
	}
	return out
}

// status lists the fits with samples, by primary and step.
func (pl *planner) status() []StepCost {
	var out []StepCost
	for _, p := range slices.Sorted(maps.Keys(pl.costs)) {
		c := pl.costs[p]
		for _, s := range []struct {
			name string
			fit  *dcon.Fit
		}{{"coordinate", &c.coordinate}, {"spread", &c.spread}, {"acquire", &c.acquire}} {
			if s.fit.Samples() == 0 {
				continue
			}
			l, warm := s.fit.Model()
			out = append(out, StepCost{Primary: p, Step: s.name, Fixed: time.Duration(l.A), PerWrite: time.Duration(l.B), Samples: s.fit.Samples(), Warm: warm})
		}
	}
	return out
}

// decide runs the planner on the fits toward primary and remembers its
// input.
func (n *Node) decide(budget time.Duration, primary wire.NodeID, w dcon.Work) dcon.Plan {
	d := Decision{Budget: budget, Costs: n.plan.costsFor(primary).model(), Work: w}
	n.plan.decisions.add(d)
	n.metrics.Decisions++
	return dcon.Decide(budget, &d.Costs, w)
}

// Decisions returns the inputs of the node's recent planner decisions,
// oldest first.
func (n *Node) Decisions() []Decision { return n.plan.decisions.all() }

// stagedPut takes a Put with a bound at any replica of its tablet.
func (n *Node) stagedPut(from wire.NodeID, tb *tablet, m *wire.PutRequest) {
	n.metrics.StagedPuts++
	all := 1 + len(tb.secondaries)
	if tb.isPrimary && len(tb.staged) == 0 {
		// A primary with staged writes of its own still to order
		// (received as a secondary: rollback.go reforward) stages this
		// one after them, so that it orders them in sequence order.
		n.stageAtPrimary(from, tb, m)
		return
	}
	w := &stagedWrite{seq: tb.stagedLast + 1, client: from, key: m.Key, value: m.Value, minTS: m.MinTS, test: m.Test,
		queue: len(tb.staged) + 1, received: n.env.Now()}
	var b storage.Batch
	b.Set(stageKey(tb.ref, w.seq), encodeStaged(w))
	if err := n.env.Engine().Apply(&b, true); err != nil {
		n.storageError(err)
		n.env.Send(from, &wire.PutReply{Req: m.Req, Code: wire.StorageFailed})
		return
	}
	tb.stagedLast = w.seq
	tb.staged = append(tb.staged, w)
	p := &boundedPut{seq: w.seq, from: from, req: m.Req, stage: wire.Received}
	switch m.Bound {
	case wire.Unbounded:
		p.coord, p.spread = true, true
	case wire.Immediate:
	default:
		plan := n.decide(m.Budget, tb.primary, dcon.Work{Write: true, Queue: w.queue})
		p.coord, p.spread = plan.Coordinated, plan.Spread
	}
	if p.spread && all > 1 {
		w.spread = true
		if m.Bound != wire.Unbounded {
			w.wait = m.Bound.Duration()
		}
	}
	n.sendForwards(tb)
	if w.sent {
		p.stage = wire.Transmitted
	}
	if !p.coord {
		w.answered = true
		n.env.Send(from, p.reply())
		return
	}
	p.id = n.armDeadline(tb, m.Bound, m.Budget)
	tb.boundedPuts = append(tb.boundedPuts, p)
}

func (p *boundedPut) reply() *wire.PutReply {
	return &wire.PutReply{Req: p.req, Stage: p.stage, WriteID: p.seq, TS: p.ts, Acks: p.acks, Holders: p.holders, Tested: p.tested}
}

// sendForwards sends the staged writes not yet sent within the window.
func (n *Node) sendForwards(tb *tablet) {
	for i, w := range tb.staged {
		if i == forwardWindow {
			break
		}
		if w.sent || w.acked {
			continue
		}
		w.sent, w.sentAt = true, n.env.Now()
		f := &wire.Forward{Tablet: tb.ref, Seq: w.seq, Key: w.key, Value: w.value, MinTS: w.minTS, Test: w.test, Epoch: tb.epoch}
		if tb.epoch != 0 {
			f.Acked = tb.forwarded.seq
		}
		if w.spread {
			f.W, f.Wait = int32(1+len(tb.secondaries)), w.wait
		}
		n.env.Send(tb.primary, f)
		n.metrics.ForwardsSent++
	}
	if slices.ContainsFunc(tb.staged, func(w *stagedWrite) bool { return !w.acked }) && !tb.forwardTimer {
		tb.forwardTimer = true
		n.env.After(forwardResend, forwardTimer{tb.ref})
	}
}

// forwardTimerFired sends again the writes unacknowledged for
// forwardResend. A Forward lost makes the primary drop the ones after it
// (out of order), which are resent with it.
func (n *Node) forwardTimerFired(t forwardTimer) {
	tb := n.tablet(t.ref)
	if tb == nil {
		return
	}
	tb.forwardTimer = false
	if len(tb.staged) == 0 {
		return
	}
	now := n.env.Now()
	resend := false
	for _, w := range tb.staged {
		if w.sent && !w.acked && now.Sub(w.sentAt) >= forwardResend {
			w.sent, resend = false, true
		}
	}
	if resend {
		n.metrics.ForwardResends++
	}
	n.sendForwards(tb)
}

// stageAtPrimary takes a bounded Put at the tablet's primary: it orders
// the write at once, numbered among the primary's own staged writes, and
// answers once the table's write level holds it (every replica, if the
// planner has time for it or the bound is Unbounded), or at the
// deadline. Before the write level is reached the answer says
// Transmitted, and a Resolved follows once it is.
func (n *Node) stageAtPrimary(from wire.NodeID, tb *tablet, m *wire.PutRequest) {
	all := 1 + len(tb.secondaries)
	self := n.env.ID()
	o, err := n.originOf(tb, self)
	if err != nil {
		n.env.Send(from, &wire.PutReply{Req: m.Req, Code: wire.StorageFailed})
		return
	}
	// One numbering of the node's writes of the tablet, as primary and
	// as receiver: a write it numbers after a failover is never taken
	// for one it numbered before.
	seq := max(o.seq, tb.stagedLast) + 1
	prev := tb.lastUpdate
	record := tb.recordOrigin(self, seq, o, wire.OK)
	var done origin
	ts, tested, code := n.order(tb, m.Key, m.Value, m.MinTS, m.Test, func(b *storage.Batch, ts hlc.Timestamp, tested wire.Outcome) {
		record(b, ts, tested)
		done = origin{seq: seq, ts: hlc.Max(tb.forwarded.ts, ts)}
		b.Set(metaKey(tb.ref, metaForwarded), encodeOrigin(done))
	})
	reply := &wire.PutReply{Req: m.Req, Code: code, TS: ts, Acks: 1, Stage: wire.Coordinated, WriteID: seq, Tested: tested,
		Holders: []wire.NodeID{self}}
	if code != wire.OK {
		delete(tb.origins, self)
	} else {
		tb.stagedLast, tb.forwarded = seq, done
	}
	if code != wire.OK || ts.IsZero() {
		n.env.Send(from, reply)
		return
	}
	tb.lastUpdate = ts
	level := max(tb.writeLevel.Count(all), 1)
	need := level
	if m.Bound == wire.Unbounded || (m.Bound != wire.Immediate && all > level &&
		n.decide(m.Budget, self, dcon.Work{Write: true, Queue: 1}).Spread) {
		need = all
	}
	n.push(tb, prev, tb.tagged(wire.Entry{TS: ts, Key: m.Key, Value: m.Value}, self, seq), need)
	if need == 1 {
		if all == 1 {
			reply.Stage = wire.Executed
		}
		n.env.Send(from, reply)
		return
	}
	wait := time.Duration(-1) // Unbounded: no timer
	if m.Bound != wire.Unbounded {
		wait = m.Budget
	}
	if w := (&putWait{from: from, req: m.Req, ts: ts, need: need, level: level, staged: true, seq: seq, tested: tested, at: n.env.Now()}); n.progress(tb, w, false) {
		n.parkWait(tb, w, wait)
	}
}

// progressForward is progress for a receiver's staged write: its
// ForwardAck goes once the table's write level holds it, and again with
// the holders once need do (every replica, when its bound asks for
// that). Once its wait has run out it waits on for the write level
// alone, without a timer.
func (n *Node) progressForward(tb *tablet, w *putWait, expired bool) bool {
	count := holders(tb, w.ts)
	ack := func() {
		n.env.Send(w.from, &wire.ForwardAck{Tablet: tb.ref, Seq: w.forward, TS: w.ts, Tested: w.tested,
			Acks: int32(count), Holders: holderIDs(tb, w.ts, n.env.ID()), Epoch: tb.epoch})
	}
	if !w.levelSent && count >= w.level {
		w.levelSent = true
		ack()
		return count < w.need && !expired
	}
	if count >= w.need || (expired && w.levelSent) {
		if w.levelSent && count > w.level {
			ack()
		}
		return false
	}
	if expired {
		w.need = w.level
	}
	return true
}

// progressStaged is progress for a bounded Put the primary took itself:
// answered with its stage once need replicas hold it or its wait runs
// out; answered Transmitted if that is before the table's write level,
// and then sent a Resolved once the write level holds it.
func (n *Node) progressStaged(tb *tablet, w *putWait, expired bool) bool {
	count := holders(tb, w.ts)
	if w.answered {
		if count >= w.level {
			n.env.Send(w.from, &wire.Resolved{Tablet: tb.ref, WriteID: w.seq, TS: w.ts})
			return false
		}
		return true
	}
	if count < w.need && !expired {
		return true
	}
	reply := &wire.PutReply{Req: w.req, TS: w.ts, Acks: int32(count), Stage: wire.Coordinated, WriteID: w.seq,
		Holders: holderIDs(tb, w.ts, n.env.ID()), Tested: w.tested}
	switch {
	case count == 1+len(tb.secondaries):
		reply.Stage = wire.Executed
		n.plan.costsFor(n.env.ID()).spread.Add(n.elapsed(), 1, n.env.Now().Sub(w.at))
	case count < w.level:
		// Ordered, not yet at the write level: answered as not yet
		// coordinated, resolved later.
		reply.Stage, reply.TS, reply.Holders = wire.Transmitted, hlc.Timestamp{}, nil
		n.env.Send(w.from, reply)
		w.answered, w.need = true, w.level
		return true
	}
	n.env.Send(w.from, reply)
	return false
}

// recordOrigin returns the addition to an ordering batch that records a
// receiver's write seq as ordered, with its result, and forgets the
// result a window earlier, which the receiver can no longer ask for
// again (it never has more than forwardWindow writes outstanding).
func (tb *tablet) recordOrigin(from wire.NodeID, seq uint64, o origin, code wire.Code) func(*storage.Batch, hlc.Timestamp, wire.Outcome) {
	return func(b *storage.Batch, ts hlc.Timestamp, tested wire.Outcome) {
		next := origin{seq: seq, ts: o.ts}
		if !ts.IsZero() {
			next.ts = ts
		}
		b.Set(originKey(tb.ref, from), encodeOrigin(next))
		b.Set(resultKey(tb.ref, from, seq), encodeResult(result{ts: ts, tested: tested, code: code}))
		if tb.epoch != 0 && !ts.IsZero() {
			b.Set(taggedKey(tb.ref, ts), encodeTag(from, seq))
		}
		if seq > forwardWindow {
			b.Delete(resultKey(tb.ref, from, seq-forwardWindow))
		}
		tb.origins[from] = next // forgotten again if the batch fails
	}
}

// result is what the primary made of one forwarded write.
type result struct {
	ts     hlc.Timestamp
	tested wire.Outcome
	code   wire.Code
}

// forwarded orders a receiver's staged write at the primary, exactly
// once and in the receiver's order. A Forward delivered again is
// answered from the write's recorded result.
func (n *Node) forwarded(from wire.NodeID, m *wire.Forward) {
	tb := n.forwardedTo(from, m)
	if tb == nil {
		return
	}
	o, err := n.originOf(tb, from)
	if err != nil {
		return
	}
	if m.Acked > o.seq && m.Seq == m.Acked+1 {
		// The receiver's writes up to Acked were acknowledged, by this
		// primary or an earlier epoch's, and those this replica lacks
		// were rolled back with that epoch (level ONE: DESIGN.md
		// section 10), or it caught up by snapshot: they are settled,
		// and the receiver never forwards them again.
		n.metrics.ForwardGaps++
		o.seq = m.Acked
	}
	all := 1 + len(tb.secondaries)
	level := max(tb.writeLevel.Count(all), 1)
	switch {
	case m.Seq <= o.seq:
		// Delivered again, or its acknowledgement was lost.
		n.metrics.DuplicateForwards++
		n.reackForward(from, tb, m, o.seq, level)
		return
	case m.Seq != o.seq+1:
		// An earlier one was lost: the receiver resends from it.
		n.metrics.ForwardsOutOfOrder++
		return
	}
	n.metrics.ForwardsOrdered++
	code := n.checkWrite(tb, m.Key, m.Value, m.MinTS, m.Test)
	record := tb.recordOrigin(from, m.Seq, o, code)
	prev := tb.lastUpdate
	var ts hlc.Timestamp
	var tested wire.Outcome
	if code == wire.OK {
		ts, tested, code = n.order(tb, m.Key, m.Value, m.MinTS, m.Test, record)
		if code == wire.StorageFailed {
			delete(tb.origins, from) // reread: the batch is not there
			return                   // not ordered: the receiver sends it again
		}
	} else if !n.recordRefused(tb, from, record) {
		return
	}
	ack := &wire.ForwardAck{Tablet: tb.ref, Seq: m.Seq, Code: code, TS: ts, Acks: 1, Holders: []wire.NodeID{n.env.ID()}, Tested: tested, Epoch: tb.epoch}
	if ts.IsZero() {
		n.env.Send(from, ack)
		return
	}
	tb.lastUpdate = ts
	need := max(int(m.W), level)
	n.push(tb, prev, tb.tagged(wire.Entry{TS: ts, Key: m.Key, Value: m.Value}, from, m.Seq), need)
	if need == 1 {
		n.env.Send(from, ack)
		return
	}
	wait := time.Duration(-1)
	if m.Wait > 0 {
		wait = m.Wait
	}
	if w := (&putWait{from: from, ts: ts, need: need, level: level, forward: m.Seq, tested: tested}); n.progress(tb, w, false) {
		n.parkWait(tb, w, wait)
	}
}

// recordRefused stores the record of a staged write refused before it
// was ordered, and reports whether it could; if not, the receiver's
// origin is read again, as the batch is not there.
func (n *Node) recordRefused(tb *tablet, from wire.NodeID, record func(*storage.Batch, hlc.Timestamp, wire.Outcome)) bool {
	var b storage.Batch
	record(&b, hlc.Timestamp{}, wire.NotEvaluated)
	if err := n.env.Engine().Apply(&b, true); err != nil {
		n.storageError(err)
		delete(tb.origins, from)
		return false
	}
	return true
}

// forwardedTo returns the tablet a Forward may be ordered in, or nil: a
// node that holds no such tablet, or is not its primary, says so; a
// primary drops one of another epoch, or one that comes while it holds
// no lease (the receiver sends it again).
func (n *Node) forwardedTo(from wire.NodeID, m *wire.Forward) *tablet {
	tb := n.tablet(m.Tablet)
	if tb == nil || !tb.isPrimary {
		ack := &wire.ForwardAck{Tablet: m.Tablet, Seq: m.Seq, Code: wire.NoTable}
		if tb != nil {
			ack.Code = wire.NotPrimary
			ack.Epoch, ack.Primary = n.notPrimary(tb)
		}
		n.env.Send(from, ack)
		return nil
	}
	if !n.sameEpoch(tb, m.Epoch) || n.admit(tb, 0) != wire.OK {
		return nil
	}
	return tb
}

// reackForward answers a Forward delivered again from the write's
// recorded result. A new primary may hold no record of a write an
// earlier primary evaluated without writing anything (its test failed,
// or it was refused): such a record is not pushed, as no version carries
// it. The receiver's later writes it holds tell it that the earlier
// primary evaluated this one, in the receiver's order, and since no
// version of it came with them, that it wrote nothing; which answer it
// had is rebuilt from the write. A record older than the receiver's
// window behind last, its latest write ordered here, is forgotten: the
// receiver asks for no such write again, and a copy of its Forward
// that the network delivers late goes unanswered.
func (n *Node) reackForward(from wire.NodeID, tb *tablet, m *wire.Forward, last uint64, level int) {
	v, recorded, err := n.env.Engine().Get(resultKey(tb.ref, from, m.Seq))
	var r result
	if err == nil && recorded {
		r, err = decodeResult(v)
	}
	if err != nil {
		n.storageError(err)
		return
	}
	switch {
	case !recorded && m.Seq+forwardWindow <= last:
		return
	case !recorded:
		r = n.unwritten(tb, m)
	}
	if !r.ts.IsZero() && holders(tb, r.ts) < level {
		return // not yet at the table's write level: the receiver asks again
	}
	n.env.Send(from, &wire.ForwardAck{Tablet: tb.ref, Seq: m.Seq, Code: r.code, TS: r.ts, Tested: r.tested,
		Acks: int32(holders(tb, r.ts)), Holders: holderIDs(tb, r.ts, n.env.ID()), Epoch: tb.epoch})
}

// unwritten rebuilds the result of a forwarded write that an earlier
// primary evaluated without writing it (reackForward): the refusal its
// checks give again, else a failed test; a plain write that passes them
// can only have been refused for its session minimum, far ahead of that
// primary's clock (checkWrite), which is not checked again.
func (n *Node) unwritten(tb *tablet, m *wire.Forward) result {
	switch code := n.checkWrite(tb, m.Key, m.Value, hlc.Timestamp{}, m.Test); {
	case code != wire.OK:
		return result{code: code}
	case m.Test != nil:
		return result{code: wire.OK, tested: wire.Failed}
	default:
		return result{code: wire.Invalid}
	}
}

// originOf returns what the primary has ordered of a receiver's writes.
func (n *Node) originOf(tb *tablet, from wire.NodeID) (origin, error) {
	if o, ok := tb.origins[from]; ok {
		return o, nil
	}
	v, ok, err := n.env.Engine().Get(originKey(tb.ref, from))
	var o origin
	if err == nil && ok {
		o, err = decodeOrigin(v)
	}
	if err != nil {
		n.storageError(err)
		return o, err
	}
	tb.origins[from] = o
	return o, nil
}

// forwardAcked takes the primary's acknowledgement of one staged write
// at the receiver. Acknowledgements may come out of order (one lost,
// the next not); the staging records are deleted, and the tablet's
// forward mark advanced, over the acknowledged prefix only, so that a
// restart forwards again whatever was not, and the primary answers a
// write forwarded again from its recorded result.
func (n *Node) forwardAcked(from wire.NodeID, m *wire.ForwardAck) {
	tb := n.tablet(m.Tablet)
	if tb == nil || from != tb.primary {
		// At a primary, only its own acknowledgements: of the writes it
		// received as a secondary and orders now (rollback.go reforward).
		return
	}
	if n.governed() && m.Code == wire.NotPrimary {
		// Deposed: the writes go to the new primary once the
		// EpochChange names it (rollback.go).
		for _, w := range tb.staged {
			w.sent = false
		}
		return
	}
	if !n.sameEpoch(tb, m.Epoch) {
		return
	}
	n.metrics.ForwardAcksReceived++
	now := n.env.Now()
	costs := n.plan.costsFor(tb.primary)
	i := slices.IndexFunc(tb.staged, func(w *stagedWrite) bool { return w.seq == m.Seq })
	if i < 0 || tb.staged[i].acked {
		// Execution reported later (Forward.W), or a duplicate.
		n.executedLater(tb, m, costs, now)
		return
	}
	w := tb.staged[i]
	w.acked, w.ts = true, m.TS
	// The primary holds an ordered write this replica has yet to apply.
	tb.known = hlc.Max(tb.known, m.TS)
	if !w.received.IsZero() {
		costs.coordinate.Add(n.elapsed(), w.queue, now.Sub(w.received))
	}
	if w.answered {
		n.env.Send(w.client, &wire.Resolved{Tablet: tb.ref, WriteID: w.seq, Code: m.Code, TS: m.TS})
	}
	for _, p := range tb.boundedPuts {
		if p.seq != w.seq {
			continue
		}
		if m.Code != wire.OK {
			n.env.Send(p.from, &wire.PutReply{Req: p.req, Code: m.Code, WriteID: p.seq})
			p.seq = 0 // answered
			continue
		}
		p.stage, p.ts, p.coordAt = wire.Coordinated, m.TS, now
		p.acks, p.holders, p.tested = m.Acks, m.Holders, m.Tested
		switch {
		case m.Tested == wire.Failed:
			// Nothing was written, so nothing is executed.
			p.ts, p.spread, p.holders = hlc.Timestamp{}, false, nil
		case int(m.Acks) == 1+len(tb.secondaries):
			p.stage = wire.Executed
		}
	}
	n.dropAckedPrefix(tb)
	n.answerPuts(tb)
	n.sendForwards(tb)
	n.advanceReads(tb)
}

// executedLater takes a ForwardAck that reports more replicas holding
// a coordinated write (Forward.W), or a duplicate, and answers the Puts
// now executed, timing their spread (dConssandra 5-B) as of now.
func (n *Node) executedLater(tb *tablet, m *wire.ForwardAck, costs *stepCosts, now time.Time) {
	for _, p := range tb.boundedPuts {
		if p.seq == m.Seq && p.stage >= wire.Coordinated && m.Acks > p.acks {
			p.acks, p.holders = m.Acks, m.Holders
			if int(m.Acks) == 1+len(tb.secondaries) {
				p.stage = wire.Executed
				costs.spread.Add(n.elapsed(), 1, now.Sub(p.coordAt))
			}
		}
	}
	n.answerPuts(tb)
}

// dropAckedPrefix deletes the staging records of the acknowledged
// prefix of the staged writes and advances the forward mark over it; the
// records of the writes acknowledged after it say so from then on.
func (n *Node) dropAckedPrefix(tb *tablet) {
	done := 0
	for done < len(tb.staged) && tb.staged[done].acked {
		done++
	}
	var b storage.Batch
	var stored []*stagedWrite
	for _, w := range tb.staged[done:] {
		// Governed only: without failovers a write forwarded again is
		// always answered from the primary's record.
		if w.acked && !w.ackStored && tb.epoch != 0 {
			w.ackStored = true
			stored = append(stored, w)
			b.Set(stageKey(tb.ref, w.seq), encodeStaged(w))
		}
	}
	var forwarded origin
	if done > 0 {
		for _, w := range tb.staged[:done] {
			b.Delete(stageKey(tb.ref, w.seq))
		}
		last := tb.staged[done-1]
		forwarded = origin{seq: last.seq, ts: last.ts}
		b.Set(metaKey(tb.ref, metaForwarded), encodeOrigin(forwarded))
	}
	if b.Len() == 0 {
		return
	}
	// Ungoverned, not synced: were it lost, the records are forwarded
	// again after a restart and the primary answers from its recorded
	// results. Governed, synced before the receiver tells a client the
	// write's timestamp (Resolved): a failover may roll the version
	// back, and a write forwarded again after a restart would then be
	// ordered anew at another timestamp than the one its client was told
	// (TestRandomized seed 231).
	if err := n.env.Engine().Apply(&b, tb.epoch != 0); err != nil {
		// Forwarded again, the writes are acknowledged again from
		// their recorded results, and their records deleted then.
		n.storageError(err)
		for _, w := range stored {
			w.ackStored = false
		}
		for _, w := range tb.staged[:done] {
			w.acked, w.sent = false, false
		}
		return
	}
	if done > 0 {
		tb.forwarded = forwarded
		tb.staged = slices.Delete(tb.staged, 0, done)
	}
}

// answerPuts answers the waiting Puts whose chosen stage is reached.
func (n *Node) answerPuts(tb *tablet) {
	kept := tb.boundedPuts[:0]
	for _, p := range tb.boundedPuts {
		switch {
		case p.seq == 0:
			continue
		case p.stage >= wire.Executed || (p.stage >= wire.Coordinated && !p.spread):
			n.env.Send(p.from, p.reply())
			continue
		}
		kept = append(kept, p)
	}
	clear(tb.boundedPuts[len(kept):])
	tb.boundedPuts = kept
}

// armDeadline numbers a bounded operation that waits at tb and, unless
// it is unbounded, sets the timer that answers it once its budget has
// run out (deadlineFired).
func (n *Node) armDeadline(tb *tablet, bound wire.Bound, budget time.Duration) uint64 {
	n.lastWait++
	if bound != wire.Unbounded {
		n.env.After(budget, deadlineTimer{ref: tb.ref, id: n.lastWait})
	}
	return n.lastWait
}

// deadlineFired answers a bounded operation whose bound ran out with
// what was done.
func (n *Node) deadlineFired(t deadlineTimer) {
	tb := n.tablet(t.ref)
	if tb == nil {
		return
	}
	if p, ok := take(&tb.boundedPuts, func(p *boundedPut) bool { return p.id == t.id }); ok {
		n.metrics.Deadlines++
		if p.stage < wire.Coordinated {
			for _, w := range tb.staged {
				if w.seq == p.seq {
					w.answered = true
				}
			}
		}
		n.env.Send(p.from, p.reply())
		return
	}
	if r, ok := take(&tb.boundedReads, func(r *boundedRead) bool { return r.id == t.id }); ok {
		n.metrics.Deadlines++
		n.answerRead(tb, r)
	}
}

// take removes from *s the first element for which is returns true, and
// returns it.
func take[T any](s *[]T, is func(T) bool) (T, bool) {
	i := slices.IndexFunc(*s, is)
	if i < 0 {
		var zero T
		return zero, false
	}
	v := (*s)[i]
	*s = slices.Delete(*s, i, i+1)
	return v, true
}

// boundedGet serves a Get with a bound (dConssandra 2-B, 5-C).
func (n *Node) boundedGet(from wire.NodeID, tb *tablet, m *wire.GetRequest) {
	n.metrics.BoundedGets++
	r := &boundedRead{from: from, m: m, applied: tb.applied}
	if tb.isPrimary {
		// The primary holds every ordered write and orders its own
		// staged writes at once: nothing is pending.
		n.answerRead(tb, r)
		return
	}
	keyStaged := 0
	for i, w := range tb.staged {
		if w.key == m.Key {
			keyStaged, r.needSeq = i+1, w.seq
		}
	}
	work := dcon.Work{KeyStaged: keyStaged}
	if tb.high.Less(tb.known) {
		work.Missing = 1
	}
	acquire := true
	if m.Bound != wire.Unbounded {
		var plan dcon.Plan
		if m.Bound == wire.Immediate {
			// No time for any step (dConssandra 2-B: a bound at or
			// below the local read's latency).
			plan.Null = keyStaged > 0
		} else {
			plan = n.decide(m.Budget, tb.primary, work)
		}
		if plan.Null {
			n.metrics.NullReads++
			reply := &wire.GetReply{Req: m.Req, Null: true, Pending: int32(tb.pendingOf(m.Key))}
			reply.HighTS, reply.Primary = n.high(tb)
			n.env.Send(from, reply)
			return
		}
		acquire = plan.Acquire
	} else {
		r.needSeq = tb.stagedLast
	}
	if !acquire {
		n.answerRead(tb, r)
		return
	}
	r.id = n.armDeadline(tb, m.Bound, m.Budget)
	tb.boundedReads = append(tb.boundedReads, r)
	n.advanceReads(tb)
}

// advanceReads moves the waiting bounded reads on: once a read's staged
// writes are ordered it asks for a pull, and once a pull sent after that
// has caught up it reads.
func (n *Node) advanceReads(tb *tablet) {
	kept := tb.boundedReads[:0]
	for _, r := range tb.boundedReads {
		if r.needSeq > tb.forwarded.seq {
			kept = append(kept, r)
			continue
		}
		if r.mark == 0 {
			r.mark = n.pullSoon(tb)
		}
		if tb.pullsDone < r.mark {
			kept = append(kept, r)
			continue
		}
		n.answerRead(tb, r)
	}
	clear(tb.boundedReads[len(kept):])
	tb.boundedReads = kept
}

// pullSoon makes sure a pull is sent from now on and returns the number
// it will have: one outstanding was sent before, so another follows its
// reply.
func (n *Node) pullSoon(tb *tablet) uint64 {
	if !tb.pulling {
		n.requestPull(tb)
		return tb.pullsSent
	}
	tb.pullAgain = true
	return tb.pullsSent + 1
}

// pendingOf counts the writes a secondary knows it lacks for key: its
// staged writes of the key not yet ordered, and one if it has heard of
// ordered writes it has not applied.
func (tb *tablet) pendingOf(key string) int {
	pending := 0
	for _, w := range tb.staged {
		if w.key == key {
			pending++
		}
	}
	if tb.high.Less(tb.known) {
		pending++
	}
	return pending
}

// answerRead reads the key and reports what the read brought in.
func (n *Node) answerRead(tb *tablet, r *boundedRead) {
	reply := n.get(r.m)
	if reply.Code == wire.OK {
		reply.Applied = int32(tb.applied - r.applied)
		if !tb.isPrimary {
			reply.Pending = int32(tb.pendingOf(r.m.Key))
		}
	}
	n.env.Send(r.from, reply)
}

// loadStaged recovers a receiver's staged writes after a restart; they
// are forwarded again at once.
func (n *Node) loadStaged(tb *tablet) error {
	eng := n.env.Engine()
	v, ok, err := eng.Get(metaKey(tb.ref, metaForwarded))
	if err == nil && ok {
		tb.forwarded, err = decodeOrigin(v)
	}
	if err != nil {
		return fmt.Errorf("replica: read tablet %s forward mark: %w", tb.ref, err)
	}
	tb.stagedLast = tb.forwarded.seq
	prefix := tabletPrefix(spaceStage, tb.ref)
	err = storage.Walk(eng, prefix, prefixEnd(prefix), func(k, v []byte) (bool, error) {
		w, err := decodeStaged(k[prefixLen:], v)
		if err != nil {
			return false, err
		}
		if w.seq <= tb.forwarded.seq {
			return true, nil // ordered; its deletion was lost
		}
		w.answered = true
		tb.staged = append(tb.staged, w)
		tb.stagedLast = max(tb.stagedLast, w.seq)
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("replica: read tablet %s staged writes: %w", tb.ref, err)
	}
	if len(tb.staged) > 0 {
		tb.forwardTimer = true
		n.env.After(0, forwardTimer{tb.ref})
	}
	return nil
}

func stageKey(ref wire.TabletRef, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(tabletPrefix(spaceStage, ref), seq)
}

func originKey(ref wire.TabletRef, from wire.NodeID) []byte {
	return append(tabletPrefix(spaceOrigin, ref), from...)
}

// resultKey names a forwarded write's result. Node IDs hold no zero byte.
func resultKey(ref wire.TabletRef, from wire.NodeID, seq uint64) []byte {
	k := append(append(tabletPrefix(spaceResult, ref), from...), 0)
	return binary.BigEndian.AppendUint64(k, seq)
}

func encodeResult(r result) []byte {
	return append(appendTS(nil, r.ts), byte(r.tested), byte(r.code))
}

func decodeResult(b []byte) (result, error) {
	if len(b) != tsLen+2 {
		return result{}, fmt.Errorf("%w: forward result of %d bytes", errCorrupt, len(b))
	}
	ts, err := decodeTS(b[:tsLen])
	return result{ts: ts, tested: wire.Outcome(b[tsLen]), code: wire.Code(b[tsLen+1])}, err
}

// A staging record: the client's ID, the key, the value, the session
// minimum and the test, each length-prefixed, and, once the primary has
// acknowledged the write ahead of an earlier one, its timestamp.
func encodeStaged(w *stagedWrite) []byte {
	b := appendTS(nil, w.minTS)
	b = appendBytes(b, []byte(w.client))
	b = appendBytes(b, []byte(w.key))
	b = appendBytes(b, w.value)
	if w.test == nil {
		b = append(b, 0)
	} else {
		found := byte(1)
		if w.test.Found {
			found = 2
		}
		b = append(b, found)
		b = appendBytes(b, []byte(w.test.Key))
		b = appendBytes(b, w.test.Value)
	}
	if w.acked {
		b = appendTS(b, w.ts)
	}
	return b
}

func decodeStaged(seq, b []byte) (*stagedWrite, error) {
	bad := fmt.Errorf("%w: staging record of %d bytes", errCorrupt, len(b))
	if len(seq) != 8 || len(b) < tsLen {
		return nil, bad
	}
	w := &stagedWrite{seq: binary.BigEndian.Uint64(seq)}
	var err error
	if w.minTS, err = decodeTS(b[:tsLen]); err != nil {
		return nil, err
	}
	b = b[tsLen:]
	var client, key []byte
	var ok bool
	if client, b, ok = takeBytes(b); !ok {
		return nil, bad
	}
	if key, b, ok = takeBytes(b); !ok {
		return nil, bad
	}
	if w.value, b, ok = takeBytes(b); !ok || len(b) == 0 {
		return nil, bad
	}
	w.client, w.key = wire.NodeID(client), string(key)
	if b[0] != 0 {
		w.test = &wire.Test{Found: b[0] == 2}
		if key, b, ok = takeBytes(b[1:]); !ok {
			return nil, bad
		}
		if w.test.Value, b, ok = takeBytes(b); !ok {
			return nil, bad
		}
		w.test.Key = string(key)
	} else {
		b = b[1:]
	}
	switch len(b) {
	case 0:
		return w, nil
	case tsLen:
		w.acked, w.ackStored = true, true
		w.ts, err = decodeTS(b)
		return w, err
	}
	return nil, bad
}

func appendBytes(b, v []byte) []byte {
	return append(binary.AppendUvarint(b, uint64(len(v))), v...)
}

func takeBytes(b []byte) (v, rest []byte, ok bool) {
	n, w := binary.Uvarint(b)
	if w <= 0 || uint64(len(b)-w) < n {
		return nil, nil, false
	}
	return append([]byte(nil), b[w:w+int(n)]...), b[w+int(n):], true
}

func encodeOrigin(o origin) []byte {
	return appendTS(binary.BigEndian.AppendUint64(nil, o.seq), o.ts)
}

func decodeOrigin(b []byte) (origin, error) {
	if len(b) != 8+tsLen {
		return origin{}, fmt.Errorf("%w: forward record of %d bytes", errCorrupt, len(b))
	}
	ts, err := decodeTS(b[8:])
	return origin{seq: binary.BigEndian.Uint64(b), ts: ts}, err
}
