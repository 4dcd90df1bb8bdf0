package clientcore

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/keyfmt"
)

// Read and write levels (CPQ; DESIGN.md section 4). A Put's write level w
// says how many replicas, the primary included, must hold it before the
// reply; a Get's read level r how many replicas it asks, the newest
// version winning. A Policy picks the levels of a session's operations:
// fixed, or at random per operation between two levels (continuous
// partial quorums, CPQ 3.2), and may delay each Get (artificial delays,
// AD, CPQ 3.2).

// Level is a read or write level.
type Level = wire.Level

// Named levels.
const (
	One    = wire.One
	Quorum = wire.Quorum
	All    = wire.All
)

// ErrQuorumTimeout is matched (errors.Is) by the error of a Put whose
// write level was not reached before its deadline. The version is durable
// at the primary and may still reach more replicas; errors.As gives the
// *QuorumTimeoutError that says how many held it.
var ErrQuorumTimeout = errors.New("cosla: write level not reached in time")

// QuorumTimeoutError describes a Put that missed its write level.
type QuorumTimeoutError struct {
	Key string
	// TS is the version's timestamp, assigned and durable at the primary.
	TS hlc.Timestamp
	// Level is the number of replicas the Put waited for, Acks the number
	// known to hold the version when the primary answered, itself
	// included.
	Level, Acks int
}

func (e *QuorumTimeoutError) Error() string {
	return fmt.Sprintf("%v: put %s (ts %s) is held by %d of the %d replicas it waited for", ErrQuorumTimeout, keyfmt.Quote(e.Key), e.TS, e.Acks, e.Level)
}

// Is makes errors.Is(err, ErrQuorumTimeout) hold.
func (e *QuorumTimeoutError) Is(target error) bool { return target == ErrQuorumTimeout }

// Choice picks an operation's level: B with probability P, A otherwise
// (CPQ 3.2). P of 0 is the fixed level A, P of 1 the fixed level B; only
// a P strictly between them draws from the client's random source, so
// that fixed levels leave a simulated run's draws as they were. An unset
// A or B is One. The zero Choice is unset: the session's applies.
type Choice struct {
	A, B Level
	P    float64
}

// Fixed is the Choice of always l.
func Fixed(l Level) Choice { return Choice{A: l} }

// Mix is CPQ(p, a, b): level b with probability p, a otherwise.
func Mix(p float64, a, b Level) Choice { return Choice{A: a, B: b, P: p} }

func (c Choice) set() bool { return c != Choice{} }

func (c Choice) validate() error {
	if math.IsNaN(c.P) || c.P < 0 || c.P > 1 {
		return fmt.Errorf("%w: level probability %v outside [0, 1]", ErrInvalid, c.P)
	}
	if c.A < All || c.B < All {
		return fmt.Errorf("%w: levels %s and %s", ErrInvalid, c.A, c.B)
	}
	return nil
}

// check validates the choice and refuses, before anything is sent, a
// level it may draw that is more than a tablet's n replicas; what names
// the operation ("read" or "write").
func (c Choice) check(n int, what string) error {
	if err := c.validate(); err != nil {
		return err
	}
	var err error
	if c.P < 1 {
		err = c.A.Check(n)
	}
	if err == nil && c.P > 0 {
		err = c.B.Check(n)
	}
	if err != nil {
		return fmt.Errorf("%w: %s %w", ErrInvalid, what, err)
	}
	return nil
}

// draw returns the operation's level.
func (c Choice) draw(r *rand.Rand) Level {
	switch {
	case c.P <= 0:
		return c.A
	case c.P >= 1:
		return c.B
	case r.Float64() < c.P:
		return c.B
	}
	return c.A
}

func (c Choice) String() string {
	if c.P <= 0 {
		return c.A.String()
	}
	if c.P >= 1 {
		return c.B.String()
	}
	return fmt.Sprintf("cpq(%g, %s, %s)", c.P, c.A, c.B)
}

// Policy says how many replicas a session's operations involve, and how
// long its Gets wait before they are sent.
type Policy struct {
	// Read and Write choose each Get's read level and each Put's write
	// level. Unset: One.
	Read, Write Choice
	// Delay is an artificial delay (AD, CPQ 3.2): each Get waits this long
	// before it is sent, and the wait counts in its latency.
	Delay time.Duration
	// ReadRepair says whether a Get of several replicas brings those
	// that answered with an older version up to the newest (see
	// ReadRepair). Unset: RepairAuto.
	ReadRepair ReadRepair
	// Tune, when set, chooses Read and Write itself (see Tune), which
	// must then be unset.
	Tune Tune
}

// ReadRepair says whether a Get of several replicas repairs the replicas
// it asked that answered with an older version than the newest (quorum.go):
// it asks each to catch up to the newest version's timestamp from its
// primary (wire.Repair).
type ReadRepair uint8

// Read repair settings.
const (
	// RepairAuto, the default: a Get that asked a majority of its
	// tablet's replicas writes back (RepairOn); a smaller one does not
	// repair, and neither does a quorum Pileus picks for a strong
	// subSLA (GetOptions.NoQuorum), which meets strong without it.
	RepairAuto ReadRepair = iota
	// RepairOn: a Get that asked a majority answers only once a majority
	// holds the version it returns (ABD's write-back; Cassandra's
	// blocking read repair), which makes reads of a majority with writes
	// of w, r + w > N, linearizable per key; a smaller Get sends its
	// repairs and answers at once.
	RepairOn
	// RepairOff: no repair. Reads of r, r + w > N, are then regular, not
	// linearizable.
	RepairOff
)

// Validate reports the first invalid field.
func (p Policy) Validate() error {
	if err := p.Read.validate(); err != nil {
		return err
	}
	if err := p.Write.validate(); err != nil {
		return err
	}
	if p.Delay < 0 {
		return fmt.Errorf("%w: negative delay %s", ErrInvalid, p.Delay)
	}
	if p.ReadRepair > RepairOff {
		return fmt.Errorf("%w: read repair setting %d", ErrInvalid, p.ReadRepair)
	}
	if p.Tune.set() {
		if err := p.Tune.validate(); err != nil {
			return err
		}
		if p.Read.set() || p.Write.set() {
			return fmt.Errorf("%w: the tuner chooses the levels itself; set no read or write level with it", ErrInvalid)
		}
	}
	return nil
}

// PutOptions overrides a session's policy for one Put.
type PutOptions struct {
	// Write replaces the session's write level choice when set.
	Write Choice
	// Timeout bounds the Put when positive (at most the client's
	// RequestTimeout): a write level not reached by then ends in
	// ErrQuorumTimeout.
	Timeout time.Duration
	// Bound, when not wire.NoBound, makes the Put a staged write that
	// the nearest replica takes and answers within the bound
	// (dConssandra; see bounded.go). Write levels do not apply to it.
	Bound wire.Bound
	// Test makes the Put a ReadTestWrite (dConssandra 2): it writes only
	// if the test key holds the expected value when the primary orders
	// it. Without a bound it goes to the primary like any Put.
	Test *wire.Test
}

// ReplicaRead is one replica's answer to a Get of several replicas.
type ReplicaRead struct {
	Node      wire.NodeID
	Primary   bool
	Found     bool
	VersionTS hlc.Timestamp
	HighTS    hlc.Timestamp
	// RTT is this replica's round trip, from the Get's start.
	RTT time.Duration
}

// levelWait is how long the primary may wait for a Put's write level: the
// Put's timeout less a reserve for the reply to arrive before the client
// gives up on the Put: two round trips to the primary (the request's
// half already spent, the reply's, and as much again for jitter) plus a
// twentieth of the timeout, at least holdMargin, for timers that fire
// late. holdMargin alone was too little for a Put: on a loaded 2-core
// machine the primary's wait timer and its reply came more than 5 ms
// late, and the client timed out on a Put the primary was answering
// QuorumTimeout for. With no estimate of the round trip, or a reserve
// above half the timeout, it is half the timeout (our choice; DESIGN.md
// section 4 only asks that the answer come by the deadline).
func levelWait(timeout time.Duration, r *replicaState) time.Duration {
	reserve := 2*r.rtt.Mean() + max(holdMargin, timeout/20)
	if r.rtt.Len() == 0 || reserve > timeout/2 {
		return timeout / 2
	}
	return timeout - reserve
}

// nearest returns, in order of rtt.Window.Distance, the indexes of the n
// replicas nearest the client, leaving out those whose bit is set in
// skip. It fills dst and does not allocate when dst has room.
func nearest(dst []int, replicas []*replicaState, n int, skip uint64) []int {
	for range n {
		best := -1
		for j, r := range replicas {
			if skip&(1<<j) != 0 {
				continue
			}
			if best < 0 || r.rtt.Distance() < replicas[best].rtt.Distance() {
				best = j
			}
		}
		if best < 0 {
			break
		}
		skip |= 1 << best
		dst = append(dst, best)
	}
	return dst
}

// maxReplicas is the most replicas of a tablet a Get of several replicas
// can choose among: nearest keeps a bit per replica.
const maxReplicas = 64
