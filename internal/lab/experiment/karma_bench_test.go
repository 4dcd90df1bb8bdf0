package experiment

import (
	"os"
	"strconv"
	"testing"
	"time"
)

// BenchmarkKarmaFig7Million runs one million operations of karma-fig7's
// Karma point at full scale in the simulator: the preset's world, costs
// and workload (95-5, zipfian, 200 B values, no load) and the clients of
// its series seven-sites, one run of the Karma strategy with the total
// sessions of KARMA_SESSIONS (default 9600, the largest point of the
// preset's sweep, where Karma peaked; the paper saturated Karma at 1050
// threads), bounded by a million operations
// instead of a duration. It reports the wall time per run and the
// simulated operations per second of wall time. Run it with
//
//	go test -run x -bench KarmaFig7Million -benchtime 1x ./internal/lab/experiment
//
// and add -cpuprofile cpu.out to see where the time goes.
func BenchmarkKarmaFig7Million(b *testing.B) {
	sessions := 9600
	if v := os.Getenv("KARMA_SESSIONS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			b.Fatalf("KARMA_SESSIONS=%q: %v", v, err)
		}
		sessions = n
	}
	const ops = 1_000_000
	base, err := Resolve("karma-fig7")
	if err != nil {
		b.Fatal(err)
	}
	s := derive(base, func(c *Scenario) {
		c.Sweep, c.Series = nil, nil
		c.Strategies = []string{"karma"}
		c.Workload.Ops, c.Workload.Duration, c.Workload.Warmup = ops, 0, 0
	})

	s.Clients = append(ClientSites(nil), s.Clients...)
	if err := sweepParams["total_sessions"](s, strconv.Itoa(sessions)); err != nil {
		b.Fatal(err)
	}
	if err := s.Validate(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		r, err := Run(s, RunOptions{Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		wall := time.Since(start)
		c := r.Causal[0]
		b.ReportMetric(wall.Seconds(), "wall-s/run")
		b.ReportMetric(float64(ops)/wall.Seconds(), "sim-ops/wall-s")
		b.ReportMetric(c.ThroughputOpsPerS, "virtual-ops/s")
		b.Logf("%d sessions: %d ops succeeded (%d gets, %d puts), %d failed, %d abandoned reads dropped, %.1f%% restricted, in %.1f s of virtual time, %.0f virtual ops/s; wall %s (%.1f µs per op)",
			c.Sessions, c.Ops, c.Gets, c.Puts, c.Failed, c.AbandonedReads, c.RestrictedPct, r.Runs[0].VirtualS, c.ThroughputOpsPerS, wall.Round(time.Millisecond),
			float64(wall.Microseconds())/float64(ops))
	}
}
