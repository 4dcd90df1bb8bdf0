package replica

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/wire"
)

// Storage layout. Every key starts with a one-byte space tag:
//
//	c <table name>                      -> JSON layout (catalog)
//	g r                                 -> largest timestamp revealed to secondaries
//	d <table id><tablet> <key>          -> timestamp + value (tablet store, Pileus 4.3)
//	l <table id><tablet> <timestamp>    -> key + value (the primary's update log)
//	m <table id><tablet> h|u|t|r|f|e    -> high, last update, log truncation point,
//	                                       largest timestamp ahead of a snapshot, staged writes ordered,
//	                                       epoch and its start (governed nodes, epoch.go)
//	s <table id><tablet> <seq>          -> a staged write (receiver, stage.go)
//	o <table id><tablet> <node>         -> a receiver's writes ordered (primary, stage.go)
//	q <table id><tablet> <node> 0 <seq> -> the result of a receiver's write (primary, stage.go)
//	n <table id><tablet> <timestamp>    -> origin and sequence number of a logged staged write
//	                                       (governed primary, staged.go: Entry.Origin, Entry.Seq)
//	b <table id><tablet> <epoch> <ts>   -> key + value of a version rolled back at epoch (rollback.go)
//
// Table IDs and tablet indexes are fixed-width big-endian so that one
// tablet's keys are contiguous; timestamps are encoded so that byte order is
// timestamp order, making a log scan a timestamp-order scan.
const (
	spaceCatalog = 'c'
	spaceGlobal  = 'g'
	spaceData    = 'd'
	spaceLog     = 'l'
	spaceMeta    = 'm'
	spaceStage   = 's'
	spaceOrigin  = 'o'
	spaceResult  = 'q'
	spaceBack    = 'b'
	spaceTagged  = 'n'

	metaHigh      = 'h'
	metaLast      = 'u'
	metaTruncated = 't'
	metaAhead     = 'r' // 'r': written by read repair once, which shared it
	metaForwarded = 'f'
	metaEpoch     = 'e'
	metaRecover   = 'w'

	tsLen     = 12
	prefixLen = 1 + 8 + 4
)

var revealedKey = []byte{spaceGlobal, 'r'}

func catalogKey(name string) []byte {
	return append([]byte{spaceCatalog}, name...)
}

func tabletPrefix(space byte, ref wire.TabletRef) []byte {
	return appendTabletPrefix(make([]byte, 0, prefixLen+tsLen), space, ref)
}

func appendTabletPrefix(b []byte, space byte, ref wire.TabletRef) []byte {
	b = append(b, space)
	b = binary.BigEndian.AppendUint64(b, ref.Table)
	return binary.BigEndian.AppendUint32(b, uint32(ref.Tablet))
}

// tableSpan returns the [start, end) range of every key of one space that
// belongs to table id.
func tableSpan(space byte, id uint64) (start, end []byte) {
	start = make([]byte, 9)
	start[0] = space
	binary.BigEndian.PutUint64(start[1:], id)
	end = append([]byte(nil), start...)
	if id == ^uint64(0) {
		return start, []byte{space + 1}
	}
	binary.BigEndian.PutUint64(end[1:], id+1)
	return start, end
}

func dataKey(ref wire.TabletRef, key string) []byte {
	return appendDataKey(make([]byte, 0, prefixLen+len(key)), ref, key)
}

func appendDataKey(b []byte, ref wire.TabletRef, key string) []byte {
	return append(appendTabletPrefix(b, spaceData, ref), key...)
}

func logKey(ref wire.TabletRef, ts hlc.Timestamp) []byte {
	return appendTS(tabletPrefix(spaceLog, ref), ts)
}

func metaKey(ref wire.TabletRef, which byte) []byte {
	return append(tabletPrefix(spaceMeta, ref), which)
}

// prefixEnd returns the smallest key greater than every key with prefix p.
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		end[i]++
		if end[i] != 0 {
			return end[:i+1]
		}
	}
	return nil
}

func appendTS(b []byte, ts hlc.Timestamp) []byte {
	// Flipping the sign bit makes negative wall times sort first.
	b = binary.BigEndian.AppendUint64(b, uint64(ts.WallNanos)^(1<<63))
	return binary.BigEndian.AppendUint32(b, ts.Logical)
}

var errCorrupt = errors.New("cosla: corrupt replica storage")

func decodeTS(b []byte) (hlc.Timestamp, error) {
	if len(b) != tsLen {
		return hlc.Timestamp{}, fmt.Errorf("%w: timestamp of %d bytes", errCorrupt, len(b))
	}
	return hlc.Timestamp{
		WallNanos: int64(binary.BigEndian.Uint64(b) ^ (1 << 63)),
		Logical:   binary.BigEndian.Uint32(b[8:]),
	}, nil
}

// A stored version is its timestamp followed by the value.
func encodeVersion(ts hlc.Timestamp, value []byte) []byte {
	return append(appendTS(make([]byte, 0, tsLen+len(value)), ts), value...)
}

func decodeVersion(b []byte) (hlc.Timestamp, []byte, error) {
	if len(b) < tsLen {
		return hlc.Timestamp{}, nil, fmt.Errorf("%w: version of %d bytes", errCorrupt, len(b))
	}
	ts, err := decodeTS(b[:tsLen])
	return ts, b[tsLen:], err
}

// A log record is the key's length, the key and the value.
func encodeLogRecord(key string, value []byte) []byte {
	b := binary.AppendUvarint(make([]byte, 0, 2+len(key)+len(value)), uint64(len(key)))
	return append(append(b, key...), value...)
}

func decodeLogRecord(b []byte) (string, []byte, error) {
	n, w := binary.Uvarint(b)
	if w <= 0 || uint64(len(b)-w) < n {
		return "", nil, fmt.Errorf("%w: log record of %d bytes", errCorrupt, len(b))
	}
	return string(b[w : w+int(n)]), append([]byte(nil), b[w+int(n):]...), nil
}
