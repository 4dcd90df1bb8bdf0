package experiment

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/cosla/cosla/internal/core/clientcore"
	"github.com/cosla/cosla/internal/core/replica"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/lab/driver"
	"github.com/cosla/cosla/internal/runtime/cluster"
	"github.com/cosla/cosla/internal/runtime/topology"
	"github.com/cosla/cosla/internal/runtime/wan"
)

// Defaults of ClusterSpec.
const (
	defaultClusterDuration = 2 * time.Minute
	maxTimeScale           = 10
)

func (c *ClusterSpec) defaults() {
	if c.TimeScale == 0 {
		c.TimeScale = 1
	}
	if c.Duration == 0 {
		c.Duration = defaultClusterDuration
	}
}

func (c *ClusterSpec) validate() error {
	if !(c.TimeScale > 0 && c.TimeScale <= maxTimeScale) {
		return invalid("cluster.time_scale", "%v outside (0, %d]", c.TimeScale, maxTimeScale)
	}
	if c.Duration < 0 || c.Duration > 24*time.Hour {
		return invalid("cluster.duration", "%s outside (0, 24h]", c.Duration)
	}
	if c.Keys < 0 || c.Keys > 10_000_000 {
		return invalid("cluster.keys", "%d outside 0..10,000,000", c.Keys)
	}
	if c.Think < 0 || c.Think > time.Hour {
		return invalid("cluster.think", "%s outside [0, 1h]", c.Think)
	}
	if !(c.Rate >= 0 && c.Rate <= maxRate) {
		return invalid("cluster.rate", "%v outside [0, %g]", c.Rate, maxRate)
	}
	if !(c.SessionsScale >= 0 && c.SessionsScale <= maxTimeScale) {
		return invalid("cluster.sessions_scale", "%v outside [0, %d]", c.SessionsScale, maxTimeScale)
	}
	if c.ReplicasPerSite < 0 {
		return invalid("cluster.replicas_per_site", "negative: %d", c.ReplicasPerSite)
	}
	if c.WarmKeys < 0 || c.WarmKeys > 10_000_000 {
		return invalid("cluster.warm_keys", "%d outside 0..10,000,000", c.WarmKeys)
	}
	if c.Ops < 0 || c.Ops > maxOps {
		return invalid("cluster.ops", "%d outside 0..%d", c.Ops, maxOps)
	}
	return nil
}

// warmKeys is the keys each client site reads to warm its cache on the
// cluster, given causal.warm_keys.
func (c *ClusterSpec) warmKeys(n int) int { return cmp.Or(c.WarmKeys, n) }

// sessions is a client site's sessions on the cluster.
func (c *ClusterSpec) sessions(n int) int {
	if c.SessionsScale == 0 {
		return n
	}
	return max(1, int(math.Round(float64(n)*c.SessionsScale)))
}

// ClusterRunOptions configures a run of a scenario on a local cluster.
type ClusterRunOptions struct {
	// Dir holds the cluster's data and logs; a previous run's are deleted.
	// Required.
	Dir  string
	Seed uint64
	// Binary is the cosla executable the sites run. Default: this
	// process's own.
	Binary string
	// Logger receives the cluster supervisor's logs. Default: discard.
	Logger *slog.Logger
	// Progress, if set, is called with a line to show now and then.
	Progress func(line string)
}

// RunCluster runs the scenario on a local cluster (real processes, TCP
// and an emulated WAN) that it starts in o.Dir and stops before
// returning, through the same units and driver as Run: only the runtime
// (real time) and the target (client cores over TCP) differ. Its
// Result has the shape of Run's; times in it are real seconds and it has
// no trace hash: a real run is not reproducible to the byte, only in its
// figures.
//
// Series that change the sites, nodes or table, or turn the planner on
// (reconfigure), run each on a fresh cluster of its own, in
// o.Dir/SERIES (clusterGroups); the others share one.
//
// A causal table runs on the topology's sites with
// cluster.replicas_per_site storage nodes each and the scenario's rings,
// each unit on a fresh table of its own (cluster_causal.go); each unit
// loads its keys through the rings, unless causal.no_load says not to.
func RunCluster(ctx context.Context, s *Scenario, o ClusterRunOptions) (*Result, error) {
	if o.Dir == "" {
		return nil, errors.New("experiment: RunCluster needs a directory")
	}
	if o.Progress == nil {
		o.Progress = func(string) {}
	}
	for _, e := range s.Schedule {
		if e.AfterGets > 0 {
			return nil, fmt.Errorf("%w: schedule event %s: after_gets counts one client's Gets, but on a cluster the strategies run at once; use at", ErrInvalid, e.Label)
		}
	}
	if wp, own := worldOf(s); own {
		for _, c := range wp.caveats(s) {
			o.Progress(c)
		}
	}
	t := timing{cluster: true, scale: s.Cluster.TimeScale}
	for _, c := range clusterCaveats(s, t) {
		o.Progress(c)
	}
	if s.Cluster.Keys > 0 {
		s = derive(s, func(c *Scenario) { c.Workload.Keys = c.Cluster.Keys })
		if err := s.Validate(); err != nil {
			return nil, err
		}
	}
	units, err := planUnits(s, o.Seed, t)
	if err != nil {
		return nil, err
	}
	groups, err := clusterGroups(s, units)
	if err != nil {
		return nil, err
	}
	res := &Result{Scenario: s.Name, Description: s.Description, Reference: s.Reference,
		Mode: "cluster", Seed: o.Seed, Scale: t.scale, Nodes: replicaSites(s)}
	for _, g := range groups {
		dir := o.Dir
		if len(groups) > 1 {
			dir = filepath.Join(o.Dir, g.series)
		}
		if err := runClusterGroup(ctx, g, t, dir, o, res); err != nil {
			return nil, err
		}
	}
	res.Summaries = summarize(res.Runs)
	return res, nil
}

// A clusterGroup is units that run on one cluster, started for them
// from base (its sites, nodes, table and configuration service).
type clusterGroup struct {
	series string
	base   *Scenario
	units  []*unit
}

// clusterGroups are the clusters the units run on: one, from the
// scenario, unless a series changes the sites, nodes or table, or turns
// the planner on, which the service's moves make a run of its own; then
// a fresh cluster per series, from the series' scenario.
func clusterGroups(s *Scenario, units []*unit) ([]clusterGroup, error) {
	series, err := seriesScenarios(s)
	if err != nil {
		return nil, err
	}
	own := slices.ContainsFunc(series, func(sr seriesScenario) bool {
		return sr.s.Reconfigure != nil || sameCluster(s, sr.s) != nil
	})
	if !own {
		return []clusterGroup{{base: s, units: units}}, nil
	}
	var out []clusterGroup
	for _, sr := range series {
		g := clusterGroup{series: sr.name, base: sr.s}
		for _, u := range units {
			if u.series == sr.name {
				g.units = append(g.units, u)
			}
		}
		out = append(out, g)
	}
	return out, nil
}

// runClusterGroup starts a cluster in dir for the group's units, loads
// the table, runs the units one after another, adds their runs to res
// and stops the cluster.
func runClusterGroup(ctx context.Context, g clusterGroup, t timing, dir string, o ClusterRunOptions, res *Result) error {
	s, progress := g.base, o.Progress
	placement, err := s.placement()
	if err != nil {
		return err
	}
	pull := t.scaled(s.Table.PullInterval)
	copts := cluster.Options{Dir: dir, Topology: clusterTopology(s), Placement: placement,
		PullInterval: pull, Push: s.Table.Push, WriteLevel: s.writeLevel(), Fresh: true, Binary: o.Binary, Logger: o.Logger}
	if s.Reconfigure != nil {
		copts.Config = s.Reconfigure.serve(t)
	}
	wp, own := worldOf(s)
	if own {
		progress(wp.startCluster(s, &copts))
	} else {
		progress(fmt.Sprintf("starting the %s cluster in %s (replicas at %v, pull every %s)", s.topo.Name, dir, placement.Sites, pull))
	}
	c, err := cluster.Start(ctx, copts)
	if err != nil {
		return err
	}
	defer c.Close()
	info := c.Info()
	for _, site := range info.Sites {
		progress(fmt.Sprintf("  site %-8s pid %d, metrics http://%s/metrics", site.Name, site.PID, site.HTTP))
	}
	if !own {
		progress(fmt.Sprintf("loading %d keys at %s", s.Workload.Keys, loaderSite(s)))
		if err := loadCluster(ctx, s, info); err != nil {
			return fmt.Errorf("load: %w", err)
		}
	}
	if !own && loadBound(s) != wire.Unbounded {
		progress(fmt.Sprintf("waiting %s for the secondaries to pull them", pull))
		if err := driver.Sleep(ctx, pull); err != nil {
			return err
		}
	}
	for _, u := range g.units {
		if err := sameCluster(s, u.s); err != nil {
			return fmt.Errorf("%s: series %s: %w", s.Name, u.series, err)
		}
		if err := runClusterUnit(ctx, u, s, t, c, progress); err != nil {
			return fmt.Errorf("%s: %s %s: %w", s.Name, u.point, u.sla.Name, err)
		}
		if u.own != nil {
			u.own.addTo(res, "")
		}
		for _, r := range u.runs {
			res.Runs = append(res.Runs, r.r)
		}
	}
	return nil
}

// loadCluster writes every key once through 8 sessions at the loader's
// site.
func loadCluster(ctx context.Context, s *Scenario, info cluster.Info) error {
	tlsConfig, err := info.ClientTLS()
	if err != nil {
		return err
	}
	loop := driver.NewLoop(time.Now())
	rec := &driver.Recorder{}
	d, err := driver.New(&driver.HostTarget{Loop: loop, Nodes: info.NodesFor, TLS: tlsConfig, Table: info.Table},
		driver.Spec{Groups: []*driver.Group{loadGroup(s, loaderSite(s), 8, clientcore.Options{})}, Steps: s.Workload.Keys, Recorder: rec})
	if err != nil {
		return err
	}
	defer d.Close()
	d.Start(loop)
	if err := loop.Run(ctx, d.Done); err != nil {
		return err
	}
	for _, st := range rec.Stats() {
		if st.Errors > 0 {
			return fmt.Errorf("%d of %d Puts failed: %s", st.Errors, st.Count, st.FirstError)
		}
	}
	return d.Err()
}

// runClusterUnit runs a unit's strategies and client sites at once for
// its duration, making the scheduled changes (for the unit's first
// client site) on the way, and gives the links back their topology
// settings at the end.
func runClusterUnit(ctx context.Context, u *unit, base *Scenario, t timing, c *cluster.Cluster, progress func(string)) (err error) {
	s := u.s
	info := c.Info()
	net, giveBack, err := takeLinks(c, s, base)
	if err != nil {
		return err
	}
	defer func() {
		if rerr := giveBack(ctx); rerr != nil && err == nil {
			err = fmt.Errorf("give the links back their settings: %w", rerr)
		}
	}()
	tlsConfig, err := info.ClientTLS()
	if err != nil {
		return err
	}
	if wp, ok := worldOf(s); ok {
		if err := wp.prepareCluster(ctx, u, c, t, progress); err != nil {
			return err
		}
	}
	loop := driver.NewLoop(time.Now())
	spec := u.spec(t)
	d, err := driver.New(&driver.HostTarget{Loop: loop, Nodes: info.NodesFor, TLS: tlsConfig, Table: u.table(info)}, spec)
	if err != nil {
		return err
	}
	defer d.Close()
	sc := &schedule{u: u, oracle: newWorld(s, net, u.client), since: d.Now, gets: func() int { return 0 }, progress: progress}
	sc.start(loop, expandSchedule(s, u.seed, t.scale))
	reportProgress(u, loop, d, spec, progress)
	var made0 int64
	if s.wants(OutPlanner) {
		_, made0 = clusterNodes(ctx, c)
	}
	stopWatches := watchCluster(ctx, u, c)
	defer stopWatches()
	d.Start(loop)
	if err := loop.Run(ctx, d.Done); err != nil {
		// Interrupted: let the ops in flight finish, within their timeout.
		d.Stop()
		drain, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = loop.Run(drain, d.Done)
		return err
	}
	if sc.err != nil {
		return sc.err
	}
	if err := net.wait(); err != nil {
		return err
	}
	if d.Err() != nil {
		return d.Err()
	}
	stopWatches()
	elapsed := spec.Duration
	if elapsed == 0 {
		elapsed = d.Now()
	}
	u.collect(d, spec.Recorder, elapsed)
	if u.own != nil {
		u.own.finish()
	}
	if err := u.collectCluster(ctx, c, made0); err != nil {
		return err
	}
	return u.check()
}

// reportProgress says what the unit runs, and every 10 s how long it
// has left.
func reportProgress(u *unit, loop *driver.Loop, d *driver.Driver, spec driver.Spec, progress func(string)) {
	var tick func()
	tick = func() {
		if left := spec.Duration - d.Now(); left > time.Second && !d.Done() {
			progress(fmt.Sprintf("  %s %s: %.0fs left", u.point, u.sla.Name, left.Seconds()))
			loop.After(10*time.Second, tick)
		}
	}
	loop.After(10*time.Second, tick)
	length := spec.Duration.String()
	if spec.Duration == 0 {
		length = fmt.Sprintf("%d operations", spec.Steps)
	}
	progress(fmt.Sprintf("%s %s %s from %s: %d runs for %s", u.series, u.point, u.sla.Name, u.clientSites(), len(u.runs), length))
}

// A clusterWatcher is a unit's part that reads the cluster while the
// workload runs, until stop.
type clusterWatcher interface {
	watchCluster(ctx context.Context, c *cluster.Cluster) (stop func())
}

// watchCluster starts the unit's clusterWatchers (its parts', its own
// recorder's); the function it
// returns stops them, once however often it is called.
func watchCluster(ctx context.Context, u *unit, c *cluster.Cluster) func() {
	var stops []func()
	for _, p := range u.parts {
		if w, ok := p.(clusterWatcher); ok {
			stops = append(stops, w.watchCluster(ctx, c))
		}
	}
	if w, ok := u.own.(clusterWatcher); ok {
		stops = append(stops, w.watchCluster(ctx, c))
	}
	return sync.OnceFunc(func() {
		for _, stop := range stops {
			stop()
		}
	})
}

// collectCluster reads the storage nodes' learned costs (bounded output)
// and replays the planner decisions made since made0 were (planner
// output) into every run.
func (u *unit) collectCluster(ctx context.Context, c *cluster.Cluster, made0 int64) error {
	s := u.s
	if !s.wants(OutBounded) && !s.wants(OutPlanner) {
		return nil
	}
	costs, made := clusterNodes(ctx, c)
	var planner *PlannerStats
	if s.wants(OutPlanner) {
		// The nodes keep their latest decisions (the run's, once it has
		// made as many): each is replayed here, as after a run in the
		// simulator.
		decisions, err := c.Decisions(ctx)
		if err != nil {
			return err
		}
		planner = replayPlanner(made-made0, decisions)
	}
	for _, r := range u.runs {
		r.r.Costs, r.r.Planner = stepCosts(costs), planner
	}
	return nil
}

// clusterNodes reads the storage nodes' learned costs and counts their
// planner decisions, from their processes' status; a site that does not
// answer is left out.
func clusterNodes(ctx context.Context, c *cluster.Cluster) (costs []replica.StepCost, made int64) {
	for _, site := range c.Status(ctx).Sites {
		if site.Serve == nil {
			continue
		}
		for _, n := range site.Serve.Nodes {
			costs = append(costs, n.Metrics.Costs...)
			made += n.Metrics.Decisions
		}
	}
	return costs, made
}

// emulatedMessage is the size of a message carrying one value beyond the
// value: the envelope, key and timestamps (our estimate, for the
// bandwidth a cluster emulates by delay).
const emulatedMessage = 100

// clusterTopology is the topology a local cluster runs: the emulated WAN
// sets latency and jitter only, so a link's bandwidth becomes delay, as
// a slow link is made by delaying every data transmission: each way, the time to send a message carrying one
// value. Queues on a busy link are not emulated.
//
// A causal table's topology gets the scenario's rings (the cluster then
// creates its table as a causal table) and keeps cluster.replicas_per_site
// storage nodes per site.
func clusterTopology(s *Scenario) topology.Topology {
	t := s.topo
	if wp, ok := worldOf(s); ok {
		t = wp.topology(s, t)
	}
	t.Links = slices.Clone(t.Links)
	for i, l := range t.Links {
		if l.Bandwidth > 0 {
			bytes := int64(s.Workload.ValueSize + emulatedMessage)
			t.Links[i].RTT += 2 * time.Duration(bytes*int64(time.Second)/l.Bandwidth)
			t.Links[i].Bandwidth = 0
		}
	}
	return t
}

// sameCluster reports whether a series' scenario can run on the
// scenario's cluster: the same sites, nodes and table; links may differ.
func sameCluster(s *Scenario, o *Scenario) error {
	a, b := s.topo, o.topo
	a.Links, b.Links, a.Name, b.Name = nil, nil, "", ""
	pa, _ := s.placement()
	pb, _ := o.placement()
	if !reflect.DeepEqual(a, b) || !reflect.DeepEqual(pa, pb) || !reflect.DeepEqual(s.Table, o.Table) {
		return fmt.Errorf("%w: on a cluster a series may change the links and the workload, not the sites, nodes or table", ErrInvalid)
	}
	return nil
}

// takeLinks gives the cluster's links a unit's settings (a series may
// change them: the unit runs on its own) and returns its network and a
// function that gives them back: the emulator's faults cleared, then
// base's settings; it reports the first that failed.
func takeLinks(c *cluster.Cluster, s, base *Scenario) (*clusterNetwork, func(context.Context) error, error) {
	if err := setLinks(c, s); err != nil {
		return nil, nil, err
	}
	net := newClusterNetwork(c, s)
	giveBack := func(ctx context.Context) error {
		err := net.reset(ctx)
		if rerr := setLinks(c, base); err == nil {
			err = rerr
		}
		return err
	}
	return net, giveBack, nil
}

// setLinks gives the cluster's links between sites the scenario's
// settings (with bandwidth as delay, clusterTopology).
func setLinks(c *cluster.Cluster, s *Scenario) error {
	var errs []error
	for _, l := range clusterTopology(s).Links {
		errs = append(errs, c.SetLink(l.A, l.B, wan.Settings{Latency: l.RTT / 2, Jitter: l.Jitter}))
	}
	return errors.Join(errs...)
}

// clusterNetwork is a local cluster as a network: links are the emulated
// WAN's, crashes are SIGKILLs of a site's process. A slow node is
// emulated on its links: a site's process serves all its nodes, and
// cosla serve has no service-time knob, so a node's extra service time
// is added to the round trip of every link to its site, without the
// simulator's queueing.
type clusterNetwork struct {
	c  *cluster.Cluster
	s  *Scenario
	mu sync.Mutex
	// set holds the links changed, as scheduled (without slow), to give
	// back at the end.
	set     map[[2]string]wan.Settings
	slow    map[string]time.Duration // site -> extra round trip
	crashed map[string]bool
	// restarts are the restarts under way, restartErr their errors.
	restarts   sync.WaitGroup
	restartErr error
}

func newClusterNetwork(c *cluster.Cluster, s *Scenario) *clusterNetwork {
	return &clusterNetwork{c: c, s: s, set: map[[2]string]wan.Settings{},
		slow: map[string]time.Duration{}, crashed: map[string]bool{}}
}

// settings returns the link's scheduled settings.
func (n *clusterNetwork) settings(a, b string) wan.Settings {
	if st, ok := n.set[pair(a, b)]; ok {
		return st
	}
	return n.topologySettings(a, b)
}

// apply gives the link settings st, plus the slow sites' service time.
func (n *clusterNetwork) apply(a, b string, st wan.Settings) error {
	n.set[pair(a, b)] = st
	extra := n.slow[a]
	if a != b {
		extra += n.slow[b]
	}
	st.Latency += extra / 2
	return n.c.SetLink(a, b, st)
}

func (n *clusterNetwork) setLink(a, b string, rtt, jitter time.Duration) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.apply(a, b, wan.Settings{Latency: rtt / 2, Jitter: jitter, Down: n.settings(a, b).Down})
}

func (n *clusterNetwork) cut(a, b string, down bool) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	st := n.settings(a, b)
	st.Down = down
	return n.apply(a, b, st)
}

func (n *clusterNetwork) setService(node string, d time.Duration) error {
	site := siteOf(wire.NodeID(node))
	n.mu.Lock()
	defer n.mu.Unlock()
	n.slow[site] = d
	var errs []error
	for _, other := range n.s.topo.Sites {
		errs = append(errs, n.apply(other.Name, site, n.settings(other.Name, site)))
	}
	return errors.Join(errs...)
}

// pause is not emulated: the nodes of a site share one process, which
// a signal would stop whole. RunCluster says so before the runs.
func (n *clusterNetwork) pause(string, time.Duration) error { return nil }

// clusterCaveats says which of the schedule's changes a local cluster
// makes differently from the simulator, how it emulates the links'
// bandwidths, and how long a day of active hours lasts.
func clusterCaveats(s *Scenario, t timing) []string {
	var out []string
	if len(s.Active) > 0 {
		out = append(out, fmt.Sprintf("active hours: a day lasts %s of real time here (cluster.time_scale or --scale %g, an hour %s); "+
			"the think time, the planner's window and min interval and the clients' reports scale with it, "+
			"the clients' probe interval and RTT window too but not below %s and %s", t.scaled(24*time.Hour), t.scale,
			t.scaled(time.Hour), minClusterProbe, minClusterRTTWindow))
	}
	series, _ := seriesScenarios(s)
	for _, sr := range series {
		emulated := clusterTopology(sr.s)
		for i, l := range sr.s.topo.Links {
			if l.Bandwidth > 0 {
				name := ""
				if sr.name != "" {
					name = " (series " + sr.name + ")"
				}
				out = append(out, fmt.Sprintf("link %s-%s%s: its %d bytes/s emulated as %s more round trip, a message of one value each way, without queues",
					l.A, l.B, name, l.Bandwidth, emulated.Links[i].RTT-l.RTT))
			}
		}
	}
	for _, e := range s.Schedule {
		switch e.Action {
		case ActionStalls, ActionPause:
			out = append(out, fmt.Sprintf("schedule %s: %s not emulated on a cluster (a site's nodes share one process)", e.Label, e.Action))
		case ActionAddRTT, ActionSetRTT, ActionRestore, ActionSpikes:
			if a, b := s.site(e.From, ""), s.site(e.To, ""); a == b && a != "" && !s.hasNodes(a, true) {
				out = append(out, fmt.Sprintf("schedule %s: the link within site %s changes nothing on a cluster (its nodes talk inside one process, and it has no clients)", e.Label, a))
			}
		}
	}
	return out
}

func (n *clusterNetwork) partition(a, b string) error { return n.cut(a, b, true) }
func (n *clusterNetwork) heal(a, b string) error      { return n.cut(a, b, false) }

func (n *clusterNetwork) crash(node string) error {
	site := siteOf(wire.NodeID(node))
	n.mu.Lock()
	n.crashed[site] = true
	n.mu.Unlock()
	return n.c.Crash(site)
}

// restart respawns the node's site in the background, so that the
// driver's loop goes on meanwhile; wait reports how that went.
func (n *clusterNetwork) restart(node string) error {
	site := siteOf(wire.NodeID(node))
	n.mu.Lock()
	delete(n.crashed, site)
	n.mu.Unlock()
	n.restarts.Go(func() {
		if err := n.c.Restart(context.Background(), site); err != nil {
			n.mu.Lock()
			n.restartErr = errors.Join(n.restartErr, fmt.Errorf("restart %s: %w", site, err))
			n.mu.Unlock()
		}
	})
	return nil
}

// wait waits for the restarts under way and returns their errors.
func (n *clusterNetwork) wait() error {
	n.restarts.Wait()
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.restartErr
}

func (n *clusterNetwork) topologySettings(a, b string) wan.Settings {
	rtt, jitter := topologyLink(n.s, a, b)
	if a != b {
		// The link's bandwidth as delay (clusterTopology).
		t := clusterTopology(n.s)
		if l, ok := t.Link(a, b); ok {
			rtt = l.RTT
		}
	}
	return wan.Settings{Latency: rtt / 2, Jitter: jitter}
}

// reset gives every changed link its topology settings and restarts the
// crashed sites, so that the next group starts from the topology.
func (n *clusterNetwork) reset(ctx context.Context) error {
	errs := []error{n.wait()}
	n.mu.Lock()
	defer n.mu.Unlock()
	for key := range n.set {
		errs = append(errs, n.c.SetLink(key[0], key[1], n.topologySettings(key[0], key[1])))
	}
	for site := range n.crashed {
		errs = append(errs, n.c.Restart(ctx, site))
	}
	clear(n.set)
	clear(n.slow)
	clear(n.crashed)
	return errors.Join(errs...)
}

// table is the cluster's table a unit runs on: the cluster's, or the one
// a worldPlugin made for the unit.
func (u *unit) table(info cluster.Info) string {
	if wp, ok := worldOf(u.s); ok {
		return wp.table(u, info)
	}
	return info.Table
}
