package config

import (
	"bytes"
	"cmp"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cosla/cosla/internal/core/causal"
	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/node"
	"github.com/cosla/cosla/internal/core/storage"
	"github.com/cosla/cosla/internal/core/wire"
)

// world runs configuration Nodes and scripted replicas (the group of
// member_test.go grown to whole nodes): a network with a fixed one-way
// delay, lossless and ordered unless a node is cut off or dead, and
// timers, in virtual time, one event at a time, so that a run is a
// function of its seed. Messages to a node the world does not host (a
// client) are kept in inbox.
type world struct {
	t        *testing.T
	seed     uint64
	opts     NodeOptions
	start    time.Time
	now      time.Time
	delay    time.Duration
	seq      int
	events   []event
	nodes    map[wire.NodeID]*Node
	engines  map[wire.NodeID]*storage.Mem
	replicas map[wire.NodeID]*scripted
	lives    map[wire.NodeID]int // a handler's incarnation: timers of an earlier one never fire
	cut      map[wire.NodeID]bool
	cutLinks map[[2]wire.NodeID]bool // both directions of a link are cut
	inbox    map[wire.NodeID][]wire.Msg
	leading  map[wire.NodeID]bool
	// trace is every message but raft's, every change of leader and
	// every log line at Info and above, in order.
	trace []string
	logs  bytes.Buffer
	// check, if set, runs after every event.
	check func()
}

type event struct {
	at       time.Time
	seq      int
	from, to wire.NodeID
	msg      wire.Msg
	timer    any
	life     int
}

func newWorld(t *testing.T, seed uint64, opts NodeOptions) *world {
	w := &world{
		t: t, seed: seed, opts: opts, start: time.Unix(1000, 0), delay: 10 * time.Millisecond,
		nodes: map[wire.NodeID]*Node{}, engines: map[wire.NodeID]*storage.Mem{}, replicas: map[wire.NodeID]*scripted{},
		lives: map[wire.NodeID]int{}, cut: map[wire.NodeID]bool{}, cutLinks: map[[2]wire.NodeID]bool{}, inbox: map[wire.NodeID][]wire.Msg{}, leading: map[wire.NodeID]bool{},
	}
	w.now = w.start
	for _, v := range opts.Member.Voters {
		w.engines[v] = storage.NewMem()
		w.startNode(v)
	}
	return w
}

// voters3World is a world of three members a/cfg, b/cfg and c/cfg with
// the default options but those set.
func voters3World(t *testing.T, seed uint64, opts NodeOptions) *world {
	opts.Member.Voters = voters3
	return newWorld(t, seed, opts)
}

func (w *world) startNode(id wire.NodeID) {
	w.t.Helper()
	n := NewNode(w.opts)
	w.lives[id]++
	if err := n.Start(w.env(id)); err != nil {
		w.t.Fatalf("starting %s: %v", id, err)
	}
	w.nodes[id] = n
}

// crash loses a member's volatile state and its unsynced writes.
func (w *world) crash(id wire.NodeID) {
	w.engines[id].Crash()
	delete(w.nodes, id)
	delete(w.leading, id)
	w.lives[id]++
}

func (w *world) env(id wire.NodeID) worldEnv {
	h := slog.NewTextHandler(&w.logs, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}})
	return worldEnv{id: id, w: w, rand: rand.New(rand.NewPCG(w.seed, idHash(id))), logger: slog.New(h).With("node", id)}
}

func idHash(id wire.NodeID) uint64 {
	h := fnv.New64a()
	h.Write([]byte(id))
	return h.Sum64()
}

type worldEnv struct {
	id     wire.NodeID
	w      *world
	rand   *rand.Rand
	logger *slog.Logger
}

func (e worldEnv) ID() wire.NodeID                 { return e.id }
func (e worldEnv) Now() time.Time                  { return e.w.now }
func (e worldEnv) WallNanos() int64                { return e.w.now.UnixNano() }
func (e worldEnv) Send(to wire.NodeID, m wire.Msg) { e.w.send(e.id, to, m) }
func (e worldEnv) After(d time.Duration, timer any) {
	e.w.schedule(event{at: e.w.now.Add(d), to: e.id, timer: timer, life: e.w.lives[e.id]})
}
func (e worldEnv) Rand() *rand.Rand       { return e.rand }
func (e worldEnv) Engine() storage.Engine { return e.w.engines[e.id] }
func (e worldEnv) Logger() *slog.Logger   { return e.logger }

func (w *world) schedule(ev event) {
	w.seq++
	ev.seq = w.seq
	i, _ := slices.BinarySearchFunc(w.events, ev, func(a, b event) int {
		return cmp.Or(a.at.Compare(b.at), cmp.Compare(a.seq, b.seq))
	})
	w.events = slices.Insert(w.events, i, ev)
}

func (w *world) send(from, to wire.NodeID, m wire.Msg) {
	if w.cut[from] || w.cut[to] || w.cutLinks[[2]wire.NodeID{from, to}] || w.cutLinks[[2]wire.NodeID{to, from}] {
		return
	}
	w.schedule(event{at: w.now.Add(w.delay), from: from, to: to, msg: m})
}

// run handles every event due within d from now.
func (w *world) run(d time.Duration) {
	w.t.Helper()
	end := w.now.Add(d)
	for len(w.events) > 0 && !w.events[0].at.After(end) {
		ev := w.events[0]
		w.events = w.events[1:]
		w.now = ev.at
		w.handle(ev)
		w.noteLeaders()
		w.noteLogs()
		if w.check != nil {
			w.check()
		}
	}
	w.now = end
}

func (w *world) handle(ev event) {
	h := w.handler(ev.to)
	if ev.timer != nil {
		if h != nil && ev.life == w.lives[ev.to] {
			h.Fire(ev.timer)
		}
		return
	}
	if w.cut[ev.to] {
		return
	}
	if _, raft := ev.msg.(*wire.ConfigRaft); !raft {
		w.tracef("%s -> %s %s", ev.from, ev.to, describe(ev.msg))
	}
	if h == nil {
		w.inbox[ev.to] = append(w.inbox[ev.to], ev.msg)
		return
	}
	h.Receive(ev.from, ev.msg)
}

func (w *world) handler(id wire.NodeID) node.Handler {
	if n, ok := w.nodes[id]; ok {
		return n
	}
	if r, ok := w.replicas[id]; ok && r.alive {
		return r
	}
	return nil
}

func (w *world) tracef(format string, args ...any) {
	w.trace = append(w.trace, fmt.Sprintf("%7.3fs ", w.now.Sub(w.start).Seconds())+fmt.Sprintf(format, args...))
}

// noteLeaders traces each member that starts or stops leading.
func (w *world) noteLeaders() {
	for _, id := range slices.Sorted(mapKeys(w.nodes)) {
		if lead := w.nodes[id].Metrics().Leader; lead != w.leading[id] {
			w.leading[id] = lead
			w.tracef("%s leading %v (term %d)", id, lead, w.nodes[id].Metrics().Term)
		}
	}
}

// noteLogs moves the log lines at Info and above into the trace.
func (w *world) noteLogs() {
	for _, line := range strings.Split(strings.TrimSpace(w.logs.String()), "\n") {
		if line != "" && !strings.HasPrefix(line, "level=DEBUG") {
			w.tracef("%s", line)
		}
	}
	w.logs.Reset()
}

// leader is the member that leads, or "".
func (w *world) leader() wire.NodeID {
	for _, id := range slices.Sorted(mapKeys(w.nodes)) {
		if !w.cut[id] && w.nodes[id].Metrics().Leader {
			return id
		}
	}
	return ""
}

// runUntilLeader runs until a member leads, or fails.
func (w *world) runUntilLeader() wire.NodeID {
	w.t.Helper()
	for range 100 {
		if l := w.leader(); l != "" {
			return l
		}
		w.run(100 * time.Millisecond)
	}
	w.t.Fatalf("no leader after 10s; trace:\n%s", strings.Join(w.trace, "\n"))
	return ""
}

// describe is a message's trace line, with an EpochChange's layout.
func describe(m wire.Msg) string {
	s := fmt.Sprint(m)
	if ec, ok := m.(*wire.EpochChange); ok {
		tb := ec.Layout.Tablets[ec.Tablet]
		s += fmt.Sprintf(" primary=%s secondaries=%v", tb.Primary, tb.Secondaries)
	}
	return s
}

// addTable creates a table at its scripted replicas (at epoch 1, as a
// replica with a service does), each with its high timestamp zero.
func (w *world) addTable(l wire.Layout) {
	for i, tb := range l.Tablets {
		for _, r := range tb.Replicas() {
			s := w.replica(r)
			ref := wire.TabletRef{Table: l.ID, Tablet: int32(i)}
			s.layouts[l.ID], s.epochs[ref] = l, 1
		}
	}
	for _, r := range w.replicas {
		r.renewSoon()
	}
}

// replica returns the scripted replica id, adding it if new.
func (w *world) replica(id wire.NodeID) *scripted {
	if r, ok := w.replicas[id]; ok {
		return r
	}
	r := &scripted{
		id: id, w: w, alive: true, layouts: map[uint64]wire.Layout{}, epochs: map[wire.TabletRef]uint64{},
		highs: map[wire.TabletRef]hlc.Timestamp{}, stuck: map[wire.TabletRef]bool{}, behind: map[wire.TabletRef]bool{},
		granted: map[wire.TabletRef]uint64{},
	}
	r.forget()
	w.replicas[id] = r
	w.lives[id]++
	r.env = w.env(id)
	r.guess = r.home()
	r.env.After(w.opts.Lease.EnsureDefaults().Renew, renewTimer{})
	return r
}

// scripted is a storage node reduced to what the service sees of it: it
// renews its leases as the primary its layouts name, answers
// HighRequests with the high timestamp its script gives (reaching a
// switchover's Until at once, unless stuck) and adopts and acknowledges
// EpochChanges.
type scripted struct {
	id      wire.NodeID
	w       *world
	env     worldEnv
	alive   bool
	layouts map[uint64]wire.Layout
	epochs  map[wire.TabletRef]uint64
	highs   map[wire.TabletRef]hlc.Timestamp
	stuck   map[wire.TabletRef]bool
	// behind: it is catching up (a rollback wiped it) and answers a
	// HighRequest Behind.
	behind map[wire.TabletRef]bool
	// granted is the epoch of each tablet its last grant listed.
	granted map[wire.TabletRef]uint64
	guess   wire.NodeID
	seq     uint64
	// waiting is when the first renewal not granted yet was sent.
	waiting time.Time
	// changes lists the EpochChanges adopted.
	changes []wire.EpochChange
	// The lease as PROTO27 has a primary keep it: sentAt is when each
	// renewal was sent and applied the newest Seq granted; asked is when
	// the lease of each tablet was asked for (it holds until asked +
	// Length - Margin); fenced is the epoch a HighRequest fenced a
	// tablet at, and fencedAt when.
	sentAt   map[uint64]time.Time
	applied  uint64
	asked    map[wire.TabletRef]time.Time
	fenced   map[wire.TabletRef]uint64
	fencedAt map[wire.TabletRef]time.Time
}

// holds reports whether r, alive, would accept a Put of tablet ref now:
// its layout makes it primary, it is not fenced, and its lease holds.
func (r *scripted) holds(ref wire.TabletRef) bool {
	l, ok := r.layouts[ref.Table]
	asked, leased := r.asked[ref]
	return r.alive && ok && l.Tablets[ref.Tablet].Primary == r.id && r.fenced[ref] == 0 && leased &&
		r.w.opts.Lease.EnsureDefaults().Holds(asked, r.env.Now())
}

type renewTimer struct{}

func (r *scripted) Start(node.Env) error { return nil }

// Fire renews every Lease.Renew, at the next member after 2 x Renew
// without a grant.
func (r *scripted) Fire(any) {
	renew := r.w.opts.Lease.EnsureDefaults().Renew
	r.env.After(renew, renewTimer{})
	if !r.waiting.IsZero() && r.env.Now().Sub(r.waiting) >= 2*renew {
		r.guess, r.waiting = r.next(r.guess), time.Time{}
	}
	r.renew()
}

func (r *scripted) renewSoon() {
	if r.alive {
		r.renew()
	}
}

// kill stops r: it answers nothing and renews nothing until revive.
func (r *scripted) kill() { r.alive = false }

// forget loses what a process keeps in memory only: its leases and
// fences.
func (r *scripted) forget() {
	r.sentAt, r.applied = map[uint64]time.Time{}, 0
	r.asked, r.fenced, r.fencedAt = map[wire.TabletRef]time.Time{}, map[wire.TabletRef]uint64{}, map[wire.TabletRef]time.Time{}
}

func (r *scripted) revive() {
	r.forget()
	r.alive = true
	r.w.lives[r.id]++
	r.env.After(r.w.opts.Lease.EnsureDefaults().Renew, renewTimer{})
}

// primaryOf lists the tablets r's layouts make it primary of, at its
// epochs, and the layouts not granted yet.
func (r *scripted) primaryOf() ([]wire.TabletEpoch, []wire.Layout) {
	var tablets []wire.TabletEpoch
	var layouts []wire.Layout
	for _, id := range slices.Sorted(mapKeys(r.layouts)) {
		l, listed := r.layouts[id], true
		for i, tb := range l.Tablets {
			ref := wire.TabletRef{Table: id, Tablet: int32(i)}
			if tb.Primary == r.id {
				tablets = append(tablets, wire.TabletEpoch{Tablet: ref, Epoch: r.epochs[ref]})
				listed = listed && r.granted[ref] == r.epochs[ref]
			}
		}
		if !listed {
			layouts = append(layouts, l)
		}
	}
	return tablets, layouts
}

func (r *scripted) renew() {
	tablets, layouts := r.primaryOf()
	if len(tablets) == 0 {
		return
	}
	r.seq++
	r.sentAt[r.seq] = r.env.Now()
	if r.waiting.IsZero() {
		r.waiting = r.env.Now()
	}
	r.env.Send(r.guess, &wire.LeaseRenew{Seq: r.seq, Tablets: tablets, Layouts: layouts})
}

// home is the member at r's site, or the first.
func (r *scripted) home() wire.NodeID {
	voters := r.w.opts.Member.Voters
	for _, v := range voters {
		if causal.Site(v) == causal.Site(r.id) {
			return v
		}
	}
	return voters[0]
}

func (r *scripted) next(v wire.NodeID) wire.NodeID {
	voters := r.w.opts.Member.Voters
	return voters[(slices.Index(voters, v)+1)%len(voters)]
}

func (r *scripted) Receive(from wire.NodeID, m wire.Msg) {
	switch m := m.(type) {
	case *wire.LeaseGrant:
		r.leaseGrant(m)
	case *wire.HighRequest:
		r.highRequest(from, m)
	case *wire.EpochChange:
		r.epochChange(from, m)
	}
}

func (r *scripted) epochChange(from wire.NodeID, m *wire.EpochChange) {
	ref := wire.TabletRef{Table: m.Layout.ID, Tablet: m.Tablet}
	if m.Epoch > r.epochs[ref] {
		// A new primary's first lease counts from the HighRequest of
		// its epoch; anyone else has none.
		delete(r.asked, ref)
		if m.Layout.Tablets[m.Tablet].Primary == r.id && r.fenced[ref] == m.Epoch {
			r.asked[ref] = r.fencedAt[ref]
		}
		if r.fenced[ref] <= m.Epoch {
			delete(r.fenced, ref)
		}
	}
	if m.Epoch >= r.epochs[ref] {
		r.epochs[ref], r.layouts[m.Layout.ID] = m.Epoch, m.Layout
		r.changes = append(r.changes, *m)
		if m.Start.Less(r.highs[ref]) {
			r.highs[ref] = m.Start // rolled back
		}
	}
	r.env.Send(from, &wire.EpochAck{Tablet: ref, Epoch: r.epochs[ref]})
	if m.Layout.Tablets[m.Tablet].Primary == r.id {
		r.renew()
	}
}

func (r *scripted) leaseGrant(m *wire.LeaseGrant) {
	if m.Code == wire.NotLeader {
		// At the named leader at once; with none named (no leader
		// yet), at the next member with the next renewal, so that
		// the members are not asked round and round meanwhile.
		r.guess = cmp.Or(m.Leader, r.next(r.guess))
		if m.Leader != "" {
			r.renew()
		}
		return
	}
	r.waiting = time.Time{}
	clear(r.granted)
	for _, te := range m.Tablets {
		r.granted[te.Tablet] = te.Epoch
	}
	sent, ok := r.sentAt[m.Seq]
	if !ok || m.Seq < r.applied {
		return // an older grant changes nothing
	}
	r.applied = m.Seq
	for _, te := range m.Tablets {
		if te.Epoch != r.epochs[te.Tablet] {
			continue
		}
		r.asked[te.Tablet] = sent
		// A grant of a renewal sent after a fence comes from a leader
		// with no transition of the tablet under way, and from a state
		// no earlier leader's move can change any more (Member.Ready):
		// the transition that fenced it is over without a move.
		if r.fenced[te.Tablet] != 0 && sent.After(r.fencedAt[te.Tablet]) {
			delete(r.fenced, te.Tablet)
		}
	}
}

func (r *scripted) highRequest(from wire.NodeID, m *wire.HighRequest) {
	switch {
	case r.epochs[m.Tablet] >= m.Epoch:
		r.env.Send(from, &wire.HighReply{Tablet: m.Tablet, Epoch: m.Epoch, Code: wire.Invalid})
		return
	case r.behind[m.Tablet]:
		r.env.Send(from, &wire.HighReply{Tablet: m.Tablet, Epoch: m.Epoch, Code: wire.Behind})
		return
	}
	if r.fenced[m.Tablet] < m.Epoch {
		r.fenced[m.Tablet], r.fencedAt[m.Tablet] = m.Epoch, r.env.Now()
	}
	if !r.stuck[m.Tablet] && r.highs[m.Tablet].Less(m.Until) {
		r.highs[m.Tablet] = m.Until // caught up from the primary
	}
	r.env.Send(from, &wire.HighReply{Tablet: m.Tablet, Epoch: m.Epoch, High: r.highs[m.Tablet]})
}

// ts is a high timestamp s seconds after the Unix epoch.
func ts(s int64) hlc.Timestamp { return hlc.Timestamp{WallNanos: s * int64(time.Second)} }

var ref0 = wire.TabletRef{Table: 1, Tablet: 0}
