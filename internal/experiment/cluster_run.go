package experiment

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/cosla/cosla"
	"github.com/cosla/cosla/internal/clientcore"
	"github.com/cosla/cosla/internal/cluster"
	"github.com/cosla/cosla/internal/wan"
	"github.com/cosla/cosla/internal/wire"
	"github.com/cosla/cosla/internal/workload"
	"github.com/cosla/cosla/sla"
)

// Defaults of ClusterSpec.
const (
	defaultClusterDuration = 2 * time.Minute
	maxTimeScale           = 10
)

func (c *ClusterSpec) validate() error {
	if c.TimeScale == 0 {
		c.TimeScale = 1
	}
	if !(c.TimeScale > 0 && c.TimeScale <= maxTimeScale) {
		return invalid("cluster.time_scale", "%v outside (0, %d]", c.TimeScale, maxTimeScale)
	}
	if c.Duration == 0 {
		c.Duration = defaultClusterDuration
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
	return nil
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
// returning. Its Result has the shape of Run's; times in it are real
// seconds and it has no trace hash: a real run is not reproducible to the
// byte, only in its figures.
func RunCluster(ctx context.Context, s *Scenario, o ClusterRunOptions) (*Result, error) {
	if o.Dir == "" {
		return nil, errors.New("experiment: RunCluster needs a directory")
	}
	progress := o.Progress
	if progress == nil {
		progress = func(string) {}
	}
	for _, e := range s.Schedule {
		if e.AfterGets > 0 {
			return nil, fmt.Errorf("%w: schedule event %s: after_gets counts one client's Gets, but on a cluster the strategies run at once; use at", ErrInvalid, e.Label)
		}
	}
	ts := s.Cluster.TimeScale
	scaled := func(d time.Duration) time.Duration { return time.Duration(float64(d) * ts) }
	nKeys := s.Workload.Keys
	if s.Cluster.Keys > 0 {
		nKeys = s.Cluster.Keys
	}
	keys, err := keyGenerator(s.Workload.Distribution, nKeys)
	if err != nil {
		return nil, err
	}

	pull := scaled(s.Table.PullInterval)
	progress(fmt.Sprintf("starting the %s cluster in %s (primary %s, secondaries pull every %s)", s.topo.Name, o.Dir, s.Table.Primary, pull))
	c, err := cluster.Start(ctx, cluster.Options{Dir: o.Dir, Topology: s.topo, PrimarySite: s.Table.Primary,
		SecondarySites: s.Table.Secondaries, PullInterval: pull, Push: s.Table.Push, Fresh: true,
		Binary: o.Binary, Logger: o.Logger})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	info := c.Info()
	for _, site := range info.Sites {
		progress(fmt.Sprintf("  site %-8s pid %d, metrics http://%s/metrics", site.Name, site.PID, site.HTTP))
	}
	progress(fmt.Sprintf("loading %d keys at the primary", nKeys))
	if err := LoadKeys(ctx, info.Clients[s.Table.Primary], s.Table.Primary, info.Table, nKeys); err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	progress(fmt.Sprintf("waiting %s for the secondaries to pull them", pull))
	if err := sleep(ctx, pull); err != nil {
		return nil, err
	}

	res := &Result{Scenario: s.Name, Description: s.Description, Reference: s.Reference,
		Mode: "cluster", Seed: o.Seed, Scale: ts, Nodes: s.replicaSites()}
	// With a schedule, a change is made for one client site at a time
	// ("the link to the primary" depends on where the client is).
	groups := [][]string{s.Clients}
	if len(s.Schedule) > 0 {
		groups = nil
		for _, client := range s.Clients {
			groups = append(groups, []string{client})
		}
	}
	g := clusterGroup{s: s, c: c, info: info, seed: o.Seed, keys: keys, progress: progress}
	g.duration = scaled(s.Workload.Duration)
	if s.Workload.Duration == 0 {
		g.duration = scaled(s.Cluster.Duration)
	}
	defaults := clientcore.Options{}.EnsureDefaults()
	g.probeInterval, g.rttWindow = scaled(defaults.ProbeInterval), scaled(defaults.RTTWindow)
	for _, v := range s.slas {
		for _, clients := range groups {
			runs, err := g.run(ctx, v, clients)
			if err != nil {
				return nil, fmt.Errorf("%s: %s: %w", s.Name, v.Name, err)
			}
			res.Runs = append(res.Runs, runs...)
		}
	}
	return res, nil
}

func keyGenerator(distribution string, n int) (workload.Generator, error) {
	if distribution == "uniform" {
		return workload.NewUniform(uint64(n))
	}
	return workload.NewScrambledZipfian(uint64(n))
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// clusterGroup runs groups of runs at once on one cluster.
type clusterGroup struct {
	s                        *Scenario
	c                        *cluster.Cluster
	info                     cluster.Info
	seed                     uint64
	keys                     workload.Generator
	duration                 time.Duration
	probeInterval, rttWindow time.Duration
	progress                 func(string)
}

// clusterRun is one (client site, strategy) run of a group.
type clusterRun struct {
	r   RunResult
	rec *recorder
	err error
}

// run runs every strategy from each of clients at once for the group's
// duration, making the scheduled changes (for clients[0]) on the way, and
// gives the links back their topology settings at the end.
func (g *clusterGroup) run(ctx context.Context, v slaVariant, clients []string) (_ []RunResult, err error) {
	s := g.s
	net := newClusterNetwork(g.c, s)
	defer func() {
		if rerr := net.reset(ctx); rerr != nil && err == nil {
			err = fmt.Errorf("give the links back their settings: %w", rerr)
		}
	}()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	oracle := newWorld(s, net, clients[0])
	start := time.Now()
	deadline := start.Add(g.duration)
	since := func() float64 { return time.Since(start).Seconds() }

	var runs []*clusterRun
	var wg sync.WaitGroup
	for i, client := range clients {
		for _, name := range s.Strategies {
			run := &clusterRun{r: RunResult{SLA: v.Name, BaseSLA: v.Base, Factor: v.Factor, SLAText: v.SLA.String(),
				Client: client, Strategy: name, Met: make([]float64, len(v.SLA))}}
			run.rec = newRecorder(&run.r, len(s.Schedule) > 0)
			runs = append(runs, run)
			// The strategies of a site draw the same operations (common
			// random numbers), as in the simulator.
			rng := rand.New(rand.NewPCG(g.seed, uint64(i+1)))
			wg.Go(func() {
				if run.err = g.client(ctx, v.SLA, client, name, rng, deadline, run, since); run.err != nil {
					cancel()
				}
			})
		}
	}

	var events []EventRecord
	var applyErr error
	schedule := make(chan struct{})
	go func() {
		defer close(schedule)
		for _, e := range expandSchedule(s, g.seed, s.Cluster.TimeScale) {
			if sleep(ctx, time.Until(start.Add(e.At))) != nil {
				return
			}
			desc, err := oracle.apply(e)
			if err != nil {
				applyErr = fmt.Errorf("%s: %w", e.Label, err)
				cancel()
				return
			}
			u, best := oracle.best(v.SLA, s.layout())
			events = append(events, EventRecord{Label: e.Label, AtS: since(), Description: desc, BestUtility: u, Best: best, Spike: e.spike})
			if e.spike == 0 {
				g.progress(fmt.Sprintf("  %5.1fs %s: %s", since(), e.Label, desc))
			}
		}
	}()

	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	g.progress(fmt.Sprintf("%s from %v: %d clients for %s", v.Name, clients, len(runs), g.duration))
	for waiting := true; waiting; {
		select {
		case <-done:
			waiting = false
		case <-tick.C:
			g.progress(fmt.Sprintf("  %s: %.0fs left", v.Name, time.Until(deadline).Seconds()))
		}
	}
	cancel()
	<-schedule
	if applyErr != nil {
		return nil, applyErr
	}
	var out []RunResult
	for _, run := range runs {
		if run.err != nil {
			return nil, fmt.Errorf("%s/%s: %w", run.r.Client, run.r.Strategy, run.err)
		}
		if run.r.Gets == 0 {
			return nil, fmt.Errorf("%s/%s: no Gets ran", run.r.Client, run.r.Strategy)
		}
		run.r.VirtualS = g.duration.Seconds()
		variant, _ := parseStrategyVariant(run.r.Strategy)
		run.rec.finish(variant.strategy == clientcore.Pileus, s.replicaSites(), events, s.Adapt.Gets)
		out = append(out, run.r)
	}
	return out, nil
}

// client is one run's closed loop, as harness.Loop is in the simulator:
// sessions of SessionOps operations, Puts with probability PutFraction,
// until the deadline.
func (g *clusterGroup) client(ctx context.Context, agreement sla.SLA, site, strategyName string,
	rng *rand.Rand, deadline time.Time, run *clusterRun, since func() float64) error {
	w := g.s.Workload
	variant, err := parseStrategyVariant(strategyName)
	if err != nil {
		return err
	}
	var opts []cosla.GetOption
	if variant.get.RetryAfterMiss {
		opts = append(opts, cosla.WithRetryAfterMiss())
	}
	if variant.get.HedgeCost > 0 {
		opts = append(opts, cosla.WithHedge(variant.get.HedgeCost))
	}
	c, err := cosla.Open(ctx, cosla.Config{Site: site, Name: strategyName, Nodes: g.info.Clients[site],
		ProbeInterval: g.probeInterval, RTTWindow: g.rttWindow, AdaptiveProbing: variant.adaptiveProbing})
	if err != nil {
		return err
	}
	defer func() {
		run.r.Probes = int(c.Metrics().Probes)
		c.Close()
	}()
	t, err := c.OpenTable(ctx, g.info.Table)
	if err != nil {
		return err
	}
	var sess *cosla.Session
	for op := 0; time.Now().Before(deadline) && ctx.Err() == nil; op++ {
		if op%w.SessionOps == 0 {
			if sess != nil {
				c.EndSession(sess)
			}
			if sess, err = c.BeginSession(t, agreement, cosla.WithStrategy(variant.strategy)); err != nil {
				return err
			}
		}
		put := !w.ReadOnly && rng.Float64() < w.PutFraction
		key := workload.Key(g.keys.Next(rng))
		if put {
			_, err := c.Put(ctx, sess, key, fmt.Appendf(nil, "%s-%s-%d", site, strategyName, op))
			if err != nil && !errors.Is(err, cosla.ErrTimeout) && ctx.Err() == nil {
				return err
			}
			run.r.Puts++
		} else {
			_, res, err := c.Get(ctx, sess, key, opts...)
			if err != nil && !errors.Is(err, cosla.ErrSLAUnmet) && !errors.Is(err, cosla.ErrTimeout) {
				if ctx.Err() != nil {
					break
				}
				return err
			}
			run.rec.get(getOutcome{Met: res.Met, Target: res.Target, Utility: res.Utility(), Site: siteOf(wire.NodeID(res.Node)),
				RTT: res.RTT, Extra: extraRequests(res.Retried, res.Hedged)}, since())
		}
		if think := max(w.Think, g.s.Cluster.Think); think > 0 && sleep(ctx, think) != nil {
			break
		}
	}
	return nil
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

func (n *clusterNetwork) partition(a, b string) error { return n.cut(a, b, true) }
func (n *clusterNetwork) heal(a, b string) error      { return n.cut(a, b, false) }

func (n *clusterNetwork) crash(node string) error {
	site := siteOf(wire.NodeID(node))
	n.mu.Lock()
	n.crashed[site] = true
	n.mu.Unlock()
	return n.c.Crash(site)
}

func (n *clusterNetwork) restart(node string) error {
	site := siteOf(wire.NodeID(node))
	n.mu.Lock()
	delete(n.crashed, site)
	n.mu.Unlock()
	return n.c.Restart(context.Background(), site)
}

func (n *clusterNetwork) topologySettings(a, b string) wan.Settings {
	rtt, jitter := n.s.topologyLink(a, b)
	return wan.Settings{Latency: rtt / 2, Jitter: jitter}
}

// reset gives every changed link its topology settings and restarts the
// crashed sites, so that the next group starts from the topology.
func (n *clusterNetwork) reset(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	var errs []error
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

// LoadKeys writes every key once through a client at site, with a few
// Puts in flight at a time, as YCSB's load phase does.
func LoadKeys(ctx context.Context, nodes map[string]string, site, table string, keys int) error {
	c, err := cosla.Open(ctx, cosla.Config{Site: site, Name: "loader", Nodes: nodes})
	if err != nil {
		return err
	}
	defer c.Close()
	t, err := c.OpenTable(ctx, table)
	if err != nil {
		return err
	}
	eventual, _ := sla.Parse("eventual unbounded 1")
	const workers = 8
	errs := make(chan error, workers)
	for w := range workers {
		go func() {
			s, err := c.BeginSession(t, eventual)
			if err == nil {
				for i := w; i < keys && err == nil; i += workers {
					_, err = c.Put(ctx, s, workload.Key(uint64(i)), []byte("initial"))
				}
			}
			errs <- err
		}()
	}
	var first error
	for range workers {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}
