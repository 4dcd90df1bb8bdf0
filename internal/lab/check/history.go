package check

import (
	"fmt"
	"time"

	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/sla"
)

// Kind is the kind of a recorded operation.
type Kind uint8

// The zero Kind is invalid so that an unset Op is reported, not guessed at.
const (
	Put Kind = iota + 1
	Get
	// Tx is a get-transaction of a causal table (CheckMulti): it reads
	// several keys at once. Check knows no Tx and reports it as unknown.
	Tx
)

// String returns "put", "get" or "gettx".
func (k Kind) String() string {
	switch k {
	case Put:
		return "put"
	case Get:
		return "get"
	case Tx:
		return "gettx"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Op is one client operation as the client saw it. Times are on the true
// (simulated) clock, not on any node's possibly skewed clock.
type Op struct {
	// Client names the client that issued the operation.
	Client string
	// Session names the session; it is unique across the history, and a
	// session issues its operations one at a time.
	Session string
	Kind    Kind
	Key     string
	// Value is, for a Put, the value written, which is unique across the
	// whole history so that a read identifies its write; for a Get, the
	// value read when Found.
	Value string
	// Found reports, for a Get, whether a version was returned; false means
	// the key had no version (the initial state).
	Found bool
	// Call and Return are the invocation and response times.
	Call   time.Duration
	Return time.Duration
	// OK reports, for a Put, that it was acknowledged; a Put that is not OK
	// is indeterminate: it may or may not take effect, possibly later. For
	// a Get, OK reports that it returned data and met a subSLA; a Get that
	// is not OK is not checked.
	OK bool
	// TS is, for an OK Put, the update timestamp the store assigned; for an
	// OK and Found Get, the timestamp of the version returned.
	TS hlc.Timestamp
	// Met is, for an OK Get, the subSLA the store reported as met, and
	// MetRank its 1-based rank in the SLA.
	Met     sla.SubSLA
	MetRank int
	// Pending reports, for an OK Put, that it was acknowledged before the
	// tablet's primary ordered it: a staged write answered at stage
	// received or transmitted (dConssandra; DESIGN.md section 4). It is
	// durable and takes effect once, but its client learns its timestamp
	// only later, if at all. TS is then the timestamp it took effect
	// with, or zero when that is unknown.
	Pending bool
	// FromSession reports, for an OK Get, that the value is one of its
	// session's pending Puts, returned without asking a replica: TS is
	// zero and the version returned is that Put's.
	FromSession bool
	// Level is the number of replicas the op involved under a read or
	// write level (CPQ; DESIGN.md section 4): for a Get, its read level r,
	// the replicas it asked, the newest version among their answers
	// winning; for a Put, its write level w, the replicas, the primary
	// included, that had to hold the version before it was acknowledged.
	// Zero means unknown: the op takes no part in rule "quorum".
	Level int
	// Replicas is the number N of replicas of the tablet that holds Key,
	// or zero when unknown. Rule "quorum" reads it from Gets.
	Replicas int
	// Held is, for an OK Get, the number of replicas known to hold the
	// version it returned (or a newer one) when it returned: a Get that
	// writes back returns once a majority does (read repair). Zero means
	// unknown. Rule "quorum" holds later Gets to it as to a Put of write
	// level Held.
	Held int
	// Lost reports, for a Put, that its version was rolled back at a
	// failover (DESIGN.md section 10): the old primary held it, a new
	// primary that did not hold it took over, and the returning old
	// primary dropped it. An acknowledged Put can be Lost only if too few
	// replicas held it (a level-ONE write, or any w with w + majority <=
	// N; rule "durable"); an unacknowledged one whose version some Get
	// returned may be Lost too. A Lost Put binds no Get, and neither
	// does a Get that returned its version (see the package
	// documentation).
	Lost bool
	// RolledBack lists, for a Put that took effect at TS, the timestamps
	// of its versions ordered before and rolled back at a failover: a
	// staged write that its receiver forwarded again to the new primary.
	// A Get that returned one of them returned a version that no longer
	// exists, as if of a Lost Put.
	RolledBack []hlc.Timestamp
}

// Rules name what a Violation breaks. The guarantee rules equal the
// sla.Kind names.
const (
	RuleHistory      = "history"
	RuleLatency      = "latency"
	RuleStrong       = "strong"
	RuleCausal       = "causal"
	RuleBounded      = "bounded"
	RuleReadMyWrites = "read-my-writes"
	RuleMonotonic    = "monotonic"
	RuleEventual     = "eventual"
	RuleQuorum       = "quorum"
	// The failover rules (CheckDurable, CheckRollback, CheckEpochs).
	RuleDurable  = "durable"
	RuleRollback = "rollback"
	RuleEpochs   = "epochs"
)

// Violation is one broken rule.
type Violation struct {
	// Op is the index into the history of the operation that broke Rule
	// (for rule "epochs", into the primaries' acknowledgements).
	Op int
	// Rule is one of the Rule constants.
	Rule string
	// Detail describes the operation, what it returned, what was required
	// and which operation imposed the requirement.
	Detail string
}

// String formats the violation on one line.
func (v Violation) String() string {
	return fmt.Sprintf("%s: %s", v.Rule, v.Detail)
}
