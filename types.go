package cosla

import (
	"errors"
	"fmt"
	"time"

	"github.com/cosla/cosla/internal/core/clientcore"
	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/wire"
)

// The package's value types. Each has the representation of the protocol
// core's type of the same concept, so that the boundary converts one to
// the other (Level(l), wire.Level(l)), and each method says what the
// core's says: the core stays the one implementation.

// The default limits of keys and values (Config.MaxKeyBytes and
// MaxValueBytes): 4 KiB and 1 MiB.
const (
	DefaultMaxKeyBytes   = clientcore.DefaultMaxKeyBytes
	DefaultMaxValueBytes = clientcore.DefaultMaxValueBytes
)

// CheckName says what is wrong with a site, node or table name that is
// not valid UTF-8, naming it as what, or returns nil: names travel as
// protobuf strings, which must be valid UTF-8, while keys and values may
// be any bytes. Open checks the names in its Config; CheckName lets a
// program check another (a table's) before anything is sent.
func CheckName(what, name string) error { return wire.CheckIdentifier(what, name) }

// Level is a read or write level (CPQ): a number of a tablet's replicas,
// or One, Quorum (a majority) or All. The zero Level is unset, which
// means One.
type Level int32

// Levels.
const (
	One    = Level(wire.One)
	Quorum = Level(wire.Quorum)
	All    = Level(wire.All)
)

// ParseLevel reads "one", "quorum", "all" or a positive count. It is the
// one parser of levels: the CLI's flags and files use it.
func ParseLevel(s string) (Level, error) {
	l, err := wire.ParseLevel(s)
	if err != nil {
		return 0, inputError{err}
	}
	return Level(l), nil
}

func (l Level) String() string { return wire.Level(l).String() }

// Check reports whether the level can be met by tablets of n replicas.
func (l Level) Check(n int) error {
	if err := wire.Level(l).Check(n); err != nil {
		return inputError{err}
	}
	return nil
}

// inputError is an error of bad input that says what is wrong in the
// core's words alone (a CLI prints it after the flag's name) and matches
// ErrInvalid too.
type inputError struct{ err error }

func (e inputError) Error() string   { return e.err.Error() }
func (e inputError) Unwrap() []error { return []error{ErrInvalid, e.err} }

// Timestamp is a version's update timestamp: a hybrid logical clock value,
// totally ordered.
type Timestamp struct {
	// WallNanos is the physical component, nanoseconds since the Unix
	// epoch.
	WallNanos int64
	// Logical orders timestamps with equal WallNanos.
	Logical uint32
}

// Compare returns -1, 0 or +1 as t is before, equal to or after u.
func (t Timestamp) Compare(u Timestamp) int { return hlc.Timestamp(t).Compare(hlc.Timestamp(u)) }

// Less reports whether t is before u.
func (t Timestamp) Less(u Timestamp) bool { return t.Compare(u) < 0 }

// IsZero reports whether t is the zero timestamp (no version).
func (t Timestamp) IsZero() bool { return t == Timestamp{} }

// String writes t as "seconds.nanoseconds,logical".
func (t Timestamp) String() string { return hlc.Timestamp(t).String() }

// MarshalText writes t as String does, so that JSON shows a timestamp in
// its text form.
func (t Timestamp) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// Strategy chooses the replica a Get goes to: Pileus (the default) by
// expected utility, or one of the paper's fixed baselines.
type Strategy uint8

// Strategies (Pileus 5.1).
const (
	Pileus  = Strategy(clientcore.Pileus)
	Primary = Strategy(clientcore.Primary)
	Random  = Strategy(clientcore.Random)
	Closest = Strategy(clientcore.Closest)
)

// ParseStrategy returns the strategy named "pileus", "primary", "random"
// or "closest".
func ParseStrategy(name string) (Strategy, error) {
	s, err := clientcore.ParseStrategy(name)
	return Strategy(s), err
}

func (s Strategy) String() string { return clientcore.Strategy(s).String() }

// MarshalText writes the strategy's name.
func (s Strategy) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Bound is how long an operation may take (dConssandra; DESIGN.md
// section 4): Immediate, Unbounded, or a positive duration (Within). The
// zero Bound is none: the operation is not bounded.
type Bound int64

// The bounds that are not durations: Immediate answers a Put once the
// receiving replica holds it durably, and a Get at once with what the
// replica holds; Unbounded answers a Put once every replica has applied
// it, and a Get once its replica holds every write the primary ordered
// before it.
const (
	Immediate = Bound(wire.Immediate)
	Unbounded = Bound(wire.Unbounded)
)

func (b Bound) String() string { return wire.Bound(b).String() }

// ParseBound reads a bound as String writes it, in any case: immediate,
// unbounded or a positive duration such as 50ms; "" is no bound. A zero
// duration is refused (for an answer without waiting, give immediate).
func ParseBound(s string) (Bound, error) {
	b, err := wire.ParseBound(s)
	return Bound(b), err
}

// MarshalText writes the bound as String does.
func (b Bound) MarshalText() ([]byte, error) { return []byte(b.String()), nil }

// Stage is how far a bounded write got: received (durable at the
// receiving replica), transmitted (sent on to the primary), coordinated
// (ordered by the primary: it has its timestamp) or executed (applied at
// every replica).
type Stage uint8

// The stages of a write.
const (
	Received    = Stage(wire.Received)
	Transmitted = Stage(wire.Transmitted)
	Coordinated = Stage(wire.Coordinated)
	Executed    = Stage(wire.Executed)
)

func (s Stage) String() string { return wire.Stage(s).String() }

// Outcome is what a ReadTestWrite's test found.
type Outcome uint8

// Test outcomes.
const (
	NotEvaluated = Outcome(wire.NotEvaluated)
	Held         = Outcome(wire.Held)
	Failed       = Outcome(wire.Failed)
)

func (o Outcome) String() string { return wire.Outcome(o).String() }

// QuorumTimeoutError is the error of a Put that missed its write level:
// the version's timestamp, the replicas it waited for (Level) and those
// that held it when the primary answered (Acks, the primary included).
// errors.Is(err, ErrQuorumTimeout) holds for it.
type QuorumTimeoutError struct {
	Key         string
	TS          Timestamp
	Level, Acks int
}

func (e *QuorumTimeoutError) Error() string { return e.core().Error() }

// Is makes errors.Is(err, ErrQuorumTimeout) hold.
func (e *QuorumTimeoutError) Is(target error) bool { return target == ErrQuorumTimeout }

func (e *QuorumTimeoutError) core() *clientcore.QuorumTimeoutError {
	return &clientcore.QuorumTimeoutError{Key: e.Key, TS: hlc.Timestamp(e.TS), Level: e.Level, Acks: e.Acks}
}

// publicErr is a core's error in this package's words: a missed write
// level becomes a *QuorumTimeoutError.
func publicErr(err error) error {
	var q *clientcore.QuorumTimeoutError
	if errors.As(err, &q) {
		return &QuorumTimeoutError{Key: q.Key, TS: Timestamp(q.TS), Level: q.Level, Acks: q.Acks}
	}
	return err
}

// milliseconds is a duration in JSON: a number of milliseconds.
type milliseconds time.Duration

func (d milliseconds) MarshalJSON() ([]byte, error) {
	return fmt.Appendf(nil, "%g", float64(d)/float64(time.Millisecond)), nil
}
