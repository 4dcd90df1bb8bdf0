package cosla

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/cosla/cosla/internal/core/clientcore"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/runtime/certs"
	"github.com/cosla/cosla/internal/runtime/clientfile"
	"github.com/cosla/cosla/internal/runtime/hostclient"
	"github.com/cosla/cosla/sla"
)

// Errors. Test for them with errors.Is.
var (
	// ErrSLAUnmet: the Get met none of its SLA's subSLAs; it returns no
	// data (Pileus 3.3).
	ErrSLAUnmet = clientcore.ErrSLAUnmet
	// ErrAborted: a get-transaction of a causal table found no snapshot
	// in its rounds, the keys changing all along; try again.
	ErrAborted = clientcore.ErrAborted
	// ErrNoTable: no storage node knows the table.
	ErrNoTable = clientcore.ErrNoTable
	// ErrTableExists: a table of that name exists with another layout.
	ErrTableExists = clientcore.ErrTableExists
	// ErrTooLarge: the key or value is over the limit.
	ErrTooLarge = clientcore.ErrTooLarge
	// ErrTimeout: a node did not answer in time (a Put's outcome is then
	// unknown).
	ErrTimeout = clientcore.ErrTimeout
	// ErrSessionEnded: the session was ended.
	ErrSessionEnded = clientcore.ErrSessionEnded
	// ErrInvalid: the request is malformed: a bad SLA, layout or option.
	ErrInvalid = clientcore.ErrInvalid
	// ErrBadLayout: a table's layout is invalid, a causal table's
	// included: one given to CreateTable or CreateCausalTable, or one a
	// node or a file holds.
	ErrBadLayout = wire.ErrBadLayout
	// ErrClosed: the client was closed.
	ErrClosed = errors.New("cosla: client closed")
	// ErrQuorumTimeout: a Put's write level was not reached before its
	// deadline. The version is durable at the primary; errors.As with a
	// *QuorumTimeoutError says how many replicas held it.
	ErrQuorumTimeout = clientcore.ErrQuorumTimeout
	// ErrOverloaded: the node's mailbox was full, or held as many
	// requests of this client as a node takes from one client; the
	// request was not carried out. Try again later.
	ErrOverloaded = clientcore.ErrOverloaded
	// ErrTooManySessions: Config.MaxSessions sessions are open.
	ErrTooManySessions = clientcore.ErrTooManySessions
	// ErrNull: a bounded Get found writes of the key pending at its
	// replica and a bound too short to apply even one (dConssandra's
	// NULL); it returns no value. Result.Pending says how many.
	ErrNull = clientcore.ErrNull
	// ErrWriteBack: a Get of a majority of the replicas found them
	// differing and could not bring a majority up to the newest version
	// before its deadline (read repair; WithReadRepair), so it returns no
	// value rather than one a later Get might not see. Result.Held says
	// how many held it. With the deadline the cause, the error also
	// matches ErrSLAUnmet or ErrTimeout.
	ErrWriteBack = clientcore.ErrWriteBack
	// ErrCatchingUp: the replica asked lacks versions it held before a
	// failover (a rollback wiped it, or a snapshot is replacing its data)
	// and reads nothing until it has caught up; a Get that may fall back
	// (WithRetryAfterMiss) asks another replica.
	ErrCatchingUp = clientcore.ErrCatchingUp
)

// Config configures a Client.
type Config struct {
	// Site is the site the client runs at, e.g. "china". Required.
	Site string
	// Name distinguishes clients at one site: the client's ID is
	// "Site/Name". Over TLS it must agree with the client certificate,
	// which names a client NAME: Name is NAME or NAME-SUFFIX, and nodes
	// refuse messages from any other ID. Default: NAME-<random> over TLS,
	// c-<random> without.
	Name string
	// Nodes maps every storage node ("england/r1") to the address the
	// client dials to reach it. Required. The nodes named "SITE/cfg" are
	// the members of the cluster's configuration service, if it runs one
	// (cosla cluster up lists them): the client sends them what its Gets
	// would gain from moving a tablet's primary (Pileus 6.2), and
	// MovePrimary, AddReplica and RemoveReplica.
	Nodes map[string]string
	// RequestTimeout bounds Puts, table operations and Gets whose SLA has
	// an unbounded subSLA. Default 10s.
	RequestTimeout time.Duration
	// ProbeInterval: replicas not heard from for this long are probed
	// (Pileus 4.5). Default 10s.
	ProbeInterval time.Duration
	// RTTWindow is how long the monitor keeps round-trip samples (Pileus
	// 4.5: "the last few minutes"). Default 2m.
	RTTWindow time.Duration
	// AdaptiveProbing, beyond the paper (Pileus 6.1), gives each replica
	// its own probe interval, between ProbeInterval/4 and 4*ProbeInterval:
	// shorter while the node's round trips change, longer while they
	// hold. Default false.
	AdaptiveProbing bool
	// ClockUncertainty is how far the primaries' clocks may be ahead of
	// this client's; bounded-staleness Gets ask for that much more
	// freshness. Default 0.
	ClockUncertainty time.Duration
	// MaxKeyBytes and MaxValueBytes are checked before a Put is sent.
	// Defaults 4 KiB and 1 MiB.
	MaxKeyBytes, MaxValueBytes int
	// MaxSessions bounds the sessions open at once. Default 10000.
	MaxSessions int
	// TLS secures the connections to the nodes: mutual TLS with a client
	// certificate of the cluster's authority (ClusterTLS reads the one
	// `cosla cluster up` writes; LoadTLS reads any). The client checks
	// that each node presents its site's node certificate. Required
	// unless Insecure.
	TLS *tls.Config
	// Insecure connects without TLS, to nodes started with insecure.
	Insecure bool
	// SLAWindow is how far back Metrics' SLAStats.Window reaches: the
	// share of recent Gets that met each subSLA. Default 1m.
	SLAWindow time.Duration
	// ReportEvery is how often the client reports to the configuration
	// service (the nodes SITE/cfg of Nodes) the utility its Gets would
	// have received with each tablet's primary at each site (Pileus
	// 6.2). Default 10s.
	ReportEvery time.Duration
	// Logger receives the client's logs. Default: discard.
	Logger *slog.Logger
}

// Client is a connection to a cosla cluster. It is safe for concurrent
// use; operations run one at a time through the client's protocol core,
// but many may be outstanding.
type Client struct {
	h *hostclient.Client
	// gets keeps the getCalls of finished Gets for the next ones.
	gets sync.Pool
}

// Open returns a client of the nodes in cfg. It does not wait for them:
// each is dialed when first used, all at once by OpenTable, and a node it
// cannot reach is dialed again when used.
func Open(ctx context.Context, cfg Config) (*Client, error) {
	if cfg.Site == "" || strings.Contains(cfg.Site, "/") {
		return nil, fmt.Errorf("%w: Config.Site must be a site name without '/', got %q", ErrInvalid, cfg.Site)
	}
	if len(cfg.Nodes) == 0 {
		return nil, fmt.Errorf("%w: Config.Nodes must list the storage nodes and their addresses", ErrInvalid)
	}
	switch {
	case cfg.TLS == nil && !cfg.Insecure:
		return nil, fmt.Errorf("%w: Config.TLS is required (cosla.ClusterTLS(dir) reads a local cluster's certificates), or set Config.Insecure for nodes that run without TLS", ErrInvalid)
	case cfg.TLS != nil && cfg.Insecure:
		return nil, fmt.Errorf("%w: Config.TLS and Config.Insecure: choose one", ErrInvalid)
	}
	name, err := clientName(cfg)
	if err != nil {
		return nil, err
	}
	cfg.Name = name
	if err := wire.CheckIdentifier("Config.Site", cfg.Site); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if err := wire.CheckIdentifier("Config.Name", cfg.Name); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	peers := map[wire.NodeID]string{}
	for id, addr := range cfg.Nodes {
		if !strings.Contains(id, "/") || addr == "" {
			return nil, fmt.Errorf("%w: Config.Nodes: %q -> %q: want site/node -> host:port", ErrInvalid, id, addr)
		}
		if err := wire.CheckIdentifier("Config.Nodes", id); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		peers[wire.NodeID(id)] = addr
	}
	h, err := hostclient.Open(hostclient.Options{ID: wire.NodeID(cfg.Site + "/" + cfg.Name), Peers: peers, TLS: cfg.TLS, Logger: cfg.Logger,
		Core: clientcore.Options{
			RequestTimeout:   cfg.RequestTimeout,
			ProbeInterval:    cfg.ProbeInterval,
			RTTWindow:        cfg.RTTWindow,
			AdaptiveProbing:  cfg.AdaptiveProbing,
			ClockUncertainty: cfg.ClockUncertainty,
			MaxKeyBytes:      cfg.MaxKeyBytes,
			MaxValueBytes:    cfg.MaxValueBytes,
			MaxSessions:      cfg.MaxSessions,
			SLAWindow:        cfg.SLAWindow,
			ReportEvery:      cfg.ReportEvery,
			Measure:          clientcore.MeasureNeeded,
		}})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return &Client{h: h}, nil
}

// LoadTLS reads a client certificate, its key and the cluster's
// certificate authority (PEM files) into a Config.TLS.
func LoadTLS(certFile, keyFile, caFile string) (*tls.Config, error) {
	return certs.Load(certs.Files{Cert: certFile, Key: keyFile, CA: caFile})
}

// ClusterTLS reads the client certificate of the local cluster in dir
// (`cosla cluster up --dir DIR`) into a Config.TLS.
func ClusterTLS(dir string) (*tls.Config, error) {
	return certs.Load(certs.ClientFiles(certs.ClusterDir(dir)))
}

// LoadConfig reads a client config file, as `cosla cluster plan` writes
// for a cluster whose sites run on their own hosts: the client's site,
// every node's address and the client certificate (package
// internal/runtime/clientfile describes the format). Set the other fields of the
// Config it returns as you need.
func LoadConfig(path string) (Config, error) {
	f, err := clientfile.Load(path)
	if err != nil {
		return Config{}, err
	}
	cfg := Config{Site: f.Site, Nodes: f.Nodes, Insecure: f.Insecure}
	if !f.Insecure {
		if cfg.TLS, err = certs.Load(f.TLS); err != nil {
			return Config{}, fmt.Errorf("%s: %w", path, err)
		}
	}
	return cfg, nil
}

// ID returns the client's node identity, "site/name".
func (c *Client) ID() string { return string(c.h.ID()) }

// Close disconnects the client. Operations in flight fail with ErrClosed
// at once, and so does every later call, a second Close included.
func (c *Client) Close() error {
	if c.h.Close() != nil {
		return ErrClosed
	}
	return nil
}

// call runs start on the client's goroutine and waits for the result it
// delivers through the channel it is given, for ctx, or for Close.
func call[T any](ctx context.Context, c *Client, start func(core *clientcore.Client, result chan<- T)) (T, error) {
	r, err := hostclient.Call(ctx, c.h, start)
	return r, closedErr(err)
}

// closedErr is the shell's error in this package's words.
func closedErr(err error) error {
	if errors.Is(err, hostclient.ErrClosed) {
		return ErrClosed
	}
	return err
}

// getCall carries Gets into the client core and their results
// back (hostclient.Caller), its channel and closures made once: a Get
// through a reused one allocates nothing here. The core reads s, key
// and o between the Caller's Call and its result, so they are set only
// while none of its calls is in flight, and a getCall whose Call gave
// up waiting is not reused.
type getCall struct {
	s      *clientcore.Session
	key    string
	o      clientcore.GetOptions
	caller *hostclient.Caller[getOutcome]
	result chan<- getOutcome // the Caller's, given to start
	done   func(clientcore.GetResult, error)
}

type getOutcome struct {
	r   clientcore.GetResult
	err error
}

func (c *Client) newGetCall() *getCall {
	g := &getCall{}
	g.caller = hostclient.NewCaller(c.h, g.start)
	g.done = g.deliver
	return g
}

// start runs in the core, as one of its events.
func (g *getCall) start(core *clientcore.Client, result chan<- getOutcome) {
	g.result = result
	if err := core.Get(g.s, g.key, g.o, g.done); err != nil {
		g.deliver(clientcore.GetResult{Met: -1, Target: -1}, err)
	}
}

func (g *getCall) deliver(r clientcore.GetResult, err error) { g.result <- getOutcome{r, err} }

// Partition says how a table's keys map to its tablets.
type Partition uint8

// Partitions.
const (
	// ByRange: tablets are ranges of keys, and a tablet's Start is the
	// first key it holds (Pileus 3).
	ByRange Partition = iota
	// ByHash: tablets are ranges of key hashes, so keys are spread over
	// the tablets by hash rather than by order. A key's hash is written as
	// the 16 lower-case hex digits of its FNV-1a 64-bit hash, and a
	// tablet's Start is the first such hash it holds; HashStarts gives
	// equal shares of the hash space. FNV-1a mixes a key's last bytes
	// weakly into the high digits, so keys that differ only at the end
	// (key1, key2, ...) tend to share a tablet.
	ByHash
)

func (p Partition) String() string { return wire.Partition(p).String() }

// HashStarts returns the Starts of the second to the last of n tablets
// that split a ByHash table's hash space equally (the first starts at "").
func HashStarts(n int) []string { return wire.HashStarts(n) }

// TableSpec describes a table to create.
type TableSpec struct {
	Name string
	// Partition says how keys map to tablets. Default ByRange.
	Partition Partition
	// Tablets split the key space; the first must start at "", and each
	// holds the keys from its Start up to the next tablet's Start. Under
	// ByRange a Start is a key; under ByHash it is a key hash, 16
	// lower-case hex digits (HashStarts). Each tablet names its primary
	// and secondaries ("site/node").
	Tablets []TabletSpec
	// Push streams every Put to the secondaries at once, besides the
	// periodic pull (Pileus 4.3). Default: pull only.
	Push bool
	// PullInterval is how often secondaries pull. Default 1 minute.
	PullInterval time.Duration
	// WriteLevel is the least write level of every Put to the table.
	// With it, a Get of r replicas of a tablet of N with r + WriteLevel
	// > N is strong without the primary, and Pileus's selection may use
	// such a read for a strong subSLA. Default One.
	WriteLevel Level
}

// TabletSpec places one tablet of a table: the keys (or, under ByHash,
// key hashes) from Start up to the next tablet's Start.
type TabletSpec struct {
	Start       string
	Primary     string
	Secondaries []string
}

func (s TableSpec) layout() wire.Layout {
	l := wire.Layout{Name: s.Name, Partition: wire.Partition(s.Partition), WriteLevel: wire.Level(s.WriteLevel),
		Replication: wire.Replication{Mode: wire.ModePull, Interval: s.PullInterval}}
	if s.Push {
		l.Replication.Mode = wire.ModePush
	}
	if l.Replication.Interval == 0 {
		l.Replication.Interval = time.Minute
	}
	for _, t := range s.Tablets {
		wt := wire.Tablet{Start: t.Start, Primary: wire.NodeID(t.Primary)}
		for _, id := range t.Secondaries {
			wt.Secondaries = append(wt.Secondaries, wire.NodeID(id))
		}
		l.Tablets = append(l.Tablets, wt)
	}
	return l
}

// CreateTable creates a table on every node it places tablets on. Each
// creation draws a new table ID, so creating a table of an existing name
// fails with ErrTableExists.
func (c *Client) CreateTable(ctx context.Context, spec TableSpec) error {
	return closedErr(c.h.CreateTable(ctx, spec.layout()))
}

// DeleteTable deletes a table and all its data.
func (c *Client) DeleteTable(ctx context.Context, name string) error {
	err, cerr := call(ctx, c, func(core *clientcore.Client, ch chan<- error) {
		core.DeleteTable(name, func(err error) { ch <- err })
	})
	return errors.Join(cerr, err)
}

// Table is an open table of the client that opened it.
type Table struct {
	c *Client
	t *clientcore.Table
}

// check reports ErrInvalid for a nil table or one another client opened.
func (t *Table) check(c *Client) error {
	if t == nil || t.t == nil || t.c != c {
		return fmt.Errorf("%w: a nil *Table or one opened by another client", ErrInvalid)
	}
	return nil
}

// Name returns the table's name.
func (t *Table) Name() string {
	if t == nil || t.t == nil {
		return ""
	}
	return t.t.Name()
}

// OpenTable fetches a table's layout (the first node to answer gives it)
// and probes every replica. It does not wait for the probes: an operation
// waits only for those of the node it would choose, so that the first
// Gets choose among measured nodes (Pileus 4.5) without waiting for nodes
// they do not need. That wait is not counted in Result.RTT.
func (c *Client) OpenTable(ctx context.Context, name string) (*Table, error) {
	t, err := c.h.OpenTable(ctx, name)
	if err != nil {
		return nil, closedErr(err)
	}
	return &Table{c, t}, nil
}

// Session is the scope of the session guarantees: read-my-writes,
// monotonic reads and causal consistency hold within one session (Pileus
// 3.1). A session is used by one goroutine at a time.
type Session struct {
	c *Client
	s *clientcore.Session
}

// check reports ErrInvalid for a nil session or one of another client.
func (s *Session) check(c *Client) error {
	if s == nil || s.s == nil || s.c != c {
		return fmt.Errorf("%w: a nil *Session or one begun by another client", ErrInvalid)
	}
	return nil
}

// SessionOption changes a session's defaults.
type SessionOption interface{ session(*sessionConfig) }

// GetOption changes one Get.
type GetOption interface{ get(*clientcore.GetOptions) }

// PutOption changes one Put.
type PutOption interface{ put(*clientcore.PutOptions) }

type sessionConfig struct {
	strategy Strategy
	policy   clientcore.Policy
}

type sessionFunc func(*sessionConfig)

func (f sessionFunc) session(c *sessionConfig) { f(c) }

type getFunc func(*clientcore.GetOptions)

func (f getFunc) get(o *clientcore.GetOptions) { f(o) }

// WithStrategy makes a session's Gets use a fixed strategy instead of
// Pileus's selection.
func WithStrategy(s Strategy) SessionOption {
	return sessionFunc(func(c *sessionConfig) { c.strategy = s })
}

// LevelOption sets read or write levels or a delay (CPQ) for a session
// (BeginSession) or for one call (Get, Put).
type LevelOption struct {
	read, write clientcore.Choice
	delay       time.Duration
	repair      clientcore.ReadRepair
}

// session, get and put set what l sets and keep the rest: an unset
// level, delay or repair is the zero value.
func (l LevelOption) session(c *sessionConfig) {
	p := &c.policy
	p.Read, p.Write = cmp.Or(l.read, p.Read), cmp.Or(l.write, p.Write)
	p.Delay, p.ReadRepair = cmp.Or(l.delay, p.Delay), cmp.Or(l.repair, p.ReadRepair)
}

func (l LevelOption) get(o *clientcore.GetOptions) {
	o.Read, o.Delay, o.ReadRepair = cmp.Or(l.read, o.Read), cmp.Or(l.delay, o.Delay), cmp.Or(l.repair, o.ReadRepair)
}

func (l LevelOption) put(o *clientcore.PutOptions) { o.Write = cmp.Or(l.write, o.Write) }

// WithReadLevel makes Gets ask r replicas and return the newest version
// any holds. Applied to a Put it does nothing.
func WithReadLevel(r Level) LevelOption { return LevelOption{read: clientcore.Fixed(wire.Level(r))} }

// WithWriteLevel makes Puts wait until w replicas, the primary included,
// hold the version. Applied to a Get it does nothing.
func WithWriteLevel(w Level) LevelOption { return LevelOption{write: clientcore.Fixed(wire.Level(w))} }

// WithCPQ is continuous partial quorums (CPQ 3.2): each Get and Put uses
// level b with probability p, a otherwise.
func WithCPQ(p float64, a, b Level) LevelOption {
	c := clientcore.Mix(p, wire.Level(a), wire.Level(b))
	return LevelOption{read: c, write: c}
}

// WithDelay is an artificial delay (AD, CPQ 3.2): each Get waits d before
// it is sent, counted in its latency. Applied to a Put it does nothing.
func WithDelay(d time.Duration) LevelOption { return LevelOption{delay: d} }

// WithTuner makes a session choose its levels itself, as CPQ(p, One,
// Quorum) with p adjusted before every Get so that reads keep a 95th
// percentile latency within latency and return stale values at most a
// fraction stale of the time (beyond CPQ, which leaves the tuning to
// future work; see clientcore.Tune for how). Result.TuneP reports p.
func WithTuner(latency time.Duration, stale float64) SessionOption {
	return sessionFunc(func(c *sessionConfig) { c.policy.Tune = clientcore.Tune{Latency: latency, Stale: stale} })
}

// WithReadRepair turns read repair on or off. Read repair asks the
// replicas a Get of several replicas read that answered with an older
// version to catch up to the newest, from their primary. It is on by
// default for a Get that asks a majority of its tablet's replicas, which
// then answers only once a majority holds the version it returns (ABD's
// write-back, Cassandra's blocking read repair): with writes of w, r + w
// > N, such reads are linearizable per key, not only regular (the README
// lists the levels). WithReadRepair(false) turns it off, for a Get that
// may return sooner and be regular; WithReadRepair(true) also turns it on
// for a Get of fewer than a majority, which sends the repairs without
// waiting for them.
func WithReadRepair(on bool) LevelOption {
	if on {
		return LevelOption{repair: clientcore.RepairOn}
	}
	return LevelOption{repair: clientcore.RepairOff}
}

// BeginSession starts a session on t whose Gets use agreement unless a Get
// says otherwise.
func (c *Client) BeginSession(t *Table, agreement sla.SLA, opts ...SessionOption) (*Session, error) {
	if err := t.check(c); err != nil {
		return nil, err
	}
	cfg := sessionConfig{strategy: Pileus}
	for _, o := range opts {
		o.session(&cfg)
	}
	if err := cfg.policy.Validate(); err != nil {
		return nil, err
	}
	type result struct {
		s   *clientcore.Session
		err error
	}
	r, err := call(context.Background(), c, func(core *clientcore.Client, ch chan<- result) {
		s, err := core.BeginSession(t.t, agreement, clientcore.Strategy(cfg.strategy))
		if err == nil {
			if err = s.SetPolicy(cfg.policy); err != nil {
				core.EndSession(s)
			}
		}
		ch <- result{s, err}
	})
	if err != nil {
		return nil, err
	}
	if errors.Is(r.err, ErrInvalid) {
		return nil, r.err
	}
	if r.err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, r.err)
	}
	return &Session{c, r.s}, nil
}

// EndSession ends a session; later operations in it fail with
// ErrSessionEnded.
func (c *Client) EndSession(s *Session) error {
	if err := s.check(c); err != nil {
		return err
	}
	_, err := call(context.Background(), c, func(core *clientcore.Client, ch chan<- struct{}) {
		core.EndSession(s.s)
		ch <- struct{}{}
	})
	return err
}

// Put writes key at its tablet's primary and returns the version's
// timestamp. When Put returns nil the version is durable at the primary
// and at as many replicas as its write level asks (WithWriteLevel). An
// error matching ErrQuorumTimeout says the level was not reached by ctx's
// deadline (or the client's request timeout); the timestamp is then
// returned too, as the version is durable at the primary. On ErrTimeout
// or a ctx error the outcome is unknown.
func (c *Client) Put(ctx context.Context, s *Session, key string, value []byte, opts ...PutOption) (Timestamp, error) {
	if err := s.check(c); err != nil {
		return Timestamp{}, err
	}
	var o clientcore.PutOptions
	var report *WriteResult
	for _, f := range opts {
		f.put(&o)
		if w, ok := f.(writeResultOption); ok {
			report = w.r
		}
	}
	if deadline, ok := ctx.Deadline(); ok {
		if o.Timeout = time.Until(deadline); o.Timeout <= 0 {
			return Timestamp{}, context.DeadlineExceeded
		}
	}
	type result struct {
		r   clientcore.PutResult
		err error
	}
	r, err := call(ctx, c, func(core *clientcore.Client, ch chan<- result) {
		if err := core.Put(s.s, key, value, o, func(r clientcore.PutResult, err error) { ch <- result{r, err} }); err != nil {
			ch <- result{err: err}
		}
	})
	if err == nil {
		err = r.err
	}
	if report != nil {
		*report = writeResult(r.r)
	}
	return Timestamp(r.r.TS), publicErr(err)
}

// Within returns the bound of a duration. A zero or negative duration is
// refused by WithBound: Immediate is the bound for an answer without
// waiting.
func Within(d time.Duration) Bound {
	if d < 0 {
		return Bound(clientcore.NegativeBound)
	}
	return Bound(d)
}

// BoundOption is a bound on a Put, a Get or a ReadTestWrite.
type BoundOption struct{ b Bound }

// WithBound makes a Put a staged write and a Get a bounded read
// (dConssandra). A bounded Put goes to the nearest replica, which
// answers within the bound with how far the write got (WithWriteResult);
// a write answered before the primary ordered it stays pending in the
// session, whose Gets under read-my-writes, monotonic or causal return
// it. A bounded Get goes to the nearest replica, which applies the
// pending writes it can within the bound and then reads (Result.Applied,
// Result.Pending; ErrNull when it could apply none of the key's).
func WithBound(b Bound) BoundOption {
	if b == 0 {
		b = Bound(clientcore.ZeroBound)
	}
	return BoundOption{b}
}

func (o BoundOption) put(p *clientcore.PutOptions) { p.Bound = wire.Bound(o.b) }
func (o BoundOption) get(g *clientcore.GetOptions) { g.Bound = wire.Bound(o.b) }

// WriteResult says how far a Put or ReadTestWrite got.
type WriteResult struct {
	// TS is the version's timestamp, zero before Coordinated.
	TS Timestamp
	// Node is the replica that took the write: the primary, or with a
	// bound the receiving replica. RTT is the round trip.
	Node string
	RTT  time.Duration
	// Stage is how far the write got (bounded writes only), and WriteID
	// its number at Node, by which a pending write is later resolved to
	// its timestamp. Holders are the replicas known to have applied it.
	Stage   Stage
	WriteID uint64
	Holders []string
	// Tested is a ReadTestWrite's outcome: whether the test held, or
	// that the bound ran out before the primary evaluated it.
	Tested Outcome
	// Acks is the number of replicas that held the write when it was
	// answered (write levels).
	Acks int
}

type putFunc func(*clientcore.PutOptions)

func (f putFunc) put(o *clientcore.PutOptions) { f(o) }

// WithWriteResult has a Put fill *r with how far the write got.
func WithWriteResult(r *WriteResult) PutOption { return writeResultOption{r} }

type writeResultOption struct{ r *WriteResult }

func (writeResultOption) put(*clientcore.PutOptions) {}

func writeResult(p clientcore.PutResult) WriteResult {
	w := WriteResult{TS: Timestamp(p.TS), Node: string(p.Node), RTT: p.RTT, Stage: Stage(p.Stage), WriteID: p.WriteID, Tested: Outcome(p.Tested), Acks: p.Acks}
	for _, h := range p.Holders {
		w.Holders = append(w.Holders, string(h))
	}
	return w
}

// ReadTestWrite writes value to writeKey only if testKey's value is
// expect (nil: if testKey has no value) when the tablet's primary orders
// the write, in timestamp order with every other write of the tablet
// (dConssandra 2). Both keys must lie in one tablet. With WithBound the
// nearest replica takes it as a staged write and the result may say the
// bound ran out before the test was evaluated (NotEvaluated); without,
// it goes to the primary.
func (c *Client) ReadTestWrite(ctx context.Context, s *Session, testKey string, expect []byte, writeKey string, value []byte, opts ...PutOption) (WriteResult, error) {
	var w WriteResult
	test := &wire.Test{Key: testKey, Found: expect != nil, Value: expect}
	opts = append(opts, putFunc(func(o *clientcore.PutOptions) { o.Test = test }), WithWriteResult(&w))
	_, err := c.Put(ctx, s, writeKey, value, opts...)
	return w, err
}

// WithSLA makes one Get use agreement instead of the session's SLA.
func WithSLA(agreement sla.SLA) GetOption {
	return getFunc(func(o *clientcore.GetOptions) { o.SLA = agreement })
}

// WithRetryAfterMiss turns a Get's fallback after a miss on or off; it is
// on by default (beyond Pileus; its section 5.4 describes the case): when
// a reply meets no subSLA, or the target subSLA's latency passes without a
// reply (for an unbounded one, the 2 s probe timeout), the Get also asks
// the node not yet asked that can best meet a subSLA in the time left, and
// so on while the SLA allows, each node once; the best reply wins. A node
// that is down then costs a Get no more than its target's latency.
// Result.Retried reports it. Off, a Get sends one request, as the paper's
// Pileus does, and a target that is down costs it the SLA's last latency.
func WithRetryAfterMiss(on bool) GetOption {
	return getFunc(func(o *clientcore.GetOptions) { o.RetryAfterMiss = on })
}

// WithHedge lets a Pileus Get go to a second node at once when that is
// expected to add more than cost of utility, the price the application
// puts on an extra request (beyond Pileus; its section 6.3 suggests it).
// Result.Hedged reports it.
func WithHedge(cost float64) GetOption {
	return getFunc(func(o *clientcore.GetOptions) { o.HedgeCost = cost })
}

// WithGetStrategy makes one Get use a strategy other than the session's.
func WithGetStrategy(s Strategy) GetOption {
	return getFunc(func(o *clientcore.GetOptions) { o.Strategy = clientcore.Strategy(s) })
}

// Get reads key in session s. It returns the value and what was delivered;
// if no subSLA was met it returns no value, a Result describing the
// attempt, and an error wrapping ErrSLAUnmet (or ErrTimeout), and if a
// read of a majority could not write its version back to a majority, no
// value and an error wrapping ErrWriteBack (WithReadRepair).
func (c *Client) Get(ctx context.Context, s *Session, key string, opts ...GetOption) ([]byte, Result, error) {
	if err := s.check(c); err != nil {
		return nil, Result{Met: -1, Selection: Selection{Target: -1}}, err
	}
	g, _ := c.gets.Get().(*getCall)
	if g == nil {
		g = c.newGetCall()
	}
	g.s, g.key, g.o = s.s, key, clientcore.GetOptions{RetryAfterMiss: true}
	for _, f := range opts {
		f.get(&g.o)
	}
	r, reusable, err := g.caller.Call(ctx)
	if reusable {
		g.s, g.key, g.o = nil, "", clientcore.GetOptions{}
		c.gets.Put(g)
	}
	err = closedErr(err)
	if err == nil {
		err = r.err
	}
	res := getResult(r.r)
	if err != nil {
		res.Met = -1
		return nil, res, err
	}
	return r.r.Value, res, nil
}
