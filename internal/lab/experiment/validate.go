package experiment

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/cosla/cosla/internal/core/clientcore"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/lab/driver"
	"github.com/cosla/cosla/internal/lab/workload"
	"github.com/cosla/cosla/internal/runtime/topology"
	"github.com/cosla/cosla/sla"
)

func invalid(field, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrInvalid, field, fmt.Sprintf(format, args...))
}

// Limits of a scenario ("put a limit on everything").
const (
	maxKeys     = 10_000_000
	maxSessions = 4096
	maxRate     = 1e6
	maxPoints   = 100
	maxRepeat   = 100
	maxValue    = 1 << 20
	maxDuration = 24 * time.Hour
	// maxOps bounds workload.ops and cluster.ops: 50 times the largest
	// shipped scenario's, so that no run goes on for hours without a
	// progress line.
	maxOps = 1_000_000
)

// Validate resolves the topology, fills in the defaults and checks every
// section; errors name the field, as in slas[1].factors[0].
func (s *Scenario) Validate() error {
	if s.Name == "" {
		return invalid("name", "empty")
	}
	if err := s.resolveTopology(); err != nil {
		return err
	}
	s.defaults()
	for _, check := range []func() error{
		s.validatePlugins, s.validateTable, s.resolveSLAs, s.validateWorkload, s.validateClients,
		s.validateStrategies, s.validateSchedule, s.validateOutputs, s.Cluster.validate,
		s.validateSim, s.validatePaper, s.validateSweep, s.validateSeries,
	} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// validatePlugins runs the validators, before the engine's own checks.
func (s *Scenario) validatePlugins() error {
	for _, p := range plugins {
		if v, ok := p.(validator); ok {
			if err := v.validate(s); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *Scenario) resolveTopology() error {
	switch {
	case s.TopologyInline != nil:
		s.topo = *s.TopologyInline
		if s.topo.Name == "" {
			s.topo.Name = s.Name
		}
	default:
		if s.Topology == "" {
			s.Topology = defaultTopology
		}
		f, ok := topology.Presets[s.Topology]
		if !ok {
			return invalid("topology", "unknown preset %q (known: %s; or give topology_inline)", s.Topology, strings.Join(topology.PresetNames(), ", "))
		}
		s.topo = f()
	}
	if err := s.topo.Validate(); err != nil {
		return invalid("topology", "%v", err)
	}
	return nil
}

// hasNodes reports whether a site of the topology has storage nodes
// (replicas) or clients (clients).
func (s *Scenario) hasNodes(site string, clients bool) bool {
	for _, st := range s.topo.Sites {
		if st.Name == site {
			if clients {
				return len(st.Clients) > 0
			}
			return len(st.Replicas) > 0
		}
	}
	return false
}

// defaults fills in every unset field that has a default.
func (s *Scenario) defaults() {
	t := &s.Table
	if t.Primary == "" {
		for _, st := range s.topo.Sites {
			if len(st.Replicas) > 0 {
				t.Primary = st.Name
				break
			}
		}
	}
	if len(t.Secondaries) == 0 {
		for _, st := range s.topo.Sites {
			if len(st.Replicas) > 0 && st.Name != t.Primary {
				t.Secondaries = append(t.Secondaries, st.Name)
			}
		}
	}
	if t.Replicas == 0 {
		t.Replicas = 1 + len(t.Secondaries)
	}
	if t.Tablets == 0 {
		t.Tablets = 1
	}
	if t.Partition == "" {
		t.Partition = "range"
	}
	if t.PullInterval == 0 {
		t.PullInterval = time.Minute
	}
	w := &s.Workload
	if w.Keys == 0 {
		w.Keys = 10000
	}
	if w.Distribution == "" && w.YCSB == "" {
		w.Distribution = "zipfian"
	}
	if w.Distribution == "hotspot" && w.HotSet == 0 && w.HotOps == 0 {
		w.HotSet, w.HotOps = 0.2, 0.8
	}
	if w.PutFraction == 0 && !w.ReadOnly && w.YCSB == "" {
		w.PutFraction = 0.5
	}
	if w.SessionOps == 0 && s.Causal == nil {
		// A causal table's session lives as long as the run: no
		// default.
		w.SessionOps = 400
	}
	if w.Ops == 0 && w.Duration == 0 {
		w.Ops = defaultOps
	}
	if len(s.Clients) == 0 {
		for _, st := range s.topo.Sites {
			if len(st.Clients) > 0 {
				s.Clients = append(s.Clients, ClientSite{Site: st.Name, Sessions: 1})
			}
		}
	}
	if len(s.Strategies) == 0 && s.Causal != nil {
		s.Strategies = slices.Clone(causalStrategies)
	}
	if len(s.Strategies) == 0 {
		for _, st := range clientcore.Strategies {
			s.Strategies = append(s.Strategies, st.String())
		}
	}
	if s.Repeat == 0 {
		s.Repeat = 1
	}
	for i := range s.Schedule {
		e := &s.Schedule[i]
		if e.Label == "" {
			e.Label = fmt.Sprintf("#%d", i+1)
		}
		if e.Action == "" && e.RTT > 0 {
			e.Action = defaultActionID
		}
		switch e.Action {
		case ActionAddRTT, ActionSetRTT, ActionRestore, ActionPartition, ActionHeal, ActionSpikes:
			if e.From == "" {
				e.From = targetLocal
			}
		}
		if (e.Action == ActionSpikes || e.Action == ActionStalls) && e.Until == 0 {
			e.Until = w.Duration
		}
	}
	if len(s.Outputs) == 0 && s.Causal != nil {
		s.Outputs = []string{OutCausal, OutSaturation}
	}
	if len(s.Outputs) == 0 {
		s.Outputs = []string{OutUtility, OutOps}
	}
	if s.Adapt.Gets == 0 {
		s.Adapt.Gets = defaultAdaptN
	}
	s.Cluster.defaults()
}

func (s *Scenario) validateTable() error {
	if s.causal() {
		return nil // the rings place a causal table (its plug-in validates them)
	}
	t := &s.Table
	if !s.hasNodes(t.Primary, false) {
		return invalid("table.primary", "site %q has no storage node", t.Primary)
	}
	for i, sec := range t.Secondaries {
		if !s.hasNodes(sec, false) || sec == t.Primary || slices.Index(t.Secondaries, sec) != i {
			return invalid(fmt.Sprintf("table.secondaries[%d]", i), "site %q has no storage node, is the primary or is repeated", sec)
		}
	}
	if t.PullInterval < 0 {
		return invalid("table.pull_interval", "negative: %s", t.PullInterval)
	}
	if _, err := s.layout(); err != nil {
		return invalid("table", "%v", err)
	}
	return nil
}

// placement is the table's placement over the topology.
func (s *Scenario) placement() (topology.Placement, error) {
	p := topology.Placement{Sites: replicaSites(s), Replicas: s.Table.Replicas, Tablets: s.Table.Tablets,
		Partition: s.Table.Partition}
	if p.Partition == "range" && p.Tablets > 1 {
		keys := make([]string, s.Workload.Keys)
		for i := range keys {
			keys[i] = workload.Key(uint64(i))
		}
		starts, err := topology.RangeStarts(keys, p.Tablets)
		if err != nil {
			return p, err
		}
		p.Starts = starts
	}
	return p, nil
}

// layout places the table as the scenario says (topology.Placement).
func (s *Scenario) layout() (wire.Layout, error) {
	p, err := s.placement()
	if err != nil {
		return wire.Layout{}, err
	}
	l, err := s.topo.Layout(tableName, p, s.replication())
	if err != nil {
		return l, err
	}
	if s.Table.WriteLevel != "" {
		if l.WriteLevel, err = wire.ParseLevel(s.Table.WriteLevel); err != nil {
			return l, invalid("table.write_level", "%v", err)
		}
		check := l
		check.ID = 1 // Validate wants one; the table gets its own when created
		if err := check.Validate(); err != nil {
			return l, invalid("table.write_level", "%v", err)
		}
	}
	return l, nil
}

// tableName names the table every run uses, as YCSB does.
const tableName = "usertable"

func (s *Scenario) replication() wire.Replication {
	mode := wire.ModePull
	if s.Table.Push {
		mode = wire.ModePush
	}
	return wire.Replication{Mode: mode, Interval: s.Table.PullInterval}
}

// resolveSLAs checks the SLAs and makes their variants.
func (s *Scenario) resolveSLAs() error {
	if s.causal() {
		if len(s.SLAs) > 0 {
			return invalid("slas", "a causal table's Gets carry no SLA in an experiment: drop slas")
		}
		s.slas = []slaVariant{causalSLA}
		return nil
	}
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
	return nil
}

func (s *Scenario) validateWorkload() error {
	w := &s.Workload
	if w.Keys < 0 || w.Keys > maxKeys {
		return invalid("workload.keys", "%d outside 1..%d", w.Keys, maxKeys)
	}
	if w.YCSB != "" {
		if w.Distribution != "" || w.PutFraction != 0 || w.ReadOnly {
			return invalid("workload.ycsb", "a YCSB workload sets the mix and distribution: drop distribution, put_fraction and read_only")
		}
		if _, err := s.ycsbProperties(); err != nil {
			return invalid("workload.ycsb", "%v", err)
		}
	} else {
		if _, err := s.keyGenerator(); err != nil {
			return invalid("workload.distribution", "%v", err)
		}
		switch {
		case w.ReadOnly && w.PutFraction != 0:
			return invalid("workload.put_fraction", "set together with read_only")
		case w.PutFraction < 0 || w.PutFraction > 1 || math.IsNaN(w.PutFraction):
			return invalid("workload.put_fraction", "%v outside [0, 1]", w.PutFraction)
		}
	}
	switch {
	case w.ValueSize < 0 || w.ValueSize > maxValue:
		return invalid("workload.value_size", "%d outside [0, %d]", w.ValueSize, maxValue)
	case w.SessionOps < 0:
		return invalid("workload.session_ops", "negative: %d", w.SessionOps)
	case w.Ops < 0 || w.Ops > maxOps:
		return invalid("workload.ops", "%d outside 0..%d", w.Ops, maxOps)
	case w.Duration < 0:
		return invalid("workload.duration", "negative: %s", w.Duration)
	case w.Ops > 0 && w.Duration > 0:
		return invalid("workload.ops", "give ops or duration, not both")
	case w.Think < 0 || w.Think > time.Hour:
		return invalid("workload.think", "%s outside [0, 1h]", w.Think)
	case w.Duration > maxDuration:
		return invalid("workload.duration", "%s is over a day of virtual time", w.Duration)
	case !(w.Rate >= 0 && w.Rate <= maxRate):
		return invalid("workload.rate", "%v outside [0, %g]", w.Rate, maxRate)
	case w.Rate > 0 && w.Think > 0:
		return invalid("workload.think", "an open loop (rate) has no think time")
	case w.Warmup < 0 || (w.Duration > 0 && w.Warmup >= w.Duration):
		return invalid("workload.warmup", "%s is negative or not below the duration", w.Warmup)
	}
	return nil
}

// keyGenerator is the workload's key distribution (without YCSB).
func (s *Scenario) keyGenerator() (workload.Generator, error) {
	w := s.Workload
	return driver.Keys(w.Distribution, uint64(w.Keys), w.HotSet, w.HotOps)
}

// ycsbProperties are the YCSB workload's properties, with the scenario's
// keys and value size.
func (s *Scenario) ycsbProperties() (workload.Properties, error) {
	w := s.Workload
	p, err := workload.Resolve(w.YCSB)
	if err != nil {
		return p, err
	}
	p.RecordCount = uint64(w.Keys)
	if w.ValueSize > 0 {
		p.FieldCount, p.FieldLength = 1, w.ValueSize
	}
	return p, p.Validate()
}

func (s *Scenario) validateClients() error {
	for site, a := range s.Active {
		field := "active." + site
		switch {
		case !slices.Contains(s.Clients.Sites(), site):
			return invalid(field, "%q is not a client site", site)
		case len(a) != 2 || a[0] < 0 || a[1] <= a[0]:
			return invalid(field, "%v: want [from, until], 0 <= from < until", a)
		case s.Workload.Rate > 0:
			return invalid(field, "active hours need closed loops (no workload.rate)")
		}
	}
	for i, c := range s.Clients {
		if !s.hasNodes(c.Site, true) || slices.IndexFunc(s.Clients, func(o ClientSite) bool { return o.Site == c.Site }) != i {
			return invalid(fmt.Sprintf("clients[%d]", i), "site %q hosts no client or is repeated", c.Site)
		}
		if c.Sessions < 1 || c.Sessions > maxSessions {
			return invalid(fmt.Sprintf("clients[%d]", i), "%d sessions at %s outside 1..%d", c.Sessions, c.Site, maxSessions)
		}
	}
	return nil
}

func (s *Scenario) validateStrategies() error {
	if wp, own := worldOf(s); own {
		return wp.checkStrategies(s)
	}
	for i, name := range s.Strategies {
		field := fmt.Sprintf("strategies[%d]", i)
		if j := slices.Index(s.Strategies, name); j != i {
			return invalid(field, "%q repeats strategies[%d]", name, j)
		}
		v, err := parseStrategyVariant(s, name, timing{})
		if err != nil {
			return invalid(field, "%v", err)
		}
		if err := v.checkLevels(s.tabletReplicas()); err != nil {
			return invalid(field, "%q: %v", name, err)
		}
	}
	if n := len(s.slas) * len(s.Clients) * len(s.Strategies) * s.Repeat * max(1, s.points()) * max(1, len(s.Series)); n > maxRuns {
		return invalid("slas", "%d runs (series x sweep points x repeats x SLAs x clients x strategies) exceed %d", n, maxRuns)
	}
	return nil
}

func (s *Scenario) validateSchedule() error {
	for i := range s.Schedule {
		if err := s.validateEvent(i); err != nil {
			return err
		}
	}
	return nil
}

func (s *Scenario) validateOutputs() error {
	for i, o := range s.Outputs {
		if !slices.Contains(knownOutputs, o) {
			return invalid(fmt.Sprintf("outputs[%d]", i), "%q unknown (want %s)", o, strings.Join(knownOutputs, ", "))
		}
	}
	if err := s.validateCausalOutputs(); err != nil {
		return err
	}
	if s.wants(OutTimeline) && len(s.Schedule) == 0 {
		return invalid("outputs", "timeline needs a schedule")
	}
	if s.wants(OutWindows) && s.Targets == nil {
		return invalid("targets", "the windows output needs targets")
	}
	if s.Targets != nil {
		if err := s.Targets.validate("targets"); err != nil {
			return err
		}
	}
	if s.Cluster.Targets != nil {
		if s.Targets == nil {
			return invalid("cluster.targets", "set targets too: the simulator's")
		}
		if err := s.Cluster.Targets.validate("cluster.targets"); err != nil {
			return err
		}
	}
	if s.Adapt.Gets < 0 {
		return invalid("adapt.gets", "negative: %d", s.Adapt.Gets)
	}
	return nil
}

func (s *Scenario) validateSim() error {
	if err := s.Sim.validate("sim"); err != nil {
		return err
	}
	if s.Cluster.Sim != nil {
		return s.Cluster.Sim.validate("cluster.sim")
	}
	return nil
}

// maxCores bounds a simulated machine.
const maxCores = 1024

func (sp *SimSpec) validate(field string) error {
	if sp.Free && (len(sp.Service) > 0 || sp.Fsync != nil) {
		return invalid(field+".free", "set together with service or fsync")
	}
	for kind, d := range sp.Service {
		if !slices.Contains(wire.NodeKinds, kind) {
			return invalid(field+".service."+kind, "unknown message kind (want %s)", strings.Join(wire.NodeKinds, ", "))
		}
		if d < 0 || d > maxService {
			return invalid(field+".service."+kind, "%s outside [0, %s]", d, maxService)
		}
	}
	if f := sp.Fsync; f != nil && (*f < 0 || *f > maxService) {
		return invalid(field+".fsync", "%s outside [0, %s]", *f, maxService)
	}
	if j := sp.FsyncJitter; j != nil && (*j < 0 || *j > maxService || sp.Free) {
		return invalid(field+".fsync_jitter", "%s outside [0, %s], or set with free", *j, maxService)
	}
	if !(sp.ServiceScale >= 0 && sp.ServiceScale <= maxFactor) || (sp.Free && sp.ServiceScale != 0) {
		return invalid(field+".service_scale", "%v outside [0, %v], or set with free", sp.ServiceScale, maxFactor)
	}
	if sp.Cores < 0 || sp.Cores > maxCores {
		return invalid(field+".cores", "%d outside [0, %d]", sp.Cores, maxCores)
	}
	if sp.Client < 0 || sp.Client > maxService {
		return invalid(field+".client", "%s outside [0, %s]", sp.Client, maxService)
	}
	return nil
}

func (s *Scenario) validatePaper() error {
	for i, v := range s.Paper.Values {
		if !slices.Contains(knownMetrics, v.Metric) {
			return invalid(fmt.Sprintf("paper.values[%d].metric", i), "%q unknown (want %s)", v.Metric, strings.Join(knownMetrics, ", "))
		}
	}
	if s.Repeat < 1 || s.Repeat > maxRepeat {
		return invalid("repeat", "%d outside 1..%d", s.Repeat, maxRepeat)
	}
	return nil
}

// validateSweep checks the parameter and that every point makes a valid
// scenario.
func (s *Scenario) validateSweep() error {
	if s.Sweep == nil {
		return nil
	}
	if _, ok := sweepParams[s.Sweep.Param]; !ok {
		return invalid("sweep.param", "%q unknown (want %s)", s.Sweep.Param, strings.Join(sweepParamNames(), ", "))
	}
	if len(s.Sweep.Values) == 0 || len(s.Sweep.Values) > maxPoints {
		return invalid("sweep.values", "%d values outside 1..%d", len(s.Sweep.Values), maxPoints)
	}
	for i, v := range s.Sweep.Values {
		if slices.Index(s.Sweep.Values, v) != i {
			return invalid(fmt.Sprintf("sweep.values[%d]", i), "%q repeated", v)
		}
		if _, err := atPoint(s, v); err != nil {
			return invalid(fmt.Sprintf("sweep.values[%d]", i), "%v", err)
		}
	}
	return nil
}

func (s *Scenario) validateEvent(i int) error {
	e := &s.Schedule[i]
	field := fmt.Sprintf("schedule[%d]", i)
	if e.At < 0 {
		return invalid(field+".at", "negative: %s", e.At)
	}
	if e.AfterGets < 0 {
		return invalid(field+".after_gets", "negative: %d", e.AfterGets)
	}
	if e.At > 0 && e.AfterGets > 0 {
		return invalid(field+".at", "give at or after_gets, not both")
	}
	if e.Action != ActionSpikes && e.Action != ActionStalls && (e.Every != 0 || e.Until != 0) {
		return invalid(field+".every", "only spikes and stalls take every and until")
	}
	if e.Action != ActionSpikes && e.Action != ActionStalls && e.Action != ActionPause && e.For != (Span{}) {
		return invalid(field+".for", "only spikes, stalls and pause take for")
	}
	if e.Action != ActionSlow && e.Service != 0 {
		return invalid(field+".service", "only slow takes a service time")
	}
	switch e.Action {
	case ActionAddRTT, ActionSetRTT, ActionRestore, ActionPartition, ActionHeal, ActionSpikes:
		if e.Node != "" {
			return invalid(field+".node", "only crash, restart and slow take a node")
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
	case ActionCrash, ActionRestart, ActionSlow, ActionStalls, ActionPause:
		if e.From != "" || e.To != "" || e.RTT != 0 || e.Jitter != nil {
			return invalid(field, "%s takes only node", e.Action)
		}
		switch e.Action {
		case ActionStalls:
			if err := s.validateRecurring(field, e, stalls); err != nil {
				return err
			}
		case ActionPause:
			if e.For.Min <= 0 || e.For.Max != e.For.Min || e.For.Min > maxService {
				return invalid(field+".for", "%s: pause needs one positive duration up to %s", e.For, maxService)
			}
		}
		if _, ok := s.replicaNode(e.Node); !ok && (e.Action != ActionStalls || e.Node != "") {
			return invalid(field+".node", "%q is not a storage node (site/name) or primary", e.Node)
		}
		if e.Service < 0 || e.Service > maxService {
			return invalid(field+".service", "%s outside [0, %s]", e.Service, maxService)
		}
	case "":
		return invalid(field+".action", "missing (want add-rtt, set-rtt, restore, partition, heal, spikes, crash, restart, slow, stalls or pause)")
	default:
		return invalid(field+".action", "%q unknown (want add-rtt, set-rtt, restore, partition, heal, spikes, crash, restart, slow, stalls or pause)", e.Action)
	}
	return nil
}
