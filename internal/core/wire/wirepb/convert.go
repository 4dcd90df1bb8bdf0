package wirepb

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/wire"
)

// ErrMalformed is wrapped by errors decoding an envelope that names no
// message or carries fields out of range.
var ErrMalformed = errors.New("cosla: malformed wire message")

// Wrap encodes a message and its addresses as an envelope. The envelope
// shares the message's keys and values: it is for marshaling, and must
// not be written to. The conversion of each message is generated from its
// definition (convert_gen.go, see wiregen); the envelope and the protobuf
// messages it carries (but for lists and optional ones) are one
// allocation.
func Wrap(from, to wire.NodeID, m wire.Msg) (*Envelope, error) {
	e := wrap(m)
	if e == nil {
		return nil, fmt.Errorf("wirepb: no encoding for %T", m)
	}
	e.From, e.To = string(from), string(to)
	return e, nil
}

// unwrapper is every field of the envelope's oneof: it decodes its
// message (convert_gen.go).
type unwrapper interface {
	unwrap() (wire.Msg, error)
}

// Unwrap decodes an envelope. The message shares the envelope's keys and
// values: the envelope must not be written to afterwards.
func Unwrap(e *Envelope) (from, to wire.NodeID, m wire.Msg, err error) {
	from, to = wire.NodeID(e.GetFrom()), wire.NodeID(e.GetTo())
	x, ok := e.GetMsg().(unwrapper)
	if !ok {
		return from, to, nil, fmt.Errorf("%w: envelope from %q to %q carries no message", ErrMalformed, from, to)
	}
	if m, err = x.unwrap(); err != nil {
		return from, to, nil, err
	}
	return from, to, m, nil
}

// decoder keeps the first field out of range that a message's conversion
// (convert_gen.go) found: its methods range-check the enumerations.
type decoder struct{ err error }

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, args...)...)
	}
}

// tsInto sets r, a timestamp in its message's block, to t.
func tsInto(r *Timestamp, t hlc.Timestamp) *Timestamp {
	r.WallNanos, r.Logical = t.WallNanos, t.Logical
	return r
}

func tsWire(t *Timestamp) hlc.Timestamp {
	return hlc.Timestamp{WallNanos: t.GetWallNanos(), Logical: t.GetLogical()}
}

// enumWire range-checks a byte-sized enumeration, named by what in the
// error: a value above last is refused (wiregen's scalars give each
// enumeration's last value).
func enumWire[E ~uint8](d *decoder, v uint32, last E, what string) E {
	if v > uint32(last) {
		d.fail("%s %d", what, v)
	}
	return E(v)
}

// bound range-checks a bound: below Immediate no bound is defined.
func (d *decoder) bound(b int64) wire.Bound {
	if !wire.Bound(b).Valid() {
		d.fail("bound %d", b)
	}
	return wire.Bound(b)
}

// keyBytes returns a key as the bytes of a bytes field, sharing the
// string's memory rather than copying it: an envelope Wrap builds is only
// marshaled, never written to, so the bytes stay as immutable as the
// string (this saves an allocation per key on every send).
func keyBytes(k string) []byte { return unsafe.Slice(unsafe.StringData(k), len(k)) }

// keyString returns a decoded key as a string sharing the envelope's
// memory: the message decoding allocated those bytes for this field
// alone, and Unwrap's caller does not write to the envelope afterwards.
func keyString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// eachOf converts each element of a list by f: a list of keys or of
// nodes, from the wire struct to the protobuf message or back. None is
// nil.
func eachOf[T, U any](xs []T, f func(T) U) []U {
	if len(xs) == 0 {
		return nil
	}
	out := make([]U, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}

// as converts between string types: a node ID and a protobuf string.
func as[U, T ~string](x T) U { return U(x) }
