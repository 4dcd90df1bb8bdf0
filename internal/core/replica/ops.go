package replica

import (
	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/wire"
)

// lookup finds the tablet a request addresses and checks, if checkKey,
// that key lies in its range.
func (n *Node) lookup(ref wire.TabletRef, key string, checkKey bool) (*tablet, wire.Code) {
	tb := n.tablet(ref)
	if tb == nil {
		n.metrics.RequestsForNoTable++
		return nil, wire.NoTable
	}
	if checkKey && !tb.holds(key) {
		n.metrics.RequestsForWrongTablet++
		return nil, wire.WrongTablet
	}
	return tb, wire.OK
}

// holds reports whether key belongs in the tablet. It does not allocate.
func (tb *tablet) holds(key string) bool {
	pos := key
	if tb.partition == wire.ByHash {
		p := wire.HashPosition(key)
		pos = string(p[:])
	}
	return pos >= tb.start && (tb.end == "" || pos < tb.end)
}

// serveGet answers a Get, or starts a bounded one.
func (n *Node) serveGet(from wire.NodeID, m *wire.GetRequest) {
	n.metrics.Gets++
	tb, code := n.lookup(m.Tablet, m.Key, true)
	switch {
	case code != wire.OK:
	case !m.Bound.Valid() || m.Budget < 0:
		code = wire.Invalid
	case m.Bound != wire.NoBound:
		n.boundedGet(from, tb, m)
		return
	}
	if code != wire.OK {
		n.env.Send(from, &wire.GetReply{Req: m.Req, Code: code})
		return
	}
	n.env.Send(from, n.get(m))
}

// get reads the replica's version of the key.
func (n *Node) get(m *wire.GetRequest) *wire.GetReply {
	reply := &wire.GetReply{Req: m.Req}
	tb, code := n.lookup(m.Tablet, m.Key, true)
	if code == wire.OK && !tb.recover.IsZero() {
		code = wire.Behind
	}
	if code != wire.OK {
		reply.Code = code
		return reply
	}
	n.getKey = appendDataKey(n.getKey[:0], tb.ref, m.Key)
	v, ok, err := n.env.Engine().Get(n.getKey)
	if err == nil && ok {
		reply.VersionTS, reply.Value, err = decodeVersion(v)
		reply.Found = true
	}
	if err != nil {
		n.storageError(err)
		return &wire.GetReply{Req: m.Req, Code: wire.StorageFailed}
	}
	reply.HighTS, reply.Primary = n.high(tb)
	return reply
}

func (n *Node) probe(m *wire.ProbeRequest) *wire.ProbeReply {
	n.metrics.Probes++
	reply := &wire.ProbeReply{Req: m.Req}
	tb, code := n.lookup(m.Tablet, "", false)
	if code != wire.OK {
		reply.Code = code
		return reply
	}
	reply.HighTS, reply.Primary = n.high(tb)
	return reply
}

// high returns the replica's high timestamp and whether it answers as
// the primary. A primary holds every version up to its current time,
// while its lease holds (DESIGN.md section 10); a governed primary
// without one may have been deposed, and a new primary may have ordered
// versions below its clock: it vouches only for its epoch's start, which
// every replica's history shares, and not as the primary.
func (n *Node) high(tb *tablet) (hlc.Timestamp, bool) {
	switch {
	case !tb.isPrimary:
		return tb.high, false
	case !n.leased(tb):
		return tb.epochStart, false
	}
	return n.clock.Now(), true
}
