package host

import (
	"context"
	"crypto/tls"
	"net"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding"
	protocodec "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	grpcpeer "google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"storj.io/drpc/drpcconn"
	"storj.io/drpc/drpcmanager"
	"storj.io/drpc/drpcstream"
	"storj.io/drpc/drpcwire"

	"github.com/cosla/cosla/internal/core/wire/wirepb"
)

func (t *Transport) newDialer(p *peer) (dialer, error) {
	switch t.opts.Library {
	case "grpc", "grpc-trimmed":
		return t.grpcDialer(p)
	case "drpc-stock":
		return &stockDialer{t: t, drpcDialer: drpcDialer{t: t, addr: p.addr, site: p.site}}, nil
	}
	return &drpcDialer{t: t, addr: p.addr, site: p.site}, nil
}

// ---- gRPC ----

type grpcCodec struct{}

func (grpcCodec) Marshal(v any) (mem.BufferSlice, error) {
	if e, ok := v.(*wirepb.Encoded); ok {
		return mem.BufferSlice{mem.SliceBuffer(*e)}, nil
	}
	return encoding.GetCodecV2(protocodec.Name).Marshal(v)
}

func (grpcCodec) Unmarshal(data mem.BufferSlice, v any) error {
	return encoding.GetCodecV2(protocodec.Name).Unmarshal(data, v)
}

func (grpcCodec) Name() string { return protocodec.Name }

type grpcServers struct {
	mu sync.Mutex
	s  []*grpc.Server
}

func (g *grpcServers) stop() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, s := range g.s {
		s.Stop()
	}
}

// windows: a static flow-control window turns gRPC's BDP estimator (and
// its pings) off.
const grpcWindow = 1 << 20

func (t *Transport) serveGRPC(lis net.Listener) error {
	opts := []grpc.ServerOption{grpc.MaxRecvMsgSize(t.opts.MaxMessageBytes), grpc.MaxSendMsgSize(t.opts.MaxMessageBytes),
		grpc.ForceServerCodecV2(grpcCodec{})}
	if t.opts.TLS != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(t.opts.TLS)))
	}
	if t.opts.Library == "grpc-trimmed" {
		opts = append(opts, grpc.InitialWindowSize(grpcWindow), grpc.InitialConnWindowSize(grpcWindow))
	}
	s := grpc.NewServer(opts...)
	wirepb.RegisterNodeServer(s, grpcNode{t: t})
	t.grpc.mu.Lock()
	t.grpc.s = append(t.grpc.s, s)
	t.grpc.mu.Unlock()
	if t.ctx.Err() != nil {
		s.Stop()
		return nil
	}
	err := s.Serve(lis)
	if t.ctx.Err() != nil {
		return nil
	}
	return err
}

type grpcNode struct {
	wirepb.UnimplementedNodeServer
	t *Transport
}

func (g grpcNode) Stream(stream wirepb.Node_StreamServer) error {
	var state *tls.ConnectionState
	var remote net.Addr
	if p, ok := grpcpeer.FromContext(stream.Context()); ok {
		remote = p.Addr
		if info, ok := p.AuthInfo.(credentials.TLSInfo); ok {
			state = &info.State
		}
	}
	err := g.t.serve(&grpcLink{send: stream.SendMsg, rcv: stream.Recv}, newQueue(g.t.opts.QueueMax, drpcwire.ID{Stream: 1}), state, remote)
	if _, ok := err.(*RefusedError); ok {
		return status.Error(codes.PermissionDenied, err.Error())
	}
	return err
}

type grpcLink struct {
	send func(any) error
	rcv  func() (*wirepb.Envelope, error)
	stop func()
}

func (l *grpcLink) write(frames []byte) error {
	for len(frames) > 0 {
		rem, fr, _, err := drpcwire.ParseFrame(frames)
		if err != nil {
			return err
		}
		frames = rem
		e := wirepb.Encoded(fr.Data)
		if err := l.send(&e); err != nil {
			return err
		}
	}
	return nil
}

func (l *grpcLink) recv() (*wirepb.Envelope, error) { return l.rcv() }

func (l *grpcLink) close() {
	if l.stop != nil {
		l.stop()
	}
}

type grpcDialerT struct {
	conn   *grpc.ClientConn
	client wirepb.NodeClient
}

func (t *Transport) grpcDialer(p *peer) (dialer, error) {
	creds := insecure.NewCredentials()
	if t.opts.TLS != nil {
		cfg := t.opts.TLS.Clone()
		cfg.ServerName = p.site
		creds = credentials.NewTLS(cfg)
	}
	reconnect := grpc.ConnectParams{MinConnectTimeout: 5 * time.Second,
		Backoff: backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second}}
	opts := []grpc.DialOption{grpc.WithTransportCredentials(creds), grpc.WithConnectParams(reconnect),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(t.opts.MaxMessageBytes), grpc.MaxCallSendMsgSize(t.opts.MaxMessageBytes),
			grpc.ForceCodecV2(grpcCodec{}))}
	if t.opts.Library == "grpc-trimmed" {
		opts = append(opts, grpc.WithInitialWindowSize(grpcWindow), grpc.WithInitialConnWindowSize(grpcWindow))
	}
	conn, err := grpc.NewClient(p.addr, opts...)
	if err != nil {
		return nil, err
	}
	return &grpcDialerT{conn: conn, client: wirepb.NewNodeClient(conn)}, nil
}

func (d *grpcDialerT) open(ctx context.Context) (link, error) {
	ctx, cancel := context.WithCancel(ctx)
	stream, err := d.client.Stream(ctx, grpc.WaitForReady(false))
	if err != nil {
		cancel()
		return nil, err
	}
	return &grpcLink{send: stream.SendMsg, rcv: stream.Recv, stop: func() { _ = stream.CloseSend(); cancel() }}, nil
}

func (d *grpcDialerT) close() { _ = d.conn.Close() }

// ---- DRPC's own connection and manager ----

type stockDialer struct {
	t *Transport
	drpcDialer
}

func (d *stockDialer) close() {}

type stockLink struct {
	conn   *drpcconn.Conn
	stream *drpcstream.Stream
	env    wirepb.Envelope
	once   sync.Once
}

func (d *stockDialer) open(ctx context.Context) (link, error) {
	nc, err := d.dial(ctx)
	if err != nil {
		return nil, err
	}
	conn := drpcconn.NewWithOptions(nc, drpcconn.Options{Manager: d.t.stockOptions()})
	s, err := conn.NewStream(ctx, wirepb.StreamRPC, wirepb.Encoding)
	if err != nil {
		_ = conn.Close()
		return nil, err
	}
	return &stockLink{conn: conn, stream: s.(*drpcstream.Stream)}, nil
}

func (t *Transport) stockOptions() drpcmanager.Options {
	return drpcmanager.Options{Reader: drpcwire.ReaderOptions{MaximumBufferSize: t.opts.MaxMessageBytes},
		Stream: drpcstream.Options{ManualFlush: true}}
}

func (t *Transport) serveStock(nc net.Conn, state *tls.ConnectionState, remote net.Addr) {
	man := drpcmanager.NewWithOptions(nc, t.stockOptions())
	defer man.Close()
	s, _, err := man.NewServerStream(t.ctx)
	if err != nil {
		return
	}
	if err := t.serve(&stockLink{stream: s}, newQueue(t.opts.QueueMax, drpcwire.ID{Stream: 1}), state, remote); err != nil {
		_ = s.SendError(withCode(err))
	}
}

func (l *stockLink) write(frames []byte) error {
	for len(frames) > 0 {
		rem, fr, _, err := drpcwire.ParseFrame(frames)
		if err != nil {
			return err
		}
		frames = rem
		if err := l.stream.RawWrite(drpcwire.KindMessage, fr.Data); err != nil {
			return err
		}
	}
	return l.stream.RawFlush()
}

func (l *stockLink) recv() (*wirepb.Envelope, error) {
	if err := l.stream.MsgRecv(&l.env, wirepb.Encoding); err != nil {
		return nil, err
	}
	return &l.env, nil
}

func (l *stockLink) close() {
	l.once.Do(func() {
		if l.conn != nil {
			_ = l.conn.Close()
		} else {
			_ = l.stream.Close()
		}
	})
}
