package wan

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

var seedFlag = flag.Uint64("wan.seed", 1, "seed of the random payloads")

// guard bounds every blocking step of a test so that a bug fails the test
// instead of hanging it. It is a safety net, never an assertion on timing.
const guard = 30 * time.Second

// payload returns n pseudo-random bytes and logs how to reproduce them
// (STYLE.md habit 2).
func payload(t *testing.T, n int) []byte {
	t.Helper()
	t.Logf("seed=%d; reproduce with: go test ./internal/runtime/wan -run '^%s$' -wan.seed=%d", *seedFlag, t.Name(), *seedFlag)
	r := rand.New(rand.NewPCG(*seedFlag, uint64(n)))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// echoServer is a target that writes back everything it reads, then
// half-closes, so a client can check both directions of a link.
type echoServer struct {
	ln       net.Listener
	wg       sync.WaitGroup
	ended    chan struct{} // one value per connection that ended
	mu       sync.Mutex
	conns    map[net.Conn]struct{}
	accepted int
	stopped  bool
}

func startEcho(t testing.TB) *echoServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := &echoServer{ln: ln, ended: make(chan struct{}, 1024), conns: make(map[net.Conn]struct{})}
	e.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			e.mu.Lock()
			e.accepted++
			e.conns[c] = struct{}{}
			e.mu.Unlock()
			e.wg.Go(func() {
				_, err := io.Copy(c, c)
				if err == nil {
					_ = c.(*net.TCPConn).CloseWrite()
				}
				_ = c.Close()
				e.mu.Lock()
				delete(e.conns, c)
				e.mu.Unlock()
				e.ended <- struct{}{}
			})
		}
	})
	t.Cleanup(e.stop)
	return e
}

func (e *echoServer) addr() string { return e.ln.Addr().String() }

func (e *echoServer) acceptedCount() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.accepted
}

func (e *echoServer) stop() {
	e.mu.Lock()
	if e.stopped {
		e.mu.Unlock()
		return
	}
	e.stopped = true
	_ = e.ln.Close()
	for c := range e.conns {
		_ = c.Close()
	}
	e.mu.Unlock()
	e.wg.Wait()
}

// roundTrip sends data through addr to an echo server, half-closes, and
// checks that exactly data comes back, in order.
func roundTrip(addr string, data []byte) error {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(guard))
	werr := make(chan error, 1)
	go func() {
		_, err := c.Write(data)
		if err == nil {
			err = c.(*net.TCPConn).CloseWrite()
		}
		werr <- err
	}()
	got, rerr := io.ReadAll(c)
	if err := errors.Join(<-werr, rerr); err != nil {
		return err
	}
	if !bytes.Equal(got, data) {
		return fmt.Errorf("echo differs: sent %d bytes, got %d, first difference at %d", len(data), len(got), firstDiff(got, data))
	}
	return nil
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// dial opens a guarded connection.
func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(guard))
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// echoOnce writes msg on c and reads it back.
func echoOnce(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	if _, err := c.Write([]byte(msg)); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	if string(got) != msg {
		t.Fatalf("echo: got %q, want %q", got, msg)
	}
}

// waitFor polls cond a bounded number of times, waiting on a timer channel
// between polls, and fails the test if cond never holds. It bounds the
// number of polls, not the time anything takes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	const polls = 2000
	for range polls {
		if cond() {
			return
		}
		<-time.After(5 * time.Millisecond)
	}
	t.Fatalf("%s: still false after %d polls", what, polls)
}

// chanOrFail receives from ch or fails after guard.
func chanOrFail[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(guard):
		t.Fatalf("%s: nothing after %v", what, guard)
		panic("unreachable")
	}
}

// leakedGoroutines returns the stacks of goroutines running this package's
// non-test code (a hand-written goleak).
func leakedGoroutines() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var leaked []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		for _, fn := range []string{"wan.(*Link)", "wan.(*Net)", "wan.(*proxyConn)", "wan.wallClock"} {
			if strings.Contains(g, "internal/"+fn) {
				leaked = append(leaked, g)
				break
			}
		}
	}
	return leaked
}

// fakeClock is a manual clock: time moves only in Advance, and WaitUntil
// reports every wait it starts on registered, so a test can see that bytes
// are held back and for how long without measuring wall time.
type fakeClock struct {
	mu         sync.Mutex
	now        time.Time
	waiters    map[*fakeWaiter]struct{}
	registered chan time.Time
}

type fakeWaiter struct {
	until time.Time
	ch    chan struct{}
}

func newFakeClock() *fakeClock {
	return &fakeClock{
		now:        time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		waiters:    make(map[*fakeWaiter]struct{}),
		registered: make(chan time.Time, 1024),
	}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) WaitUntil(t time.Time, done <-chan struct{}) bool {
	c.mu.Lock()
	if !t.After(c.now) {
		c.mu.Unlock()
		return true
	}
	w := &fakeWaiter{until: t, ch: make(chan struct{})}
	c.waiters[w] = struct{}{}
	c.mu.Unlock()
	select {
	case c.registered <- t:
	case <-done:
	}
	select {
	case <-w.ch:
		return true
	case <-done:
		c.mu.Lock()
		delete(c.waiters, w)
		c.mu.Unlock()
		return false
	}
}

// Advance moves time forward and wakes every wait that is now due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	for w := range c.waiters {
		if !w.until.After(c.now) {
			close(w.ch)
			delete(c.waiters, w)
		}
	}
}

func (c *fakeClock) pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.waiters)
}

// nextWait returns the delay, from the current fake time, of the next wait
// a writer starts.
func (c *fakeClock) nextWait(t *testing.T) time.Duration {
	t.Helper()
	until := chanOrFail(t, "writer wait", c.registered)
	return until.Sub(c.Now())
}
