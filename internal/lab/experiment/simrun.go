package experiment

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"time"

	"github.com/cosla/cosla/internal/core/clientcore"
	"github.com/cosla/cosla/internal/core/replica"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/lab/driver"
	"github.com/cosla/cosla/internal/runtime/harness"
	"github.com/cosla/cosla/internal/runtime/sim"
	"github.com/cosla/cosla/internal/runtime/topology"
	"github.com/cosla/cosla/sla"
)

// RunOptions configures one run of a scenario in the simulator.
type RunOptions struct {
	Seed uint64
	// Scale multiplies the workload's operations or duration, its warmup
	// and every scheduled time and Get count; tests shorten runs with it.
	// Default 1.
	Scale float64
	// Progress, if set, is called after each run.
	Progress func(done, total int, r RunResult)
}

// Run runs every unit of the scenario in the simulator, each in a world
// of its own (the same seed gives the same Result, byte for byte once
// marshalled).
func Run(s *Scenario, o RunOptions) (*Result, error) {
	if o.Scale == 0 {
		o.Scale = 1
	}
	if !(o.Scale > 0 && o.Scale <= 100) {
		return nil, fmt.Errorf("experiment: scale %v outside (0, 100]", o.Scale)
	}
	t := timing{scale: o.Scale}
	units, err := planUnits(s, o.Seed, t)
	if err != nil {
		return nil, err
	}
	res := &Result{Scenario: s.Name, Description: s.Description, Reference: s.Reference,
		Mode: "sim", Seed: o.Seed, Scale: o.Scale, Nodes: replicaSites(s)}
	total := 0
	for _, u := range units {
		total += len(u.runs)
	}
	digest := fnv.New64a()
	for _, u := range units {
		hash, err := runSimUnit(u, t)
		if err != nil {
			r := u.runs[0].r
			return nil, fmt.Errorf("%s: %s %s/%s/%s (seed %d): %w", s.Name, r.Point, r.SLA, r.Client, r.Strategy, u.seed, err)
		}
		if u.own != nil {
			u.own.addTo(res, fmt.Sprintf("%016x", hash))
		}
		for _, r := range u.runs {
			r.r.TraceHash = fmt.Sprintf("%016x", hash)
			fmt.Fprintf(digest, "%s\n", r.r.TraceHash)
			res.Runs = append(res.Runs, r.r)
			if o.Progress != nil {
				o.Progress(len(res.Runs), total, r.r)
			}
		}
	}
	res.TraceHash = fmt.Sprintf("%016x", digest.Sum64())
	res.Summaries = summarize(res.Runs)
	return res, nil
}

// simWorld builds a unit's world: the topology with the scenario's
// costs on every storage node, the runs' client options on its clients.
func simWorld(u *unit, t timing) (*harness.World, error) {
	s := u.s
	o := harness.Options{Seed: u.seed, Topology: s.topo, Storage: s.Sim.nodeOptions(),
		ClientNode: s.Sim.clientOptions(), Cores: s.Sim.Cores, Client: u.runs[0].group.Cosla.Client}
	s.worldOptions(&o, t)
	return harness.New(o)
}

// A worldWatcher is a unit's part that reads the world while the
// workload runs.
type worldWatcher interface {
	watch(w *harness.World)
}

// runSimUnit runs a unit in a world of its own and returns the world's
// trace hash: create the table, load the keys, let one pull pass, then
// run the workload with the schedule.
func runSimUnit(u *unit, t timing) (uint64, error) {
	if wp, ok := worldOf(u.s); ok {
		return wp.runSim(u, t)
	}
	s := u.s
	w, err := simWorld(u, t)
	if err != nil {
		return 0, err
	}
	layout, err := s.layout()
	if err != nil {
		return 0, err
	}
	loader := loaderSite(s)
	if err := w.CreateTable(topology.NodeID(loader, "c1"), layout); err != nil {
		return 0, err
	}
	if err := load(u, w, loader); err != nil {
		return 0, fmt.Errorf("load: %w", err)
	}
	// Let one pull pass so the secondaries hold the loaded records
	// (unbounded inserts are at every replica when they are answered).
	if loadBound(s) != wire.Unbounded {
		if err := w.Sim.Run(w.Sim.Now() + s.Table.PullInterval); err != nil {
			return 0, err
		}
	}
	for _, p := range u.parts {
		if ww, ok := p.(worldWatcher); ok {
			ww.watch(w)
		}
	}
	if err := driveSim(u, t, w.Sim, &driver.SimTarget{World: w, Table: tableName, Node: s.Sim.clientOptions()}); err != nil {
		return 0, err
	}
	if s.wants(OutBounded) || s.wants(OutPlanner) {
		if err := u.collectNodes(w); err != nil {
			return 0, err
		}
	}
	return w.Sim.TraceHash(), u.check()
}

// driveSim runs the unit's workload, with its schedule, on a world's
// simulator through target, and collects the runs' results.
func driveSim(u *unit, t timing, sm *sim.Sim, target driver.Target) error {
	spec := u.spec(t)
	d, err := driver.New(target, spec)
	if err != nil {
		return err
	}
	defer d.Close()
	rt := driver.SimRuntime{Sim: sm}
	sc := &schedule{u: u, oracle: newWorld(u.s, simNetwork{sm}, u.client), since: d.Now,
		gets: func() int { return u.runs[0].r.Gets }}
	events := expandSchedule(u.s, u.seed, t.scale)
	sc.start(rt, events)
	if byGets := afterGets(events); len(byGets) > 0 {
		onOp := spec.Recorder.OnOp
		spec.Recorder.OnOp = func(g *driver.Group, op *driver.Op) {
			onOp(g, op)
			for _, e := range byGets {
				if op.Kind == driver.Get && e.AfterGets == u.runs[0].r.Gets {
					rt.After(0, func() { sc.fire(e) })
				}
			}
		}
	}
	d.Start(rt)
	// Closed loops of operations each under a few seconds cannot take
	// longer than this; the bound only guards against a stuck run.
	limit := sm.Now() + spec.Duration + time.Hour
	if spec.Steps > 0 {
		limit = sm.Now() + time.Duration(spec.Steps)*10*time.Second
	}
	if err := sm.RunUntil(limit, d.Done); err != nil {
		return err
	}
	if sc.err != nil {
		return sc.err
	}
	if !d.Done() || d.Err() != nil {
		return fmt.Errorf("workload did not finish: %v", d.Err())
	}
	u.collect(d, spec.Recorder, d.Now())
	return nil
}

// collectNodes reads the storage nodes' learned costs (bounded output)
// and replays their planner decisions (planner output) into every run.
func (u *unit) collectNodes(w *harness.World) error {
	var costs []replica.StepCost
	var decisions []replica.Decision
	var made int64
	for _, id := range w.Topology.Replicas() {
		n, err := w.Replica(id)
		if err != nil {
			return err
		}
		m := n.Metrics()
		costs = append(costs, m.Costs...)
		made += m.Decisions
		decisions = append(decisions, n.Decisions()...)
	}
	var planner *PlannerStats
	if u.s.wants(OutPlanner) {
		planner = replayPlanner(made, decisions)
	}
	for _, r := range u.runs {
		r.r.Costs, r.r.Planner = stepCosts(costs), planner
	}
	return nil
}

// afterGets returns the events fired by a count of Gets.
func afterGets(events []EventSpec) []EventSpec {
	var out []EventSpec
	for _, e := range events {
		if e.AfterGets > 0 {
			out = append(out, e)
		}
	}
	return out
}

// loaderSite is the site of the client that creates and loads the table:
// the primary's, if it hosts a client, else the first site that does.
func loaderSite(s *Scenario) string {
	var site string
	for _, st := range s.topo.Sites {
		if len(st.Clients) > 0 && (site == "" || st.Name == s.Table.Primary) {
			site = st.Name
		}
	}
	return site
}

// loadGroup is the group that loads the table: every key written once,
// by sessions Puts at a time, at the primary (an eventual SLA with the
// Primary strategy), as YCSB's load phase does; with a load bound, as
// staged writes at the nearest replica (loadBound).
func loadGroup(s *Scenario, site string, sessions int, client clientcore.Options) *driver.Group {
	eventual := sla.SLA{{Consistency: sla.EventualConsistency, Latency: sla.Unbounded, Utility: 1}}
	return &driver.Group{Name: "load", Site: site, Sessions: sessions, Rand: rand.New(rand.NewPCG(0, 0)),
		Streams: []driver.Stream{{Mix: &driver.LoadMix{N: uint64(s.Workload.Keys), ValueSize: s.Workload.ValueSize, Bound: loadBound(s)}}},
		Cosla:   driver.Cosla{SLA: eventual, Strategy: clientcore.Primary, Client: client}}
}

// load writes every key once from the loader's client, one Put at a
// time: the world is the same for every strategy, and the load's timing
// decides what the secondaries hold when the run starts.
func load(u *unit, w *harness.World, site string) error {
	g := loadGroup(u.s, site, 1, u.runs[0].group.Cosla.Client)
	return runLoad(w.Sim, &driver.SimTarget{World: w, Table: tableName, Node: u.s.Sim.clientOptions()}, []*driver.Group{g}, u.s.Workload.Keys)
}

// runLoad runs the load groups on target in the simulator until they
// have made steps steps (a second of virtual time each at most): the
// Puts of a load, the Gets that warm caches. A failed step fails it.
func runLoad(s *sim.Sim, target driver.Target, groups []*driver.Group, steps int) error {
	rec := &driver.Recorder{}
	d, err := driver.New(target, driver.Spec{Groups: groups, Steps: steps, Recorder: rec})
	if err != nil {
		return err
	}
	defer d.Close()
	d.Start(driver.SimRuntime{Sim: s})
	if err := s.RunUntil(s.Now()+time.Duration(steps)*time.Second, d.Done); err != nil {
		return err
	}
	if !d.Done() || d.Err() != nil {
		return fmt.Errorf("load did not finish: %v", d.Err())
	}
	for _, st := range rec.Stats() {
		if st.Errors > 0 {
			return fmt.Errorf("%s: %d of %d %s steps failed: %s", st.Group, st.Errors, st.Count, st.Op, st.FirstError)
		}
	}
	return nil
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
func (n simNetwork) pause(node string, d time.Duration) error {
	return n.sim.Pause(wire.NodeID(node), d)
}

// setService sets the time a node spends on every request beyond its
// calibrated service time.
func (n simNetwork) setService(node string, d time.Duration) error {
	return n.sim.SetService(wire.NodeID(node), sim.Latency{Mean: d})
}
