package wan

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cosla/cosla/internal/core/invariants"
)

// proxyConn is one proxied connection: the client's socket accepted by the
// link and the socket dialed to the target.
type proxyConn struct {
	client, server net.Conn
	// done is closed when the connection is aborted; it stops the pipes.
	done      chan struct{}
	closeOnce sync.Once
}

func newProxyConn(client, server net.Conn) *proxyConn {
	return &proxyConn{client: client, server: server, done: make(chan struct{})}
}

// abort resets both sockets and stops the pipes, dropping queued bytes. It
// is how partitions, Close and I/O errors end a connection.
func (pc *proxyConn) abort() {
	pc.closeOnce.Do(func() {
		close(pc.done)
		resetClose(pc.client)
		resetClose(pc.server)
	})
}

// close closes both sockets normally once both pipes have ended.
func (pc *proxyConn) close() {
	pc.closeOnce.Do(func() {
		close(pc.done)
		_ = pc.client.Close()
		_ = pc.server.Close()
	})
}

// chunk is one read from the source held back until release.
type chunk struct {
	buf     *[]byte // from Link.bufs; nil for the end of stream
	n       int
	release time.Time
}

// pipe starts the reader and writer of one direction of pc, from src to
// dst, counting delivered bytes in delivered.
func (l *Link) pipe(wg *sync.WaitGroup, pc *proxyConn, src, dst net.Conn, delivered *atomic.Int64) {
	queue := make(chan chunk, l.opts.QueueChunksMax)
	wg.Go(func() { l.read(pc, src, queue) })
	wg.Go(func() { l.write(pc, dst, queue, delivered) })
}

// read stamps each chunk read from src with its release time and queues it.
// It never waits for delivery, so throughput does not depend on latency.
// The queue is never closed: the writer stops at the end-of-stream chunk or
// when pc is aborted.
func (l *Link) read(pc *proxyConn, src net.Conn, queue chan<- chunk) {
	clk := l.opts.clock
	var s schedule
	for {
		buf := l.bufs.Get().(*[]byte)
		n, err := src.Read(*buf)
		if n > 0 {
			c := chunk{buf: buf, n: n, release: s.next(clk.Now(), l.delay())}
			select {
			case queue <- c:
			case <-pc.done:
				return
			}
		} else {
			l.bufs.Put(buf)
		}
		switch {
		case err == nil:
		case errors.Is(err, io.EOF):
			// The FIN travels the same path as the data before it.
			select {
			case queue <- chunk{release: s.next(clk.Now(), l.delay())}:
			case <-pc.done:
			}
			return
		default:
			// A reset from the peer, or our own abort closing src.
			pc.abort()
			return
		}
	}
}

// write delivers queued chunks to dst when they are due, in queue order.
func (l *Link) write(pc *proxyConn, dst net.Conn, queue <-chan chunk, delivered *atomic.Int64) {
	clk := l.opts.clock
	var last time.Time
	for {
		var c chunk
		select {
		case c = <-queue:
		case <-pc.done:
			return
		}
		invariants.Check(!c.release.Before(last), "wan: release %v before previous %v", c.release, last)
		last = c.release
		if !clk.WaitUntil(c.release, pc.done) {
			return
		}
		if c.buf == nil {
			// Half-close, so the other direction can keep flowing, as it
			// would on the direct path.
			if hc, ok := dst.(interface{ CloseWrite() error }); ok {
				if err := hc.CloseWrite(); err != nil {
					pc.abort()
				}
			}
			return
		}
		n, err := dst.Write((*c.buf)[:c.n])
		l.bufs.Put(c.buf)
		delivered.Add(int64(n))
		if err != nil {
			pc.abort()
			return
		}
	}
}
