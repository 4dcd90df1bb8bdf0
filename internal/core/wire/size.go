package wire

import (
	"math/bits"

	"github.com/cosla/cosla/internal/core/hlc"
)

// Kinds names every message type, as Kind does, in the order of the
// envelope's fields in wirepb/wire.proto.
var Kinds = []string{
	"create-table", "create-table-reply",
	"delete-table", "delete-table-reply",
	"table-info", "table-info-reply",
	"put", "put-reply",
	"get", "get-reply",
	"probe", "probe-reply",
	"pull", "pull-reply",
	"push", "push-ack", "repair",
	"forward", "forward-ack", "resolved",
	"causal-put", "causal-put-reply", "causal-complete",
	"causal-get", "causal-get-reply",
	"causal-get-tx", "causal-get-tx-reply",
	"propagate", "propagate-ack", "stable",
	"read", "read-reply",
	"dep-check", "dep-check-reply",
	"invalidate", "invalidate-ack",
	"repair-reply",
}

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
// invalidates, and takes the read replies that fill it. The others are
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
}

// Kind returns a short stable name of the message's type, one of Kinds,
// or "unknown". The simulator keys its per-kind service times by it.
func Kind(m Msg) string {
	switch m.(type) {
	case *CreateTableRequest:
		return "create-table"
	case *CreateTableReply:
		return "create-table-reply"
	case *DeleteTableRequest:
		return "delete-table"
	case *DeleteTableReply:
		return "delete-table-reply"
	case *TableInfoRequest:
		return "table-info"
	case *TableInfoReply:
		return "table-info-reply"
	case *PutRequest:
		return "put"
	case *PutReply:
		return "put-reply"
	case *GetRequest:
		return "get"
	case *GetReply:
		return "get-reply"
	case *ProbeRequest:
		return "probe"
	case *ProbeReply:
		return "probe-reply"
	case *PullRequest:
		return "pull"
	case *PullReply:
		return "pull-reply"
	case *Push:
		return "push"
	case *PushAck:
		return "push-ack"
	case *Repair:
		return "repair"
	case *RepairReply:
		return "repair-reply"
	case *Forward:
		return "forward"
	case *ForwardAck:
		return "forward-ack"
	case *Resolved:
		return "resolved"
	case *CausalPut:
		return "causal-put"
	case *CausalPutReply:
		return "causal-put-reply"
	case *CausalComplete:
		return "causal-complete"
	case *CausalGet:
		return "causal-get"
	case *CausalGetReply:
		return "causal-get-reply"
	case *CausalGetTx:
		return "causal-get-tx"
	case *CausalGetTxReply:
		return "causal-get-tx-reply"
	case *Propagate:
		return "propagate"
	case *PropagateAck:
		return "propagate-ack"
	case *Stable:
		return "stable"
	case *Read:
		return "read"
	case *ReadReply:
		return "read-reply"
	case *DepCheck:
		return "dep-check"
	case *DepCheckReply:
		return "dep-check-reply"
	case *Invalidate:
		return "invalidate"
	case *InvalidateAck:
		return "invalidate-ack"
	}
	return "unknown"
}

// Size returns the size in bytes of the message's protobuf envelope
// (wirepb.Envelope, see wirepb/wire.proto) with empty addresses; 0 for a
// nil or unknown message. It follows the encoding of wirepb.Wrap field by
// field, so it is exact for every message Wrap encodes, without encoding
// anything: it neither allocates nor imports the protobuf runtime. Framing
// below the envelope (gRPC's 5-byte length prefix, HTTP/2 frames, TCP/IP
// headers) is not counted. EnvelopeSize adds the addresses.
func Size(m Msg) int {
	field, body := envelopeField(m)
	if field == 0 {
		return 0
	}
	return msgField(field, body)
}

// EnvelopeSize is Size plus the envelope's from and to fields.
func EnvelopeSize(from, to NodeID, m Msg) int {
	n := Size(m)
	if n == 0 {
		return 0
	}
	return n + bytesField(1, len(from)) + bytesField(2, len(to))
}

// envelopeField returns the number of the envelope's field that carries m
// and the size of m's own encoding. A nil pointer counts as an empty
// message.
func envelopeField(m Msg) (field, body int) {
	switch m := m.(type) {
	case *CreateTableRequest:
		if m != nil {
			body = uintField(1, m.Req) + msgField(2, layoutSize(&m.Layout))
		}
		return 10, body
	case *CreateTableReply:
		if m != nil {
			body = uintField(1, m.Req) + uintField(2, uint64(m.Code))
		}
		return 11, body
	case *DeleteTableRequest:
		if m != nil {
			body = uintField(1, m.Req) + bytesField(2, len(m.Name))
		}
		return 12, body
	case *DeleteTableReply:
		if m != nil {
			body = uintField(1, m.Req) + uintField(2, uint64(m.Code))
		}
		return 13, body
	case *TableInfoRequest:
		if m != nil {
			body = uintField(1, m.Req) + bytesField(2, len(m.Name))
		}
		return 14, body
	case *TableInfoReply:
		if m != nil {
			body = uintField(1, m.Req) + uintField(2, uint64(m.Code)) + msgField(3, layoutSize(&m.Layout))
		}
		return 15, body
	case *PutRequest:
		if m != nil {
			body = uintField(1, m.Req) + msgField(2, refSize(m.Tablet)) + bytesField(3, len(m.Key)) +
				bytesField(4, len(m.Value)) + tsField(5, m.MinTS) +
				uintField(6, uint64(int64(m.W))) + uintField(7, uint64(m.Wait)) +
				uintField(8, uint64(m.Bound)) + uintField(9, uint64(m.Budget)) + testField(10, m.Test)
		}
		return 16, body
	case *PutReply:
		if m != nil {
			body = uintField(1, m.Req) + uintField(2, uint64(m.Code)) + tsField(3, m.TS) +
				uintField(4, uint64(int64(m.Acks))) + uintField(5, uint64(m.Stage)) +
				uintField(6, m.WriteID) + nodesField(7, m.Holders) + uintField(8, uint64(m.Tested))
		}
		return 17, body
	case *GetRequest:
		if m != nil {
			body = uintField(1, m.Req) + msgField(2, refSize(m.Tablet)) + bytesField(3, len(m.Key)) +
				uintField(4, uint64(m.Bound)) + uintField(5, uint64(m.Budget))
		}
		return 18, body
	case *GetReply:
		if m != nil {
			body = uintField(1, m.Req) + uintField(2, uint64(m.Code)) + boolField(3, m.Found) +
				bytesField(4, len(m.Value)) + tsField(5, m.VersionTS) +
				tsField(6, m.HighTS) + boolField(7, m.Primary) +
				uintField(8, uint64(int64(m.Applied))) + uintField(9, uint64(int64(m.Pending))) + boolField(10, m.Null)
		}
		return 19, body
	case *ProbeRequest:
		if m != nil {
			body = uintField(1, m.Req) + msgField(2, refSize(m.Tablet))
		}
		return 20, body
	case *ProbeReply:
		if m != nil {
			body = uintField(1, m.Req) + uintField(2, uint64(m.Code)) +
				tsField(3, m.HighTS) + boolField(4, m.Primary)
		}
		return 21, body
	case *PullRequest:
		if m != nil {
			body = msgField(1, refSize(m.Tablet)) + tsField(2, m.Since) +
				boolField(3, m.InSnapshot) + bytesField(5, len(m.SnapshotAfter))
			if !m.SnapshotHigh.IsZero() {
				body += tsField(4, m.SnapshotHigh) // left out when zero
			}
		}
		return 22, body
	case *PullReply:
		if m != nil {
			body = msgField(1, refSize(m.Tablet)) + uintField(2, uint64(m.Code)) +
				tsField(3, m.Since) + tsField(4, m.High) +
				boolField(6, m.More) + boolField(7, m.Snapshot) + boolField(8, m.InSnapshot) +
				bytesField(9, len(m.SnapshotAfter)) + bytesField(10, len(m.SnapshotLast))
			for i := range m.Entries {
				body += msgField(5, entrySize(&m.Entries[i]))
			}
		}
		return 23, body
	case *Push:
		if m != nil {
			body = msgField(1, refSize(m.Tablet)) + tsField(2, m.Prev) +
				msgField(3, entrySize(&m.Entry)) + boolField(4, m.Ack)
		}
		return 24, body
	case *PushAck:
		if m != nil {
			body = msgField(1, refSize(m.Tablet)) + tsField(2, m.High)
		}
		return 25, body
	case *Repair:
		if m != nil {
			body = msgField(1, refSize(m.Tablet)) + uintField(3, m.Req) + tsField(4, m.TS)
		}
		return 26, body
	case *RepairReply:
		if m != nil {
			body = uintField(1, m.Req) + uintField(2, uint64(m.Code)) + tsField(3, m.High)
		}
		return 46, body
	case *Forward:
		if m != nil {
			body = msgField(1, refSize(m.Tablet)) + uintField(2, m.Seq) + bytesField(3, len(m.Key)) +
				bytesField(4, len(m.Value)) + tsField(5, m.MinTS) +
				uintField(6, uint64(int64(m.W))) + uintField(7, uint64(m.Wait)) + testField(8, m.Test)
		}
		return 27, body
	case *ForwardAck:
		if m != nil {
			body = msgField(1, refSize(m.Tablet)) + uintField(2, m.Seq) + uintField(3, uint64(m.Code)) +
				tsField(4, m.TS) + uintField(5, uint64(int64(m.Acks))) + nodesField(6, m.Holders) +
				uintField(7, uint64(m.Tested))
		}
		return 28, body
	case *Resolved:
		if m != nil {
			body = msgField(1, refSize(m.Tablet)) + uintField(2, m.WriteID) + uintField(3, uint64(m.Code)) +
				tsField(4, m.TS)
		}
		return 29, body
	case *CausalPut:
		if m != nil {
			body = uintField(1, m.Req) + uintField(2, m.Table) + uintField(3, m.Session) + uintField(4, m.Seq) +
				bytesField(5, len(m.Key)) + bytesField(6, len(m.Value)) + versionField(7, m.Seen) +
				depsField(8, m.Deps) + boolField(9, m.Notify)
		}
		return 30, body
	case *CausalPutReply:
		if m != nil {
			body = uintField(1, m.Req) + uintField(2, uint64(m.Code)) + versionField(3, m.Version) + uintField(4, m.Table)
		}
		return 31, body
	case *CausalComplete:
		if m != nil {
			body = uintField(1, m.Table) + uintField(2, m.Session) + uintField(3, m.Seq)
		}
		return 32, body
	case *CausalGet:
		if m != nil {
			body = uintField(1, m.Req) + uintField(2, m.Table) + uintField(3, m.Session) + bytesField(4, len(m.Key)) +
				sintField(5, m.Ring) + versionField(6, m.MaxRead)
		}
		return 33, body
	case *CausalGetReply:
		if m != nil {
			body = uintField(1, m.Req) + uintField(2, uint64(m.Code)) + boolField(3, m.Found) +
				bytesField(4, len(m.Value)) + versionField(5, m.Version) + uintField(6, uint64(m.Source)) +
				sintField(7, m.Ring) + bytesField(8, len(m.Node)) + boolField(9, m.InFlight) + uintField(10, m.Table)
		}
		return 34, body
	case *CausalGetTx:
		if m != nil {
			body = uintField(1, m.Req) + uintField(2, m.Table) + uintField(3, m.Session) +
				sintField(5, m.Ring) + versionField(6, m.MaxRead)
			for _, k := range m.Keys {
				body += msgField(4, len(k)) // a repeated string keeps empty elements
			}
		}
		return 35, body
	case *CausalGetTxReply:
		if m != nil {
			body = uintField(1, m.Req) + uintField(2, uint64(m.Code)) +
				sintField(4, m.Ring) + uintField(5, uint64(int64(m.Rounds))) + uintField(6, m.Table)
			for i := range m.Items {
				it := &m.Items[i]
				body += msgField(3, bytesField(1, len(it.Key))+boolField(2, it.Found)+bytesField(3, len(it.Value))+
					versionField(4, it.Version)+uintField(5, uint64(it.Source))+boolField(6, it.InFlight))
			}
		}
		return 36, body
	case *Propagate:
		if m != nil {
			body = uintField(1, m.Table) + uintField(2, m.Session) + uintField(3, m.Seq) +
				bytesField(4, len(m.Key)) + bytesField(5, len(m.Value)) + versionField(6, m.Version) +
				depsField(7, m.Deps) + boolField(8, m.Notify) + bytesField(9, len(m.Client))
		}
		return 37, body
	case *PropagateAck:
		if m != nil {
			body = uintField(1, m.Table) + uintField(2, m.Session) + uintField(3, m.Seq) + sintField(4, m.Ring) +
				bytesField(5, len(m.Client))
		}
		return 38, body
	case *Stable:
		if m != nil {
			body = uintField(1, m.Table) + bytesField(2, len(m.Key)) + versionField(3, m.Version)
		}
		return 39, body
	case *Read:
		if m != nil {
			body = uintField(1, m.Req) + uintField(2, m.Table) + bytesField(3, len(m.Key)) + boolField(4, m.Fill)
		}
		return 40, body
	case *ReadReply:
		if m != nil {
			body = uintField(1, m.Req) + uintField(2, uint64(m.Code)) + boolField(3, m.Found) +
				bytesField(4, len(m.Value)) + versionField(5, m.Version) + boolField(6, m.InFlight) +
				uintField(7, uint64(m.Source)) + sintField(8, m.Ring) + bytesField(9, len(m.Node)) + uintField(10, m.Table)
		}
		return 41, body
	case *DepCheck:
		if m != nil {
			body = uintField(1, m.Req) + uintField(2, m.Table) + bytesField(3, len(m.Key)) + versionField(4, m.Version)
		}
		return 42, body
	case *DepCheckReply:
		if m != nil {
			body = uintField(1, m.Req) + boolField(2, m.Done) + uintField(3, m.Table)
		}
		return 43, body
	case *Invalidate:
		if m != nil {
			body = uintField(1, m.Req) + uintField(2, m.Table) + bytesField(3, len(m.Key)) + versionField(4, m.Version)
		}
		return 44, body
	case *InvalidateAck:
		if m != nil {
			body = uintField(1, m.Req) + uintField(2, m.Table)
		}
		return 45, body
	}
	return 0, 0
}

// versionField is a causal table's Version submessage, absent when zero
// (wirepb leaves out the version of a key never written).
func versionField(field int, v Version) int {
	if v.IsZero() {
		return 0
	}
	return msgField(field, tsField(1, v.TS)+bytesField(2, len(v.Origin)))
}

// depsField is a repeated Dep: a key and its version.
func depsField(field int, deps []Dep) int {
	n := 0
	for i := range deps {
		n += msgField(field, bytesField(1, len(deps[i].Key))+versionField(2, deps[i].Version))
	}
	return n
}

func layoutSize(l *Layout) int {
	n := bytesField(1, len(l.Name)) + uintField(2, l.ID) +
		uintField(4, uint64(l.Replication.Mode)) + uintField(5, uint64(l.Replication.Interval)) +
		uintField(6, uint64(l.Partition)) + uintField(7, uint64(int64(l.WriteLevel)))
	for i := range l.Tablets {
		t := &l.Tablets[i]
		tn := bytesField(1, len(t.Start)) + bytesField(2, len(t.Primary))
		for _, s := range t.Secondaries {
			tn += msgField(3, len(s)) // a repeated string keeps empty elements
		}
		n += msgField(3, tn)
	}
	if c := l.Causal; c != nil {
		cn := nodesField(2, c.Coordinators) + nodesField(3, c.Caches) + uintField(4, uint64(int64(c.Points))) + boolField(5, c.Static)
		for i := range c.Rings {
			r := &c.Rings[i]
			cn += msgField(1, bytesField(1, len(r.Name))+nodesField(2, r.Nodes))
		}
		n += msgField(8, cn) // present, even when empty
	}
	return n
}

// testField is a ReadTestWrite's Test submessage, absent when nil.
func testField(field int, t *Test) int {
	if t == nil {
		return 0
	}
	return msgField(field, bytesField(1, len(t.Key))+boolField(2, t.Found)+bytesField(3, len(t.Value)))
}

// nodesField is a repeated string of node IDs, which keeps empty
// elements.
func nodesField(field int, nodes []NodeID) int {
	n := 0
	for _, id := range nodes {
		n += msgField(field, len(id))
	}
	return n
}

func entrySize(e *Entry) int {
	return tsField(1, e.TS) + bytesField(2, len(e.Key)) + bytesField(3, len(e.Value))
}

// refSize is the size of a TabletRef. A negative int32 takes ten bytes, as
// protobuf sign-extends it.
func refSize(r TabletRef) int {
	return uintField(1, r.Table) + uintField(2, uint64(int64(r.Tablet)))
}

// tsField is a Timestamp submessage, which Wrap always sets (but for
// PullRequest.SnapshotHigh, set only when not zero).
func tsField(field int, t hlc.Timestamp) int {
	return msgField(field, uintField(1, uint64(t.WallNanos))+uintField(2, uint64(t.Logical)))
}

// The helpers below size proto3 fields: scalars at their zero value and
// empty strings are left out; submessages are always present (callers
// leave out the optional ones, as testField does).

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
