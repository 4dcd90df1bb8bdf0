package chaos

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cosla/cosla/internal/core/clientcore"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/lab/check"
	"github.com/cosla/cosla/internal/lab/driver"
	"github.com/cosla/cosla/internal/runtime/cluster"
	"github.com/cosla/cosla/internal/runtime/topology"
	"github.com/cosla/cosla/sla"
)

// table is the table the campaign's cluster creates and writes.
const table = "usertable"

// slas are the guarantee clients' SLAs: one per guarantee, each falling
// back to eventual within a bound, as in TestGuaranteesOverNetwork but
// with room for pileus4's round trips (up to 435 ms). A Get that meets
// none of its subSLAs counts as a failure in the client's windows.
var slas = []string{
	"strong 1s 1; eventual 1s 0.5",
	"causal 300ms 1; eventual 1s 0.5",
	"bounded(2s) 300ms 1; eventual 1s 0.5",
	"read-my-writes 300ms 1; monotonic 300ms 0.7; eventual 1s 0.5",
	"monotonic 300ms 1; strong 1s 0.5",
	"eventual 1s 1",
}

// Key prefixes: the guarantee sessions share keys k0, k1, ...; the
// writers write d1, d2, ..., each once; a failover campaign's QUORUM
// writers write q1, q2, ..., each once, and its strong readers read them.
const (
	sharedPrefix = "k"
	freshPrefix  = "d"
	quorumPrefix = "q"
)

// strongSLA is the SLA of a failover campaign's strong readers: the
// primary only, within twice pileus4's longest round trip (435ms).
const strongSLA = "strong 1s 1"

// recentKeys is how many of the QUORUM writers' latest keys the strong
// readers draw from.
const recentKeys = 64

// run is one campaign.
type run struct {
	o           Options
	c           *cluster.Cluster
	info        cluster.Info
	tls         *tls.Config // nil without TLS
	loop        *driver.Loop
	primary     string
	secondaries []string
	tablets     int      // the table's
	sites       []string // of the table's replicas
	groups      []*driver.Group
	slaOf       map[*driver.Group]string
	// karma is a Karma campaign's record (karma.go); nil for another.
	karma *karma

	// Used on the workload's loop, then by Run once it is done.
	history []check.Op
	acks    []ack // of the acknowledged Puts, for the failover times
	spans   map[*driver.Group][]span
	causes  map[*driver.Group]map[string]int

	// Counted on the loop, read by the progress lines.
	puts, ackedPuts, gets, metGets atomic.Int64
}

// Run runs a campaign (see the package documentation) and returns its
// report; the error is for a campaign that could not run at all.
func Run(ctx context.Context, opts Options) (*Report, error) {
	o := opts.EnsureDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	r := &run{o: o, slaOf: map[*driver.Group]string{}, spans: map[*driver.Group][]span{}, causes: map[*driver.Group]map[string]int{}}
	copts := cluster.Options{Dir: o.Dir, Topology: o.Topology, PullInterval: o.PullInterval, Push: o.Push, Fresh: true, Insecure: o.Insecure,
		Binary: o.Binary, Logger: o.Logger}
	o.Progress("chaos: " + o.String())
	if karmaCampaign(o.Faults) {
		r.karma = &karma{origin: map[string]string{}}
		copts.FaultInjection = true
		o.Progress(fmt.Sprintf("starting the %s cluster in %s (a causal table over the rings %v, faults injected in the processes)", o.Topology.Name, o.Dir, o.Topology.Rings))
	} else {
		copts.Placement = topology.Placement{Sites: o.Sites}
		layout, err := o.Topology.Layout(table, copts.Placement, wire.Replication{Mode: wire.ModePull, Interval: o.PullInterval})
		if err != nil {
			return nil, fmt.Errorf("%w: Options.Sites: %w", ErrInvalid, err)
		}
		r.primary, r.tablets = siteOf(layout.Tablets[0].Primary), len(layout.Tablets)
		for _, t := range layout.Tablets {
			for _, s := range t.Secondaries {
				if site := siteOf(s); site != r.primary && !slices.Contains(r.secondaries, site) {
					r.secondaries = append(r.secondaries, site)
				}
			}
		}
		r.sites = append([]string{r.primary}, r.secondaries...)
		o.Progress(fmt.Sprintf("starting the %s cluster in %s (primary at %s, secondaries at %s)",
			o.Topology.Name, o.Dir, r.primary, strings.Join(r.secondaries, ", ")))
	}
	var err error
	r.c, err = cluster.Start(ctx, copts)
	if err != nil {
		return nil, err
	}
	defer r.c.Close()
	r.info = r.c.Info()
	if r.tls, err = r.info.ClientTLS(); err != nil {
		return nil, err
	}
	for _, s := range r.info.Sites {
		o.Progress(fmt.Sprintf("  site %-8s pid %d, logs in %s/%s/serve.log", s.Name, s.PID, o.Dir, s.Name))
	}
	return r.campaign(ctx)
}

// campaign runs the workload and the faults, then verifies.
func (r *run) campaign(ctx context.Context) (*Report, error) {
	o := r.o
	rng := rand.New(rand.NewPCG(o.Seed, 0))
	var err error
	if r.groups, err = r.workload(); err != nil {
		return nil, err
	}
	r.loop = driver.NewLoop(time.Now())
	var d *driver.Driver
	d, err = driver.New(r.target(r.loop), driver.Spec{Groups: r.groups, Duration: o.Duration,
		Recorder: &driver.Recorder{OnOp: r.onOp}})
	if err != nil {
		return nil, err
	}
	defer d.Close()
	in := newInjector(r.c, o, rng, r.loop.Now, r.primary, r.secondaries, r.tablets)
	enough := func() bool { return in.done() && r.ackedPuts.Load() >= int64(o.Puts) }

	o.Progress(fmt.Sprintf("running %d clients at %d sites until %s, for at most %s", len(r.groups), len(o.Topology.Sites), r.targets(), o.Duration))
	d.StartAt(r.loop, 0)
	faultCtx, cancelFaults := context.WithTimeout(ctx, o.Duration)
	defer cancelFaults()
	faultsDone := make(chan struct{})
	go func() {
		defer close(faultsDone)
		in.run(faultCtx, enough)
		r.loop.Post(d.Stop)
	}()
	progressDone := make(chan struct{})
	stopProgress := make(chan struct{})
	go func() {
		defer close(progressDone)
		r.progress(in, stopProgress)
	}()

	// The loop ends once the driver has stopped (at the injector's end or
	// at Duration) and every op in flight has finished, each within its
	// request timeout.
	runCtx, cancelRun := context.WithTimeout(ctx, o.Duration+restartTimeout+2*o.Hold+4*o.RequestTimeout)
	defer cancelRun()
	runErr := r.loop.Run(runCtx, d.Done)
	if runErr != nil {
		// Interrupted: let the ops in flight finish, within their
		// timeout, so that the clients close cleanly.
		d.Stop()
		drain, cancel := context.WithTimeout(context.Background(), 4*o.RequestTimeout)
		_ = r.loop.Run(drain, d.Done)
		cancel()
	}
	cancelFaults()
	<-faultsDone
	close(stopProgress)
	<-progressDone
	ranFor := r.loop.Now()

	events, counts, _, faultErr := in.snapshot()
	rep := &Report{Seed: o.Seed, Dir: o.Dir, Options: o.String(), Topology: o.Topology.Name,
		Primary: r.primary, Secondaries: r.secondaries, RunS: ranFor.Seconds(),
		Kills: counts[Kill], Partitions: counts[Partition], Pauses: counts[Pause], Failovers: moves(events), Faults: events,
		TargetsReached: enough(), Targets: r.targets(), MetByGuarantee: map[string]int{}}
	if rep.Faults == nil {
		rep.Faults = []Event{}
	}
	for _, e := range events {
		if e.Kind == Kill && e.Role == "primary" {
			rep.KillsPrimary++
		}
	}
	if faultErr != nil {
		rep.FaultErrors = append(rep.FaultErrors, faultErr.Error())
	}
	if err := d.Err(); err != nil {
		rep.FaultErrors = append(rep.FaultErrors, "workload: "+err.Error())
	}
	o.Progress(fmt.Sprintf("%6.1fs  workload and faults over: %d Puts acknowledged of %d, %d kills, %d partitions, %d pauses",
		ranFor.Seconds(), r.ackedPuts.Load(), r.puts.Load(), rep.Kills, rep.Partitions, rep.Pauses))
	if runErr != nil && ctx.Err() == nil {
		rep.FaultErrors = append(rep.FaultErrors, fmt.Sprintf("workload: the ops in flight did not finish in time: %v", runErr))
	}
	if ctx.Err() != nil {
		rep.Interrupted = true
		r.finish(rep)
		return rep, nil
	}
	if r.karma != nil {
		r.verifyKarma(rep)
	} else if err := r.verify(ctx, rep); err != nil {
		if !errors.Is(err, errInterrupted) && ctx.Err() == nil {
			return nil, err
		}
		rep.Interrupted = true
	}
	r.finish(rep)
	return rep, nil
}

// targets describes what the campaign goes on until.
func (r *run) targets() string {
	var names []string
	for _, f := range r.o.Faults {
		names = append(names, f.String())
	}
	if karmaCampaign(r.o.Faults) {
		return fmt.Sprintf("%d acknowledged Puts, each of %s once", r.o.Puts, strings.Join(names, ", "))
	}
	if slices.Contains(r.o.Faults, Failover) {
		return fmt.Sprintf("%d kills, %d failovers, %d acknowledged Puts, each of %s twice", r.o.Kills, r.o.Failovers, r.o.Puts, strings.Join(names, ", "))
	}
	return fmt.Sprintf("%d kills, %d acknowledged Puts, each of %s twice", r.o.Kills, r.o.Puts, strings.Join(names, ", "))
}

// workload builds the clients: at every site two guarantee clients, the
// n-th with slas[(2*site+n) % 6], and one client of writers (at write
// level ONE); in a failover campaign also a client of writers at QUORUM
// and one of strong readers (failoverClients).
func (r *run) workload() ([]*driver.Group, error) {
	o := r.o
	if r.karma != nil {
		return r.karmaWorkload()
	}
	shared, err := driver.PutGetMix(o.Keys, sharedPrefix)
	if err != nil {
		return nil, err
	}
	fresh, quorum := &freshMix{prefix: freshPrefix}, &freshMix{prefix: quorumPrefix}
	client := clientcore.Options{RequestTimeout: o.RequestTimeout, ProbeInterval: 2 * time.Second}
	eventual, err := sla.Parse("eventual unbounded 1")
	if err != nil {
		return nil, err
	}
	var groups []*driver.Group
	add := func(g *driver.Group, text string) {
		g.Rand = rand.New(rand.NewPCG(o.Seed, uint64(len(groups)+1)))
		groups = append(groups, g)
		r.slaOf[g] = text
	}
	for i, site := range o.Topology.Sites {
		for n := range 2 {
			if o.Sessions == 0 {
				break
			}
			text := slas[(2*i+n)%len(slas)]
			agreement, err := sla.Parse(text)
			if err != nil {
				return nil, err
			}
			add(&driver.Group{Name: site.Name + "/" + agreement[0].Consistency.Kind.String(), Site: site.Name, Sessions: o.Sessions,
				Streams: []driver.Stream{{Mix: shared, Think: o.Think}},
				Cosla:   driver.Cosla{SLA: agreement, Strategy: clientcore.Pileus, Client: client}}, text)
		}
		if o.Writers > 0 {
			add(&driver.Group{Name: site.Name + "/writers", Site: site.Name, Sessions: o.Writers,
				Streams: []driver.Stream{{Mix: fresh, Think: o.WriterThink}},
				Cosla:   driver.Cosla{SLA: eventual, Strategy: clientcore.Pileus, Client: client}}, "")
		}
		if slices.Contains(o.Faults, Failover) {
			if err := r.failoverClients(site.Name, quorum, client, add); err != nil {
				return nil, err
			}
		}
	}
	return groups, nil
}

// failoverClients adds a failover campaign's clients at a site: Writers
// sessions writing fresh keys at write level QUORUM, and Sessions
// sessions of strong reads of the keys they write, for the
// linearizability check.
func (r *run) failoverClients(site string, quorum *freshMix, client clientcore.Options, add func(*driver.Group, string)) error {
	eventual, err := sla.Parse("eventual unbounded 1")
	if err != nil {
		return err
	}
	strong, err := sla.Parse(strongSLA)
	if err != nil {
		return err
	}
	if r.o.Writers > 0 {
		add(&driver.Group{Name: site + "/writers-quorum", Site: site, Sessions: r.o.Writers,
			Streams: []driver.Stream{{Mix: quorum, Think: r.o.WriterThink}},
			Cosla: driver.Cosla{SLA: eventual, Strategy: clientcore.Pileus, Client: client,
				Policy: clientcore.Policy{Write: clientcore.Fixed(clientcore.Quorum)}}}, "")
	}
	if r.o.Sessions > 0 {
		add(&driver.Group{Name: site + "/strong-reads", Site: site, Sessions: r.o.Sessions,
			Streams: []driver.Stream{{Mix: &recentMix{of: quorum, window: recentKeys}, Think: r.o.Think}},
			Cosla:   driver.Cosla{SLA: strong, Strategy: clientcore.Pileus, Client: client}}, strongSLA)
	}
	return nil
}

// target is the driver's cosla target on the cluster.
func (r *run) target(loop *driver.Loop) *driver.HostTarget {
	return &driver.HostTarget{Loop: loop, Nodes: r.info.NodesFor, TLS: r.tls, Table: r.info.Table}
}

// onOp records an op of the workload, on the loop.
func (r *run) onOp(g *driver.Group, op *driver.Op) {
	if r.karma != nil {
		r.recordKarma(g, op)
	} else {
		c := op.CheckOp()
		if c.Kind == check.Put {
			c.Replicas = len(r.sites)
			if c.OK {
				r.acks = append(r.acks, ack{node: op.Node, at: op.End})
			}
		}
		r.history = append(r.history, c)
	}
	r.spans[g] = append(r.spans[g], span{start: op.Start, end: op.End, failed: op.Err != nil})
	if op.Err != nil {
		if r.causes[g] == nil {
			r.causes[g] = map[string]int{}
		}
		r.causes[g][cause(op.Err)]++
	}
	switch op.Kind {
	case driver.Put:
		r.puts.Add(1)
		if op.Err == nil {
			r.ackedPuts.Add(1)
		}
	case driver.Get:
		r.gets.Add(1)
		if op.Err == nil {
			r.metGets.Add(1)
		}
	}
}

// progress prints the counts every ProgressEvery until stop is closed.
func (r *run) progress(in *injector, stop <-chan struct{}) {
	t := time.NewTicker(r.o.ProgressEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		_, counts, current, _ := in.snapshot()
		now := ""
		if current != "" {
			now = "; now: " + current
		}
		r.o.Progress(fmt.Sprintf("%6.1fs  puts %d acknowledged of %d, gets %d met of %d; kills %d, partitions %d, pauses %d, failover faults %d%s",
			r.loop.Now().Seconds(), r.ackedPuts.Load(), r.puts.Load(), r.metGets.Load(), r.gets.Load(),
			counts[Kill], counts[Partition], counts[Pause], counts[Failover], now))
	}
}

// finish fills the report's counts and clients from the history.
func (r *run) finish(rep *Report) {
	rep.Puts, rep.AckedPuts = int(r.puts.Load()), int(r.ackedPuts.Load())
	rep.Gets, rep.MetGets = int(r.gets.Load()), int(r.metGets.Load())
	rep.Keys = len(writtenKeys(r.history))
	for _, g := range r.groups {
		c := Client{Name: g.Name, Site: g.Site, SLA: r.slaOf[g], Errors: r.causes[g], Windows: []Window{}}
		for _, s := range r.spans[g] {
			c.Ops++
			if s.failed {
				c.Failed++
			}
		}
		for _, w := range windows(r.spans[g]) {
			win := Window{StartS: seconds(w.start), EndS: seconds(w.end), Failed: w.failed}
			win.Faults = blame(rep.Faults, win.StartS, win.EndS)
			c.Windows = append(c.Windows, win)
			c.UnavailableS += win.EndS - win.StartS
			c.LongestS = max(c.LongestS, win.EndS-win.StartS)
			c.AfterHealMaxS = max(c.AfterHealMaxS, afterHeal(rep.Faults, win.EndS))
		}
		rep.Clients = append(rep.Clients, c)
	}
	if r.karma != nil {
		r.finishKarma(rep)
	}
}

// freshMix draws Puts of a new key each time: prefix1, prefix2, ....
// One mix serves every writer; the driver draws on its loop.
type freshMix struct {
	prefix string
	n      uint64
}

// Next implements driver.Mix.
func (m *freshMix) Next(*rand.Rand) (driver.Step, bool) {
	m.n++
	return driver.Step{Label: "put-fresh", Ops: []driver.Op{{Kind: driver.Put, Key: m.prefix + strconv.FormatUint(m.n, 10)}}}, true
}

// recentMix draws Gets of the keys a freshMix writes: one of its window
// latest, or the one it writes next, likely in flight. It runs on the
// same loop as the freshMix.
type recentMix struct {
	of     *freshMix
	window int
}

// Next implements driver.Mix.
func (m *recentMix) Next(r *rand.Rand) (driver.Step, bool) {
	next := m.of.n + 1
	lowest := uint64(max(1, int64(next)-int64(m.window)+1))
	n := lowest + r.Uint64N(next-lowest+1)
	return driver.Step{Label: "get-recent", Ops: []driver.Op{{Kind: driver.Get, Key: m.of.prefix + strconv.FormatUint(n, 10)}}}, true
}

func siteOf(id wire.NodeID) string {
	site, _, _ := strings.Cut(string(id), "/")
	return site
}

// errInterrupted is returned by the verification when ctx ends.
var errInterrupted = errors.New("chaos: interrupted")
