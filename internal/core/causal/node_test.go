package causal

import (
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cosla/cosla/internal/core/storage"
	"github.com/cosla/cosla/internal/core/wire"
)

// coordinatorEnv is a minimal node.Env for a site's coordinator node: a
// clock that stands still, an engine kept across restarts, timers never
// fired, sends counted.
type coordinatorEnv struct {
	engine storage.Engine
	sent   int
}

func (e *coordinatorEnv) ID() wire.NodeID            { return "a/cc" }
func (e *coordinatorEnv) Now() time.Time             { return time.Unix(1_700_000_000, 0) }
func (e *coordinatorEnv) WallNanos() int64           { return 1_700_000_000 * int64(time.Second) }
func (e *coordinatorEnv) Send(wire.NodeID, wire.Msg) { e.sent++ }
func (e *coordinatorEnv) After(time.Duration, any)   {}
func (e *coordinatorEnv) Rand() *rand.Rand           { return rand.New(rand.NewPCG(1, 2)) }
func (e *coordinatorEnv) Engine() storage.Engine     { return e.engine }
func (e *coordinatorEnv) Logger() *slog.Logger       { return slog.New(slog.DiscardHandler) }

func causalTable(name string, id uint64) wire.Layout {
	return wire.Layout{Name: name, ID: id, Causal: &wire.CausalLayout{
		Rings:        []wire.Ring{{Name: "a", Nodes: []wire.NodeID{"a/s1"}}, {Name: "b", Nodes: []wire.NodeID{"b/s1"}}},
		Coordinators: []wire.NodeID{"a/cc", "b/cc"},
	}}
}

// buffered returns how many writes the coordinator of table id holds.
func bufferedIn(t *testing.T, n *Node, id uint64) uint64 {
	t.Helper()
	c, ok := n.tables[id].core.(*Coordinator)
	if !ok {
		t.Fatalf("table %d has no coordinator", id)
	}
	return c.Metrics().Buffered
}

// TestCoordinatorTablesApart: a site's coordinator node keeps every causal
// table's write buffers in one engine; a table created, or started again
// after a restart, takes its own buffered writes and no other table's.
// The coordinator of a table created while another's writes were in
// flight used to take those writes as its own and propagate them to its
// rings, in its table.
func TestCoordinatorTablesApart(t *testing.T) {
	env := &coordinatorEnv{engine: storage.NewMem()}
	n := NewNode(NodeOptions{Role: RoleCoordinator})
	if err := n.Start(env); err != nil {
		t.Fatal(err)
	}
	create := func(n *Node, l wire.Layout) {
		t.Helper()
		n.Receive("a/c1", &wire.CreateTableRequest{Req: l.ID, Layout: l})
	}
	create(n, causalTable("one", 1))
	// No ring answers: the write stays in table one's buffer.
	n.Receive("a/c1", &wire.CausalPut{Req: 1, Table: 1, Session: 1, Seq: 1, Key: "x", Value: []byte("1")})
	create(n, causalTable("two", 2))
	if got := bufferedIn(t, n, 1); got != 1 {
		t.Fatalf("table one holds %d writes, want 1", got)
	}
	if got := bufferedIn(t, n, 2); got != 0 {
		t.Fatalf("table two, created after table one's write, holds %d writes, want 0", got)
	}

	restarted := NewNode(NodeOptions{Role: RoleCoordinator})
	if err := restarted.Start(env); err != nil {
		t.Fatal(err)
	}
	if one, two := bufferedIn(t, restarted, 1), bufferedIn(t, restarted, 2); one != 1 || two != 0 {
		t.Fatalf("after a restart tables one and two hold %d and %d writes, want 1 and 0", one, two)
	}
}
