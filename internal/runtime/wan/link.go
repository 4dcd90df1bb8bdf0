package wan

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Stats is a snapshot of one link's counters and settings.
type Stats struct {
	// Key identifies the link in its Net; zero for a link from NewLink.
	Key Key
	// Addr is the address the link listens on.
	Addr string
	// Target is the address the link forwards to.
	Target string
	// Settings are the link's current settings.
	Settings Settings

	// ConnsAccepted counts connections accepted by the listener.
	ConnsAccepted int64
	// ConnsForwarded counts connections joined to the target and proxied.
	ConnsForwarded int64
	// ConnsRefused counts connections reset because the link was down.
	ConnsRefused int64
	// ConnsFailed counts connections reset because dialing the target
	// failed.
	ConnsFailed int64
	// ConnsCut counts proxied connections reset by a partition.
	ConnsCut int64
	// ConnsOpen is the number of proxied connections open now.
	ConnsOpen int

	// BytesToTarget counts bytes written to the target.
	BytesToTarget int64
	// BytesFromTarget counts bytes written back to the connecting client.
	BytesFromTarget int64
}

// Link is a one-directional TCP proxy that delays, and can partition, the
// path from its listener to one target. It is safe for concurrent use.
type Link struct {
	key    Key
	target string
	opts   Options // validated, with defaults
	log    *slog.Logger
	ln     net.Listener

	// ctx is canceled by Close; it aborts dials in flight.
	ctx    context.Context
	cancel context.CancelFunc
	// done is closed by Close; it wakes the accept loop's backoff.
	done chan struct{}
	wg   sync.WaitGroup
	bufs sync.Pool // *[]byte of ChunkBytesMax

	bytesToTarget   atomic.Int64
	bytesFromTarget atomic.Int64

	mu       sync.Mutex
	settings Settings
	rng      *rand.Rand
	conns    map[*proxyConn]struct{}
	closed   bool
	counts   struct{ accepted, forwarded, refused, failed, cut int64 }
}

// NewLink listens on opts.ListenAddr and forwards every connection to
// target, delayed by opts.Latency and opts.Jitter.
func NewLink(target string, opts Options) (*Link, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.EnsureDefaults()
	return newLink(Key{}, target, opts, Settings{Latency: opts.Latency, Jitter: opts.Jitter})
}

// newLink starts a link with validated, defaulted options.
func newLink(key Key, target string, opts Options, s Settings) (*Link, error) {
	if _, _, err := net.SplitHostPort(target); err != nil {
		return nil, fmt.Errorf("%w: target %q: %v", ErrInvalid, target, err)
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", opts.ListenAddr)
	if err != nil {
		return nil, fmt.Errorf("cosla: wan link %s: %w", key, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &Link{
		key:      key,
		target:   target,
		opts:     opts,
		ln:       ln,
		ctx:      ctx,
		cancel:   cancel,
		done:     make(chan struct{}),
		settings: s,
		// Each link draws from its own stream so that adding a link does
		// not shift the draws of the others.
		rng:   rand.New(rand.NewPCG(opts.Seed, key.stream())),
		conns: make(map[*proxyConn]struct{}),
	}
	l.log = opts.Logger.With(slog.String("addr", l.Addr()), slog.String("target", target))
	if key != (Key{}) {
		l.log = l.log.With(slog.String("link", key.String()))
	}
	l.bufs.New = func() any {
		b := make([]byte, opts.ChunkBytesMax)
		return &b
	}
	l.log.Info("wan: link up", slog.String("settings", s.String()))
	l.wg.Go(l.acceptLoop)
	return l, nil
}

// Addr returns the address clients should dial instead of the target.
func (l *Link) Addr() string { return l.ln.Addr().String() }

// Target returns the address the link forwards to.
func (l *Link) Target() string { return l.target }

// Key returns the link's key in its Net, or the zero Key.
func (l *Link) Key() Key { return l.key }

// Settings returns the current settings.
func (l *Link) Settings() Settings {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.settings
}

// SetLatency changes the one-way delay distribution. It applies to every
// chunk read from now on, on new and live connections.
func (l *Link) SetLatency(latency, jitter time.Duration) error {
	if err := (Settings{Latency: latency, Jitter: jitter}).Validate(); err != nil {
		return err
	}
	l.update(func(s *Settings) { s.Latency, s.Jitter = latency, jitter })
	return nil
}

// SetDown partitions the link (true) or heals it (false); see the package
// comment for what a partition does to connections.
func (l *Link) SetDown(down bool) {
	l.update(func(s *Settings) { s.Down = down })
}

// Set replaces all settings at once.
func (l *Link) Set(s Settings) error {
	if err := s.Validate(); err != nil {
		return err
	}
	l.update(func(old *Settings) { *old = s })
	return nil
}

// update changes the settings under l.mu, so that concurrent SetLatency and
// SetDown calls cannot undo each other, and cuts the live connections if
// the link goes down.
func (l *Link) update(change func(*Settings)) {
	l.mu.Lock()
	old := l.settings
	change(&l.settings)
	s := l.settings
	var cut []*proxyConn
	if s.Down && !old.Down {
		// Deregister now rather than when the connection's goroutines
		// notice, so Stats counts no open connection across a partition.
		for pc := range l.conns {
			cut = append(cut, pc)
			delete(l.conns, pc)
		}
		l.counts.cut += int64(len(cut))
	}
	l.mu.Unlock()
	if s != old {
		l.log.Info("wan: link settings", slog.String("settings", s.String()), slog.Int("cut", len(cut)))
	}
	// Reset outside the lock: closing sockets may block briefly, and the
	// cut connections' goroutines take l.mu to deregister.
	for _, pc := range cut {
		pc.abort()
	}
}

// Stats returns a snapshot of the link's counters and settings.
func (l *Link) Stats() Stats {
	l.mu.Lock()
	st := Stats{
		Key:            l.key,
		Addr:           l.Addr(),
		Target:         l.target,
		Settings:       l.settings,
		ConnsAccepted:  l.counts.accepted,
		ConnsForwarded: l.counts.forwarded,
		ConnsRefused:   l.counts.refused,
		ConnsFailed:    l.counts.failed,
		ConnsCut:       l.counts.cut,
		ConnsOpen:      len(l.conns),
	}
	l.mu.Unlock()
	st.BytesToTarget = l.bytesToTarget.Load()
	st.BytesFromTarget = l.bytesFromTarget.Load()
	return st
}

// Close stops the listener, resets every proxied connection and waits for
// all of the link's goroutines to exit. Calling it again is a no-op.
func (l *Link) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		l.wg.Wait()
		return nil
	}
	l.closed = true
	conns := make([]*proxyConn, 0, len(l.conns))
	for pc := range l.conns {
		conns = append(conns, pc)
	}
	l.mu.Unlock()

	close(l.done)
	l.cancel()
	err := l.ln.Close()
	for _, pc := range conns {
		pc.abort()
	}
	l.wg.Wait()
	l.log.Info("wan: link closed")
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

// delay draws the one-way delay for one chunk under the current settings.
func (l *Link) delay() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return oneWay(l.settings.Latency, l.settings.Jitter, l.rng)
}

// Accept errors other than a closed listener (EMFILE, ENFILE) are usually
// transient; back off as net/http's Server does instead of spinning.
const (
	acceptBackoffMin = 5 * time.Millisecond
	acceptBackoffMax = time.Second
)

func (l *Link) acceptLoop() {
	var backoff time.Duration
	for {
		c, err := l.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			backoff = min(max(2*backoff, acceptBackoffMin), acceptBackoffMax)
			l.log.Warn("wan: accept failed", slog.Any("err", err), slog.Duration("backoff", backoff))
			t := time.NewTimer(backoff)
			select {
			case <-t.C:
			case <-l.done:
				t.Stop()
				return
			}
			continue
		}
		backoff = 0
		l.mu.Lock()
		l.counts.accepted++
		refuse := l.settings.Down || l.closed
		if refuse {
			l.counts.refused++
		}
		l.mu.Unlock()
		if refuse {
			// Partitioned: reset before dialing, so the target never sees
			// a connection from across the partition.
			resetClose(c)
			continue
		}
		l.wg.Go(func() { l.serve(c) })
	}
}

// serve dials the target for client and proxies until both directions end
// or the connection is aborted.
func (l *Link) serve(client net.Conn) {
	d := net.Dialer{Timeout: l.opts.DialTimeout}
	server, err := d.DialContext(l.ctx, "tcp", l.target)
	if err != nil {
		l.mu.Lock()
		l.counts.failed++
		l.mu.Unlock()
		l.log.Debug("wan: dial target failed", slog.Any("err", err))
		resetClose(client)
		return
	}
	pc := newProxyConn(client, server)

	// Register under the lock that Set and Close take, so that a partition
	// or Close that starts while this dial was in flight cannot miss the
	// connection.
	l.mu.Lock()
	if l.closed || l.settings.Down {
		l.counts.refused++
		l.mu.Unlock()
		pc.abort()
		return
	}
	l.conns[pc] = struct{}{}
	l.counts.forwarded++
	l.mu.Unlock()

	var wg sync.WaitGroup
	l.pipe(&wg, pc, client, server, &l.bytesToTarget)
	l.pipe(&wg, pc, server, client, &l.bytesFromTarget)
	wg.Wait()

	l.mu.Lock()
	delete(l.conns, pc)
	l.mu.Unlock()
	pc.close()
}

// resetClose closes c with a TCP reset rather than a FIN, so the peer sees
// a failure and not an orderly end of stream.
func resetClose(c net.Conn) {
	if tc, ok := c.(interface{ SetLinger(int) error }); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

// Key names a link in a Net: the site it leaves, the site it reaches and
// the target it leads to there (a node name, for instance).
type Key struct {
	From, To, Target string
}

// String formats k as "from->to/target".
func (k Key) String() string { return k.From + "->" + k.To + "/" + k.Target }

// stream derives the link's jitter stream from its key.
func (k Key) stream() uint64 {
	h := fnv.New64a()
	// Separators keep ("ab","c") and ("a","bc") apart.
	for _, s := range []string{k.From, k.To, k.Target} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return h.Sum64()
}
