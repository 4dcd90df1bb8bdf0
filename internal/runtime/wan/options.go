package wan

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"time"
)

// ErrInvalid is wrapped by every error that reports a bad option or setting.
var ErrInvalid = errors.New("cosla: invalid wan options")

// ErrClosed is returned by operations on a closed Net.
var ErrClosed = errors.New("cosla: wan closed")

// ErrExists is returned when a Net already has a link with the same Key.
var ErrExists = errors.New("cosla: wan link exists")

// Limits on Options, so that one bad value cannot make a link hoard memory
// (TigerBeetle: put a limit on everything).
const (
	chunkBytesMaxLimit  = 1 << 20
	queueChunksMaxLimit = 1 << 16
)

// Options configure a Link or a Net. The zero value is usable: every zero
// field takes the default stated in its comment.
type Options struct {
	// ListenAddr is the address each link listens on. Port 0 lets the
	// kernel pick a free port (read it back with Link.Addr). A Net opens
	// one listener per link, so it requires port 0.
	// Default: "127.0.0.1:0".
	ListenAddr string
	// Latency is the initial mean one-way delay of a link. Default: 0.
	Latency time.Duration
	// Jitter is the initial standard deviation of the one-way delay (see
	// the package comment for the distribution). Default: 0.
	Jitter time.Duration
	// ChunkBytesMax is the largest single read from a socket, and so the
	// largest unit of data that gets its own delay draw.
	// Default: 32 KiB; at most 1 MiB.
	ChunkBytesMax int
	// QueueChunksMax bounds the chunks held back in one direction of one
	// connection. With ChunkBytesMax it caps both memory per connection
	// and throughput per one-way latency. Default: 512; at most 65536.
	QueueChunksMax int
	// DialTimeout bounds connecting to the target. Default: 5s.
	DialTimeout time.Duration
	// Seed seeds the jitter draws. Every link draws from its own stream
	// derived from Seed and its Key. Wall-clock scheduling makes a run
	// irreproducible anyway, but a fixed seed keeps the sequence of draws
	// the same. Default: 0, which is a seed like any other.
	Seed uint64
	// Logger receives the links' logs. Default: discard.
	Logger *slog.Logger

	// clock replaces the wall clock; only tests set it. Default: wall clock.
	clock clock
}

// Default values of Options fields.
const (
	DefaultListenAddr     = "127.0.0.1:0"
	DefaultChunkBytesMax  = 32 << 10
	DefaultQueueChunksMax = 512
	DefaultDialTimeout    = 5 * time.Second
)

// EnsureDefaults returns a copy of o with every zero field set to its
// default.
func (o Options) EnsureDefaults() Options {
	if o.ListenAddr == "" {
		o.ListenAddr = DefaultListenAddr
	}
	if o.ChunkBytesMax == 0 {
		o.ChunkBytesMax = DefaultChunkBytesMax
	}
	if o.QueueChunksMax == 0 {
		o.QueueChunksMax = DefaultQueueChunksMax
	}
	if o.DialTimeout == 0 {
		o.DialTimeout = DefaultDialTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.clock == nil {
		o.clock = wallClock{}
	}
	return o
}

// Validate returns an error wrapping ErrInvalid that names the first bad
// field, or nil. Zero fields are valid: they mean "use the default".
func (o Options) Validate() error {
	if o.ListenAddr != "" {
		if err := validateListenAddr(o.ListenAddr); err != nil {
			return fmt.Errorf("%w: Options.ListenAddr %q: %v", ErrInvalid, o.ListenAddr, err)
		}
	}
	if err := (Settings{Latency: o.Latency, Jitter: o.Jitter}).validate("Options."); err != nil {
		return err
	}
	if o.ChunkBytesMax < 0 || o.ChunkBytesMax > chunkBytesMaxLimit {
		return fmt.Errorf("%w: Options.ChunkBytesMax %d: must be in [0, %d]", ErrInvalid, o.ChunkBytesMax, chunkBytesMaxLimit)
	}
	if o.QueueChunksMax < 0 || o.QueueChunksMax > queueChunksMaxLimit {
		return fmt.Errorf("%w: Options.QueueChunksMax %d: must be in [0, %d]", ErrInvalid, o.QueueChunksMax, queueChunksMaxLimit)
	}
	if o.DialTimeout < 0 {
		return fmt.Errorf("%w: Options.DialTimeout %v: must not be negative", ErrInvalid, o.DialTimeout)
	}
	return nil
}

// validateListenAddr accepts only an IP literal and a port: a host name
// could resolve to a non-loopback address and expose the emulated WAN.
func validateListenAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if _, err := netip.ParseAddr(host); err != nil {
		return fmt.Errorf("host must be an IP address: %v", err)
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return err
	}
	return nil
}

// String formats the options for the startup log (STYLE.md habit 5).
func (o Options) String() string {
	return fmt.Sprintf("ListenAddr=%s Latency=%v Jitter=%v ChunkBytesMax=%d QueueChunksMax=%d DialTimeout=%v Seed=%d",
		o.ListenAddr, o.Latency, o.Jitter, o.ChunkBytesMax, o.QueueChunksMax, o.DialTimeout, o.Seed)
}

// Settings are the controls of a link that can change at run time.
type Settings struct {
	// Latency is the mean one-way delay.
	Latency time.Duration
	// Jitter is the standard deviation of the one-way delay.
	Jitter time.Duration
	// Down partitions the link (see the package comment).
	Down bool
}

// Validate returns an error wrapping ErrInvalid that names the bad field.
func (s Settings) Validate() error { return s.validate("Settings.") }

func (s Settings) validate(prefix string) error {
	if s.Latency < 0 {
		return fmt.Errorf("%w: %sLatency %v: must not be negative", ErrInvalid, prefix, s.Latency)
	}
	if s.Jitter < 0 {
		return fmt.Errorf("%w: %sJitter %v: must not be negative", ErrInvalid, prefix, s.Jitter)
	}
	return nil
}

// String formats the settings for logs.
func (s Settings) String() string {
	return fmt.Sprintf("latency=%v jitter=%v down=%t", s.Latency, s.Jitter, s.Down)
}
