package replica

import (
	"github.com/cosla/cosla/internal/hlc"
	"github.com/cosla/cosla/internal/invariants"
	"github.com/cosla/cosla/internal/storage"
	"github.com/cosla/cosla/internal/wire"
)

// Replication agent (Pileus 4.1-4.3). A secondary pulls the versions after
// its high timestamp; the primary answers from its update log, and when it
// has nothing newer it answers with its current time so that an idle
// secondary's high timestamp advances. In push mode the primary also sends
// every new version at once, tagged with the timestamp of the version
// before it, so that a secondary applies pushes strictly in order and
// repairs a gap with a pull.

func (n *Node) requestPull(tb *tablet) {
	tb.pulling = true
	n.timePullSent(tb, tb.high)
	n.env.Send(tb.primary, &wire.PullRequest{Tablet: tb.ref, Since: tb.high})
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
		return reply
	}
	n.metrics.PullsServed++
	if isSecondary(tb, from) {
		// Secondaries apply pulled versions with a synced write before
		// they ask again, so Since is durable there.
		n.noteHigh(tb, from, m.Since)
		n.truncateLog(tb)
	}
	if m.Since.Less(tb.truncated) {
		return n.snapshot(tb, reply)
	}
	eng := n.env.Engine()
	start := logKey(tb.ref, m.Since)
	start = append(start, 0) // strictly after Since
	var scanErr error
	batchBytes := 0
	err := eng.Scan(start, prefixEnd(tabletPrefix(spaceLog, tb.ref)), func(k, v []byte) bool {
		// The batch ends at PullBatchMax versions, or before the version
		// that would take it past PullBatchBytes: a reply never outgrows
		// the transport's message limit (Options.MessageBytesMax).
		if len(reply.Entries) == n.opts.PullBatchMax || (len(reply.Entries) > 0 && batchBytes+len(v) > n.opts.PullBatchBytes) {
			reply.More = true
			return false
		}
		batchBytes += len(v)
		ts, err := decodeTS(k[prefixLen:])
		if err != nil {
			scanErr = err
			return false
		}
		key, value, err := decodeLogRecord(v)
		if err != nil {
			scanErr = err
			return false
		}
		reply.Entries = append(reply.Entries, wire.Entry{TS: ts, Key: key, Value: value})
		return true
	})
	if err == nil {
		err = scanErr
	}
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

// truncateLog drops log records that every secondary holds durably.
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
	end := append(logKey(tb.ref, upTo), 0)
	err := eng.Scan(logKey(tb.ref, tb.truncated), end, func(k, _ []byte) bool {
		b.Delete(k)
		return true
	})
	if err != nil {
		n.storageError(err)
		return
	}
	// The truncation point is recorded in the same batch: a primary that
	// knows it may lack versions after a secondary's Since sends a
	// snapshot instead.
	b.Set(metaKey(tb.ref, metaTruncated), appendTS(nil, upTo))
	if err := eng.Apply(&b, false); err != nil {
		n.storageError(err)
		return
	}
	n.metrics.LogEntriesTruncated += int64(b.Len() - 1)
	tb.truncated = upTo
}

// snapshot fills reply with every key's latest version as of now.
func (n *Node) snapshot(tb *tablet, reply *wire.PullReply) *wire.PullReply {
	prefix := tabletPrefix(spaceData, tb.ref)
	var scanErr error
	err := n.env.Engine().Scan(prefix, prefixEnd(prefix), func(k, v []byte) bool {
		ts, value, err := decodeVersion(v)
		if err != nil {
			scanErr = err
			return false
		}
		reply.Entries = append(reply.Entries, wire.Entry{TS: ts, Key: string(k[prefixLen:]), Value: append([]byte(nil), value...)})
		return true
	})
	if err == nil {
		err = scanErr
	}
	if err == nil {
		reply.High, err = n.reveal()
	}
	if err != nil {
		n.storageError(err)
		return &wire.PullReply{Tablet: reply.Tablet, Since: reply.Since, Code: wire.StorageFailed}
	}
	reply.Snapshot = true
	n.metrics.SnapshotsSent++
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
	if m.Code != wire.OK {
		n.env.Logger().Warn("replica: pull failed", "tablet", m.Tablet, "code", m.Code)
		return
	}
	// The reply covers (m.Since, m.High]. Our high only grows, so it is at
	// least m.Since; if it already reaches m.High the reply is stale.
	if !tb.high.Less(m.High) || (!m.Snapshot && tb.high.Less(m.Since)) {
		n.metrics.PullRepliesDiscarded++
		return
	}
	var b storage.Batch
	last := tb.lastUpdate
	if m.Snapshot {
		prefix := tabletPrefix(spaceData, tb.ref)
		err := n.env.Engine().Scan(prefix, prefixEnd(prefix), func(k, _ []byte) bool {
			b.Delete(k)
			return true
		})
		if err != nil {
			n.storageError(err)
			return
		}
		last = hlc.Timestamp{}
	}
	applied := 0
	if invariants.Enabled {
		for i := 1; i < len(m.Entries); i++ {
			invariants.Check(m.Entries[i-1].TS.Less(m.Entries[i].TS) || m.Snapshot,
				"pull reply for %s out of timestamp order: %s then %s", tb.ref, m.Entries[i-1].TS, m.Entries[i].TS)
		}
	}
	for i := range m.Entries {
		e := &m.Entries[i]
		if !m.Snapshot && !tb.high.Less(e.TS) {
			continue
		}
		last = hlc.Max(last, e.TS)
		if !m.Snapshot {
			if skip, err := n.overRepaired(tb, e); err != nil {
				return
			} else if skip {
				continue
			}
		}
		b.Set(dataKey(tb.ref, e.Key), encodeVersion(e.TS, e.Value))
		applied++
	}
	if !n.commitReplicated(tb, &b, m.High, last) {
		return
	}
	if tb.ackPull {
		tb.ackPull = false
		n.ackPush(tb)
	}
	n.metrics.EntriesApplied += int64(applied)
	if m.Snapshot {
		n.metrics.SnapshotsApplied++
	}
	if m.More {
		n.requestPull(tb)
	}
}

// applyPush applies a pushed version if it is the next one in order.
func (n *Node) applyPush(m *wire.Push) {
	tb := n.tablet(m.Tablet)
	if tb == nil || tb.isPrimary {
		return
	}
	switch {
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
	skip, err := n.overRepaired(tb, &m.Entry)
	if err != nil {
		return
	}
	if !skip {
		b.Set(dataKey(tb.ref, m.Entry.Key), encodeVersion(m.Entry.TS, m.Entry.Value))
	}
	if !n.commitReplicated(tb, &b, m.Entry.TS, m.Entry.TS) {
		return
	}
	n.metrics.EntriesApplied++
	if m.Ack {
		n.ackPush(tb)
	}
}

// commitReplicated adds the new high and last-update timestamps to b and
// applies it with sync, so that the high a secondary reports in its next
// pull is durable and the primary may truncate its log up to it.
func (n *Node) commitReplicated(tb *tablet, b *storage.Batch, high, last hlc.Timestamp) bool {
	if invariants.Enabled {
		invariants.Check(tb.high.Less(high), "tablet %s high timestamp would go from %s back to %s", tb.ref, tb.high, high)
		invariants.Check(!high.Less(last), "tablet %s last update %s above high %s", tb.ref, last, high)
	}
	b.Set(metaKey(tb.ref, metaHigh), appendTS(nil, high))
	b.Set(metaKey(tb.ref, metaLast), appendTS(nil, last))
	if err := n.env.Engine().Apply(b, true); err != nil {
		n.storageError(err)
		return false
	}
	tb.high, tb.lastUpdate = high, last
	return true
}
