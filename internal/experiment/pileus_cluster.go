package experiment

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/cosla/cosla"
	"github.com/cosla/cosla/internal/workload"
	"github.com/cosla/cosla/sla"
)

// ClusterOptions configures the Pileus evaluation on a running cluster.
type ClusterOptions struct {
	// Nodes maps each client site to the node addresses a client there
	// dials (cluster.Info.Clients). Required.
	Nodes map[string]map[string]string
	// Table is the table to use; it must be replicated as in Pileus 5.1.
	// Required.
	Table string
	// SLAs and Clients as in PileusOptions; the defaults are the paper's.
	SLAs    []string
	Clients []string
	// Keys is the number of keys; default 1,000 (the paper's 10,000 would
	// take most of a minute to load over fsynced Puts).
	Keys int
	// SessionOps is the number of operations per session; default 100,
	// with the pull interval scaled down to keep the paper's proportion
	// of sessions to replication rounds.
	SessionOps int
	// Duration is how long each SLA runs; default 25s.
	Duration time.Duration
	// Seed seeds the workload; default 1.
	Seed uint64
	// Progress, if set, is called now and then with a line to show.
	Progress func(line string)
}

// RunPileusCluster runs the Pileus section 5 comparison over the network:
// for each SLA, one client per (client site, strategy), all at once, each
// running sessions of equal numbers of Puts and Gets over zipfian keys for
// Duration. It returns one row per (SLA, site, strategy), as RunPileus.
func RunPileusCluster(ctx context.Context, o ClusterOptions) ([]PileusRow, error) {
	if len(o.SLAs) == 0 {
		o.SLAs = []string{"shopping-cart", "password-checking"}
	}
	if len(o.Clients) == 0 {
		o.Clients = []string{"us", "england", "india", "china"}
	}
	if o.Keys == 0 {
		o.Keys = 1000
	}
	if o.SessionOps == 0 {
		o.SessionOps = 100
	}
	if o.Duration == 0 {
		o.Duration = 25 * time.Second
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Progress == nil {
		o.Progress = func(string) {}
	}
	for _, site := range o.Clients {
		if _, ok := o.Nodes[site]; !ok {
			return nil, fmt.Errorf("experiment: the cluster has no client site %q", site)
		}
	}
	keys, err := workload.NewScrambledZipfian(uint64(o.Keys))
	if err != nil {
		return nil, err
	}
	var rows []PileusRow
	for _, name := range o.SLAs {
		agreement, ok := sla.Preset(name)
		if !ok {
			return nil, fmt.Errorf("experiment: unknown SLA preset %q", name)
		}
		o.Progress(fmt.Sprintf("%s SLA: %d clients for %s", name, len(o.Clients)*len(clusterStrategies), o.Duration))
		got, err := runClusterSLA(ctx, o, name, agreement, keys)
		if err != nil {
			return nil, err
		}
		rows = append(rows, got...)
	}
	return rows, nil
}

var clusterStrategies = []cosla.Strategy{cosla.Pileus, cosla.Primary, cosla.Random, cosla.Closest}

func runClusterSLA(ctx context.Context, o ClusterOptions, name string, agreement sla.SLA, keys workload.Generator) ([]PileusRow, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type run struct {
		row PileusRow
		err error
	}
	runs := make([]*run, 0, len(o.Clients)*len(clusterStrategies))
	var wg sync.WaitGroup
	deadline := time.Now().Add(o.Duration)
	for i, site := range o.Clients {
		for _, strategy := range clusterStrategies {
			r := &run{row: PileusRow{SLA: name, Client: site, Strategy: strategy.String(), Met: make([]float64, len(agreement))}}
			runs = append(runs, r)
			wg.Add(1)
			go func() {
				defer wg.Done()
				// The strategies of a site draw the same operations (common
				// random numbers), so their rows differ by their choices and
				// the network, not by the workload.
				rng := rand.New(rand.NewPCG(o.Seed, uint64(i+1)))
				r.err = runClusterClient(ctx, o, site, strategy, agreement, keys, rng, deadline, &r.row)
				if r.err != nil {
					cancel()
				}
			}()
		}
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	for waiting := true; waiting; {
		select {
		case <-done:
			waiting = false
		case <-tick.C:
			o.Progress(fmt.Sprintf("  %s: %.0fs left", name, time.Until(deadline).Seconds()))
		}
	}
	var rows []PileusRow
	for _, r := range runs {
		if r.err != nil {
			return nil, fmt.Errorf("%s/%s/%s: %w", name, r.row.Client, r.row.Strategy, r.err)
		}
		if err := r.row.finish(); err != nil {
			return nil, err
		}
		rows = append(rows, r.row)
	}
	return rows, nil
}

// runClusterClient is one client's closed loop: sessions of SessionOps
// operations, half Puts and half Gets, until the deadline.
func runClusterClient(ctx context.Context, o ClusterOptions, site string, strategy cosla.Strategy, agreement sla.SLA,
	keys workload.Generator, rng *rand.Rand, deadline time.Time, row *PileusRow) error {
	c, err := cosla.Open(ctx, cosla.Config{Site: site, Name: fmt.Sprintf("demo-%s", strategy), Nodes: o.Nodes[site]})
	if err != nil {
		return err
	}
	defer c.Close()
	t, err := c.OpenTable(ctx, o.Table)
	if err != nil {
		return err
	}
	var s *cosla.Session
	for op := 0; time.Now().Before(deadline); op++ {
		if op%o.SessionOps == 0 {
			if s != nil {
				c.EndSession(s)
			}
			if s, err = c.BeginSession(t, agreement, cosla.WithStrategy(strategy)); err != nil {
				return err
			}
		}
		key := workload.Key(keys.Next(rng))
		if rng.IntN(2) == 0 {
			if _, err := c.Put(ctx, s, key, fmt.Appendf(nil, "%s-%s-%d", site, strategy, op)); err != nil && !errors.Is(err, cosla.ErrTimeout) {
				return err
			}
			continue
		}
		_, res, err := c.Get(ctx, s, key)
		if err != nil && !errors.Is(err, cosla.ErrSLAUnmet) && !errors.Is(err, cosla.ErrTimeout) {
			return err
		}
		row.record(res.Met, res.SubSLA.Utility, res.RTT)
	}
	return nil
}

// LoadKeys writes every key once through a client at site, with a few
// Puts in flight at a time, as YCSB's load phase does.
func LoadKeys(ctx context.Context, nodes map[string]string, site, table string, keys int) error {
	c, err := cosla.Open(ctx, cosla.Config{Site: site, Name: "loader", Nodes: nodes})
	if err != nil {
		return err
	}
	defer c.Close()
	t, err := c.OpenTable(ctx, table)
	if err != nil {
		return err
	}
	eventual, _ := sla.Parse("eventual unbounded 1")
	const workers = 8
	errs := make(chan error, workers)
	for w := range workers {
		go func() {
			s, err := c.BeginSession(t, eventual)
			if err == nil {
				for i := w; i < keys && err == nil; i += workers {
					_, err = c.Put(ctx, s, workload.Key(uint64(i)), []byte("initial"))
				}
			}
			errs <- err
		}()
	}
	var first error
	for range workers {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}
