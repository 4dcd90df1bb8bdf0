package run

import (
	"fmt"
	"time"

	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/lab/measure"
	"github.com/cosla/cosla/internal/runtime/topology"
)

// SimpleDBTopology is Wada 4.3's guess at how SimpleDB works, as a world:
// three replicas (one primary, two secondaries) at sites 1000 ms apart in
// round trip, and a client site 2 ms from each. With push replication a
// write is applied at the primary at once and at each secondary 500 ms
// later (the one-way delay); pushes are applied in timestamp order, so a
// later write reaching a secondary finds every earlier one applied, which
// is Wada's "a write that has been buffered at a replica is applied
// immediately when any subsequent write operation arrives".
//
// The one-way delay between replicas has a jitter of 5 ms (an exponential
// tail: never below 495 ms, above 518 ms one time in a hundred), so that
// the first 1 ms bucket where more than 99% of eventual reads are fresh
// lies near 516 ms, Wada 2.1.1's median time to freshness. Client links
// have 0.1 ms of jitter.
func SimpleDBTopology() topology.Topology {
	const replicaRTT, clientRTT = 1000 * time.Millisecond, 2 * time.Millisecond
	return topology.Topology{
		Name: "simpledb",
		Sites: []topology.Site{
			{Name: "primary", Replicas: []string{"r1"}},
			{Name: "secondary1", Replicas: []string{"r1"}},
			{Name: "secondary2", Replicas: []string{"r1"}},
			{Name: "client"},
		},
		Links: []topology.Link{
			{A: "primary", B: "secondary1", RTT: replicaRTT, Jitter: 5 * time.Millisecond},
			{A: "primary", B: "secondary2", RTT: replicaRTT, Jitter: 5 * time.Millisecond},
			{A: "secondary1", B: "secondary2", RTT: replicaRTT, Jitter: 5 * time.Millisecond},
			{A: "client", B: "primary", RTT: clientRTT, Jitter: 100 * time.Microsecond},
			{A: "client", B: "secondary1", RTT: clientRTT, Jitter: 100 * time.Microsecond},
			{A: "client", B: "secondary2", RTT: clientRTT, Jitter: 100 * time.Microsecond},
		},
		LocalRTT: 200 * time.Microsecond,
	}
}

// SimpleDBReplication pushes every write at once; the pull, which repairs
// gaps, runs only hourly so that it never applies a write before its push
// arrives.
func SimpleDBReplication() wire.Replication {
	return wire.Replication{Mode: wire.ModePush, Interval: time.Hour}
}

// SimpleDBWorkload is Wada 2.1.1's measurement: one thread writing every
// three seconds and reading 50 times a second, once with eventually
// consistent reads and once with consistent reads. Wada ran 258
// five-minute measurements; we run one of 20 minutes (400 writes and
// 60,000 reads per option), which gives each 1 ms bucket of the
// fresh-read curve about 20 reads, enough for the time to freshness (Fig.
// 3) to mean something (AnalysisConfig.MinBucketReads).
func SimpleDBWorkload() Workload {
	return Workload{
		Writers: 1, Readers: 1,
		WriteEvery: 3 * time.Second, ReadHz: 50,
		ReadOptions: []string{"eventual", "consistent"},
		Placement:   PlacementThread,
		Keys:        []string{"k"},
		Duration:    20 * time.Minute,
		MaxOps:      1_000_000,
	}
}

// Presets names the workload presets.
var Presets = map[string]func() Workload{"simpledb": SimpleDBWorkload}

// Preset returns the named workload preset.
func Preset(name string) (Workload, error) {
	f, ok := Presets[name]
	if !ok {
		return Workload{}, fmt.Errorf("%w: unknown preset %q (known: simpledb)", ErrInvalidWorkload, name)
	}
	return f(), nil
}

// AnalysisConfig is the analysis configuration of every run: Wada's
// windows for Table 2 and Table 3 (reads within [0, 450) ms of a write),
// 10 reads per bucket for the time to freshness, the rest measure's
// defaults. `cosla measure analyze` uses it too, so a
// trace analysed again gives the same report.
func AnalysisConfig() measure.Config {
	cfg := measure.Config{
		// A 1 ms bucket needs 10 reads to take part in a run's time to
		// freshness (Wada Fig. 3): with fewer, a bucket of reads that were
		// all fresh by chance (1/3 each, Table 1) would end the search in
		// the first 450 ms.
		MinBucketReads:     10,
		MonotonicWindow:    measure.RangeMS{FromMS: 0, ToMS: 450},
		InterElementWindow: measure.RangeMS{FromMS: 0, ToMS: 450},
	}
	return cfg.EnsureDefaults()
}

// PaperSimpleDB holds Wada's SimpleDB numbers (2.1.1, Table 1, Table 2,
// Fig. 3) beside which the simpledb preset's summary is printed.
var PaperSimpleDB = Summary{
	PFresh0To450MS:        0.3340, // 168,908/505,821
	PFresh500To1000MS:     0.9978, // 539,870/541,062 (the table's 1,192 is the stale count)
	PFreshConsistent:      1,
	MRViolationFraction:   0.2336,
	MRCorrelation:         0.0281,
	MedianTimeToFreshMS:   516.17,
	RYWViolationFraction:  -1, // not given as a number: "do not satisfy read-your-writes"
	GammaPositiveFraction: -1, // not measured by Wada
}
