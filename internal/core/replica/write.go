package replica

import (
	"fmt"
	"time"

	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/invariants"
	"github.com/cosla/cosla/internal/core/storage"
	"github.com/cosla/cosla/internal/core/wire"
)

// The write path at a tablet's primary, in the order a Put walks it:
// Receive hands it to put, which drops a duplicate (recentPuts.seen), checks it
// (checkPut, checkWrite), orders it (order: a timestamp, the log and the
// version in one synced batch), pushes it to the secondaries (push) and,
// for a write level above one, parks it until enough replicas hold it
// (the level waits below). Staged writes (stage.go) order and push
// through the same order and push, and wait in the same waits.

// put performs a Put at the primary: assign a timestamp above both the
// node's clock and the session's largest seen timestamp, then log and apply
// the version in one synced batch before answering (Pileus 4.2). A Put
// whose write level (its own or the table's) is above one is pushed to
// every secondary and answered later, by noteHigh or the wait's timer: put
// then returns nil.
func (n *Node) put(from wire.NodeID, m *wire.PutRequest) *wire.PutReply {
	if n.recentPuts.seen(from, m.Req) {
		n.metrics.DuplicatePuts++
		return nil // the original's reply answers it
	}
	n.metrics.Puts++
	reply := &wire.PutReply{Req: m.Req}
	tb, code := n.lookup(m.Tablet, m.Key, true)
	switch {
	case code != wire.OK:
		reply.Code = code
	case m.Bound == wire.NoBound && !tb.isPrimary:
		reply.Code = wire.NotPrimary
		reply.Epoch, reply.Primary = n.notPrimary(tb)
	default:
		reply.Code = n.checkPut(tb, m)
		if reply.Code == wire.OK && tb.isPrimary {
			reply.Code = n.admit(tb, m.Epoch)
		}
	}
	if reply.Code != wire.OK {
		n.metrics.PutsRejected++
		return reply
	}
	if m.Bound != wire.NoBound {
		n.stagedPut(from, tb, m)
		return nil
	}
	prev := tb.lastUpdate
	ts, tested, code := n.order(tb, m.Key, m.Value, m.MinTS, m.Test, nil)
	reply.Code, reply.Tested = code, tested
	if code != wire.OK {
		n.metrics.PutsRejected++
		return reply
	}
	if ts.IsZero() {
		return reply // a test that failed: nothing written
	}
	if invariants.Enabled {
		invariants.Check(prev.Less(ts) && m.MinTS.Less(ts),
			"put timestamp %s not above last update %s and session minimum %s", ts, prev, m.MinTS)
	}
	tb.lastUpdate = ts
	reply.TS, reply.Acks = ts, 1
	need := max(int(m.W), tb.writeLevel.Count(1+len(tb.secondaries)))
	n.push(tb, prev, wire.Entry{TS: ts, Key: m.Key, Value: m.Value}, need)
	if need > 1 {
		n.metrics.LevelPuts++
		n.parkWait(tb, &putWait{from: from, req: m.Req, ts: ts, need: need}, max(m.Wait, 0))
		return nil
	}
	return reply
}

// putID names a Put request.
type putID struct {
	from wire.NodeID
	req  uint64
}

// recentPutsMax is how many Puts a node remembers to recognize a
// duplicated request; our choice, far more than the requests a
// retransmission could reorder.
const recentPutsMax = 4096

// seen reports whether the Put from with request ID req was received
// before, and remembers it. A Put delivered twice (a retransmission below
// the transport, or a fault the simulator injects) must not be applied
// twice: the second version would come after Puts ordered between them
// and take the value back.
func (r *recentPuts) seen(from wire.NodeID, req uint64) bool {
	id := putID{from, req}
	if _, ok := r.set[id]; ok {
		return true
	}
	r.set[id] = struct{}{}
	if old, replaced := r.order.add(id); replaced {
		delete(r.set, old)
	}
	return false
}

// recentPuts are the last recentPutsMax Puts a node received, by sender
// and request ID (volatile).
type recentPuts struct {
	set   map[putID]struct{}
	order ring[putID]
}

func newRecentPuts() recentPuts {
	return recentPuts{set: map[putID]struct{}{}, order: newRing[putID](recentPutsMax)}
}

// checkPut validates a Put at whichever node takes it.
func (n *Node) checkPut(tb *tablet, m *wire.PutRequest) wire.Code {
	if m.W < 0 || int(m.W) > 1+len(tb.secondaries) || !m.Bound.Valid() || m.Budget < 0 {
		return wire.Invalid
	}
	return n.checkWrite(tb, m.Key, m.Value, m.MinTS, m.Test)
}

// checkWrite validates what a Put, or a Forward of one, writes: its key
// (in the tablet, which the caller has checked for a Put), value, test
// and session minimum.
func (n *Node) checkWrite(tb *tablet, key string, value []byte, minTS hlc.Timestamp, test *wire.Test) wire.Code {
	switch {
	case len(key) > n.opts.MaxKeyBytes || len(value) > n.opts.MaxValueBytes:
		return wire.TooLarge
	case !tb.holds(key):
		return wire.WrongTablet
	case test != nil && (len(test.Key) > n.opts.MaxKeyBytes || !tb.holds(test.Key)):
		return wire.Invalid
	case minTS.WallNanos > n.env.WallNanos()+int64(maxClockLead):
		// The session's minimum would drag this clock, and every later
		// timestamp, that far ahead (to the end of time, where it cannot
		// go on): no node issued it.
		n.env.Logger().Warn("replica: write refused: its session minimum is far ahead of this clock", "min_ts", minTS)
		return wire.Invalid
	}
	return wire.OK
}

// maxClockLead is how far ahead of a node's physical clock a Put's
// session minimum (a timestamp the client learned from another node) may
// be: generous for clocks kept by NTP, our choice. A stored timestamp that
// close to the end of time is corrupt.
const maxClockLead = time.Minute

// order assigns the next timestamp to a write at the primary and logs
// and applies it in one synced batch with extra, after evaluating its
// test. A write whose test fails is not written; extra still is. ts is
// zero when nothing was written.
func (n *Node) order(tb *tablet, key string, value []byte, minTS hlc.Timestamp, test *wire.Test, extra func(*storage.Batch, hlc.Timestamp, wire.Outcome)) (ts hlc.Timestamp, tested wire.Outcome, code wire.Code) {
	var b storage.Batch
	if test != nil {
		tested = wire.Held
		v, found, err := n.env.Engine().Get(dataKey(tb.ref, test.Key))
		var value []byte
		if err == nil && found {
			_, value, err = decodeVersion(v)
		}
		if err != nil {
			n.storageError(err)
			return ts, wire.NotEvaluated, wire.StorageFailed
		}
		if found != test.Found || (found && string(value) != string(test.Value)) {
			tested = wire.Failed
		}
	}
	if tested != wire.Failed {
		n.clock.Update(minTS)
		ts = n.clock.Now()
		b.Set(logKey(tb.ref, ts), encodeLogRecord(key, value))
		b.Set(dataKey(tb.ref, key), encodeVersion(ts, value))
		b.Set(metaKey(tb.ref, metaLast), appendTS(nil, ts))
	}
	if extra != nil {
		extra(&b, ts, tested)
	}
	if err := n.env.Engine().Apply(&b, true); err != nil {
		n.storageError(err)
		return hlc.Timestamp{}, wire.NotEvaluated, wire.StorageFailed
	}
	return ts, tested, wire.OK
}

// push sends a newly ordered version to the secondaries: in push mode,
// or when need replicas must hold it, with an acknowledgement asked.
func (n *Node) push(tb *tablet, prev hlc.Timestamp, e wire.Entry, need int) {
	if tb.mode != wire.ModePush && need <= 1 {
		return
	}
	for _, s := range tb.secondaries {
		if need > 1 {
			n.timePushSent(tb, s, e.TS)
		}
		n.env.Send(s, &wire.Push{Tablet: tb.ref, Prev: prev, Entry: e, Ack: need > 1, Epoch: tb.epoch})
		n.metrics.PushesSent++
		n.metrics.EntriesSent++
	}
}

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
// staged write's wait ends as progressStaged says.
func (n *Node) progress(tb *tablet, w *putWait, expired bool) bool {
	switch {
	case w.forward != 0:
		return n.progressForward(tb, w, expired)
	case w.staged:
		return n.progressStaged(tb, w, expired)
	}
	count := holders(tb, w.ts)
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

// holderIDs names the replicas known to hold ts, the primary first.
func holderIDs(tb *tablet, ts hlc.Timestamp, self wire.NodeID) []wire.NodeID {
	out := []wire.NodeID{self}
	for _, s := range tb.secondaries {
		if high, ok := tb.acked[s]; ok && !high.Less(ts) {
			out = append(out, s)
		}
	}
	return out
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
	if tb == nil || !tb.isPrimary || !n.sameEpoch(tb, m.Epoch) {
		return // an old epoch's acknowledgement counts for no Put of this one
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
