package clientcore

import (
	"fmt"
	"time"

	"github.com/cosla/cosla/internal/hlc"
	"github.com/cosla/cosla/internal/keyfmt"
	"github.com/cosla/cosla/internal/wire"
	"github.com/cosla/cosla/sla"
)

// quorumCall is a Get of several replicas in flight (CPQ's partial quorum
// read): it asks len(targets) replicas, waits for all of them, and returns
// the newest version any holds.
type quorumCall struct {
	s         *Session
	key       string
	agreement sla.SLA
	mins      []minTS
	tv        *tabletView
	targets   []*replicaState
	start     time.Time
	startWall int64 // the client's clock at start, in Unix nanoseconds
	repair    bool
	// tuner drew this read's level (nil if none); sampleOne: targets[0]
	// is the replica a ONE read would have used (the nearest, or one at
	// random), so the read samples its staleness for the tuner.
	tuner     *tuner
	sampleOne bool
	res       GetResult
	done      func(GetResult, error)
	// replies holds each target's answer, by target index; answered
	// counts them. finished is set once done has been called.
	replies  []*wire.GetReply
	answered int
	finished bool
}

// quorumStrong reports whether a read of r replicas of the tablet sees
// every Put the table's write level made complete: r + w > N.
func (tv *tabletView) quorumStrong(r int) bool {
	return r+tv.writeCount > len(tv.replicas)
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
	q.replies = make([]*wire.GetReply, len(q.targets))
	for i, r := range q.targets {
		sent := c.env.Now()
		req := c.newReq()
		c.send(r.id, &wire.GetRequest{Req: req, Tablet: q.tv.ref, Key: q.key}, req, timeout, &pending{
			onReply: func(_ wire.NodeID, m wire.Msg) {
				reply := m.(*wire.GetReply)
				c.observeRTT(r, sent)
				if reply.Code == wire.OK {
					c.observeHigh(q.tv, r, reply.HighTS)
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
					c.finishQuorum(q)
				}
			},
			onTimeout: func() {
				c.observeRTT(r, sent)
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
	q.finished = true
	q.res.Node, q.res.Primary = r.id, r.primary
	q.res.RTT = c.env.Now().Sub(q.start)
	if q.tuner != nil {
		q.tuner.readDone(q.res)
	}
	q.done(q.res, err)
}

// finishQuorum judges the Get once every replica has answered: the newest
// version wins; the subSLA met is decided on the largest high timestamp
// among the replies, and a strong subSLA is also met when r + w > N and
// the version is no older than what the session wrote or read of the key
// (so that the session never goes back on it).
func (c *Client) finishQuorum(q *quorumCall) {
	q.finished = true
	res := &q.res
	res.RTT = c.env.Now().Sub(q.start)
	var newest *wire.GetReply
	var high hlc.Timestamp
	primary := false
	for i, reply := range q.replies {
		if newest == nil || (reply.Found && (!newest.Found || newest.VersionTS.Less(reply.VersionTS))) {
			newest = reply
			res.Node = q.targets[i].id
		}
		high = hlc.Max(high, reply.HighTS)
		primary = primary || reply.Primary
	}
	res.Primary, res.HighTS, res.VersionTS = primary, high, newest.VersionTS
	if q.tuner != nil {
		q.tuner.readDone(*res)
	}
	if q.sampleOne {
		q.tuner.sample(q)
	}
	strong := primary
	if !strong && q.tv.quorumStrong(len(q.targets)) {
		floor := hlc.Max(q.s.putTS[q.key], q.s.readTS[q.key])
		strong = !newest.VersionTS.Less(floor)
		res.Quorum = strong
	}
	res.Met = metSubSLA(q.agreement, q.mins, int64(res.RTT), high, strong)
	if q.repair && newest.Found {
		for i, reply := range q.replies {
			if !reply.Primary && (!reply.Found || reply.VersionTS.Less(newest.VersionTS)) {
				c.env.Send(q.targets[i].id, &wire.Repair{Tablet: q.tv.ref,
					Entry: wire.Entry{TS: newest.VersionTS, Key: q.key, Value: newest.Value}})
				res.Repaired++
			}
		}
	}
	if res.Met < 0 {
		q.done(*res, fmt.Errorf("%w: get %s from %d replicas took %s with high timestamp %s", ErrSLAUnmet, keyfmt.Quote(q.key), len(q.targets), res.RTT, high))
		return
	}
	res.SubSLA = q.agreement[res.Met]
	res.Value, res.Found = newest.Value, newest.Found
	q.s.recordRead(q.key, newest.VersionTS)
	q.done(*res, nil)
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
