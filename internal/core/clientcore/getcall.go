package clientcore

import (
	"fmt"
	"slices"
	"time"

	"github.com/cosla/cosla/internal/core/invariants"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/keyfmt"
	"github.com/cosla/cosla/sla"
)

// A Get of one replica in flight (Pileus 4.6): its request, and beyond the
// paper the second request of a hedged Get (GetOptions.HedgeCost) and the
// requests it falls back to after a miss (GetOptions.RetryAfterMiss). All
// its requests share one deadline, the first request's; the best reply
// wins.

// getCall is a Get in flight: what it asks for and what it has so far.
type getCall struct {
	c         *Client
	s         *Session
	key       string
	agreement sla.SLA
	mins      []minTS // c.mins is scratch space; this is the Get's own copy
	// minsSpace holds mins for an SLA of up to its length in subSLAs
	// (Pileus's examples have at most four), askedSpace asked for a Get
	// that asks at most two replicas, and first the Get's first request:
	// they come with the getCall instead of an allocation each.
	minsSpace  [4]minTS
	askedSpace [2]*replicaState
	first      getSend
	tv         *tabletView
	retry      bool   // fall back after a miss (GetOptions.RetryAfterMiss)
	tuner      *tuner // the tuner that drew the Get's level, told its latency
	start      time.Time
	res        GetResult
	done       func(GetResult, error)
	// asked are the replicas the Get went to, in order. deadline is when
	// its first request times out, and every later one with it, so that
	// falling back never makes a Get wait longer; unmetErr is the error
	// then.
	asked    []*replicaState
	deadline time.Time
	unmetErr error
	// outstanding counts the requests not yet answered or timed out;
	// finished is set once done has been called.
	outstanding int
	finished    bool
	// held is the best reply so far while a request still out might meet
	// a higher subSLA; it is used when that request fails, or when the
	// held subSLA's latency is about to run out.
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

// holdTimer fires when a held reply is to be handed over: its subSLA's
// latency is about to run out, or no higher subSLA can be met any more. A
// timer set for a reply that a better one has replaced is ignored.
type holdTimer struct {
	g    *getCall
	held *heldReply
}

// String names the timer by the Get's key and start, not the pointer, so
// that a simulator's trace of it is the same in every run.
func (t holdTimer) String() string {
	return fmt.Sprintf("{%q %s}", t.g.key, t.g.start.Format(time.RFC3339Nano))
}

// waitTimer fires when a Get that may fall back has waited for a request
// as long as that request's target subSLA allows. It holds one pointer,
// so that setting it allocates nothing.
type waitTimer struct{ gs *getSend }

// String: see holdTimer.String.
func (t waitTimer) String() string {
	g := t.gs.g
	return fmt.Sprintf("{%q %s %d}", g.key, g.start.Format(time.RFC3339Nano), t.gs.n)
}

// getSend is one request of a Get: its message, its entry among the
// client's pending requests, and what its reply or timeout is judged by.
// A Get's first is part of its getCall; a hedge or a fallback allocates
// its own. The message is never written to once sent.
type getSend struct {
	p       pending
	m       wire.GetRequest
	g       *getCall
	r       *replicaState
	n       int // the request's place among the Get's, from 1
	sent    time.Time
	timeout time.Duration
}

// finish reports the Get's outcome, once, and counts it (noteGet).
func (g *getCall) finish(err error) {
	if !g.finished {
		g.finished = true
		if g.tuner != nil {
			g.tuner.readDone(g.res)
		}
		res := g.res
		g.c.noteGet(g.agreement, g.tv, &res, err)
		g.done(res, err)
	}
}

// getFrom sends the Get to replica r, aiming at subSLA target (-1 for the
// fixed strategies and hedges). Its round trip counts from the Get's
// start, so that a fallback's reply is judged by the whole time the
// caller waited.
func (c *Client) getFrom(g *getCall, r *replicaState, target int) {
	now := c.env.Now()
	if len(g.asked) == 0 {
		timeout, unmetErr := g.agreement.MaxLatency()-now.Sub(g.start), ErrSLAUnmet
		if timeout > c.opts.RequestTimeout {
			timeout, unmetErr = c.opts.RequestTimeout, ErrTimeout
		}
		g.deadline, g.unmetErr = now.Add(timeout), unmetErr
	}
	if g.outstanding == 0 {
		g.res.Node, g.res.Primary = r.id, r.primary
	}
	gs := &g.first
	if len(g.asked) > 0 {
		gs = &getSend{}
	}
	g.asked = append(g.asked, r)
	g.outstanding++
	*gs = getSend{g: g, r: r, n: len(g.asked), sent: now, timeout: g.deadline.Sub(now)}
	gs.p.get = gs
	req := c.newReq()
	gs.m = wire.GetRequest{Req: req, Tablet: g.tv.ref, Key: g.key}
	c.send(r.id, &gs.m, req, gs.timeout, &gs.p)
	if g.retry && target >= 0 {
		// The wait on a target ends at its subSLA's latency, counted
		// from the Get's start; an unbounded one's at the probe
		// timeout, after which the monitor takes a silent node for
		// unreachable (4.5).
		wait := g.agreement[target].Latency - now.Sub(g.start)
		if g.agreement[target].Latency == sla.Unbounded {
			wait = c.opts.ProbeTimeout
		}
		if wait > 0 {
			c.env.After(wait, waitTimer{gs})
		}
	}
}

// waited handles a waitTimer: the Get's latest request has not been
// answered within its target's latency, a miss.
func (c *Client) waited(t waitTimer) {
	if g := t.gs.g; !g.finished && len(g.asked) == t.gs.n {
		c.fallBack(g)
	}
}

// gotReply handles the reply to gs.
func (c *Client) gotReply(gs *getSend, reply *wire.GetReply) {
	g, r, sent := gs.g, gs.r, gs.sent
	g.outstanding--
	c.mon.observe(r, sent, c.env.Now())
	if reply.Code == wire.OK {
		c.observeRead(g.tv, r, reply.HighTS, reply.Primary)
	}
	if g.finished {
		return // another request of the Get answered first
	}
	rtt := c.env.Now().Sub(g.start)
	met := -1
	if reply.Code == wire.OK {
		met = metSubSLA(g.agreement, g.mins, int64(rtt), reply.HighTS, reply.Primary)
	}
	better := met >= 0 && (g.held == nil || met < g.held.met)
	switch {
	case better && g.outstanding > 0 && g.higherStillPossible(met, rtt):
		// A request still out may do better: keep this reply and wait.
		c.holdReply(g, &heldReply{r: r, reply: reply, met: met}, rtt)
	case better:
		g.answer(r, reply, met, rtt)
	default:
		c.missed(g, r, reply, rtt)
	}
}

// missed handles a reply that met no subSLA, or none better than the one
// held: the Get falls back if it may, else waits for its other requests,
// else ends with what it has.
func (c *Client) missed(g *getCall, r *replicaState, reply *wire.GetReply, rtt time.Duration) {
	if c.fallBack(g) || g.outstanding > 0 {
		return
	}
	if g.held != nil {
		c.finishHeld(g)
		return
	}
	res := &g.res
	res.Node, res.Primary, res.RTT = r.id, r.primary, rtt
	if reply.Code != wire.OK {
		g.finish(fmt.Errorf("get %s from %s: %w", keyfmt.Quote(g.key), r.id, codeError(reply.Code)))
		return
	}
	res.HighTS, res.VersionTS, res.Primary = reply.HighTS, reply.VersionTS, reply.Primary
	g.finish(fmt.Errorf("%w: get %s from %s took %s with high timestamp %s", ErrSLAUnmet, keyfmt.Quote(g.key), r.id, rtt, reply.HighTS))
}

// getTimedOut handles gs, which had no reply within its timeout.
func (c *Client) getTimedOut(gs *getSend) {
	g, r, sent, timeout := gs.g, gs.r, gs.sent, gs.timeout
	g.outstanding--
	// The replica was at least this slow, and is down until it answers
	// again: a node that stops answering loses its appeal (4.5).
	c.mon.silence(r, sent, c.env.Now())
	if g.finished || g.outstanding > 0 {
		return
	}
	if g.held != nil {
		c.finishHeld(g)
		return
	}
	res := &g.res
	res.Node, res.Primary = r.id, r.primary
	res.RTT = c.env.Now().Sub(g.start)
	res.TimedOut = true
	g.finish(fmt.Errorf("%w: get %s: no reply from %s within %s", g.unmetErr, keyfmt.Quote(g.key), r.id, timeout))
}

// holdReply keeps h as the Get's best reply, which came after rtt, until
// it is handed over: holdMargin before its subSLA's latency runs out, or
// once no higher subSLA can be met any more, whichever is first; with
// neither bounded, when the other requests answer or time out.
func (c *Client) holdReply(g *getCall, h *heldReply, rtt time.Duration) {
	g.held = h
	var release time.Duration // when the last higher subSLA runs out
	for i := range h.met {
		release = max(release, g.agreement[i].Latency)
	}
	if latency := g.agreement[h.met].Latency; latency != sla.Unbounded {
		release = min(release, latency-holdMargin)
	}
	if release != sla.Unbounded {
		c.env.After(max(0, release-rtt), holdTimer{g: g, held: h})
	}
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

// finishHeld ends the Get with its held reply, judged at the time it is
// handed to the caller.
func (c *Client) finishHeld(g *getCall) {
	if g.finished || g.held == nil {
		return
	}
	h := g.held
	rtt := c.env.Now().Sub(g.start)
	met := metSubSLA(g.agreement, g.mins, int64(rtt), h.reply.HighTS, h.reply.Primary)
	if met < 0 {
		res := &g.res
		res.RTT, res.Node, res.Primary = rtt, h.r.id, h.reply.Primary
		res.HighTS, res.VersionTS = h.reply.HighTS, h.reply.VersionTS
		g.finish(fmt.Errorf("%w: get %s: the reply from %s came in time for no subSLA", ErrSLAUnmet, keyfmt.Quote(g.key), h.r.id))
		return
	}
	g.answer(h.r, h.reply, met, rtt)
}

// answer ends the Get with r's reply, which met subSLA met after rtt.
func (g *getCall) answer(r *replicaState, reply *wire.GetReply, met int, rtt time.Duration) {
	res := &g.res
	res.Node, res.RTT, res.Met = r.id, rtt, met
	res.HighTS, res.VersionTS, res.Primary = reply.HighTS, reply.VersionTS, reply.Primary
	res.SubSLA = g.agreement[met]
	if invariants.Enabled {
		m := g.mins[met]
		invariants.Check(rtt <= res.SubSLA.Latency && (reply.Primary || (!m.primaryOnly && !reply.HighTS.Less(m.ts))),
			"subSLA %d (%s) reported met by %s with rtt %s, high %s, minimum %s", met+1, res.SubSLA, r.id, rtt, reply.HighTS, m.ts)
	}
	res.Value, res.Found = reply.Value, reply.Found
	g.s.recordRead(g.key, reply.VersionTS)
	g.finish(nil)
}

// fallBack is retry-after-miss (GetOptions.RetryAfterMiss): after a miss,
// it sends the Get to the next best node, if the Get may fall back and
// one is expected to deliver something in the time left. It reports
// whether it did.
func (c *Client) fallBack(g *getCall) bool {
	if !g.retry || !g.deadline.After(c.env.Now()) {
		return false
	}
	next, target := c.retryTarget(g)
	if next == nil {
		return false
	}
	g.res.Retries++
	c.getFrom(g, next, target)
	return true
}

// retryTarget is retry-after-miss, beyond the paper (its 5.4 describes the
// case between #3 and #4, where a reply misses every subSLA but another
// node could still have met a lower one): among the nodes the Get has not
// asked, the one with the highest expected utility for a subSLA whose
// latency has not yet run out, judged on the time that is left, and that
// subSLA; only subSLAs above a held reply's count. It returns nil when no
// node is expected to deliver anything.
func (c *Client) retryTarget(g *getCall) (*replicaState, int) {
	elapsed := c.env.Now().Sub(g.start)
	limit := len(g.agreement)
	if g.held != nil {
		limit = g.held.met
	}
	var best *replicaState
	target, bestUtility := -1, 0.0
	for i := range limit {
		sub := &g.agreement[i]
		left := sub.Latency - elapsed
		if left <= 0 {
			continue
		}
		for _, r := range g.tv.replicas {
			if slices.Contains(g.asked, r) {
				continue
			}
			if u := pNodeCons(r, g.mins[i]) * r.rtt.pWithin(left) * sub.Utility; u > bestUtility {
				best, target, bestUtility = r, i, u
			}
		}
	}
	return best, target
}
