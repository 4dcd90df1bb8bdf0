package causal

import (
	"time"

	"github.com/cosla/cosla/internal/core/wire"
)

// This file moves a session bound to a ring that does not answer to
// another ring that holds every version restricting it (Karma 4.4,
// Claims 1 and 2).
//
// A restriction binds a session to the ring it read an in-flight version
// from, because that ring holds the version's causal past (I2: a ring
// processes a version only once its dependencies hold there). Any ring
// that has processed every restricting version holds all their causal
// pasts as well, so the session may as well be bound to it. Observation
// 2 of section 4.4 counts on the restricting writes completing, which
// lifts the restriction; but a write completes only when its coordinator
// hears every ring acknowledge it, and under a fault that cuts the bound
// ring's node from the coordinator (that node's AZ-B failed after it
// processed the write, or an intra-ring partition lies between them) it
// does not until the heal, though the other rings hold it: the session's
// reads of the keys on that node failed until then (TestCausalFaults,
// seeds 3 and 29, with the ring-tagged cache).
//
// So a read (or get-transaction) bound to a ring whose node has answered
// no read for ReadTimeout goes to another ring once the coordinator
// knows that ring holds every restriction: its own writes from their
// acknowledgments, other coordinators' by asking the key's MM in that
// ring with a DepCheck, which it answers once it has processed the
// version. Its reply says Rebound, and the session's restrictions move to
// that ring.

// rebind moves p, bound to a ring whose node has answered no read for
// ReadTimeout (silent), to another ring that holds every one of its
// restrictions, and reports whether it did. A node that answers other
// reads is only slow: the session stays in its ring, which is near, as
// Karma binds it (4.2).
func (c *Coordinator) rebind(req uint64, p *pendingRead) bool {
	if !p.bound || p.ring == wire.NoRing || p.get.Ring == wire.NoRing || !c.silent(p.node) {
		return false
	}
	r := c.rebindRing(p.get.Restrictions, int(p.ring))
	if r < 0 {
		return false
	}
	delete(c.reads, req)
	delete(c.boundWaiting, req)
	p.rebound = true
	c.readRing(p, r)
	return true
}

// answerMargin is how long before a client's deadline a last chance
// fails its read. The reply crosses the site, from the coordinator to
// its client, well within it, but first the timer waits for the batch of
// events its core is running and the reply for that batch's sync (a real
// process sends a batch's messages behind its sync).
const answerMargin = 250 * time.Millisecond

// lastChance is how long from now a read that has not been answered in
// time waits before it fails (expiring): until answerMargin before its
// deadline (WallNanos). It may yet be answered, or move to another ring
// (a rebind needs another ring's answer, a WAN round trip away).
func (c *Coordinator) lastChance(deadline int64) time.Duration {
	return max(time.Duration(deadline-c.env.WallNanos())-answerMargin, 0)
}

// heldCap bounds the questions a coordinator keeps open; the (version,
// ring) pairs it remembers as held are bounded as learntSet's.
const heldCap = 1 << 16

// heldIn is one version in one ring.
type heldIn struct {
	version wire.Version
	ring    int
}

// holdings is what a coordinator knows of the rings that hold other
// coordinators' versions.
type holdings struct {
	held learntSet[heldIn]
	// asks are the open questions by request number; asked the time each
	// pair was asked.
	asks  map[uint64]heldIn
	asked map[heldIn]time.Time
}

func newHoldings() *holdings {
	return &holdings{held: newLearntSet[heldIn](), asks: map[uint64]heldIn{}, asked: map[heldIn]time.Time{}}
}

// holds reports whether the coordinator knows ring r holds v: stable, or
// its own write acknowledged by r, or another's r's MM said it processed.
func (c *Coordinator) holds(r int, v wire.Version) bool {
	if v.Origin == c.env.ID() {
		e := c.incomplete[v]
		return e == nil || e.acked&(1<<r) != 0
	}
	if c.stability.has(v) {
		return true
	}
	return c.holdings.held.has(heldIn{v, r})
}

// rebindRing returns a ring other than bound that holds every one of
// restrictions, or -1; for the pairs it does not know, it asks the rings'
// MMs, and releaseWaiting tries again when they answer.
func (c *Coordinator) rebindRing(restrictions []wire.Dep, bound int) int {
	if len(restrictions) == 0 || c.layout.Static {
		return -1
	}
	found := -1
	for r := range c.layout.Rings {
		if r == bound {
			continue
		}
		all := true
		for _, d := range restrictions {
			if !c.holds(r, d.Version) {
				all = false
				c.askHeld(r, d)
			}
		}
		if all && found < 0 {
			found = r
		}
	}
	return found
}

// askHeld asks the MM of d's key in ring r to say once it has processed
// d's version, unless that was asked less than watchFor ago.
func (c *Coordinator) askHeld(r int, d wire.Dep) {
	h := c.holdings
	p := heldIn{d.Version, r}
	now := c.env.Now()
	if at, ok := h.asked[p]; ok && now.Sub(at) < watchFor {
		return
	}
	if d.Version.Origin == c.env.ID() {
		return // its acknowledgment will come
	}
	if len(h.asks) >= heldCap {
		for req, q := range h.asks {
			if now.Sub(h.asked[q]) >= watchFor {
				delete(h.asks, req)
				delete(h.asked, q)
			}
		}
	}
	c.nextReq++
	h.asks[c.nextReq] = p
	h.asked[p] = now
	c.env.Send(c.layout.Node(r, d.Key), &wire.DepCheck{Req: c.nextReq, Table: c.layout.Table, Key: d.Key, Version: d.Version})
}

// heldReply takes an MM's answer to askHeld, and reports whether m was
// one.
func (c *Coordinator) heldReply(m *wire.DepCheckReply) bool {
	h := c.holdings
	p, ok := h.asks[m.Req]
	if !ok {
		return false
	}
	delete(h.asks, m.Req)
	delete(h.asked, p)
	if m.Done {
		h.held.learn(p)
		c.releaseWaiting()
	}
	return true
}
