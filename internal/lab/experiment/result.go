package experiment

import "github.com/cosla/cosla/internal/lab/driver"

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
	// Summaries estimate each (point, SLA, client, strategy) over its
	// repeats, with 95% confidence intervals.
	Summaries []Summary `json:"summaries"`
	// Causal has one entry per run of a causal table's scenario (a
	// series, point, seed and strategy, all its client sites in one
	// world): Karma's figures (causal.go).
	Causal []CausalRun `json:"causal,omitempty"`
	// Sim is the same scenario in the simulator, beside a cluster run of
	// a sweep, so that the report can set the two curves side by side.
	Sim *Result `json:"sim,omitempty"`
}

// RunResult is the outcome of one (point, repeat, SLA, client site,
// strategy) run.
type RunResult struct {
	// Series names the run's series ("" without series), Point is the
	// sweep's value ("" without a sweep), Seed the repeat's seed,
	// Sessions the client site's sessions.
	Series   string  `json:"series,omitempty"`
	Point    string  `json:"point,omitempty"`
	Seed     uint64  `json:"seed"`
	Sessions int     `json:"sessions"`
	SLA      string  `json:"sla"`
	BaseSLA  string  `json:"base_sla"`
	Factor   float64 `json:"factor,omitempty"`
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
	// VirtualS is the time the measured workload took (virtual in the
	// simulator).
	VirtualS float64 `json:"virtual_s"`
	// Ops has the statistics of each op label (get, put, or a YCSB
	// operation): count, throughput, latency percentiles, failures.
	// ThroughputOpsPerS is over every label; Shed counts the open loop's
	// arrivals that found every session busy.
	Ops               []driver.Stats `json:"ops"`
	ThroughputOpsPerS float64        `json:"throughput_ops_per_s"`
	Shed              int64          `json:"shed,omitempty"`
	// Staleness is the Gamma analysis of the run's trace (staleness
	// output). On a cluster the runs of a point share keys, so it covers
	// all of them.
	Staleness *Staleness `json:"staleness,omitempty"`
	// Windows judges the run window by window against the scenario's
	// targets (windows output).
	Windows *Windows `json:"windows,omitempty"`
	// Breakdown is Pileus's decisions (Tables 1-2): one row per subSLA.
	Breakdown []BreakdownRow `json:"breakdown,omitempty"`
	// Bounded is what the run's bounded ops reported, per op label
	// (dConssandra); SweptOps are the labels of the ops that take the
	// workload's bound, the one a bound sweep sets. Costs are the step
	// costs the storage nodes had learned at the run's end, Planner the
	// planner's decisions replayed (planner output).
	Bounded  []BoundedStats  `json:"bounded,omitempty"`
	SweptOps []string        `json:"swept_ops,omitempty"`
	Costs    []StepCostStats `json:"costs,omitempty"`
	Planner  *PlannerStats   `json:"planner,omitempty"`
	// Events are the scheduled changes as applied; Timeline is every Get
	// and Adaptation the analysis of each event (5.4), when the scenario
	// has a schedule.
	Events     []EventRecord `json:"events,omitempty"`
	Timeline   []GetPoint    `json:"timeline,omitempty"`
	Adaptation []Adaptation  `json:"adaptation,omitempty"`
	// Causal is this client site's share of a causal table's run (see
	// Result.Causal).
	Causal    *CausalStats `json:"causal,omitempty"`
	TraceHash string       `json:"trace_hash"`
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

// Staleness is what the Gamma scores of a run's trace say (Golab et
// al.; CPQ 2; package measure): the fraction of values whose score is
// positive, CPQ's estimate of the stale-read fraction, and how stale
// they were.
type Staleness struct {
	Values           int     `json:"values"`
	Positive         int     `json:"positive"`
	PositiveFraction float64 `json:"positive_fraction"`
	// PositiveOver2MSFraction counts only the scores of 2 ms or more, as
	// CPQ 3.1.3 did to stay above its hosts' clock-synchronization
	// uncertainty.
	PositiveOver2MSFraction float64 `json:"positive_over_2ms_fraction"`
	// P50MS ... MaxMS are percentiles of the positive scores.
	P50MS float64 `json:"p50_ms"`
	P95MS float64 `json:"p95_ms"`
	P99MS float64 `json:"p99_ms"`
	MaxMS float64 `json:"max_ms"`
}
