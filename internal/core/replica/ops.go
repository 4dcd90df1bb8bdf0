package replica

import (
	"time"

	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/invariants"
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

// put performs a Put at the primary: assign a timestamp above both the
// node's clock and the session's largest seen timestamp, then log and apply
// the version in one synced batch before answering (Pileus 4.2). A Put
// whose write level (its own or the table's) is above one is pushed to
// every secondary and answered later, by ackWaits or the wait's timer: put
// then returns nil.
func (n *Node) put(from wire.NodeID, m *wire.PutRequest) *wire.PutReply {
	if n.seenPut(from, m.Req) {
		n.metrics.DuplicatePuts++
		return nil // the original's reply answers it
	}
	n.metrics.Puts++
	reply := &wire.PutReply{Req: m.Req}
	tb, code := n.lookup(m.Tablet, m.Key, true)
	switch {
	case code != wire.OK:
		reply.Code = code
	case m.Bound == wire.NoBound && !tb.isPrimary:
		reply.Code = wire.NotPrimary
	default:
		reply.Code = n.checkPut(tb, m)
	}
	if reply.Code != wire.OK {
		n.metrics.PutsRejected++
		return reply
	}
	if m.Bound != wire.NoBound {
		n.stagedPut(from, tb, m)
		return nil
	}
	prev := tb.lastUpdate
	ts, tested, code := n.order(tb, m.Key, m.Value, m.MinTS, m.Test, nil)
	reply.Code, reply.Tested = code, tested
	if code != wire.OK {
		n.metrics.PutsRejected++
		return reply
	}
	if ts.IsZero() {
		return reply // a test that failed: nothing written
	}
	if invariants.Enabled {
		invariants.Check(prev.Less(ts) && m.MinTS.Less(ts),
			"put timestamp %s not above last update %s and session minimum %s", ts, prev, m.MinTS)
	}
	tb.lastUpdate = ts
	reply.TS, reply.Acks = ts, 1
	need := max(int(m.W), tb.writeLevel.Count(1+len(tb.secondaries)))
	n.push(tb, prev, wire.Entry{TS: ts, Key: m.Key, Value: m.Value}, need)
	if need > 1 {
		n.metrics.LevelPuts++
		n.parkWait(tb, &putWait{from: from, req: m.Req, ts: ts, need: need}, max(m.Wait, 0))
		return nil
	}
	return reply
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
	if code != wire.OK {
		reply.Code = code
		return reply
	}
	v, ok, err := n.env.Engine().Get(dataKey(tb.ref, m.Key))
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

// high returns the replica's high timestamp. A primary holds every version
// up to its current time.
func (n *Node) high(tb *tablet) (hlc.Timestamp, bool) {
	if !tb.isPrimary {
		return tb.high, false
	}
	return n.clock.Now(), true
}

// maxClockLead is how far ahead of a node's physical clock a Put's
// session minimum (a timestamp the client learned from another node) may
// be: generous for clocks kept by NTP, our choice. A stored timestamp that
// close to the end of time is corrupt.
const maxClockLead = time.Minute
