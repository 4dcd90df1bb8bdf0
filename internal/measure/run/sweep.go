package run

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cosla/cosla/internal/measure"
)

// SweepOptions configures a load sweep (Wada 4.1): for each client count
// and read option, a short run in which every client issues one request
// every 1/ClientHz, synchronously, a read with probability ReadFraction
// and otherwise a write, all on one key. The zero value of every field
// but Store and Clients takes the default its comment states.
type SweepOptions struct {
	Store Store
	// Clients are the client counts, one point each (Wada: 100 to 2,500).
	Clients []int
	// ClientHz is each client's offered rate. Default 1 (Wada 4).
	ClientHz float64
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
	switch {
	case o.Store == nil:
		return nil, nil, fmt.Errorf("%w: sweep needs a Store", ErrInvalidWorkload)
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
	sink := NewSink(o.Trace)
	var inputs []measure.SweepInput
	clock := NewClock()
	for _, n := range o.Clients {
		for _, option := range o.ReadOptions {
			if ctx.Err() != nil {
				return sink.Ops(), inputs, sink.Err()
			}
			run := SweepRun(n, option)
			before := len(sink.Ops())
			startUS := clock.NowUS()
			var count atomic.Int64
			var wg sync.WaitGroup
			for i := range n {
				spec := RoleSpec{Run: run, Client: fmt.Sprintf("c%d", i+1), Keys: []string{o.Key},
					ReadOption: option, WriteOption: o.WriteOption, Duration: o.Duration, MaxOps: o.MaxOps}
				r := rand.New(rand.NewPCG(o.Seed, uint64(n)<<32|uint64(i)))
				wg.Go(func() { sweepClient(ctx, o, spec, r, sink, clock, startUS, &count) })
			}
			wg.Wait()
			ops := sink.Ops()[before:]
			inputs = append(inputs, measure.SweepInput{Clients: n, OfferedOpsPerS: float64(n) * o.ClientHz, Ops: ops})
			if o.Progress != nil {
				p := Progress{Run: run, Elapsed: time.Duration(clock.NowUS()-startUS) * time.Microsecond}
				for _, op := range ops {
					p.add(op)
				}
				o.Progress(p)
			}
		}
	}
	return sink.Ops(), inputs, sink.Err()
}

// sweepClient issues one op per period, starting at a random point of the
// first period so that the clients do not all call at once.
func sweepClient(ctx context.Context, o SweepOptions, spec RoleSpec, r *rand.Rand, sink *Sink, clock Clock, startUS int64, count *atomic.Int64) {
	period := time.Duration(float64(time.Second) / o.ClientHz)
	next := time.Duration(r.Int64N(int64(max(period, 1))))
	maker := newOpMaker(spec)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for ctx.Err() == nil && next < spec.Duration {
		now := time.Duration(clock.NowUS()-startUS) * time.Microsecond
		if wait := next - now; wait > 0 {
			timer.Reset(wait)
			select {
			case <-ctx.Done():
				return
			case <-timer.C:
			}
		}
		if count.Add(1) > int64(spec.MaxOps) {
			return
		}
		write := r.Float64() >= o.ReadFraction
		op := maker.start(step{write: write, key: spec.Keys[0]}, clock.NowUS())
		if write {
			out, err := o.Store.Write(ctx, op.Key, op.Value, spec.WriteOption)
			maker.finish(&op, clock.NowUS(), out, err)
		} else {
			value, found, out, err := o.Store.Read(ctx, op.Key, spec.ReadOption)
			if found {
				op.Value = value
			}
			maker.finish(&op, clock.NowUS(), out, err)
		}
		if ctx.Err() != nil && !op.OK {
			return
		}
		sink.Add(op)
		// A slow store makes a synchronous client offer less than ClientHz
		// (Wada 4.1, Fig. 11): missed periods are skipped, not made up.
		next += period
		for done := time.Duration(op.ReturnUS-startUS) * time.Microsecond; next < done; {
			next += period
		}
	}
}
