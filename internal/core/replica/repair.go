package replica

import (
	"fmt"
	"time"

	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/wire"
)

// Read repair (CPQ; Cassandra's blocking read repair, ABD's write-back;
// DESIGN.md section 4). A client that read several replicas asks those
// that answered with an older version to catch up to the newest one's
// timestamp TS (wire.Repair). The Repair carries no data: a secondary
// below TS pulls from its primary, as a bounded read acquires what it
// lacks (stage.go), and answers OK once its high timestamp reaches TS.
// So a secondary still holds only versions its primary ordered, a prefix
// of the tablet's history, and no client can write through it.
//
// What a Repair can cost a secondary is bounded, whatever its TS: one
// pull asked for, and pulls coalesce (catchUp): at most one outstanding
// and one asked for after it, and one sent again per half RepairWait
// when its reply is late; a wait of at most Options.RepairWait,
// after which a TS the primary has not ordered (in the future, say) is
// answered Behind; and at most Options.RepairsWaitingMax Repairs wait
// per tablet, in arrival order, under one timer, beyond which a Repair
// is refused at once. A pull sent after the Repair arrived brings TS if
// the primary ordered it, as it had before any client could see it; the
// secondary does not answer Behind on an earlier pull's reply, which it
// cannot tell from that one's.

// repairWait is a Repair waiting for its secondary to catch up.
type repairWait struct {
	from     wire.NodeID
	req      uint64
	ts       hlc.Timestamp
	deadline time.Time // when it is answered Behind if still waiting
}

// repairTimer fires when the first waiting Repair of a tablet is due.
type repairTimer struct{ ref wire.TabletRef }

func (t repairTimer) String() string { return fmt.Sprintf("repair(%s)", t.ref) }

// repair answers a Repair: at once when the replica already holds TS
// (the primary: every timestamp its clock has passed), or cannot take
// it; otherwise once a pull has brought it up to TS, or its wait has
// run out.
func (n *Node) repair(from wire.NodeID, m *wire.Repair) {
	tb := n.tablet(m.Tablet)
	switch {
	case tb == nil:
		n.answerRepair(from, m.Req, wire.NoTable, hlc.Timestamp{})
	case tb.isPrimary:
		last := n.clock.Last()
		code := wire.OK
		if last.Less(m.TS) {
			code = wire.Behind
		}
		n.answerRepair(from, m.Req, code, last)
	case !tb.high.Less(m.TS):
		n.answerRepair(from, m.Req, wire.OK, tb.high)
	case len(tb.repairs) >= n.opts.RepairsWaitingMax:
		n.answerRepair(from, m.Req, wire.Overloaded, tb.high)
	default:
		n.catchUp(tb)
		tb.repairs = append(tb.repairs, &repairWait{from: from, req: m.Req, ts: m.TS, deadline: n.env.Now().Add(n.opts.RepairWait)})
		// The primary hears what the pull brought, for the Puts waiting
		// for their write level (a read that writes back finds the
		// pushes of one lost).
		tb.ackPull = true
		if !tb.repairTimer {
			tb.repairTimer = true
			n.env.After(n.opts.RepairWait, repairTimer{tb.ref})
		}
	}
}

// catchUp asks for a pull for a Repair that waits: now if none is
// outstanding, or if the outstanding one has gone unanswered for half
// RepairWait (it may be lost, and the periodic pull would send it again
// only after the replication interval); else once its reply has come.
func (n *Node) catchUp(tb *tablet) {
	if tb.pulling && n.env.Now().Sub(tb.pulledAt) < n.opts.RepairWait/2 {
		tb.pullAgain = true
		return
	}
	n.requestPull(tb)
}

// answerRepair sends a RepairReply and counts it.
func (n *Node) answerRepair(to wire.NodeID, req uint64, code wire.Code, high hlc.Timestamp) {
	if code == wire.OK {
		n.metrics.RepairsAcked++
	} else {
		n.metrics.RepairsRefused++
	}
	n.env.Send(to, &wire.RepairReply{Req: req, Code: code, High: high})
}

// advanceRepairs answers the waiting Repairs whose timestamp the
// secondary's high timestamp now reaches.
func (n *Node) advanceRepairs(tb *tablet) {
	kept := tb.repairs[:0]
	for _, r := range tb.repairs {
		if tb.high.Less(r.ts) {
			kept = append(kept, r)
			continue
		}
		n.answerRepair(r.from, r.req, wire.OK, tb.high)
	}
	clear(tb.repairs[len(kept):])
	tb.repairs = kept
}

// repairTimerFired refuses the Repairs whose wait has run out, and sets
// the timer again for the first of the others.
func (n *Node) repairTimerFired(t repairTimer) {
	tb := n.tablet(t.ref)
	if tb == nil || tb.isPrimary {
		return // the table was deleted
	}
	tb.repairTimer = false
	now := n.env.Now()
	due := 0
	for due < len(tb.repairs) && !now.Before(tb.repairs[due].deadline) {
		r := tb.repairs[due]
		n.answerRepair(r.from, r.req, wire.Behind, tb.high)
		due++
	}
	clear(tb.repairs[:due])
	tb.repairs = tb.repairs[due:]
	if len(tb.repairs) > 0 {
		tb.repairTimer = true
		n.env.After(tb.repairs[0].deadline.Sub(now), t)
	}
}
