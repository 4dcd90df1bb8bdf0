// Package experiment reruns the papers' evaluations, in the simulator or
// on a local cluster, and sets our numbers beside theirs.
package experiment

import (
	"context"
	"fmt"
	"strings"

	"github.com/cosla/cosla/internal/lab/driver"
	"github.com/cosla/cosla/internal/runtime/cluster"
	"github.com/cosla/cosla/internal/runtime/topology"
)

// The lab is an engine with one plug-in per paper. The engine (this
// package's engine.go, simrun.go, cluster_run.go, record.go, output.go,
// schedule.go, sweep.go, scenario.go, validate.go, result.go, network.go,
// plots.go) reads and checks a scenario, plans its units, runs them in
// the simulator or on a local cluster and writes what they measured; it
// reaches a paper only through the plug-ins below and names none
// (TestEngineNamesNoPaper). A plug-in lives in the files named after it:
// pileus*.go, cpq*.go, dcon*.go, karma*.go.
//
// A plug-in also validates its part of a scenario (validator), names
// its strategies (strategist), records its share of every run
// (recorderPlugin), owns its section of Result (embedded, so that the
// JSON keeps one flat run) and adds its sweep parameters (sweeper).
//
// The plug-ins share the engine's unexported types (unit, run, Result's
// sections), which is why they are files of this package rather than
// packages of their own: a package per paper would need the engine to
// export its planner's internals.

// A plugin is one paper's part of the lab: the outputs (tables and
// plots) it owns and the paper's numbers its presets may carry.
type plugin interface {
	// outputs names the entries of a scenario's outputs list the plug-in
	// builds.
	outputs() []string
	// metrics names the paper's numbers (paper.values[].metric) the
	// plug-in's presets may carry.
	metrics() []string
	// tables builds the tables of the plug-in's outputs the scenario
	// wants, in report order.
	tables(s *Scenario, r *Result) []Table
	// plots builds the plots of the plug-in's outputs the scenario wants.
	plots(s *Scenario, r *Result) ([]Figure, error)
}

// A mixer is a plug-in whose scenarios draw operations of their own kind
// (bounded ones, a causal table's), instead of the engine's Puts and
// Gets over the key distribution (or a YCSB workload).
type mixer interface {
	plugin
	// claims reports whether the scenario is of the plug-in's kind.
	claims(s *Scenario) bool
	// mix is what each session of a claimed scenario draws; fresh keys
	// are numbered from freshFrom.
	mix(s *Scenario, freshFrom uint64) (driver.Mix, error)
}

// plugins are the registered plug-ins, in the order their tables and
// plots appear in a report: the engine's own outputs (ops) after
// Pileus's, as the reports had them before there were plug-ins.
var plugins = []plugin{pileusPlugin{}, reconfigPlugin{}, enginePlugin{}, cpqPlugin{}, dconPlugin{}, karmaPlugin{}}

// knownOutputs and knownMetrics are every plug-in's.
var (
	knownOutputs = collect(plugin.outputs)
	knownMetrics = collect(plugin.metrics)
)

func collect(names func(plugin) []string) []string {
	var out []string
	for _, p := range plugins {
		out = append(out, names(p)...)
	}
	return out
}

// mixerOf is the plug-in that claims the scenario, if one does.
func mixerOf(s *Scenario) (mixer, bool) {
	for _, p := range plugins {
		if m, ok := p.(mixer); ok && m.claims(s) {
			return m, true
		}
	}
	return nil, false
}

// A worldPlugin runs the units of the scenarios it claims in a world of
// its own kind (Karma's causal table): every client site of a unit
// drives the one world at once, each strategy runs alone (on a cluster
// too, each on a table of its own), and a recorder of the plug-in's
// takes the unit's ops in place of its runs' recorders.
type worldPlugin interface {
	mixer
	// variant parses one of the plug-in's strategies.
	variant(name string) (strategyVariant, error)
	// checkStrategies checks the strategies of a claimed scenario.
	checkStrategies(s *Scenario) error
	// session sets up a run's driver group for the plug-in's table.
	session(s *Scenario, g *driver.Group)
	// runSim runs a unit in a world of its own in the simulator, with
	// the engine's driveSim, and returns the world's trace hash.
	runSim(u *unit, t timing) (uint64, error)
	// describe is the report's line on the world and table (mode sim or
	// cluster).
	describe(s *Scenario, mode string) string
	// caveats say what a local cluster does differently from the
	// simulator.
	caveats(s *Scenario) []string
	// topology is the topology the cluster runs the table on, given the
	// engine's (clusterTopology).
	topology(s *Scenario, t topology.Topology) topology.Topology
	// startCluster sets the cluster's options for the table and says
	// how the cluster starts.
	startCluster(s *Scenario, o *cluster.Options) string
	// prepareCluster makes a unit's table on the cluster ready (created
	// and loaded) and sets its recorder.
	prepareCluster(ctx context.Context, u *unit, c *cluster.Cluster, t timing, progress func(string)) error
	// table is the cluster's table a unit runs on.
	table(u *unit, info cluster.Info) string
}

// A unitRecorder takes the ops of a worldPlugin's unit.
type unitRecorder interface {
	// op records an op of run r; recorded says it started after the
	// warmup.
	op(r *run, op *driver.Op, recorded bool)
	// check reports a unit that did nothing, so measured nothing.
	check() error
	// finish fills the runs' results once the driver has finished.
	finish()
	// addTo adds the unit's own result to res; hash is its world's trace
	// hash (none on a cluster).
	addTo(res *Result, hash string)
}

// worldOf is the plug-in that runs the scenario in a world of its own,
// if one does.
func worldOf(s *Scenario) (worldPlugin, bool) {
	m, ok := mixerOf(s)
	if !ok {
		return nil, false
	}
	w, ok := m.(worldPlugin)
	return w, ok
}

// A validator is a plug-in that checks the scenario fields it reads,
// before the engine checks the rest.
type validator interface {
	plugin
	validate(s *Scenario) error
}

// A strategist is a plug-in that names strategies of its own: the
// engine runs a strategy of the scenarios of no worldPlugin with the
// plug-in that reads its name.
type strategist interface {
	plugin
	// strategy reads a strategy name with its options for scenario s
	// run in mode t (a strategy may aim at the mode's targets); ok is
	// false for a name that is not the plug-in's.
	strategy(s *Scenario, name string, t timing) (v strategyVariant, ok bool, err error)
	// strategyNames lists the names strategy reads, for an error.
	strategyNames() string
}

// parseStrategyVariant reads a strategy name with the strategist that
// knows it.
func parseStrategyVariant(s *Scenario, name string, t timing) (strategyVariant, error) {
	var names []string
	for _, p := range plugins {
		st, ok := p.(strategist)
		if !ok {
			continue
		}
		if v, ok, err := st.strategy(s, name, t); ok || err != nil {
			return v, err
		}
		names = append(names, st.strategyNames())
	}
	return strategyVariant{}, fmt.Errorf("unknown strategy %q (want %s)", name, strings.Join(names, ", "))
}

// A recorderPlugin records a share of every unit of the scenarios of no
// worldPlugin (whose own recorder takes every op): what the engine's
// recorder does not, into the runs' results.
type recorderPlugin interface {
	plugin
	// record is the plug-in's share of unit u run in mode t, or nil when
	// the plug-in has nothing to record of it.
	record(u *unit, t timing) unitPart
}

// A unitPart is a recorderPlugin's share of a unit.
type unitPart interface {
	// keepsOps reports whether the part needs the driver to keep every
	// op (driver.Recorder.Keep).
	keepsOps() bool
	// op records an op of run r; recorded says it started after the
	// warmup.
	op(r *run, op *driver.Op, recorded bool)
	// finish fills the runs' results once the driver has finished and
	// the engine's recorder has filled its part; rec is the driver's
	// recorder.
	finish(rec *driver.Recorder)
}

// unitParts are the recorderPlugins' shares of unit u.
func unitParts(u *unit, t timing) []unitPart {
	var out []unitPart
	for _, p := range plugins {
		if rp, ok := p.(recorderPlugin); ok {
			if part := rp.record(u, t); part != nil {
				out = append(out, part)
			}
		}
	}
	return out
}
