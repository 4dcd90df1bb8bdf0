package clientcore

import (
	"testing"
	"time"

	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/sla"
)

// defaultSLA is the command line's SLA of a Get that names none.
var defaultSLA = sla.SLA{
	{Consistency: sla.StrongConsistency, Latency: 5 * time.Second, Utility: 1},
	{Consistency: sla.EventualConsistency, Latency: sla.Unbounded, Utility: 0.5},
}

// TestUnreachableNode checks that a node whose probe timed out counts as
// meeting no latency in selection (Pileus 4.5, issue 25 item 3), until it
// answers again. A timed-out probe adds one sample as long as the probe
// timeout, 2 s, which the default SLA's "strong 5s" would count as met:
// the Get went to the dead primary and waited there.
func TestUnreachableNode(t *testing.T) {
	c, env, table := openedClient(t, Options{})
	englandProbe := env.take(t, england, true)
	env.advance(ms(150))
	c.Receive(us, &wire.ProbeReply{Req: env.take(t, us, true), Code: wire.OK, HighTS: wallTS(1000)})
	env.advance(ms(100))
	c.Receive(india, &wire.ProbeReply{Req: env.take(t, india, true), Code: wire.OK, HighTS: wallTS(1000)})
	env.advance(2*time.Second - ms(250))
	c.Fire(timeoutTimer{englandProbe})

	s, err := c.BeginSession(table, defaultSLA, Pileus)
	if err != nil {
		t.Fatal(err)
	}
	var res GetResult
	var getErr error
	get := func() {
		t.Helper()
		res, getErr = GetResult{}, nil
		if err := c.Get(s, "k", GetOptions{}, func(r GetResult, err error) { res, getErr = r, err }); err != nil {
			t.Fatal(err)
		}
	}
	get()
	env.advance(ms(150))
	c.Receive(us, &wire.GetReply{Req: env.take(t, us, false), Code: wire.OK, HighTS: wallTS(1000)})
	if getErr != nil || res.Node != us || res.Target != 1 || res.Met != 1 {
		t.Fatalf("Get with the primary down: node %s, target %d, met %d, err %v; want eventual (2) targeted and met at us/r1",
			res.Node, res.Target+1, res.Met+1, getErr)
	}

	// The primary's late answer shows it reachable: strong at the
	// primary is the target again.
	c.Receive(england, &wire.ProbeReply{Req: englandProbe, Code: wire.OK, HighTS: wallTS(1002), Primary: true})
	get()
	c.Receive(england, &wire.GetReply{Req: env.take(t, england, false), Code: wire.OK, HighTS: wallTS(1002), Primary: true})
	if getErr != nil || res.Node != england || res.Met != 0 {
		t.Fatalf("Get once the primary answers again: node %s, met %d, err %v; want strong (1) at england/r1", res.Node, res.Met+1, getErr)
	}
}

// TestSelectTargetDown checks SelectTarget (Pileus Fig. 8) with a node
// that is down: PNodeLat is zero for every latency, however fast its
// samples, and the next best subSLA is targeted elsewhere.
func TestSelectTargetDown(t *testing.T) {
	down := testReplica("england", true, 0, ms(147), ms(148))
	down.rtt.down = true
	replicas := []*replicaState{down, testReplica("us", false, 20, ms(1)), testReplica("india", false, 20, ms(250))}
	mins := []minTS{{primaryOnly: true}, {}}
	if p := down.rtt.pWithin(sla.Unbounded); p != 0 {
		t.Fatalf("PNodeLat of a node that is down = %v, want 0", p)
	}
	target, node, util, _ := selectTarget(defaultSLA, mins, replicas, 0)
	if target != 1 || replicas[node].id != "us" || util != 0.5 {
		t.Fatalf("selectTarget = subSLA %d at %s with %v; want subSLA 2 at us with 0.5", target+1, replicas[node].id, util)
	}
	// With every node down nothing is expected, and the Get still goes
	// somewhere: the first subSLA at the closest node.
	for _, r := range replicas {
		r.rtt.down = true
	}
	target, node, util, _ = selectTarget(defaultSLA, mins, replicas, 0)
	if target != 0 || replicas[node].id != "us" || util != 0 {
		t.Fatalf("every node down: selectTarget = subSLA %d at %s with %v; want subSLA 1 at us with 0", target+1, replicas[node].id, util)
	}
}

// TestHeldReplyReleased checks that a hedged Get holding a reply that met
// a lower subSLA hands it over once no higher subSLA can be met any more:
// with the primary silent, a reply meeting "eventual 2s" was held until
// its own 2 s were about to run out (or, with an unbounded latency, until
// the primary's request timed out), though "strong 500ms" had run out
// long before.
func TestHeldReplyReleased(t *testing.T) {
	c, env, table := openedClient(t, Options{})
	for _, n := range []wire.NodeID{england, us, india} {
		c.Receive(n, &wire.ProbeReply{Req: env.take(t, n, true), Code: wire.OK, HighTS: wallTS(1000), Primary: n == england})
	}
	// The primary answers within 500 ms half the time, within 2 s three
	// times in four: hedging with the nearest secondary pays.
	c.mon.rtt[england].Add(env.now, ms(100))
	c.mon.rtt[england].Add(env.now, time.Second)
	c.mon.rtt[england].Add(env.now, 3*time.Second)
	c.mon.rtt[us].Add(env.now, ms(10))
	c.mon.rtt[india].Add(env.now, ms(250))
	agreement := sla.SLA{
		{Consistency: sla.StrongConsistency, Latency: ms(500), Utility: 1},
		{Consistency: sla.EventualConsistency, Latency: 2 * time.Second, Utility: 0.5},
	}
	s, err := c.BeginSession(table, agreement, Pileus)
	if err != nil {
		t.Fatal(err)
	}
	start := env.now
	var res GetResult
	var getErr error
	if err := c.Get(s, "k", GetOptions{HedgeCost: 0.01}, func(r GetResult, err error) { res, getErr = r, err }); err != nil {
		t.Fatal(err)
	}
	env.take(t, england, false)
	env.timers = nil
	env.advance(ms(10))
	c.Receive(us, &wire.GetReply{Req: env.take(t, us, false), Code: wire.OK, HighTS: wallTS(1000)})
	if res.Node != "" {
		t.Fatalf("the secondary's reply was used at once (met %d), while strong within 500 ms was still possible", res.Met+1)
	}
	var release *timerAt
	for i, tm := range env.timers {
		if _, ok := tm.timer.(holdTimer); ok {
			release = &env.timers[i]
		}
	}
	if release == nil || !release.at.Equal(start.Add(ms(500))) {
		t.Fatalf("hold timers %v; want one when strong's 500 ms run out", env.timers)
	}
	env.now = release.at
	c.Fire(release.timer)
	if getErr != nil || res.Node != us || res.Met != 1 || res.RTT != ms(500) || !res.Hedged {
		t.Fatalf("hedged Get: node %s, met %d, rtt %s, hedged %v, err %v; want eventual (2) from us/r1 after 500ms",
			res.Node, res.Met+1, res.RTT, res.Hedged, getErr)
	}
}
