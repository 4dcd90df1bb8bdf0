package causal

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/wire"
)

var errCorrupt = errors.New("causal: corrupt record")

// Engine key spaces. A store keeps one record per key; a coordinator one
// per buffered write.
const (
	spaceValue  = 'v' // store: v<table:8><key> -> version, stable, value
	spaceBuffer = 'w' // coordinator: w<table:8><client>\x00<session:8><seq:8> -> buffered write
)

func valueKey(table uint64, key string) []byte {
	b := make([]byte, 0, 9+len(key))
	b = append(b, spaceValue)
	b = binary.BigEndian.AppendUint64(b, table)
	return append(b, key...)
}

// bufferPrefix is where a table's buffered writes start; the next
// table's is where they end.
func bufferPrefix(table uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{spaceBuffer}, table)
}

func bufferKey(table uint64, s sessionID, seq uint64) []byte {
	b := make([]byte, 0, 26+len(s.client))
	b = append(b, bufferPrefix(table)...)
	b = append(b, s.client...)
	b = append(b, 0)
	b = binary.BigEndian.AppendUint64(b, s.session)
	return binary.BigEndian.AppendUint64(b, seq)
}

func appendBytes(b, v []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

func appendVersion(b []byte, v wire.Version) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(v.TS.WallNanos))
	b = binary.BigEndian.AppendUint32(b, v.TS.Logical)
	return appendBytes(b, []byte(v.Origin))
}

// reader decodes what the append functions wrote; the first error sticks.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail() {
	if r.err == nil {
		r.err = errCorrupt
	}
	r.b = nil
}

func (r *reader) bytes() []byte {
	n, k := binary.Uvarint(r.b)
	if k <= 0 || uint64(len(r.b)-k) < n {
		r.fail()
		return nil
	}
	v := r.b[k : k+int(n)]
	r.b = r.b[k+int(n):]
	return v
}

func (r *reader) uvarint() uint64 {
	n, k := binary.Uvarint(r.b)
	if k <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[k:]
	return n
}

func (r *reader) byte() byte {
	if len(r.b) < 1 {
		r.fail()
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

func (r *reader) version() wire.Version {
	if len(r.b) < 12 {
		r.fail()
		return wire.Version{}
	}
	ts := hlc.Timestamp{WallNanos: int64(binary.BigEndian.Uint64(r.b)), Logical: binary.BigEndian.Uint32(r.b[8:])}
	r.b = r.b[12:]
	return wire.Version{TS: ts, Origin: wire.NodeID(r.bytes())}
}

// record is a store's state of one key: the newest version it holds and
// whether that version is known to be in every ring (stable).
type record struct {
	version wire.Version
	stable  bool
	value   []byte
}

func encodeRecord(r record) []byte {
	b := appendVersion(nil, r.version)
	s := byte(0)
	if r.stable {
		s = 1
	}
	b = append(b, s)
	return append(b, r.value...)
}

func decodeRecord(b []byte) (record, error) {
	rd := reader{b: b}
	v := rd.version()
	s := rd.byte()
	if rd.err != nil {
		return record{}, fmt.Errorf("%w: value record", rd.err)
	}
	return record{version: v, stable: s == 1, value: rd.b}, nil
}

// encodeBuffered encodes a buffered write (the write buffer's entry).
func encodeBuffered(e *buffered) []byte {
	b := appendVersion(nil, e.version)
	n := byte(0)
	if e.notify {
		n = 1
	}
	b = append(b, n)
	b = appendBytes(b, []byte(e.key))
	b = appendBytes(b, e.value)
	b = binary.AppendUvarint(b, uint64(len(e.deps)))
	for _, d := range e.deps {
		b = appendBytes(b, []byte(d.Key))
		b = appendVersion(b, d.Version)
	}
	return b
}

func decodeBuffered(b []byte) (*buffered, error) {
	rd := reader{b: b}
	e := &buffered{version: rd.version()}
	e.notify = rd.byte() == 1
	e.key = string(rd.bytes())
	e.value = append([]byte(nil), rd.bytes()...)
	n := rd.uvarint()
	if n > uint64(len(b)) {
		rd.fail()
	}
	for i := uint64(0); i < n && rd.err == nil; i++ {
		k := string(rd.bytes())
		e.deps = append(e.deps, wire.Dep{Key: k, Version: rd.version()})
	}
	if rd.err != nil || len(rd.b) != 0 {
		return nil, fmt.Errorf("%w: buffered write", errCorrupt)
	}
	return e, nil
}

// parseBufferKey splits a write-buffer key into its session and sequence.
func parseBufferKey(k []byte) (sessionID, uint64, error) {
	if len(k) < 1+8+1+16 {
		return sessionID{}, 0, errCorrupt
	}
	rest := k[9:]
	cut := len(rest) - 17
	if rest[cut] != 0 {
		return sessionID{}, 0, errCorrupt
	}
	s := sessionID{client: wire.NodeID(rest[:cut]), session: binary.BigEndian.Uint64(rest[cut+1:])}
	return s, binary.BigEndian.Uint64(rest[cut+9:]), nil
}
