package causal

import (
	"github.com/cosla/cosla/internal/core/node"
	"github.com/cosla/cosla/internal/core/wire"
)

// Beside hosts a causal Node beside another protocol core on one node:
// a storage node that holds primary-update tables (package replica) and
// causal tables' replicas. The causal Node gets the causal messages and
// the table requests naming causal tables; the other core everything
// else. Both share the engine (their key spaces differ) and the clock.
type Beside struct {
	other  node.Handler
	causal *Node
}

// causalRoute routes the causal node's timers (node.RoutedTimer); the
// other core's are its own, untagged.
const causalRoute = 1

// NewBeside returns a handler hosting causal beside other.
func NewBeside(other node.Handler, causal *Node) *Beside {
	return &Beside{other: other, causal: causal}
}

// Other returns the other core.
func (b *Beside) Other() node.Handler { return b.other }

// Causal returns the causal node.
func (b *Beside) Causal() *Node { return b.causal }

// Start implements node.Handler.
func (b *Beside) Start(env node.Env) error {
	if err := b.other.Start(env); err != nil {
		return err
	}
	return b.causal.Start(node.RouteTimers(env, causalRoute))
}

// Receive implements node.Handler.
func (b *Beside) Receive(from wire.NodeID, m wire.Msg) {
	causal := false
	switch m := m.(type) {
	case *wire.CreateTableRequest:
		causal = m.Layout.Causal != nil
		if !causal && b.causal.Has(m.Layout.Name) {
			b.causal.env.Send(from, &wire.CreateTableReply{Req: m.Req, Code: wire.TableExists})
			return
		}
	case *wire.DeleteTableRequest:
		causal = b.causal.Has(m.Name)
	case *wire.TableInfoRequest:
		causal = b.causal.Has(m.Name)
	default:
		_, causal = TableOf(m)
	}
	if causal {
		b.causal.Receive(from, m)
		return
	}
	b.other.Receive(from, m)
}

// Fire implements node.Handler.
func (b *Beside) Fire(timer any) {
	if t, ok := timer.(node.RoutedTimer); ok && t.Route == causalRoute {
		b.causal.Fire(t.Timer)
		return
	}
	b.other.Fire(timer)
}
