package host

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"storj.io/drpc/drpcwire"

	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/core/wire/wirepb"
	"github.com/cosla/cosla/internal/runtime/certs"
)

// TransportOptions configures a Transport.
type TransportOptions struct {
	// Peers maps the storage nodes of other processes to the address this
	// process dials to reach them. Nodes not listed are reached over the
	// stream they last sent from (clients, which do not listen).
	Peers map[wire.NodeID]string
	// TLS, if set, secures the connections this transport dials and
	// those it serves (package certs builds it: the holder's certificate,
	// the authority, a client certificate required of every peer). Each
	// dial expects the certificate of the peer's site, so ServerName is
	// left empty here. Nil dials and serves in plain text. The transport
	// checks the role of each peer's certificate either way.
	TLS *tls.Config
	// MaxMessageBytes bounds an envelope's encoding, sent or received:
	// Send drops a larger one alone (see Send), and a larger one received
	// ends its connection. It must cover the largest message the nodes
	// send (replica.Options.MessageBytesMax). Default 16 MiB.
	MaxMessageBytes int
	// QueueMax bounds the envelopes waiting to be written on one stream;
	// beyond it messages are dropped, as a congested network would. The
	// protocols tolerate loss. Default 65536.
	QueueMax int
	// RedialDelay is the pause before dialing a peer again after its
	// stream failed or could not be opened. Default 200ms.
	RedialDelay time.Duration
	// DialTimeout bounds connecting to a peer, its TLS handshake
	// included, and the TLS handshake of a connection served. Default 5s.
	DialTimeout time.Duration
	// Logger receives transport events. Default: discard.
	Logger *slog.Logger
	// Receive, if set, takes a message that arrived from another
	// process instead of the deliver function NewTransport is given. It
	// is called on the goroutine that reads the stream, which holds no
	// lock, so it may run the node's event there (Node.DeliverHere),
	// which deliver, called from nodes' goroutines too, may not.
	Receive func(from, to wire.NodeID, m wire.Msg) bool
}

func (o *TransportOptions) ensureDefaults(deliver func(from, to wire.NodeID, m wire.Msg) bool) {
	if o.MaxMessageBytes == 0 {
		o.MaxMessageBytes = 16 << 20
	}
	if o.QueueMax == 0 {
		o.QueueMax = 1 << 16
	}
	if o.RedialDelay == 0 {
		o.RedialDelay = 200 * time.Millisecond
	}
	if o.DialTimeout == 0 {
		o.DialTimeout = 5 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Receive == nil {
		o.Receive = deliver
	}
}

// TransportStats counts envelopes. Refused counts streams ended because
// the peer's certificate did not allow what it sent, TooLarge messages
// not sent for being over MaxMessageBytes, Malformed messages received
// that could not be decoded and messages to send that could not be
// encoded.
type TransportStats struct {
	Sent, Received, Dropped, Unroutable, Malformed, Refused, TooLarge int64
}

// Transport carries messages between the nodes of this process and those
// of other processes over DRPC streams (storj.io/drpc), one per TCP
// connection: one stream per peer address, dialed once and kept, plus
// the streams other processes opened to this one (Serve). Messages
// between two nodes keep their order while a stream lives; when a stream
// breaks, the messages queued on it are lost and the next message dials
// again.
type Transport struct {
	opts    TransportOptions
	deliver func(from, to wire.NodeID, m wire.Msg) bool
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	mu        sync.Mutex
	outbound  map[string]*peer      // by address
	reverse   map[wire.NodeID]route // nodes that reached us over a stream they opened
	inbound   map[*queue]bool       // the write queues of streams others opened
	listeners map[net.Listener]bool
	closed    bool

	sent, received, dropped, unroutable, malformed, refused, tooLarge atomic.Int64
}

// NewTransport returns a transport that hands every message addressed to
// a local node to deliver, which reports whether it knows the node.
func NewTransport(opts TransportOptions, deliver func(from, to wire.NodeID, m wire.Msg) bool) *Transport {
	opts.ensureDefaults(deliver)
	ctx, cancel := context.WithCancel(context.Background())
	return &Transport{
		opts: opts, deliver: deliver, ctx: ctx, cancel: cancel,
		outbound: map[string]*peer{}, reverse: map[wire.NodeID]route{}, inbound: map[*queue]bool{},
		listeners: map[net.Listener]bool{},
	}
}

// Stats returns the transport's counters.
func (t *Transport) Stats() TransportStats {
	return TransportStats{Sent: t.sent.Load(), Received: t.received.Load(), Dropped: t.dropped.Load(),
		Unroutable: t.unroutable.Load(), Malformed: t.malformed.Load(), Refused: t.refused.Load(), TooLarge: t.tooLarge.Load()}
}

// Send queues m for delivery to the node to. Delivery is not guaranteed.
//
// m is encoded here, in the sender's goroutine, into the write buffer of
// the stream to to: a message that cannot be encoded, or is over
// MaxMessageBytes, is dropped alone and, if it is a request that is
// answered, refused to its sender at once (wire.Refusal), so that its
// operation fails rather than times out. Written to a stream, it would
// fail the write and end the stream, losing every message queued behind
// it, other senders' too, again at every retry.
func (t *Transport) Send(from, to wire.NodeID, m wire.Msg) { t.send(from, to, m, false) }

// SendNow is Send, except that m is written to its stream on the calling
// goroutine, with what is queued before it, if the stream is idle: no
// write in progress and nothing held back by the connection (sendConn,
// whose writes never wait). It saves the switch to the stream's writer;
// a node uses it for an event that ran alone (NodeOptions.SendNow).
func (t *Transport) SendNow(from, to wire.NodeID, m wire.Msg) { t.send(from, to, m, true) }

func (t *Transport) send(from, to wire.NodeID, m wire.Msg, now bool) {
	if t.deliver(from, to, m) {
		return // a node of this process
	}
	q := t.queueTo(to)
	if q == nil {
		return
	}
	e, err := wirepb.Wrap(from, to, m)
	var pushed bool
	if err == nil {
		pushed, err = q.push(e, t.opts.MaxMessageBytes, now)
	}
	switch {
	case errors.Is(err, errTooLarge):
		t.opts.Logger.Error("host: message over the size limit dropped", "from", from, "to", to,
			"type", wire.Kind(m), "err", err)
		t.tooLarge.Add(1)
		t.refuse(from, to, m, wire.TooLarge)
	case err != nil:
		t.opts.Logger.Error("host: message cannot be encoded; dropped", "from", from, "to", to, "type", wire.Kind(m), "err", err)
		t.malformed.Add(1)
		t.refuse(from, to, m, wire.Unencodable)
	case pushed:
		t.sent.Add(1)
	default:
		t.dropped.Add(1)
	}
}

// queueTo returns the write queue of the stream that reaches to, or nil
// if there is none (counted unroutable) or the transport is closed.
func (t *Transport) queueTo(to wire.NodeID) *queue {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	if addr, ok := t.opts.Peers[to]; ok {
		return t.peerLocked(addr, to).q
	}
	if r, ok := t.reverse[to]; ok {
		return r.q
	}
	t.unroutable.Add(1)
	return nil
}

// refuse answers from's request m, which could not be sent to to, with
// code, as to would refuse it; m that is not an answered request
// (wire.Refusal) is only dropped.
func (t *Transport) refuse(from, to wire.NodeID, m wire.Msg, code wire.Code) {
	if reply := wire.Refusal(m, code); reply != nil {
		t.deliver(to, from, reply)
	}
}

// Close stops serving and every stream, and waits for the transport's
// goroutines.
func (t *Transport) Close() {
	t.mu.Lock()
	t.closed = true
	for _, p := range t.outbound {
		p.q.close()
	}
	for q := range t.inbound {
		q.close()
	}
	for lis := range t.listeners {
		_ = lis.Close()
	}
	t.mu.Unlock()
	t.cancel()
	t.wg.Wait()
}

// peerLocked returns the outbound peer for addr, where node lives,
// starting its dialer.
func (t *Transport) peerLocked(addr string, node wire.NodeID) *peer {
	p, ok := t.outbound[addr]
	if !ok {
		site, _, _ := strings.Cut(string(node), "/")
		p = &peer{addr: addr, site: site, q: newQueue(t.opts.QueueMax, invokeID, &t.dropped), ready: make(chan struct{})}
		t.outbound[addr] = p
		t.wg.Add(1)
		go t.runPeer(p)
	}
	return p
}

type peer struct {
	addr  string
	site  string // the site of the nodes at addr (one process per site)
	q     *queue
	ready chan struct{} // closed once the first attempt to open a stream is over
}

// Connect opens a stream to every peer address now rather than with the
// first message, and waits until each first attempt has succeeded or
// failed, or ctx ends. Round trips
// measured afterwards then do not include connection setup. Peers that
// cannot be reached are left to the usual redialing.
func (t *Transport) Connect(ctx context.Context) {
	t.mu.Lock()
	var waits []chan struct{}
	if !t.closed {
		for id, addr := range t.opts.Peers {
			waits = append(waits, t.peerLocked(addr, id).ready)
		}
	}
	t.mu.Unlock()
	for _, w := range waits {
		select {
		case <-w:
		case <-ctx.Done():
			return
		}
	}
}

// invokeID numbers the packet that opens the one DRPC stream of a
// connection this transport dials; the messages queued for it follow.
var invokeID = drpcwire.ID{Stream: 1, Message: 1}

// runPeer keeps a stream open to a peer address while there is something
// to send, and delivers what the peer sends back on it. A stream that
// fails is dialed again RedialDelay later, as soon as there is something
// to send: the protocols above time out and retry on their own, and a
// peer back from a partition is reached again within RedialDelay of the
// next message (cosla chaos found a peer unreachable for half a minute
// after a partition healed when gRPC's reconnect backoff, which grows to
// two minutes, decided when to dial, in the gRPC transport this one
// replaced).
func (t *Transport) runPeer(p *peer) {
	defer t.wg.Done()
	who := sender{}
	if t.opts.TLS != nil {
		// The peer must prove it is p.site's node: only a node
		// certificate names a site and may authenticate a server.
		who = sender{role: certs.Node, name: p.site}
	}
	// The first stream opens at once; after a failure, only when there is
	// something to send.
	for first := true; ; first = false {
		if !first && !p.q.wait() {
			return
		}
		ctx, cancel := context.WithCancel(t.ctx)
		l, err := t.dial(ctx, p)
		select {
		case <-p.ready:
		default:
			close(p.ready)
		}
		if err == nil {
			stop := context.AfterFunc(ctx, l.close)
			t.wg.Add(1)
			go func() {
				defer t.wg.Done()
				_ = t.receive(l, nil, who)
				cancel()
			}()
			err = t.write(ctx, l, p.q)
			stop()
			l.close()
		}
		cancel()
		if t.ctx.Err() != nil {
			return
		}
		t.dropped.Add(int64(p.q.clear()))
		t.opts.Logger.Debug("host: stream to peer broke", "addr", p.addr, "err", err)
		select {
		case <-time.After(t.opts.RedialDelay):
		case <-t.ctx.Done():
			return
		}
	}
}

// Serve accepts connections on lis, each carrying one stream another
// process opens, until lis fails or the transport closes (then it
// returns nil).
func (t *Transport) Serve(lis net.Listener) error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		_ = lis.Close()
		return nil
	}
	t.listeners[lis] = true
	t.mu.Unlock()
	for {
		nc, err := lis.Accept()
		if err != nil {
			t.mu.Lock()
			closed := t.closed
			t.mu.Unlock()
			if closed {
				return nil
			}
			return fmt.Errorf("host: accept: %w", err)
		}
		t.mu.Lock()
		if t.closed {
			t.mu.Unlock()
			_ = nc.Close()
			return nil
		}
		t.wg.Add(1) // under mu, so that Close cannot be waiting yet
		t.mu.Unlock()
		go func() {
			defer t.wg.Done()
			t.serveConn(nc)
		}()
	}
}

// handshake runs the TLS handshake of a connection served, if TLS is on,
// within DialTimeout, and returns the connection to use and its TLS
// state (nil in plain text).
func (t *Transport) handshake(nc net.Conn) (net.Conn, *tls.ConnectionState, error) {
	if t.opts.TLS == nil {
		return nc, nil, nil
	}
	tc := tls.Server(nc, t.opts.TLS)
	ctx, cancel := context.WithTimeout(t.ctx, t.opts.DialTimeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		return nil, nil, err
	}
	state := tc.ConnectionState()
	return tc, &state, nil
}

// serve serves a stream another process opened: envelopes it sends are
// delivered here, and envelopes for the nodes that sent from it (clients,
// which have no address of their own) go back on it. It returns the
// error that ended the stream, which the caller tells the peer: a
// refusal when the certificate in state (nil in plain text) does not
// allow what the peer sent. q is the stream's write queue.
func (t *Transport) serve(l *drpcLink, q *queue, state *tls.ConnectionState, remote net.Addr) error {
	who, err := senderOf(state)
	if err != nil {
		t.refused.Add(1)
		t.opts.Logger.Warn("host: refused a stream", "from", remote, "err", err)
		return &refusal{err}
	}
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return errors.New("host: transport closed")
	}
	t.inbound[q] = true
	t.wg.Add(1) // under mu, so that Close cannot be waiting yet
	t.mu.Unlock()
	ctx, cancel := context.WithCancel(t.ctx)
	defer cancel()
	go func() {
		defer t.wg.Done()
		_ = t.write(ctx, l, q)
		cancel()
	}()
	err = t.receive(l, q, who)
	q.close()
	t.mu.Lock()
	delete(t.inbound, q)
	for id, r := range t.reverse {
		if r.q == q {
			delete(t.reverse, id)
		}
	}
	t.mu.Unlock()
	return err
}

// refusal ends a stream whose peer's certificate does not allow what it
// sent.
type refusal struct{ err error }

func (r *refusal) Error() string { return "host: refused: " + r.err.Error() }

func (r *refusal) Unwrap() error { return r.err }

// sender is who is at the other end of a stream, as its certificate says:
// a role and, for a node, its site. The zero sender (no TLS) may send
// anything.
type sender struct {
	role certs.Role
	name string
}

// senderOf returns the sender of a stream others opened, from the
// certificate its TLS handshake verified; the zero sender in plain text.
func senderOf(state *tls.ConnectionState) (sender, error) {
	if state == nil {
		return sender{}, nil
	}
	role, name, err := certs.PeerRole(*state)
	if err != nil {
		return sender{}, err
	}
	return sender{role: role, name: name}, nil
}

// allows reports why the sender may not send m as from, or nil: a client
// certificate sends only client requests, and only as the client it names
// (certs.CheckClientID); a node's speaks only for its own site's nodes.
func (s sender) allows(from wire.NodeID, m wire.Msg) error {
	switch s.role {
	case certs.Client:
		if !wire.FromClient(m) {
			return fmt.Errorf("a client certificate sent %T as %s, a message only storage nodes send", m, from)
		}
		if err := certs.CheckClientID(s.name, string(from)); err != nil {
			return fmt.Errorf("%T: %w", m, err)
		}
	case certs.Node:
		if site, _, _ := strings.Cut(string(from), "/"); site != s.name {
			return fmt.Errorf("the node certificate of site %q sent %T as %s", s.name, m, from)
		}
	}
	return nil
}

// receive delivers envelopes from a stream until it ends, or until the
// sender sends what its certificate does not allow, which ends the stream
// with a refusal. If back is not nil, it becomes the route to every
// sender that has no peer address.
func (t *Transport) receive(l *drpcLink, back *queue, who sender) error {
	if back != nil {
		l.holdWhileReading(back)
	}
	for {
		e, err := l.recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		from, to, m, err := wirepb.Unwrap(e)
		if err != nil {
			t.malformed.Add(1)
			t.opts.Logger.Warn("host: malformed message", "from", e.GetFrom(), "err", err)
			continue
		}
		if err := who.allows(from, m); err != nil {
			t.refused.Add(1)
			t.opts.Logger.Warn("host: refused a message; closing the stream", "from", from, "to", to, "err", err)
			return &refusal{err}
		}
		if back != nil {
			t.routeBack(from, route{q: back, who: who})
		}
		t.received.Add(1)
		if !t.opts.Receive(from, to, m) {
			t.unroutable.Add(1)
		}
	}
}

// route is the way back to a node with no peer address (a client): the
// write queue of the stream it last sent from, and who holds that stream.
type route struct {
	q   *queue
	who sender
}

// routeBack makes r the route to from, unless from has a peer address or
// a route through a stream of another sender: a client's replies go on
// to it even when a stream of another identity sends as it (a node
// certificate may speak for any ID at its site). The route moves only
// between streams of one identity, such as a client's new stream after
// its old one broke; a route goes when its stream ends.
func (t *Transport) routeBack(from wire.NodeID, r route) {
	if _, ok := t.opts.Peers[from]; ok {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if old, ok := t.reverse[from]; t.closed || ok && old.who != r.who {
		return
	}
	t.reverse[from] = r
}

// write sends the queue's envelopes, a batch at a time, until the queue
// closes or a write fails. They are encoded already (Send), so a write
// fails only when the stream does.
func (t *Transport) write(ctx context.Context, l *drpcLink, q *queue) error {
	defer q.detach()
	for {
		frames, n, ok := q.take(ctx, l)
		if !ok {
			return ctx.Err()
		}
		err := l.write(frames)
		q.done()
		if err != nil {
			t.dropped.Add(int64(n))
			return fmt.Errorf("host: send: %w", err)
		}
	}
}
