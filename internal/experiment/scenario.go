package experiment

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/cosla/cosla/internal/clientcore"
	"github.com/cosla/cosla/internal/topology"
	"github.com/cosla/cosla/sla"
)

// A Scenario is one experiment, read from a YAML file: the world (topology
// and table placement), the SLAs, the workload, which client sites and
// strategies to compare, a schedule of changes to the world, which tables
// and plots to produce, and the paper's numbers to set ours beside. Adding
// an experiment is writing one; the shipped ones are in presets/.
//
// In the simulator every (SLA, client site, strategy) combination runs in
// a fresh world with the same seed, so the strategies face the same
// workload; on a cluster (RunCluster) they run at once.
type Scenario struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	// Reference names what the experiment reproduces, e.g. "Pileus
	// (SOSP'13) 5.2, Fig. 11 and Table 1".
	Reference string `yaml:"reference"`
	// Topology is a preset name (pileus4) or, when TopologyInline is set,
	// ignored. Default pileus4.
	Topology       string             `yaml:"topology"`
	TopologyInline *topology.Topology `yaml:"topology_inline"`
	Table          TableSpec          `yaml:"table"`
	SLAs           []SLASpec          `yaml:"slas"`
	Workload       WorkloadSpec       `yaml:"workload"`
	// Clients are the client sites; each must host a client. Default:
	// every site with a client.
	Clients []string `yaml:"clients"`
	// Strategies default to pileus, primary, random and closest.
	Strategies []string    `yaml:"strategies"`
	Schedule   []EventSpec `yaml:"schedule"`
	// Outputs are the tables and plots to produce: utility (Figs 11-12),
	// breakdown (Tables 1-2), latency (Fig. 3), timeline (Fig. 13) and
	// sensitivity (Fig. 14). Default: utility.
	Outputs []string `yaml:"outputs"`
	// Adapt configures the timeline's adaptation analysis.
	Adapt AdaptSpec `yaml:"adapt"`
	// Cluster says how the scenario runs on a real local cluster.
	Cluster ClusterSpec `yaml:"cluster"`
	// Paper holds the paper's numbers that survive in its text.
	Paper PaperSpec `yaml:"paper"`

	topo topology.Topology
	slas []slaVariant
}

// TableSpec places the one-tablet table.
type TableSpec struct {
	// Primary is the site of the primary. Default: the first site with a
	// storage node.
	Primary string `yaml:"primary"`
	// Secondaries are the sites of the secondaries. Default: every other
	// site with a storage node.
	Secondaries []string `yaml:"secondaries"`
	// PullInterval is how often secondaries pull (Pileus 5.1: once a
	// minute). Default 1m.
	PullInterval time.Duration `yaml:"pull_interval"`
	// Push also streams each Put to the secondaries at once.
	Push bool `yaml:"push"`
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
	// it (Pileus 5.5, Fig. 14).
	Factors []float64 `yaml:"factors"`
	Scale   []int     `yaml:"scale"`
}

// WorkloadSpec is each client's closed loop (Pileus 5.1).
type WorkloadSpec struct {
	// Keys is the number of keys, all loaded before the run. Default
	// 10,000.
	Keys int `yaml:"keys"`
	// Distribution is zipfian (YCSB's scrambled zipfian, the default) or
	// uniform.
	Distribution string `yaml:"distribution"`
	// PutFraction is the fraction of operations that are Puts. Default
	// (and when written as 0) 0.5: equal numbers of Puts and Gets (5.1).
	PutFraction float64 `yaml:"put_fraction"`
	// ReadOnly runs Gets only (a zero PutFraction means the default);
	// PutFraction must then be unset.
	ReadOnly bool `yaml:"read_only"`
	// SessionOps is the number of operations per session. Default 400.
	SessionOps int `yaml:"session_ops"`
	// Ops is the number of operations each run performs; Duration the
	// virtual time it runs for. Exactly one is set; default Ops 8,000.
	Ops      int           `yaml:"ops"`
	Duration time.Duration `yaml:"duration"`
	// Think is the pause after each operation. Default 0, a closed loop.
	Think time.Duration `yaml:"think"`
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
	targetPrimary   = "primary"    // the table's primary site or node
	targetLocal     = "local"      // the run's client site
	targetClient    = "client"     // same as local, read better in From
	defaultAdaptN   = 10           // consecutive Gets for "adapted"
	defaultOps      = 8000         // operations per run
	maxFactor       = 1000.0       // sanity bound on utility factors
	maxRuns         = 1000         // sanity bound on the combinations
	maxService      = time.Minute  // sanity bound on a slow node's service time
	defaultActionID = ActionAddRTT // when Action is empty and RTT set
)

// EventSpec is one change to the world, at a virtual time after the
// measured workload starts or after a number of Gets (Pileus 5.4).
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
	// Node is the node to crash, restart or slow: a node ID or "primary".
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
	Every time.Duration `yaml:"every"`
	For   Span          `yaml:"for"`
	Until time.Duration `yaml:"until"`

	// spike is +1 for the add-rtt that starts a spike of a spikes event,
	// -1 for the one that ends it, 0 for the schedule's own events.
	spike int
}

// ClusterSpec says how a scenario runs on a real local cluster (--mode
// cluster), where time is real. There, the runs of one SLA (and, when
// the scenario has a schedule, one client site) go at once, each with its
// own client, and TimeScale shortens them.
type ClusterSpec struct {
	// TimeScale multiplies the workload's duration, the schedule's times,
	// the pull interval and the clients' probe interval and RTT window.
	// Round trips, jitter and SLA latencies are never scaled: they are
	// what the experiment measures. Default 1.
	TimeScale float64 `yaml:"time_scale"`
	// Duration is how long the runs of a workload bounded by operations
	// (workload.ops) last on the cluster, before TimeScale. Default 2m.
	Duration time.Duration `yaml:"duration"`
	// Keys, if set, replaces workload.keys: every key is loaded with an
	// fsynced Put at the primary before the runs.
	Keys int `yaml:"keys"`
	// Think, if longer than workload.think, is each client's pause after
	// an operation on the cluster. The paper ran each client on a machine
	// of its own; here all share one, and a closed loop next to its node
	// (England's, 1 ms from the primary) runs hundreds of fsynced Puts a
	// second and slows every other client's round trips.
	Think time.Duration `yaml:"think"`
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
// or met_pct (breakdown: % of Gets meeting subSLA Target). Fields that do
// not apply are left empty.
type PaperValue struct {
	Metric   string  `yaml:"metric"`
	SLA      string  `yaml:"sla"`
	Client   string  `yaml:"client"`
	Strategy string  `yaml:"strategy"`
	Target   int     `yaml:"target"`
	Node     string  `yaml:"node"`
	Factor   float64 `yaml:"factor"`
	Value    float64 `yaml:"value"`
}

// Output names.
const (
	OutUtility     = "utility"
	OutBreakdown   = "breakdown"
	OutLatency     = "latency"
	OutTimeline    = "timeline"
	OutSensitivity = "sensitivity"
)

var knownOutputs = []string{OutUtility, OutBreakdown, OutLatency, OutTimeline, OutSensitivity}

var knownMetrics = []string{"avg_utility", "avg_latency_ms", "gets_pct", "met_pct"}

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
	if s.Name == "" {
		s.Name = defaultName
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

func invalid(field, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrInvalid, field, fmt.Sprintf(format, args...))
}

// Validate fills in defaults and checks every field; errors name the
// field, as in slas[1].factors[0].
func (s *Scenario) Validate() error {
	if s.Name == "" {
		return invalid("name", "empty")
	}
	// Topology.
	switch {
	case s.TopologyInline != nil:
		s.topo = *s.TopologyInline
		if s.topo.Name == "" {
			s.topo.Name = s.Name
		}
	default:
		if s.Topology == "" {
			s.Topology = "pileus4"
		}
		f, ok := topology.Presets[s.Topology]
		if !ok {
			return invalid("topology", "unknown preset %q (known: pileus4; or give topology_inline)", s.Topology)
		}
		s.topo = f()
	}
	if err := s.topo.Validate(); err != nil {
		return invalid("topology", "%v", err)
	}
	replicaSites := map[string]bool{}
	clientSites := map[string]bool{}
	var firstReplica string
	for _, site := range s.topo.Sites {
		if len(site.Replicas) > 0 {
			replicaSites[site.Name] = true
			if firstReplica == "" {
				firstReplica = site.Name
			}
		}
		if len(site.Clients) > 0 {
			clientSites[site.Name] = true
		}
	}
	// Table.
	t := &s.Table
	if t.Primary == "" {
		t.Primary = firstReplica
	}
	if !replicaSites[t.Primary] {
		return invalid("table.primary", "site %q has no storage node", t.Primary)
	}
	if len(t.Secondaries) == 0 {
		for _, site := range s.topo.Sites {
			if replicaSites[site.Name] && site.Name != t.Primary {
				t.Secondaries = append(t.Secondaries, site.Name)
			}
		}
	}
	for i, sec := range t.Secondaries {
		if !replicaSites[sec] || sec == t.Primary || slices.Index(t.Secondaries, sec) != i {
			return invalid(fmt.Sprintf("table.secondaries[%d]", i), "site %q has no storage node, is the primary or is repeated", sec)
		}
	}
	if t.PullInterval == 0 {
		t.PullInterval = time.Minute
	}
	if t.PullInterval < 0 {
		return invalid("table.pull_interval", "negative: %s", t.PullInterval)
	}
	// SLAs.
	if len(s.SLAs) == 0 {
		return invalid("slas", "none given")
	}
	s.slas = nil
	names := map[string]bool{}
	for i, spec := range s.SLAs {
		field := fmt.Sprintf("slas[%d]", i)
		if spec.SLA == "" {
			return invalid(field+".sla", "empty: give a preset name or SLA text")
		}
		base, ok := sla.Preset(spec.SLA)
		if !ok {
			var err error
			if base, err = sla.Parse(spec.SLA); err != nil {
				return invalid(field+".sla", "%q is not a preset (%s) nor valid SLA text: %v", spec.SLA, strings.Join(sla.PresetNames(), ", "), err)
			}
		}
		if err := base.Validate(); err != nil {
			return invalid(field+".sla", "%v", err)
		}
		name := spec.Name
		if name == "" {
			name = spec.SLA
		}
		if len(spec.Factors) == 0 && len(spec.Scale) > 0 {
			return invalid(field+".factors", "scale given without factors")
		}
		if len(spec.Factors) > 0 && len(spec.Scale) == 0 {
			return invalid(field+".scale", "factors given without the subSLA ranks to scale")
		}
		for j, rank := range spec.Scale {
			if rank < 1 || rank > len(base) {
				return invalid(fmt.Sprintf("%s.scale[%d]", field, j), "subSLA rank %d outside 1..%d", rank, len(base))
			}
		}
		if len(spec.Factors) == 0 {
			if names[name] {
				return invalid(field+".name", "%q repeated", name)
			}
			names[name] = true
			s.slas = append(s.slas, slaVariant{Name: name, Base: name, SLA: base})
			continue
		}
		for j, f := range spec.Factors {
			ff := fmt.Sprintf("%s.factors[%d]", field, j)
			if !(f > 0 && f <= maxFactor) || math.IsNaN(f) {
				return invalid(ff, "factor %v outside (0, %v]", f, maxFactor)
			}
			v := slices.Clone(base)
			for _, rank := range spec.Scale {
				v[rank-1].Utility *= f
			}
			if err := v.Validate(); err != nil {
				return invalid(ff, "scaled SLA is invalid: %v", err)
			}
			vn := fmt.Sprintf("%s x%g", name, f)
			if names[vn] {
				return invalid(ff, "variant %q repeated", vn)
			}
			names[vn] = true
			s.slas = append(s.slas, slaVariant{Name: vn, Base: name, Factor: f, SLA: v})
		}
	}
	// Workload.
	w := &s.Workload
	if w.Keys == 0 {
		w.Keys = 10000
	}
	if w.Keys < 0 || w.Keys > 10_000_000 {
		return invalid("workload.keys", "%d outside 1..10,000,000", w.Keys)
	}
	switch w.Distribution {
	case "":
		w.Distribution = "zipfian"
	case "zipfian", "uniform":
	default:
		return invalid("workload.distribution", "%q: want zipfian or uniform", w.Distribution)
	}
	switch {
	case w.ReadOnly && w.PutFraction != 0:
		return invalid("workload.put_fraction", "set together with read_only")
	case w.PutFraction == 0 && !w.ReadOnly:
		w.PutFraction = 0.5
	}
	if w.PutFraction < 0 || w.PutFraction >= 1 || math.IsNaN(w.PutFraction) {
		return invalid("workload.put_fraction", "%v outside [0, 1)", w.PutFraction)
	}
	if w.SessionOps == 0 {
		w.SessionOps = 400
	}
	if w.SessionOps < 0 {
		return invalid("workload.session_ops", "negative: %d", w.SessionOps)
	}
	switch {
	case w.Ops < 0:
		return invalid("workload.ops", "negative: %d", w.Ops)
	case w.Duration < 0:
		return invalid("workload.duration", "negative: %s", w.Duration)
	case w.Ops > 0 && w.Duration > 0:
		return invalid("workload.ops", "give ops or duration, not both")
	case w.Ops == 0 && w.Duration == 0:
		w.Ops = defaultOps
	}
	if w.Think < 0 || w.Think > time.Hour {
		return invalid("workload.think", "%s outside [0, 1h]", w.Think)
	}
	if w.Duration > 24*time.Hour {
		return invalid("workload.duration", "%s is over a day of virtual time", w.Duration)
	}
	// Clients and strategies.
	if len(s.Clients) == 0 {
		for _, site := range s.topo.Sites {
			if clientSites[site.Name] {
				s.Clients = append(s.Clients, site.Name)
			}
		}
	}
	for i, c := range s.Clients {
		if !clientSites[c] || slices.Index(s.Clients, c) != i {
			return invalid(fmt.Sprintf("clients[%d]", i), "site %q hosts no client or is repeated", c)
		}
	}
	if len(s.Strategies) == 0 {
		for _, st := range clientcore.Strategies {
			s.Strategies = append(s.Strategies, st.String())
		}
	}
	for i, name := range s.Strategies {
		if _, err := parseStrategyVariant(name); err != nil || slices.Index(s.Strategies, name) != i {
			return invalid(fmt.Sprintf("strategies[%d]", i), "%q unknown or repeated (want pileus, pileus+retry, pileus+hedge, pileus+probe, primary, random or closest)", name)
		}
	}
	if n := len(s.slas) * len(s.Clients) * len(s.Strategies); n > maxRuns {
		return invalid("slas", "%d runs (SLAs x clients x strategies) exceed %d", n, maxRuns)
	}
	// Schedule.
	for i := range s.Schedule {
		if err := s.validateEvent(i); err != nil {
			return err
		}
	}
	// Outputs.
	if len(s.Outputs) == 0 {
		s.Outputs = []string{OutUtility}
	}
	for i, o := range s.Outputs {
		if !slices.Contains(knownOutputs, o) {
			return invalid(fmt.Sprintf("outputs[%d]", i), "%q unknown (want %s)", o, strings.Join(knownOutputs, ", "))
		}
	}
	if s.wants(OutTimeline) && len(s.Schedule) == 0 {
		return invalid("outputs", "timeline needs a schedule")
	}
	if err := s.Cluster.validate(); err != nil {
		return err
	}
	if s.Adapt.Gets == 0 {
		s.Adapt.Gets = defaultAdaptN
	}
	if s.Adapt.Gets < 0 {
		return invalid("adapt.gets", "negative: %d", s.Adapt.Gets)
	}
	for i, v := range s.Paper.Values {
		if !slices.Contains(knownMetrics, v.Metric) {
			return invalid(fmt.Sprintf("paper.values[%d].metric", i), "%q unknown (want %s)", v.Metric, strings.Join(knownMetrics, ", "))
		}
	}
	return nil
}

func (s *Scenario) validateEvent(i int) error {
	e := &s.Schedule[i]
	field := fmt.Sprintf("schedule[%d]", i)
	if e.Label == "" {
		e.Label = fmt.Sprintf("#%d", i+1)
	}
	if e.At < 0 {
		return invalid(field+".at", "negative: %s", e.At)
	}
	if e.AfterGets < 0 {
		return invalid(field+".after_gets", "negative: %d", e.AfterGets)
	}
	if e.At > 0 && e.AfterGets > 0 {
		return invalid(field+".at", "give at or after_gets, not both")
	}
	if e.Action == "" && e.RTT > 0 {
		e.Action = defaultActionID
	}
	if e.Action != ActionSpikes && (e.Every != 0 || e.For != (Span{}) || e.Until != 0) {
		return invalid(field+".every", "only spikes takes every, for and until")
	}
	if e.Action != ActionSlow && e.Service != 0 {
		return invalid(field+".service", "only slow takes a service time")
	}
	switch e.Action {
	case ActionAddRTT, ActionSetRTT, ActionRestore, ActionPartition, ActionHeal, ActionSpikes:
		if e.Node != "" {
			return invalid(field+".node", "only crash, restart and slow take a node")
		}
		if e.From == "" {
			e.From = targetLocal
		}
		if e.To == "" {
			return invalid(field+".to", "%s needs the link's other end", e.Action)
		}
		for _, end := range []struct{ name, v string }{{"from", e.From}, {"to", e.To}} {
			if !s.endpointOK(end.v) {
				return invalid(field+"."+end.name, "%q is not a site, a node (site/name), local or primary", end.v)
			}
		}
		switch e.Action {
		case ActionAddRTT:
			if e.RTT == 0 {
				return invalid(field+".rtt", "add-rtt needs a non-zero rtt")
			}
		case ActionSetRTT:
			if e.RTT <= 0 {
				return invalid(field+".rtt", "set-rtt needs a positive rtt")
			}
		case ActionSpikes:
			if err := s.validateSpikes(field, e); err != nil {
				return err
			}
		default:
			if e.RTT != 0 || e.Jitter != nil {
				return invalid(field+".rtt", "%s takes no rtt or jitter", e.Action)
			}
		}
		if e.Jitter != nil && (*e.Jitter < 0 || e.Action != ActionSetRTT) {
			return invalid(field+".jitter", "only set-rtt takes a jitter, and it must not be negative")
		}
	case ActionCrash, ActionRestart, ActionSlow:
		if e.From != "" || e.To != "" || e.RTT != 0 || e.Jitter != nil {
			return invalid(field, "%s takes only node", e.Action)
		}
		if _, ok := s.replicaNode(e.Node); !ok {
			return invalid(field+".node", "%q is not a storage node (site/name) or primary", e.Node)
		}
		if e.Service < 0 || e.Service > maxService {
			return invalid(field+".service", "%s outside [0, %s]", e.Service, maxService)
		}
	case "":
		return invalid(field+".action", "missing (want add-rtt, set-rtt, restore, partition, heal, spikes, crash, restart or slow)")
	default:
		return invalid(field+".action", "%q unknown (want add-rtt, set-rtt, restore, partition, heal, spikes, crash, restart or slow)", e.Action)
	}
	return nil
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
	// adaptiveProbing sets clientcore.Options.AdaptiveProbing on the
	// run's client.
	adaptiveProbing bool
}

// parseStrategyVariant reads a strategy name with its options, beyond the
// paper: "pileus+retry" is Pileus with retry after a miss
// (clientcore.GetOptions.RetryAfterMiss), "pileus+hedge" with hedged Gets
// at a cost of hedgeCost per extra request, "pileus+probe" (or
// "closest+probe": the strategies that read the monitor) with adaptive
// probing (clientcore.Options.AdaptiveProbing, Pileus 6.1); options
// combine, as in "pileus+retry+probe".
func parseStrategyVariant(name string) (strategyVariant, error) {
	base, options, _ := strings.Cut(name, "+")
	strategy, err := clientcore.ParseStrategy(base)
	if err != nil {
		return strategyVariant{}, err
	}
	v := strategyVariant{strategy: strategy}
	for option := range strings.SplitSeq(options, "+") {
		switch {
		case option == "":
		case option == "retry" && strategy == clientcore.Pileus:
			v.get.RetryAfterMiss = true
		case option == "hedge" && strategy == clientcore.Pileus:
			v.get.HedgeCost = hedgeCost
		case option == "probe" && (strategy == clientcore.Pileus || strategy == clientcore.Closest):
			v.adaptiveProbing = true
		default:
			return strategyVariant{}, fmt.Errorf("%w: unknown option %q of strategy %q (want pileus+retry, pileus+hedge, pileus+probe, closest+probe)", clientcore.ErrInvalid, option, base)
		}
	}
	return v, nil
}

// hedgeCost is the price, in utility, of the extra request of a hedged
// Get in the pileus+hedge strategy. Section 6.3 leaves it to the
// application; 0.1 hedges when a second node adds a tenth of the top
// subSLA's utility.
const hedgeCost = 0.1
