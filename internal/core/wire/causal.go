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
	TS     hlc.Timestamp `wire:"1"`
	Origin NodeID        `wire:"2"`
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
	Key     string  `wire:"1"`
	Version Version `wire:"2,omitzero"`
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
//
//wire:envelope 30
type CausalPut struct {
	Req     uint64  `wire:"1"`
	Table   uint64  `wire:"2"`
	Session uint64  `wire:"3"`
	Seq     uint64  `wire:"4"`
	Notify  bool    `wire:"9" trace:",flag"`
	Key     string  `wire:"5" trace:",if=!m.Notify"`
	Value   []byte  `wire:"6" trace:",if=!m.Notify"`
	Seen    Version `wire:"7,omitzero"`
	Deps    []Dep   `wire:"8" trace:",omitzero"`
}

// CausalPutReply answers CausalPut with the write's version.
//
//wire:envelope 31
type CausalPutReply struct {
	Req     uint64  `wire:"1"`
	Table   uint64  `wire:"4"` // the table the request named
	Version Version `wire:"3,omitzero"`
	Code    Code    `wire:"2" trace:"err,omitzero"`
}

// CausalComplete tells a client that its session's writes up to Seq are
// in every ring (Karma 4.2: the completion of a put lifts the ring
// restrictions of the gets before it). It is sent once per write, not
// acknowledged, and may be lost.
//
//wire:envelope 32
type CausalComplete struct {
	Table   uint64 `wire:"1"`
	Session uint64 `wire:"2"`
	Seq     uint64 `wire:"3"`
}

// CausalGet reads a key of a causal table through the client's
// coordinator (Karma Fig. 3). Ring, unless NoRing, restricts the read to
// that ring (a dynamic ring restriction): through the cache, only what it
// filled from that ring (Read's Ring). MaxRead
// is the newest version the session has read from outside its write
// buffer: a buffered write newer than it is answered at once, an older
// one only if the stores hold nothing newer. Deadline is when the client
// stops waiting, read on its physical clock (WallNanos; zero: the
// coordinator's default): a read bound to a ring waits for that ring
// until then instead of failing. Restrictions are the in-flight versions
// that bind the session to Ring: the coordinator lifts those it knows
// stable (Karma 1, 2.3: a restriction ends when the versions become
// stable), and if it lifts them all, the read is no longer bound.
//
//wire:envelope 33
type CausalGet struct {
	Req          uint64        `wire:"1"`
	Table        uint64        `wire:"2"`
	Session      uint64        `wire:"3"`
	Key          string        `wire:"4"`
	Ring         int32         `wire:"5,zigzag" trace:",if=m.Ring != NoRing"`
	MaxRead      Version       `wire:"6,omitzero" trace:"max"`
	Deadline     hlc.Timestamp `wire:"7,omitzero" trace:",omitzero"`
	Restrictions []Dep         `wire:"8" trace:",omitzero"`
}

// CausalGetReply answers CausalGet: the value, its version, where it came
// from (Source, Ring and Node: the MM, or the cache node), and whether it
// was in flight (not yet in every ring) when read. Lifted are the
// request's Restrictions that the coordinator knew stable. Rebound: the
// request was bound to a ring that did not answer, and Ring holds every
// one of its Restrictions (not lifted), so the session is bound to Ring
// from now on.
//
//wire:envelope 34
type CausalGetReply struct {
	Req      uint64  `wire:"1"`
	Table    uint64  `wire:"10"` // the table the request named
	Found    bool    `wire:"3" trace:"not-found,flag,if=!m.Found && m.Code == OK"`
	Value    []byte  `wire:"4" trace:",if=m.Found"`
	Version  Version `wire:"5,omitzero" trace:",if=m.Found"`
	Source   Source  `wire:"6" trace:"from,if=m.Code == OK"`
	Ring     int32   `wire:"7,zigzag" trace:",if=m.Code == OK && m.Ring != NoRing"`
	Node     NodeID  `wire:"8" trace:",omitzero,if=m.Code == OK"`
	InFlight bool    `wire:"9" trace:"in-flight,flag"`
	Lifted   []Dep   `wire:"11" trace:",omitzero"`
	Rebound  bool    `wire:"12" trace:"rebound,flag"`
	Code     Code    `wire:"2" trace:"err,omitzero"`
}

// CausalGetTx reads several keys as one causally consistent snapshot
// (Karma 4.5), all from one ring: Ring if set, else the coordinator's
// choice. Deadline and Restrictions as in CausalGet.
//
//wire:envelope 35
type CausalGetTx struct {
	Req          uint64        `wire:"1"`
	Table        uint64        `wire:"2"`
	Session      uint64        `wire:"3"`
	Keys         []string      `wire:"4"`
	Ring         int32         `wire:"5,zigzag" trace:",if=m.Ring != NoRing"`
	MaxRead      Version       `wire:"6,omitzero" trace:"max"`
	Deadline     hlc.Timestamp `wire:"7,omitzero" trace:",omitzero"`
	Restrictions []Dep         `wire:"8" trace:",omitzero"`
}

// TxItem is one key's value in a CausalGetTxReply.
type TxItem struct {
	Key      string  `wire:"1"`
	Found    bool    `wire:"2"`
	Value    []byte  `wire:"3"`
	Version  Version `wire:"4,omitzero"`
	Source   Source  `wire:"5"`
	InFlight bool    `wire:"6"`
}

// CausalGetTxReply answers CausalGetTx: one item per requested key, in the
// request's order, read from Ring in Rounds rounds. Lifted and Rebound as
// in CausalGetReply.
//
//wire:envelope 36
type CausalGetTxReply struct {
	Req     uint64   `wire:"1"`
	Table   uint64   `wire:"6"` // the table the request named
	Ring    int32    `wire:"4,zigzag" trace:",if=m.Ring != NoRing"`
	Rounds  int32    `wire:"5"`
	Items   []TxItem `wire:"3"`
	Lifted  []Dep    `wire:"7" trace:",omitzero"`
	Rebound bool     `wire:"8" trace:"rebound,flag"`
	Code    Code     `wire:"2" trace:"err,omitzero"`
}

// Propagate carries a buffered write from a coordinator's per-ring
// propagator to the key's MM in one ring (Karma Fig. 5): a put, or with
// Deps a put-after, or with Notify a notify-after (Key empty, nothing
// written). Client, Session and Seq identify it for the acknowledgement.
//
//wire:envelope 37
type Propagate struct {
	Table   uint64  `wire:"1"`
	Client  NodeID  `wire:"9" trace:"session"`
	Session uint64  `wire:"2" trace:"#,join"`
	Seq     uint64  `wire:"3"`
	Notify  bool    `wire:"8" trace:",flag"`
	Key     string  `wire:"4" trace:",if=!m.Notify"`
	Value   []byte  `wire:"5" trace:",if=!m.Notify"`
	Version Version `wire:"6,omitzero"`
	Deps    []Dep   `wire:"7" trace:",omitzero"`
}

// PropagateAck tells the coordinator that the ring holds the write (or a
// newer version of its key), its dependencies before it, and that the
// caches that held the key have dropped it.
//
//wire:envelope 38
type PropagateAck struct {
	Table   uint64 `wire:"1"`
	Client  NodeID `wire:"5" trace:"session"`
	Session uint64 `wire:"2" trace:"#,join"`
	Seq     uint64 `wire:"3"`
	Ring    int32  `wire:"4,zigzag"`
}

// Stable tells an MM that Version of Key is in every ring (Karma 4.1.2:
// STABLE, after the last ring's acknowledgement). Not acknowledged; a
// lost Stable leaves the version in flight, which is safe.
//
//wire:envelope 39
type Stable struct {
	Table   uint64  `wire:"1"`
	Key     string  `wire:"2"`
	Version Version `wire:"3,omitzero"`
}

// Read asks an MM, or a datacenter cache, for its version of Key. Fill
// marks an MM read made by a cache to fill itself: the MM records the
// cache in the key's cached-at set (Karma 4.3). Deadline is when the
// sender stops waiting for the answer, read on its physical clock
// (WallNanos; zero: never): a node that comes to the read later drops
// it, since no one would take the answer, so that a slow node's queue
// holds no work already given up.
//
// Sent to a cache for a session restricted to a ring, Ring is that ring
// (else NoRing) and Min the newest version of Key the session read in
// flight (zero: none): the cache answers only with a version it filled
// from Ring and no older than Min, and fills from Ring on a miss. A cache
// keeps only stable versions, so a version it serves binds no session.
//
//wire:envelope 40
type Read struct {
	Req      uint64        `wire:"1"`
	Table    uint64        `wire:"2"`
	Key      string        `wire:"3"`
	Fill     bool          `wire:"4" trace:",flag"`
	Deadline hlc.Timestamp `wire:"5,omitzero" trace:",omitzero"`
	Ring     int32         `wire:"6,zigzag" trace:",if=m.Ring != NoRing"`
	Min      Version       `wire:"7,omitzero" trace:",omitzero"`
}

// ReadReply answers Read. From a cache, Source says whether it was a hit
// (FromCache) or fetched on a miss (FromRing, from Node in Ring).
//
//wire:envelope 41
type ReadReply struct {
	Req      uint64  `wire:"1"`
	Table    uint64  `wire:"10"` // the table the request named
	Found    bool    `wire:"3" trace:"not-found,flag,if=!m.Found && m.Code == OK"`
	Value    []byte  `wire:"4" trace:",if=m.Found"`
	Version  Version `wire:"5,omitzero" trace:",if=m.Found"`
	Source   Source  `wire:"7" trace:"from,if=m.Code == OK"`
	Ring     int32   `wire:"8,zigzag" trace:",if=m.Code == OK && m.Ring != NoRing"`
	Node     NodeID  `wire:"9" trace:",omitzero,if=m.Code == OK"`
	InFlight bool    `wire:"6" trace:"in-flight,flag"`
	Code     Code    `wire:"2" trace:"err,omitzero"`
}

// DepCheck asks an MM of the same ring whether it has processed Version
// of Key (applied it, or found a newer version, after checking its own
// dependencies); the answer comes once it has. Sent to a coordinator, it
// asks whether the coordinator's write Version is complete; with Watch
// (from another coordinator, to lift the ring restrictions Version
// causes, or from an MM waiting for a version it does not remember),
// the answer comes once it is. Sent with Watch by a coordinator to an
// MM, it asks to be told once Version is stable there (its coordinator's
// STABLE came); the answer is not Done at once if the MM holds a newer
// version and no longer knows.
//
//wire:envelope 42
type DepCheck struct {
	Req     uint64  `wire:"1"`
	Table   uint64  `wire:"2"`
	Key     string  `wire:"3"`
	Version Version `wire:"4,omitzero"`
	Watch   bool    `wire:"5" trace:",flag"`
}

// DepCheckReply answers DepCheck. Done is false only from a coordinator
// whose write is not yet complete.
//
//wire:envelope 43
type DepCheckReply struct {
	Req   uint64 `wire:"1"`
	Table uint64 `wire:"3"` // the table the request named
	Done  bool   `wire:"2"`
}

// Invalidate tells a datacenter cache to drop Key's versions older than
// Version (Karma 4.3). An empty Key asks it to drop everything it filled
// from the sending MM, which has restarted and lost its cached-at sets.
//
//wire:envelope 44
type Invalidate struct {
	Req     uint64  `wire:"1"`
	Table   uint64  `wire:"2"`
	Key     string  `wire:"3"`
	Version Version `wire:"4,omitzero"`
}

// InvalidateAck answers Invalidate.
//
//wire:envelope 45
type InvalidateAck struct {
	Req   uint64 `wire:"1"`
	Table uint64 `wire:"2"` // the table the request named
}
