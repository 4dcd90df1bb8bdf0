// Package sim is a deterministic discrete-event simulator that hosts cosla's
// protocol cores (package node) on a simulated wide-area network.
//
// Events are processed one at a time in (virtual time, sequence number)
// order. The network is a set of sites joined by links, each with a one-way
// latency distribution, a loss probability and an up/down state that can
// change at any time; messages between a pair of nodes arrive in the order
// they were sent, as over a TCP connection. Nodes have a clock skew and a
// service time with FIFO queueing, so a busy node saturates. Nodes crash
// (losing volatile state and unsynced storage) and restart.
//
// A run is a pure function of its inputs and seed: all randomness comes
// from generators seeded by Options.Seed, and the trace hash, a digest of
// every event processed, is the same for the same seed.
package sim

import (
	"container/heap"
	"errors"
	"fmt"
	"hash"
	"hash/fnv"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"time"

	"github.com/cosla/cosla/internal/node"
	"github.com/cosla/cosla/internal/storage"
	"github.com/cosla/cosla/internal/wire"
)

// Options configures a Sim.
type Options struct {
	// Seed seeds every random choice of the run.
	Seed uint64
	// EpochNanos is the physical time, in nanoseconds since the Unix epoch,
	// at virtual time zero. Default 0, which keeps timestamps in traces
	// short; the timestamps then read as seconds since the run started.
	EpochNanos int64
	// Logger receives the nodes' logs. Default: discard.
	Logger *slog.Logger
	// Trace, if set, receives one line per event: deliveries, drops,
	// timers, crashes and restarts.
	Trace func(line string)
}

// Latency is a one-way delay distribution: Mean + Jitter*(E-1) with E
// exponentially distributed with mean 1. Its mean is Mean, its standard
// deviation Jitter, it is never below Mean-Jitter and it has a long tail
// above, as network delays do. Negative draws are clamped to zero.
type Latency struct {
	Mean, Jitter time.Duration
}

func (l Latency) sample(r *rand.Rand) time.Duration {
	if l.Jitter == 0 {
		return l.Mean
	}
	d := l.Mean + time.Duration(float64(l.Jitter)*(r.ExpFloat64()-1))
	return max(d, 0)
}

// link is the state of the network between two sites (one direction).
type link struct {
	latency Latency
	loss    float64
	down    bool
}

// NodeOptions are the per-node parameters of the model.
type NodeOptions struct {
	// Skew is added to the virtual time to give the node's physical clock.
	Skew time.Duration
	// Service is the time the node spends on each message; messages queue
	// while it is busy. Zero means infinitely fast.
	Service Latency
}

type simNode struct {
	id          wire.NodeID
	site        string
	opts        NodeOptions
	factory     func() node.Handler
	handler     node.Handler
	engine      *storage.Mem
	rng         *rand.Rand
	up          bool
	incarnation int
	busyUntil   time.Duration
	env         *nodeEnv
}

// Stats counts what happened in a run.
type Stats struct {
	Events, Sent, Delivered, Dropped, Timers, Crashes, Restarts int64
}

// Sim is a simulated world.
type Sim struct {
	opts    Options
	now     time.Duration
	seq     uint64
	queue   eventQueue
	net     *rand.Rand
	sites   map[string]bool
	links   map[[2]string]*link
	nodes   map[wire.NodeID]*simNode
	lastArr map[[2]wire.NodeID]time.Duration
	hash    hash.Hash64
	stats   Stats
	err     error
}

// New returns an empty world.
func New(opts Options) *Sim {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Sim{
		opts:    opts,
		net:     rand.New(rand.NewPCG(opts.Seed, 0x6e6574)),
		sites:   map[string]bool{},
		links:   map[[2]string]*link{},
		nodes:   map[wire.NodeID]*simNode{},
		lastArr: map[[2]wire.NodeID]time.Duration{},
		hash:    fnv.New64a(),
	}
}

// Seed returns the run's seed.
func (s *Sim) Seed() uint64 { return s.opts.Seed }

// Now returns the virtual time since the run started.
func (s *Sim) Now() time.Duration { return s.now }

// TraceHash returns a digest of every event processed so far.
func (s *Sim) TraceHash() uint64 { return s.hash.Sum64() }

// Stats returns the run's counters.
func (s *Sim) Stats() Stats { return s.stats }

// ErrConfig is wrapped by errors in the simulated world's configuration.
var ErrConfig = errors.New("sim: bad configuration")

// AddSite adds a site. Nodes in one site reach each other over the site's
// own link, which defaults to 0.5 ms each way (about 1 ms round trip, the
// local latency of Pileus Fig. 3).
func (s *Sim) AddSite(name string) {
	if s.sites[name] {
		return
	}
	s.sites[name] = true
	s.links[[2]string{name, name}] = &link{latency: Latency{Mean: 500 * time.Microsecond}}
}

// SetLatency sets the one-way latency between two sites, both ways.
func (s *Sim) SetLatency(a, b string, l Latency) error {
	return s.updateLink(a, b, func(k *link) { k.latency = l })
}

// SetLoss sets the probability that a message between two sites is lost.
func (s *Sim) SetLoss(a, b string, p float64) error {
	if p < 0 || p > 1 || math.IsNaN(p) {
		return fmt.Errorf("%w: loss probability %v outside [0,1]", ErrConfig, p)
	}
	return s.updateLink(a, b, func(k *link) { k.loss = p })
}

// Partition cuts the link between two sites: messages are dropped until
// Heal.
func (s *Sim) Partition(a, b string) error {
	return s.updateLink(a, b, func(k *link) { k.down = true })
}

// Heal restores the link between two sites.
func (s *Sim) Heal(a, b string) error {
	return s.updateLink(a, b, func(k *link) { k.down = false })
}

// Latency returns the one-way latency between two sites.
func (s *Sim) Latency(a, b string) (Latency, bool) {
	k, ok := s.links[[2]string{a, b}]
	if !ok {
		return Latency{}, false
	}
	return k.latency, true
}

func (s *Sim) updateLink(a, b string, f func(*link)) error {
	if !s.sites[a] || !s.sites[b] {
		return fmt.Errorf("%w: link %s-%s: unknown site", ErrConfig, a, b)
	}
	for _, key := range [][2]string{{a, b}, {b, a}} {
		k, ok := s.links[key]
		if !ok {
			k = &link{}
			s.links[key] = k
		}
		f(k)
	}
	s.tracef("link %s-%s changed", a, b)
	return nil
}

// AddNode adds a node to a site and starts it. factory builds the node's
// handler, at start and again at every restart.
func (s *Sim) AddNode(id wire.NodeID, site string, opts NodeOptions, factory func() node.Handler) error {
	if !s.sites[site] {
		return fmt.Errorf("%w: node %s: unknown site %q", ErrConfig, id, site)
	}
	if _, ok := s.nodes[id]; ok {
		return fmt.Errorf("%w: node %s added twice", ErrConfig, id)
	}
	h := fnv.New64a()
	h.Write([]byte(id))
	n := &simNode{
		id:      id,
		site:    site,
		opts:    opts,
		factory: factory,
		engine:  storage.NewMem(),
		rng:     rand.New(rand.NewPCG(s.opts.Seed, h.Sum64())),
	}
	s.nodes[id] = n
	return s.start(n)
}

func (s *Sim) start(n *simNode) error {
	n.incarnation++
	n.up = true
	n.busyUntil = s.now
	n.env = &nodeEnv{sim: s, node: n, incarnation: n.incarnation,
		logger: s.opts.Logger.With("node", string(n.id))}
	n.handler = n.factory()
	if err := n.handler.Start(n.env); err != nil {
		n.up = false
		return fmt.Errorf("sim: start node %s: %w", n.id, err)
	}
	return nil
}

// Handler returns the node's current handler, so tests and drivers can
// call into clients and inspect replicas.
func (s *Sim) Handler(id wire.NodeID) (node.Handler, bool) {
	n, ok := s.nodes[id]
	if !ok || !n.up {
		return nil, false
	}
	return n.handler, true
}

// Site returns the site of a node.
func (s *Sim) Site(id wire.NodeID) (string, bool) {
	n, ok := s.nodes[id]
	if !ok {
		return "", false
	}
	return n.site, true
}

// Crash stops a node: its handler and timers are discarded, messages to it
// are dropped and its storage loses unsynced writes.
func (s *Sim) Crash(id wire.NodeID) error {
	n, ok := s.nodes[id]
	if !ok {
		return fmt.Errorf("%w: crash: unknown node %s", ErrConfig, id)
	}
	if !n.up {
		return nil
	}
	n.up = false
	n.incarnation++
	n.handler = nil
	n.engine.Crash()
	s.stats.Crashes++
	s.tracef("crash %s", id)
	return nil
}

// Restart starts a crashed node with a fresh handler over its storage.
func (s *Sim) Restart(id wire.NodeID) error {
	n, ok := s.nodes[id]
	if !ok {
		return fmt.Errorf("%w: restart: unknown node %s", ErrConfig, id)
	}
	if n.up {
		return nil
	}
	s.stats.Restarts++
	s.tracef("restart %s", id)
	return s.start(n)
}

// SetSkew sets a node's clock skew.
func (s *Sim) SetSkew(id wire.NodeID, skew time.Duration) error {
	n, ok := s.nodes[id]
	if !ok {
		return fmt.Errorf("%w: skew: unknown node %s", ErrConfig, id)
	}
	n.opts.Skew = skew
	s.tracef("skew %s %s", id, skew)
	return nil
}

// SetService sets a node's service time.
func (s *Sim) SetService(id wire.NodeID, l Latency) error {
	n, ok := s.nodes[id]
	if !ok {
		return fmt.Errorf("%w: service: unknown node %s", ErrConfig, id)
	}
	n.opts.Service = l
	return nil
}

// At schedules fn to run at virtual time t (or now, if t has passed).
// Drivers use it to issue client operations and to change the world on a
// schedule.
func (s *Sim) At(t time.Duration, fn func()) {
	s.push(&event{at: max(t, s.now), kind: evFunc, fn: fn})
}

// After schedules fn to run d from now.
func (s *Sim) After(d time.Duration, fn func()) { s.At(s.now+d, fn) }

// Run processes events up to and including virtual time until, then sets
// the clock to until. It returns the first configuration error met.
func (s *Sim) Run(until time.Duration) error {
	for s.err == nil && len(s.queue) > 0 && s.queue[0].at <= until {
		s.step()
	}
	if s.err == nil {
		s.now = max(s.now, until)
	}
	return s.err
}

// RunUntil processes events until done returns true (checked after every
// event), the queue empties, or virtual time would pass limit.
func (s *Sim) RunUntil(limit time.Duration, done func() bool) error {
	for s.err == nil && !done() && len(s.queue) > 0 && s.queue[0].at <= limit {
		s.step()
	}
	return s.err
}

func (s *Sim) step() {
	ev := heap.Pop(&s.queue).(*event)
	s.now = ev.at
	s.stats.Events++
	switch ev.kind {
	case evFunc:
		ev.fn()
	case evArrive:
		s.arrive(ev)
	case evHandle:
		n := s.nodes[ev.to]
		if !n.up || n.incarnation != ev.incarnation {
			s.drop(ev, "crashed")
			return
		}
		s.stats.Delivered++
		s.record(fmt.Sprintf("%s -> %s %v", ev.from, ev.to, ev.msg))
		n.handler.Receive(ev.from, ev.msg)
	case evTimer:
		n := s.nodes[ev.to]
		if !n.up || n.incarnation != ev.incarnation {
			return
		}
		s.stats.Timers++
		s.record(fmt.Sprintf("timer %s %T%v", ev.to, ev.timer, ev.timer))
		n.handler.Fire(ev.timer)
	}
}

// arrive queues a message that reached its node behind the messages the
// node is still serving.
func (s *Sim) arrive(ev *event) {
	n := s.nodes[ev.to]
	if !n.up || n.incarnation != ev.incarnation {
		s.drop(ev, "crashed")
		return
	}
	service := n.opts.Service.sample(n.rng)
	start := max(s.now, n.busyUntil)
	n.busyUntil = start + service
	ev.kind = evHandle
	ev.at = n.busyUntil
	s.push(ev)
}

func (s *Sim) send(from *simNode, to wire.NodeID, m wire.Msg) {
	s.stats.Sent++
	dst, ok := s.nodes[to]
	if !ok {
		s.fail(fmt.Errorf("%w: %s sent %T to unknown node %s", ErrConfig, from.id, m, to))
		return
	}
	k, ok := s.links[[2]string{from.site, dst.site}]
	if !ok {
		s.fail(fmt.Errorf("%w: no link between sites %s and %s (%s -> %s)", ErrConfig, from.site, dst.site, from.id, to))
		return
	}
	ev := &event{kind: evArrive, from: from.id, to: to, msg: m, incarnation: dst.incarnation}
	if k.down || (k.loss > 0 && s.net.Float64() < k.loss) {
		s.drop(ev, "lost")
		return
	}
	// Messages between two nodes arrive in the order sent, as on a TCP
	// connection: never before the previous one.
	pair := [2]wire.NodeID{from.id, to}
	ev.at = max(s.now+k.latency.sample(s.net), s.lastArr[pair])
	s.lastArr[pair] = ev.at
	s.push(ev)
}

func (s *Sim) drop(ev *event, why string) {
	s.stats.Dropped++
	s.record(fmt.Sprintf("drop(%s) %s -> %s %v", why, ev.from, ev.to, ev.msg))
}

func (s *Sim) fail(err error) {
	if s.err == nil {
		s.err = err
	}
}

func (s *Sim) push(ev *event) {
	s.seq++
	ev.seq = s.seq
	heap.Push(&s.queue, ev)
}

// record adds an event line to the trace hash and the trace.
func (s *Sim) record(line string) {
	fmt.Fprintf(s.hash, "%d %s\n", s.now, line)
	if s.opts.Trace != nil {
		s.opts.Trace(fmt.Sprintf("%s %s", FormatTime(s.now), line))
	}
}

func (s *Sim) tracef(format string, args ...any) {
	s.record(fmt.Sprintf(format, args...))
}

// FormatTime formats a virtual time as milliseconds, e.g. "1500.000ms".
func FormatTime(t time.Duration) string {
	return fmt.Sprintf("%.3fms", float64(t)/float64(time.Millisecond))
}
