package experiment

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"
)

// A sweepParam sets a sweep's parameter to v on the scenario of one
// point.
type sweepParam func(s *Scenario, v string) error

// A sweeper is a plug-in with sweep parameters of its own.
type sweeper interface {
	plugin
	sweepParams() map[string]sweepParam
}

// sweepParams are the engine's sweep parameters and the sweepers'.
var sweepParams = allSweepParams()

func allSweepParams() map[string]sweepParam {
	out := maps.Clone(engineSweepParams)
	for _, p := range plugins {
		if sw, ok := p.(sweeper); ok {
			maps.Copy(out, sw.sweepParams())
		}
	}
	return out
}

// engineSweepParams are the parameters of any scenario.
var engineSweepParams = map[string]sweepParam{
	"sessions": func(s *Scenario, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("sessions %q: %w", v, err)
		}
		for i := range s.Clients {
			s.Clients[i].Sessions = n
		}
		return nil
	},
	"rate": func(s *Scenario, v string) (err error) {
		s.Workload.Rate, err = strconv.ParseFloat(v, 64)
		return err
	},
	"think": func(s *Scenario, v string) (err error) {
		s.Workload.Think, err = time.ParseDuration(v)
		return err
	},
	"value_size": func(s *Scenario, v string) (err error) {
		s.Workload.ValueSize, err = strconv.Atoi(v)
		return err
	},
	"keys": func(s *Scenario, v string) (err error) {
		s.Workload.Keys, err = strconv.Atoi(v)
		return err
	},
	// strategy runs each point with one strategy, alone also on a
	// cluster (where a point's strategies otherwise run at once on the
	// same keys): a sweep of a strategy's parameter.
	"strategy": func(s *Scenario, v string) error {
		s.Strategies = []string{v}
		return nil
	},
}

func sweepParamNames() []string { return slices.Sorted(maps.Keys(sweepParams)) }

// points returns the number of sweep points, 0 without a sweep.
func (s *Scenario) points() int {
	if s.Sweep == nil {
		return 0
	}
	return len(s.Sweep.Values)
}

// atPoint returns the scenario of one sweep point: a copy with the
// parameter set to v, validated.
func atPoint(s *Scenario, v string) (*Scenario, error) {
	c := *s
	c.Sweep = nil
	c.Clients = slices.Clone(s.Clients)
	c.Schedule = slices.Clone(s.Schedule)
	if err := sweepParams[s.Sweep.Param](&c, v); err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// ClusterModel returns the scenario as the simulator models its cluster
// run, for the curves a sweep's cluster report sets beside the
// cluster's: cluster.sim's costs, and the cluster's keys, operations,
// sessions and storage nodes per site when it scales them down; the
// scenario itself when it does none. A causal table's model gives each
// node a machine of its own (causal.machines unset), as the cluster does.
func (s *Scenario) ClusterModel() *Scenario {
	cl := s.Cluster
	if cl.Sim == nil && cl.Keys == 0 && cl.Ops == 0 && cl.SessionsScale == 0 && cl.ReplicasPerSite == 0 && cl.WarmKeys == 0 {
		return s
	}
	return derive(s, func(c *Scenario) {
		c.clusterModel = true
		if n := c.Cluster.ReplicasPerSite; n > 0 && c.resolveTopology() == nil {
			t := trimReplicas(c.topo, n)
			c.TopologyInline, c.topo = &t, t
		}
		if c.Causal != nil {
			// A cluster does not share machines out (its processes
			// share this one's cores): every node of the model is a
			// machine of its own, whatever the strategy.
			cs := *c.Causal
			cs.Machines = 0
			cs.WarmKeys = c.Cluster.warmKeys(cs.WarmKeys)
			c.Causal = &cs
		}
		if c.Cluster.Sim != nil {
			c.Sim = *c.Cluster.Sim
		}
		if c.Cluster.Keys > 0 {
			c.Workload.Keys = c.Cluster.Keys
		}
		if c.Cluster.Ops > 0 {
			c.Workload.Ops, c.Workload.Duration, c.Workload.Warmup = c.Cluster.Ops, 0, 0
		}
	})
}

// derive returns a copy of the scenario changed by f, as are its series,
// which are laid over the YAML the scenario was read from (series).
func derive(s *Scenario, f func(*Scenario)) *Scenario {
	c := *s
	f(&c)
	c.mods = append(slices.Clone(s.mods), f)
	return &c
}

// pointScenario is one point of a run: its label (the swept value, ""
// without a sweep) and scenario.
type pointScenario struct {
	label string
	s     *Scenario
}

// pointScenarios returns the scenario of every point.
func pointScenarios(s *Scenario) ([]pointScenario, error) {
	if s.Sweep == nil {
		return []pointScenario{{s: s}}, nil
	}
	var out []pointScenario
	for _, v := range s.Sweep.Values {
		p, err := atPoint(s, v)
		if err != nil {
			return nil, err
		}
		out = append(out, pointScenario{label: v, s: p})
	}
	return out, nil
}

// Estimate is a mean over repeats and the half-width of its 95%
// confidence interval (Student's t; 0 for a single repeat).
type Estimate struct {
	Mean float64 `json:"mean"`
	CI95 float64 `json:"ci95"`
}

func estimate(xs []float64) Estimate {
	n := float64(len(xs))
	if n == 0 {
		return Estimate{}
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	mean := sum / n
	if len(xs) < 2 {
		return Estimate{Mean: mean}
	}
	var sq float64
	for _, x := range xs {
		sq += (x - mean) * (x - mean)
	}
	sd := math.Sqrt(sq / (n - 1))
	return Estimate{Mean: mean, CI95: tQuantile975(len(xs)-1) * sd / math.Sqrt(n)}
}

// tQuantile975 is the 97.5th percentile of Student's t distribution with
// df degrees of freedom, from the standard tables; beyond 30 the normal's
// 1.96 is within 2%.
func tQuantile975(df int) float64 {
	table := []float64{12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
		2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
		2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042}
	if df >= 1 && df <= len(table) {
		return table[df-1]
	}
	return 1.96
}

// Summary is one (series, point, SLA, client site, strategy) over its
// repeats.
type Summary struct {
	Series   string `json:"series,omitempty"`
	Point    string `json:"point,omitempty"`
	SLA      string `json:"sla"`
	Client   string `json:"client"`
	Strategy string `json:"strategy"`
	Repeats  int    `json:"repeats"`
	// AvgUtility is the delivered utility (when the run had Gets under
	// an SLA); Throughput the run's successful ops per second.
	AvgUtility Estimate `json:"avg_utility"`
	Throughput Estimate `json:"throughput_ops_per_s"`
	// Ops has one entry per op label.
	Ops []OpSummary `json:"ops"`
}

// OpSummary is one op label's figures over repeats.
type OpSummary struct {
	Op         string   `json:"op"`
	Throughput Estimate `json:"throughput_ops_per_s"`
	P50MS      Estimate `json:"p50_ms"`
	P95MS      Estimate `json:"p95_ms"`
	P99MS      Estimate `json:"p99_ms"`
}

// summarize groups the runs by (series, point, SLA, client, strategy),
// in order of first appearance, and estimates their figures.
func summarize(runs []RunResult) []Summary {
	type key struct{ series, point, sla, client, strategy string }
	var order []key
	byKey := map[key][]RunResult{}
	for _, r := range runs {
		k := key{r.Series, r.Point, r.SLA, r.Client, r.Strategy}
		if _, ok := byKey[k]; !ok {
			order = append(order, k)
		}
		byKey[k] = append(byKey[k], r)
	}
	var out []Summary
	for _, k := range order {
		rs := byKey[k]
		s := Summary{Series: k.series, Point: k.point, SLA: k.sla, Client: k.client, Strategy: k.strategy, Repeats: len(rs)}
		var utility, throughput []float64
		var labels []string
		for _, r := range rs {
			utility = append(utility, r.AvgUtility)
			throughput = append(throughput, r.ThroughputOpsPerS)
			for _, o := range r.Ops {
				if !slices.Contains(labels, o.Op) {
					labels = append(labels, o.Op)
				}
			}
		}
		s.AvgUtility, s.Throughput = estimate(utility), estimate(throughput)
		for _, label := range labels {
			var tp, p50, p95, p99 []float64
			for _, r := range rs {
				for _, o := range r.Ops {
					if o.Op == label {
						tp = append(tp, o.ThroughputOpsPerS)
						p50, p95, p99 = append(p50, o.LatencyMS.P50), append(p95, o.LatencyMS.P95), append(p99, o.LatencyMS.P99)
					}
				}
			}
			s.Ops = append(s.Ops, OpSummary{Op: label, Throughput: estimate(tp), P50MS: estimate(p50), P95MS: estimate(p95), P99MS: estimate(p99)})
		}
		out = append(out, s)
	}
	return out
}
