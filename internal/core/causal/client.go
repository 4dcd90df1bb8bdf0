package causal

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/node"
	"github.com/cosla/cosla/internal/core/wire"
)

// ClientOptions configures the client side of causal tables.
type ClientOptions struct {
	// Layout places the table. Required, validated.
	Layout *Layout
	// Coordinator is the coordinator to use. Default: the one at the
	// client's site.
	Coordinator wire.NodeID
	// Timeout bounds an operation. Default 10s.
	Timeout time.Duration
	// NotifyEvery is how often a session held by ring restrictions, and
	// that wrote nothing since the last time, sends a notify-after to
	// lift them (Karma 4.2, write insertion). 0 sends none, as in the
	// paper's evaluation. A session whose restrictions a write already
	// sent will lift (it completes only once they are stable) sends
	// none until that write completes, or until Timeout after it.
	NotifyEvery time.Duration
}

// Result is what a causal operation returned.
type Result struct {
	Code wire.Code
	// Put: the version written. Get: the version read.
	Version wire.Version
	Found   bool
	Value   []byte
	// Source, Ring and Node say where a read's value came from.
	Source wire.Source
	Ring   int32
	Node   wire.NodeID
	// InFlight: the version was not yet in every ring when read.
	InFlight bool
	// Restricted: the session was bound to a ring by a dynamic ring
	// restriction when it read (a static binding, COPS-PR, is the
	// coordinator's and is not reported).
	Restricted bool
	// Items are a get-transaction's values, Rounds its rounds.
	Items  []wire.TxItem
	Rounds int32
}

// Client is the client side of causal tables: it keeps its sessions'
// causal state (Session) and talks to its site's coordinator.
type Client struct {
	opts     ClientOptions
	env      node.Env
	cc       wire.NodeID
	sessions map[uint64]*Session
	nextReq  uint64
	ops      map[uint64]*clientOp
	// wrote records the sessions that wrote since the last notify tick;
	// lastWrite when each last sent a write or notify-after.
	wrote     map[uint64]bool
	lastWrite map[uint64]time.Time
	// timeouts holds the requests' deadlines.
	timeouts *deadlines[uint64]
}

type clientOp struct {
	s          *Session
	seq        uint64
	key        string
	restricted bool
	// named are the restrictions the request named: if the coordinator
	// lifted them all, it served the read unbound.
	named []wire.Dep
	done  func(Result)
}

type opTimer struct{}
type notifyTimer struct{}

// EnsureDefaults returns a copy of o with unset fields given their
// defaults (see package node: the options idiom). The default
// Coordinator depends on the client's site: Start picks it.
func (o ClientOptions) EnsureDefaults() ClientOptions {
	o.Timeout = cmp.Or(o.Timeout, 10*time.Second)
	return o
}

// Validate checks the options.
func (o ClientOptions) Validate() error {
	if o.Layout == nil {
		return errors.New("causal: ClientOptions.Layout is required")
	}
	if o.Timeout < 0 || o.NotifyEvery < 0 {
		return errors.New("causal: ClientOptions: negative Timeout or NotifyEvery")
	}
	return nil
}

// NewClient returns a client; Start starts it.
func NewClient(opts ClientOptions) *Client {
	return &Client{opts: opts.EnsureDefaults()}
}

// Start implements node.Handler.
func (c *Client) Start(env node.Env) error {
	if err := c.opts.Validate(); err != nil {
		return err
	}
	c.env = env
	c.cc = c.opts.Coordinator
	if c.cc == "" {
		c.cc = c.opts.Layout.Coordinators[Site(env.ID())]
	}
	if c.cc == "" {
		return fmt.Errorf("causal: client %s: no coordinator at site %s", env.ID(), Site(env.ID()))
	}
	c.sessions = map[uint64]*Session{}
	c.ops = map[uint64]*clientOp{}
	c.wrote = map[uint64]bool{}
	c.lastWrite = map[uint64]time.Time{}
	c.timeouts = newDeadlines[uint64](c.opts.Timeout, opTimer{})
	if c.opts.NotifyEvery > 0 {
		env.After(c.opts.NotifyEvery, notifyTimer{})
	}
	return nil
}

// Session returns session id, creating it.
func (c *Client) Session(id uint64) *Session {
	s := c.sessions[id]
	if s == nil {
		s = NewSession(id)
		c.sessions[id] = s
	}
	return s
}

func (c *Client) send(op *clientOp, m wire.Msg) uint64 {
	c.nextReq++
	req := c.nextReq
	// A read names when the client stops waiting: its coordinator waits
	// for a slow ring until then, and no longer.
	deadline := hlc.Timestamp{WallNanos: c.env.WallNanos() + int64(c.opts.Timeout)}
	switch m := m.(type) {
	case *wire.CausalPut:
		m.Req = req
	case *wire.CausalGet:
		m.Req, m.Deadline = req, deadline
	case *wire.CausalGetTx:
		m.Req, m.Deadline = req, deadline
	}
	c.ops[req] = op
	c.env.Send(c.cc, m)
	c.timeouts.add(c.env, req)
	return req
}

// Put writes key in session s; done gets the version.
func (c *Client) Put(s *Session, key string, value []byte, done func(Result)) {
	c.wrote[s.id] = true
	c.lastWrite[s.id] = c.env.Now()
	m := s.Put(c.opts.Layout.Table, key, value, false)
	c.send(&clientOp{s: s, seq: m.Seq, key: key, done: done}, m)
}

// Restricted reports whether a dynamic ring restriction binds session s:
// never on a static table, whose reads are bound to the site's ring
// whatever they read (COPS-PR).
func (c *Client) Restricted(s *Session) bool {
	return s.ring != wire.NoRing && !c.opts.Layout.Static
}

// Get reads key in session s.
func (c *Client) Get(s *Session, key string, done func(Result)) {
	m := s.Get(c.opts.Layout.Table, key)
	c.send(&clientOp{s: s, key: key, restricted: c.Restricted(s), named: m.Restrictions, done: done}, m)
}

// GetTx reads keys as one snapshot in session s.
func (c *Client) GetTx(s *Session, keys []string, done func(Result)) {
	m := s.GetTx(c.opts.Layout.Table, slices.Clone(keys))
	c.send(&clientOp{s: s, restricted: c.Restricted(s), named: m.Restrictions, done: done}, m)
}

// lift applies a reply's lifted restrictions, and reports whether the
// op was served under a restriction: not if the coordinator lifted every
// one the request named.
func (op *clientOp) lift(lifted []wire.Dep) bool {
	op.s.Lift(lifted)
	return op.restricted && len(lifted) < len(op.named)
}

// Receive implements node.Handler.
func (c *Client) Receive(from wire.NodeID, m wire.Msg) {
	switch m := m.(type) {
	case *wire.CausalComplete:
		if s := c.sessions[m.Session]; s != nil && m.Table == c.opts.Layout.Table {
			s.Complete(m.Seq)
		}
	case *wire.CausalPutReply:
		op := c.take(m.Req)
		if op == nil {
			return
		}
		if m.Code == wire.OK && op.seq != 0 {
			op.s.PutDone(op.seq, m.Version)
		}
		if op.done != nil {
			op.done(Result{Code: m.Code, Version: m.Version})
		}
	case *wire.CausalGetReply:
		op := c.take(m.Req)
		if op == nil {
			return
		}
		r := Result{Code: m.Code, Found: m.Found, Value: m.Value, Version: m.Version, Source: m.Source,
			Ring: m.Ring, Node: m.Node, InFlight: m.InFlight, Restricted: op.lift(m.Lifted)}
		if m.Code == wire.OK {
			if m.Rebound {
				op.s.Rebind(m.Ring, op.named)
			}
			op.s.Read(op.key, m.Found, m.Version, m.Source, m.Ring, m.InFlight)
		}
		op.done(r)
	case *wire.CausalGetTxReply:
		op := c.take(m.Req)
		if op == nil {
			return
		}
		restricted := op.lift(m.Lifted)
		if m.Code == wire.OK {
			if m.Rebound {
				op.s.Rebind(m.Ring, op.named)
			}
			for _, it := range m.Items {
				op.s.Read(it.Key, it.Found, it.Version, it.Source, m.Ring, it.InFlight)
			}
		}
		op.done(Result{Code: m.Code, Ring: m.Ring, Items: m.Items, Rounds: m.Rounds, Restricted: restricted})
	}
}

func (c *Client) take(req uint64) *clientOp {
	op := c.ops[req]
	delete(c.ops, req)
	return op
}

// Fire implements node.Handler.
func (c *Client) Fire(timer any) {
	switch timer.(type) {
	case opTimer:
		for _, req := range c.timeouts.fire(c.env) {
			if op := c.take(req); op != nil && op.done != nil {
				// The coordinator is the node that did not answer.
				op.done(Result{Code: wire.Unavailable, Node: c.cc, Ring: wire.NoRing, Restricted: op.restricted})
			}
		}
	case notifyTimer:
		for _, id := range slices.Sorted(maps.Keys(c.sessions)) {
			s := c.sessions[id]
			if len(s.items) == 0 || c.wrote[id] {
				continue
			}
			// A notify-after sent while the session's last write, which
			// lifts every restriction it holds, is still propagating
			// only adds dependency checks to the rings that are behind:
			// with the rings saturated, each session's stream of them
			// kept them so (TestRandomizedCausalBusy seed 1471).
			if s.covered() && c.env.Now().Sub(c.lastWrite[id]) < c.opts.Timeout {
				continue
			}
			c.lastWrite[id] = c.env.Now()
			c.send(&clientOp{s: s}, s.Put(c.opts.Layout.Table, "", nil, true))
		}
		clear(c.wrote)
		c.env.After(c.opts.NotifyEvery, notifyTimer{})
	}
}
