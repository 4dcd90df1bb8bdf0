package driver

import (
	"context"
	cryptorand "crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/cosla/cosla/internal/core/causal"
	"github.com/cosla/cosla/internal/core/clientcore"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/runtime/certs"
	"github.com/cosla/cosla/internal/runtime/harness"
	"github.com/cosla/cosla/internal/runtime/hostclient"
	"github.com/cosla/cosla/internal/runtime/sim"
	"github.com/cosla/cosla/internal/runtime/topology"
)

// doCosla performs op through a client core: the one executor of both
// cosla targets, so that a run on a cluster differs from one in the
// simulator only in its network and clock. It runs on the core's
// goroutine; now is the runtime's clock and finish is called once op's
// outcome is set. A refused op (the core returned an error at once) is
// finished before doCosla returns. cs is the session's causal state when
// its table is a causal table (Karma), nil otherwise.
func doCosla(c *clientcore.Client, s *clientcore.Session, cfg *Cosla, cs *causalState, op *Op, now func() time.Duration, finish func()) {
	op.Start = now()
	var err error
	if cs != nil {
		err = doCausal(c, s, cfg, cs, op, now, finish)
	} else {
		err = doTable(c, s, cfg, op, now, finish)
	}
	if err != nil {
		op.End, op.Err, op.Refused = now(), err, true
		finish()
	}
}

// doTable performs op on a table that is not causal; it returns the
// core's refusal, and finish is not called then.
func doTable(c *clientcore.Client, s *clientcore.Session, cfg *Cosla, op *Op, now func() time.Duration, finish func()) error {
	get := cfg.Get
	switch op.Kind {
	case Put, RTW:
		o := clientcore.PutOptions{Bound: op.Bound}
		if o.Bound == wire.NoBound {
			o.Bound = cfg.PutBound
		}
		if op.Kind == RTW {
			// A conditional insert: write only if the key has no value.
			o.Test = &wire.Test{Key: op.Key}
		}
		return c.Put(s, op.Key, op.Value, o, func(r clientcore.PutResult, err error) {
			op.End, op.Err, op.Node, op.TS, op.RTT = now(), err, string(r.Node), r.TS, r.RTT
			op.Primary, op.Level, op.Acks = o.Bound == wire.NoBound && op.Kind == Put, r.Level, r.Acks
			op.Stage, op.Tested = r.Stage, r.Tested
			finish()
		})
	case Get:
		if op.Bound != wire.NoBound {
			get.Bound = op.Bound
		}
		return c.Get(s, op.Key, get, func(r clientcore.GetResult, err error) {
			op.End, op.Err = now(), err
			op.Node, op.Primary, op.RTT, op.Met, op.Target = string(r.Node), r.Primary, r.RTT, r.Met, r.Target
			op.Level, op.Held = r.Level, r.Held
			op.Applied, op.Pending, op.Null, op.FromSession = r.Applied, r.Pending, r.Null, r.FromSession
			if errors.Is(err, clientcore.ErrNull) {
				// dConssandra 2-B: NULL is the answer a bound too short
				// for the pending writes gets, not a failure.
				op.Err, op.Null = nil, true
			}
			op.Extra += r.Retries
			if r.Hedged {
				op.Extra++
			}
			if r.Met >= 0 {
				op.SubSLA, op.Consistency = r.SubSLA, r.SubSLA.Consistency.String()
			}
			if op.Err == nil && !op.Null {
				op.Found, op.TS = r.Found, r.VersionTS
				if r.Found {
					op.ValueID = ValueID(r.Value)
				}
			}
			finish()
		})
	default:
		return fmt.Errorf("%w: %s on cosla", ErrUnsupported, op.Kind)
	}
}

// causalState is what a cosla target keeps of a session of a causal
// table (Karma, DESIGN.md section 5): the table's placement, to name the
// storage node a get-transaction read.
type causalState struct {
	layout *causal.Layout
}

// causalLayout returns the protocol layout of a causal table, nil for
// another table.
func causalLayout(t *clientcore.Table) (*causal.Layout, error) {
	l := t.Layout()
	if l.Causal == nil {
		return nil, nil
	}
	return causal.LayoutOf(&l)
}

// newCausalState returns a new session's causal state: nil for a table
// that is not causal (layout nil).
func newCausalState(layout *causal.Layout) *causalState {
	if layout == nil {
		return nil
	}
	return &causalState{layout: layout}
}

// doCausal performs op on a causal table through the client core, and
// fills Op's causal fields: a Put is answered from the site's write
// buffer (Node the coordinator) and is Restricted if a dynamic ring
// restriction binds its session (causal.Client.Restricted: never on a
// static table), a Get and a get-transaction say where they were served
// from (GetResult.Causal, TxResult). It returns the core's refusal, and
// finish is not called then.
func doCausal(c *clientcore.Client, s *clientcore.Session, cfg *Cosla, cs *causalState, op *Op, now func() time.Duration, finish func()) error {
	op.Ring = wire.NoRing
	switch op.Kind {
	case Put:
		op.Restricted = !cs.layout.Static && s.Causal().Ring() != wire.NoRing
		return c.Put(s, op.Key, op.Value, clientcore.PutOptions{}, func(r clientcore.PutResult, err error) {
			op.End, op.Err, op.Node, op.TS, op.RTT = now(), err, string(r.Node), r.TS, r.RTT
			finish()
		})
	case Get:
		return c.Get(s, op.Key, cfg.Get, func(r clientcore.GetResult, err error) {
			op.End, op.Err, op.RTT, op.Met, op.Target = now(), err, r.RTT, r.Met, r.Target
			if r.Causal != nil {
				op.Restricted = r.Causal.Restricted
			}
			if r.TimedOut {
				// The node that did not answer (clientcore's error
				// names it too).
				op.Node, op.Ring = string(r.Node), r.Causal.Ring
			}
			if err == nil {
				op.SubSLA, op.Consistency = r.SubSLA, "causal"
				op.Found, op.TS, op.Node = r.Found, r.VersionTS, string(r.Node)
				if r.Found {
					op.ValueID = ValueID(r.Value)
				}
				if rc := r.Causal; rc != nil {
					op.Source, op.Ring, op.InFlight = rc.Source, rc.Ring, rc.InFlight
				}
			}
			finish()
		})
	case GetTx:
		keys := append([]string{op.Key}, op.Keys...)
		return c.GetTx(s, keys, func(r clientcore.TxResult, err error) {
			op.End, op.Err, op.RTT = now(), err, r.RTT
			op.Restricted, op.Rounds = r.Restricted, r.Rounds
			if err == nil && len(r.Items) > 0 {
				it := r.Items[0]
				op.Consistency = "causal"
				op.Found, op.TS = it.Found, it.Version.TS
				op.Source, op.InFlight = it.Source, it.InFlight
				// The op is its first key's read: the snapshot's ring
				// only if that key came from it (not from the session's
				// write buffer or a cache).
				if it.Source == wire.FromRing && r.Ring >= 0 && int(r.Ring) < len(cs.layout.Rings) {
					op.Ring = r.Ring
					op.Node = string(cs.layout.Node(int(r.Ring), op.Key))
				} else {
					op.Node = string(r.Node)
				}
				if it.Found {
					op.ValueID = ValueID(it.Value)
				}
			}
			finish()
		})
	default:
		return fmt.Errorf("%w: %s on a causal table", ErrUnsupported, op.Kind)
	}
}

// begin begins a session with the group's SLA, strategy and policy.
func (cfg *Cosla) begin(c *clientcore.Client, t *clientcore.Table) (*clientcore.Session, error) {
	s, err := c.BeginSession(t, cfg.SLA, cfg.Strategy)
	if err == nil {
		err = s.SetPolicy(cfg.Policy)
	}
	return s, err
}

// SimTarget runs each group as a client node of a simulated world
// (package harness): the first, second ... group of this target at a site
// is the site's node c1, c2, .... A node the world already has (a client
// of the topology, or one that loaded the table) is used as it is;
// otherwise it is added with the group's client options and Node's costs.
// Open opens Table on it, running the simulation until it is open.
type SimTarget struct {
	World *harness.World
	Table string
	// Node is the simulator's model of the client nodes it adds.
	Node sim.NodeOptions

	perSite map[string]int
}

// Open implements Target.
func (t *SimTarget) Open(g *Group) (Client, error) {
	if t.perSite == nil {
		t.perSite = map[string]int{}
	}
	t.perSite[g.Site]++
	id := topology.NodeID(g.Site, "c"+strconv.Itoa(t.perSite[g.Site]))
	s := t.World.Sim
	if _, ok := s.Handler(id); !ok {
		opts := g.Cosla.Client
		if len(opts.Nodes) == 0 {
			opts.Nodes = t.World.Topology.Replicas()
		}
		if err := t.World.AddClient(id, g.Site, t.Node, opts); err != nil {
			return nil, err
		}
	}
	core, err := t.World.Client(id)
	if err != nil {
		return nil, err
	}
	table, err := t.World.OpenTable(id, t.Table)
	if err != nil {
		return nil, fmt.Errorf("open table %s at %s: %w", t.Table, id, err)
	}
	layout, err := causalLayout(table)
	if err != nil {
		return nil, err
	}
	return &simClient{sim: s, id: id, core: core, table: table, causal: layout, cfg: g.Cosla}, nil
}

type simClient struct {
	sim    *sim.Sim
	id     wire.NodeID
	core   *clientcore.Client
	table  *clientcore.Table
	causal *causal.Layout // the table's, if it is a causal table
	cfg    Cosla
}

func (c *simClient) Begin(string) (Session, error) {
	s, err := c.cfg.begin(c.core, c.table)
	if err != nil {
		return nil, err
	}
	return &simSession{c: c, s: s, causal: newCausalState(c.causal)}, nil
}

func (c *simClient) Close() {}

// Probes implements Prober.
func (c *simClient) Probes() uint64 { return c.core.ProbesSent() }

// ID is the client node's identity.
func (c *simClient) ID() wire.NodeID { return c.id }

type simSession struct {
	c      *simClient
	s      *clientcore.Session
	causal *causalState
}

func (s *simSession) Do(op *Op, done func()) {
	inDo := true
	doCosla(s.c.core, s.s, &s.c.cfg, s.causal, op, s.c.sim.Now, func() {
		if inDo {
			s.c.sim.After(0, done)
			return
		}
		done()
	})
	inDo = false
}

func (s *simSession) End() { s.c.core.EndSession(s.s) }

// HostTarget runs each group as a client core hosted in this process
// (package host) that talks DRPC to a real cluster: the same core and
// executor as SimTarget. On a causal table (Karma) it performs Put, Get
// and GetTx and fills Op's causal fields (doCausal); the group's SLA
// must then be one a causal table serves (clientcore).
type HostTarget struct {
	Loop *Loop
	// Nodes returns, for a client site, the address a client there dials
	// for each storage node ("site/name" -> host:port).
	Nodes func(site string) (map[string]string, error)
	// TLS secures the connections (cluster.Info.ClientTLS); nil dials in
	// plain text, for a cluster run without TLS.
	TLS   *tls.Config
	Table string
	// OpenTimeout bounds connecting a group's client and opening the
	// table. Default 30s.
	OpenTimeout time.Duration
	Logger      *slog.Logger

	// open holds the groups' clients that are open, in the order opened,
	// for Metrics.
	mu   sync.Mutex
	open []*hostClient
}

// Metrics returns a snapshot of the client core of each group open on
// the target, in the order they were opened (clientcore.Client.Metrics,
// taken on the core's goroutine): none between runs. It may be called
// from any goroutine.
func (t *HostTarget) Metrics() []clientcore.Metrics {
	t.mu.Lock()
	open := slices.Clone(t.open)
	t.mu.Unlock()
	var out []clientcore.Metrics
	for _, c := range open {
		var m clientcore.Metrics
		if err := c.h.Do(func(core *clientcore.Client) { m = core.Metrics() }); err == nil {
			out = append(out, m)
		}
	}
	return out
}

// ParallelOpen implements ParallelTarget: each group's client is its own.
func (t *HostTarget) ParallelOpen() {}

// Open implements Target.
func (t *HostTarget) Open(g *Group) (Client, error) {
	peers, err := t.Nodes(g.Site)
	if err != nil {
		return nil, err
	}
	wpeers := map[wire.NodeID]string{}
	for id, addr := range peers {
		wpeers[wire.NodeID(id)] = addr
	}
	timeout := t.OpenTimeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	opts := g.Cosla.Client
	// The client's nodes are the storage nodes (hostclient.Replicas): a
	// configuration member or a causal coordinator asked for a table's
	// layout has none to give.
	opts.Nodes = hostclient.Replicas(wpeers)
	opts.Measure = clientcore.MeasureAll
	var nonce [4]byte
	_, _ = cryptorand.Read(nonce[:])
	// Over TLS the ID is the client certificate's name and a suffix: the
	// nodes take no other from it (certs.CheckClientID).
	name, err := certs.ClientNodeName(t.TLS, "driver-"+hex.EncodeToString(nonce[:]))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	h, err := hostclient.Open(hostclient.Options{ID: topology.NodeID(g.Site, name), Peers: wpeers, TLS: t.TLS, Logger: t.Logger, Core: opts})
	if err != nil {
		return nil, err
	}
	c := &hostClient{target: t, loop: t.Loop, h: h, cfg: g.Cosla}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	h.Connect(ctx)
	c.table, err = h.OpenTable(ctx, t.Table)
	if err != nil && ctx.Err() != nil {
		err = fmt.Errorf("open table %s: %w", t.Table, err)
	}
	if err == nil {
		c.causal, err = causalLayout(c.table)
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	t.mu.Lock()
	t.open = append(t.open, c)
	t.mu.Unlock()
	return c, nil
}

type hostClient struct {
	target *HostTarget
	loop   *Loop
	h      *hostclient.Client
	table  *clientcore.Table
	causal *causal.Layout // the table's, if it is a causal table
	cfg    Cosla
}

func (c *hostClient) Begin(string) (Session, error) {
	var s *clientcore.Session
	var err error
	if derr := c.h.Do(func(core *clientcore.Client) { s, err = c.cfg.begin(core, c.table) }); derr != nil {
		return nil, derr
	}
	if err != nil {
		return nil, err
	}
	return &hostSession{c: c, s: s, causal: newCausalState(c.causal)}, nil
}

func (c *hostClient) Close() {
	t := c.target
	t.mu.Lock()
	t.open = slices.DeleteFunc(t.open, func(o *hostClient) bool { return o == c })
	t.mu.Unlock()
	_ = c.h.Close()
}

// Probes implements Prober.
func (c *hostClient) Probes() uint64 {
	var n uint64
	_ = c.h.Do(func(core *clientcore.Client) { n = core.ProbesSent() })
	return n
}

type hostSession struct {
	c      *hostClient
	s      *clientcore.Session
	causal *causalState
}

// errStopped is an op's error when its client has been closed.
var errStopped = errors.New("driver: client closed")

func (s *hostSession) Do(op *Op, done func()) {
	loop := s.c.loop
	finish := func() { loop.Post(done) }
	if err := s.c.h.Post(func(core *clientcore.Client) { doCosla(core, s.s, &s.c.cfg, s.causal, op, loop.Now, finish) }); err != nil {
		op.Start, op.End, op.Err = loop.Now(), loop.Now(), errStopped
		finish()
	}
}

func (s *hostSession) End() {
	_ = s.c.h.Post(func(core *clientcore.Client) { core.EndSession(s.s) })
}
