package wan

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"testing"
	"time"
)

// testLogger sends the link's logs to the test's log (STYLE.md habit 9:
// loggers are injected, never global).
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

func newTestLink(t *testing.T, target string, opts Options) *Link {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	l, err := NewLink(target, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return l
}

// TestDataIntegrity sends several MB each way with jitter on, so chunks
// draw different delays, and checks they come back intact and in order.
func TestDataIntegrity(t *testing.T) {
	echo := startEcho(t)
	l := newTestLink(t, echo.addr(), Options{Latency: time.Millisecond, Jitter: time.Millisecond, Seed: 3})
	data := payload(t, 4<<20)
	if err := roundTrip(l.Addr(), data); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	st := l.Stats()
	if st.BytesToTarget != int64(len(data)) || st.BytesFromTarget != int64(len(data)) {
		t.Fatalf("Stats bytes to/from target = %d/%d, want %d each", st.BytesToTarget, st.BytesFromTarget, len(data))
	}
	if st.ConnsAccepted != 1 || st.ConnsForwarded != 1 || st.ConnsOpen != 0 {
		t.Fatalf("Stats = %+v, want one connection forwarded and none open", st)
	}
}

// TestSmallChunksQueueBackpressure runs a stream through a link whose queue
// holds only a few tiny chunks, so the reader blocks on a full queue again
// and again; no byte may be lost or reordered.
func TestSmallChunksQueueBackpressure(t *testing.T) {
	echo := startEcho(t)
	l := newTestLink(t, echo.addr(), Options{ChunkBytesMax: 7, QueueChunksMax: 2, Jitter: 20 * time.Microsecond})
	if err := roundTrip(l.Addr(), payload(t, 16<<10)); err != nil {
		t.Fatal(err)
	}
}

func TestManyConnections(t *testing.T) {
	echo := startEcho(t)
	l := newTestLink(t, echo.addr(), Options{Latency: 500 * time.Microsecond, Jitter: 500 * time.Microsecond})
	const conns, size = 64, 128 << 10
	data := payload(t, size)
	errs := make(chan error, conns)
	var wg sync.WaitGroup
	for range conns {
		wg.Go(func() { errs <- roundTrip(l.Addr(), data) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	st := l.Stats()
	if st.ConnsForwarded != conns || st.BytesToTarget != conns*size || st.BytesFromTarget != conns*size {
		t.Fatalf("Stats = %+v, want %d connections and %d bytes each way", st, conns, conns*size)
	}
}

// TestDelayHeldUntilRelease uses a manual clock to show that bytes wait for
// exactly the one-way latency in each direction, and that a round trip
// costs two one-way delays, without measuring wall time.
func TestDelayHeldUntilRelease(t *testing.T) {
	echo := startEcho(t)
	clk := newFakeClock()
	const oneWay = 50 * time.Millisecond
	l := newTestLink(t, echo.addr(), Options{Latency: oneWay, clock: clk})
	c := dial(t, l.Addr())
	start := clk.Now()

	if _, err := c.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	if d := clk.nextWait(t); d != oneWay {
		t.Fatalf("client->target chunk held for %v, want %v", d, oneWay)
	}
	clk.Advance(oneWay - time.Nanosecond)
	// The writer is still parked in the clock, so nothing reached the target.
	if p, b := clk.pending(), l.Stats().BytesToTarget; p != 1 || b != 0 {
		t.Fatalf("just before release: %d waits pending and %d bytes delivered, want 1 and 0", p, b)
	}
	clk.Advance(time.Nanosecond)
	if d := clk.nextWait(t); d != oneWay {
		t.Fatalf("target->client chunk held for %v, want %v", d, oneWay)
	}
	clk.Advance(oneWay)
	got := make([]byte, 4)
	if _, err := io.ReadFull(c, got); err != nil || string(got) != "ping" {
		t.Fatalf("read %q, %v; want ping", got, err)
	}
	if rtt := clk.Now().Sub(start); rtt != 2*oneWay {
		t.Fatalf("round trip took %v of fake time, want %v", rtt, 2*oneWay)
	}
	// A writer counts bytes after its Write returns, which may be after the
	// peer has read them.
	waitFor(t, "4 bytes counted each way", func() bool {
		st := l.Stats()
		return st.BytesToTarget == 4 && st.BytesFromTarget == 4
	})
}

// TestLatencyChangeOnLiveConnection changes the latency of a link while a
// connection is open and checks that the next chunks use the new setting.
func TestLatencyChangeOnLiveConnection(t *testing.T) {
	echo := startEcho(t)
	clk := newFakeClock()
	l := newTestLink(t, echo.addr(), Options{clock: clk})
	c := dial(t, l.Addr())
	echoOnce(t, c, "fast") // zero latency: no wait at all on the fake clock

	const latency, jitter = 30 * time.Millisecond, 0
	if err := l.SetLatency(latency, jitter); err != nil {
		t.Fatal(err)
	}
	if s := l.Stats().Settings; s.Latency != latency || s.Jitter != jitter || s.Down {
		t.Fatalf("Stats().Settings = %v after SetLatency(%v, %v)", s, latency, jitter)
	}
	if _, err := c.Write([]byte("slow")); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"client->target", "target->client"} {
		if d := clk.nextWait(t); d != latency {
			t.Fatalf("%s after SetLatency: held for %v, want %v", dir, d, latency)
		}
		clk.Advance(latency)
	}
	got := make([]byte, 4)
	if _, err := io.ReadFull(c, got); err != nil || string(got) != "slow" {
		t.Fatalf("read %q, %v; want slow", got, err)
	}
	if err := l.SetLatency(-time.Second, 0); !errors.Is(err, ErrInvalid) {
		t.Fatalf("SetLatency(-1s) = %v, want ErrInvalid", err)
	}
	if s := l.Settings(); s.Latency != latency {
		t.Fatalf("a rejected SetLatency changed the latency to %v", s.Latency)
	}
}

// TestJitterDraws checks on a manual clock that every chunk is held for at
// least latency-jitter, and that jitter really varies the delay.
func TestJitterDraws(t *testing.T) {
	echo := startEcho(t)
	clk := newFakeClock()
	const latency, jitter = 10 * time.Millisecond, 4 * time.Millisecond
	l := newTestLink(t, echo.addr(), Options{Latency: latency, Jitter: jitter, Seed: 9, clock: clk})
	c := dial(t, l.Addr())
	distinct := map[time.Duration]bool{}
	for i := range 20 {
		if _, err := c.Write([]byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
		// Each chunk is read after the previous one was released, so its
		// wait is its own draw, not the in-order floor.
		for range 2 {
			d := clk.nextWait(t)
			if d < latency-jitter {
				t.Fatalf("chunk %d held for %v, below latency-jitter %v", i, d, latency-jitter)
			}
			distinct[d] = true
			clk.Advance(d)
		}
		got := make([]byte, 1)
		if _, err := io.ReadFull(c, got); err != nil || got[0] != byte(i) {
			t.Fatalf("read %v, %v; want [%d]", got, err, i)
		}
	}
	if len(distinct) < 10 {
		t.Fatalf("only %d distinct delays in 40 draws with jitter %v", len(distinct), jitter)
	}
}

// TestPartition cuts a live connection, refuses new ones while down and
// forwards again after healing.
func TestPartition(t *testing.T) {
	echo := startEcho(t)
	l := newTestLink(t, echo.addr(), Options{})
	before := dial(t, l.Addr())
	echoOnce(t, before, "hello")

	l.SetDown(true)
	// Client side: the connection is reset.
	if n, err := before.Read(make([]byte, 1)); err == nil {
		t.Fatalf("read on a cut connection returned %d bytes and no error", n)
	}
	// Target side: the echo server's connection ended too.
	chanOrFail(t, "target-side connection end", echo.ended)
	if st := l.Stats(); !st.Settings.Down || st.ConnsCut != 1 {
		t.Fatalf("Stats after SetDown(true) = %+v, want down with one connection cut", st)
	}

	expectReset(t, l.Addr())
	if st := l.Stats(); st.ConnsRefused != 1 {
		t.Fatalf("Stats while down = %+v, want one connection refused", st)
	}
	if n := echo.acceptedCount(); n != 1 {
		t.Fatalf("target accepted %d connections, want 1: a refused connection must not reach it", n)
	}

	l.SetDown(false)
	after := dial(t, l.Addr())
	echoOnce(t, after, "again")
	if st := l.Stats(); st.Settings.Down || st.ConnsForwarded != 2 || st.ConnsOpen != 1 {
		t.Fatalf("Stats after SetDown(false) = %+v, want up with 2 forwarded and 1 open", st)
	}
}

// TestPartitionDropsQueuedBytes cuts a link while bytes wait in its queue:
// Close-like abort must not wait for their release.
func TestPartitionDropsQueuedBytes(t *testing.T) {
	echo := startEcho(t)
	clk := newFakeClock()
	l := newTestLink(t, echo.addr(), Options{Latency: time.Hour, clock: clk})
	c := dial(t, l.Addr())
	if _, err := c.Write([]byte("stuck")); err != nil {
		t.Fatal(err)
	}
	clk.nextWait(t) // the chunk is parked for an hour of fake time
	l.SetDown(true)
	if n, err := c.Read(make([]byte, 8)); err == nil {
		t.Fatalf("read on a cut connection returned %d bytes and no error", n)
	}
	waitFor(t, "no parked writer", func() bool { return clk.pending() == 0 })
	if b := l.Stats().BytesToTarget; b != 0 {
		t.Fatalf("%d queued bytes were delivered across a partition", b)
	}
}

func TestDialFailure(t *testing.T) {
	// Take a free port and release it, so nothing listens there.
	echo := startEcho(t)
	target := echo.addr()
	echo.stop()
	l := newTestLink(t, target, Options{})
	expectReset(t, l.Addr())
	if st := l.Stats(); st.ConnsFailed != 1 || st.ConnsForwarded != 0 {
		t.Fatalf("Stats = %+v, want one failed dial", st)
	}
}

func TestLinkCloseIsIdempotent(t *testing.T) {
	echo := startEcho(t)
	l := newTestLink(t, echo.addr(), Options{})
	c := dial(t, l.Addr())
	echoOnce(t, c, "x")
	for range 2 {
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatalf("read after Close returned %d bytes and no error", n)
	}
	if st := l.Stats(); st.ConnsOpen != 0 {
		t.Fatalf("%d connections open after Close", st.ConnsOpen)
	}
}

// expectReset connects to addr and expects the link to reset the
// connection. The reset may even beat connect(2) back to the client, so a
// failed dial counts too.
func expectReset(t *testing.T, addr string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(guard))
	if n, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read returned %d bytes and %v, want a reset", n, err)
	}
}
