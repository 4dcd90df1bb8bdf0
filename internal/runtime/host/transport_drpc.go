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

// drpcLink is one DRPC stream (storj.io/drpc) on a TCP connection of
// its own, read and written in DRPC's wire format (package drpcwire) by
// the transport's goroutines rather than by DRPC's connection manager:
// the goroutine that receives reads the socket and hands each message
// straight to deliver, and the one that writes writes the frames that
// senders encoded into the stream's queue, a batch per system call. The
// manager would put a goroutine of its own between the socket and the
// receiver, handing each packet over and waiting until it is taken (see
// BenchmarkTransportRoundTrip for what that cost). The frames are DRPC's,
// so a client built on drpcconn talks to this transport (the server's
// tests use one).
type drpcLink struct {
	nc net.Conn
	sc *sendConn // the TCP connection under nc (TLS's), if it is one

	rd *drpcwire.Reader
	in []byte // the last packet's data, reused for the next
	// held, if set, is held (queue.hold) while the packets read at once
	// are delivered, and released before the socket is read again.
	held *queue
	env  wirepb.Envelope // decoded into afresh by each recv

	wmu sync.Mutex // a batch's frames or the closing error, whole

	closeOnce sync.Once
}

// newDRPCLink returns the link of nc, which runs over raw: nc itself,
// or the TLS connection over it.
func newDRPCLink(nc, raw net.Conn, maxMessageBytes int) *drpcLink {
	sc, _ := raw.(*sendConn)
	l := &drpcLink{nc: nc, sc: sc}
	l.rd = drpcwire.NewReaderWithOptions(linkReader{l}, drpcwire.ReaderOptions{MaximumBufferSize: maxMessageBytes})
	return l
}

// holdWhileReading makes q, the stream's own write queue, held while the
// packets of one read of the socket are delivered, and released (written)
// before the next read, which may wait. The replies to the requests that
// came together then go out together, as one write, and a node that ran
// a request on the reading goroutine (Node.DeliverHere) does not wait for
// the write of its reply. Called before the first recv.
func (l *drpcLink) holdWhileReading(q *queue) {
	l.held = q
	q.hold()
}

// linkReader is what the DRPC reader reads: the connection, with the
// held queue released around each read of it.
type linkReader struct{ l *drpcLink }

func (r linkReader) Read(p []byte) (int, error) {
	q := r.l.held
	if q == nil {
		return r.l.nc.Read(p)
	}
	q.release()
	n, err := r.l.nc.Read(p)
	q.hold()
	return n, err
}

// idle reports whether a write now would not wait (see sendConn).
func (l *drpcLink) idle() bool { return l.sc != nil && l.sc.idle() }

// write writes frames, whole, to the connection: one goroutine's batch
// at a time.
func (l *drpcLink) write(frames []byte) error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	_, err := l.nc.Write(frames)
	return err
}

// recv returns the next envelope received, valid until the next recv, or
// io.EOF once the peer closed the stream, or the error the peer ended it
// with (a DRPC error packet).
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

// fail writes frame, an error frame that tells the peer why its stream
// ends, unless a write stuck on a peer that does not read holds the
// connection for longer than a second, and closes the connection.
func (l *drpcLink) fail(frame []byte) {
	deadline := time.Now().Add(time.Second)
	_ = l.nc.SetWriteDeadline(deadline)
	_ = l.write(frame)
	if l.sc != nil {
		l.sc.drain(deadline)
	}
	l.close()
}

// close closes the connection, ending a read or write in progress.
func (l *drpcLink) close() { l.closeOnce.Do(func() { _ = l.nc.Close() }) }

// dial connects to p, runs the TLS handshake expecting the certificate
// of p's site, within DialTimeout, and invokes the stream.
func (t *Transport) dial(ctx context.Context, p *peer) (*drpcLink, error) {
	dialCtx, cancel := context.WithTimeout(ctx, t.opts.DialTimeout)
	defer cancel()
	var nd net.Dialer
	raw, err := nd.DialContext(dialCtx, "tcp", p.addr)
	if err != nil {
		return nil, err
	}
	raw = newSendConn(raw)
	nc := raw
	if t.opts.TLS != nil {
		cfg := t.opts.TLS.Clone()
		cfg.ServerName = p.site
		tc := tls.Client(nc, cfg)
		if err := tc.HandshakeContext(dialCtx); err != nil {
			_ = nc.Close()
			return nil, err
		}
		nc = tc
	}
	l := newDRPCLink(nc, raw, t.opts.MaxMessageBytes)
	// The invoke is the stream's first packet; the queue numbers its
	// frames after it.
	invoke := drpcwire.Frame{ID: invokeID, Kind: drpcwire.KindInvoke, Done: true, Data: []byte(wirepb.StreamRPC)}
	if err := l.write(drpcwire.AppendFrame(nil, invoke)); err != nil {
		l.close()
		return nil, err
	}
	return l, nil
}

// serveConn serves the one stream of a connection another process
// opened, and closes the connection.
func (t *Transport) serveConn(raw net.Conn) {
	defer raw.Close()
	stop := context.AfterFunc(t.ctx, func() { _ = raw.Close() })
	defer stop()
	remote := raw.RemoteAddr()
	sc := newSendConn(raw)
	nc, state, err := t.handshake(sc)
	if err != nil {
		t.opts.Logger.Debug("host: TLS handshake failed", "from", remote, "err", err)
		return
	}
	l := newDRPCLink(nc, sc, t.opts.MaxMessageBytes)
	defer l.close()
	stream, err := l.accept()
	if err != nil {
		t.opts.Logger.Debug("host: no stream opened", "from", remote, "err", err)
		return
	}
	q := newQueue(t.opts.QueueMax, drpcwire.ID{Stream: stream}, &t.dropped)
	if err := t.serve(l, q, state, remote); err != nil {
		l.fail(q.errorFrame(withCode(err)))
	}
}

// withCode gives a refusal its DRPC error code.
func withCode(err error) error {
	var refused *refusal
	if errors.As(err, &refused) {
		return drpcerr.WithCode(err, wirepb.RefusedCode)
	}
	return err
}

// accept reads the packet that opens the stream and returns the
// stream's number.
func (l *drpcLink) accept() (uint64, error) {
	for {
		pkt, err := l.rd.ReadPacket()
		if err != nil {
			return 0, err
		}
		switch pkt.Kind {
		case drpcwire.KindInvokeMetadata:
			continue
		case drpcwire.KindInvoke:
			if rpc := string(pkt.Data); rpc != wirepb.StreamRPC {
				err := fmt.Errorf("host: unknown rpc %q", rpc)
				q := newQueue(0, drpcwire.ID{Stream: pkt.ID.Stream}, nil)
				l.fail(q.errorFrame(err))
				return 0, err
			}
			return pkt.ID.Stream, nil
		}
		return 0, fmt.Errorf("host: a %v packet before the stream was invoked", pkt.Kind)
	}
}
