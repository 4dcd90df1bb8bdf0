package host

import (
	"errors"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cosla/cosla/internal/core/node"
	"github.com/cosla/cosla/internal/core/storage"
	"github.com/cosla/cosla/internal/core/wire"
)

// counter counts what it is handed; its Fire reports timers on a channel.
type counter struct {
	env      node.Env
	received int
	fired    chan any
}

func (c *counter) Start(env node.Env) error      { c.env = env; return nil }
func (c *counter) Receive(wire.NodeID, wire.Msg) { c.received++ }
func (c *counter) Fire(timer any)                { c.fired <- timer }

func startCounter(t *testing.T, mailboxMax int) (*Node, *counter) {
	t.Helper()
	h := &counter{fired: make(chan any, 4)}
	n, err := StartNode(NodeOptions{ID: "s/n", Handler: h, Engine: storage.NewMem(), MailboxMax: mailboxMax,
		Send: func(_, _ wire.NodeID, _ wire.Msg) {}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Stop)
	return n, h
}

func TestDeliverAndDo(t *testing.T) {
	n, h := startCounter(t, 0)
	for range 100 {
		if !n.Deliver("x/y", &wire.ProbeRequest{}) {
			t.Fatal("Deliver dropped a message with room in the mailbox")
		}
	}
	var got int
	// Do runs after every event queued before it.
	if err := n.Do(func(node.Handler) { got = h.received }); err != nil {
		t.Fatal(err)
	}
	if got != 100 {
		t.Fatalf("handler saw %d messages before Do, want 100", got)
	}
}

func TestMailboxBound(t *testing.T) {
	n, _ := startCounter(t, 2)
	started, block := make(chan struct{}), make(chan struct{})
	if err := n.Post(func(node.Handler) { close(started); <-block }); err != nil {
		t.Fatal(err)
	}
	// Once the node runs the blocking function it has taken its batch
	// from the mailbox (a batch taken later could hold the first probe).
	<-started
	// The node is busy: the mailbox takes two messages and drops the rest.
	accepted := 0
	for range 5 {
		if n.Deliver("x/y", &wire.ProbeRequest{}) {
			accepted++
		}
	}
	close(block)
	if accepted != 2 || n.Dropped() != 3 {
		t.Fatalf("accepted %d, dropped %d; want 2 and 3", accepted, n.Dropped())
	}
}

func TestTimerFires(t *testing.T) {
	n, h := startCounter(t, 0)
	if err := n.Do(func(node.Handler) { h.env.After(time.Millisecond, "tick") }); err != nil {
		t.Fatal(err)
	}
	if got := <-h.fired; got != "tick" {
		t.Fatalf("fired %v, want tick", got)
	}
}

// TestTimerLateness: a timer that comes due while an event runs waits for
// it, and the node reports how long.
func TestTimerLateness(t *testing.T) {
	n, h := startCounter(t, 0)
	if got := n.LongestTimerLateness(); got != 0 {
		t.Fatalf("lateness %v before any timer", got)
	}
	if err := n.Do(func(node.Handler) {
		h.env.After(0, "tick")
		for queued := false; !queued; {
			n.mu.Lock()
			queued = len(n.events) > 0
			n.mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	<-h.fired
	if got := n.LongestTimerLateness(); got <= 0 {
		t.Fatalf("lateness %v for a timer that waited for an event", got)
	}
}

// TestTimersFireInOrder: timers set in one event fire in the order of
// their deadlines, and timers due at the same time in the order they
// were set. The first is set for an hour, so that the others fire only
// if a timer set for earlier than the queue's first wakes the queue
// sooner (else the test hangs).
func TestTimersFireInOrder(t *testing.T) {
	n, h := startCounter(t, 0)
	if err := n.Do(func(node.Handler) {
		h.env.After(time.Hour, "in an hour")
		h.env.After(30*time.Millisecond, "c")
		h.env.After(10*time.Millisecond, "a")
		h.env.After(20*time.Millisecond, "b")
		h.env.After(0, "now 1")
		h.env.After(0, "now 2")
	}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"now 1", "now 2", "a", "b", "c"} {
		if got := <-h.fired; got != want {
			t.Fatalf("fired %v, want %v", got, want)
		}
	}
}

// TestDueHeap: the timer queue's heap pops timers by deadline, then by
// the order they were pushed, for random deadlines (seeded).
func TestDueHeap(t *testing.T) {
	const seed = 29
	rng := rand.New(rand.NewPCG(seed, seed))
	base := time.Unix(1_700_000_000, 0)
	var h dueHeap
	for i := range 1000 {
		h.push(dueTimer{at: base.Add(time.Duration(rng.IntN(50)) * time.Millisecond), seq: uint64(i), timer: i})
	}
	var last dueTimer
	for i := range 1000 {
		first := h[0]
		if got := h.pop(); got != first {
			t.Fatalf("pop returned timer %v, not the first, %v", got.timer, first.timer)
		}
		if i > 0 && (first.at.Before(last.at) || first.at.Equal(last.at) && first.seq < last.seq) {
			t.Fatalf("seed %d: timer %d (at %v) popped after timer %d (at %v)", seed, first.seq, first.at, last.seq, last.at)
		}
		last = first
	}
	if len(h) != 0 {
		t.Fatalf("%d timers left after popping all", len(h))
	}
}

func TestStopped(t *testing.T) {
	n, _ := startCounter(t, 0)
	n.Stop()
	if err := n.Do(func(node.Handler) {}); !errors.Is(err, ErrStopped) {
		t.Fatalf("Do after Stop: %v, want ErrStopped", err)
	}
	if n.Deliver("x/y", &wire.ProbeRequest{}) {
		t.Fatal("Deliver after Stop accepted a message")
	}
	n.Stop() // a second Stop returns
}

// TestMailboxLimits: while the node is busy, one client's requests stop
// at SenderMax and another client's still get in; node messages are not
// counted per sender but stop at MailboxBytes; once the node has taken
// them, the client gets in again.
func TestMailboxLimits(t *testing.T) {
	h := &counter{fired: make(chan any, 4)}
	n, err := StartNode(NodeOptions{ID: "s/n", Handler: h, Engine: storage.NewMem(), SenderMax: 3, MailboxBytes: 5000,
		Send: func(_, _ wire.NodeID, _ wire.Msg) {}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Stop)
	// The node runs a function that blocks, and the test waits until it
	// does: a batch taken later holds everything delivered below.
	block, running := make(chan struct{}), make(chan struct{})
	if err := n.Post(func(node.Handler) { close(running); <-block }); err != nil {
		t.Fatal(err)
	}
	<-running
	deliver := func(from wire.NodeID, m wire.Msg, times int) (accepted int) {
		for range times {
			if n.Deliver(from, m) {
				accepted++
			}
		}
		return accepted
	}
	get := &wire.GetRequest{Key: "k"}
	if got := deliver("us/c1", get, 5); got != 3 {
		t.Errorf("c1's requests accepted: %d of 5, want 3 (SenderMax)", got)
	}
	if got := deliver("us/c2", get, 1); got != 1 {
		t.Errorf("c2's request accepted: %d, want 1", got)
	}
	push := &wire.Push{Entry: wire.Entry{Key: "k", Value: make([]byte, 1000)}}
	size := wire.EnvelopeSize("us/r1", "s/n", push)
	want := (5000 - 4*wire.EnvelopeSize("us/c1", "s/n", get)) / size
	if got := deliver("us/r1", push, 10); got != want {
		t.Errorf("pushes of %d bytes accepted: %d, want %d (MailboxBytes)", size, got, want)
	}
	close(block)
	if err := n.Do(func(node.Handler) {}); err != nil {
		t.Fatal(err)
	}
	if got := deliver("us/c1", get, 1); got != 1 {
		t.Errorf("c1's request after the node took the others: accepted %d, want 1", got)
	}
}

// recorder records the order of the messages it is handed, and whether
// each ran on the goroutine of the test that brought it (a stack that
// holds the caller's frame).
type recorder struct {
	got    []uint64
	inline []bool
}

func (r *recorder) Start(node.Env) error { return nil }
func (r *recorder) Fire(any)             {}
func (r *recorder) Receive(_ wire.NodeID, m wire.Msg) {
	r.got = append(r.got, m.(*wire.ProbeRequest).Req)
	r.inline = append(r.inline, strings.Contains(string(debug.Stack()), "TestDeliverHere"))
}

// TestDeliverHere: a message for an idle node runs on the goroutine that
// delivers it, before DeliverHere returns; one for a busy node, or one
// with messages waiting ahead of it, waits its turn in the mailbox, so
// that the node still sees its messages in the order they came.
func TestDeliverHere(t *testing.T) {
	h := &recorder{}
	n, err := StartNode(NodeOptions{ID: "s/n", Handler: h, Engine: storage.NewMem(), Send: func(_, _ wire.NodeID, _ wire.Msg) {}})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop()
	n.DeliverHere("x/y", &wire.ProbeRequest{Req: 1})
	if len(h.got) != 1 || !h.inline[0] {
		t.Fatalf("an idle node: handled %v (here: %v) when DeliverHere returned, want [1] here", h.got, h.inline)
	}
	started, release := make(chan struct{}), make(chan struct{})
	if err := n.Post(func(node.Handler) { close(started); <-release }); err != nil {
		t.Fatal(err)
	}
	<-started
	n.DeliverHere("x/y", &wire.ProbeRequest{Req: 2}) // busy: queued
	n.Deliver("x/y", &wire.ProbeRequest{Req: 3})
	close(release)
	n.DeliverHere("x/y", &wire.ProbeRequest{Req: 4}) // behind 2 and 3, or here after them
	var got []uint64
	var inline []bool
	if err := n.Do(func(node.Handler) { got, inline = slices.Clone(h.got), slices.Clone(h.inline) }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []uint64{1, 2, 3, 4}) || inline[1] || inline[2] {
		t.Fatalf("handled %v (here: %v), want [1 2 3 4] with 2 and 3 on the node's goroutine", got, inline)
	}
}

// TestPostHere: a call posted to an idle node runs before PostHere
// returns, on the caller's goroutine; to a stopped node it fails.
func TestPostHere(t *testing.T) {
	n, _ := startCounter(t, 0)
	ran := false
	if err := n.PostHere(func(node.Handler) { ran = true }); err != nil || !ran {
		t.Fatalf("PostHere on an idle node: err %v, ran before it returned %v; want nil, true", err, ran)
	}
	n.Stop()
	if err := n.PostHere(func(node.Handler) {}); !errors.Is(err, ErrStopped) {
		t.Fatalf("PostHere on a stopped node: %v, want ErrStopped", err)
	}
}

// urgentRecorder orders its messages as a recorder does; a ProbeRequest
// with an odd Req is urgent (node.Urgency).
type urgentRecorder struct{ recorder }

func (r *urgentRecorder) Urgent(m wire.Msg) bool { return m.(*wire.ProbeRequest).Req%2 == 1 }

// TestUrgentFirst: a node whose handler has urgent messages runs those
// waiting in its mailbox before the others, each in the order they came,
// as the simulator serves them (causal.Urgent says why).
func TestUrgentFirst(t *testing.T) {
	h := &urgentRecorder{}
	n, err := StartNode(NodeOptions{ID: "s/n", Handler: h, Engine: storage.NewMem(), Send: func(_, _ wire.NodeID, _ wire.Msg) {}})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop()
	started, release := make(chan struct{}), make(chan struct{})
	if err := n.Post(func(node.Handler) { close(started); <-release }); err != nil {
		t.Fatal(err)
	}
	<-started
	for req := uint64(2); req <= 7; req++ {
		n.Deliver("x/y", &wire.ProbeRequest{Req: req})
	}
	close(release)
	var got []uint64
	if err := n.Do(func(node.Handler) { got = slices.Clone(h.got) }); err != nil {
		t.Fatal(err)
	}
	if want := []uint64{3, 5, 7, 2, 4, 6}; !slices.Equal(got, want) {
		t.Fatalf("handled %v, want %v", got, want)
	}
}
