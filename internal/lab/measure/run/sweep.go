package run

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/cosla/cosla/internal/core/clientcore"
	"github.com/cosla/cosla/internal/lab/adapters"
	"github.com/cosla/cosla/internal/lab/driver"
	"github.com/cosla/cosla/internal/lab/measure"
)

// SweepOptions configures a load sweep (Wada 4.1): for each client count
// and read option, a short driver run of one group of that many sessions,
// each periodic at ClientHz (staggered evenly over the period), each step
// a read with probability ReadFraction and otherwise a write, all on one
// key. The zero value of every field but Store or Cluster and Clients
// takes the default its comment states.
type SweepOptions struct {
	// Store is swept through a driver.StoreTarget, or Cluster through a
	// driver.HostTarget from its reader site. Exactly one is set.
	Store   adapters.Store
	Cluster *Cluster
	// Clients are the client counts, one point each (Wada: 100 to 2,500).
	Clients []int
	// ClientHz is each client's offered rate. Default 1 (Wada 4).
	ClientHz float64
	// Policy sets the levels of a cosla cluster's sessions.
	Policy clientcore.Policy
	// ReadFraction is the fraction of reads (Wada: 0.99, 0.75, 0.5).
	// Default 0.99.
	ReadFraction float64
	// ReadOptions are measured one after the other at every count.
	// Default [""].
	ReadOptions []string
	WriteOption string
	// Key is the data element. Default "k".
	Key string
	// Duration bounds each point (Wada: five minutes). Default 30s.
	Duration time.Duration
	// MaxOps bounds each point. Default 1,000,000.
	MaxOps int
	// Seed seeds the choice of reads and writes.
	Seed  uint64
	Trace io.Writer
	// Progress, if set, is called after each point.
	Progress func(Progress)
}

// SweepRun is one point's run name, for the trace: "clients=N/option".
func SweepRun(clients int, option string) string {
	return fmt.Sprintf("clients=%d/%s", clients, optionName(option))
}

// LoadSweep runs the sweep and returns every op and one measure.SweepInput
// per (count, option) point, with the offered load (clients x ClientHz).
// A cancelled context ends it early without error, with the points done
// (the interrupted one included).
func LoadSweep(ctx context.Context, o SweepOptions) ([]measure.Op, []measure.SweepInput, error) {
	if o.ClientHz == 0 {
		o.ClientHz = 1
	}
	if o.ReadFraction == 0 {
		o.ReadFraction = 0.99
	}
	if len(o.ReadOptions) == 0 {
		o.ReadOptions = []string{""}
	}
	if o.Key == "" {
		o.Key = "k"
	}
	if o.Duration == 0 {
		o.Duration = 30 * time.Second
	}
	if o.MaxOps == 0 {
		o.MaxOps = 1_000_000
	}
	l := live{store: o.Store, cluster: o.Cluster}
	switch {
	case (o.Store == nil) == (o.Cluster == nil):
		return nil, nil, fmt.Errorf("%w: sweep needs a Store or a Cluster", ErrInvalidWorkload)
	case len(o.Clients) == 0:
		return nil, nil, fmt.Errorf("%w: sweep needs client counts", ErrInvalidWorkload)
	case !(o.ClientHz > 0 && o.ClientHz <= MaxReadHz):
		return nil, nil, fmt.Errorf("%w: ClientHz %v not in (0, %d]", ErrInvalidWorkload, o.ClientHz, MaxReadHz)
	case !(o.ReadFraction >= 0 && o.ReadFraction <= 1):
		return nil, nil, fmt.Errorf("%w: ReadFraction %v not in [0, 1]", ErrInvalidWorkload, o.ReadFraction)
	case o.Duration < 0 || o.Duration > MaxDuration || o.MaxOps < 1 || o.MaxOps > MaxOpsLimit:
		return nil, nil, fmt.Errorf("%w: Duration %s or MaxOps %d out of range", ErrInvalidWorkload, o.Duration, o.MaxOps)
	}
	for _, n := range o.Clients {
		if n < 1 || n > MaxClients {
			return nil, nil, fmt.Errorf("%w: client count %d not in [1, %d]", ErrInvalidWorkload, n, MaxClients)
		}
	}
	var all []measure.Op
	var inputs []measure.SweepInput
	for _, n := range o.Clients {
		for _, option := range o.ReadOptions {
			if ctx.Err() != nil {
				return all, inputs, nil
			}
			g := &driver.Group{Name: "c", Sessions: n, Rand: rand.New(rand.NewPCG(o.Seed, uint64(n))),
				Streams: []driver.Stream{{Mix: readWriteMix{read: round(driver.Get, []string{o.Key}, option),
					write: round(driver.Put, []string{o.Key}, o.WriteOption), readFraction: o.ReadFraction},
					Every: period(o.ClientHz), Stagger: true}}}
			if o.Cluster != nil {
				cfg, err := coslaConfig(orEventual(option), o.Policy)
				if err != nil {
					return all, inputs, err
				}
				g.Site, g.Cosla = o.Cluster.ReaderSite, cfg
			}
			loop := driver.NewLoop(time.Now())
			p := Progress{Run: SweepRun(n, option)}
			rec := &driver.Recorder{Run: p.Run, OriginUS: loop.Origin().UnixMicro(), Trace: o.Trace, FlushEach: true,
				Keep: true, OnOp: func(_ *driver.Group, op *driver.Op) { p.add(op) }}
			err := runLive(ctx, loop, l.target(ctx, loop), driver.Spec{Groups: []*driver.Group{g}, Duration: o.Duration,
				Steps: o.MaxOps, Recorder: rec}, 0, false)
			ops := rec.Ops()
			all = append(all, ops...)
			inputs = append(inputs, measure.SweepInput{Clients: n, OfferedOpsPerS: float64(n) * o.ClientHz, Ops: ops})
			if o.Progress != nil {
				p.Elapsed = loop.Now()
				o.Progress(p)
			}
			if err != nil {
				return all, inputs, err
			}
		}
	}
	return all, inputs, nil
}

// readWriteMix draws a read with probability readFraction, else a write
// (Wada 4.1).
type readWriteMix struct {
	read, write  driver.Mix
	readFraction float64
}

// Next implements driver.Mix.
func (m readWriteMix) Next(r *rand.Rand) (driver.Step, bool) {
	if r.Float64() < m.readFraction {
		return m.read.Next(r)
	}
	return m.write.Next(r)
}
