package replica

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/wire"
)

// Epochs and fences (DESIGN.md section 10). A node given configuration
// members (Options.Config) is governed: each tablet it holds has an
// epoch, 1 when its table is created, raised by the service's leader
// each time it moves the tablet's primary (EpochChange, rollback.go).
// Every replication message carries its sender's epoch of the tablet,
// and a replica takes only those of its own: an older one comes from a
// deposed primary or a replica that missed a change, a newer one
// precedes the EpochChange the replica is about to get. Ahead of a move
// to epoch E the leader asks each replica for its high timestamp
// (HighRequest); from then on the replica is fenced at E: it takes no
// version above the high it reports (or the request's Until), so the
// report stays true, and a primary orders no write. An ungoverned node
// keeps every tablet at epoch 0 and never fences.

// governed reports whether a configuration service governs the node.
func (n *Node) governed() bool { return len(n.opts.Config) > 0 }

// sameEpoch reports whether a replication message of epoch e belongs to
// the tablet's epoch; one that does not is counted and dropped.
func (n *Node) sameEpoch(tb *tablet, e uint64) bool {
	if e == tb.epoch {
		return true
	}
	n.metrics.EpochsRefused++
	return false
}

// leased reports whether the tablet's primary may order a write now: an
// ungoverned one always; a governed one while its lease holds, by its own
// clock less the margin, and it is not fenced.
func (n *Node) leased(tb *tablet) bool {
	if !n.governed() {
		return true
	}
	return tb.fence == 0 && !tb.leaseAsked.IsZero() && n.opts.Lease.Holds(tb.leaseAsked, n.env.Now())
}

// admit is the code the primary answers a write with before it orders
// it: OK, or NoLease (the client retries). A client that knows an epoch
// newer than the primary's tells it that it has been deposed, or is about
// to be confirmed: either way it orders nothing more at its epoch.
func (n *Node) admit(tb *tablet, clientEpoch uint64) wire.Code {
	if n.governed() && clientEpoch > max(tb.epoch, tb.fence) {
		tb.fence, tb.fenceLimit = clientEpoch, n.clock.Now()
	}
	if n.leased(tb) {
		return wire.OK
	}
	n.metrics.NoLease++
	return wire.NoLease
}

// notPrimary is the epoch and primary a governed node that is not the
// tablet's primary names in its refusal.
func (n *Node) notPrimary(tb *tablet) (uint64, wire.NodeID) {
	if !n.governed() {
		return 0, ""
	}
	return tb.epoch, tb.primary
}

// highWait is a HighRequest waiting for the replica to reach its Until.
type highWait struct {
	from     wire.NodeID
	epoch    uint64
	until    hlc.Timestamp
	deadline time.Time
}

// highTimer answers the HighRequests of a tablet whose wait ran out.
type highTimer struct{ ref wire.TabletRef }

func (t highTimer) String() string { return fmt.Sprintf("high(%s)", t.ref) }

// electable reports whether the replica may report its high timestamp
// to an election. Not while it lacks versions it held, which a write
// level may have counted on: an election that counted its answer could
// lose them (TestRandomized seed 1238 lost a Put two of three replicas
// held). Nor while it holds versions above its high timestamp that a
// snapshot brought (ahead): elected, it would start the epoch at its high
// timestamp and have to drop them, which without a log only a wipe of
// the new primary does (seed 830 lost five acknowledged Puts so).
func (tb *tablet) electable() bool {
	return tb.recover.IsZero() && (tb.isPrimary || !tb.high.Less(tb.ahead))
}

// heldUpTo is the latest timestamp of a version the tablet may hold or
// have held and acknowledged: what a replica that loses its versions must
// catch up to (recover).
func (tb *tablet) heldUpTo() hlc.Timestamp {
	return hlc.Max(tb.high, hlc.Max(tb.lastUpdate, tb.ahead))
}

// highRequested answers a HighRequest: fences the tablet at its epoch
// and reports the high timestamp, at once, or, with Until above it, once
// a pull from the primary has brought it there or RepairWait has run out.
func (n *Node) highRequested(from wire.NodeID, m *wire.HighRequest) {
	reply := &wire.HighReply{Tablet: m.Tablet, Epoch: m.Epoch}
	tb := n.tablet(m.Tablet)
	switch {
	case tb == nil:
		reply.Code = wire.NoTable
	case tb.epoch >= m.Epoch || tb.fence > m.Epoch || m.Term < tb.term:
		reply.Code = wire.Invalid
	case !tb.electable():
		reply.Code = wire.Behind
	}
	if reply.Code != wire.OK {
		n.env.Send(from, reply)
		return
	}
	high := tb.high
	if tb.isPrimary {
		high = n.clock.Now() // a primary holds every version up to now
	}
	if tb.fence < m.Epoch {
		tb.fence, tb.fenceLimit, tb.fenceAsked = m.Epoch, high, time.Time{}
	}
	tb.term = max(tb.term, m.Term)
	if tb.fenceAsked.IsZero() {
		// A new primary's first lease counts from here.
		tb.fenceAsked = n.env.Now()
	}
	if tb.isPrimary || !high.Less(m.Until) {
		reply.High = high
		n.env.Send(from, reply)
		return
	}
	tb.fenceLimit = hlc.Max(tb.fenceLimit, m.Until)
	tb.highWaits = append(tb.highWaits, highWait{from: from, epoch: m.Epoch, until: m.Until, deadline: n.env.Now().Add(n.opts.RepairWait)})
	n.catchUp(tb)
	n.env.After(n.opts.RepairWait, highTimer{tb.ref})
}

// advanceHighWaits answers the HighRequests whose Until the high
// timestamp now reaches, or all of them when expired.
func (n *Node) advanceHighWaits(tb *tablet, expired bool) {
	now := n.env.Now()
	kept := tb.highWaits[:0]
	for _, w := range tb.highWaits {
		if tb.high.Less(w.until) && !(expired && !now.Before(w.deadline)) {
			kept = append(kept, w)
			continue
		}
		reply := &wire.HighReply{Tablet: tb.ref, Epoch: w.epoch, High: tb.high}
		if !tb.electable() {
			reply.High, reply.Code = hlc.Timestamp{}, wire.Behind
		}
		n.env.Send(w.from, reply)
	}
	clear(tb.highWaits[len(kept):])
	tb.highWaits = kept
}

// fenced returns a pull reply as the secondary takes it: nothing of
// another epoch; fenced, no snapshot (its high timestamp stays what it
// reported), and no version above the fence's limit.
func (n *Node) fenced(tb *tablet, m *wire.PullReply) *wire.PullReply {
	switch {
	case !n.sameEpoch(tb, m.Epoch):
		return nil
	case tb.fence == 0:
		return m
	case m.Snapshot:
		n.metrics.PullRepliesDiscarded++
		return nil
	case !tb.fenceLimit.Less(m.High):
		return m
	}
	c := *m
	c.High, c.More, c.Entries = tb.fenceLimit, false, nil
	for _, e := range m.Entries {
		if !tb.fenceLimit.Less(e.TS) {
			c.Entries = append(c.Entries, e)
		}
	}
	return &c
}

// An epoch record is the epoch and its start.
func encodeEpoch(epoch uint64, start hlc.Timestamp) []byte {
	return appendTS(binary.BigEndian.AppendUint64(nil, epoch), start)
}

func decodeEpoch(b []byte) (uint64, hlc.Timestamp, error) {
	if len(b) != 8+tsLen {
		return 0, hlc.Timestamp{}, fmt.Errorf("%w: epoch record of %d bytes", errCorrupt, len(b))
	}
	start, err := decodeTS(b[8:])
	return binary.BigEndian.Uint64(b), start, err
}
