package clientcore

import (
	"fmt"

	"github.com/cosla/cosla/internal/core/causal"
	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/sla"
)

// Session is the scope of the session guarantees (Pileus 3.1). It records
// the timestamps of the session's Puts per key, of the versions its Gets
// returned per key, and the largest timestamp it has seen (4.4).
type Session struct {
	table    *Table
	sla      sla.SLA
	strategy Strategy
	policy   Policy
	ended    bool

	putTS  map[string]hlc.Timestamp
	readTS map[string]hlc.Timestamp
	maxTS  hlc.Timestamp
	// pending are the session's bounded Puts not yet ordered by the
	// primary, oldest first; held the operations waiting for some of
	// them to be (bounded.go).
	pending []*pendingWrite
	held    []*heldOp
	// causal is the session's causal state on a causal table (Karma: a
	// thread's ring restrictions and dependencies).
	causal *causal.Session
}

// SetPolicy sets the levels and delay of the session's operations. A
// level above a tablet's replica count is refused here, before any
// operation is sent, and so is any policy on a causal table, whose reads
// and writes go through its coordinator.
func (s *Session) SetPolicy(p Policy) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if s.table.causal != nil && p != (Policy{}) {
		return fmt.Errorf("%w: causal table %q takes no read or write level, delay, read repair or tuner", ErrInvalid, s.table.Name())
	}
	for _, tv := range s.table.tablets {
		if err := p.Read.check(len(tv.replicas), "read"); err != nil {
			return err
		}
		if err := p.Write.check(len(tv.replicas), "write"); err != nil {
			return err
		}
	}
	s.policy = p
	return nil
}

// Policy returns the session's policy.
func (s *Session) Policy() Policy { return s.policy }

// SLA returns the session's default SLA.
func (s *Session) SLA() sla.SLA { return s.sla }

// Table returns the table the session reads and writes.
func (s *Session) Table() *Table { return s.table }

// Causal returns the session's causal state on a causal table (its ring
// binding and restrictions, Karma 4.2), nil on another table.
func (s *Session) Causal() *causal.Session { return s.causal }

// MaxTS returns the largest timestamp the session has read or written.
func (s *Session) MaxTS() hlc.Timestamp { return s.maxTS }

func (s *Session) recordPut(key string, ts hlc.Timestamp) {
	s.putTS[key] = hlc.Max(s.putTS[key], ts)
	s.maxTS = hlc.Max(s.maxTS, ts)
}

func (s *Session) recordRead(key string, ts hlc.Timestamp) {
	s.readTS[key] = hlc.Max(s.readTS[key], ts)
	s.maxTS = hlc.Max(s.maxTS, ts)
}

// minReadTS is the minimum acceptable read timestamp of Pileus 4.4: a
// replica whose high timestamp is at least this can serve the Get with
// consistency c. nowWallNanos is the client's clock when the Get starts;
// uncertainty is how far that clock may be behind the primaries' clocks.
// Strong has no minimum the client can compute: only the primary serves it
// (4.4), which the caller checks separately.
func (s *Session) minReadTS(c sla.Consistency, key string, nowWallNanos int64, uncertainty int64) hlc.Timestamp {
	switch c.Kind {
	case sla.Causal:
		// The largest timestamp of any object read or written in the
		// session: because every Put is ordered after the session's
		// largest seen timestamp, this covers the whole causal past.
		return s.maxTS
	case sla.Bounded:
		// The current time minus the bound. Timestamps come from the
		// primaries' clocks; adding the clock uncertainty keeps the
		// guarantee when this clock runs behind theirs.
		return hlc.FromTime(nowWallNanos - int64(c.Bound) + uncertainty)
	case sla.ReadMyWrites:
		return s.putTS[key]
	case sla.Monotonic:
		return s.readTS[key]
	}
	return hlc.Timestamp{} // eventual; strong is decided by primacy
}
