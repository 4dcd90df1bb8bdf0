package cosla

import (
	"time"

	"github.com/cosla/cosla/internal/core/clientcore"
	"github.com/cosla/cosla/sla"
)

// Result says what a Get delivered and how, grouped by concern: the read
// itself, how its replica was chosen, the replicas of a read of several
// (levels), a bounded read's bound, and the causal part. The groups are
// embedded, so that their fields read as the Result's own (r.Node,
// r.Level) and its JSON is one flat object; the JSON names are the
// fields' tags, durations in nanoseconds.
type Result struct {
	// Met is the index in the SLA of the subSLA met, or -1; SubSLA is that
	// subSLA, and Consistency its guarantee, the consistency delivered.
	Met         int             `json:"met"`
	SubSLA      sla.SubSLA      `json:"sub_sla,omitzero"`
	Consistency sla.Consistency `json:"consistency,omitzero"`
	Read
	Selection
	Replicas
	Bounded
	// Causal says, for a causal table, where the value came from; nil for
	// other tables.
	Causal *CausalRead `json:"causal,omitempty"`
}

// Utility is the utility delivered: the met subSLA's, or zero.
func (r Result) Utility() float64 {
	if r.Met < 0 {
		return 0
	}
	return r.SubSLA.Utility
}

// Read is what a Get read, and from where.
type Read struct {
	// Found is false if the replica held no version of the key.
	Found bool `json:"found"`
	// Node is the replica the Get went to, Primary whether it was the
	// tablet's primary. With several replicas read (Replicas) Node is the
	// one whose (newest) version was returned: the primary whenever it
	// answered, since it holds the newest.
	Node    string `json:"node"`
	Primary bool   `json:"primary"`
	// VersionTS is the timestamp of the version read; HighTS the
	// replica's high timestamp (with several, the largest among them).
	VersionTS Timestamp `json:"version_ts"`
	HighTS    Timestamp `json:"high_ts"`
	// RTT is the measured round trip.
	RTT time.Duration `json:"rtt_ns"`
	// Delay is the artificial delay the Get waited (WithDelay), counted
	// in RTT.
	Delay time.Duration `json:"delay_ns,omitzero"`
	// Staleness is the client's estimate, when the reply came, of how far
	// the replica read (with several, the freshest) trailed the tablet's
	// primary: zero for the primary, else the client's clock (or a newer
	// high timestamp seen of the tablet) less HighTS; see
	// ReplicaEstimate. It is zero, and unknown, while HighTS is: no reply
	// came, or the replica has yet to receive anything of the tablet.
	Staleness time.Duration `json:"staleness_ns,omitzero"`
	// FromSession says that the value is the session's own pending
	// write (WithBound), on any Get.
	FromSession bool `json:"from_session,omitempty"`
}

// Selection is how a Get chose its replica (Pileus 4.6).
type Selection struct {
	// Strategy chose the replica; Target is the subSLA it aimed at (-1 for
	// fixed strategies) and ExpectedUtility that target's expected utility.
	Strategy        Strategy `json:"strategy"`
	Target          int      `json:"target"`
	ExpectedUtility float64  `json:"expected_utility"`
	// Retried: the Get fell back to another node after a miss
	// (WithRetryAfterMiss); Node is the one whose reply was used.
	// Hedged: the Get went to two nodes at once and Node's reply was
	// used (WithHedge).
	Retried bool `json:"retried"`
	Hedged  bool `json:"hedged"`
}

// Replicas is what a Get of several replicas (its read level; CPQ)
// found.
type Replicas struct {
	// Level is the number of replicas the Get asked. With more than one,
	// Replies holds each one's answer; Quorum says that a strong subSLA
	// was met without the primary because the read overlaps the table's
	// write level (r + w > N). Repaired counts the stale replicas asked
	// to catch up to the version returned (WithReadRepair), Held the
	// replicas known to hold it when the Get answered, a majority when
	// the Get wrote back.
	Level    int           `json:"level"`
	Replies  []ReplicaRead `json:"replies,omitempty"`
	Quorum   bool          `json:"quorum,omitempty"`
	Repaired int           `json:"repaired,omitempty"`
	Held     int           `json:"held,omitempty"`
	// TuneP is the tuner's probability of a QUORUM read when this Get's
	// level was drawn (WithTuner).
	TuneP float64 `json:"tune_p,omitempty"`
}

// ReplicaRead is one replica's answer to a Get of several replicas: its
// version of the key, its high timestamp and its round trip from the
// Get's start.
type ReplicaRead struct {
	Node      string        `json:"node"`
	Primary   bool          `json:"primary"`
	Found     bool          `json:"found"`
	VersionTS Timestamp     `json:"version_ts"`
	HighTS    Timestamp     `json:"high_ts"`
	RTT       time.Duration `json:"rtt_ns"`
}

// Bounded is what a bounded Get (WithBound; dConssandra) did: its Bound,
// the pending writes its replica Applied within it and those still
// Pending, and Null when it could apply none of the key's (ErrNull). Its
// bound is its contract: it returns the value read whether or not a
// subSLA was met, and Met says which, if any. Every field is zero for a
// Get without a bound.
type Bounded struct {
	Bound   Bound `json:"bound,omitzero"`
	Applied int   `json:"applied,omitzero"`
	Pending int   `json:"pending,omitzero"`
	Null    bool  `json:"null,omitempty"`
}

// getResult is the core's result of a Get in this package's words.
func getResult(g clientcore.GetResult) Result {
	res := Result{Met: g.Met, SubSLA: g.SubSLA, Consistency: g.SubSLA.Consistency,
		Read: Read{Found: g.Found, Node: string(g.Node), Primary: g.Primary, VersionTS: Timestamp(g.VersionTS), HighTS: Timestamp(g.HighTS),
			RTT: g.RTT, Delay: g.Delay, Staleness: g.Staleness, FromSession: g.FromSession},
		Selection: Selection{Strategy: Strategy(g.Strategy), Target: g.Target, ExpectedUtility: g.ExpectedUtility, Retried: g.Retries > 0, Hedged: g.Hedged},
		Replicas:  Replicas{Level: g.Level, Quorum: g.Quorum, Repaired: g.Repaired, Held: g.Held, TuneP: g.TuneP},
		Bounded:   Bounded{Bound: Bound(g.Bound), Applied: g.Applied, Pending: g.Pending, Null: g.Null},
	}
	for _, r := range g.Replies {
		res.Replies = append(res.Replies, ReplicaRead{Node: string(r.Node), Primary: r.Primary, Found: r.Found,
			VersionTS: Timestamp(r.VersionTS), HighTS: Timestamp(r.HighTS), RTT: r.RTT})
	}
	if g.Causal != nil {
		cr := causalRead(*g.Causal)
		res.Causal = &cr
	}
	return res
}
