package check

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/cosla/cosla/internal/core/hlc"
)

// durable reports whether a Put that w of n replicas held survives every
// failover: the replicas a failover hears from, at least a majority,
// include one of the w, and the longest prefix among them wins
// (DESIGN.md section 10).
func durable(w, n int) bool { return quorumBound(n/2+1, w, n) }

// CheckDurable checks rule "durable": every acknowledged Put of known
// timestamp whose write level is durable (Op.Level w and Op.Replicas N,
// w + majority(N) > N) is held at the end and is not Lost. final holds
// each key's final version: the timestamp of the version the key's
// primary holds once the run is over, the zero timestamp for a key it
// holds no version of. A key missing from final is not judged. The
// violations are ordered by op index.
func CheckDurable(h []Op, final map[string]hlc.Timestamp) []Violation {
	c := &checker{h: h}
	for i, op := range h {
		if op.Kind != Put || !op.OK || !positive(op.TS) || !durable(op.Level, op.Replicas) {
			continue
		}
		f, judged := final[op.Key]
		switch {
		case op.Lost:
			c.report(i, RuleDurable, "%s is marked lost, but a put that %d of %d replicas held survives every failover",
				c.desc(i), op.Level, op.Replicas)
		case judged && f.Less(op.TS):
			c.report(i, RuleDurable, "%s is not held at the end: the key's final version is %s, older; a put that %d of %d replicas held survives every failover",
				c.desc(i), f, op.Level, op.Replicas)
		}
	}
	return c.vs
}

// RolledBack names a version that a replica rolled back at a failover
// (the entry of its rollback file).
type RolledBack struct {
	Key string
	TS  hlc.Timestamp
}

// Losses counts what the failovers of a run lost (rule "rollback").
type Losses struct {
	// ByLevel counts the acknowledged Puts marked Lost per write level
	// (Op.Level; 0 when unknown), Lost all of them.
	ByLevel map[int]int
	Lost    int
	// RolledBack counts the distinct versions rolled back, Unacknowledged
	// those of them that no acknowledged Put wrote. Where rule "rollback"
	// holds, Lost + Unacknowledged = RolledBack: the acknowledged writes
	// lost are the rollback entries of acknowledged Puts.
	RolledBack, Unacknowledged int
}

// CheckRollback checks rule "rollback" and counts the losses. Over the
// acknowledged Puts of known timestamp: one not held at the end (its
// key's final version older than it; final as for CheckDurable) is Lost;
// a Lost one's version is among the rolled-back versions; and one whose
// version was rolled back is Lost. rolledBack lists the versions the
// replicas rolled back, in any order, a version once per replica that
// rolled it back. The violations are ordered by op index.
func CheckRollback(h []Op, final map[string]hlc.Timestamp, rolledBack []RolledBack) (Losses, []Violation) {
	c := &checker{h: h}
	dropped := make(map[RolledBack]bool, len(rolledBack))
	for _, v := range rolledBack {
		dropped[v] = true
	}
	losses := Losses{ByLevel: make(map[int]int), RolledBack: len(dropped)}
	acked := make(map[RolledBack]bool)
	for i, op := range h {
		if op.Kind != Put || !op.OK || !positive(op.TS) {
			continue
		}
		v := RolledBack{Key: op.Key, TS: op.TS}
		acked[v] = true
		f, judged := final[op.Key]
		switch {
		case op.Lost:
			losses.ByLevel[op.Level]++
			losses.Lost++
			if !dropped[v] {
				c.report(i, RuleRollback, "%s is marked lost, but no replica rolled back its version", c.desc(i))
			}
		case dropped[v]:
			c.report(i, RuleRollback, "%s was rolled back at a failover, but is not marked lost", c.desc(i))
		case judged && f.Less(op.TS):
			c.report(i, RuleRollback, "%s is not held at the end (the key's final version is %s) and no replica rolled back its version: it vanished",
				c.desc(i), f)
		}
	}
	for v := range dropped {
		if !acked[v] {
			losses.Unacknowledged++
		}
	}
	return losses, c.vs
}

// Ack is a primary's acknowledgement of a Put, as a run records it.
type Ack struct {
	// Tablet names the tablet, e.g. "users/3"; Epoch is the tablet's
	// epoch at the primary, Node the primary.
	Tablet string
	Epoch  uint64
	Node   string
	// At is when the primary acknowledged the Put, on the true
	// (simulated) clock, not the primary's own.
	At time.Duration
	// Key and Value name the Put, for reports; they may be empty.
	Key, Value string
}

// CheckEpochs checks rule "epochs": no two primaries of a tablet
// acknowledge Puts in overlapping epochs. In time order (acknowledgements
// at one instant by epoch) a tablet's acknowledgements never go back to
// an older epoch than one acknowledged before, and those of one epoch
// come from the node that made the epoch's first. A Violation's Op is
// the index into acks of an acknowledgement that breaks the rule; the
// violations are ordered by it.
func CheckEpochs(acks []Ack) []Violation {
	order := make([]int, len(acks))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		x, y := acks[a], acks[b]
		return cmp.Or(cmp.Compare(x.Tablet, y.Tablet), cmp.Compare(x.At, y.At), cmp.Compare(x.Epoch, y.Epoch))
	})
	var vs []Violation
	report := func(i int, format string, args ...any) {
		vs = append(vs, Violation{Op: i, Rule: RuleEpochs, Detail: fmt.Sprintf(format, args...)})
	}
	type tabletEpoch struct {
		tablet string
		epoch  uint64
	}
	first := make(map[tabletEpoch]int) // the first acknowledgement of each epoch
	newest := -1                       // of the tablet so far, the first acknowledgement of the newest epoch
	for k, i := range order {
		a := acks[i]
		if k == 0 || acks[order[k-1]].Tablet != a.Tablet {
			newest = -1
		}
		te := tabletEpoch{a.Tablet, a.Epoch}
		f, seen := first[te]
		if !seen {
			f = i
			first[te] = i
		}
		switch n := newest; {
		case n >= 0 && a.Epoch < acks[n].Epoch:
			report(i, "%s goes back to an older epoch than %s before it: the tablet's primaries overlap", ackDesc(acks, i), ackDesc(acks, n))
		case acks[f].Node != a.Node:
			report(i, "%s in the epoch of %s, by another node: one epoch has one primary", ackDesc(acks, i), ackDesc(acks, f))
		}
		if newest < 0 || a.Epoch > acks[newest].Epoch {
			newest = i
		}
	}
	slices.SortStableFunc(vs, func(a, b Violation) int { return cmp.Compare(a.Op, b.Op) })
	return vs
}

// ackDesc describes acknowledgement i for a report.
func ackDesc(acks []Ack, i int) string {
	a := acks[i]
	s := fmt.Sprintf("ack #%d (tablet %s, epoch %d, node %s, at %s", i, a.Tablet, a.Epoch, a.Node, a.At)
	if a.Key != "" || a.Value != "" {
		s += fmt.Sprintf(", put of %q to key %q", a.Value, a.Key)
	}
	return s + ")"
}
