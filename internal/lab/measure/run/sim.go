package run

import (
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/cosla/cosla/internal/core/clientcore"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/lab/driver"
	"github.com/cosla/cosla/internal/lab/measure"
	"github.com/cosla/cosla/internal/runtime/harness"
	"github.com/cosla/cosla/internal/runtime/topology"
	"github.com/cosla/cosla/sla"
)

// SimReadOption returns the SLA and strategy of a simulated read option:
//
//   - "eventual": SLA "eventual unbounded 1", strategy Random (Wada 4.3:
//     an eventually consistent read goes to a replica at random);
//   - "consistent": "strong unbounded 1", strategy Primary (Wada 4.3);
//   - "pileus-<preset>": the preset SLA (sla.Preset), strategy Pileus;
//   - a guarantee ("strong", "read-my-writes", "monotonic", "causal",
//     "bounded(1s)"...): "<guarantee> unbounded 1", strategy Pileus.
func SimReadOption(option string) (sla.SLA, clientcore.Strategy, error) {
	switch {
	case option == "eventual":
		return sla.SLA{{Consistency: sla.EventualConsistency, Latency: sla.Unbounded, Utility: 1}}, clientcore.Random, nil
	case option == "consistent":
		return sla.SLA{{Consistency: sla.StrongConsistency, Latency: sla.Unbounded, Utility: 1}}, clientcore.Primary, nil
	case strings.HasPrefix(option, "pileus-"):
		name := strings.TrimPrefix(option, "pileus-")
		s, ok := sla.Preset(name)
		if !ok {
			return nil, 0, fmt.Errorf("%w: read option %q: no SLA preset %q (known: %s)", ErrInvalidWorkload, option, name, strings.Join(sla.PresetNames(), ", "))
		}
		return s, clientcore.Pileus, nil
	}
	c, err := sla.ParseConsistency(option)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: read option %q is not eventual, consistent, pileus-<preset> or a guarantee: %v", ErrInvalidWorkload, option, err)
	}
	return sla.SLA{{Consistency: c, Latency: sla.Unbounded, Utility: 1}}, clientcore.Pileus, nil
}

// SimOptions configures a simulated run. The zero value of every field
// but Workload takes the default its comment states.
type SimOptions struct {
	// Workload is what the clients do. Read options are SimReadOption's;
	// the write option is ignored (every Put goes to the primary).
	Workload Workload
	// Seed seeds the simulator and the readers' jitter. Every run prints
	// it; the same seed gives the same trace.
	Seed uint64
	// Topology is the simulated world. Default SimpleDBTopology().
	Topology topology.Topology
	// PrimarySite holds the tablet's primary. Default: the first site
	// with a storage node.
	PrimarySite string
	// ClientSite hosts the clients, which the runner adds to it. Default:
	// the first site without storage nodes, else PrimarySite.
	ClientSite string
	// Replication of the measured table. Default: push, with a pull every
	// hour (SimpleDBReplication).
	Replication wire.Replication
	// Trace receives every op as one JSONL line as it completes (in
	// virtual time: the driver's Recorder with OriginUS 0). Optional.
	Trace io.Writer
	// Progress, if set, is called every ProgressEvery of virtual time
	// (default 30s) and at the end.
	Progress      func(Progress)
	ProgressEvery time.Duration
}

// SimResult is a simulated run's outcome.
type SimResult struct {
	// Ops are in order of invocation. Times are virtual microseconds since
	// the simulation began.
	Ops  []measure.Op
	Seed uint64
	// TraceHash is the simulator's hash of every event of the run: the
	// same seed gives the same hash.
	TraceHash uint64
	// Workload is the effective workload, Topology the world.
	Workload Workload
	Topology topology.Topology
}

// simTable is the measured table's name.
const simTable = "measure"

// Sim runs the workload in the deterministic simulator: a world of
// package harness, every role a driver group on a driver.SimTarget whose
// sessions carry their read option's SLA and strategy. Each group is a
// client node of its own at ClientSite (c1, c2, ...; c1 creates the
// table), whatever the placement: thread, one node per read option doing
// both roles in one session; threads and processes, one node per role.
func Sim(o SimOptions) (SimResult, error) {
	w := o.Workload
	w = w.EnsureDefaults()
	if err := w.Validate(); err != nil {
		return SimResult{}, err
	}
	configs := map[string]driver.Cosla{}
	for _, opt := range w.ReadOptions {
		cfg, err := coslaConfig(opt, w.Policy)
		if err != nil {
			return SimResult{}, err
		}
		configs[opt] = cfg
	}
	if o.Topology.Name == "" && len(o.Topology.Sites) == 0 {
		o.Topology = SimpleDBTopology()
	}
	if o.Replication.Mode == 0 {
		o.Replication = SimpleDBReplication()
	}
	if o.ProgressEvery <= 0 {
		o.ProgressEvery = 30 * time.Second
	}
	topo, err := cloneTopology(o.Topology)
	if err != nil {
		return SimResult{}, err
	}
	for _, s := range topo.Sites {
		if o.PrimarySite == "" && len(s.Replicas) > 0 {
			o.PrimarySite = s.Name
		}
		if o.ClientSite == "" && len(s.Replicas) == 0 {
			o.ClientSite = s.Name
		}
	}
	if o.ClientSite == "" {
		o.ClientSite = o.PrimarySite
	}
	site := slices.IndexFunc(topo.Sites, func(s topology.Site) bool { return s.Name == o.ClientSite })
	if site < 0 {
		return SimResult{}, fmt.Errorf("%w: client site %q is not in topology %s", ErrInvalidWorkload, o.ClientSite, topo.Name)
	}
	// c1 creates the table, then runs the first group (driver.SimTarget
	// takes a node the world has as it is, and adds c2, c3, ...).
	creator := topology.NodeID(o.ClientSite, "c1")
	if !slices.Contains(topo.Sites[site].Clients, "c1") {
		topo.Sites[site].Clients = append(topo.Sites[site].Clients, "c1")
	}
	world, err := harness.New(harness.Options{Seed: o.Seed, Topology: topo})
	if err != nil {
		return SimResult{}, err
	}
	fail := func(err error) (SimResult, error) {
		return SimResult{}, fmt.Errorf("%w (seed %d)", err, o.Seed)
	}
	layout, err := topo.Layout(simTable, topo.PrimaryAt(o.PrimarySite), o.Replication)
	if err != nil {
		return fail(err)
	}
	if err := world.CreateTable(creator, layout); err != nil {
		return fail(err)
	}

	roles := w.Roles()
	groups := make([]*driver.Group, len(roles))
	for i, spec := range roles {
		groups[i] = roleGroup(spec, o.ClientSite, true, rand.New(rand.NewPCG(o.Seed, uint64(i)+1)),
			configs[roleOption(spec, w.ReadOptions)])
	}
	var d *driver.Driver
	var progress Progress
	nextProgress := o.ProgressEvery
	report := func() {
		p := progress
		p.Run, p.Elapsed = w.Run, d.Now()
		o.Progress(p)
	}
	rec := &driver.Recorder{RunOf: runsOf(roles, groups), Trace: o.Trace, Keep: true,
		OnOp: func(_ *driver.Group, op *driver.Op) {
			progress.add(op)
			if o.Progress != nil && d.Now() >= nextProgress {
				nextProgress += o.ProgressEvery
				report()
			}
		}}
	d, err = driver.New(&driver.SimTarget{World: world, Table: simTable}, driver.Spec{Groups: groups,
		Duration: w.Duration, Steps: steps(w.MaxOps, len(w.Keys)), Recorder: rec})
	if err != nil {
		return fail(err)
	}
	defer d.Close()
	sim := world.Sim
	d.Start(driver.SimRuntime{Sim: sim})
	// Every op ends by its request timeout; the slack only guards against
	// a stuck run.
	limit := sim.Now() + w.Duration + 5*time.Minute
	if err := sim.RunUntil(limit, d.Done); err != nil {
		return fail(err)
	}
	runErr := d.Err()
	if !d.Done() && runErr == nil {
		runErr = fmt.Errorf("measure: clients still busy after %s of virtual time", d.Now())
	}
	if o.Progress != nil {
		report()
	}
	if err := rec.Flush(); runErr == nil {
		runErr = err
	}
	ops := rec.Ops()
	sortByCall(ops)
	res := SimResult{Ops: ops, Seed: o.Seed, TraceHash: sim.TraceHash(), Workload: w, Topology: topo}
	if runErr != nil {
		return res, fmt.Errorf("%w (seed %d)", runErr, o.Seed)
	}
	return res, nil
}

func cloneTopology(t topology.Topology) (topology.Topology, error) {
	c := t
	c.Sites = make([]topology.Site, len(t.Sites))
	for i, s := range t.Sites {
		c.Sites[i] = topology.Site{Name: s.Name, Replicas: append([]string(nil), s.Replicas...), Clients: append([]string(nil), s.Clients...)}
	}
	c.Links = append([]topology.Link(nil), t.Links...)
	if err := c.Validate(); err != nil {
		return c, err
	}
	return c, nil
}
