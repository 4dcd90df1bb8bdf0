package causal

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/node"
	"github.com/cosla/cosla/internal/core/storage"
	"github.com/cosla/cosla/internal/core/wire"
)

// CoordinatorOptions configures a client coordinator.
type CoordinatorOptions struct {
	// Layout places the table. Required, validated.
	Layout *Layout
	// RTT holds initial round-trip estimates to storage and cache nodes;
	// measured round trips replace them. A node without one is tried last.
	RTT map[wire.NodeID]time.Duration
	// Resend is how long a propagator waits for a ring's acknowledgement
	// before sending the write again, at least: longer for a node whose
	// acknowledgements take longer (retransmit). Default 1s.
	Resend time.Duration
	// ReadTimeout is how long a read waits for a storage node or cache
	// before trying another ring. A read with no other ring to try (bound
	// to one, or every ring tried) waits for its ring until the read's
	// deadline instead, asking again only if the read may have been lost
	// (askAgain). Default 1s.
	ReadTimeout time.Duration
	// GetTimeout bounds a read or get-transaction whose request names no
	// deadline. Default 10s, the client's default.
	GetTimeout time.Duration
	// RandomRings makes an unbound read (or get-transaction) go to a
	// ring drawn at random instead of the nearest: Karma's choice of any
	// ring, exercised in full (randomized tests). Default false.
	RandomRings bool
	// Window bounds a session's writes sent to one ring and not yet
	// acknowledged. Default 64.
	Window int
	// TxRounds bounds the rounds of a get-transaction. Default 8.
	TxRounds int
	// MaxValueBytes bounds a written value. Default 1 MiB.
	MaxValueBytes int
	// MaxBuffered bounds the writes (and notify-afters) in the site's
	// write buffers that some ring does not yet hold: a put that finds
	// the buffers full waits, unacknowledged, until a write completes,
	// and puts are taken in arrival order. Karma 4.1.2 acknowledges a put
	// once it is in the buffer and sets no bound; without one, writers
	// faster than the rings apply their chains of put-after dependencies
	// (a ring spanning several sites applies a chain one dependency
	// check, a WAN trip, a link at a time) filled the buffers without end,
	// and every write took longer to become stable than the one before
	// (karma-fig11's 50-50 point: 7.6 s, then 13.2 s a second later).
	// The bound turns that into a wait at the writer. Default 1024: at
	// least 2.7 times the writes a site has in flight at every 95-5 point
	// of karma-fig7 (381 at most, averaged over a run), so that it binds
	// only when the rings fall behind. A smaller bound keeps a
	// write-heavy load's times to stability shorter, and with them its
	// restrictions and dependency checks: karma-fig11's 50-50 point at
	// 9600 sessions made 29.6k ops/s with 512, 23.4k with 1024, 18.3k
	// with 2048 and 16.1k with 8192. While a ring is cut off no write
	// completes, so it also bounds the writes a site takes in a
	// partition (Karma 4.4) before its puts wait for the heal.
	MaxBuffered int
	// Logger. Default: discard.
	Logger *slog.Logger
}

// EnsureDefaults returns a copy of o with unset fields given their
// defaults (see package node: the options idiom).
func (o CoordinatorOptions) EnsureDefaults() CoordinatorOptions {
	o.Resend = cmp.Or(o.Resend, time.Second)
	o.ReadTimeout = cmp.Or(o.ReadTimeout, time.Second)
	o.GetTimeout = cmp.Or(o.GetTimeout, 10*time.Second)
	o.TxRounds = cmp.Or(o.TxRounds, 8)
	o.Window = cmp.Or(o.Window, 64)
	o.MaxValueBytes = cmp.Or(o.MaxValueBytes, 1<<20)
	o.MaxBuffered = cmp.Or(o.MaxBuffered, 1024)
	o.Logger = cmp.Or(o.Logger, slog.New(slog.DiscardHandler))
	return o
}

// Validate checks the options.
func (o CoordinatorOptions) Validate() error {
	if o.Layout == nil {
		return errors.New("causal: CoordinatorOptions.Layout is required")
	}
	if o.Resend < 0 || o.ReadTimeout < 0 || o.GetTimeout < 0 || o.TxRounds < 0 || o.MaxValueBytes < 0 || o.Window < 0 || o.MaxBuffered < 0 {
		return errors.New("causal: CoordinatorOptions: Resend, ReadTimeout, GetTimeout, TxRounds, MaxValueBytes, Window and MaxBuffered must not be negative")
	}
	return nil
}

// sessionID names a client session: the client node and its number for it.
type sessionID struct {
	client  wire.NodeID
	session uint64
}

// buffered is one write in a session's write buffer (Karma 4.1.2), or a
// notify-after.
type buffered struct {
	seq     uint64
	key     string
	value   []byte
	version wire.Version
	deps    []wire.Dep
	notify  bool
	// acked has bit r set once ring r acknowledged; sent[r] is when the
	// write was last sent to ring r (zero: not yet), to[r] to which node.
	acked uint64
	sent  []time.Time
	to    []wire.NodeID
	// tries[r] counts the sends to ring r: a write is sent again after
	// the node's wait (retransmit), then twice that, and so on up to
	// maxRetransmit resend intervals (backoff). again has bit r set once
	// it was sent to ring r more than once, so that its
	// acknowledgement's time is not measured.
	tries []uint8
	again uint64
	// watchers are the coordinators to tell when the write completes
	// (stability.go).
	watchers []askID
}

// wbSession is a session's write buffer: its writes not yet complete, in
// program order. It stays once empty, so that a CausalPut delivered again
// is recognised by its Seq; it is volatile, so a coordinator restarted
// knows only the sessions with buffered writes.
type wbSession struct {
	id      sessionID
	entries []*buffered
	taken   uint64 // highest Seq taken
}

// Coordinator is a client coordinator (Karma 4.1.1): it takes a site's
// clients' writes into durable per-session write buffers and acknowledges
// at once, propagates them to every ring in causal order (one propagator
// per session and ring, each sending the session's writes in program
// order), detects global completion and announces it with STABLE, and serves
// reads from the write buffer, the site's cache or a ring.
//
// Choices the paper leaves open (karma.md section 5):
//   - The put-after's dependencies are the in-flight versions the session
//     read and has not seen complete; the client sends them.
//   - Propagators pipeline a session's writes to a ring, up to Window
//     unacknowledged: a write sent before the ring acknowledged the
//     session's previous write carries that write as one more put-after
//     dependency, so the ring still applies the session's writes in
//     program order (Karma orders them by completing each before the
//     next; waiting a round trip to the farthest ring per write capped a
//     session at a few writes a second). Writes complete, and are
//     announced STABLE, in program order. Sessions propagate in parallel;
//     their writes are ordered across sessions only by put-after.
//   - A coordinator keeps no per-session read state: the client does
//     (its ring restriction and dependencies), so that a coordinator's
//     crash loses no restriction. The write buffer is durable in the
//     coordinator's engine, synced before the put is acknowledged.
type Coordinator struct {
	opts   CoordinatorOptions
	layout *Layout
	env    node.Env
	clock  *hlc.Clock
	site   string
	home   int
	near   *nearness
	batch  storage.Batch

	sessions map[sessionID]*wbSession
	// incomplete indexes buffered writes by version, to answer a store's
	// question whether one is complete (DepCheck).
	incomplete map[wire.Version]*buffered
	// waiting are the puts that found the write buffers full
	// (MaxBuffered), in arrival order; waitingSeq the same by session
	// and Seq, to know a put delivered again.
	waiting    []waitingPut
	waitingSeq map[putID]bool
	nextReq    uint64
	reads      map[uint64]*pendingRead
	txs        map[uint64]*pendingTx
	txReads    map[uint64]txRead
	// resends, ringReads and cacheReads time out propagations, reads of
	// storage nodes and reads through the cache (which may itself wait
	// ReadTimeout for a ring, so it gets twice that).
	resends    *deadlines[resend]
	retx       *retransmit
	ringReads  *deadlines[uint64]
	cacheReads *deadlines[uint64]
	// answered holds, per storage node, the newest read it answered and
	// when (askAgain).
	answered map[wire.NodeID]answer
	// stalled are the storage nodes a write was sent to again, for want
	// of an answer: when one is heard from again, the writes backing off
	// on its ring go again at once (resume).
	stalled map[wire.NodeID]bool
	// stability is what the coordinator knows of other coordinators'
	// writes' completion, to lift ring restrictions (stability.go).
	stability *stability
	// holdings is what it knows of the rings that hold other
	// coordinators' versions (rebind.go).
	holdings *holdings
	// boundWaiting are the reads bound to a ring that have waited
	// ReadTimeout for it: learning a write stable releases those it
	// restricted at once (releaseWaiting), not at their next timeout.
	boundWaiting map[uint64]bool
	// putsWaited counts the puts that waited for room (Metrics).
	putsWaited uint64
}

// CoordinatorMetrics is what a coordinator holds and counted.
type CoordinatorMetrics struct {
	// Buffered are the writes (and notify-afters) in its write buffers
	// that some ring does not yet hold; Waiting the puts waiting for room
	// (MaxBuffered). PutsWaited counts the puts that had to wait.
	Buffered, Waiting, PutsWaited uint64
}

// Metrics returns the coordinator's metrics.
func (c *Coordinator) Metrics() CoordinatorMetrics {
	return CoordinatorMetrics{Buffered: uint64(len(c.incomplete)), Waiting: uint64(len(c.waiting)), PutsWaited: c.putsWaited}
}

// waitingPut is a put waiting for room in the write buffers.
type waitingPut struct {
	from wire.NodeID
	m    *wire.CausalPut
}

// putID names a session's put.
type putID struct {
	s   sessionID
	seq uint64
}

// NewCoordinator returns a coordinator; Start starts it.
func NewCoordinator(opts CoordinatorOptions) *Coordinator {
	return &Coordinator{opts: opts.EnsureDefaults()}
}

// resend names a write sent to a ring, to send again if unacknowledged.
type resend struct {
	s    sessionID
	seq  uint64
	ring int
}

// The coordinator's timers: each of the first three fires its deadlines
// queue; a last chance fails a read or get-transaction just before its
// deadline (lastChance).
type (
	resendTimer    struct{}
	readTimer      struct{}
	cacheReadTimer struct{}
	lastChance     struct{ req uint64 }
	txLastChance   struct{ tx uint64 }
)

// Start implements node.Handler: it reloads the write buffers and
// propagates what they hold (Karma 4.4: pending propagation completes on
// recovery).
func (c *Coordinator) Start(env node.Env) error {
	if err := c.opts.Validate(); err != nil {
		return err
	}
	c.env = env
	c.layout = c.opts.Layout
	c.clock = hlc.NewClock(env.WallNanos)
	c.site = Site(env.ID())
	c.home = c.layout.HomeRing(c.site)
	if c.layout.Static && c.home < 0 {
		return fmt.Errorf("causal: coordinator %s: the table's reads are static, but site %s has no ring", env.ID(), c.site)
	}
	c.near = newNearness(Site(env.ID()), c.opts.RTT)
	c.nextReq = firstReq(env)
	c.sessions = map[sessionID]*wbSession{}
	c.incomplete = map[wire.Version]*buffered{}
	c.waitingSeq = map[putID]bool{}
	c.reads = map[uint64]*pendingRead{}
	c.txs = map[uint64]*pendingTx{}
	c.txReads = map[uint64]txRead{}
	c.answered = map[wire.NodeID]answer{}
	c.boundWaiting = map[uint64]bool{}
	c.stalled = map[wire.NodeID]bool{}
	c.stability = newStability()
	c.holdings = newHoldings()
	c.resends = newDeadlines[resend](c.opts.Resend, resendTimer{})
	c.retx = newRetransmit(c.opts.Resend)
	c.ringReads = newDeadlines[uint64](c.opts.ReadTimeout, readTimer{})
	c.cacheReads = newDeadlines[uint64](2*c.opts.ReadTimeout, cacheReadTimer{})
	// Its own table's writes only: a site's coordinator node keeps every
	// causal table's write buffers in one engine (Node).
	start, end := bufferPrefix(c.layout.Table), bufferPrefix(c.layout.Table+1)
	err := storage.Walk(env.Engine(), start, end, func(k, v []byte) (bool, error) {
		s, seq, err := parseBufferKey(k)
		if err != nil {
			return false, err
		}
		e, err := decodeBuffered(v)
		if err != nil {
			return false, err
		}
		e.seq = seq
		e.sent = make([]time.Time, len(c.layout.Rings))
		e.to = make([]wire.NodeID, len(c.layout.Rings))
		e.tries = make([]uint8, len(c.layout.Rings))
		ws := c.session(s)
		ws.entries = append(ws.entries, e)
		ws.taken = max(ws.taken, seq)
		c.incomplete[e.version] = e
		c.clock.Update(e.version.TS)
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("causal: coordinator %s: read write buffers: %w", env.ID(), err)
	}
	for _, ws := range c.sortedSessions() {
		c.propagate(ws)
	}
	return nil
}

func (c *Coordinator) sortedSessions() []*wbSession {
	out := make([]*wbSession, 0, len(c.sessions))
	for _, ws := range c.sessions {
		out = append(out, ws)
	}
	slices.SortFunc(out, func(a, b *wbSession) int {
		if a.id.client != b.id.client {
			if a.id.client < b.id.client {
				return -1
			}
			return 1
		}
		return int(a.id.session) - int(b.id.session)
	})
	return out
}

func (c *Coordinator) session(id sessionID) *wbSession {
	ws := c.sessions[id]
	if ws == nil {
		ws = &wbSession{id: id}
		c.sessions[id] = ws
	}
	return ws
}

// Receive implements node.Handler.
func (c *Coordinator) Receive(from wire.NodeID, m wire.Msg) {
	c.receive(from, m)
	// After the message, so that a write it acknowledges is not sent
	// again.
	if c.stalled[from] {
		delete(c.stalled, from)
		c.resume(from)
	}
}

func (c *Coordinator) receive(from wire.NodeID, m wire.Msg) {
	switch m := m.(type) {
	case *wire.CausalPut:
		c.put(from, m)
	case *wire.PropagateAck:
		c.propagateAck(from, m)
	case *wire.CausalGet:
		c.get(from, m)
	case *wire.CausalGetTx:
		c.getTx(from, m)
	case *wire.ReadReply:
		c.readReply(from, m)
	case *wire.DepCheck:
		c.depCheck(from, m)
	case *wire.DepCheckReply:
		if !c.heldReply(m) {
			c.watched(m)
		}
	}
}

// Fire implements node.Handler.
func (c *Coordinator) Fire(timer any) {
	switch t := timer.(type) {
	case resendTimer:
		for _, t := range c.resends.fire(c.env) {
			c.resend(t)
		}
	case readTimer:
		for _, req := range c.ringReads.fire(c.env) {
			c.readTimeout(req)
		}
	case cacheReadTimer:
		for _, req := range c.cacheReads.fire(c.env) {
			c.readTimeout(req)
		}
	case lastChance:
		if p := c.reads[t.req]; p != nil {
			delete(c.reads, t.req)
			delete(c.boundWaiting, t.req)
			c.env.Send(p.client, c.unavailable(p))
		}
	case txLastChance:
		if tx := c.txs[t.tx]; tx != nil {
			c.endTx(t.tx, tx, &wire.CausalGetTxReply{Req: tx.m.Req, Table: c.layout.Table, Code: wire.Unavailable, Ring: int32(tx.ring), Rounds: int32(tx.round)})
		}
	}
}

// put takes a write (or notify-after) into the session's write buffer.
func (c *Coordinator) put(from wire.NodeID, m *wire.CausalPut) {
	reply := &wire.CausalPutReply{Req: m.Req, Table: c.layout.Table}
	switch {
	case m.Table != c.layout.Table:
		reply.Code = wire.NoTable
	case len(m.Value) > c.opts.MaxValueBytes:
		reply.Code = wire.TooLarge
	case m.Seq == 0 || (!m.Notify && m.Key == "") || (m.Notify && (m.Key != "" || len(m.Value) > 0)):
		reply.Code = wire.Invalid
	}
	if reply.Code != wire.OK {
		c.env.Send(from, reply)
		return
	}
	ws := c.session(sessionID{from, m.Session})
	if m.Seq <= ws.taken {
		// A duplicate: answer again if the write is still buffered.
		for _, e := range ws.entries {
			if e.seq == m.Seq {
				reply.Version = e.version
				c.env.Send(from, reply)
			}
		}
		return
	}
	if len(c.waiting) > 0 || len(c.incomplete) >= c.opts.MaxBuffered {
		if id := (putID{ws.id, m.Seq}); !c.waitingSeq[id] {
			c.waitingSeq[id] = true
			c.waiting = append(c.waiting, waitingPut{from, m})
			c.putsWaited++
		}
		return
	}
	c.take(from, m, ws)
}

// take buffers session ws's put, acknowledges it and propagates it.
func (c *Coordinator) take(from wire.NodeID, m *wire.CausalPut, ws *wbSession) {
	reply := &wire.CausalPutReply{Req: m.Req, Table: c.layout.Table}
	c.clock.Update(m.Seen.TS)
	for _, d := range m.Deps {
		c.clock.Update(d.Version.TS)
	}
	e := &buffered{
		seq: m.Seq, key: m.Key, value: m.Value, notify: m.Notify,
		version: wire.Version{TS: c.clock.Now(), Origin: c.env.ID()},
		deps:    m.Deps,
		sent:    make([]time.Time, len(c.layout.Rings)),
		to:      make([]wire.NodeID, len(c.layout.Rings)),
		tries:   make([]uint8, len(c.layout.Rings)),
	}
	c.batch.Reset()
	c.batch.Set(bufferKey(c.layout.Table, ws.id, e.seq), encodeBuffered(e))
	if err := c.env.Engine().Apply(&c.batch, true); err != nil {
		reply.Code = wire.StorageFailed
		c.env.Send(from, reply)
		return
	}
	ws.taken = m.Seq
	ws.entries = append(ws.entries, e)
	c.incomplete[e.version] = e
	reply.Version = e.version
	c.env.Send(from, reply)
	c.propagate(ws)
}

// propagate sends, for each ring, the session's writes not yet sent to
// it, in program order, up to Window unacknowledged (Karma Fig. 5:
// per-ring propagators in queue order).
func (c *Coordinator) propagate(ws *wbSession) {
	for r := range c.layout.Rings {
		unacked := 0
		for i, e := range ws.entries {
			if e.acked&(1<<r) != 0 {
				continue
			}
			if unacked >= c.opts.Window {
				break
			}
			unacked++
			if e.sent[r].IsZero() {
				c.send(ws, i, r)
			}
		}
	}
	c.completeHeads(ws)
}

// resend sends a write again to a ring that has not acknowledged it: only
// the session's oldest write the ring lacks, after its node's wait
// (retransmit) and with backoff, so that a ring slowed by load is not
// sent every write again each Resend (the transport is reliable; a write
// is lost only with a crashed node or a cut link, and the ring then lacks
// the oldest too). A later write whose turn has not come waits another
// Resend.
func (c *Coordinator) resend(t resend) {
	ws := c.sessions[t.s]
	if ws == nil {
		return
	}
	oldest := true
	for i, e := range ws.entries {
		if e.acked&(1<<t.ring) != 0 {
			continue
		}
		if e.seq != t.seq {
			oldest = false
			continue
		}
		if !oldest || c.env.Now().Sub(e.sent[t.ring]) < c.retx.backoff(e.to[t.ring], max(e.tries[t.ring], 1)-1) {
			c.resends.add(c.env, t)
			return
		}
		c.send(ws, i, t.ring)
		return
	}
}

// resume sends again at once, with the backoff reset, each session's
// oldest write that node's ring has not acknowledged and that was already
// sent more than once: the node answers again (a partition healed, or it
// restarted), and the backoff would otherwise hold those writes, and the
// restrictions on them, for up to maxRetransmit resend intervals (Karma 4.4:
// propagation completes on recovery; TestChaosKarma saw reads bound to a
// ring fail in a fault that struck it a few seconds after another had
// healed). Writes stalled on another node of the ring go again too,
// which the ring takes as duplicates.
func (c *Coordinator) resume(node wire.NodeID) {
	r := c.layout.RingOf(node)
	if r < 0 {
		return
	}
	for _, ws := range c.sortedSessions() {
		for i, e := range ws.entries {
			if e.acked&(1<<r) != 0 {
				continue
			}
			if e.tries[r] > 1 {
				e.tries[r] = 0
				c.send(ws, i, r)
			}
			break
		}
	}
}

// send sends the session's i-th buffered write to ring r. If the ring
// has not acknowledged the session's previous write, that write becomes
// a dependency too, so that the ring applies them in program order.
func (c *Coordinator) send(ws *wbSession, i int, r int) {
	e := ws.entries[i]
	deps := e.deps
	for j := i - 1; j >= 0; j-- {
		if p := ws.entries[j]; !p.notify {
			if p.acked&(1<<r) == 0 {
				deps = append(slices.Clip(deps), wire.Dep{Key: p.key, Version: p.version})
			}
			break
		}
	}
	if e.notify && len(deps) == 0 {
		e.acked |= 1 << r // nothing to check
		return
	}
	e.sent[r] = c.env.Now()
	e.tries[r] = min(e.tries[r]+1, 6)
	target := c.layout.Node(r, e.key)
	if e.notify {
		target = c.layout.Node(r, deps[0].Key)
	}
	if e.tries[r] > 1 {
		c.stalled[target] = true
		e.again |= 1 << r
	}
	e.to[r] = target
	c.env.Send(target, &wire.Propagate{
		Table: c.layout.Table, Session: ws.id.session, Seq: e.seq,
		Key: e.key, Value: e.value, Version: e.version, Deps: deps, Notify: e.notify,
		Client: ws.id.client,
	})
	c.resends.add(c.env, resend{ws.id, e.seq, r})
}

func (c *Coordinator) propagateAck(from wire.NodeID, m *wire.PropagateAck) {
	if m.Table != c.layout.Table || m.Ring < 0 || int(m.Ring) >= len(c.layout.Rings) {
		return
	}
	ws := c.sessions[sessionID{m.Client, m.Session}]
	if ws == nil {
		return
	}
	r := int(m.Ring)
	for _, e := range ws.entries {
		if e.seq != m.Seq || e.acked&(1<<r) != 0 {
			continue
		}
		e.acked |= 1 << r
		if e.again&(1<<r) == 0 && e.to[r] == from {
			c.retx.answered(from, c.env.Now().Sub(e.sent[r]))
		}
	}
	c.propagate(ws)
	c.releaseWaiting() // a read bound elsewhere may rebind to r (rebind.go)
}

// completeHeads retires the session's writes that every ring holds, in
// program order: STABLE to the key's node in every ring (Karma 4.1.2),
// completion to the client, and the write leaves the buffer.
func (c *Coordinator) completeHeads(ws *wbSession) {
	all := uint64(1)<<len(c.layout.Rings) - 1
	completed := false
	for len(ws.entries) > 0 && ws.entries[0].acked == all {
		e := ws.entries[0]
		ws.entries = ws.entries[1:]
		delete(c.incomplete, e.version)
		if !e.notify {
			for r := range c.layout.Rings {
				c.env.Send(c.layout.Node(r, e.key), &wire.Stable{Table: c.layout.Table, Key: e.key, Version: e.version})
			}
		}
		c.env.Send(ws.id.client, &wire.CausalComplete{Table: c.layout.Table, Session: ws.id.session, Seq: e.seq})
		for _, w := range e.watchers {
			c.env.Send(w.from, &wire.DepCheckReply{Req: w.req, Table: c.layout.Table, Done: true})
		}
		c.batch.Reset()
		c.batch.Delete(bufferKey(c.layout.Table, ws.id, e.seq))
		// Unsynced: a delete lost in a crash propagates the write again,
		// which the rings take as a duplicate.
		if err := c.env.Engine().Apply(&c.batch, false); err != nil {
			c.opts.Logger.Error("causal: drop buffered write", "err", err)
		}
		completed = true
	}
	if completed {
		c.releaseWaiting()
		c.admit()
	}
}

// admit takes the waiting puts, in arrival order, while the write
// buffers have room.
func (c *Coordinator) admit() {
	for len(c.waiting) > 0 && len(c.incomplete) < c.opts.MaxBuffered {
		w := c.waiting[0]
		c.waiting[0] = waitingPut{}
		c.waiting = c.waiting[1:]
		delete(c.waitingSeq, putID{sessionID{w.from, w.m.Session}, w.m.Seq})
		c.take(w.from, w.m, c.session(sessionID{w.from, w.m.Session}))
	}
}

// buffered returns the session's newest buffered write of key, or nil.
func (c *Coordinator) bufferedWrite(id sessionID, key string) *buffered {
	ws := c.sessions[id]
	if ws == nil {
		return nil
	}
	for i := len(ws.entries) - 1; i >= 0; i-- {
		if e := ws.entries[i]; !e.notify && e.key == key {
			return e
		}
	}
	return nil
}

// pendingRead is a client's Get in progress, or one key of a
// get-transaction's round.
type pendingRead struct {
	client wire.NodeID
	get    *wire.CausalGet
	wb     *buffered
	// ring is the ring being read, or NoRing when the cache is asked;
	// node is the node asked; tried the rings tried (a bit set).
	ring int32
	node wire.NodeID
	sent time.Time
	// read is the request sent to node; asked the newest request number
	// when it was last sent (askAgain).
	read   *wire.Read
	asked  uint64
	bound  bool
	tried  uint64
	cached bool // the cache was tried
	// rebound: bound to a ring that did not answer, it went to another
	// that holds its restrictions (rebind.go).
	rebound bool
	// deadline is when the client stops waiting (WallNanos).
	deadline int64
	// lifted are the get's restrictions known stable.
	lifted []wire.Dep
}

// get serves a client's read (Karma Fig. 3): the session's write buffer,
// then the site's cache, then a ring. A read bound to a ring uses only
// what the cache filled from that ring (Cache's comment), where the
// paper bypasses the cache.
func (c *Coordinator) get(from wire.NodeID, m *wire.CausalGet) {
	if m.Table != c.layout.Table {
		c.env.Send(from, &wire.CausalGetReply{Req: m.Req, Table: c.layout.Table, Code: wire.NoTable})
		return
	}
	if m.Ring != wire.NoRing && (m.Ring < 0 || int(m.Ring) >= len(c.layout.Rings)) {
		c.env.Send(from, &wire.CausalGetReply{Req: m.Req, Table: c.layout.Table, Code: wire.Invalid})
		return
	}
	wb := c.bufferedWrite(sessionID{from, m.Session}, m.Key)
	lifted := c.lift(m.Restrictions)
	// Karma Fig. 3 step 1, made safe under last-writer-wins: a buffered
	// write newer than every version the session read elsewhere is
	// newer than anything in their causal pasts, so it is the answer.
	// An older one may have been overwritten by a version the session's
	// reads depend on (Karma 4.1.2 reads the ring instead when bound to
	// a ring the write reached; that misses a concurrent newer version
	// in a ring the write did not reach), so the stores are asked and
	// the newer of the two wins.
	if wb != nil && m.MaxRead.Less(wb.version) {
		c.env.Send(from, c.fromBuffer(m.Req, wb, lifted))
		return
	}
	p := &pendingRead{client: from, get: m, wb: wb, ring: wire.NoRing, deadline: c.deadline(m.Deadline), lifted: lifted}
	if m.Ring != wire.NoRing && !liftsAll(m.Restrictions, lifted) {
		p.bound = true
		c.readBound(p)
		return
	}
	c.readFree(p)
}

// readBound serves a read bound to its ring: through the site's cache if
// it has one, else from the ring.
func (c *Coordinator) readBound(p *pendingRead) {
	if !c.cacheUsable() {
		c.readRing(p, int(p.get.Ring))
		return
	}
	p.cached = true
	c.readNode(p, c.layout.Caches[c.site], wire.NoRing)
}

// cacheUsable reports whether the site has a cache not suspected down.
func (c *Coordinator) cacheUsable() bool {
	return c.layout.Caches[c.site] != "" && !c.near.suspected(c.layout.Caches[c.site], c.env.Now())
}

// afterCache reads a ring when the cache did not answer: the read's own
// if bound to one, else the nearest. failed is the ring's node whose
// fill timed out at the cache, if the cache said so: a bound read then
// goes to another ring holding its restrictions if the coordinator knows
// one, and otherwise waits for its node as one that may rebind
// (releaseWaiting) without first waiting ReadTimeout, which with the
// cache's own wait before it passed a 2 s request timeout (cosla chaos,
// karma8, Brazil's AZ-B failed: Brazil is a ring of one site).
func (c *Coordinator) afterCache(p *pendingRead, failed wire.NodeID) {
	if !p.bound {
		c.readNearest(p)
		return
	}
	r := int(p.get.Ring)
	stuck := failed != "" && failed == c.layout.Node(r, p.get.Key)
	if stuck {
		if to := c.rebindRing(p.get.Restrictions, r); to >= 0 {
			p.rebound = true
			r = to
		}
	}
	c.readRing(p, r)
	if stuck && !p.rebound {
		c.boundWaiting[c.nextReq] = true
	}
}

// readFree serves a read no restriction binds: from the site's ring if
// the table's reads are static, else the site's cache or the nearest
// ring.
func (c *Coordinator) readFree(p *pendingRead) {
	switch {
	case c.layout.Static:
		p.bound = true
		c.readRing(p, c.home)
	case c.cacheUsable() && !(c.opts.RandomRings && c.env.Rand().IntN(2) == 0):
		p.cached = true
		c.readNode(p, c.layout.Caches[c.site], wire.NoRing)
	default:
		c.readNearest(p)
	}
}

func (c *Coordinator) fromBuffer(req uint64, e *buffered, lifted []wire.Dep) *wire.CausalGetReply {
	return &wire.CausalGetReply{Req: req, Table: c.layout.Table, Found: true, Value: e.value, Version: e.version,
		Source: wire.FromBuffer, Ring: wire.NoRing, Node: c.env.ID(), InFlight: true, Lifted: lifted}
}

// liftsAll reports whether lifted holds every restriction a request
// named, so that it is no longer bound to its ring. A request bound to a
// ring that names none (an older client) stays bound.
func liftsAll(restrictions, lifted []wire.Dep) bool {
	return len(restrictions) > 0 && len(lifted) == len(restrictions)
}

func (c *Coordinator) readNearest(p *pendingRead) {
	order := c.near.order(c.layout, p.get.Key, c.env.Now(), p.tried)
	if c.opts.RandomRings && len(order) > 1 {
		i := c.env.Rand().IntN(len(order))
		order[0], order[i] = order[i], order[0]
	}
	if len(order) == 0 {
		c.env.Send(p.client, c.unavailable(p))
		return
	}
	c.readRing(p, order[0])
}

func (c *Coordinator) readRing(p *pendingRead, r int) {
	p.tried |= 1 << r
	c.readNode(p, c.layout.Node(r, p.get.Key), int32(r))
}

// deadline is a request's deadline (WallNanos), or GetTimeout from now if
// it names none.
func (c *Coordinator) deadline(ts hlc.Timestamp) int64 {
	if ts.IsZero() {
		return c.env.WallNanos() + int64(c.opts.GetTimeout)
	}
	return ts.WallNanos
}

// readDeadline is how long a read sent now may take before the
// coordinator gives it up: ReadTimeout (twice that through the cache)
// when it would then try another ring, else the operation's deadline.
func (c *Coordinator) readDeadline(moveOn bool, wait time.Duration, deadline int64) hlc.Timestamp {
	if moveOn {
		deadline = min(deadline, c.env.WallNanos()+int64(wait))
	}
	return hlc.Timestamp{WallNanos: deadline}
}

// released reports whether p waits for its ring only because of
// restrictions that the coordinator now knows stable, and records them
// lifted.
func (c *Coordinator) released(p *pendingRead) bool {
	if !p.bound || p.get.Ring == wire.NoRing || c.layout.Static {
		return false
	}
	lifted := c.lift(p.get.Restrictions)
	if !liftsAll(p.get.Restrictions, lifted) {
		return false
	}
	p.lifted = lifted
	return true
}

// moveOn reports whether p, when its node is slow, tries elsewhere: from
// the cache the rings, unbound another ring not yet tried.
func (c *Coordinator) moveOn(p *pendingRead) bool {
	return p.ring == wire.NoRing || (!p.bound && p.tried != 1<<len(c.layout.Rings)-1)
}

func (c *Coordinator) readNode(p *pendingRead, to wire.NodeID, ring int32) {
	c.nextReq++
	req := c.nextReq
	p.ring, p.node, p.sent, p.asked = ring, to, c.env.Now(), req
	c.reads[req] = p
	wait := c.opts.ReadTimeout
	if ring == wire.NoRing {
		wait *= 2
	}
	p.read = &wire.Read{Req: req, Table: c.layout.Table, Key: p.get.Key, Ring: wire.NoRing, Deadline: c.readDeadline(c.moveOn(p), wait, p.deadline)}
	if ring == wire.NoRing && p.bound {
		p.read.Ring, p.read.Min = p.get.Ring, restrictedVersion(p.get.Restrictions, p.get.Key)
	}
	c.env.Send(to, p.read)
	if ring == wire.NoRing {
		c.cacheReads.add(c.env, req)
	} else {
		c.ringReads.add(c.env, req)
	}
}

// restrictedVersion is the newest version of key among a read's
// restrictions (zero: none), which a cache must not serve an older one
// than.
func restrictedVersion(restrictions []wire.Dep, key string) wire.Version {
	var v wire.Version
	for _, d := range restrictions {
		if d.Key == key && v.Less(d.Version) {
			v = d.Version
		}
	}
	return v
}

// expiring reports whether a wait checked every ReadTimeout would pass
// deadline before its next check. The read then waits for its last
// chance (lastChance), on a timer of its own, and fails there unless
// answered, so that the coordinator's answer, naming the node it waited
// for, reaches the client before the client gives up. Failing at the
// check instead left between nothing and ReadTimeout for the answer:
// each check is set ReadTimeout after the previous one ran, so in a real
// process every check's wait for its core adds to the next, and the
// first check to find the read expiring could come after the client had
// given up.
func (c *Coordinator) expiring(deadline int64) bool {
	return c.env.WallNanos()+int64(c.opts.ReadTimeout) >= deadline
}

// readTimeout: a read waited ReadTimeout. One that can go elsewhere
// does; one bound to its ring (or with every ring tried) waits on until
// its deadline, rather than fail while its ring is merely slow, and asks
// again if the read may have been lost (askAgain).
func (c *Coordinator) readTimeout(req uint64) {
	if tr, ok := c.txReads[req]; ok {
		c.txTimeout(req, tr)
		return
	}
	p := c.reads[req]
	if p == nil {
		return
	}
	c.near.timedOut(p.node, c.env.Now())
	switch {
	case c.released(p):
		// Its restrictions became stable while it waited.
		delete(c.reads, req)
		p.bound = false
		c.readFree(p)
	case p.ring == wire.NoRing:
		delete(c.reads, req)
		c.afterCache(p, "")
	case c.moveOn(p):
		delete(c.reads, req)
		c.readNearest(p)
	case c.rebind(req, p):
	case c.expiring(p.deadline):
		if p.bound {
			c.boundWaiting[req] = true
		}
		c.env.After(c.lastChance(p.deadline), lastChance{req})
	case c.askAgain(p.node, p.asked):
		p.asked = c.nextReq
		c.env.Send(p.node, again(p.read, p.deadline))
		fallthrough
	default:
		c.ringReads.add(c.env, req)
		if p.bound {
			c.boundWaiting[req] = true
		}
	}
}

// answer is the newest read a storage node answered, and when.
type answer struct {
	req uint64
	at  time.Time
}

// heard records that node answered read req.
func (c *Coordinator) heard(node wire.NodeID, req uint64) {
	a := c.answered[node]
	c.answered[node] = answer{req: max(a.req, req), at: c.env.Now()}
}

// askAgain reports whether a read that node has left unanswered for
// ReadTimeout is sent to it again (under the same request number, so
// that either answer serves), because it may have been lost. asked is
// the newest request number when the read was last sent.
//   - The node answered a read sent after it: it serves reads in the
//     order they arrive over an ordered link, so this one was lost (the
//     node restarted).
//   - The node answered no read for ReadTimeout: it is down or cut off,
//     and the read may have been dropped with the link. Asked again every
//     ReadTimeout, it is answered soon after the node is back: a read
//     bound to a ring whose node a partition cut off for a second
//     otherwise waited out its deadline after the heal, since nothing
//     else was sent to that node (TestChaosKarma, a ring partition
//     between a site's AZ-F and another ring's AZ-B).
//
// A node that answers older reads meanwhile is only slow, and is not
// asked twice.
func (c *Coordinator) askAgain(node wire.NodeID, asked uint64) bool {
	return c.answered[node].req > asked || c.silent(node)
}

// silent reports whether node has answered no read for ReadTimeout: it
// is down or cut off, or too loaded to be worth waiting for.
func (c *Coordinator) silent(node wire.NodeID) bool {
	return c.env.Now().Sub(c.answered[node].at) >= c.opts.ReadTimeout
}

// again is read sent again with the operation's deadline (its first
// sending may have had a shorter one, to move on).
func again(read *wire.Read, deadline int64) *wire.Read {
	m := *read
	m.Deadline = hlc.Timestamp{WallNanos: deadline}
	return &m
}

// releaseWaiting serves unbound, at once, the reads bound to a ring and
// waiting for it whose restrictions the coordinator now knows stable: a
// session bound to a ring that a fault made slow or cut off (Karma 4.4)
// is released as soon as the writes it depends on complete, rather than
// at its read's next ReadTimeout. They are few: reads that waited
// ReadTimeout already. In request order, for determinism.
func (c *Coordinator) releaseWaiting() {
	if len(c.boundWaiting) == 0 {
		return
	}
	for _, req := range slices.Sorted(maps.Keys(c.boundWaiting)) {
		p := c.reads[req]
		if p == nil {
			delete(c.boundWaiting, req)
			continue
		}
		if c.released(p) {
			delete(c.reads, req)
			delete(c.boundWaiting, req)
			p.bound = false
			c.readFree(p)
			continue
		}
		c.rebind(req, p)
	}
}

// unavailable is the reply to a read that no ring answered in time. It
// names the ring's node read last, if any, which did not answer: for a
// read bound to a ring the one node it could wait for.
func (c *Coordinator) unavailable(p *pendingRead) *wire.CausalGetReply {
	m := &wire.CausalGetReply{Req: p.get.Req, Table: c.layout.Table, Code: wire.Unavailable, Ring: wire.NoRing, Lifted: p.lifted}
	if p.ring != wire.NoRing {
		m.Ring, m.Node = p.ring, p.node
	}
	return m
}

func (c *Coordinator) readReply(from wire.NodeID, m *wire.ReadReply) {
	if tr, ok := c.txReads[m.Req]; ok {
		c.txReply(from, m, tr)
		return
	}
	p := c.reads[m.Req]
	if p == nil || from != p.node {
		return
	}
	delete(c.reads, m.Req)
	delete(c.boundWaiting, m.Req)
	if p.ring != wire.NoRing {
		c.heard(from, m.Req)
	}
	if m.Code == wire.OK && m.Source != wire.FromCache {
		c.near.observe(m.Node, c.env.Now().Sub(p.sent))
	}
	if m.Code != wire.OK {
		if p.cached && m.Code == wire.Unavailable {
			// The cache's fill from m.Node timed out: avoid that node
			// and try the rings from here.
			if m.Node != "" {
				c.near.timedOut(m.Node, c.env.Now())
			}
			c.afterCache(p, m.Node)
			return
		}
		c.env.Send(p.client, &wire.CausalGetReply{Req: p.get.Req, Table: c.layout.Table, Code: m.Code, Lifted: p.lifted})
		return
	}
	if p.wb != nil && m.Version.Less(p.wb.version) {
		c.env.Send(p.client, c.fromBuffer(p.get.Req, p.wb, p.lifted))
		return
	}
	c.env.Send(p.client, &wire.CausalGetReply{Req: p.get.Req, Table: c.layout.Table, Found: m.Found, Value: m.Value, Version: m.Version,
		Source: m.Source, Ring: m.Ring, Node: m.Node, InFlight: m.InFlight, Lifted: p.lifted, Rebound: p.rebound})
}
