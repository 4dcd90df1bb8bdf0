package host

import (
	"io"
	"net"
	"testing"
)

// TestSendConnKeepsOrderWithoutBlocking: to a peer that does not read,
// writes made while the connection is idle return at once, as push needs,
// until the socket's buffers are full and the connection keeps the rest;
// a few more writes are kept behind it. When the peer reads at last it
// gets every byte, in the order written.
func TestSendConnKeepsOrderWithoutBlocking(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		if nc, err := lis.Accept(); err == nil {
			accepted <- nc
		}
	}()
	nc, err := net.Dial("tcp", lis.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c, ok := newSendConn(nc).(*sendConn)
	if !ok {
		t.Fatal("a TCP connection was not wrapped")
	}
	defer c.Close()
	peer := <-accepted
	defer peer.Close()

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
