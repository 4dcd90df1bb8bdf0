package clientcore

import (
	"fmt"
	"testing"

	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/sla"
)

var members = []wire.NodeID{"england/cfg", "india/cfg", "us/cfg"}

// measuredClient opens the fake cluster's table and answers the probes
// so that the client, in china, measures us/r1 at 10 ms, england/r1 (the
// primary) at 150 ms and india/r1 at 250 ms.
func measuredClient(t *testing.T, opts Options) (*Client, *fakeEnv, *Table) {
	t.Helper()
	c, env, table := openedClient(t, opts)
	for _, p := range []struct {
		node  wire.NodeID
		after int
	}{{us, 10}, {england, 140}, {india, 100}} {
		env.advance(ms(p.after))
		c.Receive(p.node, &wire.ProbeReply{Req: env.take(t, p.node, true), Code: wire.OK, HighTS: wallTS(1000), Primary: p.node == england})
	}
	return c, env, table
}

// reportsSent removes the utility reports sent and renders them.
func (e *fakeEnv) reportsSent() string {
	out, kept := "", e.sent[:0]
	for _, s := range e.sent {
		if m, ok := s.m.(*wire.UtilityReport); ok {
			out += fmt.Sprintf("%s: %v ops=%d %v; ", s.to, m.Tablet, m.Ops, m.Sites)
			continue
		}
		kept = append(kept, s)
	}
	e.sent = kept
	return out
}

// TestUtilityReports checks the reports of Pileus 6.2: per tablet read,
// the Gets of a window and the utility each would be expected to receive
// with the primary at each replica's site, by the client's own selection
// and round-trip estimates, sent to the next member each window.
func TestUtilityReports(t *testing.T) {
	c, env, table := measuredClient(t, Options{Config: members})
	agreement := sla.SLA{
		{Consistency: sla.StrongConsistency, Latency: ms(100), Utility: 1},
		{Consistency: sla.EventualConsistency, Latency: ms(300), Utility: 0.5},
	}
	s, err := c.BeginSession(table, agreement, Pileus)
	if err != nil {
		t.Fatal(err)
	}
	get := func() {
		t.Helper()
		if err := c.Get(s, "k", GetOptions{}, func(GetResult, error) {}); err != nil {
			t.Fatal(err)
		}
		c.Receive(us, &wire.GetReply{Req: env.take(t, us, false), Code: wire.OK, HighTS: wallTS(1000)})
	}
	fire := func() {
		t.Helper()
		for i, tm := range env.timers {
			if _, ok := tm.timer.(reportTimer); ok {
				env.timers = append(env.timers[:i], env.timers[i+1:]...)
				env.now = tm.at
				c.Fire(tm.timer)
				return
			}
		}
		t.Fatalf("no report timer; timers %v", env.timers)
	}
	get()
	get()
	fire()
	// Strong within 100 ms only with the primary at us (10 ms away);
	// elsewhere eventual from us: 0.5 a Get.
	want := "england/cfg: 7/0 ops=2 [{england 1000000} {india 1000000} {us 2000000}]; "
	if got := env.reportsSent(); got != want {
		t.Fatalf("first window's reports:\n got %s\nwant %s", got, want)
	}
	fire()
	if got := env.reportsSent(); got != "" {
		t.Fatalf("a window without Gets reported %s", got)
	}
	get()
	fire()
	if got, want := env.reportsSent(), "us/cfg: 7/0 ops=1 [{england 500000} {india 500000} {us 1000000}]; "; got != want {
		t.Fatalf("third window's reports:\n got %s\nwant %s", got, want)
	}
}

// TestNoUtilityReports checks that a client without configuration
// members reports nothing and sets no report timer.
func TestNoUtilityReports(t *testing.T) {
	c, env, table := measuredClient(t, Options{})
	s, err := c.BeginSession(table, defaultSLA, Pileus)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Get(s, "k", GetOptions{}, func(GetResult, error) {}); err != nil {
		t.Fatal(err)
	}
	for _, tm := range env.timers {
		if _, ok := tm.timer.(reportTimer); ok {
			t.Fatal("a report timer without configuration members")
		}
	}
	if len(c.utility) != 0 {
		t.Fatalf("utility counted without configuration members: %v", c.utility)
	}
}
