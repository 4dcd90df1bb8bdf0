package causal

import (
	"slices"

	"github.com/cosla/cosla/internal/core/invariants"
	"github.com/cosla/cosla/internal/core/wire"
)

// Session is a client session's causal state (a Karma thread, Karma 2.2),
// kept at the client so that no coordinator crash loses it: the newest
// versions it has seen and read, the in-flight versions it read (its
// dependencies and dynamic ring restrictions, Karma 4.2) and the ring it
// is bound to while any is held. A session issues one operation at a time.
type Session struct {
	id uint64
	// seq is the last write sequence number given out, acked the last
	// one acknowledged.
	seq, acked uint64
	// seen is the newest version the session has seen: written or read.
	seen wire.Version
	// maxRead is the newest version read from outside the write buffer.
	maxRead wire.Version
	// ring is the ring the session is bound to, or NoRing.
	ring  int32
	items []restriction
}

// restriction is one in-flight version the session read: a dependency of
// its next writes and, while held, a restriction to ring (Karma 4.2).
// It lifts when the version becomes stable (Karma 1, 2.3), which the
// session learns in one of three ways: its coordinator says so on a
// later read's reply (stability.go); the session reads that very version
// stable; or the session's write with sequence number after or later
// completes (Karma 4.2: that write was issued after the read, and
// completes only once the version is in every ring).
type restriction struct {
	dep   wire.Dep
	ring  int32
	after uint64
}

// NewSession returns a session numbered id.
func NewSession(id uint64) *Session { return &Session{id: id, ring: wire.NoRing} }

// ID returns the session's number.
func (s *Session) ID() uint64 { return s.id }

// Ring returns the ring the session is bound to, or NoRing.
func (s *Session) Ring() int32 { return s.ring }

// Restrictions returns how many in-flight reads still bind the session.
func (s *Session) Restrictions() int { return len(s.items) }

// Put returns the request for a write of key, or with notify true a
// notify-after (key and value empty). A write's dependencies are the
// restrictions taken since the session's last acknowledged write: that
// write's coordinator checked the earlier ones in every ring before
// applying it there, and applies this one after it (put-after's
// dependencies are those still in flight, Karma 4.1.2). A notify-after
// carries every restriction, to lift them all.
func (s *Session) Put(table uint64, key string, value []byte, notify bool) *wire.CausalPut {
	s.seq++
	m := &wire.CausalPut{Table: table, Session: s.id, Seq: s.seq, Key: key, Value: value, Seen: s.seen, Notify: notify}
	for _, it := range s.items {
		if notify || it.after > s.acked {
			m.Deps = append(m.Deps, it.dep)
		}
	}
	return m
}

// PutDone records the acknowledged version of the write numbered seq.
func (s *Session) PutDone(seq uint64, v wire.Version) {
	s.see(v)
	s.acked = max(s.acked, seq)
}

func (s *Session) see(v wire.Version) {
	if s.seen.Less(v) {
		s.seen = v
	}
}

// Get returns the request for a read of key.
func (s *Session) Get(table uint64, key string) *wire.CausalGet {
	return &wire.CausalGet{Table: table, Session: s.id, Key: key, Ring: s.ring, MaxRead: s.maxRead, Restrictions: s.restrictions()}
}

// GetTx returns the request for a get-transaction of keys.
func (s *Session) GetTx(table uint64, keys []string) *wire.CausalGetTx {
	return &wire.CausalGetTx{Table: table, Session: s.id, Keys: keys, Ring: s.ring, MaxRead: s.maxRead, Restrictions: s.restrictions()}
}

// restrictions are the versions that bind the session, for its
// coordinator to lift those it knows stable.
func (s *Session) restrictions() []wire.Dep {
	if len(s.items) == 0 {
		return nil
	}
	deps := make([]wire.Dep, len(s.items))
	for i, it := range s.items {
		deps[i] = it.dep
	}
	return deps
}

// Lift drops the restrictions of the versions the coordinator reported
// stable.
func (s *Session) Lift(stable []wire.Dep) {
	if len(stable) == 0 {
		return
	}
	s.items = slices.DeleteFunc(s.items, func(it restriction) bool { return slices.Contains(stable, it.dep) })
	s.rebind()
}

// Rebind moves the session's restrictions to ring r, which its
// coordinator found holds every one of named, the restrictions a request
// named (wire.CausalGetReply's Rebound). If the session holds another
// since, it stays bound where it is.
func (s *Session) Rebind(r int32, named []wire.Dep) {
	for _, it := range s.items {
		if !slices.Contains(named, it.dep) {
			return
		}
	}
	if len(s.items) == 0 {
		return
	}
	for i := range s.items {
		s.items[i].ring = r
	}
	s.ring = r
}

// Read records a version read: from the write buffer it is the session's
// own and binds nothing; from a ring while in flight it binds the session
// to that ring (Karma 4.2) and becomes a dependency; stable it binds
// nothing, and lifts the restriction of that very version if held.
func (s *Session) Read(key string, found bool, v wire.Version, source wire.Source, ring int32, inFlight bool) {
	s.see(v)
	if source == wire.FromBuffer {
		return
	}
	if s.maxRead.Less(v) {
		s.maxRead = v
	}
	if !found {
		return
	}
	if !inFlight {
		// A stable version's causal past is in every ring. Only that
		// very version lifts its restriction: a newer stable version of
		// the key says nothing of the older one's dependencies.
		for i, it := range s.items {
			if it.dep.Key == key && it.dep.Version == v {
				s.items = append(s.items[:i], s.items[i+1:]...)
				break
			}
		}
		s.rebind()
		return
	}
	for _, it := range s.items {
		if it.dep.Key == key && it.dep.Version == v {
			return
		}
	}
	s.items = append(s.items, restriction{dep: wire.Dep{Key: key, Version: v}, ring: ring, after: s.seq + 1})
	s.ring = ring
	s.rebind()
}

// covered reports whether the session's last write (a put or a
// notify-after) lifts every restriction the session holds when it
// completes: each was read before that write was issued.
func (s *Session) covered() bool {
	for _, it := range s.items {
		if it.after > s.seq {
			return false
		}
	}
	return true
}

// Complete records that the session's writes up to seq are in every ring,
// lifting the restrictions of the reads before them.
func (s *Session) Complete(seq uint64) {
	kept := s.items[:0]
	for _, it := range s.items {
		if it.after > seq {
			kept = append(kept, it)
		}
	}
	s.items = kept
	s.rebind()
}

func (s *Session) rebind() {
	if len(s.items) == 0 {
		s.ring = wire.NoRing
	}
	// I4 (karma.md section 2): while any restriction is held, the session
	// is bound to the one ring they were all read from.
	if invariants.Enabled {
		for _, it := range s.items {
			invariants.Check(it.ring == s.ring, "session %d: restriction %q@%s from ring %d, bound to %d", s.id, it.dep.Key, it.dep.Version, it.ring, s.ring)
		}
	}
}
