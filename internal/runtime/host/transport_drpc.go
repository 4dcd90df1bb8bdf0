package host

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"
	"storj.io/drpc/drpcerr"
	"storj.io/drpc/drpcwire"

	"github.com/cosla/cosla/internal/core/wire/wirepb"
)

// flushBytes is how much of a batch drpcLink gathers before it writes:
// a batch of small messages goes out in one write, and a large batch
// does not sit whole in memory twice.
const flushBytes = 64 << 10

// drpcLink is a DRPC stream on a connection of its own, read and written
// with DRPC's wire format (package drpcwire) by the transport's own
// goroutines: the goroutine that receives reads the socket and hands each
// message straight to deliver, and the one that writes frames a whole
// batch into one buffer and writes it at once. DRPC's connection manager
// would put a goroutine of its own between the socket and the receiver
// (and hand each packet over synchronously); its streams' frames are the
// same, so a process built on drpcconn talks to this one (the server's
// tests do).
type drpcLink struct {
	nc net.Conn

	rd  *drpcwire.Reader
	in  []byte          // the last packet's data, reused for the next
	env wirepb.Envelope // decoded into afresh by each recv

	wmu sync.Mutex // a batch's frames or the closing error, whole
	id  drpcwire.ID
	out []byte

	closeOnce sync.Once
}

func newDRPCLink(nc net.Conn, maxMessageBytes int) *drpcLink {
	return &drpcLink{nc: nc, rd: drpcwire.NewReaderWithOptions(nc, drpcwire.ReaderOptions{MaximumBufferSize: maxMessageBytes})}
}

// frame appends a packet to the write buffer as frames of at most DRPC's
// default split size (64 KiB), under wmu.
func (l *drpcLink) frame(kind drpcwire.Kind, data []byte) {
	l.id.Message++
	for {
		fr := drpcwire.Frame{ID: l.id, Kind: kind}
		fr.Data, data = drpcwire.SplitData(data, 0)
		fr.Done = len(data) == 0
		l.out = drpcwire.AppendFrame(l.out, fr)
		if fr.Done {
			return
		}
	}
}

// flush writes the buffer, under wmu, and lets go of a buffer a large
// message grew.
func (l *drpcLink) flush() error {
	_, err := l.nc.Write(l.out)
	l.out = l.out[:0]
	if cap(l.out) > 4*flushBytes {
		l.out = nil
	}
	return err
}

func (l *drpcLink) write(batch []wirepb.Encoded) error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	for _, e := range batch {
		l.frame(drpcwire.KindMessage, e)
		if len(l.out) >= flushBytes {
			if err := l.flush(); err != nil {
				return err
			}
		}
	}
	return l.flush()
}

func (l *drpcLink) recv() (*wirepb.Envelope, error) {
	for {
		pkt, err := l.rd.ReadPacketUsing(l.in)
		if err != nil {
			return nil, err
		}
		l.in = pkt.Data[:0]
		switch pkt.Kind {
		case drpcwire.KindMessage:
			// Unmarshal resets env and copies what it keeps out of
			// pkt.Data; what the last envelope carried stays with the
			// message it was unwrapped into.
			if err := proto.Unmarshal(pkt.Data, &l.env); err != nil {
				return nil, fmt.Errorf("host: a message that is not an envelope: %w", err)
			}
			return &l.env, nil
		case drpcwire.KindError:
			return nil, drpcwire.UnmarshalError(pkt.Data)
		case drpcwire.KindClose, drpcwire.KindCloseSend, drpcwire.KindCancel:
			return nil, io.EOF
		case drpcwire.KindInvoke, drpcwire.KindInvokeMetadata:
			return nil, errors.New("host: a second stream invoked on one connection")
		}
		// Unknown control packets are DRPC's room to grow; skip them.
		if !pkt.Control {
			return nil, fmt.Errorf("host: unknown DRPC packet kind %d", pkt.Kind)
		}
	}
}

// fail tells the peer why its stream ends, unless a write stuck on a
// peer that does not read holds the connection for longer than a second,
// and closes the connection.
func (l *drpcLink) fail(err error) {
	_ = l.nc.SetWriteDeadline(time.Now().Add(time.Second))
	l.wmu.Lock()
	l.frame(drpcwire.KindError, drpcwire.MarshalError(err))
	_ = l.flush()
	l.wmu.Unlock()
	l.close()
}

func (l *drpcLink) close() { l.closeOnce.Do(func() { _ = l.nc.Close() }) }

// drpcDialer dials a connection per stream.
type drpcDialer struct {
	t    *Transport
	addr string
	site string
}

// dial connects to the peer and runs the TLS handshake, expecting the
// certificate of its site, within DialTimeout.
func (d *drpcDialer) dial(ctx context.Context) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, d.t.opts.DialTimeout)
	defer cancel()
	var nd net.Dialer
	nc, err := nd.DialContext(ctx, "tcp", d.addr)
	if err != nil || d.t.opts.TLS == nil {
		return nc, err
	}
	cfg := d.t.opts.TLS.Clone()
	cfg.ServerName = d.site
	tc := tls.Client(nc, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		_ = nc.Close()
		return nil, err
	}
	return tc, nil
}

// open dials the peer and invokes the stream.
func (d *drpcDialer) open(ctx context.Context) (link, error) {
	nc, err := d.dial(ctx)
	if err != nil {
		return nil, err
	}
	l := newDRPCLink(nc, d.t.opts.MaxMessageBytes)
	l.id.Stream = 1
	l.frame(drpcwire.KindInvoke, []byte(wirepb.StreamRPC))
	if err := l.flush(); err != nil {
		l.close()
		return nil, err
	}
	return l, nil
}

func (d *drpcDialer) close() {}

// serveConn serves the one stream of a connection another process
// opened, and closes the connection.
func (t *Transport) serveConn(raw net.Conn) {
	defer raw.Close()
	stop := context.AfterFunc(t.ctx, func() { _ = raw.Close() })
	defer stop()
	remote := raw.RemoteAddr()
	nc, state, err := t.handshake(raw)
	if err != nil {
		t.opts.Logger.Debug("host: TLS handshake failed", "from", remote, "err", err)
		return
	}
	if t.opts.Library == "drpc-stock" {
		t.serveStock(nc, state, remote)
		return
	}
	l := newDRPCLink(nc, t.opts.MaxMessageBytes)
	defer l.close()
	if err := l.accept(); err != nil {
		t.opts.Logger.Debug("host: no stream opened", "from", remote, "err", err)
		return
	}
	if err := t.serve(l, state, remote); err != nil {
		l.fail(withCode(err))
	}
}

// withCode gives a refusal its DRPC error code.
func withCode(err error) error {
	var refused *RefusedError
	if errors.As(err, &refused) {
		return drpcerr.WithCode(err, wirepb.RefusedCode)
	}
	return err
}

// accept reads the packet that opens the stream and takes the stream's ID
// for the frames it writes.
func (l *drpcLink) accept() error {
	for {
		pkt, err := l.rd.ReadPacket()
		if err != nil {
			return err
		}
		switch pkt.Kind {
		case drpcwire.KindInvokeMetadata:
			continue
		case drpcwire.KindInvoke:
			l.id.Stream = pkt.ID.Stream
			if rpc := string(pkt.Data); rpc != wirepb.StreamRPC {
				err := fmt.Errorf("host: unknown rpc %q", rpc)
				l.fail(err)
				return err
			}
			return nil
		}
		return fmt.Errorf("host: a %v packet before the stream was invoked", pkt.Kind)
	}
}
