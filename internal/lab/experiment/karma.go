package experiment

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/cosla/cosla/internal/core/causal"
	"github.com/cosla/cosla/internal/core/clientcore"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/lab/driver"
	"github.com/cosla/cosla/internal/lab/workload"
	"github.com/cosla/cosla/internal/runtime/harness"
	"github.com/cosla/cosla/internal/runtime/sim"
	"github.com/cosla/cosla/internal/runtime/site"
)

// Karma's experiments (Karma, sections 5-6; DESIGN.md section 5): a
// causal table whose keys live once per ring of sites, read through
// write buffers, site caches and the nearest ring, under the strategies
// karma, karma-nc, cops-pr and cops-ideal (causal.Strategy). Every client
// site of a run drives the one world at once (harness.NewCausal), and
// the run's figures are the whole system's: throughput, Get latency, the
// share of Gets served at the client's own site, the share of accesses
// made under a dynamic ring restriction, where Gets were served from.
//
// On a local cluster (RunCluster; cluster_causal.go) the same units run
// under the Karma strategy alone, the one a real cluster's coordinators
// serve.

// causalStrategies are the strategies of Karma 5, in the paper's order.
var causalStrategies = []string{"karma", "karma-nc", "cops-pr", "cops-ideal"}

// causalMetrics are the paper's numbers a Karma preset may carry:
// local_pct (Karma 6.1: "nearly 77% local accesses"), restricted_pct
// (Fig. 11) and cache_hit_pct (6.4: a 31% miss ratio at 95-5) found by
// Strategy, Point and Series, a value without a Point standing for
// every point; throughput_gain_pct, a strategy's peak throughput over
// Baseline's (6.1, 6.3), found by Strategy, Series and Baseline;
// throughput_change_pct, a strategy's peak throughput in one series over
// its peak in the Baseline series (6.5: object sizes).
var causalMetrics = []string{"local_pct", "restricted_pct", "cache_hit_pct", "throughput_gain_pct", "throughput_change_pct"}

// causalSLA stands for the SLA of a causal scenario's runs, which have
// none.
var causalSLA = slaVariant{Name: "causal", Base: "causal"}

// CausalSpec makes a scenario's table a causal table (Karma).
type CausalSpec struct {
	// Rings lists the sites of each ring, in order (Karma 5: {US-West1,
	// US-West2, US-East, Europe}, {Singapore, Tokyo, Sydney}, {Brazil}).
	// Every site with storage nodes is in one. Under cops-ideal every
	// site is a ring of its own, whatever Rings says.
	Rings [][]string `yaml:"rings"`
	// NotifyEvery is how often a session held by ring restrictions that
	// wrote nothing since sends a notify-after (Karma 4.2). 0, the
	// default, sends none, as in the paper's evaluation.
	NotifyEvery time.Duration `yaml:"notify_every"`
	// ReadTimeout is how long a coordinator's read waits for a ring, and a
	// cache's fill for a storage node, before trying another ring (or
	// failing, when the session is bound to one). Default 1s.
	ReadTimeout time.Duration `yaml:"read_timeout"`
	// Resend is how long a propagator waits for a ring's acknowledgement,
	// and a storage node for an answer, before sending again. Default 1s.
	Resend time.Duration `yaml:"resend"`
	// CacheCapacity bounds the keys each site's cache holds (Karma's
	// strategy only). Default 1,000,000.
	CacheCapacity int `yaml:"cache_capacity"`
	// MaxBuffered bounds the writes a site's coordinator holds that some
	// ring does not yet hold; a put waits for room
	// (causal.CoordinatorOptions.MaxBuffered). Default 1024.
	MaxBuffered int `yaml:"max_buffered"`
	// NoLoad skips the load: keys never written read as not found, and
	// are stable in every ring (causal.Store), as a loaded key is once
	// its write completes. By default every key is written once before
	// the run (LoadSessions per client site, through the rings), and the
	// run starts once every write is complete.
	NoLoad bool `yaml:"no_load"`
	// LoadSessions are each client site's sessions writing the load, and
	// reading the warm keys. Default 64.
	LoadSessions int `yaml:"load_sessions"`
	// WarmKeys, under the Karma strategy, is how many of the workload's
	// most popular keys (any, for uniform keys; all of them if it has
	// fewer) each client site reads once before the run, after the load,
	// filling its cache as the reads of a long run would have. Default 0:
	// the caches start empty.
	WarmKeys int `yaml:"warm_keys"`
	// GetTxFraction is the fraction of operations that are
	// get-transactions of TxKeys keys (Karma 4.5), taken from the Gets'
	// share. Default 0, as in the paper's evaluation; TxKeys default 2.
	GetTxFraction float64 `yaml:"get_tx_fraction"`
	TxKeys        int     `yaml:"tx_keys"`
	// Machines, if positive, is each site's computing power counted in
	// machines (Karma 5: eight nodes per datacenter), shared out equally
	// over the storage nodes and, under the Karma strategy, the cache
	// (see causalNodes). Default 0: each node a machine of its own.
	Machines int `yaml:"machines"`
}

// causal reports whether the scenario's table is a causal table.
func (s *Scenario) causal() bool { return s.Causal != nil }

// maxTxKeys bounds a get-transaction's keys.
const maxTxKeys = 64

// validate checks a causal table's section and what a causal table
// rules out elsewhere.
func (karmaPlugin) validate(s *Scenario) error {
	c := s.Causal
	if c == nil {
		if s.Cluster.ReplicasPerSite > 0 {
			return invalid("cluster.replicas_per_site", "for causal tables only (a table's placement names its replicas)")
		}
		return nil
	}
	if len(c.Rings) == 0 {
		return invalid("causal.rings", "none given")
	}
	if _, err := harness.CausalLayout(s.topo, tableName, c.Rings, causal.Karma, 1); err != nil {
		return invalid("causal.rings", "%v", err)
	}
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"notify_every", c.NotifyEvery}, {"read_timeout", c.ReadTimeout}, {"resend", c.Resend}} {
		if f.d < 0 || f.d > maxService {
			return invalid("causal."+f.name, "%s outside [0, %s]", f.d, maxService)
		}
	}
	w := s.Workload
	switch {
	case c.CacheCapacity < 0:
		return invalid("causal.cache_capacity", "negative: %d", c.CacheCapacity)
	case c.MaxBuffered < 0:
		return invalid("causal.max_buffered", "negative: %d", c.MaxBuffered)
	case c.LoadSessions < 0 || c.LoadSessions > maxSessions:
		return invalid("causal.load_sessions", "%d outside [0, %d]", c.LoadSessions, maxSessions)
	case c.WarmKeys < 0 || c.WarmKeys > 10_000_000:
		return invalid("causal.warm_keys", "%d outside 0..10,000,000", c.WarmKeys)
	case c.WarmKeys > 0 && w.Distribution != "zipfian" && w.Distribution != "uniform":
		return invalid("causal.warm_keys", "for zipfian or uniform keys (the most popular keys of distribution %q are not known)", w.Distribution)
	case !(c.GetTxFraction >= 0 && c.GetTxFraction <= 1):
		return invalid("causal.get_tx_fraction", "%v outside [0, 1]", c.GetTxFraction)
	case c.TxKeys < 0 || c.TxKeys > maxTxKeys:
		return invalid("causal.tx_keys", "%d outside [0, %d]", c.TxKeys, maxTxKeys)
	case c.Machines < 0 || c.Machines > maxCores:
		return invalid("causal.machines", "%d outside [0, %d]", c.Machines, maxCores)
	case w.YCSB != "" || w.Group != nil || w.RTW:
		return invalid("workload", "a causal table takes Puts and Gets (put_fraction, distribution): no ycsb, group or rtw")
	case w.Bound != "" || w.PutBound != "" || w.GetBound != "" || w.LoadBound != "":
		return invalid("workload", "a causal table's operations take no bound")
	case w.PutFraction+c.GetTxFraction > 1:
		return invalid("causal.get_tx_fraction", "%v with put_fraction %v is over 1", c.GetTxFraction, w.PutFraction)
	}
	if c.LoadSessions == 0 {
		c.LoadSessions = 64
	}
	if c.Machines > 0 {
		for _, st := range s.topo.Sites {
			if n := len(st.Replicas); n > 0 && c.Machines <= n {
				return invalid("causal.machines", "%d machines at %s, which has %d storage nodes: give more machines than storage nodes (Karma 5: 8 for 6)", c.Machines, st.Name, n)
			}
		}
	}
	return nil
}

// checkStrategies checks a causal scenario's strategies.
func (karmaPlugin) checkStrategies(s *Scenario) error {
	for i, name := range s.Strategies {
		st, err := causal.ParseStrategy(name)
		if err != nil || slices.Index(s.Strategies, name) != i {
			return invalid(fmt.Sprintf("strategies[%d]", i), "%q unknown or repeated (want %s)", name, strings.Join(causalStrategies, ", "))
		}
		if !st.Static() {
			continue
		}
		for _, c := range s.Clients {
			if _, err := harness.CausalLayout(s.topo, tableName, s.Causal.Rings, st, 1); err != nil || !s.hasNodes(c.Site, false) {
				return invalid(fmt.Sprintf("strategies[%d]", i), "%s binds each client to its site's ring, but client site %s has no storage node", name, c.Site)
			}
		}
	}
	if n := len(s.Strategies) * s.Repeat * max(1, s.points()) * max(1, len(s.Series)); n > maxRuns {
		return invalid("strategies", "%d runs (series x sweep points x repeats x strategies) exceed %d", n, maxRuns)
	}
	return nil
}

// causalOutputs are the outputs a causal scenario may ask for.
var causalOutputs = []string{OutCausal, OutSaturation, OutCausalSites, OutCausalTimeline, OutOps}

func (s *Scenario) validateCausalOutputs() error {
	for i, o := range s.Outputs {
		isCausal := slices.Contains(causalOutputs, o) && o != OutOps
		switch {
		case s.causal() && !slices.Contains(causalOutputs, o):
			return invalid(fmt.Sprintf("outputs[%d]", i), "%q is not an output of a causal table (want %s)", o, strings.Join(causalOutputs, ", "))
		case !s.causal() && isCausal:
			return invalid(fmt.Sprintf("outputs[%d]", i), "%q is an output of a causal table: set causal", o)
		}
	}
	for i, v := range s.Paper.Values {
		if slices.Contains(causalMetrics, v.Metric) != s.causal() {
			return invalid(fmt.Sprintf("paper.values[%d].metric", i), "%q: Karma's metrics (%s) are for causal tables only", v.Metric, strings.Join(causalMetrics, ", "))
		}
		if v.Bound != "" && v.Bound != "<" && v.Bound != ">" {
			return invalid(fmt.Sprintf("paper.values[%d].bound", i), "%q: want < or >", v.Bound)
		}
	}
	return nil
}

// karmaPlugin is Karma's part of the lab (above): it claims the
// scenarios with a causal table.
type karmaPlugin struct{}

func (karmaPlugin) outputs() []string {
	return []string{OutCausal, OutSaturation, OutCausalSites, OutCausalTimeline}
}

func (karmaPlugin) metrics() []string { return causalMetrics }

func (karmaPlugin) claims(s *Scenario) bool { return s.causal() }

func (karmaPlugin) variant(name string) (strategyVariant, error) {
	st, err := causal.ParseStrategy(name)
	return strategyVariant{causal: st}, err
}

// session makes a run's sessions a client core's on a causal table (a
// cluster); the simulator's causal clients take no SLA or strategy.
func (karmaPlugin) session(s *Scenario, g *driver.Group) {
	g.Cosla.SLA, g.Cosla.Strategy = causalSessionSLA, clientcore.Closest
	g.Cosla.Client.NotifyEvery = s.Causal.NotifyEvery
}

func (karmaPlugin) describe(s *Scenario, mode string) string {
	if mode == "cluster" {
		return causalDescription(s) + causalClusterDescription(s)
	}
	return causalDescription(s)
}

// mix is what a causal scenario's sessions draw: Puts, Gets and
// get-transactions over the key distribution.
func (karmaPlugin) mix(s *Scenario, _ uint64) (driver.Mix, error) {
	keys, err := s.keyGenerator()
	if err != nil {
		return nil, err
	}
	w, c := s.Workload, s.Causal
	m, err := driver.NewKeyMix([]driver.Weighted{{Kind: driver.Put, Weight: w.PutFraction},
		{Kind: driver.Get, Weight: 1 - w.PutFraction - c.GetTxFraction}, {Kind: driver.GetTx, Weight: c.GetTxFraction}}, keys, w.ValueSize)
	if err != nil {
		return nil, err
	}
	m.TxKeys = c.TxKeys
	return m, nil
}

// causalNodes are the simulator's costs of a causal world's nodes under
// a strategy: the calibrated costs per message kind (calibration.go) and
// the calibrated fsync, with the scenario's overrides (sim section).
//
//   - A storage node (a single-node store with its middle man, Karma 5's
//     Cassandra and MM) serves one message at a time, the messages that
//     carry writes towards stability ahead of the reads waiting
//     (causal.Urgent, as `cosla serve`'s mailbox does), and fsyncs
//     before it acknowledges a write.
//   - The coordinator stands for the client coordinators that Karma 5
//     runs on every node of a datacenter: it serves its messages
//     concurrently (sim.NodeOptions.Concurrent), each at its calibrated
//     cost, and fsyncs its write buffer, so that it adds latency but
//     does not limit throughput beyond the storage nodes'.
//   - The cache is an in-memory service (Karma 3: a datacenter's cache
//     servers; Karma 5 gives them two machines of eight): its reads cost
//     a calibrated lookup, not a storage read (calibration.go,
//     calibratedCacheRead), and it serves its messages concurrently, as
//     the coordinator does. A real cache's work per request is mostly the
//     transport's, which runs on every core of its machines at once; the
//     part that a cosla cache core does in turn, the lookup, takes about
//     1 µs, so one core of it alone would serve a million lookups a
//     second, more than any of our sites asks of it. Served one at a
//     time at a storage read's price, it saturated as soon as gets
//     reached it (issue 28: Get p50 2.5 -> 14 ms).
//
// With Machines set, a site's machines are shared out equally (Karma 5:
// "to avoid giving Karma a resource advantage"): under the Karma strategy
// the storage nodes take one machine each and the cache the rest (Karma:
// six and two), so the cache's costs are divided by Machines minus the
// storage nodes; under the other strategies the storage nodes share all
// the machines (the paper's eight storage nodes), so their costs are
// multiplied by storage nodes over Machines.
func causalNodes(s *Scenario, strategy causal.Strategy, storageNodes int) (storage, cache, coordinator sim.NodeOptions) {
	base := s.Sim.nodeOptions()
	storage, coordinator = base, base
	cache = s.Sim.cacheOptions()
	coordinator.Concurrent = true
	if m := s.Causal.Machines; m > 0 && storageNodes > 0 && !s.Sim.Free {
		if strategy.Cached() {
			cache = scaleService(cache, 1/float64(m-storageNodes))
		} else {
			storage = scaleService(storage, float64(storageNodes)/float64(m))
		}
	}
	return storage, cache, coordinator
}

// scaleService multiplies every per-kind service time by f.
func scaleService(o sim.NodeOptions, f float64) sim.NodeOptions {
	by := make(map[string]sim.Latency, len(o.ServiceByKind))
	for k, l := range o.ServiceByKind {
		by[k] = sim.Latency{Mean: time.Duration(float64(l.Mean) * f), Jitter: time.Duration(float64(l.Jitter) * f)}
	}
	o.ServiceByKind = by
	return o
}

// storageNodes is the storage nodes of the topology's first site that
// has some (Karma's sites are alike).
func storageNodes(s *Scenario) int {
	for _, st := range s.topo.Sites {
		if len(st.Replicas) > 0 {
			return len(st.Replicas)
		}
	}
	return 0
}

// karmaWorld builds a causal unit's simulated world and the targets
// that drive it: the run's, and the load's; observe, if set, sees every
// message sent. It is the one place that says how the simulator hosts a
// causal table.
func karmaWorld(u *unit, observe func(from, to wire.NodeID, m wire.Msg)) (w *harness.CausalWorld, run, load driver.Target, err error) {
	s, c := u.s, u.s.Causal
	strategy := u.runs[0].variant.causal
	storage, cache, coordinator := causalNodes(s, strategy, storageNodes(s))
	w, err = harness.NewCausal(harness.CausalOptions{Seed: u.seed, Topology: s.topo, Rings: c.Rings, Strategy: strategy, Name: tableName,
		Storage: storage, Cache: cache, Coordinator: coordinator, ClientNode: s.Sim.clientOptions(), Cores: s.Sim.Cores,
		Client: clientcore.Options{NotifyEvery: c.NotifyEvery},
		Causal: site.CausalOptions{
			Coordinator: causal.CoordinatorOptions{ReadTimeout: c.ReadTimeout, Resend: c.Resend, MaxBuffered: c.MaxBuffered},
			Store:       causal.StoreOptions{Resend: c.Resend},
			Cache:       causal.CacheOptions{Capacity: c.CacheCapacity, ReadTimeout: c.ReadTimeout},
		},
		Observe: observe})
	if err != nil {
		return nil, nil, nil, err
	}
	// The run's and the load's clients are client cores, as on a
	// cluster (the load's groups are named load/SITE).
	target := &driver.SimTarget{World: w.World, Table: w.Name, Node: s.Sim.clientOptions()}
	return w, target, target, nil
}

// runSim runs a causal unit in a world of its own and returns the
// world's trace hash: load the keys through the rings and wait until
// every write is complete, then run the workload with the schedule.
func (karmaPlugin) runSim(u *unit, t timing) (uint64, error) {
	s := u.s
	load := !s.Causal.NoLoad && s.Workload.Keys > 0
	loading, completes := false, 0
	probe := newStabilityProbe(s)
	observe := func(from, to wire.NodeID, m wire.Msg) {
		if loading {
			if _, ok := m.(*wire.CausalComplete); ok {
				completes++
			}
			return
		}
		probe.observe(from, to, m)
	}
	w, target, loadTarget, err := karmaWorld(u, observe)
	if err != nil {
		return 0, err
	}
	loading = true
	if load {
		if err := loadCausal(u, w.Sim, loadTarget, &completes); err != nil {
			return 0, fmt.Errorf("load: %w", err)
		}
	}
	if n := warmKeys(s, w); n > 0 {
		if err := runLoad(w.Sim, loadTarget, causalWarmGroups(s, n), n*len(s.Clients)); err != nil {
			return 0, fmt.Errorf("warming the caches: %w", err)
		}
	}
	loading = false
	rec := newCausalUnit(u, t)
	u.own = rec
	probe.start(w.Sim.Now, rec.warmup, rec.end)
	rec.watchCaches(w)
	if err := driveSim(u, t, w.Sim, target); err != nil {
		return 0, err
	}
	if rec.cacheTo == nil {
		// A run bounded by operations ends with its last.
		rec.cacheTo = readCaches(w)
	}
	rec.finish()
	rec.result.AbandonedReads = abandonedReads(w)
	rec.result.Stability = probe.stability(s)
	return w.Sim.TraceHash(), u.check()
}

// abandonedReads sums the reads the world's running stores and caches
// dropped because their senders had given them up.
func abandonedReads(w *harness.CausalWorld) uint64 {
	var n uint64
	for _, id := range w.Stores {
		if s, err := w.Store(id); err == nil {
			n += s.Metrics().AbandonedReads
		}
	}
	for _, id := range w.Caches {
		if c, err := w.Cache(id); err == nil {
			n += c.Metrics().AbandonedReads
		}
	}
	return n
}

// cacheCount is what caches counted: the reads they served from an
// entry and those they filled from a ring (causal.CacheMetrics).
type cacheCount struct{ hits, misses uint64 }

// since is what a cache counted after an earlier reading of it: a cache
// that restarted in between counts from zero again, so all it counted is
// since.
func (n cacheCount) since(before cacheCount) cacheCount {
	if n.hits < before.hits || n.misses < before.misses {
		return n
	}
	return cacheCount{n.hits - before.hits, n.misses - before.misses}
}

// hitPct is the hit ratio in percent, nil when no read reached a cache.
func (n cacheCount) hitPct() *float64 {
	if n.hits+n.misses == 0 {
		return nil
	}
	p := 100 * float64(n.hits) / float64(n.hits+n.misses)
	return &p
}

// cacheReading is every running cache's counts at one time.
type cacheReading map[wire.NodeID]cacheCount

// readCaches reads the counters of the world's running caches.
func readCaches(w *harness.CausalWorld) cacheReading {
	out := cacheReading{}
	for _, id := range w.Caches {
		if c, err := w.Cache(id); err == nil {
			m := c.Metrics()
			out[id] = cacheCount{m.Hits, m.Misses}
		}
	}
	return out
}

// between sums what the caches of a site ("" for every site) counted
// from one reading to a later one.
func between(from, to cacheReading, site string) cacheCount {
	var sum cacheCount
	for id, n := range to {
		if site != "" && siteOf(id) != site {
			continue
		}
		d := n.since(from[id])
		sum.hits += d.hits
		sum.misses += d.misses
	}
	return sum
}

// watchCaches reads the world's caches as the workload starts (now), at
// every timeline step from then, at the warmup's end, halfway through the
// measured window and at the run's, so that the hit ratio is the measured
// window's, not the warmup's, and its halves show whether it held: a run
// starts with its caches empty (loadCausal), and its first seconds miss
// far more than its later ones.
func (c *causalUnit) watchCaches(w *harness.CausalWorld) {
	if len(w.Caches) == 0 {
		return
	}
	sm := w.Sim
	origin := sm.Now()
	sm.At(origin+c.warmup, func() { c.cacheFrom = readCaches(w) })
	if c.end > 0 {
		sm.At(origin+(c.warmup+c.end)/2, func() { c.cacheMid = readCaches(w) })
		sm.At(origin+c.end, func() { c.cacheTo = readCaches(w) })
	}
	var step func()
	step = func() {
		c.cacheSteps = append(c.cacheSteps, readCaches(w))
		sm.After(causalBucket, step)
	}
	sm.At(origin, step)
}

// loadSettle is how long the world runs after the load's last write is
// complete, for its STABLE notices to land.
const loadSettle = 2 * time.Second

// loadCausal writes every key once, from LoadSessions sessions at each
// client site, through the rings (YCSB's load phase), then runs the world
// until every write is complete (completes counts the completions the
// coordinators sent) and its STABLE notices have landed: the run starts
// with every key stable in every ring and no cache filled.
func loadCausal(u *unit, sm *sim.Sim, target driver.Target, completes *int) error {
	s := u.s
	keys := s.Workload.Keys
	cosla := driver.Cosla{SLA: causalSessionSLA, Strategy: clientcore.Closest, Client: clientcore.Options{NotifyEvery: s.Causal.NotifyEvery}}
	if err := runLoad(sm, target, causalLoadGroups(s, cosla), keys); err != nil {
		return err
	}
	if err := sm.RunUntil(sm.Now()+time.Duration(keys)*time.Second, func() bool { return *completes >= keys }); err != nil {
		return err
	}
	if *completes < keys {
		return fmt.Errorf("%d of %d loaded writes completed", *completes, keys)
	}
	return sm.Run(sm.Now() + loadSettle)
}

// warmKeys is how many keys each client site reads to warm its cache
// before the run: causal.warm_keys when the world has caches, else 0.
func warmKeys(s *Scenario, w *harness.CausalWorld) int {
	if len(w.Caches) == 0 {
		return 0
	}
	return min(s.Causal.WarmKeys, s.Workload.Keys)
}

// causalWarmGroups are the groups that read the n most popular keys of
// the workload once at each client site, hottest first, LoadSessions
// sessions a site: what the site's cache would hold after a long run,
// short of the entries writes invalidate (Karma 5 runs 10 million
// operations a point, and its 69% hit ratio is the whole run's). The
// keys of YCSB's scrambled zipfian by rank (workload.ScrambledItem);
// with uniform keys, any n.
func causalWarmGroups(s *Scenario, n int) []*driver.Group {
	keys := make([]string, n)
	for r := range keys {
		item := uint64(r)
		if s.Workload.Distribution == "zipfian" {
			item = workload.ScrambledItem(item, uint64(s.Workload.Keys))
		}
		keys[r] = workload.Key(item)
	}
	cosla := driver.Cosla{SLA: causalSessionSLA, Strategy: clientcore.Closest}
	var groups []*driver.Group
	for i, c := range s.Clients {
		groups = append(groups, &driver.Group{Name: "warm/" + c.Site, Site: c.Site, Sessions: s.Causal.LoadSessions,
			Rand: rand.New(rand.NewPCG(1, uint64(i))), Streams: []driver.Stream{{Mix: &driver.ReadMix{Keys: keys}}}, Cosla: cosla})
	}
	return groups
}

// causalLoadGroups are the groups that write a causal table's keys once:
// LoadSessions sessions at each client site, sharing one pass over the
// keys (YCSB's load phase), each a client of the given kind.
func causalLoadGroups(s *Scenario, cosla driver.Cosla) []*driver.Group {
	mix := &driver.LoadMix{N: uint64(s.Workload.Keys), ValueSize: s.Workload.ValueSize}
	var groups []*driver.Group
	for i, c := range s.Clients {
		groups = append(groups, &driver.Group{Name: "load/" + c.Site, Site: c.Site, Sessions: s.Causal.LoadSessions,
			Rand: rand.New(rand.NewPCG(0, uint64(i))), Streams: []driver.Stream{{Mix: mix}}, Cosla: cosla})
	}
	return groups
}

// causalBucket is the length of a timeline's step.
const causalBucket = time.Second

// causalUnit records a causal unit's ops: the whole system's, each client
// site's (its run's) and the per-second timeline.
type causalUnit struct {
	u      *unit
	all    *causalRecord
	byRun  map[*run]*causalRecord
	warmup time.Duration
	// end is the run's duration, or 0 for a run bounded by operations.
	end time.Duration
	// seconds are the timeline's buckets, by completion.
	seconds []causalSecondSum
	// cacheFrom, cacheMid and cacheTo read the caches at the warmup's
	// end, halfway to the run's (in a run of a set duration) and at the
	// run's end, cacheSteps at the start of each of the timeline's
	// buckets (watchCaches); nil in a cluster run, empty in a world
	// without caches.
	cacheFrom, cacheMid, cacheTo cacheReading
	cacheSteps                   []cacheReading
	result                       CausalRun
}

type causalSecondSum struct {
	ops, gets  int64
	getLatency time.Duration
}

func newCausalUnit(u *unit, t timing) *causalUnit {
	w := u.s.Workload
	c := &causalUnit{u: u, all: newCausalRecord(), byRun: map[*run]*causalRecord{}, warmup: t.scaled(w.Warmup)}
	if w.Duration > 0 {
		c.end = t.scaled(w.Duration)
	}
	for _, r := range u.runs {
		c.byRun[r] = newCausalRecord()
	}
	return c
}

// causalRecord sums one site's, or the whole system's, recorded ops.
type causalRecord struct {
	gets, txs, puts, failed    int64
	local, restricted, flight  int64
	notFound                   int64
	bySource                   [3]int64 // wire.FromRing, FromBuffer, FromCache
	ringLocal                  int64
	getUS, txUS, putUS         *hdrhistogram.Histogram
	last                       time.Duration
	inWindow                   int64
	sessions                   int
	accesses, restrictedAccess int64
	// failedAt counts the failed operations by the node that did not
	// answer them.
	failedAt map[string]int64
}

func newCausalRecord() *causalRecord {
	h := func() *hdrhistogram.Histogram { return hdrhistogram.New(1, driver.MaxLatency.Microseconds(), 3) }
	return &causalRecord{getUS: h(), txUS: h(), putUS: h(), failedAt: map[string]int64{}}
}

// op records an op of run r; recorded says it started after the warmup.
func (c *causalUnit) op(r *run, op *driver.Op, recorded bool) {
	if op.Err == nil {
		i := int(op.End / causalBucket)
		for len(c.seconds) <= i {
			c.seconds = append(c.seconds, causalSecondSum{})
		}
		c.seconds[i].ops++
		if op.Kind == driver.Get {
			c.seconds[i].gets++
			c.seconds[i].getLatency += op.Latency()
		}
	}
	if op.Err == nil && op.End >= c.warmup && (c.end == 0 || op.End < c.end) {
		c.all.inWindow++
		c.byRun[r].inWindow++
	}
	if !recorded {
		return
	}
	switch op.Kind {
	case driver.Get, driver.GetTx:
		r.r.Gets++
	case driver.Put:
		r.r.Puts++
	}
	site := r.r.Client
	c.all.add(op, site)
	c.byRun[r].add(op, site)
}

func (rec *causalRecord) add(op *driver.Op, site string) {
	rec.last = max(rec.last, op.End)
	rec.accesses++
	if op.Restricted {
		rec.restrictedAccess++
	}
	if op.Err != nil {
		rec.failed++
		rec.failedAt[cmp.Or(op.Node, "unknown")]++
		return
	}
	us := min(max(op.Latency().Microseconds(), 1), driver.MaxLatency.Microseconds())
	switch op.Kind {
	case driver.Put:
		rec.puts++
		_ = rec.putUS.RecordValue(us)
		return
	case driver.Get:
		rec.gets++
		_ = rec.getUS.RecordValue(us)
	case driver.GetTx:
		rec.txs++
		_ = rec.txUS.RecordValue(us)
	}
	local := siteOf(wire.NodeID(op.Node)) == site
	if local {
		rec.local++
	}
	if op.Restricted {
		rec.restricted++
	}
	if op.InFlight {
		rec.flight++
	}
	if !op.Found {
		rec.notFound++
	}
	if int(op.Source) < len(rec.bySource) {
		rec.bySource[op.Source]++
	}
	if op.Source == wire.FromRing && local {
		rec.ringLocal++
	}
}

// stats turns a record into figures: over the run's measured window
// from warmup to end, or without an end to the last op's.
func (rec *causalRecord) stats(site string, warmup, end time.Duration) CausalStats {
	reads := rec.gets + rec.txs
	pctOf := func(n, of int64) float64 {
		if of == 0 {
			return 0
		}
		return 100 * float64(n) / float64(of)
	}
	st := CausalStats{Site: site, Sessions: rec.sessions, Ops: reads + rec.puts, Gets: rec.gets, GetTxs: rec.txs, Puts: rec.puts, Failed: rec.failed,
		GetLatencyMS: driver.LatencyOf(rec.getUS), PutLatencyMS: driver.LatencyOf(rec.putUS), GetResidualMS: residualMS(rec.getUS),
		LocalPct: pctOf(rec.local, reads), RestrictedPct: pctOf(rec.restrictedAccess, rec.accesses), InFlightPct: pctOf(rec.flight, reads),
		BufferPct: pctOf(rec.bySource[wire.FromBuffer], reads), CachePct: pctOf(rec.bySource[wire.FromCache], reads),
		RingLocalPct: pctOf(rec.ringLocal, reads), RingRemotePct: pctOf(rec.bySource[wire.FromRing]-rec.ringLocal, reads),
		NotFoundPct: pctOf(rec.notFound, reads), FailedPct: pctOf(rec.failed, rec.accesses)}
	if len(rec.failedAt) > 0 {
		st.FailedAt = maps.Clone(rec.failedAt)
	}
	if rec.txs > 0 {
		l := driver.LatencyOf(rec.txUS)
		st.GetTxLatencyMS = &l
	}
	switch {
	case end > warmup:
		st.ThroughputOpsPerS = float64(rec.inWindow) / (end - warmup).Seconds()
	case rec.last > warmup:
		st.ThroughputOpsPerS = float64(st.Ops) / (rec.last - warmup).Seconds()
	}
	return st
}

// residualMS is the mean residual of h's values (microseconds), in
// milliseconds: E[L^2] / 2E[L], each bar's values taken at its middle.
func residualMS(h *hdrhistogram.Histogram) float64 {
	var sum, squares float64
	for _, b := range h.Distribution() {
		v := float64(b.From+b.To) / 2
		sum += v * float64(b.Count)
		squares += v * v * float64(b.Count)
	}
	if sum == 0 {
		return 0
	}
	return squares / (2 * sum) / 1000
}

// finish computes the unit's figures into its runs and its CausalRun.
// check reports a unit that did nothing: its client sites make one
// run, and a far site may end a short one without an operation of its
// own.
func (c *causalUnit) check() error {
	if c.all.accesses == 0 {
		return c.u.nothingMeasured(c.u.runs[0].r.Strategy)
	}
	return nil
}

func (c *causalUnit) addTo(res *Result, hash string) {
	r := c.result
	r.TraceHash = hash
	res.Causal = append(res.Causal, r)
}

func (c *causalUnit) finish() {
	u := c.u
	first := u.runs[0].r
	res := CausalRun{Series: first.Series, Point: first.Point, Seed: first.Seed, Strategy: first.Strategy, Events: u.events}
	sessions := 0
	for _, r := range u.runs {
		rec := c.byRun[r]
		rec.sessions = r.r.Sessions
		sessions += r.r.Sessions
		st := rec.stats(r.r.Client, c.warmup, c.end)
		st.CacheHitPct = c.cacheHitPct(r.r.Client)
		r.r.Causal = &st
		r.r.AvgLatencyMS = st.GetLatencyMS.Mean
		res.Sites = append(res.Sites, st)
	}
	c.all.sessions = sessions
	res.CausalStats = c.all.stats("", c.warmup, c.end)
	res.CacheHitPct = c.cacheHitPct("")
	if c.cacheMid != nil {
		first, second := between(c.cacheFrom, c.cacheMid, "").hitPct(), between(c.cacheMid, c.cacheTo, "").hitPct()
		if first != nil && second != nil {
			res.CacheHitHalvesPct = []float64{*first, *second}
		}
	}
	res.Timeline, res.Phases = c.timeline()
	if !u.s.wants(OutCausalTimeline) {
		res.Timeline = nil
	}
	c.result = res
}

// cacheHitPct is the hit ratio of a site's cache ("" for all caches)
// over the measured window, nil without caches or reads that reached
// them.
func (c *causalUnit) cacheHitPct(site string) *float64 {
	if c.cacheTo == nil {
		return nil
	}
	return between(c.cacheFrom, c.cacheTo, site).hitPct()
}

// timeline returns the per-second throughput and Get latency, with
// throughput normalized by its mean over the seconds from the warmup's
// end to the first scheduled change (or to the end), and the figures of
// each phase between scheduled changes.
func (c *causalUnit) timeline() ([]CausalSecond, []CausalPhase) {
	out := c.perSecond()
	bounds := c.phaseBounds()
	var phases []CausalPhase
	end := float64(len(out)) * causalBucket.Seconds()
	for i, b := range bounds {
		to := end
		if i+1 < len(bounds) {
			to = bounds[i+1].at
		}
		if p, ok := c.phase(out, b, to); ok {
			phases = append(phases, p)
		}
	}
	if len(phases) > 0 && phases[0].OpsPerS > 0 {
		base := phases[0]
		for i := range phases {
			phases[i].ThroughputChangePct = 100 * (phases[i].OpsPerS/base.OpsPerS - 1)
			if base.GetMeanMS > 0 {
				phases[i].LatencyChangePct = 100 * (phases[i].GetMeanMS/base.GetMeanMS - 1)
			}
		}
		for i := range out {
			out[i].Normalized = out[i].OpsPerS / base.OpsPerS
		}
	}
	if len(bounds) == 1 {
		phases = nil // no schedule: one phase, the run itself
	}
	return out, phases
}

// perSecond returns the timeline's seconds but the last, which the run's
// end cuts short.
func (c *causalUnit) perSecond() []CausalSecond {
	var out []CausalSecond
	n := len(c.seconds)
	if n > 1 {
		n--
	}
	for i := range n {
		b := c.seconds[i]
		sec := CausalSecond{AtS: float64(i) * causalBucket.Seconds(), OpsPerS: float64(b.ops) / causalBucket.Seconds()}
		if b.gets > 0 {
			sec.GetMeanMS = ms(b.getLatency) / float64(b.gets)
		}
		if i+1 < len(c.cacheSteps) {
			sec.CacheHitPct = between(c.cacheSteps[i], c.cacheSteps[i+1], "").hitPct()
		}
		out = append(out, sec)
	}
	return out
}

// phaseBound is where a phase of the timeline starts, and its label.
type phaseBound struct {
	at    float64
	label string
}

// phaseBounds splits the run from the warmup's end at each distinct time
// of a scheduled change.
func (c *causalUnit) phaseBounds() []phaseBound {
	bounds := []phaseBound{{c.warmup.Seconds(), "before"}}
	for _, e := range scheduled(c.u.events) {
		if last := &bounds[len(bounds)-1]; e.AtS <= last.at {
			if e.AtS == last.at && !strings.Contains(last.label, e.Label) && last.label != "before" {
				last.label += "+" + e.Label
			}
			continue
		}
		bounds = append(bounds, phaseBound{e.AtS, e.Label})
	}
	return bounds
}

// phase sums the seconds of out from b to to; false if there are none.
func (c *causalUnit) phase(out []CausalSecond, b phaseBound, to float64) (CausalPhase, bool) {
	p := CausalPhase{Phase: b.label, FromS: b.at, ToS: to}
	var ops, gets int64
	var lat time.Duration
	var secs int
	for j, sec := range out {
		if sec.AtS >= b.at && sec.AtS < to {
			ops += c.seconds[j].ops
			gets += c.seconds[j].gets
			lat += c.seconds[j].getLatency
			secs++
		}
	}
	if secs == 0 {
		return p, false
	}
	p.OpsPerS = float64(ops) / (float64(secs) * causalBucket.Seconds())
	if gets > 0 {
		p.GetMeanMS = ms(lat) / float64(gets)
	}
	return p, true
}

// CausalStats are the figures of a causal table's run, or of one client
// site's share of it. Shares are percentages: of the reads that succeeded
// (Gets and get-transactions) for the local share and sources, of every
// access (Puts included) for the restricted and failed shares.
type CausalStats struct {
	// Site is the client site, empty for the whole system.
	Site     string `json:"site,omitempty"`
	Sessions int    `json:"sessions"`
	// Ops counts the operations that started after the warmup and
	// succeeded, Failed those that failed. ThroughputOpsPerS counts the
	// operations that succeeded between the warmup's end and the run's
	// (workload.duration), per second; in a run bounded by operations,
	// Ops per second from the warmup's end to the last one's end.
	Ops               int64   `json:"ops"`
	Gets              int64   `json:"gets"`
	GetTxs            int64   `json:"get_txs,omitempty"`
	Puts              int64   `json:"puts"`
	Failed            int64   `json:"failed"`
	ThroughputOpsPerS float64 `json:"throughput_ops_per_s"`
	// GetLatencyMS is the Gets' latency, PutLatencyMS the Puts'
	// (answered from the write buffer: local), GetTxLatencyMS the
	// get-transactions'.
	GetLatencyMS   driver.Latency  `json:"get_latency_ms"`
	PutLatencyMS   driver.Latency  `json:"put_latency_ms"`
	GetTxLatencyMS *driver.Latency `json:"get_tx_latency_ms,omitempty"`
	// GetResidualMS is the Gets' mean residual latency, E[L^2] / 2E[L]:
	// how long, from a moment taken at random, a session waits for the
	// Get it has in progress to end (a long Get is likelier to be the one
	// in progress). The restricted share's model uses it (karma_model.go).
	GetResidualMS float64 `json:"get_residual_ms,omitempty"`
	// LocalPct: reads served at the client's own site, from the write
	// buffer, the cache or a storage node there (Karma 6.1, Fig. 12).
	LocalPct float64 `json:"local_pct"`
	// RestrictedPct: accesses made while the session was bound to a ring
	// by a dynamic ring restriction (Karma 4.2, Fig. 11). InFlightPct:
	// reads of a version not yet in every ring.
	RestrictedPct float64 `json:"restricted_pct"`
	InFlightPct   float64 `json:"in_flight_pct"`
	// Where reads were served from: the session's write buffer, the
	// site's cache, a ring's storage node at the client's site or at
	// another (a cache miss counts as its ring read).
	BufferPct     float64 `json:"buffer_pct"`
	CachePct      float64 `json:"cache_pct"`
	RingLocalPct  float64 `json:"ring_local_pct"`
	RingRemotePct float64 `json:"ring_remote_pct"`
	// NotFoundPct: reads of a key never written (none once the keys are
	// loaded; with causal.no_load, the keys no Put wrote yet).
	NotFoundPct float64 `json:"not_found_pct"`
	FailedPct   float64 `json:"failed_pct"`
	// FailedAt counts the failed operations by the node that did not
	// answer them ("unknown" where the client could not say).
	FailedAt map[string]int64 `json:"failed_at,omitempty"`
	// CacheHitPct is the caches' hit ratio over the measured window: of
	// the reads that reached the site's cache (every site's, for the
	// whole system) after the warmup, those it served from an entry
	// rather than filled from a ring (Karma 6.4 gives a 31% miss ratio
	// at 95-5). Unlike CachePct it counts the cache's own reads, and a
	// read it filled counts as a miss whether or not the fill succeeded.
	// Nil where no read reached a cache: strategies without one, and
	// cluster runs, whose caches' counters the experiment cannot read.
	CacheHitPct *float64 `json:"cache_hit_pct,omitempty"`
}

// CausalRun is one run of a causal table: a (series, point, seed,
// strategy), all its client sites at once in one world.
type CausalRun struct {
	Series   string `json:"series,omitempty"`
	Point    string `json:"point,omitempty"`
	Seed     uint64 `json:"seed"`
	Strategy string `json:"strategy"`
	CausalStats
	// CacheHitHalvesPct is CacheHitPct over the measured window's first
	// and second halves (runs of a set duration, with caches): the
	// window is long and warm enough when they agree.
	CacheHitHalvesPct []float64 `json:"cache_hit_halves_pct,omitempty"`
	// AbandonedReads counts, over the whole run (its warmup included),
	// the reads that stores and caches dropped unserved because the
	// coordinator or cache that sent them had stopped waiting (wire.Read's
	// Deadline). The simulator only.
	AbandonedReads uint64 `json:"abandoned_reads,omitempty"`
	// Sites are each client site's share.
	Sites []CausalStats `json:"sites"`
	// Timeline is the run second by second (causal-timeline output);
	// Phases the run between scheduled changes (with a schedule).
	Timeline  []CausalSecond `json:"timeline,omitempty"`
	Phases    []CausalPhase  `json:"phases,omitempty"`
	Events    []EventRecord  `json:"events,omitempty"`
	TraceHash string         `json:"trace_hash"`
	// Stability is the run's time to stability, for the restricted
	// share's model (karma_model.go). The simulator only.
	Stability *Stability `json:"stability,omitempty"`
}

// CausalSecond is one second of a run: the operations that completed in
// it, their number over the mean before the first scheduled change
// (Karma Fig. 8's normalized throughput), the Gets' mean latency, and
// the caches' hit ratio over the second (nil without caches or reads
// that reached them; it shows how long the caches take to warm).
type CausalSecond struct {
	AtS         float64  `json:"at_s"`
	OpsPerS     float64  `json:"ops_per_s"`
	Normalized  float64  `json:"normalized"`
	GetMeanMS   float64  `json:"get_mean_ms"`
	CacheHitPct *float64 `json:"cache_hit_pct,omitempty"`
}

// CausalPhase is a run between two scheduled changes: "before" the
// first (from the warmup's end), then from each change, named by its
// label, to the next. The changes are relative to the first phase (Karma
// Fig. 9's degradation).
type CausalPhase struct {
	Phase               string  `json:"phase"`
	FromS               float64 `json:"from_s"`
	ToS                 float64 `json:"to_s"`
	OpsPerS             float64 `json:"ops_per_s"`
	GetMeanMS           float64 `json:"get_mean_ms"`
	ThroughputChangePct float64 `json:"throughput_change_pct"`
	LatencyChangePct    float64 `json:"latency_change_pct"`
}

// peak is a strategy's highest throughput over a series' points: the
// saturation point of a sessions sweep (Karma 5: "the number of client
// threads are empirically increased till the system saturates").
type peak struct {
	run CausalRun
	// saturated: the last point did not raise throughput by more than
	// saturationGain over the one before, so the sweep reached the
	// plateau.
	saturated bool
	points    int
}

// saturationGain is the throughput gain of a sweep's last point, over
// the one before, below which the sweep counts as saturated.
const saturationGain = 0.05

// peaks returns, per (series, strategy) in order of appearance, the run
// of highest throughput (seeds are told apart: the first seed's).
func peaks(r *Result) ([]string, map[[2]string]peak) {
	var order []string
	out := map[[2]string]peak{}
	byKey := map[[2]string][]CausalRun{}
	for _, c := range r.Causal {
		if c.Seed != r.Seed {
			continue
		}
		k := [2]string{c.Series, c.Strategy}
		if _, ok := byKey[k]; !ok {
			order = append(order, c.Series+"\x00"+c.Strategy)
		}
		byKey[k] = append(byKey[k], c)
	}
	for k, runs := range byKey {
		p := peak{run: runs[0], points: len(runs)}
		for _, c := range runs {
			if c.ThroughputOpsPerS > p.run.ThroughputOpsPerS {
				p.run = c
			}
		}
		n := len(runs)
		p.saturated = n >= 2 && runs[n-1].ThroughputOpsPerS < (1+saturationGain)*runs[n-2].ThroughputOpsPerS
		out[k] = p
	}
	return order, out
}

func gainPct(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return 100 * (a/b - 1)
}

// causalDescription is the report's line on a causal table's world.
func causalDescription(s *Scenario) string {
	c := s.Causal
	var rings []string
	for _, r := range c.Rings {
		rings = append(rings, "{"+strings.Join(r, ", ")+"}")
	}
	out := fmt.Sprintf("- topology: %s; a causal table over the rings %s (cops-ideal: one ring per site), a client coordinator at every site and a cache under karma",
		s.topo.Name, strings.Join(rings, ", "))
	if c.NoLoad {
		out += "; keys not loaded (never written keys are stable everywhere)"
	} else {
		out += fmt.Sprintf("; keys loaded through the rings by %d sessions per client site", c.LoadSessions)
	}
	if c.WarmKeys > 0 {
		out += fmt.Sprintf("; under karma each client site reads the %d most popular keys before the run, warming its cache", c.WarmKeys)
	}
	if c.NotifyEvery > 0 {
		out += fmt.Sprintf("; notify-after every %s", c.NotifyEvery)
	}
	if c.GetTxFraction > 0 {
		out += fmt.Sprintf("; get-transactions of %d keys, fraction %g", max(c.TxKeys, 2), c.GetTxFraction)
	}
	if c.Machines > 0 {
		out += fmt.Sprintf("; %d machines per site shared by its storage nodes and cache", c.Machines)
	}
	if _, cache, _ := causalNodes(s, causal.Karma, storageNodes(s)); !s.Sim.Free {
		out += fmt.Sprintf("; the cache serves its reads concurrently, %s each (calibration.go, causalNodes)", cache.ServiceByKind["read"].Mean)
	}
	return out
}

// CausalResult is Karma's section of a scenario's result.
type CausalResult struct {
	// Causal has one entry per run of a causal table's scenario (a
	// series, point, seed and strategy, all its client sites in one
	// world): Karma's figures.
	Causal []CausalRun `json:"causal,omitempty"`
}

func (karmaPlugin) sweepParams() map[string]sweepParam {
	return map[string]sweepParam{
		// total_sessions spreads sessions over the client sites, the first
		// sites taking one more when they do not divide evenly (Karma 5's
		// client threads, 600 to 1200 over eight datacenters).
		"total_sessions": func(s *Scenario, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < len(s.Clients) {
				return fmt.Errorf("total_sessions %q: want a number of at least one session per client site (%d)", v, len(s.Clients))
			}
			for i := range s.Clients {
				s.Clients[i].Sessions = n / len(s.Clients)
				if i < n%len(s.Clients) {
					s.Clients[i].Sessions++
				}
			}
			return nil
		},
		// read_write is a read-write ratio, "95-5" (Karma 6.3, Fig. 10):
		// the put fraction is W/(R+W).
		"read_write": func(s *Scenario, v string) error {
			rs, ws, ok := strings.Cut(v, "-")
			r, rerr := strconv.ParseFloat(rs, 64)
			w, werr := strconv.ParseFloat(ws, 64)
			if !ok || rerr != nil || werr != nil || !(r >= 0) || !(w > 0) {
				return fmt.Errorf("read_write %q: want R-W, as 95-5, W positive", v)
			}
			s.Workload.PutFraction = w / (r + w)
			return nil
		},
	}
}

// Karma's outputs, for causal tables: each run's throughput, latencies,
// local and restricted shares and sources (Figs 7, 11, 12); the peak of
// each strategy over a sessions sweep and how the strategies compare
// there (Figs 7a, 10; 6.5); the same per client site; throughput and Get
// latency second by second, and per phase of the schedule (Figs 8-9).
const (
	OutCausal         = "causal"
	OutSaturation     = "saturation"
	OutCausalSites    = "causal-sites"
	OutCausalTimeline = "causal-timeline"
)
