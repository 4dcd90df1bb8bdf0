package clientcore

import (
	"testing"
	"time"

	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/sla"
)

// TestMeasureNeeded follows a command line's client (MeasureNeeded)
// whose connection to England takes 800 ms to set up, then 400 ms a round
// trip. OpenTable returns at once; a Put sent at once waits for the
// connection with the warm-up probe, and neither round trip is sampled.
// A read-my-writes Get within 1 s, which only England can meet, waits for
// England's first measured probe rather than take the Put's 1.2 s for the
// node's latency and read the stale U.S. replica.
func TestMeasureNeeded(t *testing.T) {
	c, env, table := openedClient(t, Options{Measure: MeasureNeeded})
	agreement := sla.SLA{{Consistency: sla.ReadMyWritesConsistency, Latency: time.Second, Utility: 1}}
	s, err := c.BeginSession(table, agreement, Pileus)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Put(s, "k", []byte("v"), PutOptions{}, func(r PutResult, err error) {
		if err != nil || r.RTT != 1200*time.Millisecond {
			t.Errorf("put: rtt %s, err %v; want 1.2s", r.RTT, err)
		}
	}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []wire.NodeID{us, india} { // warm-up probes, then measured ones
		c.Receive(n, &wire.ProbeReply{Req: env.take(t, n, true), Code: wire.OK, HighTS: wallTS(999)})
		c.Receive(n, &wire.ProbeReply{Req: env.take(t, n, true), Code: wire.OK, HighTS: wallTS(999)})
	}
	env.advance(1200 * time.Millisecond)
	c.Receive(england, &wire.ProbeReply{Req: env.take(t, england, true), Code: wire.OK, HighTS: wallTS(1001), Primary: true})
	c.Receive(england, &wire.PutReply{Req: env.take(t, england, false), Code: wire.OK, TS: wallTS(1001)})

	var res GetResult
	var getErr error
	if err := c.Get(s, "k", GetOptions{}, func(r GetResult, err error) { res, getErr = r, err }); err != nil {
		t.Fatal(err)
	}
	for _, m := range env.sent {
		if _, ok := m.m.(*wire.GetRequest); ok {
			t.Fatalf("the Get went to %s before England's first measured probe answered", m.to)
		}
	}
	env.advance(400 * time.Millisecond)
	c.Receive(england, &wire.ProbeReply{Req: env.take(t, england, true), Code: wire.OK, HighTS: wallTS(1001.4), Primary: true})
	env.advance(400 * time.Millisecond)
	c.Receive(england, &wire.GetReply{Req: env.take(t, england, false), Code: wire.OK, HighTS: wallTS(1001.8), VersionTS: wallTS(1001), Found: true, Primary: true})
	if getErr != nil || res.Node != england || res.Met != 0 || res.RTT != 400*time.Millisecond {
		t.Fatalf("Get: node %s, met %d, rtt %s, err %v; want read-my-writes at england/r1 in 400ms", res.Node, res.Met+1, res.RTT, getErr)
	}
	if e := c.RTTEstimates(); e[0].Node != string(england) || e[0].Samples != 2 || e[0].Mean != 400*time.Millisecond {
		t.Fatalf("England's estimate %+v, want 2 samples of 400ms (the probe's and the Get's)", e[0])
	}
}

// TestMeasureNeededBounded checks that a bounded Put, which goes to the
// nearest replica, waits under MeasureNeeded for the first
// measured probe (the nearest node's) instead of taking the first
// replica of the layout, the primary, for the nearest.
func TestMeasureNeededBounded(t *testing.T) {
	c, env, table := openedClient(t, Options{Measure: MeasureNeeded})
	s, err := c.BeginSession(table, sla.SLA{{Consistency: sla.EventualConsistency, Latency: time.Second, Utility: 1}}, Pileus)
	if err != nil {
		t.Fatal(err)
	}
	var node wire.NodeID
	if err := c.Put(s, "k", []byte("v"), PutOptions{Bound: wire.Immediate}, func(r PutResult, err error) { node = r.Node }); err != nil {
		t.Fatal(err)
	}
	for _, m := range env.sent {
		if _, ok := m.m.(*wire.PutRequest); ok {
			t.Fatalf("the bounded Put went to %s before any node was measured", m.to)
		}
	}
	env.advance(ms(2))
	c.Receive(us, &wire.ProbeReply{Req: env.take(t, us, true), Code: wire.OK, HighTS: wallTS(999)})
	env.advance(ms(2))
	c.Receive(us, &wire.ProbeReply{Req: env.take(t, us, true), Code: wire.OK, HighTS: wallTS(999)})
	c.Receive(us, &wire.PutReply{Req: env.take(t, us, false), Code: wire.OK, Stage: wire.Received, WriteID: 1})
	if node != us {
		t.Fatalf("bounded Put taken by %q, want the nearest replica us/r1", node)
	}
}

// TestMeasureAll checks that under MeasureAll OpenTable returns only once
// every replica's first probe has been answered or has timed out.
func TestMeasureAll(t *testing.T) {
	env := &fakeEnv{now: time.Unix(1000, 0)}
	c := New(Options{Nodes: []wire.NodeID{england}, Measure: MeasureAll})
	if err := c.Start(env); err != nil {
		t.Fatal(err)
	}
	opened := false
	c.OpenTable("t", func(_ *Table, err error) { opened = err == nil })
	layout := wire.Layout{Name: "t", ID: 7, Tablets: []wire.Tablet{{Primary: england, Secondaries: []wire.NodeID{us, india}}}}
	c.Receive(england, &wire.TableInfoReply{Req: env.take(t, england, false), Code: wire.OK, Layout: layout})
	c.Receive(us, &wire.ProbeReply{Req: env.take(t, us, true), Code: wire.OK, HighTS: wallTS(999)})
	c.Receive(england, &wire.ProbeReply{Req: env.take(t, england, true), Code: wire.OK, HighTS: wallTS(1000), Primary: true})
	if opened {
		t.Fatal("OpenTable returned with India's probe still out")
	}
	c.Fire(timeoutTimer{env.take(t, india, true)})
	if !opened {
		t.Fatal("OpenTable did not return once every probe was answered or timed out")
	}
}
