package run

import (
	"math/rand/v2"
	"time"

	"github.com/cosla/cosla/internal/core/clientcore"
	"github.com/cosla/cosla/internal/lab/driver"
)

// roleGroup is a role as a driver group of one session (Wada 2, Fig. 1):
// a writer's periodic stream writes the keys every WriteEvery from
// WriteOffset, a reader's reads them every 1/ReadHz (with jitter, at a
// uniform point of each slot: the simulator, whose latencies are exact,
// needs it for the reads to fall at every distance from the writes; live
// runs get that from the network); a thread has both streams, the write
// first on a tie. A step is a round over the keys, X then Y (Wada 3.2).
// Group.Name is the role's client, the session's name in the trace.
func roleGroup(spec RoleSpec, site string, jitter bool, r *rand.Rand, cfg driver.Cosla) *driver.Group {
	g := &driver.Group{Name: spec.Client, Site: site, Rand: r, Cosla: cfg}
	if spec.Write {
		g.Streams = append(g.Streams, driver.Stream{Mix: round(driver.Put, spec.Keys, spec.WriteOption),
			Every: spec.WriteEvery, Offset: spec.WriteOffset})
	}
	if spec.Read {
		g.Streams = append(g.Streams, driver.Stream{Mix: round(driver.Get, spec.Keys, spec.ReadOption),
			Every: period(spec.ReadHz), Jitter: jitter})
	}
	return g
}

// round is the step that writes, or reads, every key in order with option.
func round(kind driver.Kind, keys []string, option string) driver.FixedMix {
	ops := make([]driver.Op, len(keys))
	for i, k := range keys {
		ops[i] = driver.Op{Kind: kind, Key: k, Option: option}
	}
	return driver.FixedMix{Step: driver.Step{Ops: ops}}
}

// period is the period of a stream at hz steps a second.
func period(hz float64) time.Duration {
	return max(time.Duration(float64(time.Second)/hz), 1)
}

// steps is the driver's limit of steps for an op limit: a step is a round
// of one op per key, so a run stops after maxOps/keys rounds (at least
// one).
func steps(maxOps, keys int) int { return max(1, maxOps/max(keys, 1)) }

// runsOf names the run of each group's ops in the trace (driver.Recorder
// RunOf): its role's Run.
func runsOf(roles []RoleSpec, groups []*driver.Group) func(*driver.Group) string {
	runs := make(map[*driver.Group]string, len(groups))
	for i, g := range groups {
		runs[g] = roles[i].Run
	}
	return func(g *driver.Group) string { return runs[g] }
}

// coslaConfig is the client configuration of a role on a cosla target,
// simulated or live: the SLA and strategy of its read option
// (SimReadOption) as the sessions' default and every Get's, and the
// sessions' levels.
func coslaConfig(option string, policy clientcore.Policy) (driver.Cosla, error) {
	agreement, strategy, err := SimReadOption(option)
	if err != nil {
		return driver.Cosla{}, err
	}
	return driver.Cosla{SLA: agreement, Strategy: strategy, Policy: policy,
		Get: clientcore.GetOptions{SLA: agreement, Strategy: strategy}}, nil
}

// roleOption is the read option whose configuration a role's sessions
// take: its own, or for a writer the run's first.
func roleOption(spec RoleSpec, options []string) string {
	if spec.Read || len(options) == 0 {
		return spec.ReadOption
	}
	return options[0]
}
