package clientcore

import (
	"cmp"
	"fmt"
	"time"

	"github.com/cosla/cosla/internal/core/wire"
)

// Reconfiguration by an operator (DESIGN.md section 10): a planned
// switchover of a tablet's primary, or a replica added or removed. Only
// the configuration service's leader carries one out; the others answer
// NotLeader.
//
// The client sends the request to every member at once rather than
// guess the leader and follow NotLeader's hints from member to member:
// the leader's answer comes only once the change has committed, which
// for a switchover waits for the target to catch up, so a member that is
// slow to answer cannot be told from one that is down, and a request
// sent again to the leader would find its own change under way. Sent to
// all, only the leader acts and answers; the others refuse at once.
// When a majority have refused and none named a leader (an election is
// under way), the client asks again after a backoff (as a Put does,
// failover.go), within the request's time.

// reconfigureCall is one Reconfigure under way.
type reconfigureCall struct {
	m        wire.Reconfigure
	deadline time.Time
	backoff  time.Duration
	done     func(wire.ReconfigureReply, error)
	finished bool
}

// Reconfigure asks the configuration service (Options.Config) to change
// a tablet as m says (its Req is set here), and calls done with the
// leader's answer once the change has committed, or an error: ErrInvalid
// if the client knows no member, or the service refused the change (a
// node that is not a replica, the primary removed, a change already
// under way), ErrNoTable, or ErrTimeout when no leader answered within
// timeout (Options.RequestTimeout if zero).
func (c *Client) Reconfigure(m wire.Reconfigure, timeout time.Duration, done func(wire.ReconfigureReply, error)) {
	timeout = cmp.Or(timeout, c.opts.RequestTimeout)
	if len(c.opts.Config) == 0 {
		done(wire.ReconfigureReply{}, fmt.Errorf("%w: reconfigure: the client knows no member of a configuration service (Options.Config): the cluster runs none, or the client was not told of it", ErrInvalid))
		return
	}
	call := &reconfigureCall{m: m, deadline: c.env.Now().Add(timeout), backoff: retryBackoffMin, done: done}
	c.reconfigureRound(call)
}

// reconfigureRound sends the request to every member. A late answer of
// an earlier round counts as much as one of this round.
func (c *Client) reconfigureRound(call *reconfigureCall) {
	left := call.deadline.Sub(c.env.Now())
	refused, leaderNamed := 0, false
	for _, id := range c.opts.Config {
		req := c.newReq()
		m := call.m
		m.Req = req
		c.send(id, &m, req, left, &pending{
			onReply: func(_ wire.NodeID, msg wire.Msg) {
				reply := msg.(*wire.ReconfigureReply)
				if call.finished {
					return
				}
				if reply.Code != wire.NotLeader {
					if reply.Code == wire.OK {
						c.reconfigured(call.m, reply)
					}
					call.finish(*reply, reconfigureError(reply.Code))
					return
				}
				refused++
				leaderNamed = leaderNamed || reply.Leader != ""
				if refused == len(c.opts.Config)/2+1 && !leaderNamed {
					c.reconfigureLater(call)
				}
			},
			onTimeout: func() {
				call.finish(wire.ReconfigureReply{}, fmt.Errorf("%w: reconfigure %s tablet %d: no leader of the configuration service answered within its time", ErrTimeout, call.m.Table, call.m.Tablet))
			},
		})
	}
}

// reconfigureLater starts the next round after the call's backoff, if
// its time allows; the last round's requests end it otherwise.
func (c *Client) reconfigureLater(call *reconfigureCall) {
	wait := call.backoff
	call.backoff = min(2*call.backoff, retryBackoffMax)
	if c.env.Now().Add(wait).Before(call.deadline) {
		c.env.After(wait, retryTimer{key: call.m.Table, send: func() {
			if !call.finished {
				c.reconfigureRound(call)
			}
		}})
	}
}

// reconfigured takes the layout and epoch a committed change of m
// gives its table into the client's view of it, if the client has it
// open: its next Put goes to the new primary at once.
func (c *Client) reconfigured(m wire.Reconfigure, reply *wire.ReconfigureReply) {
	t := c.tables[m.Table]
	if t == nil || t.causal != nil || t.layout.ID != reply.Layout.ID || len(t.tablets) != len(reply.Layout.Tablets) || int(m.Tablet) >= len(t.tablets) {
		return
	}
	c.relayout(t, reply.Layout)
	tv := &t.tablets[m.Tablet]
	tv.epoch = max(tv.epoch, reply.Epoch)
}

// finish ends the call with its answer, once.
func (call *reconfigureCall) finish(reply wire.ReconfigureReply, err error) {
	if !call.finished {
		call.finished = true
		call.done(reply, err)
	}
}

// reconfigureError maps a configuration leader's answer to the client's
// errors.
func reconfigureError(code wire.Code) error {
	switch code {
	case wire.Invalid:
		return fmt.Errorf("%w: the configuration service refused the change (a node that is not a replica of the tablet, its primary removed, or a change of the tablet under way)", ErrInvalid)
	case wire.Unavailable:
		return fmt.Errorf("%w: too few of the tablet's replicas answered the configuration service", ErrTimeout)
	}
	return codeError(code)
}
