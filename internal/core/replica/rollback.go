package replica

import (
	"encoding/binary"
	"encoding/json"
	"maps"
	"slices"
	"time"

	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/storage"
	"github.com/cosla/cosla/internal/core/wire"
)

// Epoch changes and rollback (DESIGN.md section 10). The service's
// leader tells every replica of a tablet its new epoch, the layout with
// the tablet's new primary and Start, the new primary's high timestamp
// when it took over (EpochChange). Every replica held a prefix of the
// old primary's log; the new primary's history is that log up to Start,
// then its own. A replica holding versions above Start (the old
// primary, back with level-ONE writes no one else held, or a secondary
// that missed the HighRequest) rolls them back in one synced batch:
// each key takes back its version at or below Start from the log, or
// loses it if it had none; the dropped versions are kept in the
// rollback space, counted, logged and handed to Options.Rollback. A
// secondary keeps no log, nor does a primary whose log was truncated
// past what a key needs: such a replica cannot tell the previous
// versions, so it wipes the tablet and catches up by snapshot.
//
// At the same epoch an EpochChange changes the replica set: a replica
// newly named creates the tablet and catches up from zero; one no longer
// named drops the tablet's data.

// RolledBack is a version a rollback dropped: Table's tablet Tablet held
// Entry above the start of Epoch.
type RolledBack struct {
	Table  string
	Tablet wire.TabletRef
	Epoch  uint64
	Entry  wire.Entry
}

// epochChanged handles an EpochChange and acknowledges the epoch the
// replica is at, unless storing the change failed (the leader sends it
// again).
func (n *Node) epochChanged(from wire.NodeID, m *wire.EpochChange) {
	ref := wire.TabletRef{Table: m.Layout.ID, Tablet: m.Tablet}
	if !n.governed() || m.Tablet < 0 || int(m.Tablet) >= len(m.Layout.Tablets) || m.Layout.Validate() != nil {
		n.env.Logger().Warn("replica: ignored an epoch change", "from", from, "tablet", ref)
		return
	}
	spec := m.Layout.Tablets[m.Tablet]
	named := slices.Contains(spec.Replicas(), n.env.ID())
	tb := n.tablet(ref)
	ok := true
	switch {
	case tb == nil && named:
		ok = n.joinTablet(m)
	case tb == nil:
	case m.Epoch < tb.epoch:
	case !named:
		ok = n.dropTablet(tb, m)
	case m.Epoch > tb.epoch:
		ok = n.adoptEpoch(tb, m)
	case tb.fence > tb.epoch && m.Term > tb.term:
		// A later leader, ready, still has the tablet at this epoch:
		// the transition that fenced it was given up, and no move of
		// it can commit any more.
		n.metrics.FencesLifted++
		tb.fence, tb.fenceLimit, tb.fenceAsked, tb.highWaits = 0, hlc.Timestamp{}, time.Time{}, nil
	case !slices.Equal(spec.Replicas(), append([]wire.NodeID{tb.primary}, tb.secondaries...)):
		ok = n.changeMembers(tb, m)
	}
	if !ok {
		return
	}
	epoch := m.Epoch
	if tb := n.tablet(ref); tb != nil {
		epoch, tb.term = tb.epoch, max(tb.term, m.Term)
	}
	n.env.Send(from, &wire.EpochAck{Tablet: ref, Epoch: epoch})
}

// commitLayout stores, in one synced batch with what add writes, the
// node's layout of m's table with m's tablet as m names it (the others
// as the node knows them: the changes of several tablets may arrive in
// any order), and returns it; false if storage failed.
func (n *Node) commitLayout(m *wire.EpochChange, add func(*storage.Batch) error) (wire.Layout, bool) {
	l := m.Layout
	if t, ok := n.byID[m.Layout.ID]; ok {
		l = t.layout
		l.Tablets = slices.Clone(l.Tablets)
		l.Tablets[m.Tablet] = m.Layout.Tablets[m.Tablet]
	}
	var b storage.Batch
	enc, err := json.Marshal(l)
	if err == nil && add != nil {
		err = add(&b)
	}
	if err == nil {
		b.Set(catalogKey(l.Name), enc)
		err = n.env.Engine().Apply(&b, true)
	}
	if err != nil {
		n.storageError(err)
		return l, false
	}
	return l, true
}

// rollbackFloor is where a replica at epoch own rolls back to when it
// learns of m's epoch: the lowest start of the epochs after its own. A
// version of its own epoch or before is in epoch e's history only if it
// lies at or below the start of every epoch from own+1 to e, whichever
// way those starts are ordered: a later start may lie above versions the
// first epoch after its own dropped (TestRandomized seeds 143, 713 and
// 782), or below versions it kept (seeds 726 and 958). Zero if m no
// longer lists one of those starts: everything it holds goes back.
func rollbackFloor(own uint64, m *wire.EpochChange) hlc.Timestamp {
	floor := m.Start
	for e := own + 1; e < m.Epoch; e++ {
		i := slices.IndexFunc(m.Earlier, func(s wire.EpochStart) bool { return s.Epoch == e })
		if i < 0 {
			return hlc.Timestamp{}
		}
		if m.Earlier[i].Start.Less(floor) {
			floor = m.Earlier[i].Start
		}
	}
	return floor
}

// adoptEpoch moves the tablet to m's epoch: rolls back what it holds
// above m.Start, takes its role in the new layout and, as the new
// primary, its first lease from when the HighRequest of the epoch came.
func (n *Node) adoptEpoch(tb *tablet, m *wire.EpochChange) bool {
	var rb rolledBack
	l, ok := n.commitLayout(m, func(b *storage.Batch) (err error) {
		rb, err = n.rollback(tb, rollbackFloor(tb.epoch, m), m.Epoch, m.Layout.Tablets[m.Tablet].Primary == n.env.ID(), b)
		b.Set(metaKey(tb.ref, metaEpoch), encodeEpoch(m.Epoch, m.Start))
		return err
	})
	if !ok {
		return false
	}
	spec := l.Tablets[m.Tablet]
	wasPrimary := tb.isPrimary
	n.metrics.EpochChanges++
	n.byID[l.ID].layout, n.tables[l.Name].layout = l, l
	moved := tb.primary != spec.Primary
	asked := time.Time{}
	if tb.fence == m.Epoch {
		asked = tb.fenceAsked
	}
	tb.epoch, tb.epochStart, tb.leaseAsked = m.Epoch, m.Start, time.Time{}
	if tb.fence <= m.Epoch {
		// The HighRequests still waiting are of a transition now
		// decided. A fence of a later one stays.
		tb.fence, tb.fenceLimit, tb.fenceAsked, tb.highWaits = 0, hlc.Timestamp{}, time.Time{}, nil
	}
	rb.apply(tb)
	if wasPrimary && spec.Primary != n.env.ID() {
		n.deposed(tb)
	}
	n.setRole(tb, spec)
	n.clock.Update(m.Start)
	if tb.isPrimary {
		tb.leaseAsked = asked
		n.renewNow()
		n.promoted(tb)
	}
	n.reportRollback(l.Name, tb, m.Epoch, rb)
	if !tb.isPrimary && (rb.wiped || moved) {
		n.requestPull(tb)
	}
	if moved {
		n.reforward(tb)
	}
	return true
}

// promoted answers the read repairs that waited at a secondary now
// primary, as a primary answers them: it holds every timestamp its clock
// has passed.
func (n *Node) promoted(tb *tablet) {
	last := n.clock.Last()
	for _, r := range tb.repairs {
		code := wire.OK
		if last.Less(r.ts) {
			code = wire.Behind
		}
		n.answerRepair(r.from, r.req, code, last)
	}
	clear(tb.repairs)
	tb.repairs = nil
}

// rolledBack is what a rollback did: the versions it dropped, whether it
// wiped the tablet, and the tablet's timestamps after it.
type rolledBack struct {
	dropped               []wire.Entry
	wiped                 bool
	high, last, truncated hlc.Timestamp
	ahead, recover        hlc.Timestamp
}

func (rb *rolledBack) apply(tb *tablet) {
	tb.high, tb.lastUpdate, tb.truncated, tb.ahead, tb.recover = rb.high, rb.last, rb.truncated, rb.ahead, rb.recover
	if rb.wiped {
		tb.snap = nil
	}
}

// rollback adds to b the rollback of the tablet's versions above start,
// and the tablet's timestamps after it; primary says whether the replica
// is the new epoch's primary. A replica that is no longer primary drops
// its log: secondaries keep none.
func (n *Node) rollback(tb *tablet, start hlc.Timestamp, epoch uint64, primary bool, b *storage.Batch) (rolledBack, error) {
	rb := rolledBack{high: tb.high, last: tb.lastUpdate, truncated: tb.truncated, ahead: tb.ahead, recover: tb.recover}
	var err error
	if tb.isPrimary {
		err = n.rollbackLog(tb, start, primary, b, &rb)
	} else {
		err = n.rollbackData(tb, start, b, &rb)
	}
	if err == nil && rb.wiped {
		// It may have acknowledged versions at or below start that it
		// no longer holds: it reads nothing until it holds them again.
		rb.recover = hlc.Max(rb.recover, tb.heldUpTo())
		err = n.wipe(tb, b, &rb)
	}
	if err != nil {
		return rb, err
	}
	if primary {
		rb.recover = hlc.Timestamp{} // its versions are the epoch's history
	}
	if !tb.isPrimary && primary {
		// The new primary logged none of the versions it holds: a
		// secondary that pulls from before the latest of them is sent a
		// snapshot. One at or after it, below the epoch's start, lacks
		// nothing: no version lies between.
		rb.truncated = hlc.Max(rb.last, rb.ahead)
	}
	for _, e := range rb.dropped {
		k := binary.BigEndian.AppendUint64(tabletPrefix(spaceBack, tb.ref), epoch)
		b.Set(appendTS(k, e.TS), encodeLogRecord(e.Key, e.Value))
	}
	for _, m := range []struct {
		which byte
		ts    hlc.Timestamp
	}{{metaHigh, rb.high}, {metaLast, rb.last}, {metaTruncated, rb.truncated}, {metaAhead, rb.ahead}, {metaRecover, rb.recover}} {
		b.Set(metaKey(tb.ref, m.which), appendTS(nil, m.ts))
	}
	return rb, nil
}

// rollbackLog rolls a primary's logged versions above start back to the
// log's versions at or below it, or marks the tablet for a wipe when the
// log was truncated past a key's previous version.
func (n *Node) rollbackLog(tb *tablet, start hlc.Timestamp, primary bool, b *storage.Batch, rb *rolledBack) error {
	eng := n.env.Engine()
	prefix := tabletPrefix(spaceLog, tb.ref)
	above := append(logKey(tb.ref, start), 0)
	err := storage.Walk(eng, above, prefixEnd(prefix), func(k, v []byte) (bool, error) {
		e, err := decodeLogEntry(k, v)
		rb.dropped = append(rb.dropped, e)
		b.Delete(k)
		return true, err
	})
	if err != nil {
		return err
	}
	if start.Less(tb.truncated) {
		// Versions in (start, truncated] may be held but no longer
		// logged, such as those a promoted secondary held before it
		// logged anything (TestPromotedRollsBackWhatItPulled).
		err = n.dataAbove(tb, start, tb.truncated, rb)
	}
	if err != nil {
		return err
	}
	tagged := tabletPrefix(spaceTagged, tb.ref)
	tags, err := n.dropTags(tb, append(taggedKey(tb.ref, start), 0), prefixEnd(tagged), b)
	if err != nil {
		return err
	}
	prev := map[string]*wire.Entry{}
	for i, e := range rb.dropped {
		prev[e.Key] = nil
		rb.dropped[i].Origin, rb.dropped[i].Seq = tags[e.TS].Origin, tags[e.TS].Seq
	}
	unrecord(b, tb, rb.dropped)
	if !primary {
		if _, err := n.dropTags(tb, tagged, append(taggedKey(tb.ref, start), 0), b); err != nil {
			return err
		}
	}
	last, err := n.previous(prefix, above, prev, !primary, b)
	if err != nil {
		return err
	}
	for _, key := range slices.Sorted(maps.Keys(prev)) {
		switch p := prev[key]; {
		case p != nil:
			b.Set(dataKey(tb.ref, key), encodeVersion(p.TS, p.Value))
		case tb.truncated.IsZero():
			b.Delete(dataKey(tb.ref, key)) // it had no version before
		default:
			rb.wiped = true // its version before is no longer logged
		}
	}
	if start.Less(rb.last) {
		floor := tb.truncated // the last version is at or below it
		if start.Less(floor) {
			floor = start
		}
		rb.last = hlc.Max(last, floor)
	}
	if !primary {
		rb.high, rb.truncated = start, hlc.Timestamp{}
	}
	return nil
}

// previous sets each key of prev to its last version in the log records
// in [start, end), returns the last one's timestamp and, if drop, adds
// their deletion to b.
func (n *Node) previous(start, end []byte, prev map[string]*wire.Entry, drop bool, b *storage.Batch) (hlc.Timestamp, error) {
	last := hlc.Timestamp{}
	err := storage.Walk(n.env.Engine(), start, end, func(k, v []byte) (bool, error) {
		e, err := decodeLogEntry(k, v)
		if _, ok := prev[e.Key]; ok {
			prev[e.Key] = &e
		}
		last = e.TS
		if drop {
			b.Delete(k)
		}
		return true, err
	})
	return last, err
}

// rollbackData lowers a secondary's high timestamp to start; versions
// above it, which only a log could roll back, mark the tablet for a wipe.
func (n *Node) rollbackData(tb *tablet, start hlc.Timestamp, b *storage.Batch, rb *rolledBack) error {
	if !start.Less(tb.lastUpdate) && !start.Less(tb.ahead) && tb.snap == nil {
		if start.Less(rb.high) {
			rb.high = start
		}
		return nil
	}
	rb.wiped = true
	return n.dataAbove(tb, start, hlc.Timestamp{}, rb)
}

// dataAbove adds to rb.dropped the versions the tablet holds above
// start, and at or below through unless through is zero, and marks the
// tablet for a wipe if there are any: only a log tells a key's version
// before.
func (n *Node) dataAbove(tb *tablet, start, through hlc.Timestamp, rb *rolledBack) error {
	prefix := tabletPrefix(spaceData, tb.ref)
	return storage.Walk(n.env.Engine(), prefix, prefixEnd(prefix), func(k, v []byte) (bool, error) {
		ts, value, err := decodeVersion(v)
		if start.Less(ts) && (through.IsZero() || !through.Less(ts)) {
			rb.dropped = append(rb.dropped, wire.Entry{TS: ts, Key: string(k[prefixLen:]), Value: append([]byte(nil), value...)})
			rb.wiped = true
		}
		return true, err
	})
}

// wipe adds to b the deletion of every version and log record of the
// tablet, and of the exactly-once records of the staged writes, some of
// which may be of versions rolled back: it catches up from zero, and the
// snapshot brings the records of what it holds.
func (n *Node) wipe(tb *tablet, b *storage.Batch, rb *rolledBack) error {
	for _, space := range []byte{spaceData, spaceLog, spaceTagged, spaceOrigin, spaceResult} {
		prefix := tabletPrefix(space, tb.ref)
		if err := n.deleteRange(b, prefix, prefixEnd(prefix)); err != nil {
			return err
		}
	}
	rb.high, rb.last, rb.truncated, rb.ahead = hlc.Timestamp{}, hlc.Timestamp{}, hlc.Timestamp{}, hlc.Timestamp{}
	return nil
}

func decodeLogEntry(k, v []byte) (wire.Entry, error) {
	ts, err := decodeTS(k[prefixLen:])
	if err != nil {
		return wire.Entry{}, err
	}
	key, value, err := decodeLogRecord(v)
	return wire.Entry{TS: ts, Key: key, Value: value}, err
}

// reportRollback counts, logs and hands on the versions a rollback
// dropped.
func (n *Node) reportRollback(table string, tb *tablet, epoch uint64, rb rolledBack) {
	if len(rb.dropped) == 0 && !rb.wiped {
		return
	}
	n.metrics.RolledBack += int64(len(rb.dropped))
	if rb.wiped {
		n.metrics.RollbackWipes++
	}
	n.env.Logger().Warn("replica: rolled back versions above the new epoch's start", "table", table, "tablet", tb.ref,
		"epoch", epoch, "start", tb.epochStart, "versions", len(rb.dropped), "wiped", rb.wiped)
	if n.opts.Rollback == nil {
		return
	}
	for _, e := range rb.dropped {
		n.opts.Rollback(RolledBack{Table: table, Tablet: tb.ref, Epoch: epoch, Entry: e})
	}
}

// deposed answers the writes waiting for their level at a primary that
// lost the tablet. A client's Put is answered as when its wait runs out,
// QuorumTimeout with the replicas known to hold it: its version is
// durable here and may survive the move or be rolled back, and NotPrimary
// would have the client write it again at the new primary. A staged
// write the primary took itself is answered with the stage it reached;
// a receiver's is dropped: the receiver forwards it to the new primary,
// which answers from the record of what it holds.
func (n *Node) deposed(tb *tablet) {
	for _, w := range tb.waits {
		if w.forward == 0 {
			n.progress(tb, w, true)
		}
	}
	clear(tb.waits)
	tb.waits = nil
}

// reforward sends a receiver's unordered staged writes to the tablet's
// new primary: to itself, if it is the one, which orders them as it would
// another receiver's and takes its own acknowledgements.
func (n *Node) reforward(tb *tablet) {
	if len(tb.staged) == 0 {
		return
	}
	for _, w := range tb.staged {
		w.sent = w.sent && w.acked
	}
	n.sendForwards(tb)
}

// joinTablet creates the replica of a tablet the node is newly named in,
// at m's epoch, and starts its catch-up from zero.
func (n *Node) joinTablet(m *wire.EpochChange) bool {
	ref := wire.TabletRef{Table: m.Layout.ID, Tablet: m.Tablet}
	l, ok := n.commitLayout(m, func(b *storage.Batch) error {
		b.Set(metaKey(ref, metaEpoch), encodeEpoch(m.Epoch, m.Start))
		return nil
	})
	if !ok {
		return false
	}
	if t, ok := n.byID[l.ID]; ok {
		t.layout = l
		t.tablets[m.Tablet] = n.newTablet(&l, int(m.Tablet))
	} else {
		n.addTable(l)
	}
	tb := n.tablet(ref)
	tb.epoch, tb.epochStart = m.Epoch, m.Start
	if tb.isPrimary {
		n.renewNow()
		return true
	}
	n.requestPull(tb)
	return true
}

// dropTablet deletes the replica of a tablet the node is no longer named
// in: its versions, log and records (deleteTable's, for one tablet).
func (n *Node) dropTablet(tb *tablet, m *wire.EpochChange) bool {
	l, ok := n.commitLayout(m, func(b *storage.Batch) error {
		for _, space := range tabletSpaces {
			prefix := tabletPrefix(space, tb.ref)
			if err := n.deleteRange(b, prefix, prefixEnd(prefix)); err != nil {
				return err
			}
		}
		return nil
	})
	if !ok {
		return false
	}
	if tb.isPrimary {
		n.deposed(tb)
	}
	t := n.byID[l.ID]
	t.layout = l
	delete(t.tablets, tb.ref.Tablet)
	return true
}

// changeMembers takes a tablet's new replica set at the same epoch.
func (n *Node) changeMembers(tb *tablet, m *wire.EpochChange) bool {
	l, ok := n.commitLayout(m, nil)
	if !ok {
		return false
	}
	n.byID[l.ID].layout = l
	spec := l.Tablets[m.Tablet]
	if tb.isPrimary {
		for s := range tb.acked {
			if !slices.Contains(spec.Secondaries, s) {
				delete(tb.acked, s)
				delete(tb.snapshots, s)
				delete(tb.pushTimed, s)
			}
		}
	}
	n.setRole(tb, spec)
	return true
}
