// Package hostclient hosts a client core (package clientcore) in this
// process, as a node of its own (package host), and connects it to the
// storage nodes over the transport (DRPC): the one shell of every real
// client, that of the public API (cosla.Client), of the lab's driver
// (HostTarget) and of the cluster supervisor that creates tables.
//
// The core is not safe for concurrent use: it runs one event at a time,
// as a host.Node does, through Post, Do or Call, and a callback the core
// runs is inside such an event. An event runs on the node's goroutine,
// or, when the core is idle, on the goroutine that started it (Call) or
// that read its reply off the network, and a request it sends alone is
// written to the network there (host.Transport.SendNow): a Get then goes
// out and comes back without waking the node's goroutine or the
// stream's writer.
package hostclient

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/cosla/cosla/internal/core/causal"
	"github.com/cosla/cosla/internal/core/clientcore"
	"github.com/cosla/cosla/internal/core/config"
	"github.com/cosla/cosla/internal/core/node"
	"github.com/cosla/cosla/internal/core/storage"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/runtime/host"
)

// ErrClosed is the error of a call on a client that was closed.
var ErrClosed = errors.New("hostclient: client closed")

// Options configures a Client.
type Options struct {
	// ID is the client's node identity, "site/name". Required.
	ID wire.NodeID
	// Peers maps every node the client talks to ("site/name") to the
	// address it dials. Required.
	Peers map[wire.NodeID]string
	// TLS secures the connections; nil dials in plain text.
	TLS *tls.Config
	// Logger receives the shell's logs. Default: discard.
	Logger *slog.Logger
	// Core configures the client core. Its Nodes, the replicas the core
	// monitors, default to the Peers that are not a causal table's
	// coordinators or caches, nor configuration members; its Config, the
	// configuration service's members, to the Peers named SITE/cfg
	// (Members).
	Core clientcore.Options
}

// Client is a client core hosted on its own goroutine and connected to
// its peers.
type Client struct {
	id        wire.NodeID
	transport *host.Transport
	node      atomic.Pointer[host.Node]
	core      *clientcore.Client

	// closed is closed by Close: calls waiting for the core give up.
	closed    chan struct{}
	closeOnce sync.Once
}

// Open starts a client. It does not wait for the peers: each is dialed
// when first sent to (or all at once by Connect).
func Open(opts Options) (*Client, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if len(opts.Core.Nodes) == 0 {
		opts.Core.Nodes = Replicas(opts.Peers)
	}
	if len(opts.Core.Config) == 0 {
		opts.Core.Config = Members(opts.Peers)
	}
	c := &Client{id: opts.ID, core: clientcore.New(opts.Core), closed: make(chan struct{})}
	c.transport = host.NewTransport(host.TransportOptions{Peers: opts.Peers, TLS: opts.TLS, Logger: opts.Logger, Receive: c.receive}, c.deliver)
	n, err := host.StartNode(host.NodeOptions{ID: c.id, Handler: c.core, Engine: storage.NewMem(), Send: c.transport.Send, SendNow: c.transport.SendNow, Logger: opts.Logger})
	if err != nil {
		c.transport.Close()
		return nil, fmt.Errorf("hostclient: start %s: %w", opts.ID, err)
	}
	c.node.Store(n)
	return c, nil
}

// Replicas returns the storage nodes among peers, in order: every node
// but the sites' coordinators and caches of causal tables and the
// configuration members.
func Replicas(peers map[wire.NodeID]string) []wire.NodeID {
	var replicas []wire.NodeID
	for _, id := range slices.Sorted(maps.Keys(peers)) {
		if !causal.RoleNode(id) && !member(id) {
			replicas = append(replicas, id)
		}
	}
	return replicas
}

// Members returns the configuration service's members among peers, in
// order: the nodes named config.MemberName.
func Members(peers map[wire.NodeID]string) []wire.NodeID {
	var members []wire.NodeID
	for _, id := range slices.Sorted(maps.Keys(peers)) {
		if member(id) {
			members = append(members, id)
		}
	}
	return members
}

// member reports whether id names a configuration member.
func member(id wire.NodeID) bool {
	_, name, _ := strings.Cut(string(id), "/")
	return name == config.MemberName
}

// deliver hands the core a message sent in this process.
func (c *Client) deliver(from, to wire.NodeID, m wire.Msg) bool {
	return c.hand(from, to, m, (*host.Node).Deliver)
}

// receive takes a reply from the network and hands it to the core on
// the goroutine that read it, if the core is idle (host.Node.DeliverHere).
func (c *Client) receive(from, to wire.NodeID, m wire.Msg) bool {
	return c.hand(from, to, m, (*host.Node).DeliverHere)
}

// hand gives m to the core by deliver, if it is the core's.
func (c *Client) hand(from, to wire.NodeID, m wire.Msg, deliver func(*host.Node, wire.NodeID, wire.Msg) bool) bool {
	if to != c.id {
		return false
	}
	if n := c.node.Load(); n != nil {
		deliver(n, from, m)
	}
	return true
}

// ID returns the client's node identity.
func (c *Client) ID() wire.NodeID { return c.id }

// Connect dials every peer and waits, for as long as ctx allows, until
// each is connected or failed.
func (c *Client) Connect(ctx context.Context) { c.transport.Connect(ctx) }

// Post runs f on the core's goroutine and returns at once; ErrClosed if
// the client is closed. (The lab's driver posts the operations of all
// its clients from one goroutine: run there, the clients' work and
// system calls would queue behind each other.)
func (c *Client) Post(f func(*clientcore.Client)) error {
	if err := c.node.Load().Post(func(node.Handler) { f(c.core) }); err != nil {
		return ErrClosed
	}
	return nil
}

// Do runs f on the core's goroutine and waits for it to return.
func (c *Client) Do(f func(*clientcore.Client)) error {
	if err := c.node.Load().Do(func(node.Handler) { f(c.core) }); err != nil {
		return ErrClosed
	}
	return nil
}

// Close stops the client: calls waiting in Call fail with ErrClosed at
// once, and so does every later call, a second Close included.
func (c *Client) Close() error {
	err := ErrClosed
	c.closeOnce.Do(func() {
		close(c.closed)
		c.node.Load().Stop()
		c.transport.Close()
		err = nil
	})
	return err
}

// Call runs start in the core (an event of its node) and waits for the result it
// delivers through the channel it is given, for ctx, or for Close.
func Call[T any](ctx context.Context, c *Client, start func(core *clientcore.Client, result chan<- T)) (T, error) {
	r, _, err := NewCaller(c, start).Call(ctx)
	return r, err
}

// A Caller makes calls of one kind into the core, again and again: its
// channel and closures are made once, so that a caller that keeps it
// (a pool of them) allocates nothing per call. One call at a time.
type Caller[T any] struct {
	c      *Client
	result chan T
	run    func(node.Handler)
}

// NewCaller returns a Caller of start, which runs in the core (an event)
// and delivers its result through the channel it is given, later or at
// once.
func NewCaller[T any](c *Client, start func(core *clientcore.Client, result chan<- T)) *Caller[T] {
	k := &Caller[T]{c: c, result: make(chan T, 1)}
	k.run = func(node.Handler) { start(c.core, k.result) }
	return k
}

// Call runs the Caller's start and waits for its result, for ctx, or for
// Close. reusable reports whether the Caller may be called again: not
// after Call gave up waiting, since start may still run and deliver.
func (k *Caller[T]) Call(ctx context.Context) (_ T, reusable bool, _ error) {
	var zero T
	select {
	case <-k.c.closed:
		return zero, true, ErrClosed
	default:
	}
	if err := ctx.Err(); err != nil {
		return zero, true, err
	}
	// The call starts on this goroutine if the core is idle (PostHere):
	// the request goes out without waking the core's goroutine.
	if err := k.c.node.Load().PostHere(k.run); err != nil {
		return zero, true, ErrClosed
	}
	select {
	case r := <-k.result:
		return r, true, nil
	case <-ctx.Done():
		return zero, false, ctx.Err()
	case <-k.c.closed:
		return zero, false, ErrClosed
	}
}

// CreateTable creates the table of layout l on the nodes it places it on.
func (c *Client) CreateTable(ctx context.Context, l wire.Layout) error {
	err, cerr := Call(ctx, c, func(core *clientcore.Client, ch chan<- error) {
		core.CreateTable(l, func(err error) { ch <- err })
	})
	return errors.Join(cerr, err)
}

// OpenTable fetches a table's layout and probes its replicas.
func (c *Client) OpenTable(ctx context.Context, name string) (*clientcore.Table, error) {
	type result struct {
		t   *clientcore.Table
		err error
	}
	r, err := Call(ctx, c, func(core *clientcore.Client, ch chan<- result) {
		core.OpenTable(name, func(t *clientcore.Table, err error) { ch <- result{t, err} })
	})
	if err != nil {
		return nil, err
	}
	return r.t, r.err
}
