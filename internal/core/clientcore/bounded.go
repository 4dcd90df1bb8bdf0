package clientcore

import (
	"fmt"
	"slices"
	"time"

	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/keyfmt"
	"github.com/cosla/cosla/sla"
)

// Bounded operations (dConssandra; DESIGN.md section 4). A Put with a
// bound goes to the nearest replica by the monitor, or to the replica
// holding the session's pending writes of the tablet, so that they reach
// the primary in the order the session wrote them. The node answers
// within the bound with the stage the write reached. A write answered
// before the primary ordered it is pending: the session keeps its key,
// value and write ID, and the node later sends its timestamp
// (wire.Resolved).
//
// A Get of a key the session has a pending write of, under an SLA with a
// read-my-writes, monotonic or causal subSLA, returns the session's
// newest pending value and meets the first such subSLA: a replica may
// not hold the write yet, and the session must not go back behind it.
// Strong and bounded-staleness subSLAs are not met by a pending value,
// which has no timestamp yet: a Get under them alone asks the replicas,
// as does one under eventual alone.
//
// Session order is kept by holding operations back (held, in the
// session's order, until they may go or their time runs out):
//   - a Put waits until no pending write of the session could be ordered
//     after it: a bounded Put may go with pending writes of its tablet
//     at its receiver, which orders its writes in the order it took
//     them; any other Put waits for every pending write to be ordered;
//   - once a Get has read a replica while the session had a pending
//     write, whether that write is newer than what was read, or than a
//     write of its key causally before it, is unknown until the write is
//     ordered: the next Gets of its key wait for that.

// pendingWrite is a write of the session answered before the primary
// ordered it.
type pendingWrite struct {
	tablet  int
	node    wire.NodeID
	id      uint64
	key     string
	value   []byte
	read    bool // a Get returned it
	waiting bool // its Put is still unanswered (never pending then)
	req     uint64
	// readSince: a Get of the session read a replica since (see above).
	readSince bool
}

// heldOp is an operation waiting for the session's pending writes.
type heldOp struct {
	clear      func() bool
	send, fail func()
	gone       bool
}

// heldTimer ends a held operation's wait.
type heldTimer struct {
	s  *Session
	op *heldOp
	id uint64
}

func (t heldTimer) String() string { return fmt.Sprintf("held(#%d)", t.id) }

// hold queues an operation behind the session's held ones; it is sent
// once clear and first in the queue, or fails after timeout.
func (c *Client) hold(s *Session, timeout time.Duration, clear func() bool, send, fail func()) {
	op := &heldOp{clear: clear, send: send, fail: fail}
	s.held = append(s.held, op)
	c.lastHeld++
	c.env.After(timeout, heldTimer{s: s, op: op, id: c.lastHeld})
	s.release()
}

// release sends the held operations at the head of the session's queue
// that may go.
func (s *Session) release() {
	for len(s.held) > 0 && s.held[0].clear() {
		op := s.held[0]
		s.held = s.held[1:]
		op.gone = true
		op.send()
	}
}

// expire fails the held operation whose wait ran out, unless it went.
func (t heldTimer) expire() {
	if t.op.gone {
		return
	}
	t.op.gone = true
	if i := slices.Index(t.s.held, t.op); i >= 0 {
		t.s.held = slices.Delete(t.s.held, i, i+1)
	}
	t.op.fail()
	t.s.release()
}

// putClear reports whether a Put of key may go now (see above).
func (s *Session) putClear(tv *tabletView, o PutOptions) bool {
	if o.Bound == wire.NoBound {
		return len(s.pending) == 0
	}
	r := s.receiver(tv)
	for _, p := range s.pending {
		if p.tablet != tv.index() || p.node != r.id {
			return false
		}
	}
	return true
}

// getClear reports whether a Get of key may go now (see above).
func (s *Session) getClear(key string) bool {
	for _, p := range s.pending {
		if p.key == key && p.readSince {
			return false
		}
	}
	return true
}

// supersede resolves the session's pending writes that a write at the
// same receiver and tablet, now ordered at ts, was taken after: the
// receiver has them ordered before it, so ts bounds their timestamps
// from above, which keeps the session guarantees that use them.
func (c *Client) supersede(s *Session, w *pendingWrite, ts hlc.Timestamp) {
	c.supersedeEarlier(s, w, ts)
	s.release()
}

// supersedeEarlier resolves, as supersede does, the pending writes taken
// before w at its receiver.
func (c *Client) supersedeEarlier(s *Session, w *pendingWrite, ts hlc.Timestamp) {
	for _, p := range slices.Clone(s.pending) {
		if p == w || p.waiting || p.tablet != w.tablet || p.node != w.node || p.req > w.req {
			continue
		}
		tv := &s.table.tablets[p.tablet]
		delete(c.staged, stagedID{p.node, tv.ref, p.id})
		s.dropPending(p)
		s.recordPut(p.key, ts)
		if p.read {
			s.recordRead(p.key, ts)
		}
	}
}

// stagedID names a pending write at the client.
type stagedID struct {
	node   wire.NodeID
	tablet wire.TabletRef
	id     uint64
}

// ZeroBound and NegativeBound stand for a bound of zero or negative
// duration given by the caller: usage errors, since Immediate is how to
// ask for reception only.
const (
	ZeroBound     wire.Bound = -2
	NegativeBound wire.Bound = -3
)

// checkBound rejects a bound that is none of the valid ones.
func checkBound(b wire.Bound) error {
	switch b {
	case ZeroBound:
		return fmt.Errorf("%w: a bound of zero: give Immediate for an answer after reception only", ErrInvalid)
	case NegativeBound:
		return fmt.Errorf("%w: a negative bound: give Immediate, Unbounded or a positive duration", ErrInvalid)
	}
	if !b.Valid() {
		return fmt.Errorf("%w: bound %d: give Immediate, Unbounded or a positive duration", ErrInvalid, int64(b))
	}
	return nil
}

// receiver picks the replica a bounded operation of the session goes to.
func (s *Session) receiver(tv *tabletView) *replicaState {
	for _, p := range s.pending {
		if p.tablet == tv.index() {
			for _, r := range tv.replicas {
				if r.id == p.node {
					return r
				}
			}
		}
	}
	return tv.replicas[closest(tv.replicas)]
}

// budget is the time a node may spend on a bounded operation: the bound
// less the round trip the client expects (dConssandra Alg. 1's
// t_r - C_P, the reply's transfer).
func budget(b wire.Bound, r *replicaState) time.Duration {
	switch b {
	case wire.Immediate, wire.Unbounded:
		return 0 // not used: no planning
	}
	return max(b.Duration()-r.rtt.Mean(), 0)
}

// putBounded sends a Put with a bound, or a ReadTestWrite.
func (c *Client) putBounded(s *Session, tv *tabletView, key string, value []byte, o PutOptions, timeout time.Duration, rt *putRetry, done func(PutResult, error)) {
	r := tv.replicas[0]
	if o.Bound != wire.NoBound {
		r = s.receiver(tv)
	}
	sent := c.env.Now()
	req := c.newReq()
	m := &wire.PutRequest{Req: req, Tablet: tv.ref, Key: key, Value: slices.Clone(value), MinTS: s.maxTS,
		Bound: o.Bound, Budget: budget(o.Bound, r), Test: o.Test, Epoch: tv.epoch}
	if o.Bound != wire.NoBound && o.Bound != wire.Unbounded {
		// The node answers by the bound; past it and the round trip, and
		// some slack for a busy node, the client stops waiting.
		timeout = min(timeout, boundTimeout(o.Bound, r))
	}
	// Until its answer, the write is in the session's queue of the
	// tablet, so that the session's next bounded Puts go to the same
	// replica; it is not returned by Gets.
	slot := &pendingWrite{tablet: tv.index(), node: r.id, key: key, value: m.Value, waiting: true, req: req}
	if o.Bound != wire.NoBound {
		s.pending = append(s.pending, slot)
	}
	// A ReadTestWrite's write may not happen: it is never pending.
	conditional := o.Test != nil
	c.send(r.id, m, req, timeout, &pending{
		onReply: func(_ wire.NodeID, msg wire.Msg) {
			defer s.release()
			reply := msg.(*wire.PutReply)
			res := PutResult{Node: r.id, RTT: c.boundedRTT(sent), Level: 1, Acks: int(reply.Acks),
				Bound: o.Bound, Stage: reply.Stage, WriteID: reply.WriteID, Holders: reply.Holders, Tested: reply.Tested, TS: reply.TS}
			// Turned away, the write keeps its place in the session's
			// queue until it is sent again.
			again := func(timeout time.Duration) {
				s.dropPending(slot)
				c.putBounded(s, tv, key, value, o, timeout, rt, done)
			}
			fail := func(err error) {
				s.dropPending(slot)
				done(res, err)
			}
			if c.retryPut(s.table, tv, key, r.id, reply, rt, again, fail) {
				return
			}
			s.dropPending(slot)
			if reply.Code != wire.OK {
				done(res, fmt.Errorf("put %s at %s: %w", keyfmt.Quote(key), r.id, codeError(reply.Code)))
				return
			}
			if !reply.TS.IsZero() {
				c.observeHigh(tv, r, reply.TS)
				s.recordPut(key, reply.TS)
				c.supersede(s, slot, reply.TS)
			} else if reply.Stage != 0 && reply.Stage < wire.Coordinated && !conditional {
				slot.id, slot.waiting = reply.WriteID, false
				s.pending = append(s.pending, slot)
				c.staged[stagedID{r.id, tv.ref, reply.WriteID}] = s
			}
			done(res, nil)
		},
		onTimeout: func() {
			c.boundedRTT(sent)
			s.dropPending(slot)
			s.release()
			done(PutResult{Node: r.id, Bound: o.Bound}, fmt.Errorf("%w: put %s: no reply from %s within %s", ErrTimeout, keyfmt.Quote(key), r.id, timeout))
		},
	})
}

// boundTimeout is how long a client waits for a bounded operation.
func boundTimeout(b wire.Bound, r *replicaState) time.Duration {
	return max(b.Duration(), 0) + 2*r.rtt.Mean() + boundSlack
}

// boundedRTT returns a bounded operation's round trip. It is no sample
// for the monitor, nor contact that spares the node a probe: the node
// waits for the work its bound allows (an Immediate Put for its staging
// record's sync), which says nothing of the network, and would make the
// receiver a session just used look farther than the others.
func (c *Client) boundedRTT(sent time.Time) time.Duration {
	return c.env.Now().Sub(sent)
}

// boundSlack is how long past a bound and its round trip a client waits
// for a bounded operation's answer before giving up (our choice: a
// node's deadline timer can be late by a busy mailbox and a disk sync).
const boundSlack = 250 * time.Millisecond

// resolved takes a node's report that a pending write was ordered.
func (c *Client) resolved(from wire.NodeID, m *wire.Resolved) {
	id := stagedID{from, m.Tablet, m.WriteID}
	s, ok := c.staged[id]
	if !ok {
		return
	}
	delete(c.staged, id)
	defer s.release()
	for _, p := range s.pending {
		if p.node != from || p.id != m.WriteID || p.waiting || s.table.tablets[p.tablet].ref != m.Tablet {
			continue
		}
		s.dropPending(p)
		if m.Code != wire.OK {
			c.refusedWrites++
			c.env.Logger().Warn("clientcore: a staged write was refused by the primary", "key", p.key, "node", from, "code", m.Code)
			return
		}
		s.recordPut(p.key, m.TS)
		if p.read {
			s.recordRead(p.key, m.TS)
		}
		// The receiver had the session's earlier writes ordered before
		// this one: their acknowledgements may be lost (a primary that
		// moved answers no write forwarded again whose result it no
		// longer holds: TestRandomized seed 281).
		c.supersedeEarlier(s, p, m.TS)
		return
	}
}

// markRead notes that a Get of the session goes to the replicas while
// it has pending writes: what it reads may be newer than they are, or
// have a newer write of their keys in its causal past.
func (s *Session) markRead() {
	for _, p := range s.pending {
		if !p.waiting {
			p.readSince = true
		}
	}
}

// dropPending removes p from the session's pending writes.
func (s *Session) dropPending(p *pendingWrite) {
	if i := slices.Index(s.pending, p); i >= 0 {
		s.pending = slices.Delete(s.pending, i, i+1)
	}
}

// pendingValue returns the session's newest pending value of key.
func (s *Session) pendingValue(key string) *pendingWrite {
	for i := len(s.pending) - 1; i >= 0; i-- {
		if p := s.pending[i]; !p.waiting && p.key == key {
			return p
		}
	}
	return nil
}

// sessionMeets returns the first subSLA a pending value meets, or -1.
// sessionMeets returns the first subSLA a pending value meets after
// elapsed (the time the Get was held back), or -1.
func sessionMeets(agreement sla.SLA, elapsed time.Duration) int {
	for i, sub := range agreement {
		switch sub.Consistency.Kind {
		case sla.ReadMyWrites, sla.Monotonic, sla.Causal:
			if elapsed <= sub.Latency {
				return i
			}
		}
	}
	return -1
}

// fromSession answers a Get from the session's pending write of key, if
// it has one and the SLA lets it (see the top of this file).
func (c *Client) fromSession(s *Session, key string, agreement sla.SLA, res GetResult, since time.Time, done func(GetResult, error)) bool {
	p := s.pendingValue(key)
	if p == nil {
		return false
	}
	elapsed := c.env.Now().Sub(since)
	met := sessionMeets(agreement, elapsed)
	if met < 0 {
		return false
	}
	p.read = true
	res.Value, res.Found, res.Met, res.SubSLA, res.FromSession = slices.Clone(p.value), true, met, agreement[met], true
	res.Node, res.RTT = p.node, elapsed
	c.answerLater(key, since, res, done)
	return true
}

// answerLater calls done with res at once but never from within Get. It
// is a function of its own so that res is moved to the heap only for a
// Get that fromSession answers.
func (c *Client) answerLater(key string, since time.Time, res GetResult, done func(GetResult, error)) {
	c.env.After(0, delayTimer{key: key, start: since, send: func() { done(res, nil) }})
}

// getBounded sends a Get with a bound to the receiver of the session's
// pending writes of the tablet, or the nearest replica.
func (c *Client) getBounded(s *Session, tv *tabletView, key string, agreement sla.SLA, o GetOptions, done func(GetResult, error)) {
	r := s.receiver(tv)
	sent := c.env.Now()
	req := c.newReq()
	m := &wire.GetRequest{Req: req, Tablet: tv.ref, Key: key, Bound: o.Bound, Budget: budget(o.Bound, r)}
	timeout := c.opts.RequestTimeout
	if o.Bound != wire.Unbounded {
		timeout = min(timeout, boundTimeout(o.Bound, r))
	}
	res := GetResult{Met: -1, Target: -1, Strategy: Closest, Level: 1, Node: r.id, Bound: o.Bound}
	c.send(r.id, m, req, timeout, &pending{
		onReply: func(_ wire.NodeID, msg wire.Msg) {
			reply := msg.(*wire.GetReply)
			c.boundedRTT(sent)
			res.RTT = c.env.Now().Sub(o.since)
			if reply.Code != wire.OK {
				done(res, fmt.Errorf("get %s at %s: %w", keyfmt.Quote(key), r.id, codeError(reply.Code)))
				return
			}
			c.observeRead(tv, r, reply.HighTS, reply.Primary)
			res.Primary, res.HighTS, res.Applied, res.Pending, res.Null = reply.Primary, reply.HighTS, int(reply.Applied), int(reply.Pending), reply.Null
			if c.fromSession(s, key, agreement, res, o.since, done) {
				return
			}
			if reply.Null {
				done(res, fmt.Errorf("%w: get %s at %s: %d pending, none could be applied within %s", ErrNull, keyfmt.Quote(key), r.id, reply.Pending, o.Bound))
				return
			}
			res.Value, res.Found, res.VersionTS = reply.Value, reply.Found, reply.VersionTS
			if res.Found {
				s.recordRead(key, reply.VersionTS)
			}
			res.Met = metSubSLA(agreement, c.minReadTimestamps(s, agreement, key), int64(res.RTT), reply.HighTS, reply.Primary)
			if res.Met >= 0 {
				res.SubSLA = agreement[res.Met]
			}
			done(res, nil)
		},
		onTimeout: func() {
			c.boundedRTT(sent)
			done(res, fmt.Errorf("%w: get %s: no reply from %s within %s", ErrTimeout, keyfmt.Quote(key), r.id, timeout))
		},
	})
}
