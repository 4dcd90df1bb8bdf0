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
	// CausalResult is a causal table's section, filled by its plug-in
	// (JSON inlines its fields).
	CausalResult
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
	// opening the table to the end of the workload (fewer under adaptive
	// probing).
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
	// The plug-ins' sections, each filled by its plug-in (JSON inlines
	// their fields).
	LevelsResult
	BreakdownResult
	BoundedResult
	TimelineResult
	ReconfigResult
	// Causal is this client site's share of a causal table's run (see
	// Result.Causal).
	Causal    *CausalStats `json:"causal,omitempty"`
	TraceHash string       `json:"trace_hash"`
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
