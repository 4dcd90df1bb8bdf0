package bench

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/cosla/cosla/internal/core/clientcore"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/lab/adapters"
	"github.com/cosla/cosla/internal/lab/driver"
	"github.com/cosla/cosla/internal/runtime/cluster"
	"github.com/cosla/cosla/internal/runtime/topology"
	"github.com/cosla/cosla/sla"
)

// Strength is how strong a run asks its reads or writes to be. Each
// System maps it to an option of its own (System.Plan); the empty
// Strength is the system's default.
type Strength string

// The strengths.
const (
	// Weak: a store's weakest option, its default (a Redis replica, an
	// etcd serializable read, a PostgreSQL standby; asynchronous writes);
	// on cosla an eventual Get at the closest node.
	Weak Strength = "weak"
	// Strong: a store's strongest option (the Redis or PostgreSQL
	// primary, an etcd linearizable read; writes that wait for the
	// replica); on cosla a strong Get at the primary.
	Strong Strength = "strong"
)

// ParseStrength returns the strength of that name, weak or strong.
func ParseStrength(name string) (Strength, error) {
	switch s := Strength(name); s {
	case Weak, Strong:
		return s, nil
	}
	return "", fmt.Errorf("%w: strength %q, want weak or strong", ErrInvalid, name)
}

// A System is a store that runs measure, open for as many runs as its
// user makes: servers started for it, or servers it reaches. Its Close
// stops what it started.
type System interface {
	// Name names it: cosla, cosla-nofsync, redis, etcd, postgres.
	Name() string
	// Plan returns the target of a run on loop (ops cut short when ctx
	// is cancelled, where the target can), and the options that make the
	// run's reads and writes as strong as asked, with their Setup; the
	// caller sets the rest of the Options.
	Plan(ctx context.Context, loop *driver.Loop, read, write Strength) (driver.Target, Options, error)
	Close() error
}

// The systems that are cosla: a cluster, and one started without fsync
// (server.Options.UnsafeNoFsync), to measure what durability costs.
const (
	SystemCosla        = "cosla"
	SystemCoslaNoFsync = "cosla-nofsync"
)

// SystemNames lists the systems OpenSystem knows: cosla's, then the
// stores of adapters' registry.
func SystemNames() []string {
	names := []string{SystemCosla, SystemCoslaNoFsync}
	for _, s := range adapters.Stores() {
		names = append(names, s.Name)
	}
	return names
}

// SystemOptions say where OpenSystem finds or starts a system.
type SystemOptions struct {
	// Dir is where the servers of a system started here run, in a new
	// directory Dir/NAME-* of their own, so that runs in one Dir never
	// meet an earlier run's data: a store's (adapters.Start), or a
	// one-site cosla cluster's (topology.Local, cluster.Start). The
	// caller keeps it until Close returns.
	Dir string
	// Connect lists the addresses of a store's servers that the user
	// runs (adapters.Connect, adapters.StoreInfo.Addrs): they are used
	// instead of starting servers. Not for cosla.
	Connect []string
	// ClusterDir is the directory of a running cosla cluster (`cosla
	// cluster up`) that system cosla uses instead of starting one; Site
	// and Table are its client site and table, by default the cluster's
	// first site and the table it created. cosla-nofsync always starts
	// its own.
	ClusterDir string
	// ClientConfig is the client config file of a cosla cluster on
	// several hosts (package clientfile), used as ClusterDir is.
	ClientConfig string
	Site, Table  string
	// Cosla is the SLA and strategy of cosla's Gets in a run that asks
	// for no read strength. Default: those of Weak.
	Cosla driver.Cosla
	// OpenTimeout bounds the opening of a cosla client, once per run
	// (driver.HostTarget.OpenTimeout). Default 30s.
	OpenTimeout time.Duration
	// Binary is the cosla executable a started cluster runs `serve` with
	// (cluster.Options.Binary). Default: this process's executable.
	Binary string
	// Logger receives a started cluster's supervisor logs. Default:
	// discard.
	Logger *slog.Logger
}

// OpenSystem starts, or connects to, the system of that name (one of
// SystemNames) as o says. The caller closes it, even after a failed run.
func OpenSystem(ctx context.Context, name string, o SystemOptions) (System, error) {
	switch name {
	case SystemCosla, SystemCoslaNoFsync:
		if len(o.Connect) > 0 {
			return nil, fmt.Errorf("%w: %s: a cosla cluster is reached through its directory (ClusterDir), not addresses", ErrInvalid, name)
		}
		return openCosla(ctx, name, o)
	}
	if _, err := adapters.Lookup(name); err != nil {
		return nil, fmt.Errorf("%w: system %q, want %s", ErrInvalid, name, strings.Join(SystemNames(), ", "))
	}
	if len(o.Connect) > 0 {
		s, err := adapters.Connect(ctx, name, o.Connect)
		if err != nil {
			return nil, err
		}
		return NewStoreSystem(s), nil
	}
	dir, err := systemDir(o.Dir, name)
	if err != nil {
		return nil, err
	}
	var s adapters.Store
	servers, err := startedGroups(func() (err error) {
		s, err = adapters.Start(ctx, name, dir)
		return err
	})
	if err != nil {
		return nil, err
	}
	return storeSystem{store: s, servers: servers}, nil
}

// systemDir makes the directory of a system started in dir.
func systemDir(dir, name string) (string, error) {
	if dir == "" {
		return "", fmt.Errorf("%w: %s: no directory to start its servers in", ErrInvalid, name)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("bench: %w", err)
	}
	d, err := os.MkdirTemp(dir, name+"-")
	if err != nil {
		return "", fmt.Errorf("bench: %w", err)
	}
	return d, nil
}

// NewStoreSystem is the System of a store of package adapters, under the
// store's name. Close closes the store. Its servers' CPU is not measured:
// they are not known to be this process's.
func NewStoreSystem(s adapters.Store) System { return storeSystem{store: s} }

type storeSystem struct {
	store adapters.Store
	// servers are the process groups of the servers OpenSystem started.
	servers []int
}

func (s storeSystem) Name() string { return s.store.Name() }
func (s storeSystem) Close() error { return s.store.Close() }

// Plan implements System: a weak read or write takes the store's first
// (weakest) option, a strong one its last (package adapters).
func (s storeSystem) Plan(ctx context.Context, loop *driver.Loop, read, write Strength) (driver.Target, Options, error) {
	r, w := pickOption(s.store.ReadOptions(), read), pickOption(s.store.WriteOptions(), write)
	return &driver.StoreTarget{Loop: loop, Store: s.store, Ctx: ctx},
		Options{ReadOption: r, WriteOption: w, Setup: Setup{Target: s.store.Name(), Read: r, Write: w, Transport: "plaintext"},
			Servers: s.servers}, nil
}

func pickOption(options []string, s Strength) string {
	switch {
	case len(options) == 0:
		return ""
	case s == Strong:
		return options[len(options)-1]
	}
	return options[0]
}

// coslaSystem is a cosla cluster, reached from one client site.
type coslaSystem struct {
	name string
	// nodes are the node addresses a client at a site dials.
	nodes       func(site string) (map[string]string, error)
	tls         *tls.Config
	site, table string
	def         driver.Cosla
	openTimeout time.Duration
	// cluster is the cluster started for the system, nil for a running
	// one.
	cluster *cluster.Cluster
}

// The Gets of Weak and Strong on cosla: any version from the closest
// node, the latest from the primary.
var (
	coslaWeak = driver.Cosla{SLA: sla.SLA{{Consistency: sla.EventualConsistency, Latency: sla.Unbounded, Utility: 1}},
		Strategy: clientcore.Closest}
	coslaStrong = driver.Cosla{SLA: sla.SLA{{Consistency: sla.StrongConsistency, Latency: sla.Unbounded, Utility: 1}},
		Strategy: clientcore.Primary}
)

func openCosla(ctx context.Context, name string, o SystemOptions) (System, error) {
	s := &coslaSystem{name: name, site: o.Site, table: o.Table, def: o.Cosla, openTimeout: o.OpenTimeout}
	if len(s.def.SLA) == 0 {
		s.def = coslaWeak
	}
	switch {
	case name == SystemCosla && (o.ClientConfig != "" || o.ClusterDir != ""):
		a, err := cluster.Reach(o.ClusterDir, o.ClientConfig)
		if err != nil {
			return nil, err
		}
		s.nodes, s.tls, s.site, s.table = a.Nodes, a.TLS, cmp.Or(s.site, a.DefaultSite), cmp.Or(s.table, a.Table)
		if s.table == "" {
			return nil, fmt.Errorf("%w: %s: %s names no table", ErrInvalid, name, o.ClientConfig)
		}
	default:
		if o.Site != "" || o.Table != "" {
			return nil, fmt.Errorf("%w: %s: a site and a table are chosen on a running cluster only", ErrInvalid, name)
		}
		dir, err := systemDir(o.Dir, name)
		if err != nil {
			return nil, err
		}
		// In plain text, as the other stores are reached: a comparison
		// on one machine measures the stores, not TLS. A running cluster
		// (ClusterDir, ClientConfig) is reached as it runs.
		c, err := cluster.Start(ctx, cluster.Options{Dir: dir, Topology: topology.Local(), Fresh: true, Insecure: true,
			UnsafeNoFsync: name == SystemCoslaNoFsync, Binary: o.Binary, Logger: o.Logger})
		if err != nil {
			return nil, fmt.Errorf("bench: starting %s: %w", name, err)
		}
		s.cluster = c
		info := c.Info()
		a, err := info.Access()
		if err != nil {
			return nil, errors.Join(fmt.Errorf("bench: %s: %w", name, err), s.Close())
		}
		s.nodes, s.tls, s.site, s.table = a.Nodes, a.TLS, a.DefaultSite, a.Table
	}
	if _, err := s.nodes(s.site); err != nil {
		return nil, errors.Join(fmt.Errorf("%w: %s: %w", ErrInvalid, name, err), s.Close())
	}
	return s, nil
}

func (s *coslaSystem) Name() string { return s.name }

// Close stops the cluster started for the system.
func (s *coslaSystem) Close() error {
	if s.cluster != nil {
		s.cluster.Close()
	}
	return nil
}

// Plan implements System. Every cosla Put is the same, whatever write
// asks: acknowledged once the primary has synced it to its log, or, on
// cosla-nofsync, written without a sync.
func (s *coslaSystem) Plan(_ context.Context, loop *driver.Loop, read, _ Strength) (driver.Target, Options, error) {
	c := s.def
	switch read {
	case Weak:
		c = coslaWeak
	case Strong:
		c = coslaStrong
	}
	c.Policy = s.def.Policy
	write := "durable"
	if s.name == SystemCoslaNoFsync {
		write = "no-fsync"
	}
	if p := c.Policy; p.Write != (clientcore.Choice{}) {
		write += ", level " + p.Write.String()
	}
	if c.PutBound != wire.NoBound {
		write += ", bound " + c.PutBound.String()
	}
	transport := "TLS"
	if s.tls == nil {
		transport = "plaintext"
	}
	return &driver.HostTarget{Loop: loop, Nodes: s.nodes, TLS: s.tls, Table: s.table, OpenTimeout: s.openTimeout},
		Options{Site: s.site, Cosla: c, Setup: Setup{Target: s.name, Read: coslaReadLabel(c), Write: write, Transport: transport},
			Servers: s.servers()}, nil
}

// servers returns the process groups of the started cluster's site
// processes, as they run now: the supervisor restarts a site that dies
// under a new pid, each the leader of its own group. None for a running
// cluster.
func (s *coslaSystem) servers() []int {
	if s.cluster == nil {
		return nil
	}
	var groups []int
	for _, site := range s.cluster.Info().Sites {
		if site.PID > 0 {
			groups = append(groups, site.PID)
		}
	}
	return groups
}

// coslaReadLabel names a Gets' configuration: the consistency of an SLA
// of one unbounded subSLA, else the SLA in quotes, then the strategy in
// parentheses: "eventual (closest)".
// With read levels or a delay it adds them: "eventual (closest), level
// quorum".
func coslaReadLabel(c driver.Cosla) string {
	label := fmt.Sprintf("%q (%s)", c.SLA.String(), c.Strategy)
	if len(c.SLA) == 1 && c.SLA[0].Latency == sla.Unbounded {
		label = fmt.Sprintf("%s (%s)", c.SLA[0].Consistency, c.Strategy)
	}
	if p := c.Policy; p.Read != (clientcore.Choice{}) {
		label += ", level " + p.Read.String()
	}
	if c.Policy.Delay > 0 {
		label += ", delay " + c.Policy.Delay.String()
	}
	if c.Get.Bound != wire.NoBound {
		label += ", bound " + c.Get.Bound.String()
	}
	return label
}

// CheckNames reports the first name that is not a system OpenSystem
// knows, or that is repeated.
func CheckNames(names []string) error {
	for i, n := range names {
		if !slices.Contains(SystemNames(), n) {
			return fmt.Errorf("%w: system %q, want %s", ErrInvalid, n, strings.Join(SystemNames(), ", "))
		}
		if slices.Contains(names[:i], n) {
			return fmt.Errorf("%w: system %s given twice", ErrInvalid, n)
		}
	}
	return nil
}
