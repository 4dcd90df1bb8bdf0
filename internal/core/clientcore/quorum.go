package clientcore

import (
	"fmt"
	"strings"
	"time"

	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/keyfmt"
	"github.com/cosla/cosla/sla"
)

// Reads of several replicas (CPQ's partial quorums; DESIGN.md section 4)
// and their write-back.
//
// Which pairs of read level r and write level w, of N replicas, are
// linearizable per key. Every replica holds a prefix of its primary's
// order (replica.go), so a replica whose high timestamp reaches T holds
// the key's version of T or a newer one, for good. A Put returns once w
// replicas hold it; a Get returns the newest version among r replies.
//
//   - r + w > N, r a majority (2r > N), with write-back (RepairOn, or
//     RepairAuto): linearizable (atomic). Order the Puts by timestamp,
//     the primary's order, and put each Get at the Put of the version it
//     returns. A Get sees every Put that returned before it began: the w
//     holders and its r targets overlap. A Get returns only once a
//     majority holds its version T (its replies at T or above, and the
//     stale ones that caught up to T when asked: write-back), so a Get
//     that begins after it returned meets one of them among its r and
//     returns T or newer: no new-old inversion. A Put that begins after
//     a Get returned T is ordered after T, which the primary had ordered
//     before any replica could hold it. When the replies agree, r alone
//     is a majority of holders and nothing is written back. (A replica
//     that loses its storage and catches up by a snapshot no longer
//     holds what it held: that breaks this argument as it breaks every
//     quorum's.)
//   - r + w > N without write-back, or with r not a majority: regular.
//     Each Get returns the last Put that returned before it began, or
//     one that overlaps it, but two Gets after one Put still in flight
//     can see it and then not see it (a new-old inversion): the first
//     asked a replica the Put had reached, the second only others. With
//     r not a majority, write-back cannot help: agreeing replies prove
//     no majority, and every Get would have to write.
//   - r + w <= N: neither. A Get may miss a Put that returned before it
//     began (the r and the w need not overlap): eventual consistency.
//
// So reads of one replica are regular at best (w = N), never atomic: a
// Get may see a Put that has reached its replica while still in flight,
// and a later Get another replica that it has not reached yet. Gets that
// all read the primary, which orders and holds every version, are
// linearizable whatever the write level.

// quorumCall is a Get of several replicas in flight (CPQ's partial quorum
// read): it asks len(targets) replicas, waits for all of them, and
// returns the newest version any holds, once a majority holds it if it
// writes back.
type quorumCall struct {
	s         *Session
	key       string
	agreement sla.SLA
	mins      []minTS
	tv        *tabletView
	targets   []*replicaState
	start     time.Time
	startWall int64 // the client's clock at start, in Unix nanoseconds
	repair    ReadRepair
	// tuner drew this read's level (nil if none); sampleOne: targets[0]
	// is the replica a ONE read would have used (the nearest, or one at
	// random), so the read samples its staleness for the tuner.
	tuner     *tuner
	sampleOne bool
	res       GetResult
	done      func(GetResult, error)
	// deadline ends the Get, its write-back included: its SLA's largest
	// latency, or the client's RequestTimeout; unmetErr is the error of
	// a Get that runs into it.
	deadline time.Time
	unmetErr error
	// replies holds each target's answer, by target index; answered
	// counts them. finished is set once done has been called.
	replies  []*wire.GetReply
	answered int
	finished bool
	// newest indexes the reply whose version the Get returns; waiting
	// counts the write-back's repairs not answered yet, refused those
	// answered otherwise than OK, and timedOut those that ran into the
	// deadline.
	newest                     int
	waiting, refused, timedOut int
}

// quorumStrong reports whether a read of r replicas of the tablet sees
// every Put the table's write level made complete: r + w > N.
func (tv *tabletView) quorumStrong(r int) bool {
	return r+tv.writeCount > len(tv.replicas)
}

// majority is the least number of replicas, of n, that any two such
// sets have one in common.
func majority(n int) int { return n/2 + 1 }

// writesBack reports whether the Get must answer only once a majority
// holds its version (see the comment at the top of this file).
func (q *quorumCall) writesBack() bool {
	return q.repair != RepairOff && len(q.targets) >= majority(len(q.tv.replicas))
}

// pickTargets returns the r replicas a Get of read level r asks, by
// strategy: the nearest by the monitor for Pileus and Closest, the primary
// and the nearest others for Primary, r at random for Random.
func (c *Client) pickTargets(tv *tabletView, r int, strategy Strategy) []*replicaState {
	idx := make([]int, 0, r)
	switch strategy {
	case Primary:
		idx = nearest(append(idx, 0), tv.replicas, r-1, 1)
	case Random:
		for _, j := range c.env.Rand().Perm(len(tv.replicas))[:r] {
			idx = append(idx, j)
		}
	default:
		idx = nearest(idx, tv.replicas, r, 0)
	}
	targets := make([]*replicaState, len(idx))
	for i, j := range idx {
		targets[i] = tv.replicas[j]
	}
	return targets
}

// getQuorum sends the Get to every target.
func (c *Client) getQuorum(q *quorumCall) {
	timeout, unmetErr := q.agreement.MaxLatency()-c.env.Now().Sub(q.start), ErrSLAUnmet
	if timeout > c.opts.RequestTimeout {
		timeout, unmetErr = c.opts.RequestTimeout, ErrTimeout
	}
	q.deadline, q.unmetErr = c.env.Now().Add(timeout), unmetErr
	q.replies = make([]*wire.GetReply, len(q.targets))
	for i, r := range q.targets {
		sent := c.env.Now()
		req := c.newReq()
		c.send(r.id, &wire.GetRequest{Req: req, Tablet: q.tv.ref, Key: q.key}, req, timeout, &pending{
			onReply: func(_ wire.NodeID, m wire.Msg) {
				reply := m.(*wire.GetReply)
				c.mon.observe(r, sent, c.env.Now())
				if reply.Code == wire.OK {
					c.observeRead(q.tv, r, reply.HighTS, reply.Primary)
				}
				if q.finished {
					return
				}
				if reply.Code != wire.OK {
					q.fail(c, r, fmt.Errorf("get %s from %s: %w", keyfmt.Quote(q.key), r.id, codeError(reply.Code)))
					return
				}
				q.replies[i] = reply
				q.res.Replies = append(q.res.Replies, ReplicaRead{Node: r.id, Primary: reply.Primary, Found: reply.Found,
					VersionTS: reply.VersionTS, HighTS: reply.HighTS, RTT: c.env.Now().Sub(q.start)})
				if q.answered++; q.answered == len(q.targets) {
					c.quorumAnswered(q)
				}
			},
			onTimeout: func() {
				c.mon.observe(r, sent, c.env.Now())
				if q.finished {
					return
				}
				q.res.TimedOut = true
				q.fail(c, r, fmt.Errorf("%w: get %s: no reply from %s within %s (%d of %d replicas answered)",
					unmetErr, keyfmt.Quote(q.key), r.id, timeout, q.answered, len(q.targets)))
			},
		})
	}
}

// fail ends the Get when one of its replicas cannot answer: a read of r
// replicas needs all r.
func (q *quorumCall) fail(c *Client, r *replicaState, err error) {
	q.res.Node, q.res.Primary = r.id, r.primary
	q.end(c, err)
}

// end calls done with the Get's result and err.
func (q *quorumCall) end(c *Client, err error) {
	q.finished = true
	q.res.RTT = c.env.Now().Sub(q.start)
	if q.tuner != nil {
		q.tuner.readDone(q.res)
	}
	q.done(q.res, err)
}

// newestReply returns the index of the reply with the newest version: a
// version beats none, and of equal versions the primary's wins, so that
// the replica named as the source says truly whether it is the primary.
func newestReply(replies []*wire.GetReply) int {
	best := 0
	for i, reply := range replies {
		b := replies[best]
		switch {
		case !reply.Found:
		case !b.Found, b.VersionTS.Less(reply.VersionTS):
			best = i
		case b.VersionTS == reply.VersionTS && reply.Primary && !b.Primary:
			best = i
		}
	}
	return best
}

// quorumAnswered goes on once every target has answered: it picks the
// newest version and counts the replicas that hold it, those whose
// high timestamp reaches it. When the Get writes back and they are not a
// majority, it asks the others to catch up first; a Get that repairs
// without writing back asks them and answers at once.
func (c *Client) quorumAnswered(q *quorumCall) {
	q.newest = newestReply(q.replies)
	newest := q.replies[q.newest]
	q.res.Node, q.res.Primary = q.targets[q.newest].id, newest.Primary
	var stale []*replicaState
	for i, reply := range q.replies {
		if reply.HighTS.Less(newest.VersionTS) {
			stale = append(stale, q.targets[i])
		} else {
			q.res.Held++
		}
	}
	switch {
	case q.writesBack() && q.res.Held < majority(len(q.tv.replicas)):
		c.writeBack(q, stale)
		return
	case q.repair == RepairOn && !q.writesBack():
		for _, r := range stale {
			c.env.Send(r.id, &wire.Repair{Req: c.newReq(), Tablet: q.tv.ref, TS: newest.VersionTS})
			q.res.Repaired++
		}
	}
	c.finishQuorum(q)
}

// writeBack asks the stale targets to catch up to the newest version
// (wire.Repair) and answers once enough have that a majority holds it,
// or fails once that can no longer happen by the Get's deadline.
func (c *Client) writeBack(q *quorumCall, stale []*replicaState) {
	ts := q.replies[q.newest].VersionTS
	timeout := q.deadline.Sub(c.env.Now())
	q.waiting = len(stale)
	for _, r := range stale {
		req := c.newReq()
		q.res.Repaired++
		c.send(r.id, &wire.Repair{Req: req, Tablet: q.tv.ref, TS: ts}, req, timeout, &pending{
			onReply: func(_ wire.NodeID, m wire.Msg) {
				reply := m.(*wire.RepairReply)
				q.waiting--
				if reply.Code == wire.OK {
					c.observeHigh(q.tv, r, reply.High)
					q.res.Held++
				} else {
					q.refused++
				}
				c.writeBackStep(q)
			},
			onTimeout: func() {
				q.waiting--
				q.timedOut++
				c.writeBackStep(q)
			},
		})
	}
}

// writeBackStep answers the Get once a majority holds its version, and
// fails it once the repairs still out cannot make one.
func (c *Client) writeBackStep(q *quorumCall) {
	need := majority(len(q.tv.replicas))
	switch {
	case q.finished:
	case q.res.Held >= need:
		c.finishQuorum(q)
	case q.res.Held+q.waiting < need:
		var why []string
		if q.refused > 0 {
			why = append(why, fmt.Sprintf("%d of the stale replicas could not catch up (behind the primary, or overloaded)", q.refused))
		}
		cause := ErrWriteBack
		if q.timedOut > 0 {
			why = append(why, fmt.Sprintf("%d did not answer within %s of the start", q.timedOut, q.deadline.Sub(q.start)))
			cause = fmt.Errorf("%w: %w", ErrWriteBack, q.unmetErr)
		}
		q.end(c, fmt.Errorf("%w: get %s: version %s is held by %d of the %d replicas a majority needs: %s",
			cause, keyfmt.Quote(q.key), q.replies[q.newest].VersionTS, q.res.Held, need, strings.Join(why, "; ")))
	}
}

// finishQuorum judges the Get and answers it: the subSLA met is decided
// on its whole round trip, write-back included, and the largest high
// timestamp among the replies; a strong subSLA is met when the primary
// answered, or when r + w > N and the version is no older than what the
// session wrote or read of the key (so that the session never goes back
// on it).
func (c *Client) finishQuorum(q *quorumCall) {
	res := &q.res
	newest := q.replies[q.newest]
	var high hlc.Timestamp
	primary := false
	for _, reply := range q.replies {
		high = hlc.Max(high, reply.HighTS)
		primary = primary || reply.Primary
	}
	res.HighTS, res.VersionTS = high, newest.VersionTS
	res.RTT = c.env.Now().Sub(q.start)
	if q.sampleOne {
		q.tuner.sample(q)
	}
	strong := primary
	if !strong && q.tv.quorumStrong(len(q.targets)) {
		floor := hlc.Max(q.s.putTS[q.key], q.s.readTS[q.key])
		strong = !newest.VersionTS.Less(floor)
		res.Quorum = strong
	}
	res.Met = metSubSLA(q.agreement, q.mins, int64(res.RTT), high, primary)
	if strong && !primary {
		res.Met = metByQuorum(q.agreement, q.mins, int64(res.RTT), res.Met)
	}
	if res.Met < 0 {
		q.end(c, fmt.Errorf("%w: get %s from %d replicas took %s with high timestamp %s", ErrSLAUnmet, keyfmt.Quote(q.key), len(q.targets), res.RTT, high))
		return
	}
	res.SubSLA = q.agreement[res.Met]
	res.Value, res.Found = newest.Value, newest.Found
	q.s.recordRead(q.key, newest.VersionTS)
	q.end(c, nil)
}

// metByQuorum returns the subSLA a quorum read met, given met, the one
// its high timestamp met (-1 for none): a strong one ranked above met,
// within the round trip rtt, if there is one. A quorum's intersection
// with the key's write level shows the key's latest acknowledged write,
// not every version of the session's past, as a primary's answer would:
// it meets a strong subSLA and no other (TestRandomized seed 1388 met a
// causal one so, reading a version older than one its session had read
// of an unacknowledged Put).
func metByQuorum(agreement sla.SLA, mins []minTS, rtt int64, met int) int {
	for i := range agreement {
		if met >= 0 && i >= met {
			break
		}
		if mins[i].primaryOnly && rtt <= int64(agreement[i].Latency) {
			return i
		}
	}
	return met
}

// delayTimer fires when a delayed Get (AD) is to be sent.
type delayTimer struct {
	key   string
	start time.Time
	send  func()
}

// String names the timer by the Get's key and start, not the function,
// so that a simulator's trace of it is the same in every run.
func (t delayTimer) String() string {
	return fmt.Sprintf("delay{%q %s}", t.key, t.start.Format(time.RFC3339Nano))
}
