package replica

import (
	"time"

	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/invariants"
	"github.com/cosla/cosla/internal/core/storage"
	"github.com/cosla/cosla/internal/core/wire"
)

// Replication agent (Pileus 4.1-4.3). A secondary pulls the versions after
// its high timestamp; the primary answers from its update log, and when it
// has nothing newer it answers with its current time so that an idle
// secondary's high timestamp advances. In push mode the primary also sends
// every new version at once, tagged with the timestamp of the version
// before it, so that a secondary applies pushes strictly in order and
// repairs a gap with a pull.
//
// A secondary that lost its storage pulls from before the primary's log
// truncation point, and receives a snapshot instead, in chunks no larger
// than an ordinary pull reply (wire.PullReply): the latest version of
// each key, in key order, with the snapshot's high timestamp S, the
// primary's time when it served the first chunk. A chunk served later
// reads each of its keys at or after S, so once the secondary has every
// chunk it holds every version up to S, and versions newer than S besides;
// it takes S as its high timestamp only then, and guards the newer ones
// (tablet.ahead), so that the versions after S that it pulls next do not
// take a key back.

func (n *Node) requestPull(tb *tablet) {
	tb.pulling = true
	tb.pullsSent++
	tb.pulledAt = n.env.Now()
	n.timePullSent(tb, tb.high)
	m := &wire.PullRequest{Tablet: tb.ref, Since: tb.high, Epoch: tb.epoch}
	if tb.snap != nil {
		m.InSnapshot, m.SnapshotHigh, m.SnapshotAfter = true, tb.snap.high, tb.snap.last
	}
	n.env.Send(tb.primary, m)
}

// chunkWait is how long a secondary receiving a snapshot waits for the
// chunk it asked for before its periodic pull asks again
// (waitingForChunk).
const chunkWait = time.Second

// waitingForChunk reports whether the secondary is receiving a snapshot
// and asked for its next chunk less than chunkWait ago: its periodic
// pull waits then. Each pull is answered with a chunk of up to
// PullBatchBytes, and pulls sent every interval while a chunk took longer
// than that to arrive and apply were each answered with the same chunk
// again, which the secondary decoded and discarded: under load (the race
// detector beside other tests) it spent its time on duplicates, and
// TestSnapshotOverNetwork took 5 to 10 minutes instead of seconds. Pulls
// of the log go on every interval, and may be in flight together.
func (n *Node) waitingForChunk(tb *tablet) bool {
	return tb.snap != nil && tb.pulling && n.env.Now().Sub(tb.pulledAt) < chunkWait
}

// snapshotProgress is how far a secondary has got in receiving a snapshot
// (volatile: a secondary that restarts pulls from its high timestamp,
// zero, and is sent a new snapshot).
type snapshotProgress struct {
	// high is the snapshot's high timestamp, S.
	high hlc.Timestamp
	// last is the last key applied; the next chunk starts after it.
	last string
	// lastUpdate is the latest timestamp at or below S among the versions
	// the chunks carried: the tablet's last update once the snapshot is
	// complete.
	lastUpdate hlc.Timestamp
}

// servePull answers a secondary's pull at the primary.
func (n *Node) servePull(from wire.NodeID, m *wire.PullRequest) *wire.PullReply {
	reply := &wire.PullReply{Tablet: m.Tablet, Since: m.Since}
	tb, code := n.lookup(m.Tablet, "", false)
	switch {
	case code != wire.OK:
		reply.Code = code
		return reply
	case !tb.isPrimary:
		reply.Code = wire.NotPrimary
		reply.Epoch, _ = n.notPrimary(tb)
		return reply
	case !n.sameEpoch(tb, m.Epoch):
		return nil // the secondary hears of the epoch from the service
	}
	reply.Epoch = tb.epoch
	n.metrics.PullsServed++
	if isSecondary(tb, from) {
		// Secondaries apply pulled versions with a synced write before
		// they ask again, so the versions up to Since are durable there;
		// a raise of the high timestamp that brought none is not synced,
		// and a restart can take it back (see truncateLog). A secondary
		// whose high timestamp went back further lost its storage (a
		// pull duplicated and delivered late says so too, wrongly, until
		// the next one): it no longer holds what it acknowledged. Either
		// way it counts toward write levels from Since on, and the log
		// is kept from Since on, so that its next pull, or the pull
		// after its snapshot, finds it.
		if acked, ok := tb.acked[from]; ok && m.Since.Less(acked) {
			tb.acked[from] = m.Since
		}
		n.noteHigh(tb, from, m.Since)
		n.truncateLog(tb)
	}
	if m.InSnapshot || m.Since.Less(tb.truncated) {
		return n.snapshot(tb, from, m, reply)
	}
	delete(tb.snapshots, from)
	err := n.readLog(tb, m.Since, reply)
	if err == nil {
		if reply.More {
			reply.High = reply.Entries[len(reply.Entries)-1].TS
		} else {
			reply.High, err = n.reveal()
		}
	}
	if err != nil {
		n.storageError(err)
		return &wire.PullReply{Tablet: m.Tablet, Since: m.Since, Code: wire.StorageFailed}
	}
	n.metrics.EntriesSent += int64(len(reply.Entries))
	return reply
}

func isSecondary(tb *tablet, id wire.NodeID) bool {
	for _, s := range tb.secondaries {
		if s == id {
			return true
		}
	}
	return false
}

// truncateLog drops log records that every secondary has reported
// holding.
//
// The truncation point it records is the latest version dropped, not the
// reported high timestamp it truncated up to: no version lies between the
// two, so the log still holds every version after the point. A secondary
// whose high timestamp went back at a restart therefore still pulls from
// the log. It can go back: a pull reply that brings no version raises the
// high timestamp without a sync (applyPullReply), and the high a
// secondary reported may be such a one. It went back over no version, so
// the secondary lacks nothing the log does not hold.
func (n *Node) truncateLog(tb *tablet) {
	if len(tb.acked) < len(tb.secondaries) {
		return
	}
	upTo := hlc.Timestamp{}
	first := true
	for _, ts := range tb.acked {
		if first || ts.Less(upTo) {
			upTo, first = ts, false
		}
	}
	if !tb.truncated.Less(upTo) {
		return
	}
	eng := n.env.Engine()
	var b storage.Batch
	dropped := tb.truncated
	err := storage.Walk(eng, logKey(tb.ref, tb.truncated), append(logKey(tb.ref, upTo), 0), func(k, _ []byte) (bool, error) {
		ts, err := decodeTS(k[prefixLen:])
		b.Delete(k)
		dropped = hlc.Max(dropped, ts)
		return true, err
	})
	if err != nil {
		n.storageError(err)
		return
	}
	logged := b.Len()
	if logged == 0 {
		return
	}
	if tb.epoch != 0 {
		if _, err := n.dropTags(tb, tabletPrefix(spaceTagged, tb.ref), append(taggedKey(tb.ref, upTo), 0), &b); err != nil {
			n.storageError(err)
			return
		}
	}
	// The truncation point is recorded in the same batch: a primary that
	// knows it may lack versions after a secondary's Since sends a
	// snapshot instead.
	b.Set(metaKey(tb.ref, metaTruncated), appendTS(nil, dropped))
	if err := eng.Apply(&b, false); err != nil {
		n.storageError(err)
		return
	}
	n.metrics.LogEntriesTruncated += int64(logged)
	tb.truncated = dropped
}

// snapshot fills reply with a chunk of a snapshot (wire.PullReply): the
// latest version of each key after the request's cursor, or, for a new
// snapshot, from the first key, with a high timestamp of now. The chunk
// ends as a log pull's batch does.
func (n *Node) snapshot(tb *tablet, from wire.NodeID, m *wire.PullRequest, reply *wire.PullReply) *wire.PullReply {
	usable := func(high hlc.Timestamp) bool {
		// The log must hold every version after the snapshot's high
		// timestamp, for the secondary to pull on from there once it has
		// the snapshot, and this primary must have revealed it (it did
		// not, if its storage was lost).
		return !high.Less(tb.truncated) && !n.clock.Last().Less(high)
	}
	high, resume := m.SnapshotHigh, m.InSnapshot && usable(m.SnapshotHigh)
	prefix := tabletPrefix(spaceData, tb.ref)
	start := prefix
	switch prev, ok := tb.snapshots[from]; {
	case resume:
		start = append(dataKey(tb.ref, m.SnapshotAfter), 0) // strictly after
		reply.InSnapshot, reply.SnapshotAfter = true, m.SnapshotAfter
		reply.SnapshotLast = m.SnapshotAfter
	case ok && usable(prev) && !m.InSnapshot:
		// The secondary asked again before the first chunk reached it
		// (its pull timer fired) or it restarted: serve the snapshot it
		// may be receiving from the start again, which it ignores if so,
		// rather than a new one it would start over with.
		high = prev
	default:
		var err error
		if high, err = n.reveal(); err != nil {
			return &wire.PullReply{Tablet: reply.Tablet, Since: reply.Since, Code: wire.StorageFailed}
		}
		if isSecondary(tb, from) {
			tb.snapshots[from] = high
		}
		n.metrics.SnapshotsSent++
	}
	batchBytes := 0
	err := storage.Walk(n.env.Engine(), start, prefixEnd(prefix), func(k, v []byte) (bool, error) {
		key := k[prefixLen:]
		// As servePull's batch: PullBatchMax versions, or PullBatchBytes
		// of keys and values past the first.
		size := len(key) + len(v) - tsLen
		if len(reply.Entries) == n.opts.PullBatchMax || (len(reply.Entries) > 0 && batchBytes+size > n.opts.PullBatchBytes) {
			reply.More = true
			return false, nil
		}
		batchBytes += size
		ts, value, err := decodeVersion(v)
		if err != nil {
			return false, err
		}
		reply.Entries = append(reply.Entries, wire.Entry{TS: ts, Key: string(key), Value: append([]byte(nil), value...)})
		return true, nil
	})
	if err != nil {
		n.storageError(err)
		return &wire.PullReply{Tablet: reply.Tablet, Since: reply.Since, Code: wire.StorageFailed}
	}
	if len(reply.Entries) > 0 {
		reply.SnapshotLast = reply.Entries[len(reply.Entries)-1].Key
	}
	if !reply.More {
		if reply.Records, err = n.snapshotRecords(tb, high); err != nil {
			n.storageError(err)
			return &wire.PullReply{Tablet: reply.Tablet, Since: reply.Since, Code: wire.StorageFailed}
		}
	}
	reply.High, reply.Snapshot = high, true
	n.metrics.SnapshotChunksSent++
	n.metrics.EntriesSent += int64(len(reply.Entries))
	return reply
}

// applyPull applies a pull reply at a secondary: the versions in
// (our high, reply.High], in timestamp order, in one synced batch.
func (n *Node) applyPull(from wire.NodeID, m *wire.PullReply) {
	tb := n.tablet(m.Tablet)
	if tb == nil || tb.isPrimary {
		return
	}
	n.timePullReply(tb, from, m)
	tb.pulling = false
	n.applyPullReply(tb, m)
	if tb.pullAgain && !tb.pulling {
		tb.pullAgain = false
		n.requestPull(tb)
	}
	n.advanceReads(tb)
	n.advanceRepairs(tb)
}

// applyPullReply applies a pull reply's versions or snapshot chunk.
func (n *Node) applyPullReply(tb *tablet, m *wire.PullReply) {
	if m.Code != wire.OK {
		n.env.Logger().Warn("replica: pull failed", "tablet", m.Tablet, "code", m.Code)
		return
	}
	if m = n.fenced(tb, m); m == nil {
		return
	}
	if m.Snapshot {
		n.applySnapshot(tb, m)
		return
	}
	// The reply covers (m.Since, m.High]. Our high only grows, so it is at
	// least m.Since; if it already reaches m.High the reply is stale. While
	// a snapshot is being received only its chunks are applied: the high
	// timestamp stays until the snapshot is complete.
	if !tb.high.Less(m.High) || tb.high.Less(m.Since) || tb.snap != nil {
		n.metrics.PullRepliesDiscarded++
		if !m.More && tb.snap == nil && !tb.high.Less(m.High) {
			// Pushes brought everything the reply had: caught up.
			tb.pullsDone = tb.pullsSent
		}
		return
	}
	var b storage.Batch
	last := tb.lastUpdate
	applied, newer := 0, false
	if invariants.Enabled {
		for i := 1; i < len(m.Entries); i++ {
			invariants.Check(m.Entries[i-1].TS.Less(m.Entries[i].TS),
				"pull reply for %s out of timestamp order: %s then %s", tb.ref, m.Entries[i-1].TS, m.Entries[i].TS)
		}
	}
	for i := range m.Entries {
		e := &m.Entries[i]
		if !tb.high.Less(e.TS) {
			continue
		}
		newer = true
		last = hlc.Max(last, e.TS)
		recordApplied(&b, tb, e)
		if skip, err := n.superseded(tb, e); err != nil {
			return
		} else if skip {
			continue
		}
		b.Set(dataKey(tb.ref, e.Key), encodeVersion(e.TS, e.Value))
		applied++
	}
	if !n.commitReplicated(tb, &b, m.High, last, newer) {
		return
	}
	if tb.ackPull {
		tb.ackPull = false
		n.ackPush(tb)
	}
	n.metrics.EntriesApplied += int64(applied)
	tb.applied += int64(applied)
	if m.More {
		n.requestPull(tb)
		return
	}
	tb.pullsDone = tb.pullsSent
}

// staleChunk reports whether a snapshot chunk does not continue the
// snapshot in progress, nor starts a newer one.
func (tb *tablet) staleChunk(m *wire.PullReply) bool {
	if m.InSnapshot {
		return tb.snap == nil || tb.snap.high != m.High || tb.snap.last != m.SnapshotAfter
	}
	// A first chunk answers a pull from our high timestamp (as it is
	// during a snapshot, zero). A pull from an older one, duplicated
	// and delivered late, has its answer dropped here rather than
	// replace a tablet that needs no snapshot.
	return m.Since != tb.high || !tb.high.Less(m.High) || (tb.snap != nil && !tb.snap.high.Less(m.High))
}

// checkChunkOrder asserts that a snapshot chunk's versions come in key
// order, after the previous chunk's.
func checkChunkOrder(tb *tablet, m *wire.PullReply) {
	for i := 1; i < len(m.Entries); i++ {
		invariants.Check(m.Entries[i-1].Key < m.Entries[i].Key,
			"snapshot chunk for %s out of key order: %q then %q", tb.ref, m.Entries[i-1].Key, m.Entries[i].Key)
	}
	if m.InSnapshot && len(m.Entries) > 0 {
		invariants.Check(m.SnapshotAfter < m.Entries[0].Key,
			"snapshot chunk for %s starts at %q, not after %q", tb.ref, m.Entries[0].Key, m.SnapshotAfter)
	}
}

// addChunk adds a snapshot chunk's versions to b, notes the latest at or
// below the snapshot's high timestamp in next, and returns ahead raised
// to the latest above it.
func addChunk(b *storage.Batch, tb *tablet, m *wire.PullReply, next *snapshotProgress, ahead hlc.Timestamp) hlc.Timestamp {
	for i := range m.Entries {
		e := &m.Entries[i]
		if m.High.Less(e.TS) {
			// Newer than the snapshot: it must not be replaced by an
			// older version of its key, which the pull after the
			// snapshot may bring. (Nothing else writes a key during a
			// snapshot: pushes and pulls wait until it is complete.)
			ahead = hlc.Max(ahead, e.TS)
		} else {
			next.lastUpdate = hlc.Max(next.lastUpdate, e.TS)
		}
		b.Set(dataKey(tb.ref, e.Key), encodeVersion(e.TS, e.Value))
	}
	return ahead
}

// readLog adds to reply the tablet's logged versions after since, in
// timestamp order, as many as one reply carries; More says if others
// follow.
func (n *Node) readLog(tb *tablet, since hlc.Timestamp, reply *wire.PullReply) error {
	start := logKey(tb.ref, since)
	start = append(start, 0) // strictly after since
	batchBytes := 0
	err := storage.Walk(n.env.Engine(), start, prefixEnd(tabletPrefix(spaceLog, tb.ref)), func(k, v []byte) (bool, error) {
		// The batch ends at PullBatchMax versions, or before the version
		// that would take it past PullBatchBytes: a reply never outgrows
		// the transport's message limit (Options.MessageBytesMax).
		if len(reply.Entries) == n.opts.PullBatchMax || (len(reply.Entries) > 0 && batchBytes+len(v) > n.opts.PullBatchBytes) {
			reply.More = true
			return false, nil
		}
		batchBytes += len(v)
		ts, err := decodeTS(k[prefixLen:])
		if err != nil {
			return false, err
		}
		key, value, err := decodeLogRecord(v)
		if err != nil {
			return false, err
		}
		reply.Entries = append(reply.Entries, wire.Entry{TS: ts, Key: key, Value: value})
		return true, nil
	})
	if err != nil {
		return err
	}
	return n.fillTags(tb, since, reply.Entries)
}

// applySnapshot applies a snapshot chunk at a secondary, in one synced
// batch. The first chunk replaces the tablet's versions; the last one
// sets the high timestamp to the snapshot's, and the secondary pulls on
// from there at once. A chunk that does not continue the snapshot in
// progress is stale and dropped, but for a first chunk newer than it: the
// primary started over.
func (n *Node) applySnapshot(tb *tablet, m *wire.PullReply) {
	first := !m.InSnapshot
	if tb.staleChunk(m) {
		n.metrics.PullRepliesDiscarded++
		return
	}
	if invariants.Enabled {
		checkChunkOrder(tb, m)
	}
	var b storage.Batch
	var next snapshotProgress
	ahead := tb.ahead
	if first {
		prefix := tabletPrefix(spaceData, tb.ref)
		if err := n.deleteRange(&b, prefix, prefixEnd(prefix)); err != nil {
			n.storageError(err)
			return
		}
		next.high = m.High
		// The versions an earlier snapshot brought are gone with the
		// rest.
		ahead = hlc.Timestamp{}
	} else {
		next = *tb.snap
	}
	ahead = addChunk(&b, tb, m, &next, ahead)
	applied := len(m.Entries)
	next.last = m.SnapshotLast
	if first || ahead != tb.ahead {
		b.Set(metaKey(tb.ref, metaAhead), appendTS(nil, ahead))
	}
	if !m.More {
		n.completeSnapshot(tb, &b, m, next.lastUpdate, ahead)
		return
	}
	recover := tb.recover
	if first && (!tb.high.IsZero() || !tb.lastUpdate.IsZero()) {
		// A replica behind the log (restored from an old copy) no longer
		// holds what its high timestamp promised; until the snapshot is
		// complete it promises nothing. The high timestamp goes back
		// here only, as it would have had the storage been lost. Nor
		// does it hold what it held, which it may have acknowledged.
		b.Set(metaKey(tb.ref, metaHigh), appendTS(nil, hlc.Timestamp{}))
		b.Set(metaKey(tb.ref, metaLast), appendTS(nil, hlc.Timestamp{}))
		recover = hlc.Max(recover, tb.heldUpTo())
		b.Set(metaKey(tb.ref, metaRecover), appendTS(nil, recover))
	}
	if err := n.env.Engine().Apply(&b, true); err != nil {
		n.storageError(err)
		return
	}
	if first {
		tb.high, tb.lastUpdate, tb.recover = hlc.Timestamp{}, hlc.Timestamp{}, recover
	}
	tb.ahead, tb.snap = ahead, &next
	n.metrics.SnapshotChunksApplied++
	n.metrics.EntriesApplied += int64(applied)
	n.requestPull(tb)
}

// completeSnapshot applies the last chunk of a snapshot, added to b with
// the tablet's new last update and ahead: the tablet holds every key's
// latest version as of the snapshot's high timestamp S, or a newer one,
// and the records of the staged writes ordered up to S.
func (n *Node) completeSnapshot(tb *tablet, b *storage.Batch, m *wire.PullReply, last, ahead hlc.Timestamp) {
	if err := n.keepRecords(tb, m.Records, b); err != nil {
		n.storageError(err)
		return
	}
	if !n.commitReplicated(tb, b, m.High, last, true) {
		return
	}
	tb.ahead, tb.snap = ahead, nil
	n.metrics.SnapshotChunksApplied++
	n.metrics.SnapshotsApplied++
	n.metrics.EntriesApplied += int64(len(m.Entries))
	tb.applied += int64(len(m.Entries))
	n.requestPull(tb)
}

// applyPush applies a pushed version if it is the next one in order.
func (n *Node) applyPush(m *wire.Push) {
	tb := n.tablet(m.Tablet)
	if tb == nil || tb.isPrimary || !n.sameEpoch(tb, m.Epoch) {
		return
	}
	tb.known = hlc.Max(tb.known, m.Entry.TS)
	switch {
	case tb.fence != 0 && tb.fenceLimit.Less(m.Entry.TS):
		// Fenced: the high timestamp reported stays true.
		n.metrics.PushesIgnored++
		return
	case tb.snap != nil:
		// A snapshot is being received; the pull after it brings this
		// version, and answers the acknowledgement asked for.
		n.metrics.PushesIgnored++
		tb.ackPull = tb.ackPull || m.Ack
		if !tb.pulling {
			n.requestPull(tb)
		}
		return
	case !tb.high.Less(m.Entry.TS):
		n.metrics.PushesIgnored++
		if m.Ack {
			n.ackPush(tb)
		}
		return
	case m.Prev != tb.lastUpdate:
		// A version between our last and this one has not arrived: pull
		// rather than apply out of order.
		n.metrics.GapsDetected++
		tb.ackPull = tb.ackPull || m.Ack
		if !tb.pulling {
			n.requestPull(tb)
		}
		return
	}
	var b storage.Batch
	skip, err := n.superseded(tb, &m.Entry)
	if err != nil {
		return
	}
	if !skip {
		b.Set(dataKey(tb.ref, m.Entry.Key), encodeVersion(m.Entry.TS, m.Entry.Value))
	}
	recordApplied(&b, tb, &m.Entry)
	if !n.commitReplicated(tb, &b, m.Entry.TS, m.Entry.TS, true) {
		return
	}
	n.metrics.EntriesApplied++
	tb.applied++
	if m.Ack {
		n.ackPush(tb)
	}
	n.advanceRepairs(tb)
}

// commitReplicated adds the new high and last-update timestamps to b and
// applies it, with a sync if it brings versions or ends a catch-up after a
// wipe. A reply that brought none only raises the high timestamp: without
// a sync, a crash takes the raise back over no version (see truncateLog),
// and a consistent read at a secondary, which pulls first, answers after
// no fsync (dConssandra Fig. 8's floor was that fsync).
func (n *Node) commitReplicated(tb *tablet, b *storage.Batch, high, last hlc.Timestamp, versions bool) bool {
	if invariants.Enabled {
		invariants.Check(tb.high.Less(high), "tablet %s high timestamp would go from %s back to %s", tb.ref, tb.high, high)
		invariants.Check(!high.Less(last), "tablet %s last update %s above high %s", tb.ref, last, high)
	}
	b.Set(metaKey(tb.ref, metaHigh), appendTS(nil, high))
	b.Set(metaKey(tb.ref, metaLast), appendTS(nil, last))
	recovered := !tb.recover.IsZero() && !high.Less(tb.recover)
	if recovered {
		b.Delete(metaKey(tb.ref, metaRecover))
	}
	if err := n.env.Engine().Apply(b, versions || recovered); err != nil {
		n.storageError(err)
		return false
	}
	tb.high, tb.lastUpdate = high, last
	if recovered {
		tb.recover = hlc.Timestamp{}
	}
	n.advanceHighWaits(tb, false)
	return true
}

// ackPush sends the primary a PushAck for everything the secondary holds.
func (n *Node) ackPush(tb *tablet) {
	n.metrics.PushAcksSent++
	n.env.Send(tb.primary, &wire.PushAck{Tablet: tb.ref, High: tb.high, Epoch: tb.epoch})
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
