package run

import (
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/cosla/cosla/internal/clientcore"
	"github.com/cosla/cosla/internal/harness"
	"github.com/cosla/cosla/internal/measure"
	"github.com/cosla/cosla/internal/topology"
	"github.com/cosla/cosla/internal/wire"
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
	// Trace receives every op as one JSONL line as it completes. Optional.
	Trace io.Writer
	// Progress, if set, is called every ProgressEvery of virtual time
	// (default 30s) and at the end.
	Progress      func(Progress)
	ProgressEvery time.Duration
}

// SimResult is a simulated run's outcome.
type SimResult struct {
	// Ops are in order of invocation. Times are virtual microseconds.
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

// Sim runs the workload in the deterministic simulator (internal/harness),
// the clients driving clientcore directly. Placements: thread, one client
// node per read option doing both roles in one session; threads, one
// client node with a session per role; processes, a client node per role.
func Sim(o SimOptions) (SimResult, error) {
	w := o.Workload
	w.EnsureDefaults()
	if err := w.Validate(); err != nil {
		return SimResult{}, err
	}
	type readSLA struct {
		agreement sla.SLA
		strategy  clientcore.Strategy
	}
	options := map[string]readSLA{}
	for _, opt := range w.ReadOptions {
		a, s, err := SimReadOption(opt)
		if err != nil {
			return SimResult{}, err
		}
		options[opt] = readSLA{a, s}
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
	roles := w.Roles()
	nodeOf := make([]wire.NodeID, len(roles))
	var added []string
	for i, r := range roles {
		name := r.Client
		if w.Placement == PlacementThreads {
			name = "measure"
		}
		nodeOf[i] = topology.NodeID(o.ClientSite, name)
		if len(added) == 0 || added[len(added)-1] != name {
			added = append(added, name)
		}
	}
	site := -1
	for i := range topo.Sites {
		if topo.Sites[i].Name == o.ClientSite {
			site = i
		}
	}
	if site < 0 {
		return SimResult{}, fmt.Errorf("%w: client site %q is not in topology %s", ErrInvalidWorkload, o.ClientSite, topo.Name)
	}
	topo.Sites[site].Clients = append(topo.Sites[site].Clients, added...)

	world, err := harness.New(harness.Options{Seed: o.Seed, Topology: topo})
	if err != nil {
		return SimResult{}, err
	}
	fail := func(err error) (SimResult, error) {
		return SimResult{}, fmt.Errorf("%w (seed %d)", err, o.Seed)
	}
	layout, err := harness.SingleTablet(topo, simTable, o.PrimarySite, o.Replication)
	if err != nil {
		return fail(err)
	}
	if err := world.CreateTable(nodeOf[0], layout); err != nil {
		return fail(err)
	}
	tables := map[wire.NodeID]*clientcore.Table{}
	for _, id := range nodeOf {
		if tables[id] != nil {
			continue
		}
		if tables[id], err = world.OpenTable(id, simTable); err != nil {
			return fail(err)
		}
	}

	sink := NewSink(o.Trace)
	sim := world.Sim
	start := sim.Now()
	var issued, active int
	nextProgress := o.ProgressEvery
	report := func() {
		p := sink.Progress()
		p.Run, p.Elapsed = w.Run, sim.Now()-start
		o.Progress(p)
	}
	var runErr error
	for i, spec := range roles {
		spec.MaxOps = w.MaxOps // one process: the roles share the run's count
		client, err := world.Client(nodeOf[i])
		if err != nil {
			return fail(err)
		}
		rs := options[spec.ReadOption]
		if !spec.Read {
			rs = options[w.ReadOptions[0]]
		}
		session, err := client.BeginSession(tables[nodeOf[i]], rs.agreement, rs.strategy)
		if err != nil {
			return fail(err)
		}
		p := newPlan(spec, rand.New(rand.NewPCG(o.Seed, uint64(i)+1)))
		maker := newOpMaker(spec)
		getOpts := clientcore.GetOptions{SLA: rs.agreement, Strategy: rs.strategy}
		var issue func()
		done := func(op measure.Op) {
			sink.Add(op)
			if o.Progress != nil && sim.Now()-start >= nextProgress {
				nextProgress += o.ProgressEvery
				report()
			}
			issue()
		}
		issue = func() {
			s, at, ok := p.next(sim.Now() - start)
			if !ok || issued >= spec.MaxOps {
				active--
				return
			}
			issued++
			sim.At(start+at, func() {
				op := maker.start(s, sim.Now().Microseconds())
				var err error
				if s.write {
					err = client.Put(session, s.key, []byte(op.Value), func(r clientcore.PutResult, err error) {
						maker.finish(&op, sim.Now().Microseconds(), Outcome{Replica: string(r.Node)}, err)
						done(op)
					})
				} else {
					err = client.Get(session, s.key, getOpts, func(r clientcore.GetResult, err error) {
						if err == nil && r.Found {
							op.Value = string(r.Value)
						}
						out := Outcome{Replica: string(r.Node)}
						if r.Met >= 0 {
							out.Consistency = r.SubSLA.Consistency.String()
						}
						maker.finish(&op, sim.Now().Microseconds(), out, err)
						done(op)
					})
				}
				if err != nil {
					// Refused before sending: a client-side error that
					// would repeat; record it and stop this role.
					maker.finish(&op, sim.Now().Microseconds(), Outcome{}, err)
					sink.Add(op)
					if runErr == nil {
						runErr = fmt.Errorf("measure: client %s: %w", spec.Client, err)
					}
					active--
				}
			})
		}
		active++
		issue()
	}
	// Every op ends by its request timeout; the slack only guards against
	// a stuck run.
	limit := start + w.Duration + 5*time.Minute
	if err := sim.RunUntil(limit, func() bool { return active == 0 }); err != nil {
		return fail(err)
	}
	if active > 0 && runErr == nil {
		runErr = fmt.Errorf("measure: %d clients still busy after %s of virtual time", active, limit-start)
	}
	if o.Progress != nil {
		report()
	}
	if runErr == nil {
		runErr = sink.Err()
	}
	ops := sink.Ops()
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
