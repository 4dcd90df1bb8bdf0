package wire

import (
	"math/bits"

	"github.com/cosla/cosla/internal/core/hlc"
)

// NodeKinds are the kinds of the messages a node serves: the requests of
// clients and, from the replication protocol (Pileus 4.2), the pulls and
// push acknowledgements a primary handles and the pull replies, pushes
// and read repairs a secondary answers, and from staged writes
// (dConssandra 3) the forwards a primary orders and the acknowledgements
// the receiving replica takes. Of causal tables (Karma), a client
// coordinator serves the causal puts, gets and get-transactions of
// clients and the dependency checks of middle men, and takes the
// propagate acknowledgements and read replies of middle men and caches;
// a middle man serves propagates, stable notices, reads and dependency
// checks, and takes the dependency-check replies of its peers and the
// invalidate acknowledgements of caches; a cache serves reads and
// invalidates, and takes the read replies that fill it. Of the
// configuration service (DESIGN.md section 10), members exchange raft
// messages and serve lease renewals, high-timestamp replies, epoch
// acknowledgements and clients' utility reports; storage nodes serve
// high-timestamp requests and epoch changes and take lease grants. The others are
// replies, and the notices (Resolved of staged writes, CausalComplete of
// causal puts), that a client receives.
var NodeKinds = []string{
	"create-table", "delete-table", "table-info",
	"put", "get", "probe",
	"pull", "pull-reply", "push", "push-ack", "repair",
	"forward", "forward-ack",
	"causal-put", "causal-get", "causal-get-tx",
	"propagate", "propagate-ack", "stable",
	"read", "read-reply",
	"dep-check", "dep-check-reply",
	"invalidate", "invalidate-ack",
	"config-raft", "lease-renew", "lease-grant", "high", "high-reply", "epoch-change", "epoch-ack", "utility-report", "reconfigure",
}

// Kind returns a short stable name of the message's type, one of Kinds,
// or "unknown" for nil. The simulator keys its per-kind service times by
// it.
func Kind(m Msg) string {
	if m == nil {
		return "unknown"
	}
	return kinds[m.envelopeField()]
}

// Size returns the size in bytes of the message's protobuf envelope
// (wirepb.Envelope, see wirepb/wire.proto) with empty addresses; 0 for
// nil. The message's size method, generated from its definition as
// wirepb's conversions are (wirepb/wiregen), follows the encoding field
// by field, so the size is exact without encoding anything: it neither
// allocates nor imports the protobuf runtime. Framing below the envelope
// (DRPC's frame headers, TLS records, TCP/IP headers) is not
// counted. EnvelopeSize adds the addresses.
func Size(m Msg) int {
	if m == nil {
		return 0
	}
	return msgField(m.envelopeField(), m.size())
}

// EnvelopeSize is Size plus the envelope's from and to fields.
func EnvelopeSize(from, to NodeID, m Msg) int {
	n := Size(m)
	if n == 0 {
		return 0
	}
	return n + bytesField(1, len(from)) + bytesField(2, len(to))
}

// tsField is a Timestamp submessage, which is always present but in the
// fields tagged omitzero (PullRequest.SnapshotHigh).
func tsField(field int, t hlc.Timestamp) int {
	return msgField(field, uintField(1, uint64(t.WallNanos))+uintField(2, uint64(t.Logical)))
}

// The helpers below size proto3 fields: scalars at their zero value and
// empty strings are left out; submessages are always present (the
// generated size methods leave out the optional ones).

func varintLen(v uint64) int { return (bits.Len64(v|1) + 6) / 7 }

func tagLen(field int) int { return varintLen(uint64(field) << 3) }

func uintField(field int, v uint64) int {
	if v == 0 {
		return 0
	}
	return tagLen(field) + varintLen(v)
}

// sintField is a sint32, zigzag-encoded: a small negative number, such
// as NoRing, takes one byte.
func sintField(field int, v int32) int {
	return uintField(field, uint64(uint32(v<<1)^uint32(v>>31)))
}

func boolField(field int, v bool) int {
	if !v {
		return 0
	}
	return tagLen(field) + 1
}

func bytesField(field, n int) int {
	if n == 0 {
		return 0
	}
	return msgField(field, n)
}

func msgField(field, n int) int { return tagLen(field) + varintLen(uint64(n)) + n }

// stringsField is a repeated string or bytes field, which keeps empty
// elements.
func stringsField[S ~string](field int, ss []S) int {
	n := 0
	for _, s := range ss {
		n += msgField(field, len(s))
	}
	return n
}
