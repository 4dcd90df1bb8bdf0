package experiment

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/cosla/cosla/internal/core/causal"
	"github.com/cosla/cosla/internal/core/clientcore"
	"github.com/cosla/cosla/internal/lab/driver"
	"github.com/cosla/cosla/internal/lab/workload"
	"github.com/cosla/cosla/internal/runtime/cluster"
	"github.com/cosla/cosla/internal/runtime/server"
	"github.com/cosla/cosla/internal/runtime/topology"
	"github.com/cosla/cosla/sla"
)

// A causal table (Karma) on a local cluster (RunCluster): every site's
// serve process hosts its storage nodes, its client coordinator and its
// cache (the cluster's topology has the scenario's rings), and each
// client site's sessions are a client core in
// this process (driver.HostTarget), as the simulator's are client core
// nodes (driver.SimTarget). The same recorder computes the same figures
// (causal.go).
//
// A strategy is a table's layout (causal.Strategy): each unit runs on a
// fresh table of its own over the same storage nodes, laid out for its
// strategy (cluster.CausalTableSpec), so that no run starts with another's
// caches, write buffers or keys, as each run in the simulator starts in
// a fresh world. The strategies run one after another, as in the
// simulator, so that each has the machine to itself. The scenario's
// causal options reach the serve processes (serverOptions) and the
// client cores (newRun).

// serverOptions are the options of the sites' causal cores.
func (c *CausalSpec) serverOptions() server.CausalOptions {
	return server.CausalOptions{ReadTimeout: c.ReadTimeout, Resend: c.Resend, CacheCapacity: c.CacheCapacity, MaxBuffered: c.MaxBuffered}
}

// table is the unit's own table on the cluster (createTable), named
// after the unit and its strategy.
func (karmaPlugin) table(u *unit, info cluster.Info) string {
	return fmt.Sprintf("%s-%d-%s", info.Table, u.index, u.runs[0].r.Strategy)
}

// topology gets the scenario's rings (the cluster then creates its
// table as a causal table) and keeps cluster.replicas_per_site storage
// nodes per site.
func (karmaPlugin) topology(s *Scenario, t topology.Topology) topology.Topology {
	t = trimReplicas(t, s.Cluster.ReplicasPerSite)
	t.Rings = s.Causal.Rings
	return t
}

func (karmaPlugin) startCluster(s *Scenario, o *cluster.Options) string {
	o.Causal = s.Causal.serverOptions()
	return fmt.Sprintf("starting the %s cluster in %s (a causal table over the rings %v, %d storage node(s) per site)", s.topo.Name, o.Dir, s.Causal.Rings, clusterStorageNodes(s))
}

// prepareCluster creates the unit's table and loads its keys through
// the rings, unless causal.no_load says not to.
func (karmaPlugin) prepareCluster(ctx context.Context, u *unit, c *cluster.Cluster, t timing, progress func(string)) error {
	s := u.s
	if err := u.createTable(ctx, c); err != nil {
		return err
	}
	if !s.Causal.NoLoad && s.Workload.Keys > 0 {
		progress(fmt.Sprintf("%sloading %d keys through the rings, %d sessions at each client site", unitLabel(u), s.Workload.Keys, s.Causal.LoadSessions))
		if err := loadCausalCluster(ctx, u, c.Info()); err != nil {
			return fmt.Errorf("load: %w", err)
		}
	}
	if st, _ := causal.ParseStrategy(u.runs[0].r.Strategy); st == causal.Karma {
		if n := min(s.Cluster.warmKeys(s.Causal.WarmKeys), s.Workload.Keys); n > 0 {
			progress(fmt.Sprintf("%swarming the caches: %d keys read at each client site", unitLabel(u), n))
			if _, err := driveCluster(ctx, c.Info(), u.table(c.Info()), causalWarmGroups(s, n), n*len(s.Clients)); err != nil {
				return fmt.Errorf("warming the caches: %w", err)
			}
		}
	}
	u.own = newCausalUnit(u, t)
	return nil
}

func (karmaPlugin) caveats(s *Scenario) []string { return causalClusterCaveats(s) }

// createTable creates a causal unit's table on the cluster.
func (u *unit) createTable(ctx context.Context, c *cluster.Cluster) error {
	st, err := causal.ParseStrategy(u.runs[0].r.Strategy)
	if err != nil {
		return err
	}
	return c.CreateCausalTable(ctx, u.table(c.Info()), st)
}

// causalSessionSLA is the SLA of a client core's session on a causal
// table: causal reads, with no latency bound, so that every read that
// succeeds meets it (the figures judge latency themselves).
var causalSessionSLA = sla.SLA{{Consistency: sla.CausalConsistency, Latency: sla.Unbounded, Utility: 1}}

// causalClusterCaveats says what a local cluster does differently from
// the simulator with a causal table.
func causalClusterCaveats(s *Scenario) []string {
	var out []string
	c := s.Causal
	if c.Machines > 0 {
		out = append(out, fmt.Sprintf("causal.machines %d: not emulated on a cluster, whose processes share this machine's cores", c.Machines))
	}
	if n := s.Cluster.ReplicasPerSite; n > 0 && n < storageNodes(s) {
		out = append(out, fmt.Sprintf("%d storage node(s) per site on the cluster (cluster.replicas_per_site), of the topology's %d", n, storageNodes(s)))
	}
	if f := s.Cluster.SessionsScale; f > 0 && f != 1 {
		out = append(out, fmt.Sprintf("sessions times %g on the cluster (cluster.sessions_scale): the sweep's points keep their names", f))
	}
	out = append(out, "a Put's restricted flag is its session's binding as its reads left it (the client core does not report it): an upper bound")
	return out
}

// trimReplicas keeps the first n storage nodes of every site (all of
// them for n 0).
func trimReplicas(t topology.Topology, n int) topology.Topology {
	if n <= 0 {
		return t
	}
	t.Sites = slices.Clone(t.Sites)
	for i := range t.Sites {
		if r := t.Sites[i].Replicas; len(r) > n {
			t.Sites[i].Replicas = slices.Clone(r[:n])
		}
	}
	return t
}

// clusterStorageNodes is the storage nodes of the first site that has
// some, on the cluster.
func clusterStorageNodes(s *Scenario) int {
	n := storageNodes(s)
	if r := s.Cluster.ReplicasPerSite; r > 0 {
		n = min(n, r)
	}
	return n
}

// causalClusterDescription is the report's line on how a cluster ran a
// causal table.
func causalClusterDescription(s *Scenario) string {
	out := fmt.Sprintf("\n- on the cluster: one serve process per site hosting its %d storage node(s), its coordinator and its cache; each run on a fresh table of its own over them, laid out for its strategy, one after another", clusterStorageNodes(s))
	if f := s.Cluster.SessionsScale; f > 0 && f != 1 {
		out += fmt.Sprintf("; every client site's sessions times %g (the sweep's points keep their names; the runs' sessions are their own)", f)
	}
	if n := s.Cluster.WarmKeys; n > 0 {
		out += fmt.Sprintf("; %d keys read at each client site to warm the caches (cluster.warm_keys)", n)
	}
	return out
}

// unitLabel names a unit in a progress line: its series and point, if
// it has them, and a colon.
func unitLabel(u *unit) string {
	if l := strings.TrimSpace(u.series + " " + u.point); l != "" {
		return l + ": "
	}
	return ""
}

// stableTimeout bounds the wait for a cluster's loaded keys to be in
// every ring.
const stableTimeout = 2 * time.Minute

// loadCausalCluster writes every key of the unit's scenario once, from
// LoadSessions sessions at each client site, through the rings (YCSB's
// load phase, as loadCausal in the simulator), then waits until a sample
// of the keys reads back, found and in every ring.
func loadCausalCluster(ctx context.Context, u *unit, info cluster.Info) error {
	table := u.table(info)
	s := u.s
	keys := s.Workload.Keys
	groups := causalLoadGroups(s, driver.Cosla{SLA: causalSessionSLA, Strategy: clientcore.Closest})
	if _, err := driveCluster(ctx, info, table, groups, keys); err != nil {
		return err
	}
	// A sample of the keys, spread over them, read at the first client
	// site until each is found and stable (a cache holds stable versions
	// only; a ring's answer says whether it is in flight).
	n := min(keys, 64)
	sample := make([]string, n)
	for i := range sample {
		sample[i] = workload.Key(uint64(i * keys / n))
	}
	deadline := time.Now().Add(stableTimeout)
	for {
		mix := &driver.ReadMix{Keys: sample}
		g := &driver.Group{Name: "stable", Site: s.Clients[0].Site, Sessions: 8, Rand: rand.New(rand.NewPCG(0, 0)),
			Streams: []driver.Stream{{Mix: mix}}, Cosla: driver.Cosla{SLA: causalSessionSLA, Strategy: clientcore.Closest}}
		ops, err := driveCluster(ctx, info, table, []*driver.Group{g}, n)
		if err != nil {
			return err
		}
		unstable := 0
		for _, op := range ops {
			if !op.Found || op.InFlight {
				unstable++
			}
		}
		if unstable == 0 {
			return driver.Sleep(ctx, loadSettle)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d sampled keys still not found or in flight %s after the load", unstable, n, stableTimeout)
		}
		if err := driver.Sleep(ctx, time.Second); err != nil {
			return err
		}
	}
}

// driveCluster runs groups on the cluster's table for steps steps, and
// returns their ops; an op that failed fails it.
func driveCluster(ctx context.Context, info cluster.Info, table string, groups []*driver.Group, steps int) ([]driver.Op, error) {
	tlsConfig, err := info.ClientTLS()
	if err != nil {
		return nil, err
	}
	loop := driver.NewLoop(time.Now())
	var ops []driver.Op
	rec := &driver.Recorder{OnOp: func(_ *driver.Group, op *driver.Op) { ops = append(ops, *op) }}
	d, err := driver.New(&driver.HostTarget{Loop: loop, Nodes: info.NodesFor, TLS: tlsConfig, Table: table},
		driver.Spec{Groups: groups, Steps: steps, Recorder: rec})
	if err != nil {
		return nil, err
	}
	defer d.Close()
	d.Start(loop)
	if err := loop.Run(ctx, d.Done); err != nil {
		return nil, err
	}
	for _, st := range rec.Stats() {
		if st.Errors > 0 {
			return nil, fmt.Errorf("%d of %d operations failed: %s", st.Errors, st.Count, st.FirstError)
		}
	}
	return ops, d.Err()
}

// watchCluster reads the cluster's caches as watchCaches does the
// simulator's: at the warmup's end, halfway through the measured window
// and when the run ends (stop), so that the hit ratio is the window's.
// The caches count over every table they hold, and the runs on a
// cluster are one after another: the differences are this run's.
func (c *causalUnit) watchCluster(ctx context.Context, cl *cluster.Cluster) (stop func()) {
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		at := []time.Duration{c.warmup}
		if c.end > 0 {
			at = append(at, (c.warmup+c.end)/2)
		}
		start := time.Now()
		for i, d := range at {
			t := time.NewTimer(time.Until(start.Add(d)))
			select {
			case <-done:
				t.Stop()
				return
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			if r := readClusterCaches(ctx, cl); i == 0 {
				c.cacheFrom = r
			} else {
				c.cacheMid = r
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
		if c.cacheFrom != nil {
			c.cacheTo = readClusterCaches(ctx, cl)
		}
	}
}

// readClusterCaches reads the counters of the cluster's caches from
// their processes' status; a site that does not answer is left out.
func readClusterCaches(ctx context.Context, cl *cluster.Cluster) cacheReading {
	out := cacheReading{}
	for _, site := range cl.Status(ctx).Sites {
		if site.Serve == nil {
			continue
		}
		for _, cs := range site.Serve.Caches {
			if cs.Failed == "" {
				out[cs.ID] = cacheCount{cs.Metrics.Hits, cs.Metrics.Misses}
			}
		}
	}
	return out
}
