// Package sim is a deterministic discrete-event simulator that hosts cosla's
// protocol cores (package node) on a simulated wide-area network.
//
// Events are processed one at a time in (virtual time, sequence number)
// order. The network is a set of sites joined by links, each with a one-way
// latency distribution, a loss probability and an up/down state that can
// change at any time; messages between a pair of nodes arrive in the order
// they were sent, as over a TCP connection. Nodes have a clock skew (of
// their wall clock), a clock rate (of their monotonic clock and timers,
// SetRate) and a service time with FIFO queueing, so a busy node
// saturates (a handler with node.Urgency has its urgent messages served
// ahead of the others waiting, as the server's mailbox does). Nodes crash
// (losing volatile state and unsynced storage) and restart, or lose their
// storage whole (Wipe). Beyond crashes, a link may deliver some messages
// twice (SetDuplicate), a node may pause and resume, as a stopped process
// does (Pause), and a node's disk may fail reads and writes
// (SetDiskErrors). Beyond a site's links, the network between two nodes
// may be cut (PartitionNodes).
//
// Beyond latency, the simulator can charge for where a real server's time
// goes, so that throughput saturates where a real server's would: a
// service time per message kind (NodeOptions.ServiceByKind), an fsync for
// the events that made synced writes, shared by the events that end while
// it waits for the disk (NodeOptions.Fsync; group commit as in DESIGN.md
// section 2), and a bandwidth per link (SetBandwidth). All are off by
// default.
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
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/cosla/cosla/internal/core/node"
	"github.com/cosla/cosla/internal/core/storage"
	"github.com/cosla/cosla/internal/core/wire"
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
	dup     float64
	down    bool
	// bandwidth in bytes per second; 0 is unlimited. busyUntil is when
	// the last message queued on the link has left.
	bandwidth int64
	busyUntil time.Duration
}

// NodeOptions are the per-node parameters of the model.
type NodeOptions struct {
	// Skew is added to the virtual time to give the node's physical clock.
	Skew time.Duration
	// Service is the time the node spends on each message; messages queue
	// while it is busy (FIFO; urgent ones first if the handler implements
	// node.Urgency). Zero means infinitely fast. It models a
	// slow node; ServiceByKind models the work of each request.
	Service Latency
	// ServiceByKind adds, per message kind (wire.Kind), a time the node
	// spends on each message of that kind on top of Service. Kinds not in
	// the map cost nothing extra. Default: empty.
	ServiceByKind map[string]Latency
	// Fsync is the time one fsync of the node's disk takes. When it is
	// not zero, the messages sent while handling an event (a message or a
	// timer) that applied a batch with sync are held until an fsync
	// covering the event completes. The disk runs one fsync at a time;
	// events with synced writes that end while an fsync waits for the disk
	// share it (group commit). Events without synced writes send at once
	// if no fsync is pending, and otherwise wait for the last one (persist,
	// then send), so a node's messages leave in the order it sent them.
	// A crash before the fsync completes loses the writes and the held
	// messages. Zero, the default: synced writes are free and nothing is
	// held.
	Fsync Latency
	// Concurrent makes the node serve each message as soon as it arrives
	// (and its site's machine has a core free, see SetCores), several at
	// once, rather than one at a time: a client whose runtime handles its
	// replies on many goroutines. Messages whose service times differ
	// may then be handled in another order than they arrived.
	Concurrent bool
}

type simNode struct {
	id          wire.NodeID
	site        string
	opts        NodeOptions
	factory     func() node.Handler
	handler     node.Handler
	engine      *storage.Mem
	disk        *diskEngine // what the node's Env returns: engine, fsyncs charged
	rng         *rand.Rand
	costs       *rand.Rand // draws of ServiceByKind and Fsync
	up          bool
	incarnation int
	busyUntil   time.Duration
	env         *nodeEnv
	// urgency is the handler's node.Urgency when it has one, the node
	// serves one message at a time and its site's cores are not shared
	// (SetCores: a shared machine serves in arrival order). served holds
	// its messages scheduled and not yet handled, in the order it serves
	// them: an urgent one goes ahead of those not yet started (overtake).
	urgency node.Urgency
	served  []*event
	// pausedUntil: the node handles nothing, message or timer, before
	// this time (Pause).
	pausedUntil time.Duration
	// diskErrors is the probability that a read or write of the node's
	// storage fails (SetDiskErrors), drawn from faults; not while the
	// node recovers in Start.
	diskErrors float64
	// rate is how fast the node's monotonic clock (Env.Now, and the
	// durations of its timers) runs against virtual time: 1.02 gains
	// 20 ms a second (SetRate). Zero is 1. The clock read rateBase at
	// virtual time rateSince, when the rate was last set.
	rate                float64
	rateSince, rateBase time.Duration
	faults              *rand.Rand
	recovering          bool

	// Group commit, while Fsync is set (cost.go). inEvent: an event is
	// being handled; synced: it applied a synced batch; outbox: what it
	// sent; fsyncs: the fsyncs not yet completed, oldest first (at most a
	// running one and an open one).
	inEvent bool
	synced  bool
	outbox  []outMsg
	fsyncs  []*fsyncGroup
}

// Stats counts what happened in a run.
type Stats struct {
	Events, Sent, Delivered, Dropped, Timers, Crashes, Restarts int64
	// Duplicated counts the messages a link delivered twice, DiskErrors
	// the storage reads and writes that failed.
	Duplicated, DiskErrors int64
	// Fsyncs completed, and the events whose synced writes they covered:
	// FsyncedEvents/Fsyncs is the mean group size.
	Fsyncs, FsyncedEvents int64
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
	// cut holds the pairs of nodes PartitionNodes cut, each pair both
	// ways.
	cut map[[2]wire.NodeID]bool
	// cores holds, for a site whose nodes share a machine (SetCores),
	// when each of its cores is next free.
	cores map[string][]time.Duration
	hash  hash.Hash64
	stats Stats
	err   error
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
		cut:     map[[2]wire.NodeID]bool{},
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

// costsStream and faultsStream distinguish a node's streams of cost and
// disk-error draws from its own.
const (
	costsStream  = 0x636f737473
	faultsStream = 0x6661756c7473
)

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

// SetCores makes the nodes of a site share one machine of n cores: a
// node still serves one message at a time, and a message's service time
// also takes a core, the first free, so that the site's nodes together
// serve at most n messages at once. n = 0 gives each node a machine of its
// own again (the default).
func (s *Sim) SetCores(site string, n int) error {
	if !s.sites[site] || n < 0 {
		return fmt.Errorf("%w: cores of site %q: unknown site or negative count %d", ErrConfig, site, n)
	}
	if s.cores == nil {
		s.cores = map[string][]time.Duration{}
	}
	s.cores[site] = make([]time.Duration, n)
	s.tracef("site %s has %d cores", site, n)
	return nil
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

// SetDuplicate sets the probability that a message between two sites is
// delivered twice. The copy arrives after the original and before
// anything sent later on the same pair of nodes, as a retransmission
// below a connection would; handlers must treat it as idempotent.
func (s *Sim) SetDuplicate(a, b string, p float64) error {
	if p < 0 || p > 1 || math.IsNaN(p) {
		return fmt.Errorf("%w: duplication probability %v outside [0,1]", ErrConfig, p)
	}
	return s.updateLink(a, b, func(k *link) { k.dup = p })
}

// Pause stops a node for d, as SIGSTOP stops a process: it handles no
// message and fires no timer until d has passed, then catches up on what
// queued meanwhile, in order. Its clock keeps running, and nothing is
// lost.
func (s *Sim) Pause(id wire.NodeID, d time.Duration) error {
	n, ok := s.nodes[id]
	if !ok || d < 0 {
		return fmt.Errorf("%w: pause: unknown node %s or negative duration %s", ErrConfig, id, d)
	}
	n.pausedUntil = max(n.pausedUntil, s.now+d)
	s.tracef("pause %s for %s", id, d)
	return nil
}

// SetDiskErrors sets the probability that a read or write of a node's
// storage fails with an I/O error, as a failing disk's would. A failed
// write applies nothing. Recovery at a restart reads without errors: the
// faults are those of a disk in service, and a node that cannot start
// would end the run.
func (s *Sim) SetDiskErrors(id wire.NodeID, p float64) error {
	n, ok := s.nodes[id]
	if !ok || p < 0 || p > 1 || math.IsNaN(p) {
		return fmt.Errorf("%w: disk errors: unknown node %s or probability %v outside [0,1]", ErrConfig, id, p)
	}
	n.diskErrors = p
	s.tracef("disk errors %s %v", id, p)
	return nil
}

// Partition cuts the link between two sites: messages are dropped until
// Heal.
func (s *Sim) Partition(a, b string) error {
	return s.updateLink(a, b, func(k *link) { k.down = true })
}

// PartitionNodes cuts the network between two nodes, both ways, whatever
// their sites' links do: messages between them are dropped until
// HealNodes. It expresses a partition finer than a site's, such as one
// between two availability zones of different sites (Karma 4.4), as a cut
// between each node of one and each node of the other.
func (s *Sim) PartitionNodes(a, b wire.NodeID) error {
	return s.cutNodes(a, b, true)
}

// HealNodes restores the network between two nodes that PartitionNodes
// cut; their sites' links decide again.
func (s *Sim) HealNodes(a, b wire.NodeID) error {
	return s.cutNodes(a, b, false)
}

func (s *Sim) cutNodes(a, b wire.NodeID, down bool) error {
	if _, err := s.lookup("partition", a); err != nil {
		return err
	}
	if _, err := s.lookup("partition", b); err != nil {
		return err
	}
	for _, pair := range [][2]wire.NodeID{{a, b}, {b, a}} {
		if down {
			s.cut[pair] = true
		} else {
			delete(s.cut, pair)
		}
	}
	s.tracef("nodes %s-%s cut %t", a, b, down)
	return nil
}

// SetBandwidth sets the bandwidth of the link between two sites, in bytes
// per second, in each direction (a == b: the site's own link, which the
// site's nodes share). A message occupies its direction of the link for
// its size (wire.EnvelopeSize) divided by the bandwidth, after the
// messages queued before it, and then travels for the link's latency.
// 0, the default, is unlimited: messages take no time to send.
func (s *Sim) SetBandwidth(a, b string, bytesPerSecond int64) error {
	if bytesPerSecond < 0 {
		return fmt.Errorf("%w: link %s-%s: negative bandwidth %d", ErrConfig, a, b, bytesPerSecond)
	}
	return s.updateLink(a, b, func(k *link) { k.bandwidth = bytesPerSecond })
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
	if err := opts.Validate(); err != nil {
		return fmt.Errorf("node %s: %w", id, err)
	}
	opts.ServiceByKind = maps.Clone(opts.ServiceByKind)
	h := fnv.New64a()
	h.Write([]byte(id))
	n := &simNode{
		id:      id,
		site:    site,
		opts:    opts,
		factory: factory,
		engine:  storage.NewMem(),
		rng:     rand.New(rand.NewPCG(s.opts.Seed, h.Sum64())),
		costs:   rand.New(rand.NewPCG(s.opts.Seed, h.Sum64()^costsStream)),
		faults:  rand.New(rand.NewPCG(s.opts.Seed, h.Sum64()^faultsStream)),
	}
	n.disk = &diskEngine{node: n}
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
	n.urgency, n.served = nil, nil
	if u, ok := n.handler.(node.Urgency); ok && !n.opts.Concurrent {
		n.urgency = u
	}
	n.recovering = true
	err := n.handler.Start(n.env)
	n.recovering = false
	if err != nil {
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
	n, err := s.lookup("crash", id)
	if err != nil {
		return err
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
	s.crashDisk(n)
	return nil
}

// Wipe crashes a node, if it is up, and replaces its storage with an
// empty one, as a disk lost and swapped: Restart then starts it holding
// nothing, not even its tables.
func (s *Sim) Wipe(id wire.NodeID) error {
	n, err := s.lookup("wipe", id)
	if err != nil {
		return err
	}
	if err := s.Crash(id); err != nil {
		return err
	}
	n.engine = storage.NewMem()
	s.tracef("wipe %s", id)
	return nil
}

// lookup returns the node id names, or an ErrConfig error naming the
// operation op that asked for it.
func (s *Sim) lookup(op string, id wire.NodeID) (*simNode, error) {
	n, ok := s.nodes[id]
	if !ok {
		return nil, fmt.Errorf("%w: %s: unknown node %s", ErrConfig, op, id)
	}
	return n, nil
}

// Restart starts a crashed node with a fresh handler over its storage.
func (s *Sim) Restart(id wire.NodeID) error {
	n, err := s.lookup("restart", id)
	if err != nil {
		return err
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
	n, err := s.lookup("skew", id)
	if err != nil {
		return err
	}
	n.opts.Skew = skew
	s.tracef("skew %s %s", id, skew)
	return nil
}

// SetRate sets how fast a node's monotonic clock runs against virtual
// time from now on (Env.Now and its timers; its wall clock, the HLC's,
// keeps the skew): a rate of 1.05 gains 5%, 0.95 loses 5%. Leases are
// counted on this clock (DESIGN.md section 10), so rates that part more
// than the lease margin allows break them. The rate must be positive.
func (s *Sim) SetRate(id wire.NodeID, rate float64) error {
	n, err := s.lookup("rate", id)
	if err != nil {
		return err
	}
	if !(rate > 0) {
		return fmt.Errorf("%w: rate %v of %s is not positive", ErrConfig, rate, id)
	}
	n.rateBase, n.rateSince, n.rate = n.clock(s.now), s.now, rate
	s.tracef("rate %s %v", id, rate)
	return nil
}

// clock is the node's monotonic clock, since the epoch, at virtual time
// now (SetRate).
func (n *simNode) clock(now time.Duration) time.Duration {
	if n.rate == 0 {
		return now
	}
	return n.rateBase + time.Duration(float64(now-n.rateSince)*n.rate)
}

// real is how long in virtual time d of the node's clock lasts.
func (n *simNode) real(d time.Duration) time.Duration {
	if n.rate == 0 || d <= 0 {
		return d
	}
	if r := math.Ceil(float64(d) / n.rate); r < math.MaxInt64 {
		return time.Duration(r)
	}
	return math.MaxInt64
}

// SetService sets a node's service time (NodeOptions.Service).
func (s *Sim) SetService(id wire.NodeID, l Latency) error {
	return s.setLatency("service", "Service", id, l, func(o *NodeOptions) { o.Service = l })
}

// setLatency validates l as the node option field and sets it with set
// on the node id names; op names the operation in an error.
func (s *Sim) setLatency(op, field string, id wire.NodeID, l Latency, set func(*NodeOptions)) error {
	n, err := s.lookup(op, id)
	if err != nil {
		return err
	}
	if err := l.validate(field); err != nil {
		return fmt.Errorf("node %s: %w", id, err)
	}
	set(&n.opts)
	return nil
}

// SetServiceByKind replaces a node's per-kind service times
// (NodeOptions.ServiceByKind). Messages already queued keep the time they
// were charged.
func (s *Sim) SetServiceByKind(id wire.NodeID, byKind map[string]Latency) error {
	n, err := s.lookup("service by kind", id)
	if err != nil {
		return err
	}
	if err := validateServiceByKind(byKind); err != nil {
		return fmt.Errorf("node %s: %w", id, err)
	}
	n.opts.ServiceByKind = maps.Clone(byKind)
	return nil
}

// SetFsync sets the time of one fsync of a node's disk (NodeOptions.Fsync).
// Fsyncs already under way keep their end.
func (s *Sim) SetFsync(id wire.NodeID, l Latency) error {
	return s.setLatency("fsync", "Fsync", id, l, func(o *NodeOptions) { o.Fsync = l })
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
	case evHandle, evTimer:
		s.atNode(ev)
	case evFsync:
		s.fsyncDone(ev)
	}
}

// atNode delivers a message, or fires a timer, at its node as one event
// of the node's, unless the node crashed since it was queued (a message
// is then dropped, a timer forgotten). A paused node's event waits until
// the pause ends.
func (s *Sim) atNode(ev *event) {
	n := s.nodes[ev.to]
	if !n.up || n.incarnation != ev.incarnation {
		if ev.kind == evHandle {
			s.drop(ev, "crashed")
		}
		return
	}
	if s.now < n.pausedUntil {
		ev.at = n.pausedUntil
		s.push(ev)
		return
	}
	if ev.kind == evHandle {
		s.stats.Delivered++
		s.tracef("%s -> %s %v", ev.from, ev.to, ev.msg)
	} else {
		s.stats.Timers++
		s.tracef("timer %s %T%v", ev.to, ev.timer, ev.timer)
	}
	charged := s.beginEvent(n)
	if ev.kind == evHandle {
		n.handler.Receive(ev.from, ev.msg)
	} else {
		n.handler.Fire(ev.timer)
	}
	if charged {
		s.endEvent(n, ev.incarnation)
	}
	if ev.kind == evHandle && n.urgency != nil {
		if i := slices.Index(n.served, ev); i >= 0 {
			n.served = slices.Delete(n.served, i, i+1)
		}
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
	service := s.serviceTime(n, ev.msg)
	ev.kind = evHandle
	if n.urgency != nil && len(s.cores[n.site]) == 0 {
		ev.urgent = n.urgency.Urgent(ev.msg)
		if ev.urgent && s.overtake(n, ev, service) {
			return
		}
		ev.start = max(s.now, n.busyUntil)
		n.served = append(n.served, ev)
	}
	start := s.now
	if !n.opts.Concurrent {
		start = max(start, n.busyUntil)
	}
	if cores := s.cores[n.site]; len(cores) > 0 && service > 0 {
		// The message also needs a core of the site's machine: the one
		// free first.
		c := 0
		for i, free := range cores {
			if free < cores[c] {
				c = i
			}
		}
		start = max(start, cores[c])
		cores[c] = start + service
	}
	if !n.opts.Concurrent {
		n.busyUntil = start + service
	}
	ev.at = start + service
	s.push(ev)
}

// overtake schedules an urgent message ahead of the first message the
// node has not started serving that is not urgent, and every message
// after that one later by its service time; it reports false if there is
// none. A node's messages waiting are served back to back (each arrived
// before the one ahead of it ended), so the urgent one starts when that
// one would have, and the others shift by its service.
func (s *Sim) overtake(n *simNode, ev *event, service time.Duration) bool {
	k := slices.IndexFunc(n.served, func(e *event) bool { return e.start > s.now && !e.urgent })
	if k < 0 {
		return false
	}
	ev.start = n.served[k].start
	ev.at = ev.start + service
	for _, later := range n.served[k:] {
		later.start += service
		later.at += service
		if later.index >= 0 {
			heap.Fix(&s.queue, later.index)
		}
	}
	n.busyUntil += service
	n.served = slices.Insert(n.served, k, ev)
	s.push(ev)
	return true
}

// send is a node's Env.Send: the message goes out now, or, inside an event
// that may make synced writes, when the event ends or its fsync completes.
func (s *Sim) send(from *simNode, to wire.NodeID, m wire.Msg) {
	s.stats.Sent++
	if from.inEvent {
		from.outbox = append(from.outbox, outMsg{to: to, m: m})
		return
	}
	s.transmit(from, to, m)
}

// transmit puts a message on the network.
func (s *Sim) transmit(from *simNode, to wire.NodeID, m wire.Msg) {
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
	if k.down || s.cut[[2]wire.NodeID{from.id, to}] {
		s.drop(ev, "lost")
		return
	}
	// A message sent on a link of limited bandwidth leaves after the ones
	// queued before it and occupies the link while it is sent, even if it
	// is then lost.
	depart := s.now
	if k.bandwidth > 0 {
		depart = max(s.now, k.busyUntil) + transmission(wire.EnvelopeSize(from.id, to, m), k.bandwidth)
		k.busyUntil = depart
	}
	if k.loss > 0 && s.net.Float64() < k.loss {
		s.drop(ev, "lost")
		return
	}
	// Messages between two nodes arrive in the order sent, as on a TCP
	// connection: never before the previous one.
	pair := [2]wire.NodeID{from.id, to}
	ev.at = max(depart+k.latency.sample(s.net), s.lastArr[pair])
	s.lastArr[pair] = ev.at
	s.push(ev)
	if k.dup > 0 && s.net.Float64() < k.dup {
		again := *ev
		again.at = max(ev.at+k.latency.sample(s.net), s.lastArr[pair])
		s.lastArr[pair] = again.at
		s.stats.Duplicated++
		s.record(fmt.Sprintf("dup %s -> %s %v", from.id, to, m))
		s.push(&again)
	}
}

func (s *Sim) drop(ev *event, why string) { s.recordDrop(why, ev.from, ev.to, ev.msg) }

func (s *Sim) recordDrop(why string, from, to wire.NodeID, m wire.Msg) {
	s.stats.Dropped++
	s.record(fmt.Sprintf("drop(%s) %s -> %s %v", why, from, to, m))
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
	if s.opts.Trace == nil {
		// The same bytes as record's, without building the line first:
		// every delivered message and timer is hashed.
		fmt.Fprintf(s.hash, "%d "+format+"\n", append([]any{s.now}, args...)...)
		return
	}
	s.record(fmt.Sprintf(format, args...))
}

// FormatTime formats a virtual time as milliseconds, e.g. "1500.000ms".
func FormatTime(t time.Duration) string {
	return fmt.Sprintf("%.3fms", float64(t)/float64(time.Millisecond))
}
