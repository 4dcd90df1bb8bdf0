package dcon

import "time"

// The dCON planner (dConssandra 5-C, Alg. 1 and 2) decides, when an
// operation arrives, how much replication work to do before answering:
// the longest prefix of its steps whose learned cost fits the budget.
//
// cosla's write path has fewer deferrable steps than Cassandra's
// (DESIGN.md section 4). Reception is always done (Alg. 1's minimum).
// Transmission is never deferred: a receiver forwards each staged write
// as soon as its window allows, so Alg. 2's phase 3 has nothing to
// choose. Compaction (phase 4) is log truncation, which a primary does
// whenever its secondaries report progress, and the engine's own
// compaction, which Pebble schedules: neither is planned. What remains
// is Alg. 2's phases 1 and 2 and the answer's stage:
//
//   - Acquire (phase 1, execution; acquisition for a read): a secondary
//     pulls the ordered writes it lacks from the primary. One pull
//     round brings them all, so its cost is Acquire(x) for x writes.
//   - Coordinate (phase 2): staged writes reach the primary in order and
//     are ordered there. A write is ordered once every staged write
//     before it is, so its cost is Coordinate(x) for the x staged writes
//     up to it.
//   - Spread (a write's execution at every replica): the primary pushes
//     it and the secondaries acknowledge, Spread(1) after coordination.

// Costs are the learned costs of the steps a node plans, toward one
// primary: each f(x) = A + B*x (dConssandra 5-B, Eq. 1).
type Costs struct {
	Coordinate, Spread, Acquire Linear
}

// Work is what an operation finds pending when it arrives.
type Work struct {
	// Write: the operation is a write; Queue is the number of staged
	// writes at the node not yet ordered, up to and including it.
	Write bool
	Queue int
	// For a read: KeyStaged is the position in the node's staging queue
	// of the last staged, not yet ordered write of the key (0: none), and
	// Missing the ordered writes the node knows it lacks (at least 1
	// when it lacks some but does not know how many).
	KeyStaged int
	Missing   int
}

// Plan is what the planner chose.
type Plan struct {
	// Write: Coordinated says to wait until the write is ordered, Spread
	// until every replica has applied it; with neither the write is
	// answered once received.
	Coordinated, Spread bool
	// Read: Coordinate says to wait until the staged writes of the key
	// are ordered, Acquire to pull the ordered writes the node lacks.
	// Null is the paper's NULL (dConssandra 2-B): writes of the key are
	// pending and the budget does not allow even one to be applied.
	Coordinate, Acquire, Null bool
	// Cost is the predicted time of the chosen steps.
	Cost time.Duration
}

// Decide plans an operation that may spend budget on replication work
// (dConssandra Alg. 1: the bound less the client's round trip). It is a
// pure function: no allocations, a few multiplications.
func Decide(budget time.Duration, c *Costs, w Work) Plan {
	var p Plan
	if w.Write {
		// Alg. 2 phase 2: the write is ordered only if every staged
		// write before it is.
		coord := c.Coordinate.Cost(w.Queue)
		if w.Queue == 0 || coord > budget {
			return p
		}
		p.Coordinated, p.Cost = true, coord
		if spread := c.Spread.Cost(1); coord+spread <= budget {
			p.Spread, p.Cost = true, coord+spread
		}
		return p
	}
	// A staged write of the key is applied here only once ordered and
	// pulled back: coordination, then acquisition of it and of what else
	// is missing.
	missing := w.Missing
	if w.KeyStaged > 0 {
		coord := c.Coordinate.Cost(w.KeyStaged)
		acquire := c.Acquire.Cost(max(missing, 1))
		if coord+acquire > budget {
			p.Null = true
			return p
		}
		p.Coordinate, p.Acquire, p.Cost = true, true, coord+acquire
		return p
	}
	// Alg. 2 phase 1 for a read: one pull brings every missing write.
	if missing > 0 {
		if acquire := c.Acquire.Cost(missing); acquire <= budget {
			p.Acquire, p.Cost = true, acquire
		}
	}
	return p
}
