package wan

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
)

// Net is the emulated WAN of a cluster: a set of links keyed by (from site,
// to site, target). It is safe for concurrent use.
type Net struct {
	opts Options // validated, with defaults

	mu    sync.Mutex
	links map[Key]*Link
	// pairs holds the settings given to Set, per direction (from, to), so
	// that links added later between the same sites start with them.
	pairs  map[[2]string]Settings
	closed bool
}

// NewNet returns an empty Net whose links are built from opts. Links start
// with opts.Latency and opts.Jitter unless Set has been called for their
// pair of sites. opts.ListenAddr must have port 0.
func NewNet(opts Options) (*Net, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.EnsureDefaults()
	if _, port, _ := net.SplitHostPort(opts.ListenAddr); port != "0" {
		return nil, fmt.Errorf("%w: Options.ListenAddr %q: a Net needs port 0, it opens one listener per link", ErrInvalid, opts.ListenAddr)
	}
	opts.Logger.Info("wan: net up", slog.String("options", opts.String()))
	return &Net{
		opts:  opts,
		links: make(map[Key]*Link),
		pairs: make(map[[2]string]Settings),
	}, nil
}

// Add starts a link for k that forwards to targetAddr and returns it;
// clients at k.From reach k.Target at Link.Addr.
func (n *Net) Add(k Key, targetAddr string) (*Link, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil, ErrClosed
	}
	if _, ok := n.links[k]; ok {
		return nil, fmt.Errorf("%w: %s", ErrExists, k)
	}
	s, ok := n.pairs[[2]string{k.From, k.To}]
	if !ok {
		s = Settings{Latency: n.opts.Latency, Jitter: n.opts.Jitter}
	}
	// Listening under n.mu keeps Add and Set serialized, so a link cannot
	// be created with settings that a concurrent Set has just replaced.
	l, err := newLink(k, targetAddr, n.opts, s)
	if err != nil {
		return nil, err
	}
	n.links[k] = l
	return l, nil
}

// Link returns the link for k, or nil.
func (n *Net) Link(k Key) *Link {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.links[k]
}

// Set applies s to every link between sites a and b, in both directions,
// and to links between them added later.
func (n *Net) Set(a, b string, s Settings) error {
	if err := s.Validate(); err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return ErrClosed
	}
	n.pairs[[2]string{a, b}] = s
	n.pairs[[2]string{b, a}] = s
	for k, l := range n.links {
		if (k.From == a && k.To == b) || (k.From == b && k.To == a) {
			if err := l.Set(s); err != nil {
				return err
			}
		}
	}
	return nil
}

// Stats returns a snapshot of every link, ordered by key.
func (n *Net) Stats() []Stats {
	n.mu.Lock()
	links := make([]*Link, 0, len(n.links))
	for _, l := range n.links {
		links = append(links, l)
	}
	n.mu.Unlock()
	out := make([]Stats, 0, len(links))
	for _, l := range links {
		out = append(out, l.Stats())
	}
	slices.SortFunc(out, func(x, y Stats) int {
		return cmp.Or(cmp.Compare(x.Key.From, y.Key.From), cmp.Compare(x.Key.To, y.Key.To), cmp.Compare(x.Key.Target, y.Key.Target))
	})
	return out
}

// Close closes every link and waits for all their goroutines to exit. Add
// and Set fail with ErrClosed afterwards; calling Close again is a no-op.
func (n *Net) Close() error {
	n.mu.Lock()
	n.closed = true
	links := n.links
	n.links = make(map[Key]*Link)
	n.mu.Unlock()
	var errs []error
	for _, l := range links {
		if err := l.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("cosla: wan close: %w", errors.Join(errs...))
	}
	return nil
}
