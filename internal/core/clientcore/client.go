// Package clientcore is the Pileus client library (Terry et al. SOSP'13,
// sections 3-4) as a deterministic state machine.
//
// The client keeps sessions, computes each guarantee's minimum acceptable
// read timestamp (4.4), monitors the round-trip times and high timestamps
// of the replicas it talks to (4.5), picks the target subSLA and replica of
// every Get by expected utility (Fig. 8), and after the reply decides which
// subSLA was actually met (4.6.2). Fixed strategies (Primary, Random,
// Closest, 5.1) are available as baselines.
//
// Client implements node.Handler. Application calls (CreateTable, Get,
// Put...) must be made from the goroutine that delivers the client's
// events, and their callbacks run inside a later Receive or Fire; the
// runtime (the simulator, or the public cosla package) arranges both.
package clientcore

import (
	"cmp"
	"errors"
	"fmt"
	"time"

	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/node"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/sla"
)

// Errors returned to callbacks. They carry the "cosla:" prefix because the
// public package returns them unchanged.
var (
	ErrSLAUnmet        = errors.New("cosla: no subSLA of the SLA was met")
	ErrNoTable         = errors.New("cosla: no such table")
	ErrTableExists     = errors.New("cosla: table exists with a different layout")
	ErrTooLarge        = errors.New("cosla: key or value too large")
	ErrTimeout         = errors.New("cosla: request timed out")
	ErrNull            = errors.New("cosla: writes pending and the bound too short to apply one")
	ErrSessionEnded    = errors.New("cosla: session ended")
	ErrStorageFailed   = errors.New("cosla: replica storage failed")
	ErrInvalid         = errors.New("cosla: invalid request")
	ErrOverloaded      = errors.New("cosla: node overloaded")
	ErrTooManySessions = errors.New("cosla: too many open sessions")
	ErrAborted         = errors.New("cosla: get-transaction found no snapshot in time; try again")
	ErrWriteBack       = errors.New("cosla: the version read was not written back to a majority")
	ErrCatchingUp      = errors.New("cosla: the replica is catching up after a failover")
)

// codeError maps a reply code to an error.
func codeError(c wire.Code) error {
	switch c {
	case wire.OK:
		return nil
	case wire.NoTable:
		return ErrNoTable
	case wire.TableExists:
		return ErrTableExists
	case wire.TooLarge:
		return ErrTooLarge
	case wire.StorageFailed:
		return ErrStorageFailed
	case wire.Overloaded:
		return ErrOverloaded
	case wire.Behind:
		return ErrCatchingUp
	case wire.Unencodable:
		return fmt.Errorf("%w: the request could not be encoded for the network and was not sent", ErrInvalid)
	}
	return fmt.Errorf("%w: replica answered %q", ErrInvalid, c)
}

// Strategy chooses the replica a Get goes to.
type Strategy uint8

// Strategies. Pileus is the paper's utility-driven selection; the others
// are the fixed baselines of section 5.1.
const (
	Pileus Strategy = iota + 1
	Primary
	Random
	Closest
)

// Strategies lists every strategy, Pileus first.
var Strategies = []Strategy{Pileus, Primary, Random, Closest}

var strategyNames = [...]string{Pileus: "pileus", Primary: "primary", Random: "random", Closest: "closest"}

func (s Strategy) String() string {
	if s == 0 || int(s) >= len(strategyNames) {
		return fmt.Sprintf("strategy(%d)", uint8(s))
	}
	return strategyNames[s]
}

// ParseStrategy returns the strategy with the given name.
func ParseStrategy(name string) (Strategy, error) {
	for _, s := range Strategies {
		if s.String() == name {
			return s, nil
		}
	}
	return 0, fmt.Errorf("%w: unknown strategy %q (want pileus, primary, random or closest)", ErrInvalid, name)
}

// The default limits of keys and values (Options.MaxKeyBytes and
// MaxValueBytes): 4 KiB and 1 MiB.
const (
	DefaultMaxKeyBytes   = 4 << 10
	DefaultMaxValueBytes = 1 << 20
)

// Options configures a Client. EnsureDefaults fills in unset fields.
type Options struct {
	// Nodes are the storage nodes the client asks for table layouts.
	// Required.
	Nodes []wire.NodeID
	// RTTWindow is how long a round-trip measurement counts (Pileus 4.5:
	// "the last few minutes"). Default 2m.
	RTTWindow time.Duration
	// RTTSamplesMax caps the measurements kept per node. Default 512.
	RTTSamplesMax int
	// ProbeInterval: a replica the client has not heard from for this long
	// is probed for its round-trip time and high timestamp (4.5).
	// Default 10s.
	ProbeInterval time.Duration
	// AdaptiveProbing, beyond the paper (Pileus 6.1: "clients could adapt
	// the rate at which they send periodic probes"), gives each replica a
	// probe interval of its own, starting at ProbeInterval: a probe whose
	// round trip departs from the node's mean, or that times out, drops
	// it to MinProbeInterval; one that agrees doubles it, up to
	// MaxProbeInterval. Two probes in a row that depart from the mean
	// but agree with each other are taken for a shift in the node's
	// latency, and the samples from before it are forgotten. Stable
	// nodes cost fewer probes, and the client learns sooner that an idle
	// node has changed. Default false: every replica is probed at
	// ProbeInterval.
	AdaptiveProbing bool
	// MinProbeInterval and MaxProbeInterval bound a replica's probe
	// interval under AdaptiveProbing, and must be left unset without it.
	// Defaults ProbeInterval/4 and 4*ProbeInterval.
	MinProbeInterval, MaxProbeInterval time.Duration
	// RequestTimeout bounds Puts, table operations and Gets whose SLA has
	// an unbounded subSLA. Default 10s.
	// ProbeTimeout bounds a probe: a node that has not answered by then
	// is counted as that slow (4.5). Default 2s, and at most
	// RequestTimeout.
	RequestTimeout time.Duration
	ProbeTimeout   time.Duration
	// ClockUncertainty is how far timestamps issued by primaries may be
	// ahead of this client's clock; bounded-staleness reads demand that
	// much more freshness. With clocks within e of true time set it to 2e.
	// Default 0 (synchronized clocks).
	ClockUncertainty time.Duration
	// Measure says how the first operations come to choose among
	// measured nodes (Pileus 4.5): see Measuring. Default MeasureLater.
	Measure Measuring
	// MaxKeyBytes and MaxValueBytes are checked before a Put is sent.
	// Defaults DefaultMaxKeyBytes and DefaultMaxValueBytes, as on the
	// replicas.
	MaxKeyBytes, MaxValueBytes int
	// MaxSessions bounds the sessions open at once; BeginSession beyond
	// it fails with ErrTooManySessions. Default 10000.
	MaxSessions int
	// SLAWindow is how far back Metrics' SLAStats.Window reaches: the
	// share of recent Gets that met each subSLA, in slaWindowBuckets
	// steps. Default 1m.
	SLAWindow time.Duration
	// Config lists the configuration service's members (DESIGN.md
	// section 10), sorted: the client sends them its utility reports
	// and Reconfigure. None: no reports, and Reconfigure fails.
	Config []wire.NodeID
	// ReportEvery is how often the client reports to the configuration
	// service the utility its Gets would have received with each
	// tablet's primary at each site (Pileus 6.2; utility.go). Default
	// 10s; unused without Config.
	ReportEvery time.Duration
	// NotifyEvery is how often a session of a causal table that ring
	// restrictions hold, and that wrote nothing since the last time,
	// sends a notify-after to lift them (causal.ClientOptions). Default
	// 0: none.
	NotifyEvery time.Duration
}

// EnsureDefaults returns a copy of o with unset fields given defaults.
func (o Options) EnsureDefaults() Options {
	o.RTTWindow = cmp.Or(o.RTTWindow, 2*time.Minute)
	o.RTTSamplesMax = cmp.Or(o.RTTSamplesMax, 512)
	o.ProbeInterval = cmp.Or(o.ProbeInterval, 10*time.Second)
	if o.AdaptiveProbing && o.MinProbeInterval == 0 {
		o.MinProbeInterval = o.ProbeInterval / 4
	}
	if o.AdaptiveProbing && o.MaxProbeInterval == 0 {
		o.MaxProbeInterval = 4 * o.ProbeInterval
	}
	o.RequestTimeout = cmp.Or(o.RequestTimeout, 10*time.Second)
	o.ProbeTimeout = cmp.Or(o.ProbeTimeout, min(2*time.Second, o.RequestTimeout))
	o.MaxKeyBytes = cmp.Or(o.MaxKeyBytes, DefaultMaxKeyBytes)
	o.MaxSessions = cmp.Or(o.MaxSessions, 10_000)
	o.MaxValueBytes = cmp.Or(o.MaxValueBytes, DefaultMaxValueBytes)
	o.SLAWindow = cmp.Or(o.SLAWindow, time.Minute)
	o.ReportEvery = cmp.Or(o.ReportEvery, 10*time.Second)
	return o
}

// Validate reports the first invalid field.
func (o Options) Validate() error {
	switch {
	case len(o.Nodes) == 0:
		return errors.New("clientcore: Options.Nodes must name at least one storage node")
	case o.RTTWindow <= 0:
		return fmt.Errorf("clientcore: Options.RTTWindow must be positive, got %s", o.RTTWindow)
	case o.RTTSamplesMax <= 0:
		return fmt.Errorf("clientcore: Options.RTTSamplesMax must be positive, got %d", o.RTTSamplesMax)
	case o.ProbeInterval <= 0:
		return fmt.Errorf("clientcore: Options.ProbeInterval must be positive, got %s", o.ProbeInterval)
	case !o.AdaptiveProbing && (o.MinProbeInterval != 0 || o.MaxProbeInterval != 0):
		return fmt.Errorf("clientcore: Options.MinProbeInterval and MaxProbeInterval are set (%s and %s) but AdaptiveProbing is not", o.MinProbeInterval, o.MaxProbeInterval)
	case o.AdaptiveProbing && (o.MinProbeInterval <= 0 || o.MinProbeInterval > o.ProbeInterval):
		return fmt.Errorf("clientcore: Options.MinProbeInterval must be positive and at most ProbeInterval (%s), got %s", o.ProbeInterval, o.MinProbeInterval)
	case o.AdaptiveProbing && o.MaxProbeInterval < o.ProbeInterval:
		return fmt.Errorf("clientcore: Options.MaxProbeInterval must be at least ProbeInterval (%s), got %s", o.ProbeInterval, o.MaxProbeInterval)
	case o.RequestTimeout <= 0:
		return fmt.Errorf("clientcore: Options.RequestTimeout must be positive, got %s", o.RequestTimeout)
	case o.ProbeTimeout <= 0 || o.ProbeTimeout > o.RequestTimeout:
		return fmt.Errorf("clientcore: Options.ProbeTimeout must be positive and at most RequestTimeout, got %s", o.ProbeTimeout)
	case o.ClockUncertainty < 0:
		return fmt.Errorf("clientcore: Options.ClockUncertainty must not be negative, got %s", o.ClockUncertainty)
	case o.MaxSessions < 0:
		return fmt.Errorf("clientcore: Options.MaxSessions must not be negative, got %d", o.MaxSessions)
	case o.SLAWindow <= 0:
		return fmt.Errorf("clientcore: Options.SLAWindow must be positive, got %s", o.SLAWindow)
	case o.Measure > MeasureNeeded:
		return fmt.Errorf("clientcore: Options.Measure %d is none of MeasureLater, MeasureAll and MeasureNeeded", o.Measure)
	case o.ReportEvery < 0:
		return fmt.Errorf("clientcore: Options.ReportEvery must not be negative, got %s", o.ReportEvery)
	case o.NotifyEvery < 0:
		return fmt.Errorf("clientcore: Options.NotifyEvery must not be negative, got %s", o.NotifyEvery)
	case o.MaxKeyBytes <= 0 || o.MaxValueBytes <= 0:
		return fmt.Errorf("clientcore: Options.MaxKeyBytes and MaxValueBytes must be positive, got %d and %d", o.MaxKeyBytes, o.MaxValueBytes)
	}
	return nil
}

// Measuring says how a client's first operations come to choose among
// measured nodes. OpenTable probes every replica at once in every mode.
type Measuring uint8

// Measuring modes.
const (
	// MeasureLater: OpenTable returns at once, and an operation may go
	// to a node not yet measured as if it met every latency; its reply
	// measures the node.
	MeasureLater Measuring = iota
	// MeasureAll: OpenTable returns once every replica's first probe has
	// been answered or has timed out; for a long-running client whose
	// work starts with every node measured (the driver's runs, whose
	// operations' latencies and histories must not hold a wait for
	// probes).
	MeasureAll
	// MeasureNeeded: OpenTable returns at once, and an operation that
	// chooses its replica by the monitor waits only until the replica
	// it would choose is measured (awaitProbe), so that it does not wait
	// for nodes it does not need; for a command line. The connections
	// may still be being set up, so each replica's first probe is a
	// warm-up and the probe its reply sends its first sample.
	MeasureNeeded
)

// Table is an open table: its layout and the client's view of each of its
// tablets' replicas.
type Table struct {
	layout  wire.Layout
	tablets []tabletView
	// causal is a causal table's client side; nil for a table of
	// tablets.
	causal *causalTable
}

type tabletView struct {
	ref      wire.TabletRef
	replicas []*replicaState // primary first
	// epoch is the tablet's epoch as the client last learnt it from a
	// NotPrimary (failover.go); 0 while it knows none, and always for a
	// tablet no configuration service governs.
	epoch uint64
	// writeCount is the table's write level as a number of this tablet's
	// replicas; quorumRead, when not zero, the fewest replicas a read
	// needs to overlap every Put's write set (r + w > N, with w above
	// one), which selection may use for a strong subSLA.
	writeCount, quorumRead int
	// seekFrom is the primary the client seeks a successor of, since
	// seekAt, while seeking (failover.go); nil when not seeking.
	seekFrom *replicaState
	seekAt   time.Time
}

// index is the tablet's index in its table's layout.
func (tv *tabletView) index() int { return int(tv.ref.Tablet) }

// Name returns the table's name.
func (t *Table) Name() string { return t.layout.Name }

// Layout returns the table's layout.
func (t *Table) Layout() wire.Layout { return t.layout }

// Client is the client library's core.
type Client struct {
	opts    Options
	env     node.Env
	nextReq uint64
	pending map[uint64]*pending
	tables  map[string]*Table
	mon     monitor
	// mins is scratch space for minimum read timestamps, so that selecting
	// a target does not allocate.
	mins []minTS
	// probesSent counts the probes sent since New.
	probesSent uint64
	// tuners are the CPQ tuners of the client's sessions, one per
	// target: sessions with the same target share their samples.
	tuners map[Tune]*tuner
	// staged maps the pending writes of every session to it
	// (bounded.go); refusedWrites counts those the primary refused.
	staged        map[stagedID]*Session
	refusedWrites int64
	lastHeld      uint64
	// sessions counts the open sessions, for MaxSessions.
	sessions int
	// causal holds the client sides of the open causal tables.
	causal causalTables
	// counters count the operations for Metrics from Start on.
	counters counters
	// utility holds the utility reports of the window under way, per
	// tablet, and reports counts the reports sent (utility.go).
	utility map[wire.TabletRef]*tabletUtility
	reports uint64
}

// timeoutTimer fires when a request has waited too long.
type timeoutTimer struct{ req uint64 }

// probeTimer fires the monitor's periodic probe round.
type probeTimer struct{}

// New returns a client with the given options; Start validates them.
func New(opts Options) *Client {
	return &Client{opts: opts.EnsureDefaults()}
}

// Start validates the options and resets the client's volatile state; a
// client keeps nothing durable.
func (c *Client) Start(env node.Env) error {
	if err := c.opts.Validate(); err != nil {
		return err
	}
	c.env = env
	// Request IDs start at a random point so that replies addressed to a
	// previous incarnation of this client are not mistaken for ours.
	c.nextReq = env.Rand().Uint64() >> 1
	c.pending = map[uint64]*pending{}
	c.tables = map[string]*Table{}
	c.mon = newMonitor(c.opts)
	c.tuners = map[Tune]*tuner{}
	c.staged = map[stagedID]*Session{}
	c.causal = causalTables{}
	c.counters = newCounters(env.Now(), c.opts.SLAWindow)
	env.After(c.mon.tick(), probeTimer{})
	c.utility = map[wire.TabletRef]*tabletUtility{}
	if len(c.opts.Config) > 0 {
		env.After(c.opts.ReportEvery, reportTimer{})
	}
	return nil
}

// Receive handles a reply from a storage node.
func (c *Client) Receive(from wire.NodeID, m wire.Msg) {
	if s := c.mon.rtt[from]; s != nil {
		s.down = false // whatever it sends, the node is reachable again
	}
	if m, ok := m.(*wire.Resolved); ok {
		c.resolved(from, m)
		return
	}
	if c.causal.receive(from, m) {
		return
	}
	req, answers, ok := replyReq(m)
	if !ok {
		c.env.Logger().Warn("clientcore: unexpected message", "from", from, "type", fmt.Sprintf("%T", m))
		return
	}
	p, ok := c.pending[req]
	if !ok || p.to != "" && p.to != from {
		return // a late reply to a request that timed out
	}
	if !answers(p.request) {
		// A node that answers a Get with a PutReply is broken or hostile;
		// the request waits for its real answer or its timeout.
		c.env.Logger().Warn("clientcore: a reply of the wrong kind", "from", from, "request", fmt.Sprintf("%T", p.request), "reply", fmt.Sprintf("%T", m))
		return
	}
	delete(c.pending, req)
	if p.get != nil {
		c.gotReply(p.get, m.(*wire.GetReply))
		return
	}
	p.onReply(from, m)
}

// replyReq returns the request a reply answers, and whether a request
// is of the kind it answers.
func replyReq(m wire.Msg) (req uint64, answers func(request wire.Msg) bool, ok bool) {
	switch m := m.(type) {
	case *wire.CreateTableReply:
		return m.Req, is[*wire.CreateTableRequest], true
	case *wire.DeleteTableReply:
		return m.Req, is[*wire.DeleteTableRequest], true
	case *wire.TableInfoReply:
		return m.Req, is[*wire.TableInfoRequest], true
	case *wire.PutReply:
		return m.Req, is[*wire.PutRequest], true
	case *wire.GetReply:
		return m.Req, is[*wire.GetRequest], true
	case *wire.ProbeReply:
		return m.Req, is[*wire.ProbeRequest], true
	case *wire.RepairReply:
		return m.Req, is[*wire.Repair], true
	case *wire.ReconfigureReply:
		return m.Req, is[*wire.Reconfigure], true
	}
	return 0, nil, false
}

// is says whether m is a T.
func is[T wire.Msg](m wire.Msg) bool {
	_, ok := m.(T)
	return ok
}

// Fire handles a timer.
func (c *Client) Fire(timer any) {
	switch t := timer.(type) {
	case timeoutTimer:
		if p, ok := c.pending[t.req]; ok {
			delete(c.pending, t.req)
			if p.get != nil {
				c.getTimedOut(p.get)
				break
			}
			p.onTimeout()
		}
	case probeTimer:
		c.probeIdle()
		c.env.After(c.mon.tick(), t)
	case holdTimer:
		if t.held == t.g.held {
			c.finishHeld(t.g)
		}
	case waitTimer:
		c.waited(t)
	case delayTimer:
		t.send()
	case retryTimer:
		t.send()
	case seekTimer:
		c.seekRound(t.tv)
	case reportTimer:
		c.report()
		c.env.After(c.opts.ReportEvery, t)
	case heldTimer:
		t.expire()
	case node.RoutedTimer:
		c.causal.fire(t)
	default:
		c.env.Logger().Warn("clientcore: unexpected timer", "type", fmt.Sprintf("%T", timer))
	}
}

// pending is an outstanding request. to is the node it went to, or "" for
// requests that accept a reply from any node.
type pending struct {
	to wire.NodeID
	// request is what was sent: only a reply of its kind answers it.
	request   wire.Msg
	onReply   func(from wire.NodeID, m wire.Msg)
	onTimeout func()
	// onDeposed, if set, ends a Put sent to a primary that the client
	// learned was deposed before it answered (abandonPuts).
	onDeposed func(primary wire.NodeID)
	// get, if set, is the Get request this is, which handles its reply
	// and timeout in place of onReply and onTimeout: the most frequent
	// request makes no closures (getcall.go).
	get *getSend
}

// send sends a request and registers its continuation, with a timeout.
func (c *Client) send(to wire.NodeID, m wire.Msg, req uint64, timeout time.Duration, p *pending) {
	p.to, p.request = to, m
	c.pending[req] = p
	c.env.After(timeout, timeoutTimer{req})
	c.env.Send(to, m)
}

func (c *Client) newReq() uint64 {
	c.nextReq++
	return c.nextReq
}

// BeginSession starts a session on an open table with a default SLA and
// strategy for its Gets (Pileus Fig. 2).
func (c *Client) BeginSession(t *Table, s sla.SLA, strategy Strategy) (*Session, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if strategy == 0 || int(strategy) >= len(strategyNames) {
		return nil, fmt.Errorf("%w: unknown strategy %d", ErrInvalid, strategy)
	}
	if c.sessions >= c.opts.MaxSessions {
		return nil, fmt.Errorf("%w: %d are open (Options.MaxSessions); end some first", ErrTooManySessions, c.sessions)
	}
	session := &Session{
		table:    t,
		sla:      s,
		strategy: strategy,
		putTS:    map[string]hlc.Timestamp{},
		readTS:   map[string]hlc.Timestamp{},
	}
	if t.causal != nil {
		if err := checkCausalSLA(s); err != nil {
			return nil, err
		}
		session.causal = c.causal.session(t.causal)
	}
	c.sessions++
	return session, nil
}

// EndSession ends a session; later operations in it fail with
// ErrSessionEnded.
func (c *Client) EndSession(s *Session) {
	if !s.ended {
		s.ended = true
		c.sessions--
	}
	for id, owner := range c.staged {
		if owner == s {
			delete(c.staged, id)
		}
	}
}
