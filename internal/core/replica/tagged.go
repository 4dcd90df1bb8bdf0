package replica

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"

	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/storage"
	"github.com/cosla/cosla/internal/core/wire"
)

// Staged writes across a failover (DESIGN.md section 10). The
// exactly-once record of a receiver's staged writes (stage.go: the
// primary's 'o' and 'q' records) must live in what a new primary holds.
// So at a governed primary a version ordered from a Forward carries its
// origin (the receiver) and sequence number (Entry.Origin, Entry.Seq),
// kept beside the log ('n' records) for the pulls that read the log, and
// every replica that applies such a version records it as ordered in the
// batch that applies it. A new primary answers a write forwarded to it
// again from that record instead of ordering it twice; a rollback takes
// the record back with the versions it drops.

// tagged returns e with its origin and sequence number, at a governed
// primary.
func (tb *tablet) tagged(e wire.Entry, from wire.NodeID, seq uint64) wire.Entry {
	if tb.epoch != 0 {
		e.Origin, e.Seq = from, seq
	}
	return e
}

func taggedKey(ref wire.TabletRef, ts hlc.Timestamp) []byte {
	return appendTS(tabletPrefix(spaceTagged, ref), ts)
}

func encodeTag(from wire.NodeID, seq uint64) []byte {
	return append(binary.BigEndian.AppendUint64(nil, seq), from...)
}

func decodeTag(b []byte) (wire.NodeID, uint64, error) {
	if len(b) <= 8 {
		return "", 0, fmt.Errorf("%w: origin tag of %d bytes", errCorrupt, len(b))
	}
	return wire.NodeID(b[8:]), binary.BigEndian.Uint64(b), nil
}

// fillTags sets the origin of the entries read from the log after since
// that were ordered from a Forward.
func (n *Node) fillTags(tb *tablet, since hlc.Timestamp, entries []wire.Entry) error {
	if tb.epoch == 0 || len(entries) == 0 {
		return nil
	}
	at := make(map[hlc.Timestamp]int, len(entries))
	for i, e := range entries {
		at[e.TS] = i
	}
	start := append(taggedKey(tb.ref, since), 0)
	end := append(taggedKey(tb.ref, entries[len(entries)-1].TS), 0)
	return storage.Walk(n.env.Engine(), start, end, func(k, v []byte) (bool, error) {
		ts, err := decodeTS(k[prefixLen:])
		if err != nil {
			return false, err
		}
		from, seq, err := decodeTag(v)
		if i, ok := at[ts]; ok {
			entries[i].Origin, entries[i].Seq = from, seq
		}
		return true, err
	})
}

// recordApplied adds to a secondary's batch applying e the record that
// e's staged write is ordered, with its result: a write forwarded again
// to this replica once it is primary is answered from it.
func recordApplied(b *storage.Batch, tb *tablet, e *wire.Entry) {
	if e.Origin == "" {
		return
	}
	b.Set(originKey(tb.ref, e.Origin), encodeOrigin(origin{seq: e.Seq, ts: e.TS}))
	b.Set(resultKey(tb.ref, e.Origin, e.Seq), encodeResult(result{ts: e.TS, tested: wire.NotEvaluated, code: wire.OK}))
	if e.Seq > forwardWindow {
		b.Delete(resultKey(tb.ref, e.Origin, e.Seq-forwardWindow))
	}
}

// dropTags adds to b the deletion of the origin tags in [start, end) of
// the tablet's log, and returns them by timestamp.
func (n *Node) dropTags(tb *tablet, start, end []byte, b *storage.Batch) (map[hlc.Timestamp]wire.Entry, error) {
	tags := map[hlc.Timestamp]wire.Entry{}
	err := storage.Walk(n.env.Engine(), start, end, func(k, v []byte) (bool, error) {
		ts, err := decodeTS(k[prefixLen:])
		if err != nil {
			return false, err
		}
		from, seq, err := decodeTag(v)
		tags[ts] = wire.Entry{Origin: from, Seq: seq}
		b.Delete(k)
		return true, err
	})
	return tags, err
}

// unrecord adds to b the rollback of the exactly-once records of the
// staged writes among dropped: each receiver's record goes back to
// before its first dropped write, whose results are forgotten.
func unrecord(b *storage.Batch, tb *tablet, dropped []wire.Entry) {
	first := map[wire.NodeID]uint64{}
	for _, e := range dropped {
		if e.Origin == "" {
			continue
		}
		if s, ok := first[e.Origin]; !ok || e.Seq < s {
			first[e.Origin] = e.Seq
		}
		b.Delete(resultKey(tb.ref, e.Origin, e.Seq))
	}
	for _, from := range slices.Sorted(maps.Keys(first)) {
		b.Set(originKey(tb.ref, from), encodeOrigin(origin{seq: first[from] - 1}))
	}
}

// snapshotRecords returns the exactly-once records a governed tablet's
// snapshot carries on its last chunk: every result the primary keeps
// (the last forwardWindow of each receiver's writes) of a write ordered
// up to high, or of one that wrote nothing. A version a snapshot brings
// carries no origin, so without them a secondary that caught up by
// snapshot and became primary would order a write forwarded again twice.
func (n *Node) snapshotRecords(tb *tablet, high hlc.Timestamp) ([]wire.Record, error) {
	if tb.epoch == 0 {
		return nil, nil
	}
	var out []wire.Record
	prefix := tabletPrefix(spaceResult, tb.ref)
	err := storage.Walk(n.env.Engine(), prefix, prefixEnd(prefix), func(k, v []byte) (bool, error) {
		key := k[prefixLen:]
		if len(key) < 9 || key[len(key)-9] != 0 {
			return false, fmt.Errorf("%w: forward result key of %d bytes", errCorrupt, len(k))
		}
		r, err := decodeResult(v)
		if err == nil && !high.Less(r.ts) {
			out = append(out, wire.Record{Origin: wire.NodeID(key[:len(key)-9]), Seq: binary.BigEndian.Uint64(key[len(key)-8:]),
				TS: r.ts, Tested: r.tested, Code: r.code})
		}
		return true, err
	})
	return out, err
}

// keepRecords adds to a secondary's batch that completes a snapshot the
// records it carried: each result, and each receiver's record where it
// is ahead of the one the secondary holds.
func (n *Node) keepRecords(tb *tablet, records []wire.Record, b *storage.Batch) error {
	last := map[wire.NodeID]origin{}
	for _, r := range records {
		b.Set(resultKey(tb.ref, r.Origin, r.Seq), encodeResult(result{ts: r.TS, tested: r.Tested, code: r.Code}))
		if o := last[r.Origin]; r.Seq > o.seq {
			last[r.Origin] = origin{seq: r.Seq, ts: hlc.Max(o.ts, r.TS)}
		}
	}
	for _, from := range slices.Sorted(maps.Keys(last)) {
		v, ok, err := n.env.Engine().Get(originKey(tb.ref, from))
		var held origin
		if err == nil && ok {
			held, err = decodeOrigin(v)
		}
		if err != nil {
			return err
		}
		if o := last[from]; o.seq > held.seq {
			b.Set(originKey(tb.ref, from), encodeOrigin(o))
		}
	}
	return nil
}
