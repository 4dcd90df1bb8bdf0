package host

import (
	"io"
	"net"
	"testing"

	"storj.io/drpc/drpcwire"

	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/core/wire/wirepb"
)

// TestSendConnKeepsOrderWithoutBlocking: to a peer that does not read,
// writes made while the connection is idle return at once, as push needs,
// until the socket's buffers are full and the connection keeps the rest;
// a few more writes are kept behind it. When the peer reads at last it
// gets every byte, in the order written.
func TestSendConnKeepsOrderWithoutBlocking(t *testing.T) {
	nc, peer := loopbackPair(t)
	c, ok := newSendConn(nc).(*sendConn)
	if !ok {
		t.Fatal("a TCP connection was not wrapped")
	}

	const chunk = 64 << 10
	var next byte // the pattern: byte i of the stream is i mod 251
	fill := func() []byte {
		b := make([]byte, chunk)
		for i := range b {
			b[i] = next
			next = (next + 1) % 251
		}
		return b
	}
	written := 0
	for c.idle() {
		if written > 256<<20 {
			t.Fatal("256 MiB written to a peer that does not read, and the connection is still idle")
		}
		if _, err := c.Write(fill()); err != nil {
			t.Fatal(err)
		}
		written += chunk
	}
	for range 3 {
		if _, err := c.Write(fill()); err != nil {
			t.Fatal(err)
		}
		written += chunk
	}
	got := make([]byte, written)
	if _, err := io.ReadFull(peer, got); err != nil {
		t.Fatalf("after %d bytes written: %v", written, err)
	}
	for i, b := range got {
		if b != byte(i%251) {
			t.Fatalf("byte %d of %d is %d, want %d: the kept bytes went out of order", i, written, b, i%251)
		}
	}
}

// TestHeldQueueWritesOnRelease: what is pushed to a held queue neither
// wakes the writer nor is written until release, which writes it all at
// once on the releasing goroutine; the peer gets the frames in order.
func TestHeldQueueWritesOnRelease(t *testing.T) {
	nc, pc := loopbackPair(t)
	raw := newSendConn(nc)
	l := newDRPCLink(raw, raw, 1<<20)
	peer := newDRPCLink(pc, nil, 1<<20)

	q := newQueue(8, drpcwire.ID{Stream: 1}, nil)
	q.link = l // as the stream's writer does (take)
	q.hold()
	for i := range 3 {
		e, err := wirepb.Wrap("s/r1", "s/c1", &wire.ProbeReply{Req: uint64(i + 1)})
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := q.push(e, 1<<20, true); !ok || err != nil {
			t.Fatalf("push %d: %v %v", i, ok, err)
		}
	}
	if q.n != 3 || len(q.ready) != 0 {
		t.Fatalf("held: %d frames queued, writer woken %v; want 3 queued, not woken", q.n, len(q.ready) != 0)
	}
	q.release()
	if q.n != 0 {
		t.Fatalf("released: %d frames still queued, want them written", q.n)
	}
	for i := range 3 {
		e, err := peer.recv()
		if err != nil {
			t.Fatal(err)
		}
		_, _, m, err := wirepb.Unwrap(e)
		if err != nil {
			t.Fatal(err)
		}
		if r, ok := m.(*wire.ProbeReply); !ok || r.Req != uint64(i+1) {
			t.Fatalf("frame %d: %#v, want the probe reply %d", i, m, i+1)
		}
	}
}

// loopbackPair returns the two ends of a TCP connection on 127.0.0.1,
// closed when the test ends.
func loopbackPair(t *testing.T) (dialed, accepted net.Conn) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	ch := make(chan net.Conn, 1)
	go func() {
		nc, _ := lis.Accept()
		ch <- nc
	}()
	dialed, err = net.Dial("tcp", lis.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	accepted = <-ch
	if accepted == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { dialed.Close(); accepted.Close() })
	return dialed, accepted
}
