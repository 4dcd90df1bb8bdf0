package host

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cosla/cosla/internal/core/storage"
	"github.com/cosla/cosla/internal/core/wire"
)

// committer is a Node's group commit (DESIGN.md section 2), and the engine
// its handler sees.
//
// Inside an event, a synced Apply applies its batch without sync and marks
// the event dirty. Whatever an event sends waits for the event's end, and
// then for the sync that covers every write applied before the end: the
// event's own writes, or, for an event that wrote nothing, those of the
// events before it whose sync has not completed. This is "persist, then
// send": no message reveals a write that a crash could still take back,
// not even a read's reply or a pull's answer. An event that wrote nothing,
// with no sync outstanding, sends at once.
//
// After each batch of events taken from the mailbox (or each event run
// on the goroutine that brought it, a batch of one), the events waiting
// for a sync (next) are handed to the syncer as one group, unless a sync is
// under way; then they wait for it, and go as one group when it completes.
// So one sync covers every write that arrived while the previous one ran,
// and throughput under many writers is bounded by the node's goroutine, not
// by the disk.
//
// The sync runs on a goroutine of its own when the engine implements
// storage.Syncer (Pebble), so the node goes on serving while the disk
// works; otherwise by the node's event loop at the end of the batch. Outside
// events (a handler's Start) Apply is the engine's own.
//
// If a sync fails, or an engine that can fail as a whole (failer) says it
// has, the node stops: the messages waiting for a sync are dropped, it
// acknowledges nothing more, and Err reports the failure. A disk that
// failed a sync may have lost the writes it was given, and only a restart
// (recovery from what the engine kept) tells what is left. A call into
// the engine in progress then may never return (Node.Stop does not wait
// for it): the committer counts them.
//
// An event whose read or write of the engine failed waits for a sync too,
// even if it wrote nothing. The handler answers such an event with an
// error code and goes on, which suits an operation that failed alone; but
// an engine that failed as a whole (pebbledb's, after its disk failed a
// flush) fails the sync as well, and then the node stops and says why
// instead of serving errors while nothing reports it.
type committer struct {
	n      *Node
	engine storage.Engine
	syncer storage.Syncer // nil: sync inline
	failer failer         // nil: the engine does not say

	// Owned by the goroutine running the node's event (Node.busy).
	inEvent  bool
	alone    bool     // the event runs alone (NodeOptions.SendNow)
	dirty    bool     // the event made synced writes
	storeErr bool     // an engine call of the event failed
	outbox   []outMsg // what the event sent

	mu       sync.Mutex
	next     *group // events waiting for a sync that has not started
	inflight *group // the sync under way, on the syncer
	stopped  bool
	err      error

	wake        chan struct{} // hands next to the syncer
	quit        chan struct{} // closed by stop
	quitOnce    sync.Once
	failed      chan struct{} // closed by failLocked
	syncerDone  chan struct{} // the syncer has returned
	watcherDone chan struct{} // the failer's watcher has returned

	// calls counts the calls into the engine in progress, on the node's
	// goroutine or the syncer.
	calls         atomic.Int32
	syncs, synced atomic.Int64
	syncMax       atomic.Int64 // the longest sync, in nanoseconds
}

// failer is implemented by an engine that can fail as a whole, and then
// refuses every operation (pebbledb's, when its disk fails). Failed is
// closed when it has; Err says why. The node stops then, even if it is
// idle: nothing it could do would succeed, and Err tells the operator. A
// goroutine of its own watches it: the node's goroutine and the syncer
// may both be held in the engine by the failure.
type failer interface {
	Failed() <-chan struct{}
	Err() error
}

type outMsg struct {
	to wire.NodeID
	m  wire.Msg
}

// group is the events one sync covers and the messages it releases.
type group struct {
	events int64 // events with synced writes
	msgs   []outMsg
}

var _ storage.Engine = (*committer)(nil)

func (c *committer) init(n *Node) {
	c.n = n
	c.engine = n.opts.Engine
	c.syncer, _ = n.opts.Engine.(storage.Syncer)
	c.failer, _ = n.opts.Engine.(failer)
	c.wake = make(chan struct{}, 1)
	c.quit = make(chan struct{})
	c.failed = make(chan struct{})
	c.syncerDone = make(chan struct{})
	c.watcherDone = make(chan struct{})
}

// start starts the syncer goroutine, if the engine syncs concurrently,
// and the watcher, if it can fail as a whole.
func (c *committer) start() {
	if c.syncer != nil {
		go c.run()
	} else {
		close(c.syncerDone)
	}
	if c.failer != nil {
		go c.watch()
	} else {
		close(c.watcherDone)
	}
}

// stop drops what waits for a sync and tells the syncer and the watcher
// to return; Node.Stop waits for them (await).
func (c *committer) stop() {
	c.mu.Lock()
	c.stopped = true
	c.next, c.inflight = nil, nil
	c.mu.Unlock()
	c.quitOnce.Do(func() { close(c.quit) })
}

// await waits for done, closed when one of the node's goroutines returns.
// It gives up, and says why, if a call into the engine is in progress
// when the node's storage has failed, or at the deadline.
func (c *committer) await(done <-chan struct{}, deadline <-chan time.Time) string {
	failed, engineFailed := c.failed, (<-chan struct{})(nil)
	if c.failer != nil {
		engineFailed = c.failer.Failed()
	}
	for {
		select {
		case <-done:
			return ""
		case <-deadline:
			return fmt.Sprintf("it had not returned %v after Stop", c.n.opts.StopTimeout)
		case <-failed:
			failed = nil
		case <-engineFailed:
			engineFailed = nil
		}
		if c.calls.Load() > 0 {
			return "the storage failed under it"
		}
	}
}

// leave records that Stop returned without waiting for a storage call.
func (c *committer) leave(why string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if errors.Is(c.err, ErrStorageStuck) {
		return // an earlier Stop left it
	}
	cause := c.err
	if cause == nil && c.failer != nil {
		cause = c.failer.Err()
	}
	c.err = fmt.Errorf("%w (%s)", ErrStorageStuck, why)
	if cause != nil {
		c.err = fmt.Errorf("%w: %w", c.err, cause)
	}
	c.n.opts.Logger.Error("host: the node stopped without waiting for a storage call; its storage is left open", "err", c.err)
}

func (c *committer) beginEvent(alone bool) {
	c.inEvent = true
	c.alone = alone
	c.dirty = false
	c.storeErr = false
}

// endEvent sends what the event sent, or queues it behind the sync it
// must wait for.
func (c *committer) endEvent() {
	c.inEvent = false
	out := c.outbox
	c.outbox = c.outbox[:0]
	if len(out) == 0 && !c.dirty && !c.storeErr {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.stopped:
	case c.dirty || c.storeErr || c.next != nil:
		if c.next == nil {
			c.next = &group{}
		}
		if c.dirty {
			c.next.events++
		}
		c.next.msgs = append(c.next.msgs, out...)
	case c.inflight != nil:
		c.inflight.msgs = append(c.inflight.msgs, out...)
	case c.alone:
		c.releaseVia(c.n.opts.SendNow, out)
	default:
		c.release(out)
	}
	clear(out)
}

// flush ends a batch of events: it hands next to the syncer, or syncs it
// inline. It reports false if a sync failed and the node stopped.
func (c *committer) flush() bool {
	c.mu.Lock()
	g := c.next
	if g == nil || (c.syncer != nil && c.inflight != nil) {
		c.mu.Unlock()
		return true
	}
	if c.syncer != nil {
		c.inflight, c.next = g, nil
		c.mu.Unlock()
		select {
		case c.wake <- struct{}{}:
		default:
		}
		return true
	}
	c.next = nil
	c.mu.Unlock()
	c.calls.Add(1)
	err := c.timed(func() error { return c.engine.Apply(nil, true) })
	c.calls.Add(-1)
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.complete(g, err)
}

// run is the syncer: it syncs inflight, releases its messages, and goes on
// with next if events queued up meanwhile.
func (c *committer) run() {
	defer close(c.syncerDone)
	for {
		select {
		case <-c.quit:
			return
		case <-c.wake:
		}
		c.mu.Lock()
		g := c.inflight
		for g != nil && !c.stopped {
			c.mu.Unlock()
			c.calls.Add(1)
			err := c.timed(c.syncer.Sync)
			c.calls.Add(-1)
			c.mu.Lock()
			if !c.complete(g, err) {
				break
			}
			c.inflight, c.next = c.next, nil
			g = c.inflight
		}
		c.mu.Unlock()
	}
}

// timed runs sync and records how long it took (syncMax).
func (c *committer) timed(sync func() error) error {
	start := time.Now()
	err := sync()
	c.syncMax.Store(max(c.syncMax.Load(), int64(time.Since(start))))
	return err
}

// watch stops the node when its engine says it failed.
func (c *committer) watch() {
	defer close(c.watcherDone)
	select {
	case <-c.quit:
	case <-c.failer.Failed():
		c.mu.Lock()
		if !c.stopped {
			c.failLocked("storage failed", c.failer.Err())
		}
		c.mu.Unlock()
	}
}

// complete ends group g's sync: on success it releases the group's
// messages, in the order they were sent; on failure it stops the node.
// c.mu is held, so that no later message overtakes them.
func (c *committer) complete(g *group, err error) bool {
	if c.stopped {
		return false
	}
	if err != nil {
		c.failLocked("sync failed", err)
		return false
	}
	c.syncs.Add(1)
	c.synced.Add(g.events)
	c.release(g.msgs)
	return true
}

// failLocked stops the node for err, dropping what waits for a sync.
// c.mu is held.
func (c *committer) failLocked(what string, err error) {
	c.err = err
	c.stopped = true
	c.next, c.inflight = nil, nil
	close(c.failed)
	c.n.opts.Logger.Error("host: "+what+"; the node stops and acknowledges nothing more", "err", err)
	c.n.halt()
}

func (c *committer) release(msgs []outMsg) { c.releaseVia(c.n.opts.Send, msgs) }

func (c *committer) releaseVia(send func(from, to wire.NodeID, m wire.Msg), msgs []outMsg) {
	for _, o := range msgs {
		send(c.n.opts.ID, o.to, o.m)
	}
}

// send is Env.Send: inside an event it keeps the message for endEvent.
func (c *committer) send(to wire.NodeID, m wire.Msg) {
	if !c.inEvent {
		c.n.opts.Send(c.n.opts.ID, to, m)
		return
	}
	c.outbox = append(c.outbox, outMsg{to, m})
}

// Get implements storage.Engine.
func (c *committer) Get(key []byte) ([]byte, bool, error) {
	c.calls.Add(1)
	defer c.calls.Add(-1)
	v, ok, err := c.engine.Get(key)
	c.noteErr(err)
	return v, ok, err
}

// Scan implements storage.Engine.
func (c *committer) Scan(start, end []byte, fn func(key, value []byte) bool) error {
	c.calls.Add(1)
	defer c.calls.Add(-1)
	err := c.engine.Scan(start, end, fn)
	c.noteErr(err)
	return err
}

// Apply implements storage.Engine: inside an event a synced Apply is
// deferred to the group's sync.
func (c *committer) Apply(b *storage.Batch, sync bool) error {
	c.calls.Add(1)
	defer c.calls.Add(-1)
	if !c.inEvent {
		return c.engine.Apply(b, sync)
	}
	if err := c.engine.Apply(b, false); err != nil {
		c.noteErr(err)
		return err
	}
	c.dirty = c.dirty || sync
	return nil
}

// noteErr makes the event wait for a sync if err is an engine error.
func (c *committer) noteErr(err error) {
	if err != nil && c.inEvent {
		c.storeErr = true
	}
}

// Close implements storage.Engine.
func (c *committer) Close() error { return c.engine.Close() }
