package experiment

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/cosla/cosla/internal/clientcore"
	"github.com/cosla/cosla/internal/harness"
	"github.com/cosla/cosla/internal/sim"
	"github.com/cosla/cosla/internal/topology"
	"github.com/cosla/cosla/internal/wire"
	"github.com/cosla/cosla/internal/workload"
	"github.com/cosla/cosla/sla"
)

// RunOptions configures one run of a scenario.
type RunOptions struct {
	Seed uint64
	// Scale multiplies the workload's operations or duration and every
	// scheduled time and Get count; tests shorten runs with it. Default 1.
	Scale float64
	// Progress, if set, is called after each (SLA, client, strategy) run.
	Progress func(done, total int, r RunResult)
}

// Result is everything a scenario run measured; results.json holds it.
// It depends only on the scenario and the seed: the same seed gives the
// same Result, byte for byte once marshalled.
type Result struct {
	Scenario    string  `json:"scenario"`
	Description string  `json:"description"`
	Reference   string  `json:"reference,omitempty"`
	Mode        string  `json:"mode"`
	Seed        uint64  `json:"seed"`
	Scale       float64 `json:"scale"`
	// TraceHash digests every run's simulator trace.
	TraceHash string `json:"trace_hash"`
	// Nodes are the sites of the table's replicas, primary first: the
	// columns of the breakdown.
	Nodes []string    `json:"nodes"`
	Runs  []RunResult `json:"runs"`
}

// RunResult is the outcome of one (SLA, client site, strategy) run.
type RunResult struct {
	SLA     string  `json:"sla"`
	BaseSLA string  `json:"base_sla"`
	Factor  float64 `json:"factor,omitempty"`
	// SLAText is the SLA used, in the text format.
	SLAText  string `json:"sla_text"`
	Client   string `json:"client"`
	Strategy string `json:"strategy"`
	// AvgUtility is the utility delivered, averaged over all Gets (5.1),
	// and UtilityStdErr the standard error of that mean: two runs whose
	// averages differ by less than a few of these are not told apart.
	AvgUtility    float64 `json:"avg_utility"`
	UtilityStdErr float64 `json:"utility_stderr"`
	// Met is the fraction of Gets that met each subSLA, in rank order;
	// Unmet the fraction that met none.
	Met   []float64 `json:"met"`
	Unmet float64   `json:"unmet"`
	// AvgLatencyMS is the mean Get round trip.
	AvgLatencyMS float64 `json:"avg_latency_ms"`
	Gets         int     `json:"gets"`
	Puts         int     `json:"puts"`
	// ExtraRequests counts the requests sent beyond one per Get (retries
	// and hedges).
	ExtraRequests int `json:"extra_requests"`
	// Probes counts the monitor's probes sent by the run's client, from
	// opening the table to the end of the workload (Pileus 4.5; fewer
	// under adaptive probing, 6.1).
	Probes int `json:"probes"`
	// VirtualS is the virtual time the measured workload took.
	VirtualS float64 `json:"virtual_s"`
	// Breakdown is Pileus's decisions (Tables 1-2): one row per subSLA.
	Breakdown []BreakdownRow `json:"breakdown,omitempty"`
	// Events are the scheduled changes as applied; Timeline is every Get
	// and Adaptation the analysis of each event (5.4), when the scenario
	// has a schedule.
	Events     []EventRecord `json:"events,omitempty"`
	Timeline   []GetPoint    `json:"timeline,omitempty"`
	Adaptation []Adaptation  `json:"adaptation,omitempty"`
	TraceHash  string        `json:"trace_hash"`
}

// BreakdownRow is one row of Table 1 or 2: for subSLA Target (from 1), the
// percentage of all Gets that targeted it at each node site, and the
// percentage of all Gets that met it.
type BreakdownRow struct {
	Target  int                `json:"target"`
	GetsPct map[string]float64 `json:"gets_pct"`
	MetPct  float64            `json:"met_pct"`
}

// EventRecord is a scheduled change as applied.
type EventRecord struct {
	Label       string  `json:"label"`
	AtS         float64 `json:"at_s"`
	AfterGets   int     `json:"after_gets"`
	Description string  `json:"description"`
	// BestUtility and Best are the oracle's view after the change (see
	// Adaptation).
	BestUtility float64  `json:"best_utility"`
	Best        []string `json:"best"`
	// Spike is +1 for the start of a spike of a spikes event, -1 for its
	// end, 0 for the schedule's own events, the only ones the adaptation
	// analysis covers.
	Spike int `json:"spike,omitempty"`
}

// GetPoint is one Get of a timeline.
type GetPoint struct {
	AtS     float64 `json:"at_s"` // completion, since the workload started
	Utility float64 `json:"utility"`
	Target  int     `json:"target"` // subSLA targeted, from 1; 0 for fixed strategies
	Node    string  `json:"node"`   // site of the replica read
	Met     int     `json:"met"`    // subSLA met, from 1; 0 for none
	RTTMS   float64 `json:"rtt_ms"`
}

// Adaptation says how long a run took to adapt to one event (Pileus 5.4).
//
// The oracle knows the configured round trips after the event: a (subSLA,
// node) choice is attainable when the node is up and reachable, the
// round trip (with a slow node's service time, without the random spikes
// of a spikes event) is within the subSLA's latency, and the node provides the
// consistency: the primary always; any node for eventual; for the other
// guarantees the oracle counts only the primary, which is exact for the
// strong/eventual SLAs of 5.4. Best holds the attainable choices of
// highest utility, written "subSLA@site". A run has adapted at the first
// Get after the event that starts N consecutive Gets (Scenario.Adapt.Gets)
// choosing one of Best, all before the next event. A Get chooses a best
// (subSLA, node) when it goes to that node and either targets that
// subSLA or delivers its utility: Fig. 8 keeps the higher subSLA as the
// target when a lower one's replica ties with it in expected utility, so
// a Get may target strong consistency at a secondary and meet eventual.
type Adaptation struct {
	Event       string   `json:"event"`
	BestUtility float64  `json:"best_utility"`
	Best        []string `json:"best"`
	Adapted     bool     `json:"adapted"`
	// GetsToAdapt counts the Gets after the event before the adapted one;
	// SecondsToAdapt is the virtual time from the event to it.
	GetsToAdapt    int     `json:"gets_to_adapt"`
	SecondsToAdapt float64 `json:"seconds_to_adapt"`
	// UtilityBefore and UtilityAfter average the delivered utility over
	// the phase's Gets before and from the adapted Get.
	UtilityBefore float64 `json:"utility_before"`
	UtilityAfter  float64 `json:"utility_after"`
	GetsInPhase   int     `json:"gets_in_phase"`
}

// Run runs every (SLA, client site, strategy) combination of the scenario
// in the simulator.
func Run(s *Scenario, o RunOptions) (*Result, error) {
	if o.Scale == 0 {
		o.Scale = 1
	}
	if !(o.Scale > 0 && o.Scale <= 100) {
		return nil, fmt.Errorf("experiment: scale %v outside (0, 100]", o.Scale)
	}
	keys, err := keyGenerator(s.Workload.Distribution, s.Workload.Keys)
	if err != nil {
		return nil, err
	}
	res := &Result{Scenario: s.Name, Description: s.Description, Reference: s.Reference,
		Mode: "sim", Seed: o.Seed, Scale: o.Scale, Nodes: s.replicaSites()}
	total := len(s.slas) * len(s.Clients) * len(s.Strategies)
	digest := fnv.New64a()
	for _, v := range s.slas {
		for _, client := range s.Clients {
			for _, name := range s.Strategies {
				r, err := runOne(s, o, v, client, name, keys)
				if err != nil {
					return nil, fmt.Errorf("%s: %s/%s/%s (seed %d): %w", s.Name, v.Name, client, name, o.Seed, err)
				}
				fmt.Fprintf(digest, "%s\n", r.TraceHash)
				res.Runs = append(res.Runs, r)
				if o.Progress != nil {
					o.Progress(len(res.Runs), total, r)
				}
			}
		}
	}
	res.TraceHash = fmt.Sprintf("%016x", digest.Sum64())
	return res, nil
}

// layout places the one-tablet table as the scenario says.
func (s *Scenario) layout() wire.Layout {
	first := func(site string) wire.NodeID {
		for _, st := range s.topo.Sites {
			if st.Name == site {
				return topology.NodeID(site, st.Replicas[0])
			}
		}
		return ""
	}
	tablet := wire.Tablet{Primary: first(s.Table.Primary)}
	for _, sec := range s.Table.Secondaries {
		tablet.Secondaries = append(tablet.Secondaries, first(sec))
	}
	mode := wire.ModePull
	if s.Table.Push {
		mode = wire.ModePush
	}
	return wire.Layout{Name: "usertable", Tablets: []wire.Tablet{tablet},
		Replication: wire.Replication{Mode: mode, Interval: s.Table.PullInterval}}
}

// topologyLink is the round trip and one-way jitter the topology gives
// the link between sites a and b (a == b: within a site).
func (s *Scenario) topologyLink(a, b string) (rtt, jitter time.Duration) {
	if a == b {
		return s.topo.LocalRTT, 0
	}
	l, _ := s.topo.Link(a, b)
	return l.RTT, l.Jitter
}

// replicaSites are the sites of the table's replicas, primary first.
func (s *Scenario) replicaSites() []string {
	return append([]string{s.Table.Primary}, s.Table.Secondaries...)
}

func siteOf(id wire.NodeID) string {
	site, _, _ := strings.Cut(string(id), "/")
	return site
}

// network is what a scheduled change acts on: the simulator's links and
// nodes, or a local cluster's emulated WAN.
type network interface {
	// setLink sets the round trip and one-way jitter of the link between
	// sites a and b (a == b: between a client and a node of one site).
	setLink(a, b string, rtt, jitter time.Duration) error
	partition(a, b string) error
	heal(a, b string) error
	crash(node string) error
	restart(node string) error
	// setService sets the time a storage node spends on each request,
	// beyond what it spends anyway.
	setService(node string, d time.Duration) error
}

// simNetwork is the simulator as a network.
type simNetwork struct{ sim *sim.Sim }

func (n simNetwork) setLink(a, b string, rtt, jitter time.Duration) error {
	return n.sim.SetLatency(a, b, sim.Latency{Mean: rtt / 2, Jitter: jitter})
}
func (n simNetwork) partition(a, b string) error { return n.sim.Partition(a, b) }
func (n simNetwork) heal(a, b string) error      { return n.sim.Heal(a, b) }
func (n simNetwork) crash(node string) error     { return n.sim.Crash(wire.NodeID(node)) }
func (n simNetwork) restart(node string) error   { return n.sim.Restart(wire.NodeID(node)) }

// setService sets the node's service time: a simulated node takes none
// otherwise.
func (n simNetwork) setService(node string, d time.Duration) error {
	return n.sim.SetService(wire.NodeID(node), sim.Latency{Mean: d})
}

// world is the oracle's view of the network for one run: the configured
// round trips and jitters, cut links, crashed nodes and slow nodes'
// service times. It applies the scheduled changes to net. The round
// trips added by the spikes of spikes events are kept apart in spike:
// the oracle looks through them (see EventSpec).
type world struct {
	s       *Scenario
	net     network
	client  string
	rtt     map[[2]string]time.Duration
	spike   map[[2]string]time.Duration
	jitter  map[[2]string]time.Duration
	down    map[[2]string]bool
	crashed map[string]bool
	service map[string]time.Duration
}

func pair(a, b string) [2]string {
	if b < a {
		a, b = b, a
	}
	return [2]string{a, b}
}

func newWorld(s *Scenario, net network, client string) *world {
	o := &world{s: s, net: net, client: client, rtt: map[[2]string]time.Duration{},
		spike: map[[2]string]time.Duration{}, jitter: map[[2]string]time.Duration{},
		down: map[[2]string]bool{}, crashed: map[string]bool{}, service: map[string]time.Duration{}}
	for _, st := range s.topo.Sites {
		o.rtt[pair(st.Name, st.Name)] = s.topo.LocalRTT
	}
	for _, l := range s.topo.Links {
		o.rtt[pair(l.A, l.B)] = l.RTT
		o.jitter[pair(l.A, l.B)] = l.Jitter
	}
	return o
}

// apply makes a scheduled change and describes it.
func (o *world) apply(e EventSpec) (string, error) {
	switch e.Action {
	case ActionCrash, ActionRestart:
		id, _ := o.s.replicaNode(e.Node)
		if e.Action == ActionCrash {
			o.crashed[id] = true
			return "crash " + id, o.net.crash(id)
		}
		delete(o.crashed, id)
		return "restart " + id, o.net.restart(id)
	case ActionSpikes:
		return "", fmt.Errorf("experiment: spikes event %s applied whole: expand the schedule first (expandSchedule)", e.Label)
	case ActionSlow:
		id, _ := o.s.replicaNode(e.Node)
		o.service[id] = e.Service
		return fmt.Sprintf("slow %s: service now %s", id, e.Service), o.net.setService(id, e.Service)
	}
	a, b := o.s.site(e.From, o.client), o.s.site(e.To, o.client)
	key := pair(a, b)
	switch e.Action {
	case ActionPartition:
		o.down[key] = true
		return fmt.Sprintf("partition %s-%s", a, b), o.net.partition(a, b)
	case ActionHeal:
		delete(o.down, key)
		return fmt.Sprintf("heal %s-%s", a, b), o.net.heal(a, b)
	case ActionAddRTT:
		if e.spike != 0 {
			o.spike[key] += e.RTT
			break
		}
		o.rtt[key] = max(0, o.rtt[key]+e.RTT)
	case ActionSetRTT:
		o.rtt[key] = e.RTT
		if e.Jitter != nil {
			o.jitter[key] = *e.Jitter
		}
	case ActionRestore:
		o.rtt[key], o.jitter[key] = o.s.topologyLink(a, b)
	}
	rtt := max(0, o.rtt[key]+o.spike[key])
	desc := fmt.Sprintf("%s %s-%s: rtt now %s", e.Action, a, b, rtt)
	return desc, o.net.setLink(a, b, rtt, o.jitter[key])
}

// best returns the attainable (subSLA, node) choices of highest utility
// for this run's client, as Adaptation describes.
func (o *world) best(agreement sla.SLA, layout wire.Layout) (float64, []string) {
	utility := -1.0
	var choices []string
	tablet := layout.Tablets[0]
	for i, sub := range agreement {
		for _, id := range tablet.Replicas() {
			site := siteOf(id)
			if o.crashed[string(id)] || o.down[pair(o.client, site)] {
				continue
			}
			primary := id == tablet.Primary
			if !primary && sub.Consistency.Kind != sla.Eventual {
				continue
			}
			if o.rtt[pair(o.client, site)]+o.service[string(id)] > sub.Latency {
				continue
			}
			c := fmt.Sprintf("%d@%s", i+1, site)
			switch {
			case sub.Utility > utility:
				utility, choices = sub.Utility, []string{c}
			case sub.Utility == utility:
				choices = append(choices, c)
			}
		}
	}
	return max(utility, 0), choices
}

func runOne(s *Scenario, o RunOptions, v slaVariant, clientSite, strategyName string, keys workload.Generator) (RunResult, error) {
	r := RunResult{SLA: v.Name, BaseSLA: v.Base, Factor: v.Factor, SLAText: v.SLA.String(),
		Client: clientSite, Strategy: strategyName, Met: make([]float64, len(v.SLA))}
	variant, err := parseStrategyVariant(strategyName)
	if err != nil {
		return r, err
	}
	strategy := variant.strategy
	w, err := harness.New(harness.Options{Seed: o.Seed, Topology: s.topo,
		Client: clientcore.Options{AdaptiveProbing: variant.adaptiveProbing}})
	if err != nil {
		return r, err
	}
	layout := s.layout()
	var loaderSite string
	for _, st := range s.topo.Sites {
		if len(st.Clients) > 0 && (loaderSite == "" || st.Name == s.Table.Primary) {
			loaderSite = st.Name
		}
	}
	var loader wire.NodeID
	for _, st := range s.topo.Sites {
		if st.Name == loaderSite {
			loader = topology.NodeID(st.Name, st.Clients[0])
		}
	}
	if err := w.CreateTable(loader, layout); err != nil {
		return r, err
	}
	if err := load(w, loader, s.Workload.Keys); err != nil {
		return r, err
	}
	// Let one pull pass so the secondaries hold the loaded records.
	if err := w.Sim.Run(w.Sim.Now() + s.Table.PullInterval); err != nil {
		return r, err
	}
	var clientID wire.NodeID
	for _, st := range s.topo.Sites {
		if st.Name == clientSite {
			clientID = topology.NodeID(st.Name, st.Clients[0])
		}
	}
	table, err := w.OpenTable(clientID, layout.Name)
	if err != nil {
		return r, err
	}

	oracle := newWorld(s, simNetwork{w.Sim}, clientSite)
	start := w.Sim.Now()
	since := func() float64 { return (w.Sim.Now() - start).Seconds() }
	rec := newRecorder(&r, len(s.Schedule) > 0)
	var events []EventRecord
	var applyErr error
	fire := func(e EventSpec) {
		desc, err := oracle.apply(e)
		if err != nil && applyErr == nil {
			applyErr = fmt.Errorf("%s: %w", e.Label, err)
		}
		u, best := oracle.best(v.SLA, layout)
		events = append(events, EventRecord{Label: e.Label, AtS: since(), AfterGets: r.Gets,
			Description: desc, BestUtility: u, Best: best, Spike: e.spike})
	}
	var byGets []EventSpec
	for _, e := range expandSchedule(s, o.Seed, o.Scale) {
		if e.AfterGets > 0 {
			byGets = append(byGets, e)
			continue
		}
		w.Sim.At(start+e.At, func() { fire(e) })
	}
	loop := &harness.Loop{
		Client: clientID, Table: table, SLA: v.SLA, Strategy: strategy, Get: variant.get,
		SessionOps: s.Workload.SessionOps, Think: s.Workload.Think,
		Rand: rand.New(rand.NewPCG(o.Seed, 5)),
		Next: func(rng *rand.Rand) harness.Step {
			put := !s.Workload.ReadOnly && rng.Float64() < s.Workload.PutFraction
			return harness.Step{Put: put, Key: workload.Key(keys.Next(rng))}
		},
		OnPut: func(clientcore.PutResult, error) { r.Puts++ },
		OnGet: func(g clientcore.GetResult, err error) {
			rec.get(getOutcome{Met: g.Met, Target: g.Target, Utility: g.Utility(), Site: siteOf(g.Node),
				RTT: g.RTT, Extra: extraRequests(g.Retried, g.Hedged)}, since())
			for _, e := range byGets {
				if e.AfterGets == r.Gets {
					w.Sim.After(0, func() { fire(e) })
				}
			}
		},
	}
	if s.Workload.Duration > 0 {
		loop.Until = start + time.Duration(float64(s.Workload.Duration)*o.Scale)
	} else {
		loop.Ops = max(1, int(math.Round(float64(s.Workload.Ops)*o.Scale)))
	}
	if err := w.Start(loop); err != nil {
		return r, err
	}
	// A closed loop of operations each under a few seconds cannot take
	// longer than this; the bound only guards against a stuck run.
	limit := loop.Until + time.Hour
	if loop.Ops > 0 {
		limit = start + time.Duration(loop.Ops)*10*time.Second
	}
	if err := w.Sim.RunUntil(limit, loop.Finished); err != nil {
		return r, err
	}
	if applyErr != nil {
		return r, applyErr
	}
	if !loop.Finished() || loop.Err() != nil {
		return r, fmt.Errorf("workload did not finish: %v", loop.Err())
	}
	if r.Gets == 0 {
		return r, fmt.Errorf("no Gets ran")
	}
	r.VirtualS = since()
	c, err := w.Client(clientID)
	if err != nil {
		return r, err
	}
	r.Probes = int(c.ProbesSent())
	rec.finish(strategy == clientcore.Pileus, s.replicaSites(), events, s.Adapt.Gets)
	r.TraceHash = fmt.Sprintf("%016x", w.Sim.TraceHash())
	return r, nil
}

// load writes every record once from a client at the primary's site, as
// YCSB's load phase does.
func load(w *harness.World, client wire.NodeID, n int) error {
	table, err := w.OpenTable(client, "usertable")
	if err != nil {
		return err
	}
	i := 0
	loop := &harness.Loop{
		Client: client, Table: table, SLA: sla.SLA{{Consistency: sla.EventualConsistency, Latency: sla.Unbounded, Utility: 1}},
		Strategy: clientcore.Primary, Ops: n, Rand: rand.New(rand.NewPCG(0, 0)),
		Next: func(*rand.Rand) harness.Step {
			i++
			return harness.Step{Put: true, Key: workload.Key(uint64(i - 1)), Value: []byte("initial")}
		},
	}
	if err := w.Start(loop); err != nil {
		return err
	}
	if err := w.Sim.RunUntil(w.Sim.Now()+time.Duration(n)*time.Second, loop.Finished); err != nil {
		return err
	}
	if !loop.Finished() || loop.Err() != nil {
		return fmt.Errorf("load did not finish: %v", loop.Err())
	}
	return nil
}

// extraRequests counts a Get's requests beyond the first.
func extraRequests(retried, hedged bool) int {
	n := 0
	if retried {
		n++
	}
	if hedged {
		n++
	}
	return n
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// adaptation analyses each event's phase, as Adaptation describes: the
// schedule's own events, whose phases the spikes of spikes events do not
// cut short.
func adaptation(events []EventRecord, points []GetPoint, n int) []Adaptation {
	events = scheduled(events)
	var out []Adaptation
	for i, e := range events {
		end := math.Inf(1)
		if i+1 < len(events) {
			end = events[i+1].AtS
		}
		a := Adaptation{Event: e.Label, BestUtility: e.BestUtility, Best: e.Best}
		var phase []GetPoint
		for _, p := range points {
			if p.AtS >= e.AtS && p.AtS < end {
				phase = append(phase, p)
			}
		}
		a.GetsInPhase = len(phase)
		adapted := -1
		run := 0
		for j, p := range phase {
			if bestChoice(e, p) {
				run++
				if run >= n {
					adapted = j - n + 1
					break
				}
			} else {
				run = 0
			}
		}
		split := len(phase)
		if adapted >= 0 {
			a.Adapted = true
			a.GetsToAdapt = adapted
			a.SecondsToAdapt = phase[adapted].AtS - e.AtS
			split = adapted
		}
		a.UtilityBefore = meanUtility(phase[:split])
		a.UtilityAfter = meanUtility(phase[split:])
		out = append(out, a)
	}
	return out
}

func bestChoice(e EventRecord, p GetPoint) bool {
	if slices.Contains(e.Best, fmt.Sprintf("%d@%s", p.Target, p.Node)) {
		return true
	}
	for _, b := range e.Best {
		_, node, _ := strings.Cut(b, "@")
		if node == p.Node && p.Met > 0 && p.Utility >= e.BestUtility {
			return true
		}
	}
	return false
}

func meanUtility(ps []GetPoint) float64 {
	if len(ps) == 0 {
		return 0
	}
	var sum float64
	for _, p := range ps {
		sum += p.Utility
	}
	return sum / float64(len(ps))
}
