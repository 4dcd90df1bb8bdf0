package host

import (
	"errors"
	"net"
	"sync"
	"syscall"
	"time"
)

// sendConn is a TCP connection whose writes never block the goroutine
// that makes them, so that a sender can write its frames itself (queue's
// push) rather than hand them to the stream's writer: a write puts what
// the kernel's socket buffer takes at once, and keeps the rest, in
// order, for a goroutine of its own that waits on the socket. Reads are
// the connection's. TLS sits above it, so what it keeps is encrypted
// records.
//
// What it keeps is bounded by backlogMax: beyond it a write waits, as a
// socket's would, which only the stream's writer does, since senders
// write only to an idle connection (idle). So a peer that stops reading
// holds the writer, whose queue then fills and drops, as before.
type sendConn struct {
	net.Conn
	raw syscall.RawConn

	mu       sync.Mutex
	write    func(fd uintptr) bool // writeFD, made once (a closure per write would allocate)
	out      []byte                // what writeFD writes, and its outcome
	wrote    int
	werr     error
	backlog  []byte // written, not yet taken by the socket
	spare    []byte
	flushing bool          // the flusher is running
	drained  chan struct{} // closed when backlog empties, if someone waits
	err      error         // the first write error, returned by later writes
}

// backlogMax bounds the bytes a sendConn keeps before a write waits.
const backlogMax = 4 << 20

// newSendConn wraps a TCP connection; another connection is returned as
// it is, its writes blocking.
func newSendConn(nc net.Conn) net.Conn {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return nc
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return nc
	}
	c := &sendConn{Conn: nc, raw: raw}
	c.write = c.writeFD
	return c
}

// idle reports whether the connection keeps nothing back: a write now
// goes straight to the socket and does not wait.
func (c *sendConn) idle() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.flushing && c.err == nil
}

// Write implements net.Conn: it returns once b is in the socket's buffer
// or kept, and waits only while backlogMax bytes are kept already.
func (c *sendConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.flushing && len(c.backlog) >= backlogMax && c.err == nil {
		c.waitDrainedLocked(time.Time{})
	}
	if c.err != nil {
		return 0, c.err
	}
	size := len(b)
	if !c.flushing {
		n, err := c.writeNow(b)
		if err != nil {
			c.err = err
			return n, err
		}
		b = b[n:]
		if len(b) == 0 {
			return size, nil
		}
		c.flushing = true
		go c.flush()
	}
	c.backlog = append(c.backlog, b...)
	return size, nil
}

// writeNow writes what the socket takes without waiting. c.mu is held.
func (c *sendConn) writeNow(b []byte) (int, error) {
	c.out, c.wrote, c.werr = b, 0, nil
	err := c.raw.Write(c.write)
	n, werr := c.wrote, c.werr
	c.out = nil
	if werr != nil {
		return n, &net.OpError{Op: "write", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: werr}
	}
	return n, err
}

// writeFD writes c.out to the socket until it would block.
func (c *sendConn) writeFD(fd uintptr) bool {
	for c.wrote < len(c.out) {
		m, err := syscall.Write(int(fd), c.out[c.wrote:])
		if m > 0 {
			c.wrote += m
		}
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			return true
		case err != nil:
			c.werr = err
			return true
		case m == 0:
			c.werr = errors.New("host: a write to the socket took nothing")
			return true
		}
	}
	return true
}

// flush writes what is kept, waiting on the socket, until nothing is.
func (c *sendConn) flush() {
	c.mu.Lock()
	for len(c.backlog) > 0 && c.err == nil {
		buf := c.backlog
		c.backlog = c.spare[:0]
		c.mu.Unlock()
		_, err := c.Conn.Write(buf)
		c.mu.Lock()
		c.spare = buf[:0]
		if cap(c.spare) > keepBytes {
			c.spare = nil
		}
		if err != nil && c.err == nil {
			c.err = err
		}
	}
	c.backlog = c.backlog[:0]
	c.flushing = false
	if c.drained != nil {
		close(c.drained)
		c.drained = nil
	}
	c.mu.Unlock()
}

// waitDrainedLocked waits until the flusher has emptied the backlog or
// failed, or until deadline, if not zero. c.mu is held, and released
// while it waits.
func (c *sendConn) waitDrainedLocked(deadline time.Time) {
	if c.drained == nil {
		c.drained = make(chan struct{})
	}
	ch := c.drained
	c.mu.Unlock()
	defer c.mu.Lock()
	if deadline.IsZero() {
		<-ch
		return
	}
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	}
}

// drain waits, until deadline at the latest, for what is kept to reach
// the socket: before a connection is closed on purpose, so that its last
// frame (an error that says why) is not lost.
func (c *sendConn) drain(deadline time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.flushing && c.err == nil && time.Now().Before(deadline) {
		c.waitDrainedLocked(deadline)
	}
}
