package host

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	grpcpeer "google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

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
	// TLS, if set, secures the streams this transport dials (package
	// certs builds it); each dial expects the certificate of the peer's
	// site, so ServerName is left empty here. Nil dials in plain text.
	// The streams others open are secured by the gRPC server's
	// credentials; the transport checks the role of each one's
	// certificate either way.
	TLS *tls.Config
	// MaxMessageBytes bounds an envelope's encoding, sent or received:
	// Send drops a larger one alone (see Send), and gRPC refuses a larger
	// one received, ending its stream. It must cover the largest message
	// the nodes send (replica.Options.MessageBytesMax). Default 16 MiB.
	MaxMessageBytes int
	// QueueMax bounds the envelopes waiting to be written on one stream;
	// beyond it messages are dropped, as a congested network would. The
	// protocols tolerate loss. Default 65536.
	QueueMax int
	// RedialDelay is the pause before dialing a peer again after its
	// stream failed. Default 200ms.
	RedialDelay time.Duration
	// Logger receives transport events. Default: discard.
	Logger *slog.Logger
}

func (o *TransportOptions) ensureDefaults() {
	if o.MaxMessageBytes == 0 {
		o.MaxMessageBytes = 16 << 20
	}
	if o.QueueMax == 0 {
		o.QueueMax = 1 << 16
	}
	if o.RedialDelay == 0 {
		o.RedialDelay = 200 * time.Millisecond
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
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
// of other processes over gRPC bidirectional streams: one stream per peer
// address, dialed once and kept, plus the streams other processes opened
// to this one. Messages between two nodes keep their order while a stream
// lives; when a stream breaks, the messages queued on it are lost and the
// next message dials again.
type Transport struct {
	wirepb.UnimplementedNodeServer

	opts    TransportOptions
	deliver func(from, to wire.NodeID, m wire.Msg) bool
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	mu       sync.Mutex
	outbound map[string]*peer      // by address
	reverse  map[wire.NodeID]route // nodes that reached us over a stream they opened
	inbound  map[*queue]bool       // the write queues of streams others opened
	closed   bool

	sent, received, dropped, unroutable, malformed, refused, tooLarge atomic.Int64
}

// NewTransport returns a transport that hands every message addressed to
// a local node to deliver, which reports whether it knows the node.
func NewTransport(opts TransportOptions, deliver func(from, to wire.NodeID, m wire.Msg) bool) *Transport {
	opts.ensureDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	return &Transport{
		opts: opts, deliver: deliver, ctx: ctx, cancel: cancel,
		outbound: map[string]*peer{}, reverse: map[wire.NodeID]route{}, inbound: map[*queue]bool{},
	}
}

// Register adds the transport's service to a gRPC server, so other
// processes can open streams to it.
func (t *Transport) Register(s *grpc.Server) { wirepb.RegisterNodeServer(s, t) }

// ServerOptions are the options the gRPC server Register is given must
// have: the message size limit and the codec that writes the envelopes
// Send encoded.
func (t *Transport) ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{grpc.MaxRecvMsgSize(t.opts.MaxMessageBytes), grpc.MaxSendMsgSize(t.opts.MaxMessageBytes),
		grpc.ForceServerCodecV2(wirepb.Codec)}
}

// Stats returns the transport's counters.
func (t *Transport) Stats() TransportStats {
	return TransportStats{Sent: t.sent.Load(), Received: t.received.Load(), Dropped: t.dropped.Load(),
		Unroutable: t.unroutable.Load(), Malformed: t.malformed.Load(), Refused: t.refused.Load(), TooLarge: t.tooLarge.Load()}
}

// Send queues m for delivery to the node to. Delivery is not guaranteed.
//
// m is encoded here, in the sender's goroutine: a message that cannot be
// encoded, or is over MaxMessageBytes, is dropped alone and, if it is a
// request that is answered, refused to its sender at once (wire.Refusal),
// so that its operation fails rather than times out. Written to a stream,
// it would fail the write and end the stream, losing every message queued
// behind it, other senders' too, again at every retry.
func (t *Transport) Send(from, to wire.NodeID, m wire.Msg) {
	if t.deliver(from, to, m) {
		return // a node of this process
	}
	e, err := wirepb.Encode(from, to, m)
	switch {
	case err != nil:
		t.opts.Logger.Error("host: message cannot be encoded; dropped", "from", from, "to", to, "err", err)
		t.malformed.Add(1)
		t.refuse(from, to, m, wire.Unencodable)
		return
	case len(e) > t.opts.MaxMessageBytes:
		t.opts.Logger.Error("host: message over the size limit dropped", "from", from, "to", to,
			"type", wire.Kind(m), "bytes", len(e), "limit", t.opts.MaxMessageBytes)
		t.tooLarge.Add(1)
		t.refuse(from, to, m, wire.TooLarge)
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	var q *queue
	if addr, ok := t.opts.Peers[to]; ok {
		q = t.peerLocked(addr, to).q
	} else if r, ok := t.reverse[to]; ok {
		q = r.q
	} else {
		t.unroutable.Add(1)
		return
	}
	if q.push(e) {
		t.sent.Add(1)
	} else {
		t.dropped.Add(1)
	}
}

// refuse answers from's request m, which could not be sent to to, with
// code, as to would refuse it; m that is not an answered request
// (wire.Refusal) is only dropped.
func (t *Transport) refuse(from, to wire.NodeID, m wire.Msg, code wire.Code) {
	if reply := wire.Refusal(m, code); reply != nil {
		t.deliver(to, from, reply)
	}
}

// Close stops every stream and waits for the transport's goroutines.
func (t *Transport) Close() {
	t.mu.Lock()
	t.closed = true
	for _, p := range t.outbound {
		p.q.close()
	}
	for q := range t.inbound {
		q.close()
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
		p = &peer{addr: addr, site: site, q: newQueue(t.opts.QueueMax), ready: make(chan struct{})}
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

// runPeer keeps a stream open to a peer address while there is something
// to send, and delivers what the peer sends back on it.
func (t *Transport) runPeer(p *peer) {
	defer t.wg.Done()
	creds, role := insecure.NewCredentials(), certs.Role("")
	if t.opts.TLS != nil {
		// The peer must prove it is p.site's node: only a node
		// certificate names a site and may authenticate a server.
		cfg := t.opts.TLS.Clone()
		cfg.ServerName = p.site
		creds, role = credentials.NewTLS(cfg), certs.Node
	}
	// gRPC's default reconnect backoff grows to two minutes over a long
	// outage; a peer that came back then stayed unreachable for half a
	// minute after a partition healed (found by cosla chaos). Reconnect
	// at least every second.
	reconnect := grpc.ConnectParams{MinConnectTimeout: 5 * time.Second,
		Backoff: backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second}}
	conn, err := grpc.NewClient(p.addr, grpc.WithTransportCredentials(creds), grpc.WithConnectParams(reconnect),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(t.opts.MaxMessageBytes), grpc.MaxCallSendMsgSize(t.opts.MaxMessageBytes),
			grpc.ForceCodecV2(wirepb.Codec)))
	if err != nil {
		t.opts.Logger.Error("host: bad peer address", "addr", p.addr, "err", err)
		p.q.close()
		return
	}
	defer conn.Close()
	client := wirepb.NewNodeClient(conn)
	// The first stream opens at once; after a failure, only when there is
	// something to send.
	for first := true; ; first = false {
		if !first && !p.q.wait() {
			return
		}
		ctx, cancel := context.WithCancel(t.ctx)
		// Fail at once rather than wait for a peer that cannot be reached:
		// the protocols above time out and retry on their own.
		stream, err := client.Stream(ctx, grpc.WaitForReady(false))
		select {
		case <-p.ready:
		default:
			close(p.ready)
		}
		if err == nil {
			t.wg.Add(1)
			go func() {
				defer t.wg.Done()
				_ = t.receive(stream, nil, sender{role: role, name: p.site})
				cancel()
			}()
			err = t.write(ctx, stream.SendMsg, p.q)
			_ = stream.CloseSend()
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

// Stream serves a stream another process opened: envelopes it sends are
// delivered here, and envelopes for the nodes that sent from it (clients,
// which have no address of their own) go back on it.
func (t *Transport) Stream(stream wirepb.Node_StreamServer) error {
	who, err := streamSender(stream.Context())
	if err != nil {
		t.refused.Add(1)
		t.opts.Logger.Warn("host: refused a stream", "err", err)
		return status.Error(codes.PermissionDenied, err.Error())
	}
	q := newQueue(t.opts.QueueMax)
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return errors.New("host: transport closed")
	}
	t.inbound[q] = true
	t.wg.Add(1) // under mu, so that Close cannot be waiting yet
	t.mu.Unlock()
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	go func() {
		defer t.wg.Done()
		_ = t.write(ctx, stream.SendMsg, q)
		cancel()
	}()
	err = t.receive(stream, q, who)
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

// sender is who is at the other end of a stream, as its certificate says:
// a role and, for a node, its site. The zero sender (no TLS) may send
// anything.
type sender struct {
	role certs.Role
	name string
}

// streamSender returns the sender of a stream others opened, from the
// certificate its TLS handshake verified.
func streamSender(ctx context.Context) (sender, error) {
	p, ok := grpcpeer.FromContext(ctx)
	if !ok || p.AuthInfo == nil {
		return sender{}, nil
	}
	info, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok {
		return sender{}, nil
	}
	role, name, err := certs.PeerRole(info.State)
	if err != nil {
		return sender{}, fmt.Errorf("host: stream from %s: %w", p.Addr, err)
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
// sender sends what its certificate does not allow, which ends the stream.
// If back is not nil, it becomes the route to every sender that has no
// peer address.
func (t *Transport) receive(stream interface {
	Recv() (*wirepb.Envelope, error)
}, back *queue, who sender) error {
	for {
		e, err := stream.Recv()
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
			return status.Error(codes.PermissionDenied, err.Error())
		}
		if back != nil {
			t.routeBack(from, route{q: back, who: who})
		}
		t.received.Add(1)
		if !t.deliver(from, to, m) {
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

// write sends the queue's envelopes until the queue closes or a send
// fails. They are encoded already (Send), so a send fails only when the
// stream does.
func (t *Transport) write(ctx context.Context, send func(any) error, q *queue) error {
	for {
		batch, ok := q.take(ctx)
		if !ok {
			return ctx.Err()
		}
		for i := range batch {
			// A pointer into the batch, which is never written again,
			// rather than a copy boxed per message.
			if err := send(&batch[i]); err != nil {
				t.dropped.Add(1)
				return fmt.Errorf("host: send: %w", err)
			}
		}
	}
}

// queue is a bounded FIFO of envelopes with one reader.
type queue struct {
	mu     sync.Mutex
	items  []wirepb.Encoded
	max    int
	closed bool
	ready  chan struct{} // holds a token while items is not empty or closed
}

func newQueue(max int) *queue {
	return &queue{max: max, ready: make(chan struct{}, 1)}
}

func (q *queue) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

func (q *queue) push(e wirepb.Encoded) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed || len(q.items) >= q.max {
		return false
	}
	q.items = append(q.items, e)
	q.signal()
	return true
}

// wait blocks until the queue has items (true) or is closed (false).
func (q *queue) wait() bool {
	for {
		q.mu.Lock()
		n, closed := len(q.items), q.closed
		q.mu.Unlock()
		if closed {
			return false
		}
		if n > 0 {
			return true
		}
		<-q.ready
	}
}

// take returns every queued envelope, waiting for at least one.
func (q *queue) take(ctx context.Context) ([]wirepb.Encoded, bool) {
	for {
		q.mu.Lock()
		if q.closed {
			q.mu.Unlock()
			return nil, false
		}
		if len(q.items) > 0 {
			batch := q.items
			q.items = nil
			q.mu.Unlock()
			return batch, true
		}
		q.mu.Unlock()
		select {
		case <-q.ready:
		case <-ctx.Done():
			return nil, false
		}
	}
}

// clear drops every queued envelope and returns how many there were.
func (q *queue) clear() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := len(q.items)
	q.items = nil
	return n
}

func (q *queue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.signal()
}
