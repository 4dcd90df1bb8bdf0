package host

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"google.golang.org/protobuf/proto"
	"storj.io/drpc/drpcwire"

	"github.com/cosla/cosla/internal/core/wire/wirepb"
)

// keepBytes is the largest buffer a queue keeps for reuse once written:
// one that a large message (a pull reply, up to MaxMessageBytes) grew
// is let go rather than held for the stream's life.
const keepBytes = 256 << 10

// errTooLarge is the error of an envelope over MaxMessageBytes.
var errTooLarge = errors.New("host: message over the size limit")

// queue is the write buffer of one stream, shared by the goroutines that
// send on it and the one that writes it: a sender encodes its envelope
// into the buffer where it runs, framed as a DRPC message packet, and the
// writer takes every frame gathered since its last write and writes them
// with one system call. Nothing is copied on the way and nothing is
// allocated once the buffers have grown to the stream's usual batch. It
// holds at most max envelopes; beyond them messages are dropped, as a
// congested network would.
//
// When the stream is idle, the frames are written without waking the
// writer: by a sender that sends now (Transport.SendNow), or by the
// stream's reader when it releases the queue it held while delivering
// what it read (hold). One of them writes at a time (writing), in the
// order the frames were queued.
type queue struct {
	mu     sync.Mutex
	buf    []byte // framed envelopes, in order
	spare  []byte // the buffer the writer took last; its again after its next take
	n      int    // envelopes in buf
	max    int
	id     drpcwire.ID // of the last frame framed
	closed bool
	ready  chan struct{} // holds a token while buf is not empty or closed

	// link is the stream being written (nil between streams), and
	// writing is set while frames taken from buf are being written to
	// it, by the stream's writer or by a sender (push).
	link    *drpcLink
	writing bool
	// held is set while the goroutine that reads the stream delivers
	// what it read (hold): what is pushed meanwhile waits for it to
	// write, rather than wake the writer.
	held bool
	// lost counts the envelopes of a write that failed in push.
	lost *atomic.Int64
}

// newQueue returns a queue whose frames follow the frame numbered last
// on their DRPC stream (DRPC numbers a stream's packets in order, from 1).
func newQueue(max int, last drpcwire.ID, lost *atomic.Int64) *queue {
	return &queue{max: max, id: last, ready: make(chan struct{}, 1), lost: lost}
}

func (q *queue) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// push encodes e into the buffer and reports true, or reports false if
// the queue is closed or full. It fails, leaving the queue as it was,
// for an envelope over maxBytes encoded (errTooLarge) or one that cannot
// be encoded (an identifier that is not valid UTF-8). With now, it
// writes the buffer itself if the stream is idle (Transport.SendNow).
func (q *queue) push(e *wirepb.Envelope, maxBytes int, now bool) (bool, error) {
	size := proto.Size(e)
	if size > maxBytes {
		return false, fmt.Errorf("%w: %d bytes, limit %d", errTooLarge, size, maxBytes)
	}
	q.mu.Lock()
	if q.closed || q.n >= q.max {
		q.mu.Unlock()
		return false, nil
	}
	start := len(q.buf)
	q.id.Message++
	// drpcwire.AppendFrame's layout, written before the data so that the
	// envelope is encoded into place: the kind and done bit, the stream,
	// the message, the length. One frame carries the whole envelope
	// (DRPC's readers take a frame of any size up to their limit).
	b := append(q.buf, byte(drpcwire.KindMessage<<1)|1)
	b = drpcwire.AppendVarint(b, q.id.Stream)
	b = drpcwire.AppendVarint(b, q.id.Message)
	b = drpcwire.AppendVarint(b, uint64(size))
	b, err := proto.MarshalOptions{UseCachedSize: true}.MarshalAppend(b, e)
	if err != nil {
		q.buf = b[:start]
		q.mu.Unlock()
		return false, err
	}
	q.buf = b
	q.n++
	switch {
	case q.held:
	case now:
		q.writeHereLocked()
	default:
		q.signal()
	}
	q.mu.Unlock()
	return true, nil
}

// writeHereLocked writes the frames queued on the calling goroutine if
// the stream is idle, rather than wake its writer: a goroutine switch
// saved on the way out. The link takes them without blocking (sendConn),
// so a peer that does not read never holds the caller. Otherwise it
// wakes the writer. q.mu is held, and released while it writes.
func (q *queue) writeHereLocked() {
	l := q.link
	if q.n == 0 {
		return
	}
	if l == nil || q.writing || !l.idle() {
		q.signal()
		return
	}
	frames, n := q.takeLocked()
	q.writing = true
	q.mu.Unlock()
	if err := l.write(frames); err != nil {
		q.lost.Add(int64(n))
		l.close()
	}
	q.mu.Lock()
	q.writing = false
	if q.n > 0 {
		q.signal()
	}
}

// hold makes what is pushed wait for release rather than wake the
// writer; release writes it here if the stream is idle (writeHereLocked).
// The goroutine that reads a stream holds the stream's queue while it
// delivers what one read of the socket brought (drpcLink.holdWhileReading):
// a node that runs a request there (Node.DeliverHere) queues its reply on
// this very stream, and the reader writes the replies to everything it
// read at once, with one system call, before it reads again.
func (q *queue) hold() {
	q.mu.Lock()
	q.held = true
	q.mu.Unlock()
}

func (q *queue) release() {
	q.mu.Lock()
	q.held = false
	q.writeHereLocked()
	q.mu.Unlock()
}

// errorFrame returns a frame of its own, not queued, that ends the
// stream with err (DRPC's error packet), numbered after every frame
// queued.
func (q *queue) errorFrame(err error) []byte {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.id.Message++
	return drpcwire.AppendFrame(nil, drpcwire.Frame{ID: q.id, Kind: drpcwire.KindError, Done: true, Data: drpcwire.MarshalError(err)})
}

// wait blocks until the queue has envelopes (true) or is closed (false).
func (q *queue) wait() bool {
	for {
		q.mu.Lock()
		n, closed := q.n, q.closed
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

// take returns the frames of every envelope queued, and how many there
// are, waiting for at least one. The frames are the caller's until its
// next take.
//
// The writer calls it with the link it writes, and calls done after
// each write: between the two, push writes nothing itself.
func (q *queue) take(ctx context.Context, l *drpcLink) ([]byte, int, bool) {
	for {
		q.mu.Lock()
		if q.closed {
			q.mu.Unlock()
			return nil, 0, false
		}
		q.link = l
		if q.n > 0 && !q.writing {
			frames, n := q.takeLocked()
			q.writing = true
			q.mu.Unlock()
			return frames, n, true
		}
		q.mu.Unlock()
		select {
		case <-q.ready:
		case <-ctx.Done():
			return nil, 0, false
		}
	}
}

// takeLocked takes the frames queued and their number; the buffer they
// are in is the taker's until the next take. q.mu is held.
func (q *queue) takeLocked() ([]byte, int) {
	frames, n := q.buf, q.n
	if cap(q.spare) > keepBytes {
		q.spare = nil
	}
	q.buf, q.spare, q.n = q.spare[:0], frames, 0
	return frames, n
}

// done ends the writer's write of what it took, and detach the writer's
// use of its link, when the stream ends.
func (q *queue) done() {
	q.mu.Lock()
	q.writing = false
	q.mu.Unlock()
}

func (q *queue) detach() {
	q.mu.Lock()
	q.link = nil
	q.mu.Unlock()
}

// clear drops every queued envelope and returns how many there were.
func (q *queue) clear() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := q.n
	q.buf, q.n = q.buf[:0], 0
	return n
}

func (q *queue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.signal()
}
