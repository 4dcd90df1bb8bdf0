package sim_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/cosla/cosla/internal/core/node"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/runtime/sim"
)

// pinger answers every probe with a probe reply, and every reply with a
// new probe; with a timer per node ticking besides, it keeps a simulation
// busy with the simulator's own work: queue, links, dispatch, trace hash.
type pinger struct {
	env  node.Env
	peer wire.NodeID
}

func (p *pinger) Start(env node.Env) error {
	p.env = env
	env.After(time.Millisecond, "tick")
	if p.peer != "" {
		env.Send(p.peer, &wire.ProbeRequest{Req: 1})
	}
	return nil
}

func (p *pinger) Receive(from wire.NodeID, m wire.Msg) {
	switch m := m.(type) {
	case *wire.ProbeRequest:
		p.env.Send(from, &wire.ProbeReply{Req: m.Req})
	case *wire.ProbeReply:
		p.env.Send(from, &wire.ProbeRequest{Req: m.Req + 1})
	}
}

func (p *pinger) Fire(any) { p.env.After(time.Millisecond, "tick") }

// BenchmarkEvents: the simulator's events per second on one core, 100
// pairs of nodes on two sites 10 ms apart exchanging messages with jitter.
func BenchmarkEvents(b *testing.B) {
	s := sim.New(sim.Options{Seed: 1})
	s.AddSite("a")
	s.AddSite("b")
	if err := s.SetLatency("a", "b", sim.Latency{Mean: 5 * time.Millisecond, Jitter: 100 * time.Microsecond}); err != nil {
		b.Fatal(err)
	}
	for i := range 100 {
		x, y := wire.NodeID(fmt.Sprintf("a/n%d", i)), wire.NodeID(fmt.Sprintf("b/n%d", i))
		if err := s.AddNode(y, "b", sim.NodeOptions{}, func() node.Handler { return &pinger{} }); err != nil {
			b.Fatal(err)
		}
		if err := s.AddNode(x, "a", sim.NodeOptions{}, func() node.Handler { return &pinger{peer: y} }); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	start := s.Stats().Events
	b.ResetTimer()
	target := start + int64(b.N)
	if err := s.RunUntil(time.Duration(1<<62), func() bool { return s.Stats().Events >= target }); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}
