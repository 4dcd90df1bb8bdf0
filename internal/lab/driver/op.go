package driver

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/lab/check"
	"github.com/cosla/cosla/internal/lab/measure"
	"github.com/cosla/cosla/sla"
)

// Kind is what an operation does. Every kind a target can perform is
// registered in kinds, the one place that says how a kind appears in
// traces and histories; a target that cannot perform a kind reports
// ErrUnsupported.
type Kind uint8

// The operation kinds.
const (
	// Get reads one key.
	Get Kind = iota + 1
	// Put writes one key.
	Put
	// RTW is a ReadTestWrite of one key (dConssandra 2): it writes the key
	// only if the key has no value when the primary orders the write, a
	// conditional insert (readTestWrite with u1 = u2 and the test "no
	// value"). Its Tested says whether it wrote.
	RTW
	// GetTx is a get-transaction of a causal table (Karma 4.5): Key and
	// Keys read as one causally consistent snapshot. Traces and histories
	// see it as a read of Key.
	GetTx
)

// kindInfo describes a kind.
type kindInfo struct {
	name string
	// trace is the kind in the measure trace format, check the kind in
	// the checkers' history.
	trace measure.Kind
	check check.Kind
	// writes reports whether the kind writes a value the driver makes up.
	writes bool
}

var kinds = map[Kind]kindInfo{
	Get:   {name: "get", trace: measure.KindRead, check: check.Get},
	Put:   {name: "put", trace: measure.KindWrite, check: check.Put, writes: true},
	RTW:   {name: "rtw", trace: measure.KindWrite, check: check.Put, writes: true},
	GetTx: {name: "gettx", trace: measure.KindRead, check: check.Get},
}

func (k Kind) String() string {
	if info, ok := kinds[k]; ok {
		return info.name
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// ParseKind returns the kind of that name.
func ParseKind(name string) (Kind, error) {
	for k, info := range kinds {
		if info.name == name {
			return k, nil
		}
	}
	return 0, fmt.Errorf("%w: unknown operation kind %q (want get, put, rtw or gettx)", ErrInvalid, name)
}

// Writes reports whether the kind writes a value.
func (k Kind) Writes() bool { return kinds[k].writes }

// An Op is one operation: what the source asks for, filled in by the
// driver and the target with what happened.
type Op struct {
	Kind Kind
	Key  string
	// Option is the client-side choice of a store target's op
	// (measure.Op.Option): "replica" or "primary", "eventual"...
	Option string
	// Bound, when not wire.NoBound, makes a cosla op bounded
	// (dConssandra; DESIGN.md section 4): a Put or RTW is a staged write
	// answered by the bound with the stage it reached, a Get a bounded
	// read. It replaces the group's Get options' bound.
	Bound wire.Bound
	// Label, when set, names the op within its step and gives it
	// statistics of its own, as "STEP/LABEL" (see StatsLabel), beside its
	// step's: a group's writes and its read. Step is the step's label,
	// set by the driver.
	Label, Step string

	// Client names the session slot that issued the op, Session the
	// session itself (a slot begins a new session every
	// Group.SessionSteps steps).
	Client, Session string
	// Value is what a Put wrote, ValueID the value's identity: unique in
	// the run for a Put, and for a Get the identity of the value read
	// ("" when nothing was found). See MakeValue.
	Value   []byte
	ValueID string
	// Start and End are when the target began and finished the op, on the
	// run's clock.
	Start, End time.Duration
	// Err is the op's outcome: nil, or why it failed. Refused is set when
	// the target refused the op before sending it (a usage error that
	// would repeat): the driver then stops the run.
	Err     error
	Refused bool

	// What the store reported. Found is false when a Get found no value;
	// Node is the replica that served the op (for a store, its address),
	// Primary whether it was the tablet's primary; Consistency the
	// guarantee the store claims.
	Found       bool
	Node        string
	Primary     bool
	Consistency string
	// TS is the timestamp a cosla Put was given, or of the version a
	// cosla Get read.
	TS hlc.Timestamp

	// A cosla Get under an SLA (Pileus): RTT is the round trip the client
	// measured, by which it judged the subSLA met; Met the index of that
	// subSLA or -1, SubSLA that subSLA; Target the subSLA selection aimed
	// at (-1 for the fixed strategies); Extra the requests sent beyond the
	// first (a retry, a hedge).
	RTT    time.Duration
	Met    int
	SubSLA sla.SubSLA
	Target int
	Extra  int
	// Level is the number of replicas a cosla op involved: the replicas a
	// Get asked, or those a Put waited for; Acks the replicas that held a
	// Put when its primary answered (CPQ); Held those known to hold the
	// version a Get of several replicas returned (read repair).
	Level, Acks, Held int

	// What a bounded cosla op reported (dConssandra). A Put's or RTW's
	// Stage, the stage its write reached when answered, and an RTW's
	// Tested, whether its test held (wire.NotEvaluated when answered
	// before the primary ordered it). A Get's Applied, the writes the
	// replica brought in within the bound, and Pending, those it knew of
	// and could not; Null: the paper's NULL (dConssandra 2-B), writes of
	// the key pending and the bound too short to apply one. A NULL read
	// is an answer, not a failure: Err is nil, Found false and no value
	// is read. FromSession: the value is the session's own pending write.
	Stage       wire.Stage
	Tested      wire.Outcome
	Applied     int
	Pending     int
	Null        bool
	FromSession bool

	// What a read of a causal table reported (Karma; DESIGN.md section
	// 5). Source is where the value came from: the session's write buffer
	// (wire.FromBuffer, Node the coordinator), the site's cache
	// (wire.FromCache, Node the cache) or a ring (wire.FromRing, Node the
	// storage node, reached directly or through the cache on a miss).
	// Ring is the ring read, wire.NoRing for the write buffer and cache
	// hits (a cache keeps only stable versions); InFlight says the
	// version read was not yet in every ring; Restricted that the
	// session was bound to one ring by a dynamic ring restriction (Karma
	// 4.2) when it read. A get-transaction
	// (GetTx) also reads Keys, in Rounds rounds; its Source and InFlight
	// are Key's. They are meaningful only for the ops on a causal table
	// (SimTarget's or HostTarget's).
	Source     wire.Source
	Ring       int32
	InFlight   bool
	Restricted bool
	Keys       []string
	Rounds     int
}

// StatsLabel is the label of the statistics the op counts in: its
// step's, or with a Label "STEP/LABEL".
func (op *Op) StatsLabel() string {
	if op.Label == "" {
		return op.Step
	}
	return op.Step + "/" + op.Label
}

// Wrote reports whether a Put or RTW that succeeded wrote its value: an
// RTW whose test failed did not, one answered before its test was
// evaluated may yet.
func (op *Op) Wrote() bool {
	return op.Err == nil && op.Kind.Writes() && (op.Kind != RTW || op.Tested == wire.Held)
}

// Latency is the op's duration.
func (op *Op) Latency() time.Duration { return op.End - op.Start }

// Utility is the utility a cosla Get delivered: its met subSLA's.
func (op *Op) Utility() float64 {
	if op.Met < 0 || op.Err != nil {
		return 0
	}
	return op.SubSLA.Utility
}

// CheckOp is the op as the history checkers see it (package check). A
// Get's return is its start plus the round trip the client measured:
// that is what the latency of the subSLA it reports as met bounds.
func (op *Op) CheckOp() check.Op {
	c := check.Op{Client: op.Client, Session: op.Session, Kind: kinds[op.Kind].check, Key: op.Key,
		Call: op.Start, Return: op.End, OK: op.Err == nil}
	switch op.Kind {
	case Put, RTW:
		c.Value, c.Level = op.ValueID, op.Level
		// An RTW counts as a write only once its test is known to have
		// held.
		c.OK = c.OK && (op.Kind == Put || op.Tested == wire.Held)
		if c.OK {
			// A staged write answered before the primary ordered it
			// has no timestamp yet (check.Op.Pending).
			c.TS, c.Pending = op.TS, op.Stage != 0 && op.Stage < wire.Coordinated
		}
	case Get, GetTx:
		c.Return = op.Start + op.RTT
		c.OK = c.OK && op.Met >= 0 && !op.Null
		if c.OK {
			c.Found, c.Value, c.TS = op.Found, op.ValueID, op.TS
			c.Met, c.MetRank = op.SubSLA, op.Met+1
			c.FromSession = op.FromSession
		}
	}
	return c
}

// TraceOp is the op in the measure trace format. originUS is the trace
// clock's reading, in microseconds, at the run clock's zero.
func (op *Op) TraceOp(run string, originUS int64) measure.Op {
	t := measure.Op{Run: run, Client: op.Client, Kind: kinds[op.Kind].trace, Key: op.Key, Value: op.ValueID,
		CallUS: originUS + op.Start.Microseconds(), ReturnUS: originUS + op.End.Microseconds(), OK: op.Err == nil,
		Consistency: op.Consistency, Replica: op.Node, Option: op.Option}
	t.ReturnUS = max(t.ReturnUS, t.CallUS)
	switch t.Kind {
	case measure.KindWrite:
		t.Role = measure.RoleWriter
	case measure.KindRead:
		t.Role = measure.RoleReader
	}
	switch {
	case op.Err != nil:
		t.Error = op.Err.Error()
		if t.Kind == measure.KindRead {
			t.Value = ""
		}
	case op.Null:
		// No value was read: not a read of "no value".
		t.OK, t.Error = false, "null: writes pending, none applied within the bound"
	case op.Kind == RTW && op.Tested != wire.Held:
		// Nothing was written, or not yet known to be.
		t.OK, t.Error = false, "read-test-write "+op.Tested.String()
	}
	return t
}

// valueSep ends a value's identity; the bytes after it pad the value to
// its size. Identities never contain it.
const valueSep = ' '

// MakeValue returns a value of at least size bytes that carries id: the
// identity, then, if size leaves room, a separator and random lower-case
// letters (YCSB writes printable values; random ones keep the engine's
// compression from making small work of them).
func MakeValue(id string, size int, r *rand.Rand) []byte {
	v := make([]byte, max(size, len(id)))
	copy(v, id)
	if size <= len(id) {
		return v
	}
	v[len(id)] = valueSep
	for i := len(id) + 1; i < len(v); i += 8 {
		bits := r.Uint64()
		for j := i; j < min(i+8, len(v)); j++ {
			v[j] = 'a' + byte(bits%26)
			bits >>= 8
		}
	}
	return v
}

// ValueID returns the identity a value carries (see MakeValue).
func ValueID(v []byte) string {
	if i := bytes.IndexByte(v, valueSep); i >= 0 {
		v = v[:i]
	}
	return string(v)
}

// valueID names the n-th value a session slot writes, started at
// startUS on the trace clock: unique in a run, and across the runs of
// one store since no two start at the same microsecond on one clock (Wada
// 2: "the value written is the current time").
func valueID(client string, n int, startUS int64) string {
	return client + "-" + strconv.Itoa(n) + "-" + strconv.FormatInt(startUS, 10)
}
