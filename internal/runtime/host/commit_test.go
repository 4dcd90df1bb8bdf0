package host

import (
	"errors"
	"sync"
	"testing"

	"github.com/cosla/cosla/internal/core/node"
	"github.com/cosla/cosla/internal/core/storage"
	"github.com/cosla/cosla/internal/core/wire"
)

// writer answers a PutRequest after a synced write of its key, and a
// GetRequest without writing.
type writer struct{ env node.Env }

func (w *writer) Start(env node.Env) error { w.env = env; return nil }
func (w *writer) Fire(any)                 {}

func (w *writer) Receive(from wire.NodeID, m wire.Msg) {
	switch m := m.(type) {
	case *wire.PutRequest:
		var b storage.Batch
		b.Set([]byte(m.Key), m.Value)
		if err := w.env.Engine().Apply(&b, true); err != nil {
			panic(err)
		}
		w.env.Send(from, &wire.PutReply{Req: m.Req})
	case *wire.GetRequest:
		w.env.Send(from, &wire.GetReply{Req: m.Req})
	}
}

// gatedEngine is a Mem that syncs concurrently, each Sync waiting for the
// test to answer it on the channel Sync hands over.
type gatedEngine struct {
	mu    sync.Mutex
	mem   *storage.Mem
	syncs chan chan error
}

func (g *gatedEngine) Get(key []byte) ([]byte, bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.mem.Get(key)
}

func (g *gatedEngine) Scan(start, end []byte, fn func(key, value []byte) bool) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.mem.Scan(start, end, fn)
}

func (g *gatedEngine) Apply(b *storage.Batch, sync bool) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.mem.Apply(b, sync)
}

func (g *gatedEngine) Close() error { return g.mem.Close() }

func (g *gatedEngine) Sync() error {
	answer := make(chan error)
	g.syncs <- answer
	if err := <-answer; err != nil {
		return err
	}
	return g.Apply(nil, true)
}

type sent struct {
	to  wire.NodeID
	req uint64
}

func startWriter(t *testing.T, eng storage.Engine) (*Node, chan sent) {
	t.Helper()
	out := make(chan sent, 64)
	n, err := StartNode(NodeOptions{ID: "s/n", Handler: &writer{}, Engine: eng,
		Send: func(_, to wire.NodeID, m wire.Msg) {
			switch m := m.(type) {
			case *wire.PutReply:
				out <- sent{to, m.Req}
			case *wire.GetReply:
				out <- sent{to, m.Req}
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Stop)
	return n, out
}

func put(n *Node, req uint64) {
	n.Deliver("c/1", &wire.PutRequest{Req: req, Key: "k", Value: []byte{byte(req)}})
}

func barrier(t *testing.T, n *Node) {
	t.Helper()
	if err := n.Do(func(node.Handler) {}); err != nil {
		t.Fatal(err)
	}
}

func expectNone(t *testing.T, out chan sent, when string) {
	t.Helper()
	select {
	case s := <-out:
		t.Fatalf("%s: message %d went out before its sync", when, s.req)
	default:
	}
}

func expect(t *testing.T, out chan sent, reqs ...uint64) {
	t.Helper()
	for _, want := range reqs {
		if got := <-out; got.req != want {
			t.Fatalf("released %d, want %d", got.req, want)
		}
	}
}

func TestGroupCommit(t *testing.T) {
	eng := &gatedEngine{mem: storage.NewMem(), syncs: make(chan chan error)}
	n, out := startWriter(t, eng)

	put(n, 1)
	first := <-eng.syncs
	barrier(t, n)
	expectNone(t, out, "first sync under way")

	// While the disk works, two Puts and a Get arrive. The Get wrote
	// nothing, but it may have read what the Puts wrote: it waits too.
	put(n, 2)
	put(n, 3)
	n.Deliver("c/2", &wire.GetRequest{Req: 4})
	barrier(t, n)
	expectNone(t, out, "second group waiting")

	first <- nil
	expect(t, out, 1)
	second := <-eng.syncs
	expectNone(t, out, "second sync under way")
	second <- nil
	expect(t, out, 2, 3, 4)

	// Nothing is waiting for the disk: a read answers at once.
	n.Deliver("c/2", &wire.GetRequest{Req: 5})
	expect(t, out, 5)
	// The first sync was held while the second group gathered.
	if got := n.CommitStats(); got.Syncs != 2 || got.Events != 3 || got.LongestSync <= 0 {
		t.Fatalf("CommitStats = %+v, want 2 syncs of 3 events, the longest measured", got)
	}
	if v, ok, err := eng.Get([]byte("k")); err != nil || !ok || v[0] != 3 {
		t.Fatalf("k = %v %v %v, want the third Put's value", v, ok, err)
	}
}

func TestGroupCommitSyncFailure(t *testing.T) {
	eng := &gatedEngine{mem: storage.NewMem(), syncs: make(chan chan error)}
	n, out := startWriter(t, eng)
	put(n, 1)
	broken := errors.New("EIO")
	(<-eng.syncs) <- broken
	<-n.done // the node's goroutine returns
	if err := n.Do(func(node.Handler) {}); !errors.Is(err, ErrStopped) {
		t.Fatalf("Do after a failed sync: %v, want ErrStopped", err)
	}
	if !errors.Is(n.Err(), broken) {
		t.Fatalf("Err = %v, want the sync's error", n.Err())
	}
	expectNone(t, out, "after a failed sync")
	if n.Deliver("c/1", &wire.GetRequest{Req: 2}) {
		t.Fatal("a node whose sync failed accepted a message")
	}
}

// An engine that cannot sync concurrently is synced on the node's
// goroutine; the reply still follows the sync.
func TestGroupCommitInline(t *testing.T) {
	mem := storage.NewMem()
	n, out := startWriter(t, mem)
	put(n, 7)
	expect(t, out, 7)
	n.Stop()
	mem.Crash()
	if v, ok, err := mem.Get([]byte("k")); err != nil || !ok || v[0] != 7 {
		t.Fatalf("after a crash k = %v %v %v; the acknowledged Put was not durable", v, ok, err)
	}
	if st := n.CommitStats(); st.Syncs != 1 || st.Events != 1 {
		t.Fatalf("CommitStats = %+v, want one sync of one event", st)
	}
}
