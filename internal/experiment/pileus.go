// Package experiment reruns the papers' evaluations in the simulator and
// sets our numbers beside theirs.
package experiment

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"time"

	"github.com/cosla/cosla/internal/clientcore"
	"github.com/cosla/cosla/internal/harness"
	"github.com/cosla/cosla/internal/topology"
	"github.com/cosla/cosla/internal/wire"
	"github.com/cosla/cosla/internal/workload"
	"github.com/cosla/cosla/sla"
)

// PileusOptions configures the Pileus section 5 evaluation. The zero value
// of every field means the paper's setting.
type PileusOptions struct {
	Seed uint64
	// SLAs are preset names. Default: shopping-cart and password-checking
	// (5.1: the web application SLA of Fig. 5 is not evaluated).
	SLAs []string
	// Clients are the client sites. Default: us, england, india, china.
	Clients []string
	// Strategies default to Pileus, Primary, Random and Closest.
	Strategies []clientcore.Strategy
	// Keys is the number of keys, chosen with YCSB's default zipfian
	// distribution. Default 10,000 (5.1).
	Keys int
	// SessionOps is the number of operations per session. Default 400.
	SessionOps int
	// Sessions is the number of sessions each run measures. The paper
	// does not say how long it ran; default 20 (8,000 operations).
	Sessions int
	// PullInterval is how often the secondaries pull. Default 1 minute.
	PullInterval time.Duration
	// Progress, if set, is called after each run.
	Progress func(done, total int, row PileusRow)
}

func (o PileusOptions) withDefaults() PileusOptions {
	if len(o.SLAs) == 0 {
		o.SLAs = []string{"shopping-cart", "password-checking"}
	}
	if len(o.Clients) == 0 {
		o.Clients = []string{"us", "england", "india", "china"}
	}
	if len(o.Strategies) == 0 {
		o.Strategies = clientcore.Strategies
	}
	if o.Keys == 0 {
		o.Keys = 10000
	}
	if o.SessionOps == 0 {
		o.SessionOps = 400
	}
	if o.Sessions == 0 {
		o.Sessions = 20
	}
	if o.PullInterval == 0 {
		o.PullInterval = time.Minute
	}
	return o
}

// PileusRow is the outcome of one (SLA, client site, strategy) run.
type PileusRow struct {
	SLA      string `json:"sla"`
	Client   string `json:"client"`
	Strategy string `json:"strategy"`
	// AvgUtility is the utility delivered, averaged over all Gets (5.1),
	// and UtilityStdErr the standard error of that mean: two strategies
	// whose averages differ by less than a few of these are not told
	// apart by the run.
	AvgUtility    float64 `json:"avg_utility"`
	UtilityStdErr float64 `json:"utility_stderr"`
	// utilitySq and latencySum accumulate for UtilityStdErr and
	// AvgLatencyMS while the run goes on.
	utilitySq  float64
	latencySum time.Duration
	// Met is the fraction of Gets that met each subSLA, in rank order;
	// Unmet the fraction that met none.
	Met   []float64 `json:"met"`
	Unmet float64   `json:"unmet"`
	// AvgLatencyMS is the mean Get round trip; a Get that timed out counts
	// as taking its SLA's largest latency, when the client gave up.
	AvgLatencyMS float64 `json:"avg_latency_ms"`
	Gets         int     `json:"gets"`
	// PaperUtility is Pileus's utility in the paper's Table 1 or 2, for
	// Pileus rows of the paper's setups; nil otherwise.
	PaperUtility *float64 `json:"paper_avg_utility,omitempty"`
}

// paperUtility holds the average utilities Pileus delivered in Tables 1
// and 2 of the paper.
var paperUtility = map[string]map[string]float64{
	"shopping-cart":     {"us": 1.0, "england": 1.0, "india": 0.98, "china": 0.98},
	"password-checking": {"us": 0.99, "england": 1.0, "india": 0.5, "china": 0.25},
}

// RunPileus runs every (SLA, client, strategy) combination in a fresh
// simulated world of the pileus4 topology and returns one row each, with a
// hash of all the runs' traces. Every run uses the same seed, so the
// strategies face the same workload.
func RunPileus(o PileusOptions) ([]PileusRow, uint64, error) {
	o = o.withDefaults()
	keys, err := workload.NewScrambledZipfian(uint64(o.Keys))
	if err != nil {
		return nil, 0, err
	}
	total := len(o.SLAs) * len(o.Clients) * len(o.Strategies)
	digest := fnv.New64a()
	var rows []PileusRow
	for _, name := range o.SLAs {
		agreement, ok := sla.Preset(name)
		if !ok {
			return nil, 0, fmt.Errorf("experiment: unknown SLA preset %q", name)
		}
		for _, client := range o.Clients {
			for _, strategy := range o.Strategies {
				row, hash, err := runPileusOnce(o, name, agreement, client, strategy, keys)
				if err != nil {
					return nil, 0, fmt.Errorf("%s/%s/%s (seed %d): %w", name, client, strategy, o.Seed, err)
				}
				fmt.Fprintf(digest, "%x\n", hash)
				rows = append(rows, row)
				if o.Progress != nil {
					o.Progress(len(rows), total, row)
				}
			}
		}
	}
	return rows, digest.Sum64(), nil
}

func runPileusOnce(o PileusOptions, slaName string, agreement sla.SLA, clientSite string, strategy clientcore.Strategy, keys workload.Generator) (PileusRow, uint64, error) {
	row := PileusRow{SLA: slaName, Client: clientSite, Strategy: strategy.String(), Met: make([]float64, len(agreement))}
	topo := topology.Pileus4()
	w, err := harness.New(harness.Options{Seed: o.Seed, Topology: topo})
	if err != nil {
		return row, 0, err
	}
	layout, err := harness.SingleTablet(topo, "usertable", "england", wire.Replication{Mode: wire.ModePull, Interval: o.PullInterval})
	if err != nil {
		return row, 0, err
	}
	loader := topology.NodeID("england", "c1")
	if err := w.CreateTable(loader, layout); err != nil {
		return row, 0, err
	}
	if err := load(w, loader, o.Keys); err != nil {
		return row, 0, err
	}
	// Let one pull pass so the secondaries hold the loaded records.
	if err := w.Sim.Run(w.Sim.Now() + o.PullInterval); err != nil {
		return row, 0, err
	}

	client := topology.NodeID(clientSite, "c1")
	table, err := w.OpenTable(client, layout.Name)
	if err != nil {
		return row, 0, err
	}
	loop := &harness.Loop{
		Client: client, Table: table, SLA: agreement, Strategy: strategy,
		SessionOps: o.SessionOps, Ops: o.SessionOps * o.Sessions,
		Rand: rand.New(rand.NewPCG(o.Seed, 5)),
		// Equal numbers of Puts and Gets over zipfian keys (5.1).
		Next: func(r *rand.Rand) harness.Step {
			return harness.Step{Put: r.IntN(2) == 0, Key: workload.Key(keys.Next(r))}
		},
		OnGet: func(r clientcore.GetResult, err error) { row.record(r.Met, r.SubSLA.Utility, r.RTT) },
	}
	if err := w.Start(loop); err != nil {
		return row, 0, err
	}
	// A closed loop of Gets and Puts each under a few seconds cannot take
	// longer than this; the bound only guards against a stuck run.
	limit := w.Sim.Now() + time.Duration(loop.Ops)*10*time.Second
	if err := w.Sim.RunUntil(limit, loop.Finished); err != nil {
		return row, 0, err
	}
	if !loop.Finished() || loop.Err() != nil {
		return row, 0, fmt.Errorf("workload did not finish: %v", loop.Err())
	}
	if err := row.finish(); err != nil {
		return row, 0, err
	}
	return row, w.Sim.TraceHash(), nil
}

// record adds one Get: the index of the subSLA it met (-1 for none), that
// subSLA's utility, and its round trip.
func (r *PileusRow) record(met int, utility float64, rtt time.Duration) {
	r.Gets++
	r.latencySum += rtt
	if met < 0 {
		r.Unmet++
		return
	}
	r.Met[met]++
	r.AvgUtility += utility
	r.utilitySq += utility * utility
}

// finish turns the sums record kept into fractions, means and the
// standard error of the mean utility, and adds the paper's value to
// Pileus rows.
func (r *PileusRow) finish() error {
	if r.Gets == 0 {
		return fmt.Errorf("experiment: %s/%s/%s: no Gets ran", r.SLA, r.Client, r.Strategy)
	}
	n := float64(r.Gets)
	r.AvgUtility /= n
	if n > 1 {
		variance := max(r.utilitySq/n-r.AvgUtility*r.AvgUtility, 0) * n / (n - 1)
		r.UtilityStdErr = math.Sqrt(variance / n)
	}
	r.Unmet /= n
	for i := range r.Met {
		r.Met[i] /= n
	}
	r.AvgLatencyMS = float64(r.latencySum) / n / float64(time.Millisecond)
	if r.Strategy == clientcore.Pileus.String() {
		if u, ok := paperUtility[r.SLA][r.Client]; ok {
			r.PaperUtility = &u
		}
	}
	return nil
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
