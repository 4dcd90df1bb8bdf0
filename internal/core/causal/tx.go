package causal

import (
	"slices"
	"time"

	"github.com/cosla/cosla/internal/core/wire"
)

// pendingTx is a get-transaction in progress (Karma 4.5).
//
// Karma adopts Eiger's read-only transactions, which rebuild a snapshot
// from saved old versions. Our stores keep only the newest version, so a
// transaction instead reads every key from one ring in rounds until two
// consecutive rounds return the same versions (a double collect). Then
// each version was the newest at its node throughout the interval from
// the first of the two reads to the second, and all those intervals share
// the instant the first round's last read was served. A ring applies a
// write only after its causal past (put-after), so the ring's contents at
// any instant are causally closed, and versions current together at one
// instant form a causally consistent snapshot. After TxRounds rounds
// without a repeat the transaction aborts (Karma 4.5: abort and retry).
type pendingTx struct {
	client wire.NodeID
	m      *wire.CausalGetTx
	wbs    []*buffered
	ring   int
	bound  bool
	tried  uint64
	round  int
	prev   []*wire.ReadReply
	cur    []*wire.ReadReply
	left   int
	sent   time.Time
	// reqs are the round's outstanding reads.
	reqs []uint64
	// deadline is when the client stops waiting (WallNanos).
	deadline int64
	// lifted are the transaction's restrictions known stable.
	lifted []wire.Dep
	// rebound as a read's (pendingRead).
	rebound bool
}

type txRead struct {
	tx   uint64
	item int
	node wire.NodeID
	// read is the request sent to node; asked the newest request number
	// when it was last sent (askAgain).
	read  *wire.Read
	asked uint64
}

func (c *Coordinator) getTx(from wire.NodeID, m *wire.CausalGetTx) {
	reply := &wire.CausalGetTxReply{Req: m.Req, Table: c.layout.Table, Ring: wire.NoRing}
	switch {
	case m.Table != c.layout.Table:
		reply.Code = wire.NoTable
	case len(m.Keys) == 0, m.Ring != wire.NoRing && (m.Ring < 0 || int(m.Ring) >= len(c.layout.Rings)):
		reply.Code = wire.Invalid
	}
	if reply.Code != wire.OK {
		c.env.Send(from, reply)
		return
	}
	t := &pendingTx{client: from, m: m, wbs: make([]*buffered, len(m.Keys)), deadline: c.deadline(m.Deadline), lifted: c.lift(m.Restrictions)}
	for i, k := range m.Keys {
		t.wbs[i] = c.bufferedWrite(sessionID{from, m.Session}, k)
	}
	switch {
	case m.Ring != wire.NoRing && !liftsAll(m.Restrictions, t.lifted):
		t.bound, t.ring = true, int(m.Ring)
	case c.layout.Static:
		t.bound, t.ring = true, c.home
	default:
		t.ring = c.txRing(t.tried, m.Keys)
	}
	c.nextReq++
	id := c.nextReq
	c.txs[id] = t
	c.txRound(id, t)
}

// txRing picks the untried ring whose farthest node for keys is nearest.
func (c *Coordinator) txRing(tried uint64, keys []string) int {
	best, bestCost := -1, time.Duration(0)
	now := c.env.Now()
	if c.opts.RandomRings {
		var untried []int
		for r := range c.layout.Rings {
			if tried&(1<<r) == 0 {
				untried = append(untried, r)
			}
		}
		if len(untried) == 0 {
			return -1
		}
		return untried[c.env.Rand().IntN(len(untried))]
	}
	for r := range c.layout.Rings {
		if tried&(1<<r) != 0 {
			continue
		}
		var cost time.Duration
		for _, k := range keys {
			id := c.layout.Node(r, k)
			rtt := c.near.estimate(id)
			if c.near.suspected(id, now) {
				rtt = time.Hour
			}
			cost = max(cost, rtt)
		}
		if best < 0 || cost < bestCost {
			best, bestCost = r, cost
		}
	}
	return best
}

func (c *Coordinator) txRound(id uint64, t *pendingTx) {
	t.round++
	t.tried |= 1 << t.ring
	t.cur = make([]*wire.ReadReply, len(t.m.Keys))
	t.left = len(t.m.Keys)
	t.sent = c.env.Now()
	t.reqs = t.reqs[:0]
	for i := range t.m.Keys {
		c.txRead(id, t, i)
	}
}

// txRead reads the transaction's i-th key in its round.
func (c *Coordinator) txRead(id uint64, t *pendingTx, i int) {
	c.nextReq++
	req := c.nextReq
	k := t.m.Keys[i]
	to := c.layout.Node(t.ring, k)
	read := &wire.Read{Req: req, Table: c.layout.Table, Key: k, Ring: wire.NoRing, Deadline: c.readDeadline(c.txMoveOn(t), c.opts.ReadTimeout, t.deadline)}
	c.txReads[req] = txRead{tx: id, item: i, node: to, read: read, asked: req}
	t.reqs = append(t.reqs, req)
	c.env.Send(to, read)
	c.ringReads.add(c.env, req)
}

// txMoveOn reports whether the transaction, when its ring is slow,
// starts again on another (as moveOn for a read).
func (c *Coordinator) txMoveOn(t *pendingTx) bool {
	return !t.bound && t.tried != 1<<len(c.layout.Rings)-1
}

func (c *Coordinator) txReply(from wire.NodeID, m *wire.ReadReply, tr txRead) {
	t := c.txs[tr.tx]
	if t == nil || from != tr.node {
		return
	}
	delete(c.txReads, m.Req)
	c.heard(from, m.Req)
	c.near.observe(from, c.env.Now().Sub(t.sent))
	if m.Code != wire.OK {
		c.endTx(tr.tx, t, &wire.CausalGetTxReply{Req: t.m.Req, Table: c.layout.Table, Code: m.Code, Ring: int32(t.ring), Rounds: int32(t.round)})
		return
	}
	t.cur[tr.item] = m
	t.left--
	if t.left > 0 {
		return
	}
	if t.prev != nil && slices.EqualFunc(t.prev, t.cur, func(a, b *wire.ReadReply) bool {
		return a.Found == b.Found && a.Version == b.Version
	}) {
		c.endTx(tr.tx, t, c.txResult(t))
		return
	}
	if t.round >= c.opts.TxRounds {
		c.endTx(tr.tx, t, &wire.CausalGetTxReply{Req: t.m.Req, Table: c.layout.Table, Code: wire.Aborted, Ring: int32(t.ring), Rounds: int32(t.round)})
		return
	}
	t.prev = t.cur
	c.txRound(tr.tx, t)
}

// txResult assembles the snapshot, the session's own newer buffered
// writes taking the place of what the ring returned (as for a Get).
func (c *Coordinator) txResult(t *pendingTx) *wire.CausalGetTxReply {
	reply := &wire.CausalGetTxReply{Req: t.m.Req, Table: c.layout.Table, Ring: int32(t.ring), Rounds: int32(t.round), Items: make([]wire.TxItem, len(t.cur))}
	for i, r := range t.cur {
		if wb := t.wbs[i]; wb != nil && r.Version.Less(wb.version) {
			reply.Items[i] = wire.TxItem{Key: t.m.Keys[i], Found: true, Value: wb.value, Version: wb.version, Source: wire.FromBuffer, InFlight: true}
			continue
		}
		reply.Items[i] = wire.TxItem{Key: t.m.Keys[i], Found: r.Found, Value: r.Value, Version: r.Version, Source: wire.FromRing, InFlight: r.InFlight}
	}
	return reply
}

func (c *Coordinator) endTx(id uint64, t *pendingTx, reply *wire.CausalGetTxReply) {
	for _, req := range t.reqs {
		delete(c.txReads, req)
	}
	delete(c.txs, id)
	reply.Lifted = t.lifted
	reply.Rebound = t.rebound && reply.Code == wire.OK
	c.env.Send(t.client, reply)
}

// txTimeout: a node of the transaction's ring did not answer. An unbound
// transaction starts again on another ring (Karma 4.5: a retry may switch
// ring); a bound one, or one that tried every ring, waits for its ring
// until its deadline, as a read does (readTimeout). A bound one whose
// restrictions became stable while it waited is unbound, as a read is
// released: without that, a transaction bound to a ring with a failed
// storage node failed at its deadline although its restriction had
// lifted (Karma 4.4, Claim 1; TestCausalFaults, seed 15).
func (c *Coordinator) txTimeout(req uint64, tr txRead) {
	t := c.txs[tr.tx]
	if t == nil {
		delete(c.txReads, req)
		return
	}
	c.near.timedOut(tr.node, c.env.Now())
	if c.txReleased(t) {
		t.bound = false
	}
	next := -1
	if c.txMoveOn(t) {
		next = c.txRing(t.tried, t.m.Keys)
	}
	if next < 0 && t.bound && c.silent(tr.node) {
		// Bound to a ring that does not answer: another that holds its
		// restrictions will do (rebind.go).
		if next = c.rebindRing(t.m.Restrictions, t.ring); next >= 0 {
			t.rebound = true
		}
	}
	if next < 0 {
		switch {
		case c.expiring(t.deadline):
			c.env.After(c.lastChance(t.deadline), txLastChance{tr.tx})
		case c.askAgain(tr.node, tr.asked):
			tr.asked = c.nextReq
			c.txReads[req] = tr
			c.env.Send(tr.node, again(tr.read, t.deadline))
			fallthrough
		default:
			c.ringReads.add(c.env, req)
		}
		return
	}
	for _, r := range t.reqs {
		delete(c.txReads, r)
	}
	t.ring, t.prev = next, nil
	c.txRound(tr.tx, t)
}

// txReleased reports whether t waits for its ring only because of
// restrictions that the coordinator now knows stable, and records them
// lifted (released, for a transaction).
func (c *Coordinator) txReleased(t *pendingTx) bool {
	if !t.bound || t.m.Ring == wire.NoRing || c.layout.Static {
		return false
	}
	lifted := c.lift(t.m.Restrictions)
	if !liftsAll(t.m.Restrictions, lifted) {
		return false
	}
	t.lifted = lifted
	return true
}
