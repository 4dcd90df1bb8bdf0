// Package cluster runs a whole multi-site cosla cluster on one machine, as
// `cosla cluster up` and `cosla demo` do: one `cosla serve` process per
// site with storage nodes, each behind real TCP, and the wide-area network
// between sites (and from client-only sites) emulated by package wan. A
// supervisor, this package's Cluster, owns the emulated links, starts and
// stops the processes, creates the default table and answers a small
// control API (status, link changes, shutdown) on loopback HTTP.
//
// Every path between two sites goes through the link of the sending site:
// a node or client at site A reaches a node at site B through the proxy
// A->B, which delays bytes both ways by half the topology's round-trip time
// between A and B. Nodes of one site talk directly.
package cluster

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/cosla/cosla/internal/core/causal"
	"github.com/cosla/cosla/internal/core/clientcore"
	"github.com/cosla/cosla/internal/core/config"
	"github.com/cosla/cosla/internal/core/replica"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/runtime/certs"
	"github.com/cosla/cosla/internal/runtime/hostclient"
	"github.com/cosla/cosla/internal/runtime/private"
	"github.com/cosla/cosla/internal/runtime/server"
	"github.com/cosla/cosla/internal/runtime/site"
	"github.com/cosla/cosla/internal/runtime/topology"
	"github.com/cosla/cosla/internal/runtime/wan"
)

// Options configures a Cluster.
type Options struct {
	// Dir holds the cluster's data, configs, logs and InfoFile. Default:
	// DefaultDir().
	Dir string
	// Topology is the sites and links. Required.
	Topology topology.Topology
	// Table is the table created at start. Default "usertable".
	Table string
	// Placement places Table's tablets and replicas on the topology's
	// storage nodes (see topology.Placement and its defaults). The zero
	// value is Pileus's layout: one tablet, its primary the first storage
	// node of the first site with storage nodes and one secondary at every
	// other such site.
	Placement topology.Placement
	// PullInterval is how often the table's secondaries pull. Default 1m.
	PullInterval time.Duration
	// Push also streams every Put to the secondaries at once.
	Push bool
	// WriteLevel is the table's least write level (cosla.TableSpec).
	WriteLevel wire.Level
	// Insecure runs the cluster without TLS; each site warns at start.
	// Otherwise Start writes a certificate authority, a node certificate
	// per site and the default client certificate (certs.DefaultClient,
	// the CLI's) into certs.ClusterDir(Dir), keeping those of a previous
	// run, and every connection is mutual TLS.
	Insecure bool
	// Clients names more clients to issue certificates to, each of its
	// own (certs.IssueClient): a client may send only under the name its
	// certificate carries.
	Clients []string
	// UnsafeNoFsync starts every site without fsync (server.Options), to
	// measure what durability costs.
	UnsafeNoFsync bool
	// FaultInjection lets SetFaults inject faults into the sites'
	// processes (server.Options.FaultInjection): for fault campaigns
	// only.
	FaultInjection bool
	// Causal configures every site's part of causal tables
	// (server.Options).
	Causal server.CausalOptions
	// Config sets every site's options of the configuration service
	// (server.ConfigOptions: leases, SLA-driven reconfiguration); its
	// Voters are always the topology's ConfigSites.
	Config server.ConfigOptions
	// Fresh deletes the data of a previous run in Dir before starting.
	// Otherwise the sites recover it, and an existing Table is kept as it
	// was created.
	Fresh bool
	// PortBase, if not 0, fixes the ports of the sites' processes: the
	// i-th site with storage nodes, in the topology's order, listens on
	// PortBase+2i (nodes and clients) and PortBase+2i+1 (HTTP), so the status page and
	// Prometheus targets stay the same across restarts. Default: free
	// ports chosen at start. The emulated links and the control API take
	// free ports either way.
	PortBase int
	// Binary is the cosla executable to run `serve` with. Default: this
	// process's own executable.
	Binary string
	// Logger receives the supervisor's logs. Default: discard.
	Logger *slog.Logger
}

// Cluster is a running local cluster.
type Cluster struct {
	opts    Options
	table   wire.Layout // the table created at start
	info    Info
	net     *wan.Net
	control *http.Server
	stop    chan struct{}

	mu    sync.Mutex
	procs map[string]*proc // by site
	// deaths counts each site's process deaths in a row (supervise.go).
	deaths map[string]uint
	links  map[[2]string]wan.Settings
	closed bool
}

// ensureDefaults fills in the options Start takes as optional.
func (o *Options) ensureDefaults() error {
	if o.Dir == "" {
		o.Dir = DefaultDir()
	}
	// Absolute: a site's serve config names its data and certificates
	// under Dir, and cosla serve takes a relative path in its config as
	// relative to the config's own directory, which would take a relative
	// Dir twice (experiment run --mode cluster's default output).
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	o.Dir = dir
	if o.Table == "" {
		o.Table = "usertable"
	}
	if o.PullInterval == 0 {
		o.PullInterval = time.Minute
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Binary == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("cluster: find the cosla binary: %w", err)
		}
		o.Binary = exe
	}
	return nil
}

// Start builds and starts the cluster and returns once every process
// answers and the default table exists.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	if err := opts.Topology.Validate(); err != nil {
		return nil, err
	}
	if err := opts.ensureDefaults(); err != nil {
		return nil, err
	}
	topo := opts.Topology
	storageSites := storageSites(topo)
	if len(storageSites) == 0 {
		return nil, fmt.Errorf("%w: %s: no site has storage nodes", topology.ErrInvalid, topo.Name)
	}
	table, err := tableLayout(topo, opts)
	if err != nil {
		return nil, err
	}
	if err := CheckClients(opts.Clients, opts.Insecure); err != nil {
		return nil, err
	}
	if err := claimDir(ctx, opts.Dir, opts.Logger); err != nil {
		return nil, err
	}
	if opts.Fresh {
		for _, s := range topo.Sites {
			if err := os.RemoveAll(filepath.Join(opts.Dir, s.Name)); err != nil {
				return nil, err
			}
		}
	}
	c := &Cluster{opts: opts, table: table, stop: make(chan struct{}), procs: map[string]*proc{}, deaths: map[string]uint{}, links: map[[2]string]wan.Settings{}}
	c.info = Info{Dir: opts.Dir, PID: os.Getpid(), Topology: topo.Name, Clients: map[string]map[string]string{},
		Table: opts.Table, DefaultSite: topo.Sites[0].Name, Insecure: opts.Insecure, Causal: len(topo.Rings) > 0}
	if !opts.Insecure {
		var sites []string
		for _, s := range storageSites {
			sites = append(sites, s.Name)
		}
		if err := issueCerts(certs.ClusterDir(opts.Dir), sites, opts.Clients); err != nil {
			return nil, err
		}
	}
	if c.net, err = wan.NewNet(wan.Options{Logger: opts.Logger.With("component", "wan")}); err != nil {
		return nil, err
	}
	if err := c.start(ctx, storageSites); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// claimDir makes the cluster directory, refusing one a live cluster uses
// and stopping the site processes of one whose supervisor died.
func claimDir(ctx context.Context, dir string, log *slog.Logger) error {
	if pid, running := Running(dir); running {
		return fmt.Errorf("cosla: a cluster is already running in %s (pid %d); stop it with: cosla cluster down --dir %s", dir, pid, dir)
	}
	if err := StopOrphans(ctx, dir, func(msg string) { log.Warn("cluster: " + msg) }); err != nil {
		return err
	}
	_ = os.Remove(filepath.Join(dir, InfoFile))
	return private.MkdirAll(dir)
}

func (c *Cluster) start(ctx context.Context, storageSites []topology.Site) error {
	topo := c.opts.Topology
	// Addresses: each serve process's own listeners, then one link from
	// every site to every storage site, its own included: a client reaches
	// the nodes of its own site over a link with the topology's LocalRTT,
	// which a scenario may slow down too (Pileus 5.4). With a LocalRTT of
	// 0 there is nothing to emulate there, and the site's clients dial its
	// nodes directly, without the proxy's extra hop. A serve process's
	// ports stay reserved (bound here) until it starts: released at once,
	// one went to a later listener of this process in about one start in
	// a hundred, and that site never came up.
	reserved, err := reservePorts(storageSites, c.opts.PortBase)
	defer func() {
		for _, ls := range reserved {
			closeAll(ls)
		}
	}()
	if err != nil {
		return err
	}
	for _, s := range storageSites {
		ls := reserved[s.Name]
		c.info.Sites = append(c.info.Sites, SiteInfo{Name: s.Name, Nodes: s.Replicas, Voter: slices.Contains(topo.ConfigSites(), s.Name),
			Addr: ls[0].Addr().String(), HTTP: ls[1].Addr().String()})
	}
	for _, from := range topo.Sites {
		nodes := map[string]string{}
		for _, to := range c.info.Sites {
			if from.Name == to.Name && topo.LocalRTT == 0 {
				for _, n := range served(to.Nodes, to.Voter) {
					nodes[to.Name+"/"+n] = to.Addr
				}
				continue
			}
			settings := wan.Settings{Latency: topo.LocalRTT / 2, Jitter: topo.LocalJitter}
			if from.Name != to.Name {
				l, _ := topo.Link(from.Name, to.Name)
				settings = wan.Settings{Latency: l.RTT / 2, Jitter: l.Jitter}
			}
			link, err := c.net.Add(wan.Key{From: from.Name, To: to.Name, Target: to.Name}, to.Addr)
			if err != nil {
				return err
			}
			if err := link.Set(settings); err != nil {
				return err
			}
			c.links[pairKey(from.Name, to.Name)] = settings
			for _, n := range served(to.Nodes, to.Voter) {
				nodes[to.Name+"/"+n] = link.Addr()
			}
		}
		c.info.Clients[from.Name] = nodes
	}
	for i := range c.info.Sites {
		site := &c.info.Sites[i]
		closeAll(reserved[site.Name])
		delete(reserved, site.Name)
		if err := c.spawn(site); err != nil {
			return err
		}
	}
	for _, s := range c.info.Sites {
		if err := waitHealthy(ctx, s.HTTP); err != nil {
			log := filepath.Join(c.opts.Dir, s.Name, "serve.log")
			return fmt.Errorf("cluster: site %s did not start: %w; the end of %s:\n%s", s.Name, err, log, logTail(log, 10))
		}
	}
	if err := c.createTable(ctx); err != nil {
		return err
	}
	// Ready once every primary holds its first lease (/healthz waits for
	// it), so that the first Puts need no retry.
	for _, s := range c.info.Sites {
		if err := waitHealthy(ctx, s.HTTP); err != nil {
			return fmt.Errorf("cluster: site %s: its primaries got no lease: %w", s.Name, err)
		}
	}
	if err := c.serveControl(); err != nil {
		return err
	}
	return writeInfo(&c.info)
}

// reservePorts binds each storage site's transport and HTTP listeners on
// loopback: at base+2i and base+2i+1 for the i-th site, or free ports
// when base is 0. An error names the port that is taken and its use; the
// listeners bound so far are returned with it, for the caller to close.
func reservePorts(storageSites []topology.Site, base int) (map[string][]net.Listener, error) {
	if base != 0 && (base < 1 || base+2*len(storageSites)-1 > 65535) {
		return nil, fmt.Errorf("%w: port base %d: want one from 1 to %d for %d sites", ErrBadPorts, base, 65535-2*len(storageSites)+1, len(storageSites))
	}
	reserved := map[string][]net.Listener{}
	for i, s := range storageSites {
		for j, use := range []string{"transport", "HTTP"} {
			port := 0
			if base != 0 {
				port = base + 2*i + j
			}
			l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
			if err != nil {
				if base != 0 {
					err = fmt.Errorf("%w: port %d, for site %s's %s, is taken: %w", ErrBadPorts, port, s.Name, use, err)
				}
				return reserved, err
			}
			reserved[s.Name] = append(reserved[s.Name], l)
		}
	}
	return reserved, nil
}

// ErrBadPorts is wrapped by the errors of Options.PortBase: out of range,
// or a port taken.
var ErrBadPorts = errors.New("cosla: cluster ports unusable")

// CheckPorts reports whether the ports Options.PortBase base gives topo's
// sites are free now, naming the first that is not.
func CheckPorts(topo topology.Topology, base int) error {
	reserved, err := reservePorts(storageSites(topo), base)
	for _, ls := range reserved {
		closeAll(ls)
	}
	return err
}

// storageSites are the sites of topo with storage nodes, in its order.
func storageSites(topo topology.Topology) []topology.Site {
	var sites []topology.Site
	for _, s := range topo.Sites {
		if len(s.Replicas) > 0 {
			sites = append(sites, s)
		}
	}
	return sites
}

// served returns the nodes a site's serve process hosts: its storage
// nodes, then its coordinator and cache for causal tables (package causal),
// and at a voter site its member of the configuration service (package
// site's recipe).
func served(storage []string, voter bool) []string {
	nodes := append(slices.Clone(storage), causal.CoordinatorName, causal.CacheName)
	if voter {
		nodes = append(nodes, config.MemberName)
	}
	return nodes
}

func pairKey(a, b string) [2]string {
	if b < a {
		a, b = b, a
	}
	return [2]string{a, b}
}

// spawn writes a site's serve config and starts its process.
func (c *Cluster) spawn(s *SiteInfo) error {
	dir := filepath.Join(c.opts.Dir, s.Name)
	if err := private.MkdirAll(dir); err != nil {
		return err
	}
	peers := map[wire.NodeID]string{}
	for id, addr := range c.info.Clients[s.Name] {
		if site, _, _ := strings.Cut(id, "/"); site != s.Name {
			peers[wire.NodeID(id)] = addr
		}
	}
	// Every other site's HTTP address, so that each site's status page
	// shows the whole cluster. The supervisor and the sites share the
	// machine's loopback, so no emulated link delays these fetches: the
	// page shows the WAN in the round trips the nodes measure instead.
	c.mu.Lock()
	supervisor := server.SupervisorInfo{Restarts: s.Restarts, LastExit: s.LastExit}
	c.mu.Unlock()
	statusPeers := map[string]string{}
	for _, o := range c.info.Sites {
		if o.Name != s.Name {
			statusPeers[o.Name] = o.HTTP
		}
	}
	cfg := server.Options{Site: s.Name, Nodes: s.Nodes, Listen: s.Addr, HTTPListen: s.HTTP, StatusPeers: statusPeers,
		DataDir: dataDir(c.opts.Dir, s.Name), Peers: peers, Insecure: c.opts.Insecure, UnsafeNoFsync: c.opts.UnsafeNoFsync,
		Causal: c.opts.Causal, Config: c.opts.Config, Supervisor: supervisor, FaultInjection: c.opts.FaultInjection}
	cfg.Config.Voters = c.opts.Topology.ConfigSites()
	if cfg.Causal.RTT == nil {
		cfg.Causal.RTT = site.TopologyRTTs(c.opts.Topology, s.Name)
	}
	if !c.opts.Insecure {
		cfg.TLS = server.TLSFiles(certs.NodeFiles(certs.ClusterDir(c.opts.Dir), s.Name))
	}
	data, err := yaml.Marshal(cfg)
	if err != nil {
		return err
	}
	path := filepath.Join(dir, "serve.yaml")
	if err := private.WriteFile(path, data); err != nil {
		return err
	}
	logFile, err := private.OpenFile(filepath.Join(dir, "serve.log"), os.O_WRONLY|os.O_APPEND)
	if err != nil {
		return err
	}
	cmd := exec.Command(c.opts.Binary, "serve", "--config", path)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Its own process group: a Ctrl-C meant for the supervisor reaches the
	// children only through the supervisor's orderly shutdown.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("cluster: start site %s: %w", s.Name, err)
	}
	logFile.Close()
	p := &proc{cmd: cmd, done: make(chan struct{}), started: time.Now()}
	c.mu.Lock()
	s.PID = cmd.Process.Pid
	c.procs[s.Name] = p
	c.mu.Unlock()
	go c.watch(s, p)
	c.opts.Logger.Info("cluster: started site", "site", s.Name, "pid", cmd.Process.Pid, "addr", s.Addr)
	return nil
}

// Table is where the table a cluster creates goes and its least write
// level, as CheckTable and SetWriteLevel read them.
type Table struct {
	Placement  topology.Placement
	WriteLevel wire.Level
	layout     wire.Layout
}

// CheckTable checks the table a cluster of topo would create, before it
// is started or planned: its placement with pull interval pull.
func CheckTable(topo topology.Topology, placement topology.Placement, pull time.Duration) (Table, error) {
	l, err := tableLayout(topo, Options{Table: "usertable", Placement: placement, PullInterval: pull})
	return Table{Placement: placement, layout: l}, err
}

// SetWriteLevel sets the table's least write level, read as wire.ParseLevel
// reads it ("" for one), after checking it against every tablet's
// replicas.
func (t *Table) SetWriteLevel(s string) error {
	if s == "" {
		return nil
	}
	level, err := wire.ParseLevel(s)
	if err != nil {
		return err
	}
	for _, tablet := range t.layout.Tablets {
		if err := level.Check(1 + len(tablet.Secondaries)); err != nil {
			return err
		}
	}
	t.WriteLevel = level
	return nil
}

// tableLayout places the table the cluster creates, as opts.Placement
// says.
func tableLayout(topo topology.Topology, opts Options) (wire.Layout, error) {
	r := wire.Replication{Mode: wire.ModePull, Interval: opts.PullInterval}
	if opts.Push {
		r.Mode = wire.ModePush
	}
	l, err := topo.Layout(opts.Table, opts.Placement, r)
	l.WriteLevel = opts.WriteLevel
	return l, err
}

func (c *Cluster) createTable(ctx context.Context) error {
	l := c.table
	// The supervisor's client sits at the first tablet's primary, or for
	// a causal table at the first site.
	site, _, _ := strings.Cut(string(l.Tablets[0].Primary), "/")
	if len(c.opts.Topology.Rings) > 0 {
		site = c.opts.Topology.Sites[0].Name
		l = CausalLayout(c.opts.Topology, l.Name, causal.Karma)
	}
	client, err := c.supervisor(site)
	if err != nil {
		return err
	}
	defer client.Close()
	err = client.CreateTable(ctx, l)
	if errors.Is(err, clientcore.ErrTableExists) {
		// The directory holds a previous run's data: keep its table, with
		// the replication settings it was created with.
		c.opts.Logger.Info("cluster: keeping the existing table", "table", l.Name)
		return nil
	}
	if err != nil {
		return fmt.Errorf("cluster: create table %s: %w", l.Name, err)
	}
	return nil
}

// supervisor opens the supervisor's client at site.
func (c *Cluster) supervisor(site string) (*hostclient.Client, error) {
	a, err := c.info.Access()
	if err != nil {
		return nil, err
	}
	nodes, err := a.Nodes(site)
	if err != nil {
		return nil, err
	}
	peers := map[wire.NodeID]string{}
	for id, addr := range nodes {
		peers[wire.NodeID(id)] = addr
	}
	// The supervisor holds the CLI's certificate: its ID is that client's,
	// with a suffix saying who it is (certs.CheckClientID).
	id := topology.NodeID(site, certs.DefaultClient+"-supervisor")
	return hostclient.Open(hostclient.Options{ID: id, Peers: peers, TLS: a.TLS, Logger: c.opts.Logger,
		Core: clientcore.Options{Measure: clientcore.MeasureNeeded}})
}

// CreateCausalTable creates another causal table over the cluster's
// rings, laid out for strategy (CausalLayout). A table of that name
// already there is kept: ErrTableExists is not an error.
func (c *Cluster) CreateCausalTable(ctx context.Context, name string, strategy causal.Strategy) error {
	if len(c.opts.Topology.Rings) == 0 {
		return fmt.Errorf("cluster: create causal table %s: the topology has no rings", name)
	}
	client, err := c.supervisor(c.opts.Topology.Sites[0].Name)
	if err != nil {
		return err
	}
	defer client.Close()
	if err := client.CreateTable(ctx, CausalLayout(c.opts.Topology, name, strategy)); err != nil && !errors.Is(err, clientcore.ErrTableExists) {
		return fmt.Errorf("cluster: create causal table %s: %w", name, err)
	}
	return nil
}

// CausalLayout is the causal table a topology with rings gets under
// strategy: under Karma each ring over its sites' storage nodes, a
// coordinator and a cache at every site (the table `cluster up` makes);
// Karma-NC without the caches; COPS-PR with every site's reads bound to
// its ring; COPS-Ideal bound too, with a ring per site (Karma 5).
func CausalLayout(topo topology.Topology, name string, strategy causal.Strategy) wire.Layout {
	rings := topo.Rings
	if strategy == causal.COPSIdeal {
		rings = nil
		for _, s := range topo.Sites {
			if len(s.Replicas) > 0 {
				rings = append(rings, []string{s.Name})
			}
		}
	}
	var wrings []wire.Ring
	for _, ring := range rings {
		r := wire.Ring{Name: strings.Join(ring, "+")}
		for _, site := range ring {
			for _, s := range topo.Sites {
				if s.Name == site {
					for _, n := range s.Replicas {
						r.Nodes = append(r.Nodes, topology.NodeID(site, n))
					}
				}
			}
		}
		wrings = append(wrings, r)
	}
	var sites []string
	for _, s := range topo.Sites {
		sites = append(sites, s.Name)
	}
	return causal.TableLayout(name, wrings, sites, strategy.Cached(), strategy.Static())
}

// Info returns the description the cluster wrote to its directory.
func (c *Cluster) Info() Info {
	c.mu.Lock()
	defer c.mu.Unlock()
	in := c.info
	in.Sites = slices.Clone(c.info.Sites)
	return in
}

// SetLink changes the emulated link between two sites, both ways.
func (c *Cluster) SetLink(a, b string, s wan.Settings) error {
	if err := s.Validate(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	key := pairKey(a, b)
	if _, ok := c.links[key]; !ok {
		if a == b {
			return fmt.Errorf("cosla: site %q's clients reach its nodes directly: the topology's local_rtt is 0, so there is no link to change", a)
		}
		return fmt.Errorf("cosla: no link between sites %q and %q", a, b)
	}
	if err := c.net.Set(a, b, s); err != nil {
		return err
	}
	c.links[key] = s
	c.opts.Logger.Info("cluster: link changed", "a", a, "b", b, "settings", s.String())
	return nil
}

// SetFaults replaces the faults injected into a site's process
// (server.Faults; the zero Faults heals them). The cluster must have been
// started with Options.FaultInjection. A process restarted since starts
// without faults.
func (c *Cluster) SetFaults(ctx context.Context, site string, f server.Faults) error {
	info := c.Info()
	i := slices.IndexFunc(info.Sites, func(s SiteInfo) bool { return s.Name == site })
	if i < 0 {
		return fmt.Errorf("cosla: no site %q with storage nodes", site)
	}
	body, err := json.Marshal(f)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+info.Sites[i].HTTP+"/faults", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("cosla: site %s: set faults: %w", site, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("cosla: site %s: set faults: %s: %s", site, resp.Status, strings.TrimSpace(string(msg)))
	}
	return nil
}

// Crash kills a site's process with SIGKILL, as a power cut would: what
// its nodes had not synced is lost.
func (c *Cluster) Crash(site string) error {
	c.mu.Lock()
	p := c.procs[site]
	delete(c.procs, site)
	c.mu.Unlock()
	if p == nil {
		return fmt.Errorf("cosla: site %q has no running process", site)
	}
	_ = p.cmd.Process.Kill()
	<-p.done
	c.opts.Logger.Info("cluster: crashed site", "site", site)
	return nil
}

// Restart starts a crashed site's process again, on its old addresses and
// data, and returns once it answers.
func (c *Cluster) Restart(ctx context.Context, site string) error {
	c.mu.Lock()
	i := slices.IndexFunc(c.info.Sites, func(s SiteInfo) bool { return s.Name == site })
	_, running := c.procs[site]
	c.mu.Unlock()
	switch {
	case i < 0:
		return fmt.Errorf("cosla: no site %q with storage nodes", site)
	case running:
		return fmt.Errorf("cosla: site %q is running", site)
	}
	if err := c.spawn(&c.info.Sites[i]); err != nil {
		return err
	}
	if err := waitHealthy(ctx, c.info.Sites[i].HTTP); err != nil {
		return fmt.Errorf("cluster: site %s did not restart: %w", site, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return writeInfo(&c.info)
}

// LinkStatus is one emulated link's settings.
type LinkStatus struct {
	A        string  `json:"a"`
	B        string  `json:"b"`
	RTTMS    float64 `json:"rtt_ms"`
	JitterMS float64 `json:"jitter_ms"`
	Down     bool    `json:"down"`
}

// SiteStatus is one site's process as the supervisor sees it.
type SiteStatus struct {
	Name string `json:"name"`
	PID  int    `json:"pid"`
	// HTTP is the address of the site's status page and /metrics.
	HTTP  string `json:"http"`
	Up    bool   `json:"up"`
	Error string `json:"error,omitempty"`
	// Restarts and LastExit are SiteInfo's: the supervisor's restarts
	// of a process that died.
	Restarts int            `json:"restarts,omitempty"`
	LastExit string         `json:"last_exit,omitempty"`
	Serve    *server.Status `json:"serve,omitempty"`
}

// Status describes the whole cluster.
type Status struct {
	Dir      string       `json:"dir"`
	Topology string       `json:"topology"`
	Sites    []SiteStatus `json:"sites"`
	Links    []LinkStatus `json:"links"`
}

// Status asks every site's process for its nodes, tablets and high
// timestamps, all at once: a stopped process (SIGSTOP) that does not
// answer before ctx ends keeps no other site from answering.
func (c *Cluster) Status(ctx context.Context) Status {
	st := Status{Dir: c.opts.Dir, Topology: c.info.Topology}
	// A restart writes a site's PID while the control API asks.
	c.mu.Lock()
	sites := slices.Clone(c.info.Sites)
	c.mu.Unlock()
	st.Sites = make([]SiteStatus, len(sites))
	var wg sync.WaitGroup
	for i, s := range sites {
		wg.Go(func() {
			ss := SiteStatus{Name: s.Name, PID: s.PID, HTTP: s.HTTP, Restarts: s.Restarts, LastExit: s.LastExit}
			var serve server.Status
			if err := getJSON(ctx, "http://"+s.HTTP+"/status", &serve); err != nil {
				ss.Error = err.Error()
			} else {
				ss.Up, ss.Serve = true, &serve
			}
			st.Sites[i] = ss
		})
	}
	wg.Wait()
	c.mu.Lock()
	for key, s := range c.links {
		st.Links = append(st.Links, LinkStatus{A: key[0], B: key[1], RTTMS: 2 * ms(s.Latency), JitterMS: ms(s.Jitter), Down: s.Down})
	}
	c.mu.Unlock()
	slices.SortFunc(st.Links, func(x, y LinkStatus) int {
		return cmp.Or(cmp.Compare(x.A, y.A), cmp.Compare(x.B, y.B))
	})
	return st
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Decisions returns the inputs of the storage nodes' recent planner
// decisions (dcon-fig11), in node order, from each site's /decisions.
func (c *Cluster) Decisions(ctx context.Context) ([]replica.Decision, error) {
	byNode := map[wire.NodeID][]replica.Decision{}
	c.mu.Lock()
	sites := slices.Clone(c.info.Sites)
	c.mu.Unlock()
	for _, s := range sites {
		var site map[wire.NodeID][]replica.Decision
		if err := getJSON(ctx, "http://"+s.HTTP+"/decisions", &site); err != nil {
			return nil, fmt.Errorf("cluster: site %s: %w", s.Name, err)
		}
		maps.Copy(byNode, site)
	}
	var out []replica.Decision
	for _, id := range slices.Sorted(maps.Keys(byNode)) {
		out = append(out, byNode[id]...)
	}
	return out, nil
}

// Wait blocks until the cluster is asked to shut down (by the control API)
// or ctx ends.
func (c *Cluster) Wait(ctx context.Context) {
	select {
	case <-c.stop:
	case <-ctx.Done():
	}
}

// Close stops every process (SIGTERM, then SIGKILL after 10 s), the links
// and the control API, and removes InfoFile. Data stays in Dir.
func (c *Cluster) Close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	procs := c.procs
	c.mu.Unlock()
	if c.control != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = c.control.Shutdown(ctx)
		cancel()
	}
	var wg sync.WaitGroup
	for site, p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.stop()
			c.opts.Logger.Info("cluster: stopped site", "site", site)
		}()
	}
	wg.Wait()
	if c.net != nil {
		_ = c.net.Close()
	}
	_ = os.Remove(filepath.Join(c.opts.Dir, InfoFile))
}

// closeAll closes listeners, releasing their ports.
func closeAll(ls []net.Listener) {
	for _, l := range ls {
		l.Close()
	}
}

// logTail returns the last n lines of a log file, or why it cannot.
func logTail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// waitHealthy polls a process's /healthz until it answers, for at most
// 30 s.
func waitHealthy(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		var ok string
		if err := get(ctx, "http://"+addr+"/healthz", func(r io.Reader) error {
			b, err := io.ReadAll(r)
			ok = string(b)
			return err
		}); err == nil && ok != "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

func get(ctx context.Context, url string, read func(io.Reader) error) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("%s: %s: %s", url, resp.Status, b)
	}
	return read(resp.Body)
}

func getJSON(ctx context.Context, url string, v any) error {
	return get(ctx, url, func(r io.Reader) error { return json.NewDecoder(r).Decode(v) })
}

// LinkRequest is the body of the control API's POST /link.
type LinkRequest struct {
	A        string  `json:"a"`
	B        string  `json:"b"`
	RTTMS    float64 `json:"rtt_ms"`
	JitterMS float64 `json:"jitter_ms"`
	Down     bool    `json:"down"`
}

func (c *Cluster) controlHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(c.Status(r.Context()))
	})
	mux.HandleFunc("POST /link", func(w http.ResponseWriter, r *http.Request) {
		var req LinkRequest
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s := wan.Settings{Latency: time.Duration(req.RTTMS / 2 * float64(time.Millisecond)),
			Jitter: time.Duration(req.JitterMS * float64(time.Millisecond)), Down: req.Down}
		if err := c.SetLink(req.A, req.B, s); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("POST /shutdown", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "stopping")
		c.mu.Lock()
		select {
		case <-c.stop:
		default:
			close(c.stop)
		}
		c.mu.Unlock()
	})
	return mux
}

// Control is a client of a running cluster's control API.
type Control struct{ addr, token string }

// Connect returns a client of the cluster running in dir, with the
// control API's token from the directory.
func Connect(dir string) (*Control, *Info, error) {
	in, err := ReadInfo(dir)
	if err != nil {
		return nil, nil, err
	}
	if in.PID > 0 && !alive(in.PID) {
		return nil, nil, fmt.Errorf("%w in %s (its supervisor, pid %d, is gone)", ErrNotRunning, dir, in.PID)
	}
	token, err := readToken(dir)
	if err != nil {
		return nil, nil, err
	}
	return &Control{addr: in.Control, token: token}, in, nil
}

// killSites signals, with SIGTERM, the site processes a cluster
// description names that are still running, and removes the description.
// It is for a cluster whose supervisor is gone; it returns the pids it
// signalled (StopOrphans also waits for them).
func killSites(in *Info) []int {
	var pids []int
	for _, s := range in.Sites {
		if s.PID > 0 && siteProcess(in.Dir, s.PID) && syscall.Kill(s.PID, syscall.SIGTERM) == nil {
			pids = append(pids, s.PID)
		}
	}
	_ = os.Remove(filepath.Join(in.Dir, InfoFile))
	return pids
}

// Status fetches the cluster's status.
func (c *Control) Status(ctx context.Context) (Status, error) {
	var st Status
	resp, err := c.request(ctx, http.MethodGet, "/status", nil)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// SetLink changes a link.
func (c *Control) SetLink(ctx context.Context, req LinkRequest) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	return c.post(ctx, "/link", body)
}

// Shutdown asks the supervisor to stop the cluster.
func (c *Control) Shutdown(ctx context.Context) error { return c.post(ctx, "/shutdown", []byte("{}")) }

func (c *Control) post(ctx context.Context, path string, body []byte) error {
	resp, err := c.request(ctx, http.MethodPost, path, body)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// WaitStopped waits until the supervisor with the given pid has exited,
// for at most the context's time.
func WaitStopped(ctx context.Context, pid int) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for alive(pid) {
		select {
		case <-ctx.Done():
			return fmt.Errorf("cosla: cluster supervisor (pid %s) still running: %w", strconv.Itoa(pid), ctx.Err())
		case <-tick.C:
		}
	}
	return nil
}
