// Package hlc implements hybrid logical clocks (Kulkarni et al., "Logical
// Physical Clocks", OPODIS 2014).
//
// A Timestamp pairs a physical time in nanoseconds with a logical counter
// that orders events sharing the same physical part. Timestamps are totally
// ordered. A Clock never goes backwards, always issues timestamps strictly
// greater than any it has issued or been updated with, and stays close to
// its physical clock, so timestamps can be compared with wall time (Pileus
// 4.4 bounded staleness).
//
// The physical clock is injected: the simulator passes a virtual, possibly
// skewed, clock and the server passes the wall clock.
package hlc

import (
	"fmt"
	"math"
	"time"
)

// Timestamp is a hybrid logical clock value. The zero Timestamp is smaller
// than every timestamp a Clock issues and stands for "the beginning of time"
// (the minimum acceptable read timestamp of eventual consistency, Pileus 4.4).
type Timestamp struct {
	// WallNanos is the physical component, nanoseconds since the Unix epoch.
	WallNanos int64
	// Logical orders timestamps with equal WallNanos.
	Logical uint32
}

// Compare returns -1, 0 or +1 as t is before, equal to or after u.
func (t Timestamp) Compare(u Timestamp) int {
	switch {
	case t.WallNanos < u.WallNanos:
		return -1
	case t.WallNanos > u.WallNanos:
		return 1
	case t.Logical < u.Logical:
		return -1
	case t.Logical > u.Logical:
		return 1
	}
	return 0
}

// Less reports whether t is before u.
func (t Timestamp) Less(u Timestamp) bool { return t.Compare(u) < 0 }

// IsZero reports whether t is the zero Timestamp.
func (t Timestamp) IsZero() bool { return t == Timestamp{} }

// Max returns the later of t and u.
func Max(t, u Timestamp) Timestamp {
	if t.Less(u) {
		return u
	}
	return t
}

// FromTime returns the smallest timestamp at physical time wallNanos.
func FromTime(wallNanos int64) Timestamp { return Timestamp{WallNanos: wallNanos} }

// String formats t as seconds.nanoseconds,logical, e.g. "1.500000000,2".
func (t Timestamp) String() string {
	sign := ""
	// The magnitude is unsigned: -math.MinInt64 does not fit in an int64.
	w := uint64(t.WallNanos)
	if t.WallNanos < 0 {
		sign, w = "-", -w
	}
	return fmt.Sprintf("%s%d.%09d,%d", sign, w/uint64(time.Second), w%uint64(time.Second), t.Logical)
}

// Clock is a hybrid logical clock. It is not safe for concurrent use; the
// node that owns it serializes access.
type Clock struct {
	physical func() int64
	last     Timestamp
}

// NewClock returns a clock driven by physical, which returns nanoseconds
// since the Unix epoch.
func NewClock(physical func() int64) *Clock {
	return &Clock{physical: physical}
}

// Now returns a timestamp strictly greater than every timestamp previously
// returned by Now or passed to Update.
func (c *Clock) Now() Timestamp {
	pt := c.physical()
	if pt > c.last.WallNanos {
		c.last = Timestamp{WallNanos: pt}
	} else if c.last.Logical == math.MaxUint32 {
		// The counter is exhausted; borrow a nanosecond from the future
		// rather than wrap around and go backwards.
		c.last = Timestamp{WallNanos: c.last.WallNanos + 1}
	} else {
		c.last.Logical++
	}
	return c.last
}

// Update moves the clock to at least remote, so that the next Now is
// strictly greater than remote. It is called with timestamps learned from
// other nodes and, on recovery, with the largest timestamp persisted.
func (c *Clock) Update(remote Timestamp) {
	if c.last.Less(remote) {
		c.last = remote
	}
}

// Last returns the largest timestamp the clock has issued or seen, without
// advancing it.
func (c *Clock) Last() Timestamp { return c.last }
