// Package host runs cosla's protocol cores (package node) in a real
// process: each node runs one event at a time, taken from its mailbox by
// a goroutine of its own, or, when the node is idle, on the goroutine
// that brought the event (DeliverHere, PostHere: the reader of a network
// stream, a client's caller), which saves a goroutine switch per hop.
// Time is the wall clock, timers are real, messages travel over DRPC
// streams (Transport) and storage is whatever engine the caller opens
// (Pebble, in the server).
//
// A Node keeps the duties package node sets for a runtime: Start before any
// event, one event at a time, and nothing from a previous incarnation after
// a restart. Application calls into a handler (a client's Get, a replica's
// Metrics) go through Do, which runs them on the node's goroutine.
//
// A Node commits durable writes in groups (DESIGN.md section 2, "Durable
// writes and group commit"; commit.go): a synced write made by an event
// is applied without sync, the messages the event sends are held, and one
// sync of the engine releases the messages of every event it covers.
package host

import (
	"cmp"
	cryptorand "crypto/rand"
	"encoding/binary"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cosla/cosla/internal/core/node"
	"github.com/cosla/cosla/internal/core/storage"
	"github.com/cosla/cosla/internal/core/wire"
)

// ErrStopped is returned by Do on a node that has stopped.
var ErrStopped = errors.New("cosla: node stopped")

// ErrStorageStuck is wrapped by Node.Err after a Stop that returned
// without waiting for a call into the node's engine (see Node.Stop). The
// call may still be using the engine, so the engine must not be closed;
// the process should exit, which releases it.
var ErrStorageStuck = errors.New("cosla: node stopped with a storage call in progress")

// NodeOptions configures a Node.
type NodeOptions struct {
	ID      wire.NodeID
	Handler node.Handler
	Engine  storage.Engine
	// Send carries the node's messages; usually Transport.Send.
	Send func(from, to wire.NodeID, m wire.Msg)
	// SendNow, if set, carries the messages of an event that ran alone
	// (one that ran on the goroutine that brought it, or the only one of
	// its batch) and went out at its end: usually Transport.SendNow,
	// which writes them to the network on the calling goroutine. Under
	// load, when the node's goroutine runs events in batches, their
	// messages go through Send, so that its goroutine does not make the
	// system calls of every message one after another. Default: Send.
	SendNow func(from, to wire.NodeID, m wire.Msg)
	// MailboxMax bounds the messages waiting for the node, MailboxBytes
	// their size (wire.EnvelopeSize), and SenderMax the client requests
	// (wire.FromClient) of one sender among them, so that one client
	// flooding the node cannot fill its mailbox for the others. Beyond
	// them Deliver refuses the message: for a node's message it is lost,
	// as in an overloaded network; a refused client request is answered
	// wire.Overloaded by the server. Timers and calls are never refused.
	// Defaults 65536, 64 MiB and 1024.
	MailboxMax, MailboxBytes, SenderMax int
	// StopTimeout bounds how long Stop waits for the event and the sync
	// in progress (see Node.Stop). Default 10s.
	StopTimeout time.Duration
	// Logger is the node's logger; its records name the node if the
	// logger does (the server's carries a node attribute). Default:
	// discard.
	Logger *slog.Logger
	// Seed seeds the node's random source. Default: random.
	Seed uint64
}

// Node hosts one protocol core: its events run one at a time, on the
// node's goroutine or on one that brought an event to the idle node.
type Node struct {
	opts NodeOptions
	rng  *rand.Rand

	mu       sync.Mutex
	events   []event
	spare    []event             // the batch run took last, cleared, for the next
	later    []event             // scratch of urgentFirst
	messages int                 // events that are messages, for MailboxMax
	bytes    int                 // their size, for MailboxBytes
	requests map[wire.NodeID]int // client requests by sender, for SenderMax
	dropped  int64
	// lateMax is the longest a timer waited past when it was due, for
	// the events before it (LongestTimerLateness).
	lateMax atomic.Int64
	stopped bool
	// busy is set while events run, on the node's goroutine or on one
	// that runHere runs events on (here): one event at a time.
	busy, here bool
	halted     chan struct{} // closed when stopped is set
	ready      chan struct{}
	done       chan struct{} // closed when the node's goroutine returns
	timers     timerQueue

	commit committer
}

type event struct {
	from  wire.NodeID
	msg   wire.Msg
	size  int // of msg, for MailboxBytes
	timer any
	due   time.Time // when timer was due
	call  func(node.Handler)
}

// EnsureDefaults returns a copy of o with unset fields given their
// defaults (see package node: the options idiom); an unset Seed is
// drawn from crypto/rand.
func (o NodeOptions) EnsureDefaults() NodeOptions {
	o.MailboxMax = cmp.Or(o.MailboxMax, 1<<16)
	o.MailboxBytes = cmp.Or(o.MailboxBytes, 64<<20)
	o.SenderMax = cmp.Or(o.SenderMax, 1024)
	if o.SendNow == nil {
		o.SendNow = o.Send
	}
	o.StopTimeout = cmp.Or(o.StopTimeout, 10*time.Second)
	o.Logger = cmp.Or(o.Logger, slog.New(slog.DiscardHandler))
	if o.Seed == 0 {
		var b [8]byte
		_, _ = cryptorand.Read(b[:])
		o.Seed = binary.LittleEndian.Uint64(b[:])
	}
	return o
}

// StartNode starts the handler on a new goroutine. It returns the error of
// the handler's Start (recovery from storage, option validation).
func StartNode(opts NodeOptions) (*Node, error) {
	opts = opts.EnsureDefaults()
	n := &Node{
		opts:     opts,
		rng:      rand.New(rand.NewPCG(opts.Seed, opts.Seed>>1)),
		halted:   make(chan struct{}),
		ready:    make(chan struct{}, 1),
		done:     make(chan struct{}),
		requests: map[wire.NodeID]int{},
	}
	n.commit.init(n)
	if err := opts.Handler.Start((*env)(n)); err != nil {
		return nil, err
	}
	go n.run()
	n.commit.start()
	return n, nil
}

// ID returns the node's identity.
func (n *Node) ID() wire.NodeID { return n.opts.ID }

// Deliver queues a message for the node. It reports false if the message
// was dropped because the node stopped or its mailbox is full (see
// NodeOptions.MailboxMax).
func (n *Node) Deliver(from wire.NodeID, m wire.Msg) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.queueLocked(from, m)
}

// DeliverHere is Deliver, except that a message for a node that is idle,
// with nothing in its mailbox, is handled at once on the calling
// goroutine rather than handed to the node's: the goroutine that read a
// request off the network serves it, as a server with a thread per
// connection would, and the round trip saves the switch to the node's
// goroutine. The event runs as any other does, one at a time with the
// node's others, and its messages go out at its end or behind the sync
// it waits for. The caller must hold no lock that a handler's work could
// need: the transport calls it from the goroutine that reads a stream,
// never from a node's.
func (n *Node) DeliverHere(from wire.NodeID, m wire.Msg) bool {
	n.mu.Lock()
	if n.busy || n.stopped || len(n.events) > 0 {
		defer n.mu.Unlock()
		return n.queueLocked(from, m)
	}
	n.runHere(event{from: from, msg: m})
	return true
}

// PostHere is Post, except that fn runs at once on the calling goroutine
// if the node is idle, with nothing in its mailbox (see DeliverHere):
// a client's call starts its request without waking the client's
// goroutine. The caller must hold no lock that fn's work could need.
func (n *Node) PostHere(fn func(node.Handler)) error {
	n.mu.Lock()
	if n.busy || n.stopped || len(n.events) > 0 {
		defer n.mu.Unlock()
		if n.stopped {
			return ErrStopped
		}
		n.pushLocked(event{call: fn})
		return nil
	}
	n.runHere(event{call: fn})
	return nil
}

// runHere runs ev on the calling goroutine, as the node's goroutine
// would run a batch of one, and then, as one batch, the events that came
// meanwhile: they were queued without waking the node's goroutine
// (pushLocked), which would only have found the node busy. n.mu is held,
// the node idle; runHere releases n.mu.
func (n *Node) runHere(ev event) {
	n.busy, n.here = true, true
	n.mu.Unlock()
	n.runEvent(ev, true)
	ok := n.commit.flush()
	n.mu.Lock()
	if ok && !n.stopped && len(n.events) > 0 {
		batch := n.takeLocked()
		n.mu.Unlock()
		n.runBatch(batch)
		n.mu.Lock()
		n.spare = batch[:0]
	}
	n.busy, n.here = false, false
	if len(n.events) > 0 || n.stopped {
		n.signal() // to the node's goroutine
	}
	n.mu.Unlock()
}

// queueLocked queues a message for the node, or drops it (false) if the
// node stopped or the mailbox limits refuse it. n.mu is held.
func (n *Node) queueLocked(from wire.NodeID, m wire.Msg) bool {
	size := wire.EnvelopeSize(from, n.opts.ID, m)
	request := wire.FromClient(m)
	full := n.messages >= n.opts.MailboxMax || n.bytes+size > n.opts.MailboxBytes
	if n.stopped || full || (request && n.requests[from] >= n.opts.SenderMax) {
		n.dropped++
		return false
	}
	n.messages++
	n.bytes += size
	if request {
		n.requests[from]++
	}
	n.pushLocked(event{from: from, msg: m, size: size})
	return true
}

// Do runs fn on the node's goroutine, between events, and waits for it.
// It returns ErrStopped if the node stops before fn starts; it does not
// wait then for the event in progress, which may be held in a failed
// engine for good.
func (n *Node) Do(fn func(node.Handler)) error {
	var started atomic.Bool
	finished := make(chan struct{})
	call := func(h node.Handler) {
		if started.CompareAndSwap(false, true) {
			fn(h)
			close(finished)
		}
	}
	if !n.post(event{call: call}) {
		return ErrStopped
	}
	select {
	case <-finished:
		return nil
	case <-n.halted:
		if started.CompareAndSwap(false, true) {
			return ErrStopped // fn will not run
		}
	}
	select {
	case <-finished:
		return nil
	case <-n.done:
		return ErrStopped
	}
}

// Post runs fn on the node's goroutine without waiting. Callbacks a
// handler makes from inside fn run on that goroutine too.
func (n *Node) Post(fn func(node.Handler)) error {
	if !n.post(event{call: fn}) {
		return ErrStopped
	}
	return nil
}

// Dropped returns the number of messages dropped at a full mailbox.
func (n *Node) Dropped() int64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.dropped
}

// Stop stops the node's goroutine and timers and waits for the event in
// progress, and the sync in progress, to finish. Queued events are
// discarded; the engine stays open for the caller to close.
//
// Stop does not wait for a call into the engine that may never return:
// one in progress when the node's storage fails (Pebble can hold a write
// for good once its disk has filled: the write waits for a flush that
// cannot succeed), or one that has not returned within StopTimeout (a
// disk that hangs). It returns without it, logs why, and Err reports
// ErrStorageStuck: the caller must not close the engine.
func (n *Node) Stop() {
	n.halt()
	deadline := time.NewTimer(n.opts.StopTimeout)
	defer deadline.Stop()
	why := n.commit.await(n.done, deadline.C)
	n.commit.stop()
	for _, done := range []<-chan struct{}{n.commit.syncerDone, n.commit.watcherDone} {
		if why == "" {
			why = n.commit.await(done, deadline.C)
		}
	}
	if why != "" {
		n.commit.leave(why)
	}
}

// halt stops the node without waiting for its goroutine.
func (n *Node) halt() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stopped {
		return
	}
	n.stopped = true
	close(n.halted)
	n.timers.stop()
	n.events = nil
	n.signal()
}

// Err returns the error that stopped the node: a sync of its engine that
// failed, or the engine's failure (see failer); after a Stop that did not
// wait for a storage call, an error that wraps ErrStorageStuck (and the
// failure, if there was one). nil otherwise.
func (n *Node) Err() error {
	n.commit.mu.Lock()
	defer n.commit.mu.Unlock()
	return n.commit.err
}

// CommitStats counts a node's group commits.
type CommitStats struct {
	// Syncs is the syncs of the engine that released held messages, and
	// Events the events with synced writes they covered: Events/Syncs is
	// the mean group size.
	Syncs  int64 `json:"syncs"`
	Events int64 `json:"events"`
	// LongestSync is the longest sync so far. Every message the node sends
	// while one runs waits for it (committer), so a long one stalls the
	// node's answers, reads' included.
	LongestSync time.Duration `json:"longest_sync_ns"`
}

// CommitStats returns the node's group commit counts so far.
func (n *Node) CommitStats() CommitStats {
	return CommitStats{Syncs: n.commit.syncs.Load(), Events: n.commit.synced.Load(), LongestSync: time.Duration(n.commit.syncMax.Load())}
}

// LongestTimerLateness returns the longest a timer of the node's has
// waited so far, past when it was due, for the node's goroutine: how far
// behind its events the node has fallen.
func (n *Node) LongestTimerLateness() time.Duration { return time.Duration(n.lateMax.Load()) }

func (n *Node) post(ev event) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stopped {
		return false
	}
	n.pushLocked(ev)
	return true
}

// pushLocked queues ev, and wakes the node's goroutine unless runHere
// runs the node's events, which takes what is queued when it is done.
func (n *Node) pushLocked(ev event) {
	n.events = append(n.events, ev)
	if !n.here {
		n.signal()
	}
}

func (n *Node) signal() {
	select {
	case n.ready <- struct{}{}:
	default:
	}
}

func (n *Node) run() {
	defer close(n.done)
	for {
		n.mu.Lock()
		if n.stopped && !n.busy {
			n.mu.Unlock()
			return
		}
		if n.stopped || n.busy || len(n.events) == 0 {
			// Idle, or an event runs on a goroutine DeliverHere ran it
			// on (it signals when it is done), or stopped while one does.
			n.mu.Unlock()
			<-n.ready
			continue
		}
		n.busy = true
		batch := n.takeLocked()
		n.mu.Unlock()
		if !n.runBatch(batch) {
			return
		}
		n.mu.Lock()
		n.spare = batch[:0]
		n.busy = false
		n.mu.Unlock()
	}
}

// takeLocked takes the events queued, as a batch, urgent ones first
// (urgentFirst). n.mu is held.
func (n *Node) takeLocked() []event {
	batch := n.events
	n.events, n.spare = n.spare[:0], nil
	if u, ok := n.opts.Handler.(node.Urgency); ok {
		n.urgentFirst(batch, u)
	}
	for _, ev := range batch {
		if ev.msg == nil {
			continue
		}
		n.messages--
		n.bytes -= ev.size
		if wire.FromClient(ev.msg) {
			if n.requests[ev.from]--; n.requests[ev.from] == 0 {
				delete(n.requests, ev.from)
			}
		}
	}
	return batch
}

// urgentFirst reorders a batch of a handler with node.Urgency so that
// its urgent messages and its timers run before its other messages and
// calls (Do, Post), each class in arrival order, as the simulator serves
// a node's queue (where timers never wait); a call still runs after
// every event queued before it. A batch runs whole: an urgent message
// that comes while one runs waits for its end, where the simulator
// would serve it next.
func (n *Node) urgentFirst(batch []event, u node.Urgency) {
	urgent := 0
	for _, ev := range batch {
		if ev.call != nil || ev.msg != nil && !u.Urgent(ev.msg) {
			n.later = append(n.later, ev)
			continue
		}
		batch[urgent] = ev
		urgent++
	}
	copy(batch[urgent:], n.later)
	clear(n.later)
	n.later = n.later[:0]
}

// runBatch runs a batch of events and ends it (committer.flush), on the
// goroutine that holds busy. It reports false if the node stopped.
func (n *Node) runBatch(batch []event) bool {
	for _, ev := range batch {
		if n.isStopped() {
			return false
		}
		n.runEvent(ev, len(batch) == 1)
	}
	ok := n.commit.flush()
	clear(batch) // what the events refer to is garbage now
	return ok
}

// runEvent runs one event of the node's, on the goroutine that holds
// busy; alone says it runs alone (NodeOptions.SendNow).
func (n *Node) runEvent(ev event, alone bool) {
	h := n.opts.Handler
	n.commit.beginEvent(alone)
	switch {
	case ev.call != nil:
		ev.call(h)
	case ev.msg != nil:
		h.Receive(ev.from, ev.msg)
	default:
		n.lateMax.Store(max(n.lateMax.Load(), int64(time.Since(ev.due))))
		h.Fire(ev.timer)
	}
	n.commit.endEvent()
}

func (n *Node) isStopped() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.stopped
}

// env is the Node as its handler sees it. Its methods are called only from
// the goroutine running the node's event (or from Start, before any).
type env Node

func (e *env) ID() wire.NodeID                 { return e.opts.ID }
func (e *env) Now() time.Time                  { return time.Now() }
func (e *env) WallNanos() int64                { return time.Now().UnixNano() }
func (e *env) Rand() *rand.Rand                { return e.rng }
func (e *env) Engine() storage.Engine          { return &e.commit }
func (e *env) Logger() *slog.Logger            { return e.opts.Logger }
func (e *env) Send(to wire.NodeID, m wire.Msg) { e.commit.send(to, m) }

// After queues timer on the node's timer queue, which fires it as an
// event once d has passed.
func (e *env) After(d time.Duration, timer any) {
	n := (*Node)(e)
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.stopped {
		n.timers.add(n, time.Now().Add(d), timer)
	}
}

// timerQueue holds a node's timers in order of when they fire, behind one
// runtime timer set for the first. A core sets a timer per request (a
// client's request timeout) and most never fire before the node forgets
// them; one runtime timer (time.AfterFunc) apiece cost four allocations
// per request and as many entries in the runtime's timer heap, this costs
// none once the queue has grown. Its fields are guarded by Node.mu.
type timerQueue struct {
	due  dueHeap
	seq  uint64      // orders timers due at the same instant as they came
	wake *time.Timer // set for due[0]; nil until the first timer
}

type dueTimer struct {
	at    time.Time
	seq   uint64
	timer any
}

// add queues timer to fire at at, and wakes the queue then if it is now
// the first.
func (q *timerQueue) add(n *Node, at time.Time, timer any) {
	q.seq++
	q.due.push(dueTimer{at: at, seq: q.seq, timer: timer})
	if q.due[0].seq != q.seq {
		return
	}
	if q.wake == nil {
		q.wake = time.AfterFunc(time.Until(at), func() { n.fireTimers() })
		return
	}
	q.wake.Reset(time.Until(at))
}

// fireTimers queues every timer that is due as an event, and sets the
// wake-up for the next. A wake-up for a timer that a later add moved
// earlier finds nothing due and only sets the next.
func (n *Node) fireTimers() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stopped {
		return
	}
	q := &n.timers
	now := time.Now()
	for len(q.due) > 0 && !q.due[0].at.After(now) {
		t := q.due.pop()
		n.pushLocked(event{timer: t.timer, due: t.at})
	}
	if len(q.due) > 0 {
		q.wake.Reset(q.due[0].at.Sub(now))
	}
}

// stop drops every timer.
func (q *timerQueue) stop() {
	if q.wake != nil {
		q.wake.Stop()
	}
	q.due = nil
}

// dueHeap is a binary min-heap of timers by when they fire, written out
// rather than through container/heap, whose Push and Pop box each entry.
type dueHeap []dueTimer

func (h dueHeap) less(i, j int) bool {
	if h[i].at.Equal(h[j].at) {
		return h[i].seq < h[j].seq
	}
	return h[i].at.Before(h[j].at)
}

func (h *dueHeap) push(t dueTimer) {
	*h = append(*h, t)
	d := *h
	for i := len(d) - 1; i > 0; {
		parent := (i - 1) / 2
		if !d.less(i, parent) {
			break
		}
		d[i], d[parent] = d[parent], d[i]
		i = parent
	}
}

// pop removes the first timer and returns it.
func (h *dueHeap) pop() dueTimer {
	d := *h
	first := d[0]
	last := len(d) - 1
	d[0] = d[last]
	d[last] = dueTimer{} // let the timer's referents go
	d = d[:last]
	for i := 0; ; {
		least, l, r := i, 2*i+1, 2*i+2
		if l < len(d) && d.less(l, least) {
			least = l
		}
		if r < len(d) && d.less(r, least) {
			least = r
		}
		if least == i {
			break
		}
		d[i], d[least] = d[least], d[i]
		i = least
	}
	*h = d
	return first
}
