// Package server is `cosla serve`: it hosts one site's nodes in a process,
// as package site composes them (the storage nodes, each a replica core
// with a causal store beside it, and the site's causal coordinator and
// cache). Each node is run by package host on its own goroutine, with its
// data in Pebble on disk (a Put is fsynced before it is acknowledged) and
// its messages on DRPC streams (package host).
// The process also serves, over HTTP, a status page at / (page.html), the
// JSON behind it at /cluster, /metrics (Prometheus text format), /healthz
// and /status.
package server

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/cosla/cosla/internal/core/causal"
	"github.com/cosla/cosla/internal/core/config"
	"github.com/cosla/cosla/internal/core/node"
	"github.com/cosla/cosla/internal/core/replica"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/runtime/certs"
	"github.com/cosla/cosla/internal/runtime/host"
	"github.com/cosla/cosla/internal/runtime/hostcheck"
	"github.com/cosla/cosla/internal/runtime/pebbledb"
	"github.com/cosla/cosla/internal/runtime/private"
	"github.com/cosla/cosla/internal/runtime/site"
	"github.com/cosla/cosla/internal/runtime/topology"
)

// ErrInvalidOptions is wrapped by every Options.Validate error.
var ErrInvalidOptions = errors.New("cosla: invalid server options")

// Options configures a Server. Fields marked required have no default.
type Options struct {
	// Site is the site the process runs at, e.g. "england". Required.
	Site string `yaml:"site"`
	// Nodes names the storage nodes the process hosts; node "r1" at site
	// "england" is "england/r1". Default: ["r1"].
	Nodes []string `yaml:"nodes"`
	// Listen is the TCP address of the transport's listener that other processes
	// and clients connect to, e.g. "127.0.0.1:7100". Required.
	Listen string `yaml:"listen"`
	// HTTPListen is the address of the HTTP listener for the status page
	// (/), /cluster, /metrics, /healthz and /status; an address without a
	// host (":7180") listens on loopback only. It is plain HTTP: expose it
	// beyond the machine by naming a host. Default: none.
	HTTPListen string `yaml:"http_listen"`
	// StatusPeers maps other sites to their processes' HTTP addresses
	// (host:port): /cluster, and so the status page, shows their /status
	// beside this process's, fetched when asked with a short timeout
	// (peerStatusTimeout). `cosla cluster up` fills it with every other
	// site. Default: none, the page shows this site only.
	StatusPeers map[string]string `yaml:"status_peers"`
	// DataDir holds one Pebble store per node, in DataDir/<node name>.
	// Required.
	DataDir string `yaml:"data_dir"`
	// Peers maps every storage node of the other sites to the address this
	// process dials to reach it (through the WAN emulation, on a local
	// cluster).
	Peers map[wire.NodeID]string `yaml:"peers"`
	// TLS names the site's node certificate, its key and the cluster's
	// certificate authority (package certs; `cosla cluster up` writes
	// them). Every connection, to and from this process, is mutual TLS:
	// other sites must present node certificates, clients client
	// certificates, which may send client requests only. Required unless
	// Insecure.
	TLS TLSFiles `yaml:"tls"`
	// Insecure turns TLS off: any process that reaches the port may send
	// anything, replication included. The server warns at start.
	Insecure bool `yaml:"insecure"`
	// UnsafeNoFsync turns off every fsync: Puts are acknowledged before
	// they are durable, and a crash of the process or the machine may lose
	// acknowledged writes. It is for measuring what durability costs (as
	// etcd's --unsafe-no-fsync); the server warns at start.
	UnsafeNoFsync bool `yaml:"unsafe_no_fsync"`
	// FaultInjection serves POST /faults on the HTTP listener, which
	// drops the messages of chosen nodes (Faults): for fault campaigns
	// on a local cluster (`cosla chaos`), never for a store in service,
	// since anyone who reaches the HTTP port may then cut its nodes off.
	// Default off.
	FaultInjection bool `yaml:"fault_injection"`
	// Replica configures the storage nodes: key and value limits, pull
	// batch size and bytes, and how long and how many read repairs may
	// wait for a pull (defaults 4 KiB, 1 MiB, 1000, 4 MiB, 2s, 1024). The
	// transport's message limit follows from them (replica.MessageBytesMax).
	Replica ReplicaOptions `yaml:"replica"`
	// Mailbox bounds what waits for each node (host.NodeOptions).
	Mailbox MailboxOptions `yaml:"mailbox"`
	// Causal configures the site's part of causal tables: its client
	// coordinator, its cache and its storage nodes' middle men.
	Causal CausalOptions `yaml:"causal"`
	// Config configures the configuration service (DESIGN.md section
	// 10; README "When a site fails"): the sites hosting its members
	// and the primaries' leases. Every site of a cluster names the same.
	Config ConfigOptions `yaml:"config"`
	// Supervisor is what the supervisor of `cosla cluster up` says of
	// this site's earlier processes, shown on the status page and in
	// /status: it writes the restarts into the config it restarts the
	// process with. Not set by hand.
	Supervisor SupervisorInfo `yaml:"supervisor"`
	// StopTimeout bounds how long Close waits for each node: for the
	// event and the sync in progress (host.NodeOptions.StopTimeout), and
	// then for its storage to close. A node whose storage failed is not
	// waited for at all if a storage call is in progress: it may never
	// return. Storage not closed in time is left to the process's exit
	// to release, and Err reports it. Default 10s.
	StopTimeout time.Duration `yaml:"stop_timeout"`
	// Logger receives the process's logs. Default: discard.
	Logger *slog.Logger `yaml:"-"`
}

// SupervisorInfo counts the times a supervisor restarted the site's
// process after it died on its own, and says how the last one ended.
type SupervisorInfo struct {
	Restarts int    `yaml:"restarts" json:"restarts,omitempty"`
	LastExit string `yaml:"last_exit" json:"last_exit,omitempty"`
}

// MailboxOptions bound the messages waiting for a node: their number,
// their bytes, and the requests of one client among them. A client request
// beyond them is answered at once with wire.Overloaded (ErrOverloaded at
// the client). Defaults 65536, 64 MiB and 1024 (host.NodeOptions).
type MailboxOptions struct {
	Messages  int `yaml:"messages"`
	Bytes     int `yaml:"bytes"`
	PerClient int `yaml:"per_client"`
}

// CausalOptions are the settable options of the causal table cores
// (package causal). Zero is the default.
type CausalOptions struct {
	// ReadTimeout is how long the coordinator waits for a storage node or
	// the cache before trying another ring (or failing, when the session
	// is bound to one), and the cache for a fill. Default 1s.
	ReadTimeout time.Duration `yaml:"read_timeout"`
	// Resend is how long the coordinator waits for a ring's
	// acknowledgement before sending a write again (doubling, up to 32
	// times), and a middle man for an answer before asking again.
	// Default 1s.
	Resend time.Duration `yaml:"resend"`
	// CacheCapacity bounds the keys the site's cache holds. Default
	// 1,000,000.
	CacheCapacity int `yaml:"cache_capacity"`
	// MaxBuffered bounds the writes the site's coordinator holds that
	// some ring does not yet hold: a put that finds the write buffers
	// full waits for a write to complete. Default 1024.
	MaxBuffered int `yaml:"max_buffered"`
	// RTT seeds the coordinator's and the cache's round-trip estimates,
	// by node: `cosla cluster up` writes its topology's round trips from
	// this site to every storage node and cache (site.TopologyRTTs), as
	// the simulator seeds them. `cluster plan` writes none (its topology's
	// round trips are not the real network's): set them here from a
	// measurement. A node left out is measured on the first read of it.
	RTT map[wire.NodeID]time.Duration `yaml:"rtt,omitempty"`
}

// TLSFiles are PEM files: a certificate, its key and the authority that
// signs the cluster's certificates.
type TLSFiles struct {
	Cert string `yaml:"cert"`
	Key  string `yaml:"key"`
	CA   string `yaml:"ca"`
}

// ReplicaOptions are the settable fields of replica.Options.
type ReplicaOptions struct {
	MaxKeyBytes       int           `yaml:"max_key_bytes"`
	MaxValueBytes     int           `yaml:"max_value_bytes"`
	PullBatchMax      int           `yaml:"pull_batch_max"`
	PullBatchBytes    int           `yaml:"pull_batch_bytes"`
	RepairWait        time.Duration `yaml:"repair_wait"`
	RepairsWaitingMax int           `yaml:"repairs_waiting_max"`
}

// options returns the replica core's options.
func (o ReplicaOptions) options() replica.Options {
	return replica.Options{MaxKeyBytes: o.MaxKeyBytes, MaxValueBytes: o.MaxValueBytes, PullBatchMax: o.PullBatchMax,
		PullBatchBytes: o.PullBatchBytes, RepairWait: o.RepairWait, RepairsWaitingMax: o.RepairsWaitingMax}
}

// EnsureDefaults returns a copy of o with every unset field given its
// default (the options idiom of package node).
func (o Options) EnsureDefaults() Options {
	if len(o.Nodes) == 0 {
		o.Nodes = []string{"r1"}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	o.StopTimeout = cmp.Or(o.StopTimeout, 10*time.Second)
	return o
}

// ConfigOptions are the settable options of the configuration service
// (package config). `cosla cluster up` and `cosla cluster plan` name 3
// voters (5 with five or more storage sites).
type ConfigOptions struct {
	// Voters names the sites whose process hosts a member of the
	// service (node SITE/cfg): 1, 3 or 5, each named in Peers unless it
	// is this process's own. None: no service; a primary is never
	// replaced and needs no lease.
	Voters []string `yaml:"voters"`
	// LeaseLength, LeaseRenew and LeaseMargin set a primary's lease
	// (config.LeaseOptions): defaults 4s, 1s and 250ms, which fit round
	// trips of up to about 450ms between a primary and the service's
	// leader.
	LeaseLength time.Duration `yaml:"lease_length"`
	LeaseRenew  time.Duration `yaml:"lease_renew"`
	LeaseMargin time.Duration `yaml:"lease_margin"`
	// Reconfigure turns on SLA-driven reconfiguration (Pileus 6.2): the
	// service moves a tablet's primary to the site where clients'
	// reports say it would deliver the most utility. Default off.
	Reconfigure bool `yaml:"reconfigure"`
	// Planner sets the planner of Reconfigure; unset fields keep
	// config.PlannerOptions's defaults (window 1m, gain 0.05, hold 3,
	// min interval 15m, min ops 100).
	Planner PlannerOptions `yaml:"planner"`
}

// PlannerOptions are the settable fields of config.PlannerOptions.
type PlannerOptions struct {
	Window      time.Duration `yaml:"window"`
	Gain        float64       `yaml:"gain"`
	Hold        int           `yaml:"hold"`
	MinInterval time.Duration `yaml:"min_interval"`
	MinOps      int64         `yaml:"min_ops"`
}

// Options returns the planner's options.
func (p PlannerOptions) Options() config.PlannerOptions {
	return config.PlannerOptions{Window: p.Window, Gain: p.Gain, Hold: p.Hold, MinInterval: p.MinInterval, MinOps: p.MinOps}
}

// node returns the configuration node's options: no voters if none are
// named.
func (c ConfigOptions) node() config.NodeOptions {
	return config.NodeOptions{
		Member:  config.MemberOptions{Voters: site.Voters(c.Voters)},
		Lease:   config.LeaseOptions{Length: c.LeaseLength, Renew: c.LeaseRenew, Margin: c.LeaseMargin},
		Plan:    c.Reconfigure,
		Planner: c.Planner.Options(),
	}
}

// validate checks the voters against the process's site and peers.
func (c ConfigOptions) validate(self string, peers map[wire.NodeID]string) error {
	if len(c.Voters) == 0 {
		return nil
	}
	for _, v := range c.Voters {
		if _, ok := peers[topology.NodeID(v, config.MemberName)]; v != self && !ok {
			return fmt.Errorf("voters: no peer address for %s's member %s", v, topology.NodeID(v, config.MemberName))
		}
	}
	return c.node().EnsureDefaults().Validate()
}

// reservedNames are the names of the nodes a site runs besides its
// storage nodes (package site), with what they are.
var reservedNames = map[string]string{causal.CoordinatorName: "causal-table coordinator", causal.CacheName: "causal-table cache",
	config.MemberName: "configuration member"}

// Validate reports the first invalid field, naming it.
func (o *Options) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidOptions, fmt.Sprintf(format, args...))
	}
	switch {
	case o.Site == "" || strings.Contains(o.Site, "/") || !utf8.ValidString(o.Site):
		return bad("site must be a non-empty name in UTF-8 without '/', got %q", o.Site)
	case o.Listen == "":
		return bad("listen: an address is required, e.g. 127.0.0.1:7100")
	case o.DataDir == "":
		return bad("data_dir: a directory is required")
	case o.Mailbox.Messages < 0 || o.Mailbox.Bytes < 0 || o.Mailbox.PerClient < 0:
		return bad("mailbox: messages, bytes and per_client must not be negative")
	case o.Causal.ReadTimeout < 0 || o.Causal.Resend < 0 || o.Causal.CacheCapacity < 0 || o.Causal.MaxBuffered < 0:
		return bad("causal: read_timeout, resend, cache_capacity and max_buffered must not be negative")
	case badRTT(o.Causal.RTT) != "":
		return bad("causal: rtt: %s", badRTT(o.Causal.RTT))
	case o.StopTimeout < 0:
		return bad("stop_timeout must not be negative, got %v", o.StopTimeout)
	case o.Insecure && o.TLS != TLSFiles{}:
		return bad("tls and insecure: choose one")
	case !o.Insecure && (o.TLS.Cert == "" || o.TLS.Key == "" || o.TLS.CA == ""):
		return bad("tls: cert, key and ca are required (cosla cluster up writes them), or set insecure to run without TLS")
	}
	seen := map[string]bool{}
	for _, n := range o.Nodes {
		if n == "" || strings.Contains(n, "/") || !utf8.ValidString(n) || seen[n] {
			return bad("nodes: %q is empty, contains '/', is not UTF-8 or is listed twice", n)
		}
		if role, ok := reservedNames[n]; ok {
			return bad("nodes: %q is the name of the site's %s", n, role)
		}
		seen[n] = true
	}
	for id, addr := range o.Peers {
		site, _, ok := strings.Cut(string(id), "/")
		if !ok || addr == "" || !utf8.ValidString(string(id)) {
			return bad("peers: %q -> %q: want site/node -> host:port, in UTF-8", id, addr)
		}
		if site == o.Site {
			return bad("peers: %q is at this process's own site", id)
		}
	}
	for site, addr := range o.StatusPeers {
		if _, _, err := net.SplitHostPort(addr); site == "" || strings.Contains(site, "/") || err != nil {
			return bad("status_peers: %q -> %q: want site -> host:port", site, addr)
		}
		if site == o.Site {
			return bad("status_peers: %q is this process's own site", site)
		}
	}
	if err := o.Replica.options().Validate(); err != nil {
		return bad("replica: %v", err)
	}
	if err := o.Config.validate(o.Site, o.Peers); err != nil {
		return bad("config: %v", err)
	}
	return nil
}

// Server is a running cosla serve process.
type Server struct {
	opts      Options
	transport *host.Transport
	http      *http.Server
	listener  net.Listener
	httpAddr  string
	started   time.Time

	// overloaded counts client requests refused at a full mailbox.
	overloaded atomic.Int64
	// faults are the injected faults (Options.FaultInjection); nil:
	// none.
	faults atomic.Pointer[faultSet]
	// recent keeps the process's last log records at warn level and
	// above, for Status.
	recent *recentLog
	// peerClient fetches the status peers' /status for /cluster.
	peerClient *http.Client

	mu      sync.RWMutex
	nodes   map[wire.NodeID]*hosted
	closing bool
	closed  bool
	// closeErr is what Close met: storage that failed, or was left
	// open.
	closeErr error
	wg       sync.WaitGroup
}

type hosted struct {
	node *host.Node
	// replica is the node's replica core; nil for a causal table's
	// coordinator or cache.
	replica *replica.Node
	// member is the node's configuration member; nil for another node.
	member *config.Node
	engine *pebbledb.Engine
}

// Start opens every node's storage, recovers its tablets, and starts
// serving. It returns once the listeners are bound.
func Start(opts Options) (*Server, error) {
	opts = opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	// Every logger of the process derives from opts.Logger: wrapped here,
	// before anything logs, the ring sees the nodes', the transport's and
	// Pebble's warnings too.
	recent := &recentLog{}
	opts.Logger = slog.New(newTeeHandler(opts.Logger.Handler(), recent))
	log := opts.Logger
	log.Info("cosla serve: starting", "site", opts.Site, "nodes", opts.Nodes, "listen", opts.Listen,
		"http_listen", opts.HTTPListen, "data_dir", opts.DataDir, "peers", len(opts.Peers), "status_peers", len(opts.StatusPeers))
	s := &Server{opts: opts, nodes: map[wire.NodeID]*hosted{}, started: time.Now(), recent: recent,
		peerClient: &http.Client{Timeout: peerStatusTimeout}}
	tlsConfig, err := transportSecurity(opts)
	if err != nil {
		return nil, err
	}
	replicaOpts := opts.Replica.options().EnsureDefaults()
	s.transport = host.NewTransport(host.TransportOptions{Peers: opts.Peers, TLS: tlsConfig,
		MaxMessageBytes: replicaOpts.MessageBytesMax(), Logger: log, Receive: s.receive}, s.deliver)
	if err := s.startNodes(); err != nil {
		s.Close()
		return nil, err
	}
	lis, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("listen: %w", err)
	}
	s.listener = lis
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := s.transport.Serve(lis); err != nil {
			log.Error("cosla serve: transport", "err", err)
		}
	}()
	if opts.HTTPListen != "" {
		listen := loopbackUnlessNamed(opts.HTTPListen)
		hl, err := net.Listen("tcp", listen)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("http listen: %w", err)
		}
		s.httpAddr = hl.Addr().String()
		s.http = &http.Server{Handler: hostcheck.Handler(listen, s.httpHandler()), ReadHeaderTimeout: 10 * time.Second}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			if err := s.http.Serve(hl); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("cosla serve: http", "err", err)
			}
		}()
	}
	log.Info("cosla serve: ready", "addr", lis.Addr().String(), "http", s.httpAddr)
	return s, nil
}

// transportSecurity returns the transport's TLS config, which it serves
// and dials with: mutual TLS from opts.TLS, or nil if opts.Insecure, with
// a warning.
func transportSecurity(opts Options) (*tls.Config, error) {
	if opts.Insecure {
		opts.Logger.Warn("cosla serve: insecure is set: TLS is off, and any process that reaches " + opts.Listen + " may send replication messages")
		return nil, nil
	}
	cfg, err := certs.Load(certs.Files(opts.TLS))
	if err != nil {
		return nil, fmt.Errorf("tls: %w", err)
	}
	return cfg, nil
}

// loopbackUnlessNamed puts an address without a host on loopback.
func loopbackUnlessNamed(addr string) string {
	if host, port, err := net.SplitHostPort(addr); err == nil && host == "" {
		return net.JoinHostPort("127.0.0.1", port)
	}
	return addr
}

// badRTT says what is wrong with a causal rtt seed, or "": every node is
// SITE/NAME and no round trip negative (zero is a node on this machine:
// a one-site topology's local round trip).
func badRTT(rtt map[wire.NodeID]time.Duration) string {
	for id, d := range rtt {
		if site, name, ok := strings.Cut(string(id), "/"); !ok || site == "" || name == "" || !utf8.ValidString(string(id)) {
			return fmt.Sprintf("%q: want site/node, in UTF-8", id)
		}
		if d < 0 {
			return fmt.Sprintf("%s: round trip %v, want a duration of zero or more", id, d)
		}
	}
	return ""
}

func (s *Server) startNodes() error {
	c := s.opts.Causal
	ropts := s.opts.Replica.options()
	ropts.Rollback = s.writeRollback
	opts := site.Options{Replica: ropts, Config: s.opts.Config.node(), Causal: site.CausalOptions{
		Store:       causal.StoreOptions{Resend: c.Resend},
		Coordinator: causal.CoordinatorOptions{ReadTimeout: c.ReadTimeout, Resend: c.Resend, RTT: c.RTT, MaxBuffered: c.MaxBuffered},
		Cache:       causal.CacheOptions{Capacity: c.CacheCapacity, ReadTimeout: c.ReadTimeout, RTT: c.RTT},
	}}
	for _, n := range site.Nodes(s.opts.Site, s.opts.Nodes, opts) {
		if err := s.startNode(n); err != nil {
			return err
		}
	}
	return nil
}

// startNode opens a node's engine and starts it.
func (s *Server) startNode(sn site.Node) error {
	id := sn.ID
	dir := filepath.Join(s.opts.DataDir, sn.Name)
	// The node's data is its owner's whatever the umask: Pebble creates
	// its files under it with the umask's modes (PrivateUmask).
	if err := private.MkdirAll(dir); err != nil {
		return fmt.Errorf("%s: %w", id, err)
	}
	logger := s.opts.Logger.With("node", string(id))
	if s.opts.UnsafeNoFsync {
		logger.Warn("cosla serve: unsafe_no_fsync is set: acknowledged writes may be lost in a crash")
	}
	eng, err := pebbledb.Open(dir, pebbledb.Options{Logger: logger.With("component", "pebble"), UnsafeNoSync: s.opts.UnsafeNoFsync})
	if err != nil {
		return fmt.Errorf("%s: %w", id, err)
	}
	handler := sn.New()
	n, err := host.StartNode(host.NodeOptions{ID: id, Handler: handler, Engine: eng, Send: s.send, Logger: logger,
		MailboxMax: s.opts.Mailbox.Messages, MailboxBytes: s.opts.Mailbox.Bytes, SenderMax: s.opts.Mailbox.PerClient,
		StopTimeout: s.opts.StopTimeout})
	if err != nil {
		eng.Close()
		return fmt.Errorf("%s: recover: %w", id, err)
	}
	s.mu.Lock()
	// The replica core, if the node has one, for the status page and
	// metrics.
	s.nodes[id] = &hosted{node: n, replica: site.Replica(handler), member: site.Member(handler), engine: eng}
	s.mu.Unlock()
	return nil
}

// deliver hands a message to a node of this process.
func (s *Server) deliver(from, to wire.NodeID, m wire.Msg) bool {
	return s.hand(from, to, m, (*host.Node).Deliver)
}

// receive delivers a message from another process, on the goroutine that
// read it, which serves it there if its node is idle (host.Node.DeliverHere).
func (s *Server) receive(from, to wire.NodeID, m wire.Msg) bool {
	return s.hand(from, to, m, (*host.Node).DeliverHere)
}

// hand gives m to its node by deliver, or answers a client's request the
// node refused.
func (s *Server) hand(from, to wire.NodeID, m wire.Msg, deliver func(*host.Node, wire.NodeID, wire.Msg) bool) bool {
	s.mu.RLock()
	h, ok := s.nodes[to]
	s.mu.RUnlock()
	if !ok {
		return false
	}
	if s.dropped(from, to) {
		return true
	}
	if !deliver(h.node, from, m) {
		// A full mailbox, or a node stopped by a storage failure: answer
		// a client at once rather than leave it to time out, so that it
		// can back off or go elsewhere.
		code := wire.Overloaded
		if h.node.Err() != nil {
			code = wire.StorageFailed
		}
		if reply := wire.Refusal(m, code); reply != nil {
			if code == wire.Overloaded {
				s.overloaded.Add(1)
			}
			s.transport.Send(to, from, reply)
		}
	}
	return true
}

// Addr returns the address the transport's listener is bound to.
func (s *Server) Addr() string { return s.listener.Addr().String() }

// HTTPAddr returns the address of the HTTP listener, or "".
func (s *Server) HTTPAddr() string { return s.httpAddr }

// Close stops serving, stops every node and closes its storage, all
// within about twice StopTimeout: storage that a stuck call may still be
// using, or that does not close in time, is left open for the process's
// exit to release (see Options.StopTimeout). Err reports what Close met.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return
	}
	s.closing = true
	s.mu.Unlock()
	if s.http != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = s.http.Shutdown(ctx)
		cancel()
	}
	s.peerClient.CloseIdleConnections()
	s.transport.Close()
	// Stop the nodes without holding s.mu: a node's event in progress may
	// be sending to a node of this process, and deliver takes s.mu to find
	// it. Holding the lock here deadlocked Stop against that event.
	ids := s.nodeIDs()
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		s.mu.RLock()
		h := s.nodes[id]
		s.mu.RUnlock()
		wg.Go(func() { errs[i] = s.stopNode(id, h) })
	}
	wg.Wait()
	s.wg.Wait()
	s.mu.Lock()
	s.closed, s.closeErr = true, errors.Join(errs...)
	s.mu.Unlock()
	s.opts.Logger.Info("cosla serve: stopped")
}

// stopNode stops a node and closes its storage, unless Stop left a
// storage call behind (host.ErrStorageStuck: closing would wait for it,
// or pull the store from under it), or Close does not return within
// StopTimeout. Either way the storage is left to the process's exit.
func (s *Server) stopNode(id wire.NodeID, h *hosted) error {
	h.node.Stop()
	if err := h.node.Err(); errors.Is(err, host.ErrStorageStuck) {
		return s.leftOpen(id, err)
	}
	closed := make(chan error, 1)
	go func() { closed <- h.engine.Close() }()
	timeout := time.NewTimer(s.opts.StopTimeout)
	defer timeout.Stop()
	select {
	case err := <-closed:
		if err != nil {
			s.opts.Logger.Error("cosla serve: close storage", "node", string(id), "err", err)
			return fmt.Errorf("%s: %w", id, err)
		}
		return nil
	case <-timeout.C:
		return s.leftOpen(id, fmt.Errorf("its Close had not returned after %v", s.opts.StopTimeout))
	}
}

func (s *Server) leftOpen(id wire.NodeID, err error) error {
	s.opts.Logger.Error("cosla serve: storage left open, for the process's exit to release", "node", string(id), "err", err)
	return fmt.Errorf("%s: storage left open: %w", id, err)
}

// Err reports the storage failures of the process's nodes, joined, one a
// node: before Close, the nodes whose storage failed (as /healthz); after
// it, what Close met: storage that failed, or was left open. nil if
// every node's storage is sound. `cosla serve` exits 1 with it.
func (s *Server) Err() error {
	s.mu.RLock()
	closed, closeErr := s.closed, s.closeErr
	s.mu.RUnlock()
	if closed {
		return closeErr
	}
	var errs []error
	for _, f := range s.failures() {
		errs = append(errs, fmt.Errorf("%s: %w", f.id, f.err))
	}
	return errors.Join(errs...)
}

// NodeStatus is what /status reports of one storage node.
type NodeStatus struct {
	ID      wire.NodeID      `json:"id"`
	Metrics replica.Metrics  `json:"metrics"`
	Dropped int64            `json:"mailbox_dropped"`
	Commit  host.CommitStats `json:"commit"`
	// Failed says why the node stopped, when its storage failed; its
	// Metrics are then empty (it answers nothing until a restart).
	Failed string `json:"failed,omitempty"`
}

// Decisions returns the inputs of each node's recent planner decisions
// (dConssandra's dCON, replica.Node.Decisions), by node; /decisions
// serves them, for the planner's timing experiment (dcon-fig11).
func (s *Server) Decisions() map[wire.NodeID][]replica.Decision {
	out := map[wire.NodeID][]replica.Decision{}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for id, h := range s.nodes {
		if h.replica == nil {
			continue
		}
		var d []replica.Decision
		if err := h.node.Do(func(node.Handler) { d = h.replica.Decisions() }); err == nil {
			out[id] = d
		}
	}
	return out
}

// Status is what /status reports of the process.
type Status struct {
	Site string `json:"site"`
	Addr string `json:"addr"`
	// Time is when the snapshot was taken, by the process's clock: the
	// "now" that a secondary's staleness (now minus its high timestamp)
	// and the operation rates between two snapshots are taken from.
	Time      time.Time           `json:"time"`
	UptimeSec float64             `json:"uptime_sec"`
	Nodes     []NodeStatus        `json:"nodes"`
	Transport host.TransportStats `json:"transport"`
	// Overloaded counts client requests answered wire.Overloaded.
	Overloaded int64 `json:"overloaded"`
	// RecentErrors are the process's last log records at warn level and
	// above (at most recentErrorsMax), oldest first.
	RecentErrors []LogRecord `json:"recent_errors"`
	// Supervisor is Options.Supervisor: the restarts of the site's
	// process before this one.
	Supervisor SupervisorInfo `json:"supervisor"`
	// Config is the site's member of the configuration service, at a
	// voter site.
	Config *ConfigStatus `json:"config,omitempty"`
	// Caches are the site's causal cache nodes (Karma 4.3) and what they
	// counted over their tables; Coordinators its causal coordinators
	// and what their write buffers hold.
	Caches       []CacheStatus       `json:"caches,omitempty"`
	Coordinators []CoordinatorStatus `json:"coordinators,omitempty"`
	// Stalls says, for every node the process hosts, how long it has
	// been held up at worst.
	Stalls []StallStatus `json:"stalls"`
}

// StallStatus is how long a node has been held up at worst: its longest
// sync, which every message it sends meanwhile waits for, and the
// longest a timer of its waited past when it was due, behind its other
// events. Either, near a client's request timeout, makes requests fail
// with no answer from the node.
type StallStatus struct {
	ID              wire.NodeID   `json:"id"`
	LongestSync     time.Duration `json:"longest_sync_ns"`
	LongestLateness time.Duration `json:"longest_timer_lateness_ns"`
}

// CacheStatus is a causal cache node's counters.
type CacheStatus struct {
	ID      wire.NodeID         `json:"id"`
	Metrics causal.CacheMetrics `json:"metrics"`
	Failed  string              `json:"failed,omitempty"`
}

// CoordinatorStatus is a causal coordinator's metrics.
type CoordinatorStatus struct {
	ID      wire.NodeID               `json:"id"`
	Metrics causal.CoordinatorMetrics `json:"metrics"`
	Failed  string                    `json:"failed,omitempty"`
}

// ConfigStatus is a configuration member's view of the service and its
// counters.
type ConfigStatus struct {
	ID      wire.NodeID    `json:"id"`
	Status  config.Status  `json:"status"`
	Metrics config.Metrics `json:"metrics"`
	Failed  string         `json:"failed,omitempty"`
}

// Status returns a snapshot of every node's metrics and tablets.
func (s *Server) Status() Status {
	now := time.Now()
	st := Status{Site: s.opts.Site, Addr: s.Addr(), Time: now, UptimeSec: now.Sub(s.started).Seconds(), Transport: s.transport.Stats(),
		Overloaded: s.overloaded.Load(), RecentErrors: s.recent.snapshot(), Supervisor: s.opts.Supervisor}
	s.mu.RLock()
	ids := make([]wire.NodeID, 0, len(s.nodes))
	for id, h := range s.nodes {
		// The storage nodes; a site's coordinator and cache of causal
		// tables have no replica metrics to show.
		if h.replica != nil {
			ids = append(ids, id)
		}
	}
	s.mu.RUnlock()
	slices.Sort(ids)
	for _, id := range ids {
		s.mu.RLock()
		h := s.nodes[id]
		s.mu.RUnlock()
		ns := NodeStatus{ID: id, Dropped: h.node.Dropped(), Commit: h.node.CommitStats()}
		if err := h.node.Do(func(node.Handler) { ns.Metrics = h.replica.Metrics() }); err != nil {
			ns.Failed = cmp.Or(h.node.Err(), h.engine.Err(), err).Error()
		}
		st.Nodes = append(st.Nodes, ns)
	}
	st.Config = s.configStatus()
	st.Caches, st.Coordinators = s.causalStatus()
	st.Stalls = s.stalls()
	return st
}

// stalls returns every hosted node's StallStatus, by ID.
func (s *Server) stalls() []StallStatus {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]StallStatus, 0, len(s.nodes))
	for id, h := range s.nodes {
		out = append(out, StallStatus{ID: id, LongestSync: h.node.CommitStats().LongestSync, LongestLateness: h.node.LongestTimerLateness()})
	}
	slices.SortFunc(out, func(a, b StallStatus) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// causalStatus returns the metrics of the site's causal cache and
// coordinator nodes.
func (s *Server) causalStatus() ([]CacheStatus, []CoordinatorStatus) {
	s.mu.RLock()
	var ids []wire.NodeID
	for id, h := range s.nodes {
		if h.replica == nil && h.member == nil {
			ids = append(ids, id)
		}
	}
	s.mu.RUnlock()
	slices.Sort(ids)
	var caches []CacheStatus
	var coords []CoordinatorStatus
	for _, id := range ids {
		s.mu.RLock()
		h := s.nodes[id]
		s.mu.RUnlock()
		cs, isCache := CacheStatus{ID: id}, false
		co, isCoordinator := CoordinatorStatus{ID: id}, false
		if err := h.node.Do(func(hd node.Handler) {
			if c := site.Causal(hd); c != nil {
				cs.Metrics, isCache = c.CacheMetrics()
				co.Metrics, isCoordinator = c.CoordinatorMetrics()
			}
		}); err != nil {
			failed := cmp.Or(h.node.Err(), h.engine.Err(), err).Error()
			cs.Failed, isCache = failed, id == topology.NodeID(causal.Site(id), causal.CacheName)
			co.Failed, isCoordinator = failed, id == topology.NodeID(causal.Site(id), causal.CoordinatorName)
		}
		if isCache {
			caches = append(caches, cs)
		}
		if isCoordinator {
			coords = append(coords, co)
		}
	}
	return caches, coords
}

// configStatus returns the site's configuration member's status, nil if
// the site has none.
func (s *Server) configStatus() *ConfigStatus {
	s.mu.RLock()
	var h *hosted
	var id wire.NodeID
	for nid, n := range s.nodes {
		if n.member != nil {
			h, id = n, nid
		}
	}
	s.mu.RUnlock()
	if h == nil {
		return nil
	}
	cs := &ConfigStatus{ID: id}
	if err := h.node.Do(func(node.Handler) { cs.Status, cs.Metrics = h.member.Status(), h.member.Metrics() }); err != nil {
		cs.Failed = cmp.Or(h.node.Err(), h.engine.Err(), err).Error()
	}
	return cs
}
