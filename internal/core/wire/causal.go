package wire

import (
	"strings"

	"github.com/cosla/cosla/internal/core/hlc"
)

// This file holds the messages of causal tables (Karma, DESIGN.md section
// 5): between a client and its datacenter's client coordinator (CC),
// between the CC and the middle men (MM) beside the storage nodes of each
// ring, between MMs of one ring, and between MMs and datacenter caches.
// Every reply repeats the table its request named, so that a node hosting
// several causal tables can route it.

// Version names one write of a causal table's key: the HLC timestamp its
// coordinator gave it, with the coordinator (which names its datacenter)
// as tie-break. The newest version wins (Karma 2.2: concurrent writes to
// one object are ordered deterministically by version).
type Version struct {
	TS     hlc.Timestamp
	Origin NodeID
}

// Compare orders versions: by timestamp, then by origin.
func (v Version) Compare(u Version) int {
	if c := v.TS.Compare(u.TS); c != 0 {
		return c
	}
	return strings.Compare(string(v.Origin), string(u.Origin))
}

// Less reports whether v is older than u.
func (v Version) Less(u Version) bool { return v.Compare(u) < 0 }

// IsZero reports whether v is the version of a key never written.
func (v Version) IsZero() bool { return v == Version{} }

// Dep is a dependency of a put-after or notify-after (Karma 4.1.2): a
// version of a key, read while it was in flight, that the ring must hold
// before the write is applied.
type Dep struct {
	Key     string
	Version Version
}

// Source says where a causal read's value came from (Karma Fig. 3).
type Source uint8

// Sources of a causal read.
const (
	FromRing Source = iota
	FromBuffer
	FromCache
)

func (s Source) String() string {
	switch s {
	case FromBuffer:
		return "write buffer"
	case FromCache:
		return "cache"
	}
	return "ring"
}

// NoRing is a ring index meaning "no ring restriction".
const NoRing int32 = -1

// CausalPut asks the client's coordinator to take a write into the
// session's write buffer: durable at the CC when the reply leaves, and
// propagated to every ring after it (Karma 4.1.2). Seq numbers the
// session's writes from 1 in program order; the CC ignores a Seq it has
// already taken and answers it again. Seen is the newest version the
// session has seen, so the new version is newer (causality crosses keys
// and coordinators). Deps are the in-flight versions the session read
// and has not seen complete: the put-after's dependencies.
//
// Notify makes it a notify-after (Karma 4.2): the same dependencies are
// checked in every ring, nothing is written, and completion is announced
// as for a put. Key and Value are empty then.
type CausalPut struct {
	Req     uint64
	Table   uint64
	Session uint64
	Seq     uint64
	Key     string
	Value   []byte
	Seen    Version
	Deps    []Dep
	Notify  bool
}

// CausalPutReply answers CausalPut with the write's version.
type CausalPutReply struct {
	Req     uint64
	Table   uint64 // the table the request named
	Code    Code
	Version Version
}

// CausalComplete tells a client that its session's writes up to Seq are
// in every ring (Karma 4.2: the completion of a put lifts the ring
// restrictions of the gets before it). It is sent once per write, not
// acknowledged, and may be lost.
type CausalComplete struct {
	Table   uint64
	Session uint64
	Seq     uint64
}

// CausalGet reads a key of a causal table through the client's
// coordinator (Karma Fig. 3). Ring, unless NoRing, restricts the read to
// that ring and bypasses the cache (a dynamic ring restriction). MaxRead
// is the newest version the session has read from outside its write
// buffer: a buffered write newer than it is answered at once, an older
// one only if the stores hold nothing newer.
type CausalGet struct {
	Req     uint64
	Table   uint64
	Session uint64
	Key     string
	Ring    int32
	MaxRead Version
}

// CausalGetReply answers CausalGet: the value, its version, where it came
// from (Source, Ring and Node: the MM, or the cache node), and whether it
// was in flight (not yet in every ring) when read.
type CausalGetReply struct {
	Req      uint64
	Table    uint64 // the table the request named
	Code     Code
	Found    bool
	Value    []byte
	Version  Version
	Source   Source
	Ring     int32
	Node     NodeID
	InFlight bool
}

// CausalGetTx reads several keys as one causally consistent snapshot
// (Karma 4.5), all from one ring: Ring if set, else the coordinator's
// choice.
type CausalGetTx struct {
	Req     uint64
	Table   uint64
	Session uint64
	Keys    []string
	Ring    int32
	MaxRead Version
}

// TxItem is one key's value in a CausalGetTxReply.
type TxItem struct {
	Key      string
	Found    bool
	Value    []byte
	Version  Version
	Source   Source
	InFlight bool
}

// CausalGetTxReply answers CausalGetTx: one item per requested key, in the
// request's order, read from Ring in Rounds rounds.
type CausalGetTxReply struct {
	Req    uint64
	Table  uint64 // the table the request named
	Code   Code
	Items  []TxItem
	Ring   int32
	Rounds int32
}

// Propagate carries a buffered write from a coordinator's per-ring
// propagator to the key's MM in one ring (Karma Fig. 5): a put, or with
// Deps a put-after, or with Notify a notify-after (Key empty, nothing
// written). Client, Session and Seq identify it for the acknowledgement.
type Propagate struct {
	Table   uint64
	Client  NodeID
	Session uint64
	Seq     uint64
	Key     string
	Value   []byte
	Version Version
	Deps    []Dep
	Notify  bool
}

// PropagateAck tells the coordinator that the ring holds the write (or a
// newer version of its key), its dependencies before it, and that the
// caches that held the key have dropped it.
type PropagateAck struct {
	Table   uint64
	Client  NodeID
	Session uint64
	Seq     uint64
	Ring    int32
}

// Stable tells an MM that Version of Key is in every ring (Karma 4.1.2:
// STABLE, after the last ring's acknowledgement). Not acknowledged; a
// lost Stable leaves the version in flight, which is safe.
type Stable struct {
	Table   uint64
	Key     string
	Version Version
}

// Read asks an MM, or a datacenter cache, for its version of Key. Fill
// marks an MM read made by a cache to fill itself: the MM records the
// cache in the key's cached-at set if the version is stable (Karma 4.3).
type Read struct {
	Req   uint64
	Table uint64
	Key   string
	Fill  bool
}

// ReadReply answers Read. From a cache, Source says whether it was a hit
// (FromCache) or fetched on a miss (FromRing, from Node in Ring).
type ReadReply struct {
	Req      uint64
	Table    uint64 // the table the request named
	Code     Code
	Found    bool
	Value    []byte
	Version  Version
	InFlight bool
	Source   Source
	Ring     int32
	Node     NodeID
}

// DepCheck asks an MM of the same ring whether it has processed Version
// of Key (applied it, or found a newer version, after checking its own
// dependencies); the answer comes once it has. Sent to a coordinator, it
// asks whether the coordinator's write Version is complete.
type DepCheck struct {
	Req     uint64
	Table   uint64
	Key     string
	Version Version
}

// DepCheckReply answers DepCheck. Done is false only from a coordinator
// whose write is not yet complete.
type DepCheckReply struct {
	Req   uint64
	Table uint64 // the table the request named
	Done  bool
}

// Invalidate tells a datacenter cache to drop Key's versions older than
// Version (Karma 4.3). An empty Key asks it to drop everything it filled
// from the sending MM, which has restarted and lost its cached-at sets.
type Invalidate struct {
	Req     uint64
	Table   uint64
	Key     string
	Version Version
}

// InvalidateAck answers Invalidate.
type InvalidateAck struct {
	Req   uint64
	Table uint64 // the table the request named
}

func (*CausalPut) isMsg()        {}
func (*CausalPutReply) isMsg()   {}
func (*CausalComplete) isMsg()   {}
func (*CausalGet) isMsg()        {}
func (*CausalGetReply) isMsg()   {}
func (*CausalGetTx) isMsg()      {}
func (*CausalGetTxReply) isMsg() {}
func (*Propagate) isMsg()        {}
func (*PropagateAck) isMsg()     {}
func (*Stable) isMsg()           {}
func (*Read) isMsg()             {}
func (*ReadReply) isMsg()        {}
func (*DepCheck) isMsg()         {}
func (*DepCheckReply) isMsg()    {}
func (*Invalidate) isMsg()       {}
func (*InvalidateAck) isMsg()    {}
