package replica

import (
	"fmt"
	"time"

	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/wire"
)

// Write levels (CPQ, DESIGN.md section 4). A Put with a
// write level w above one is pushed to every secondary at once, whatever
// the table's replication mode, with Push.Ack set; each secondary answers
// with a PushAck once it holds the version durably, and the primary
// answers the Put once w replicas, itself included, hold it. A secondary's
// high timestamp covers a prefix of the tablet's history, so one
// timestamp per secondary, the highest it has acknowledged or pulled
// from, tells the primary which versions it holds. Past the Put's wait
// the primary answers QuorumTimeout with the number that do: never more.

// putWait is a Put waiting for its write level: a client's Put; a
// bounded Put the primary took itself (staged, seq its write ID), whose
// reply says the stage; or a receiver's staged write (forward, its
// sequence number), acknowledged with a ForwardAck. A staged write is
// coordinated once level replicas hold it (the table's write level),
// and waits for need (every replica, when its bound asks for that).
type putWait struct {
	id      uint64
	from    wire.NodeID
	req     uint64
	ts      hlc.Timestamp
	need    int
	level   int
	staged  bool
	seq     uint64
	forward uint64
	tested  wire.Outcome
	at      time.Time // when a staged Put was ordered (for its cost)
	// levelSent: a receiver has been sent the write's coordination;
	// answered: the client of a staged Put has had its reply, and is
	// sent a Resolved once the write reaches its level.
	levelSent, answered bool
}

// waitTimer fires when a waiting Put's wait has run out.
type waitTimer struct {
	ref wire.TabletRef
	id  uint64
}

func (t waitTimer) String() string { return fmt.Sprintf("wait(%s #%d)", t.ref, t.id) }

// parkWait parks w until w.need replicas hold w.ts or wait runs out;
// a negative wait never does.
func (n *Node) parkWait(tb *tablet, w *putWait, wait time.Duration) {
	n.lastWait++
	w.id = n.lastWait
	tb.waits = append(tb.waits, w)
	if wait >= 0 {
		n.env.After(wait, waitTimer{ref: tb.ref, id: w.id})
	}
}

// progress answers what a waiting Put has reached, with the replicas
// holding it, and reports whether it goes on waiting. expired says its
// wait has run out: a client's Put is then answered QuorumTimeout; a
// staged write's wait for every replica ends, and it waits on for the
// table's write level alone, without a timer.
func (n *Node) progress(tb *tablet, w *putWait, expired bool) bool {
	count := holders(tb, w.ts)
	all := 1 + len(tb.secondaries)
	switch {
	case w.forward != 0:
		ack := func() {
			n.env.Send(w.from, &wire.ForwardAck{Tablet: tb.ref, Seq: w.forward, TS: w.ts, Tested: w.tested,
				Acks: int32(count), Holders: holderIDs(tb, w.ts, n.env.ID())})
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
	case w.staged && w.answered:
		if count >= w.level {
			n.env.Send(w.from, &wire.Resolved{Tablet: tb.ref, WriteID: w.seq, TS: w.ts})
			return false
		}
		return true
	case w.staged:
		if count < w.need && !expired {
			return true
		}
		reply := &wire.PutReply{Req: w.req, TS: w.ts, Acks: int32(count), Stage: wire.Coordinated, WriteID: w.seq,
			Holders: holderIDs(tb, w.ts, n.env.ID()), Tested: w.tested}
		switch {
		case count == all:
			reply.Stage = wire.Executed
			n.costsFor(n.env.ID()).spread.Add(n.elapsed(), 1, n.env.Now().Sub(w.at))
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
	switch {
	case count >= w.need:
		n.env.Send(w.from, &wire.PutReply{Req: w.req, TS: w.ts, Acks: int32(count)})
	case expired:
		n.metrics.LevelTimeouts++
		n.env.Send(w.from, &wire.PutReply{Req: w.req, Code: wire.QuorumTimeout, TS: w.ts, Acks: int32(count)})
	default:
		return true
	}
	return false
}

// holders counts the replicas known to hold ts durably: the primary and
// every secondary whose acknowledged high timestamp reaches it.
func holders(tb *tablet, ts hlc.Timestamp) int {
	count := 1
	for _, s := range tb.secondaries {
		if high, ok := tb.acked[s]; ok && !high.Less(ts) {
			count++
		}
	}
	return count
}

// noteHigh records that secondary s holds every version up to high
// durably, and answers the Puts that now have their write level.
func (n *Node) noteHigh(tb *tablet, s wire.NodeID, high hlc.Timestamp) {
	if !isSecondary(tb, s) {
		return
	}
	tb.acked[s] = hlc.Max(tb.acked[s], high)
	kept := tb.waits[:0]
	for _, w := range tb.waits {
		if n.progress(tb, w, false) {
			kept = append(kept, w)
		}
	}
	clear(tb.waits[len(kept):])
	tb.waits = kept
}

// pushAcked handles a secondary's PushAck at the primary.
func (n *Node) pushAcked(from wire.NodeID, m *wire.PushAck) {
	tb := n.tablet(m.Tablet)
	if tb == nil || !tb.isPrimary {
		return
	}
	n.metrics.PushAcksReceived++
	n.timePushAck(tb, from, m.High)
	n.noteHigh(tb, from, m.High)
}

// waitExpired answers a Put whose wait ran out before its write level was
// reached, with the number of replicas that hold it.
func (n *Node) waitExpired(t waitTimer) {
	tb := n.tablet(t.ref)
	if tb == nil {
		return // the table was deleted
	}
	for i, w := range tb.waits {
		if w.id != t.id {
			continue
		}
		if !n.progress(tb, w, true) {
			tb.waits = append(tb.waits[:i], tb.waits[i+1:]...)
		}
		return
	}
}

// ackPush sends the primary a PushAck for everything the secondary holds.
func (n *Node) ackPush(tb *tablet) {
	n.metrics.PushAcksSent++
	n.env.Send(tb.primary, &wire.PushAck{Tablet: tb.ref, High: tb.high})
}

// storedAtLeast reports whether the replica holds a version of key with a
// timestamp at or above ts.
func (n *Node) storedAtLeast(tb *tablet, key string, ts hlc.Timestamp) (bool, error) {
	v, ok, err := n.env.Engine().Get(dataKey(tb.ref, key))
	if err != nil {
		n.storageError(err)
		return false, err
	}
	if !ok {
		return false, nil
	}
	stored, _, err := decodeVersion(v)
	if err != nil {
		n.storageError(err)
		return false, err
	}
	return !stored.Less(ts), nil
}

// superseded reports whether a replicated version must not be applied
// because a snapshot chunk already brought a newer version of its key
// (see replicate.go). Only versions at or below tablet.ahead need the
// check.
func (n *Node) superseded(tb *tablet, e *wire.Entry) (bool, error) {
	if tb.ahead.Less(e.TS) {
		return false, nil
	}
	return n.storedAtLeast(tb, e.Key, e.TS)
}
