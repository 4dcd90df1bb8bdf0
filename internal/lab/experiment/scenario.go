package experiment

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/cosla/cosla/internal/core/causal"
	"github.com/cosla/cosla/internal/core/clientcore"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/runtime/topology"
	"github.com/cosla/cosla/sla"
)

// A Scenario is one experiment, read from a YAML file: the world (topology
// and table placement), the SLAs, the workload, the client sites (with
// their sessions) and strategies to compare, a sweep over one parameter
// and repeats over seeds, a schedule of changes to the world, which
// tables and plots to produce, and the paper's numbers to set ours
// beside. Adding an experiment is writing one; the shipped ones are in
// presets/.
//
// In the simulator every (sweep point, repeat, SLA, client site,
// strategy) combination runs in a fresh world with its seed, so the
// strategies face the same workload; on a cluster (RunCluster) the
// client sites and strategies of a point run at once.
type Scenario struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	// Reference names what the experiment reproduces: the paper, its
	// section and figures.
	Reference string `yaml:"reference"`
	// Topology is a preset name (topology.Presets) or, when
	// TopologyInline is set, ignored. Default defaultTopology.
	Topology       string             `yaml:"topology"`
	TopologyInline *topology.Topology `yaml:"topology_inline"`
	Table          TableSpec          `yaml:"table"`
	// Causal, if set, makes the table a causal table (DESIGN.md section
	// 5): its rings replace the table section, its Gets carry no SLA
	// (slas must be empty), the strategies are causalStrategies, and
	// every client site of a run drives the one world at once.
	Causal *CausalSpec `yaml:"causal"`
	// SLAs are the SLAs of the Gets; required unless the table is
	// causal.
	SLAs     []SLASpec    `yaml:"slas"`
	Workload WorkloadSpec `yaml:"workload"`
	// Clients are the client sites, each with its number of sessions: a
	// list of sites (one session each) or a map from site to sessions.
	// Each site must host a client. Default: every site with a client,
	// one session each.
	Clients ClientSites `yaml:"clients"`
	// Active, if set, gives client sites hours: a site named here starts
	// operations only from its first time until its second, since the
	// workload started (load that follows the sun); a site it does not
	// name runs throughout. Every client site of a unit then drives one
	// world at once. Closed loops only (no rate); simulator only.
	Active map[string][]time.Duration `yaml:"active"`
	// Reconfigure, if set, turns the configuration service's planner on
	// (SLA-driven reconfiguration), with its options. Simulator only.
	Reconfigure *ReconfigureSpec `yaml:"reconfigure"`
	// Strategies default to clientcore.Strategies; for a causal table
	// to causalStrategies.
	Strategies []string `yaml:"strategies"`
	// Series are the curves of a figure, each a variant of the scenario
	// run apart from the others: in the simulator each run in a world of
	// its own, on a cluster one after the other on the same cluster.
	Series []SeriesSpec `yaml:"series"`
	// Sweep runs the scenario once per value of one parameter; Repeat
	// runs each point with Repeat seeds (the seed given, then the next
	// ones) and reports their mean and 95% confidence interval.
	Sweep    *SweepSpec  `yaml:"sweep"`
	Repeat   int         `yaml:"repeat"`
	Schedule []EventSpec `yaml:"schedule"`
	// Outputs are the tables and plots to produce: utility (Figs 11-12),
	// breakdown (Tables 1-2), latency (Fig. 3), timeline (Fig. 13),
	// sensitivity (Fig. 14), ops (latency percentiles, throughput and
	// failures per op and strategy; with a sweep, throughput-latency
	// curves), staleness (Gamma scores from the trace) and reconfig
	// (utility per hour and series with active hours, the primaries'
	// moves and the configuration service's cost). Default: utility and
	// ops.
	Outputs []string `yaml:"outputs"`
	// Adapt configures the timeline's adaptation analysis.
	Adapt AdaptSpec `yaml:"adapt"`
	// Targets is what the windows output judges runs by.
	Targets *TargetsSpec `yaml:"targets"`
	// Sim says where time goes in the simulator.
	Sim SimSpec `yaml:"sim"`
	// Cluster says how the scenario runs on a real local cluster.
	Cluster ClusterSpec `yaml:"cluster"`
	// Paper holds the paper's numbers that survive in its text.
	Paper PaperSpec `yaml:"paper"`

	topo topology.Topology
	slas []slaVariant
	// raw is the YAML the scenario was read from, which each series is
	// laid over (Parse); mods are the changes made to the scenario since
	// (with), which each series gets too.
	raw  []byte
	mods []func(*Scenario)
	// clusterModel marks the simulator's model of a cluster run
	// (ClusterModel): its runs take the cluster's sessions.
	clusterModel bool
}

// SeriesSpec is one series: a name and a part of a scenario laid over
// the scenario, as in {name: rtw, set: {workload: {rtw: true}}}. The
// fields Set gives replace the scenario's (a list whole; the fields of a
// section it does not give stay); it may not give series.
type SeriesSpec struct {
	Name string    `yaml:"name"`
	Set  yaml.Node `yaml:"set"`
}

// TableSpec places the table: its tablets, and the N replicas of each
// over the replica sites (topology.Placement).
type TableSpec struct {
	// Primary is the site of the primaries. Default: the first site with
	// a storage node.
	Primary string `yaml:"primary"`
	// Secondaries are the other replica sites. Default: every other site
	// with a storage node.
	Secondaries []string `yaml:"secondaries"`
	// Replicas is N, the replicas of each tablet, placed over the replica
	// sites' storage nodes (topology.Placement). Default: one per replica
	// site.
	Replicas int `yaml:"replicas"`
	// Tablets is the number of tablets. Default 1.
	Tablets int `yaml:"tablets"`
	// Partition says how keys map to tablets: range (split at quantiles
	// of the workload's keys) or hash. Default range.
	Partition string `yaml:"partition"`
	// PullInterval is how often secondaries pull. Default 1m.
	PullInterval time.Duration `yaml:"pull_interval"`
	// Push also streams each Put to the secondaries at once.
	Push bool `yaml:"push"`
	// WriteLevel is the least write level of every Put (one, quorum,
	// all or a number; wire.Layout.WriteLevel): with it a read of r of N
	// replicas with r + w > N is strong, and an SLA's Get may read such
	// a quorum for a strong subSLA. Default one.
	WriteLevel string `yaml:"write_level"`
}

// SLASpec is one SLA of the experiment.
type SLASpec struct {
	// Name labels the SLA in tables. Default: SLA itself.
	Name string `yaml:"name"`
	// SLA is a preset name (shopping-cart, password-checking,
	// web-application) or an SLA in the text format.
	SLA string `yaml:"sla"`
	// Factors, with Scale, make one variant of the SLA per factor, with
	// the utilities of the subSLAs ranked in Scale (from 1) multiplied by
	// it (the sensitivity output).
	Factors []float64 `yaml:"factors"`
	Scale   []int     `yaml:"scale"`
}

// WorkloadSpec is what each session does: a closed loop, or an open
// loop at a rate.
type WorkloadSpec struct {
	// Keys is the number of keys, all loaded before the run. Default
	// 10,000.
	Keys int `yaml:"keys"`
	// Distribution of the keys: zipfian (YCSB's scrambled zipfian, the
	// default), uniform, hotspot (HotSet of the keys take HotOps of the
	// operations; defaults 0.2 and 0.8) or latest.
	Distribution string  `yaml:"distribution"`
	HotSet       float64 `yaml:"hot_set"`
	HotOps       float64 `yaml:"hot_ops"`
	// PutFraction is the fraction of operations that are Puts. Default
	// (and when written as 0) 0.5: equal numbers of Puts and Gets (5.1).
	PutFraction float64 `yaml:"put_fraction"`
	// ReadOnly runs Gets only (a zero PutFraction means the default);
	// PutFraction must then be unset.
	ReadOnly bool `yaml:"read_only"`
	// YCSB, if set, is a YCSB core workload (a-f, or a property file)
	// whose operation mix and request distribution replace PutFraction and
	// Distribution; Keys replaces its record count and ValueSize, if set,
	// its value size.
	YCSB string `yaml:"ycsb"`
	// ValueSize is the size of the values Puts write. Default: a few
	// bytes naming the write.
	ValueSize int `yaml:"value_size"`
	// SessionOps is the number of operations per session. Default 400.
	SessionOps int `yaml:"session_ops"`
	// Ops is the number of operations each session slot performs
	// (sessions of a site share the count in an open loop); Duration the
	// virtual time a run lasts. Exactly one is set; default Ops 8,000.
	Ops      int           `yaml:"ops"`
	Duration time.Duration `yaml:"duration"`
	// Think is the pause after each operation. Default 0, a closed loop.
	Think time.Duration `yaml:"think"`
	// Rate, if positive, drives each (client site, strategy) in an open
	// loop instead: operations arrive at Rate per second (a Poisson
	// process), each taken by a free session; one that finds every session
	// busy is shed and counted.
	Rate float64 `yaml:"rate"`
	// Warmup leaves the operations that start before it out of the
	// statistics.
	Warmup time.Duration `yaml:"warmup"`

	// Bounded operations (DESIGN.md section 4). A bound is immediate
	// (0 ms, "as soon as possible": reception only), unbounded (an
	// infinite bound, "consistent") or a positive duration; an op
	// without one takes the SLA and level paths. Bound is the bound of
	// every op that has none of its own below (the sweep parameter bound
	// sets it); PutBound bounds the mix's Puts and RTWs, GetBound its
	// Gets.
	Bound    string `yaml:"bound"`
	PutBound string `yaml:"put_bound"`
	GetBound string `yaml:"get_bound"`
	// RTW makes the mix's Puts ReadTestWrites: conditional inserts,
	// which write a key only if it has no value (driver.RTW); with the
	// fresh distribution every one writes.
	RTW bool `yaml:"rtw"`
	// Group, if set, makes every step a group of ops on one fresh key
	// (GroupSpec); Ops then counts groups, and the mix's fields
	// (put_fraction, distribution, ...) are not used.
	Group *GroupSpec `yaml:"group"`
	// LoadBound, if set, bounds the Puts that load the keys, which then
	// go to the loader's nearest replica as staged writes (unbounded
	// writes also train the nodes' costs). Unset, the load's Puts go to
	// the primary without a bound.
	LoadBound string `yaml:"load_bound"`
}

// ClientSites are the client sites of a scenario and each one's sessions.
// In YAML: a list of sites, one session each ([us, england]), or a map
// from site to sessions ({us: 4, england: 1}).
type ClientSites []ClientSite

// ClientSite is a client site and its number of sessions.
type ClientSite struct {
	Site     string
	Sessions int
}

// UnmarshalYAML reads a list of sites or a map from site to sessions,
// keeping the map's order.
func (c *ClientSites) UnmarshalYAML(n *yaml.Node) error {
	*c = nil
	switch n.Kind {
	case yaml.SequenceNode:
		var sites []string
		if err := n.Decode(&sites); err != nil {
			return err
		}
		for _, s := range sites {
			*c = append(*c, ClientSite{Site: s, Sessions: 1})
		}
		return nil
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			var cs ClientSite
			if err := n.Content[i].Decode(&cs.Site); err != nil {
				return err
			}
			if err := n.Content[i+1].Decode(&cs.Sessions); err != nil {
				return fmt.Errorf("clients: line %d: sessions of %s: %w", n.Content[i+1].Line, cs.Site, err)
			}
			*c = append(*c, cs)
		}
		return nil
	}
	return fmt.Errorf("clients: line %d: want a list of sites or a map from site to sessions", n.Line)
}

// Sites returns the sites, in order.
func (c ClientSites) Sites() []string {
	out := make([]string, len(c))
	for i, cs := range c {
		out[i] = cs.Site
	}
	return out
}

// SweepSpec is a parameter swept over values, one point each.
type SweepSpec struct {
	// Param is sessions (each client site's), total_sessions (spread
	// over the client sites), rate (workload.rate), think
	// (workload.think), value_size, keys, strategy, bound, mix (W:R
	// DISTRIBUTION) or read_write (a read-write ratio such as 95-5).
	Param  string   `yaml:"param"`
	Values []string `yaml:"values"`
}

// SimSpec says where time goes in the simulator, so that throughput
// saturates where a real server would. Unset fields take the calibrated
// defaults of calibration.go; link bandwidths are the topology's.
type SimSpec struct {
	// Service is the time a storage node spends on a message of each
	// kind (wire.Kind: get, put, probe, pull, pull-reply, push, ...),
	// messages queueing while it is busy; kinds not listed keep their
	// default.
	Service map[string]time.Duration `yaml:"service"`
	// Fsync is the time of one fsync; the synced writes of every event a
	// node handles while an fsync runs share the next one (group commit,
	// DESIGN.md section 2).
	Fsync *time.Duration `yaml:"fsync"`
	// Free turns every cost off: storage nodes are infinitely fast.
	Free bool `yaml:"free"`
	// Cores, if positive, makes each site one machine whose nodes, its
	// clients included, share that many cores (sim.SetCores): a local
	// cluster on one computer. Default: each node is a machine of its own.
	Cores int `yaml:"cores"`
	// Client is the CPU a client spends on each Get and Put, charged when
	// its reply arrives; it matters when clients share cores with storage
	// nodes. Default 0.
	Client time.Duration `yaml:"client"`
	// FsyncJitter is the fsync's jitter (sim.Latency: its standard
	// deviation, with a long tail above the mean). Default: with Fsync
	// set none, else the calibrated one's.
	FsyncJitter *time.Duration `yaml:"fsync_jitter"`
	// ServiceScale, if positive, multiplies every calibrated service
	// time (not Service's overrides, not the fsync): servers slower than
	// the reference machine by that factor. Default 1.
	ServiceScale float64 `yaml:"service_scale"`
}

// Event actions.
const (
	ActionAddRTT    = "add-rtt"    // add RTT to the link from..to
	ActionSetRTT    = "set-rtt"    // set the link's RTT (and Jitter)
	ActionRestore   = "restore"    // give the link back its topology RTT
	ActionPartition = "partition"  // cut the link
	ActionHeal      = "heal"       // restore a cut link
	ActionCrash     = "crash"      // crash Node
	ActionRestart   = "restart"    // restart Node
	ActionSpikes    = "spikes"     // random latency spikes on the link (see expandSchedule)
	ActionSlow      = "slow"       // set Node's service time per request
	ActionStalls    = "stalls"     // random stalls of storage nodes (see expandSchedule)
	ActionPause     = "pause"      // stop Node for For (SIGSTOP), then let it catch up
	targetPrimary   = "primary"    // the table's primary site or node
	targetLocal     = "local"      // the run's client site
	targetClient    = "client"     // same as local, read better in From
	defaultAdaptN   = 10           // consecutive Gets for "adapted"
	defaultOps      = 8000         // operations per (client site, strategy)
	maxFactor       = 1000.0       // sanity bound on utility factors
	maxRuns         = 1000         // sanity bound on the combinations
	maxService      = time.Minute  // sanity bound on a slow node's service time
	defaultActionID = ActionAddRTT // when Action is empty and RTT set
)

// EventSpec is one change to the world, at a virtual time after the
// measured workload starts or after a number of Gets.
type EventSpec struct {
	// Label names the event in plots and tables. Default "#i".
	Label string `yaml:"label"`
	// At is the virtual time since the workload started; AfterGets the
	// number of Gets completed. Exactly one is set (At: 0 is allowed when
	// AfterGets is unset).
	At        time.Duration `yaml:"at"`
	AfterGets int           `yaml:"after_gets"`
	Action    string        `yaml:"action"`
	// From and To are the link's ends: site names, "local" (or "client")
	// for the run's client site, "primary" for the primary's site, or a
	// node ID (site/name) meaning its site. From defaults to local, so
	// {to: primary} is "the link to the primary" of 5.4, and {to: local}
	// the link to the client's local node.
	From string        `yaml:"from"`
	To   string        `yaml:"to"`
	RTT  time.Duration `yaml:"rtt"`
	// Jitter is the one-way jitter for set-rtt; unset keeps the link's.
	Jitter *time.Duration `yaml:"jitter"`
	// Node is the node to crash, restart, slow or pause: a node ID or
	// "primary". A stalls event without one stalls every storage node.
	Node string `yaml:"node"`
	// Service is slow's time the node spends on each request, queueing
	// the requests behind (sim.NodeOptions.Service); 0s makes it fast
	// again.
	Service time.Duration `yaml:"service"`

	// A spikes event adds random latency spikes to the link from..to
	// (To is required) from At until Until (default: the end of a
	// workload given by duration): each spike adds RTT to the round trip
	// for a time drawn from For, and the gaps before and between spikes
	// are exponential with mean Every. Each run expands it into add-rtt
	// pairs (expandSchedule), the same for every strategy; the
	// adaptation analysis leaves the spikes out, and its oracle judges
	// by the round trips without them.
	//
	// A stalls event stops storage nodes now and then from At until
	// Until, as a garbage collector's pauses do: Node, or each storage
	// node of the topology apart, pauses for a time drawn from For at
	// exponential gaps of mean Every,
	// handling nothing meanwhile and then what queued, in order
	// (sim.Sim.Pause). Each run expands it into pause events, the same
	// for every strategy, which the adaptation analysis leaves out. A
	// pause event stops Node for For (one duration).
	Every time.Duration `yaml:"every"`
	For   Span          `yaml:"for"`
	Until time.Duration `yaml:"until"`

	// spike is +1 for the add-rtt that starts a spike of a spikes event,
	// -1 for the one that ends it, 0 for the schedule's own events.
	spike int
	// stall marks a pause drawn for a stalls event.
	stall bool
}

// ClusterSpec says how a scenario runs on a real local cluster (--mode
// cluster), where time is real. There, the runs of one SLA (and, when
// the scenario has a schedule, one client site) go at once, each with its
// own client, and TimeScale shortens them.
type ClusterSpec struct {
	// TimeScale multiplies the workload's duration, the schedule's times,
	// the pull interval and the clients' probe interval and RTT window
	// (these two not below 1s and 10s). With active hours it also
	// multiplies them, the think time and the reconfigure section's
	// times (a day compressed into minutes). Round trips, jitter and SLA
	// latencies are never scaled: they are what the experiment measures.
	// Default 1.
	TimeScale float64 `yaml:"time_scale"`
	// Duration is how long the runs of a workload bounded by operations
	// (workload.ops) last on the cluster, before TimeScale. Default 2m.
	Duration time.Duration `yaml:"duration"`
	// Keys, if set, replaces workload.keys: every key is loaded with an
	// fsynced Put at the primary before the runs.
	Keys int `yaml:"keys"`
	// Sim is the simulator's model of this cluster (for example the
	// cores of this one machine), for the curves a sweep's report sets
	// beside the cluster's; unset, the scenario's own sim section.
	Sim *SimSpec `yaml:"sim"`
	// Think, if longer than workload.think, is each client's pause after
	// an operation on the cluster. The paper ran each client on a machine
	// of its own; here all share one, and a closed loop next to its node
	// (England's, 1 ms from the primary) runs hundreds of fsynced Puts a
	// second and slows every other client's round trips.
	Think time.Duration `yaml:"think"`
	// Rate, if set, replaces workload.rate on the cluster: the load this
	// machine's cores can offer beside the nodes they also run.
	Rate float64 `yaml:"rate"`
	// Ops, if set, ends each run on the cluster after that many
	// operations (steps, groups for a group workload) instead of
	// lasting Duration: the scaled-down workload.ops.
	Ops int `yaml:"ops"`
	// Targets, if set, replace targets on the cluster, whose round trips
	// (real processes and loopback TCP on a shared machine) are not the
	// simulator's: the windows output judges by them there, and the
	// strategies that tune themselves aim at them.
	Targets *TargetsSpec `yaml:"targets"`
	// SessionsScale, if set, multiplies every client site's sessions on
	// the cluster, after a sweep has set them (at least one a site,
	// rounded): the scaled-down client threads of a paper that ran
	// thousands on machines of their own. The sweep's points keep their
	// names, so that the paper's numbers stay beside them; the sessions
	// a run had are in its results.
	SessionsScale float64 `yaml:"sessions_scale"`
	// ReplicasPerSite, if set, keeps only the first that many storage
	// nodes of every site on the cluster (a causal table's rings are
	// then over fewer nodes): one serve process per site hosts them all,
	// beside its coordinator and cache, on this one machine. Causal
	// tables only.
	ReplicasPerSite int `yaml:"replicas_per_site"`
	// WarmKeys, if set, replaces causal.warm_keys on the cluster: the
	// keys each client site reads to warm its cache before a run, fewer
	// for the cluster's shorter, scaled-down runs.
	WarmKeys int `yaml:"warm_keys"`
}

// AdaptSpec configures the adaptation analysis of a timeline.
type AdaptSpec struct {
	// Gets is N: a run has adapted after an event once N consecutive Gets
	// target a subSLA and node that maximize expected utility under the
	// new conditions. Default 10.
	Gets int `yaml:"gets"`
}

// PaperSpec holds the paper's numbers.
type PaperSpec struct {
	// Notes go into the report verbatim: what survives in the paper's
	// text, what is missing, and our choices.
	Notes  string       `yaml:"notes"`
	Values []PaperValue `yaml:"values"`
}

// PaperValue is one number from the paper. Metric is avg_utility,
// avg_latency_ms, gets_pct (breakdown: % of Gets with Target and Node),
// or met_pct (breakdown: % of Gets meeting subSLA Target); or one of
// a plug-in's (plugin.metrics), found by the fields it names (Point,
// Series, Strategy, Baseline).
// Fields that do not apply are left empty.
type PaperValue struct {
	Metric   string  `yaml:"metric"`
	Point    string  `yaml:"point"`
	Series   string  `yaml:"series"`
	SLA      string  `yaml:"sla"`
	Client   string  `yaml:"client"`
	Strategy string  `yaml:"strategy"`
	Target   int     `yaml:"target"`
	Node     string  `yaml:"node"`
	Factor   float64 `yaml:"factor"`
	// Baseline is what a relative metric compares with: a strategy
	// (throughput_gain_pct) or a series (throughput_change_pct).
	Baseline string  `yaml:"baseline"`
	Value    float64 `yaml:"value"`
	// Bound, if set, says the paper gives only a bound: "<" (under
	// Value) or ">" (over it).
	Bound string `yaml:"bound"`
}

// OutOps is the engine's own output: each op label's statistics.
const OutOps = "ops"

// slaVariant is one SLA the runs use: a spec, or one factor of it.
type slaVariant struct {
	Name   string
	Base   string
	Factor float64 // 0 when the spec has no factors
	SLA    sla.SLA
}

// ErrInvalid is wrapped by every scenario validation error.
var ErrInvalid = errors.New("experiment: invalid scenario")

//go:embed presets/*.yaml
var presetFS embed.FS

// Preset is a shipped scenario's name and one-line description.
type Preset struct {
	Name, Description string
}

// Presets lists the shipped scenarios, sorted by name.
func Presets() ([]Preset, error) {
	entries, err := fs.ReadDir(presetFS, "presets")
	if err != nil {
		return nil, err
	}
	var out []Preset
	for _, e := range entries {
		s, err := presetScenario(strings.TrimSuffix(e.Name(), ".yaml"))
		if err != nil {
			return nil, err
		}
		out = append(out, Preset{Name: s.Name, Description: s.Description})
	}
	return out, nil
}

func presetScenario(name string) (*Scenario, error) {
	data, err := presetFS.ReadFile(path.Join("presets", name+".yaml"))
	if err != nil {
		return nil, err
	}
	return Parse(data, name)
}

// Resolve returns the shipped scenario of that name, else loads the file.
func Resolve(spec string) (*Scenario, error) {
	if s, err := presetScenario(spec); err == nil {
		return s, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("preset %s: %w", spec, err)
	}
	data, err := os.ReadFile(spec)
	if err != nil {
		var names []string
		if ps, perr := Presets(); perr == nil {
			for _, p := range ps {
				names = append(names, p.Name)
			}
		}
		return nil, fmt.Errorf("%w: %q is neither a shipped scenario (%s) nor a readable file", ErrInvalid, spec, strings.Join(names, ", "))
	}
	base := strings.TrimSuffix(path.Base(spec), path.Ext(spec))
	s, err := Parse(data, base)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", spec, err)
	}
	return s, nil
}

// Parse reads a scenario from YAML, rejecting unknown fields, fills in
// defaults and validates it. defaultName names it if the file does not.
func Parse(data []byte, defaultName string) (*Scenario, error) {
	var s Scenario
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	s.raw = data
	if s.Name == "" {
		s.Name = defaultName
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

func (s *Scenario) endpointOK(v string) bool {
	if v == targetLocal || v == targetClient || v == targetPrimary {
		return true
	}
	site, _, _ := strings.Cut(v, "/")
	for _, st := range s.topo.Sites {
		if st.Name == site {
			return true
		}
	}
	return false
}

// replicaNode resolves a crash or restart target.
func (s *Scenario) replicaNode(v string) (string, bool) {
	if v == targetPrimary {
		for _, st := range s.topo.Sites {
			if st.Name == s.Table.Primary {
				return string(topology.NodeID(st.Name, st.Replicas[0])), true
			}
		}
	}
	for _, id := range s.topo.Replicas() {
		if string(id) == v {
			return v, true
		}
	}
	return "", false
}

// site resolves a link end for a run whose client is at clientSite.
func (s *Scenario) site(v, clientSite string) string {
	switch v {
	case targetLocal, targetClient:
		return clientSite
	case targetPrimary:
		return s.Table.Primary
	}
	site, _, _ := strings.Cut(v, "/")
	return site
}

func (s *Scenario) wants(out string) bool { return slices.Contains(s.Outputs, out) }

// paperValue finds the paper's number for a metric, if it survives.
func (s *Scenario) paperValue(metric, slaName, client, strategy string, target int, node string, factor float64) (float64, bool) {
	for _, v := range s.Paper.Values {
		if v.Metric == metric && v.SLA == slaName && v.Client == client && v.Strategy == strategy &&
			v.Target == target && v.Node == node && v.Factor == factor {
			return v.Value, true
		}
	}
	return 0, false
}

// strategyVariant is a strategy with the options its name asks for.
type strategyVariant struct {
	strategy clientcore.Strategy
	get      clientcore.GetOptions
	// policy sets the sessions' read and write levels.
	policy clientcore.Policy
	// adaptiveProbing sets clientcore.Options.AdaptiveProbing on the
	// run's client.
	adaptiveProbing bool
	// causal is the strategy of a causal table's runs.
	causal causal.Strategy
}

// checkLevels reports a read or write level above the n replicas of the
// scenario's tablets.
func (v strategyVariant) checkLevels(n int) error {
	for _, l := range []wire.Level{v.policy.Read.A, v.policy.Read.B, v.policy.Write.A, v.policy.Write.B} {
		if err := l.Check(n); l != 0 && err != nil {
			return err
		}
	}
	return nil
}

// tabletReplicas is the fewest replicas a tablet of the table has
// (validateTable checked its layout).
func (s *Scenario) tabletReplicas() int {
	l, _ := s.layout()
	n := 0
	for i, t := range l.Tablets {
		if c := 1 + len(t.Secondaries); i == 0 || c < n {
			n = c
		}
	}
	return n
}

// writeLevel is the table's write level; validate checked it.
func (s *Scenario) writeLevel() wire.Level {
	if s.Table.WriteLevel == "" {
		return 0
	}
	l, _ := wire.ParseLevel(s.Table.WriteLevel)
	return l
}
