package run

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/cosla/cosla/internal/lab/adapters"
	"github.com/cosla/cosla/internal/lab/driver"
	"github.com/cosla/cosla/internal/lab/measure"
	"github.com/cosla/cosla/internal/runtime/clientfile"
	"github.com/cosla/cosla/internal/runtime/cluster"
)

// Cluster is a running local cosla cluster, measured through cosla's
// client core (driver.HostTarget): the writers are client groups at
// WriterSite, the readers (and the threads of PlacementThread) at
// ReaderSite. Read options are SimReadOption's ("" is "eventual"); there
// are no write options: every Put goes to the primary.
type Cluster struct {
	// Nodes returns the addresses a client at a site dials for each
	// storage node (cluster.Info.NodesFor).
	Nodes func(site string) (map[string]string, error)
	// TLS secures the connections (cluster.Info.ClientTLS).
	TLS *tls.Config
	// Table is the measured table.
	Table                  string
	WriterSite, ReaderSite string
}

// OpenCluster describes the cosla cluster of the client config file
// config, or else the one running in dir (cluster.Reach), its table
// measured from writerSite (default: the cluster's first site) and
// readerSite (default: writerSite).
func OpenCluster(dir, config, writerSite, readerSite string) (*Cluster, error) {
	a, err := cluster.Reach(dir, config)
	if err != nil {
		return nil, err
	}
	writerSite = cmp.Or(writerSite, a.DefaultSite)
	readerSite = cmp.Or(readerSite, writerSite)
	for _, site := range []string{writerSite, readerSite} {
		if _, err := a.Nodes(site); err != nil {
			return nil, err
		}
	}
	if a.Table == "" {
		return nil, fmt.Errorf("%w: %s names no table", clientfile.ErrInvalid, config)
	}
	return &Cluster{Nodes: a.Nodes, TLS: a.TLS, Table: a.Table, WriterSite: writerSite, ReaderSite: readerSite}, nil
}

// Name names the cluster as a store, for logs and reports.
func (c *Cluster) Name() string { return "cosla@" + c.ReaderSite }

// site is where a role's group runs.
func (c *Cluster) site(spec RoleSpec) string {
	if spec.Read {
		return c.ReaderSite
	}
	return c.WriterSite
}

// LiveOptions configures a run in real time. Exactly one of Store and
// Cluster is set.
type LiveOptions struct {
	Workload Workload
	// Store is measured through a driver.StoreTarget.
	Store adapters.Store
	// Cluster is measured through a driver.HostTarget.
	Cluster *Cluster
	// Trace receives every op as one JSONL line as soon as it completes,
	// flushed. Optional.
	Trace io.Writer
	// Progress, if set, is called every ProgressEvery (default 5s) and
	// once at the end.
	Progress      func(Progress)
	ProgressEvery time.Duration
	// Spawn starts the worker process of one role (PlacementProcesses):
	// it must run Worker with w (completed with the target to connect to)
	// and exit 0. The run waits for it. Workers start their schedules
	// together, at w.StartUS (a second after Live starts, to give the
	// processes time to start).
	Spawn func(ctx context.Context, w WorkerConfig) (Process, error)
	// WorkDir holds the workers' traces (PlacementProcesses). Required
	// then.
	WorkDir string
}

// Process is a started worker process.
type Process interface {
	Wait() error
}

// live is what a live run drives: a store, or a cosla cluster.
type live struct {
	store   adapters.Store
	cluster *Cluster
}

func (o *LiveOptions) live() (live, error) {
	if (o.Store == nil) == (o.Cluster == nil) {
		return live{}, errors.New("measure: a live run needs a Store or a Cluster")
	}
	return live{store: o.Store, cluster: o.Cluster}, nil
}

// target is the driver's target on loop; ctx bounds a store's calls.
func (l live) target(ctx context.Context, loop *driver.Loop) driver.Target {
	if l.cluster != nil {
		return &driver.HostTarget{Loop: loop, Nodes: l.cluster.Nodes, TLS: l.cluster.TLS, Table: l.cluster.Table}
	}
	return &driver.StoreTarget{Loop: loop, Store: l.store, Ctx: ctx}
}

// group is a role's group: at its site with its read option's SLA on a
// cluster.
func (l live) group(spec RoleSpec, options []string) (*driver.Group, error) {
	r := rand.New(rand.NewPCG(0, 0)) // drawn from by nothing: no jitter live
	if l.cluster == nil {
		return roleGroup(spec, "", false, r, driver.Cosla{}), nil
	}
	cfg, err := coslaConfig(orEventual(roleOption(spec, options)), spec.Policy)
	if err != nil {
		return nil, err
	}
	return roleGroup(spec, l.cluster.site(spec), false, r, cfg), nil
}

// orEventual is a cosla read option, "eventual" by default.
func orEventual(option string) string {
	if option == "" {
		return "eventual"
	}
	return option
}

// Live runs the workload in real time and returns its ops in order of
// completion (for PlacementProcesses, the merged workers' traces in order
// of invocation). A cancelled context ends the run early without error:
// the driver is stopped, the ops in flight finish (a store's calls are cut
// short and left out), and what was done is returned and was already
// streamed to Trace.
func Live(ctx context.Context, o LiveOptions) ([]measure.Op, error) {
	w := o.Workload
	w = w.EnsureDefaults()
	if err := w.Validate(); err != nil {
		return nil, err
	}
	if o.ProgressEvery <= 0 {
		o.ProgressEvery = 5 * time.Second
	}
	l, err := o.live()
	if err != nil {
		return nil, err
	}
	if w.Placement == PlacementProcesses {
		return liveProcesses(ctx, o, w, l)
	}
	roles := w.Roles()
	groups := make([]*driver.Group, len(roles))
	for i, spec := range roles {
		if groups[i], err = l.group(spec, w.ReadOptions); err != nil {
			return nil, err
		}
	}
	loop := driver.NewLoop(time.Now())
	var progress Progress
	report := func() {
		if o.Progress != nil {
			p := progress
			p.Run, p.Elapsed = w.Run, loop.Now()
			o.Progress(p)
		}
	}
	rec := &driver.Recorder{OriginUS: loop.Origin().UnixMicro(), RunOf: runsOf(roles, groups),
		Trace: o.Trace, FlushEach: true, Keep: true,
		OnOp: func(_ *driver.Group, op *driver.Op) { progress.add(op) }}
	// In-process roles share the run's op limit.
	spec := driver.Spec{Groups: groups, Duration: w.Duration, Steps: steps(w.MaxOps, len(w.Keys)), Recorder: rec}
	every(loop, o.ProgressEvery, report)
	err = runLive(ctx, loop, l.target(ctx, loop), spec, 0, false)
	report()
	return rec.Ops(), err
}

// runLive runs spec on loop against target until it is done or ctx is:
// then it stops the driver and runs the loop until the ops in flight
// have finished. With at set, the run's clock reads zero at origin on the
// loop's clock (worker processes sharing one schedule); else when it
// starts.
func runLive(ctx context.Context, loop *driver.Loop, target driver.Target, spec driver.Spec, origin time.Duration, at bool) error {
	d, err := driver.New(target, spec)
	if err != nil {
		return err
	}
	defer d.Close()
	if at {
		d.StartAt(loop, origin)
	} else {
		d.Start(loop)
	}
	if err := loop.Run(ctx, d.Done); err != nil {
		d.Stop()
		if err := loop.Run(context.Background(), d.Done); err != nil {
			return err
		}
	}
	if err := d.Err(); err != nil {
		return err
	}
	return spec.Recorder.Flush()
}

// every calls fn on loop every period until the loop stops running.
func every(loop *driver.Loop, period time.Duration, fn func()) {
	var tick func()
	tick = func() {
		fn()
		loop.After(period, tick)
	}
	loop.After(period, tick)
}

// WorkerConfig is the work of one worker process (PlacementProcesses):
// one role against the store the parent measures.
type WorkerConfig struct {
	// Target names the store (Targets); Connect lists the addresses of
	// the parent's store (adapters.Remote's Addrs); ClusterDir is the
	// cosla cluster's directory, or ClientConfig its client config file,
	// and Site the role's site (target cosla).
	Target       string   `json:"target"`
	Connect      []string `json:"connect,omitempty"`
	ClusterDir   string   `json:"cluster_dir,omitempty"`
	ClientConfig string   `json:"client_config,omitempty"`
	Site         string   `json:"site,omitempty"`
	Spec         RoleSpec `json:"spec"`
	// StartUS is the Unix time in microseconds at which the schedule
	// shared by every worker starts; TracePath the file of the role's
	// trace.
	StartUS   int64  `json:"start_us"`
	TracePath string `json:"trace_path"`
}

// Worker runs one role in real time, streaming its ops to w.TracePath: the
// body of a worker process (PlacementProcesses). It connects to the
// target, then waits for the shared schedule to start at w.StartUS.
func Worker(ctx context.Context, w WorkerConfig) error {
	s := w.Spec
	if s.Client == "" || len(s.Keys) == 0 || s.Duration <= 0 || s.MaxOps < 1 ||
		(s.Write && s.WriteEvery <= 0) || (s.Read && s.ReadHz <= 0) || (!s.Write && !s.Read) {
		return fmt.Errorf("%w: worker spec %+v", ErrInvalidWorkload, s)
	}
	if w.TracePath == "" || w.StartUS <= 0 {
		return fmt.Errorf("%w: a worker needs a trace path and a start time", ErrInvalidWorkload)
	}
	t, err := LookupTarget(w.Target)
	if err != nil {
		return err
	}
	var l live
	switch {
	case t.kind == kindCosla:
		if l.cluster, err = OpenCluster(w.ClusterDir, w.ClientConfig, w.Site, w.Site); err != nil {
			return err
		}
	case t.kind == kindStore:
		if l.store, err = adapters.Connect(ctx, t.Name, w.Connect); err != nil {
			return err
		}
		defer l.store.Close()
	default:
		return fmt.Errorf("%w: target %s cannot run in worker processes", ErrInvalidWorkload, w.Target)
	}
	f, err := os.Create(w.TracePath)
	if err != nil {
		return err
	}
	_, err = runRole(ctx, l, s, w.StartUS, f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// runRole runs one role against l on the schedule that starts at startUS
// (Unix microseconds), streaming its ops to trace.
func runRole(ctx context.Context, l live, spec RoleSpec, startUS int64, trace io.Writer) ([]measure.Op, error) {
	g, err := l.group(spec, []string{spec.ReadOption})
	if err != nil {
		return nil, err
	}
	// The loop's origin is the shared start, as a reading of this
	// process's monotonic clock (time.UnixMicro alone has none, and the
	// loop would then follow steps of the wall clock).
	now := time.Now()
	loop := driver.NewLoop(now.Add(time.UnixMicro(startUS).Sub(now)))
	rec := &driver.Recorder{Run: spec.Run, OriginUS: startUS, Trace: trace, FlushEach: true, Keep: true}
	err = runLive(ctx, loop, l.target(ctx, loop), driver.Spec{Groups: []*driver.Group{g}, Duration: spec.Duration,
		Steps: steps(spec.MaxOps, len(spec.Keys)), Recorder: rec}, 0, true)
	return rec.Ops(), err
}

// liveProcesses starts a worker per role, waits for all of them and
// returns their traces merged in order of invocation.
func liveProcesses(ctx context.Context, o LiveOptions, w Workload, l live) ([]measure.Op, error) {
	if o.Spawn == nil || o.WorkDir == "" {
		return nil, errors.New("measure: PlacementProcesses needs Spawn and WorkDir")
	}
	if err := os.MkdirAll(o.WorkDir, 0o755); err != nil {
		return nil, err
	}
	roles := w.Roles()
	paths := workerPaths(o.WorkDir, roles)
	loop := driver.NewLoop(time.Now())
	startUS := loop.Origin().Add(workerStartDelay).UnixMicro()
	procs := make([]Process, 0, len(roles))
	var firstErr error
	for i, spec := range roles {
		wc := WorkerConfig{Spec: spec, StartUS: startUS, TracePath: paths[i]}
		if l.cluster != nil {
			wc.Site = l.cluster.site(spec)
		}
		p, err := o.Spawn(ctx, wc)
		if err != nil {
			firstErr = fmt.Errorf("measure: starting worker %s: %w", spec.Client, err)
			break
		}
		procs = append(procs, p)
	}
	// The parent's loop only waits for the workers and reports progress.
	exited := 0
	for i, p := range procs {
		go func() {
			err := p.Wait()
			loop.Post(func() {
				exited++
				if err != nil && firstErr == nil && ctx.Err() == nil {
					firstErr = fmt.Errorf("measure: worker %s: %w", roles[i].Client, err)
				}
			})
		}()
	}
	report := func() {
		if o.Progress != nil {
			p := countOps(paths)
			p.Run, p.Elapsed = w.Run, loop.Now()
			o.Progress(p)
		}
	}
	every(loop, o.ProgressEvery, report)
	if err := loop.Run(context.Background(), func() bool { return exited == len(procs) }); err != nil {
		return nil, err
	}
	report()
	merged, err := MergeTraces(paths[:len(procs)])
	if err != nil && firstErr == nil {
		firstErr = err
	}
	return merged, firstErr
}

// MergeTraces reads the JSONL traces at paths (a missing file is empty)
// and returns all their ops ordered by invocation time, then by file
// order.
func MergeTraces(paths []string) ([]measure.Op, error) {
	var all []measure.Op
	for _, path := range paths {
		f, err := os.Open(path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		ops, err := measure.ReadJSONL(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("measure: %s: %w", path, err)
		}
		all = append(all, ops...)
	}
	sortByCall(all)
	return all, nil
}

// workerStartDelay is how long after Live starts the workers' common
// schedule begins, so that every process is up by then.
const workerStartDelay = time.Second

func workerPaths(dir string, roles []RoleSpec) []string {
	paths := make([]string, len(roles))
	for i, spec := range roles {
		paths[i] = filepath.Join(dir, spec.Client+".jsonl")
	}
	return paths
}

// countOps counts the lines the workers have written so far, for progress.
func countOps(paths []string) Progress {
	var p Progress
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		p.Ops += bytes.Count(data, []byte("\n"))
	}
	return p
}

// sortByCall orders ops by invocation time, keeping the order of ties.
func sortByCall(ops []measure.Op) {
	slices.SortStableFunc(ops, func(a, b measure.Op) int { return cmp.Compare(a.CallUS, b.CallUS) })
}
