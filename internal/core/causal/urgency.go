package causal

import "github.com/cosla/cosla/internal/core/wire"

// Urgent reports whether a causal table's node serves m ahead of the
// requests waiting for it (node.Urgency). The requests are what a client
// starts: a get, a put, a get-transaction, and the reads coordinators
// and caches make of the storage nodes for them. Everything else carries
// a write towards stability, or a reply someone waits for: propagations
// and their acknowledgements, dependency checks and their answers,
// invalidations and theirs, STABLE notices, completions and replies.
//
// Why. A saturated storage node queues every message behind the reads
// before it, and a write becomes stable only after a chain of such
// messages has crossed the rings (propagate, dependency checks at other
// nodes, invalidations acknowledged, Karma 4.1.2, 4.3): each link of
// the chain waited a read queue's length. At karma-fig7's 9600 sessions
// (seven client sites) Karma's time to stability grew to 1.2 s, more of
// the versions read were in flight, more sessions were restricted, and
// their writes named more dependencies to check, which lengthened the
// queues again (5.5 dependency checks a write at the storage nodes,
// against Karma-NC's 2.7 with its time to stability of 0.37 s). Served
// first, the chain's messages leave the time to stability near its
// unloaded value: at 9600 sessions 0.33 s instead of 1.21 s, 57.6% of
// the accesses restricted instead of 80.3%, and 116.1k operations a
// second instead of 92.7k (README, Karma). The requests lose nothing
// they would not lose to a slower network: a request that waits
// while a later message of its sender is served is answered as if it
// had arrived after it, which every reply already allows for.
//
// Why the replies are urgent too: a cache must apply a fill's reply and
// an invalidation from the same storage node in the order the node sent
// them (Cache's comment, first rule), so both are in one class.
func Urgent(m wire.Msg) bool {
	switch m.(type) {
	case *wire.CausalGet, *wire.CausalPut, *wire.CausalGetTx, *wire.Read:
		return false
	}
	_, causal := TableOf(m)
	return causal
}

// Urgent implements node.Urgency: see the function Urgent.
func (n *Node) Urgent(m wire.Msg) bool { return Urgent(m) }

// Urgent implements node.Urgency: the causal messages as the function
// Urgent says; the other core's messages keep their arrival order.
func (b *Beside) Urgent(m wire.Msg) bool { return Urgent(m) }
