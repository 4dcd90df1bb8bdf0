package clientcore

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/sla"
)

// takePut removes the first Put sent to node and returns it.
func (e *fakeEnv) takePut(t *testing.T, to wire.NodeID) *wire.PutRequest {
	t.Helper()
	for i, s := range e.sent {
		if m, ok := s.m.(*wire.PutRequest); ok && s.to == to {
			e.sent = slices.Delete(e.sent, i, i+1)
			return m
		}
	}
	t.Fatalf("no Put sent to %s; sent %v", to, e.sent)
	return nil
}

// fireRetry fires the one retryTimer due, checking that it is due wait
// from now, and moves the clock to it.
func (e *fakeEnv) fireRetry(t *testing.T, c *Client, wait time.Duration) {
	t.Helper()
	fireFirst[retryTimer](t, e, c, wait)
}

// fireFirst fires the first timer of type T, checking that it is due
// wait from now, and moves the clock to it.
func fireFirst[T any](t *testing.T, e *fakeEnv, c *Client, wait time.Duration) {
	t.Helper()
	for i, tm := range e.timers {
		if timer, ok := tm.timer.(T); ok {
			if got := tm.at.Sub(e.now); got != wait {
				t.Fatalf("%T fired after %s, want %s", timer, got, wait)
			}
			e.timers = slices.Delete(e.timers, i, i+1)
			e.now = tm.at
			c.Fire(timer)
			return
		}
	}
	var none T
	t.Fatalf("no %T; timers %v", none, e.timers)
}

// putSession opens the fake cluster's table with every replica measured
// and begins a session.
func putSession(t *testing.T, opts Options) (*Client, *fakeEnv, *Session) {
	t.Helper()
	c, env, table := openedClient(t, opts)
	for _, n := range []wire.NodeID{england, us, india} {
		c.Receive(n, &wire.ProbeReply{Req: env.take(t, n, true), Code: wire.OK, HighTS: wallTS(1000), Primary: n == england})
	}
	s, err := c.BeginSession(table, defaultSLA, Pileus)
	if err != nil {
		t.Fatal(err)
	}
	return c, env, s
}

// putResult is a Put's outcome as its callback saw it.
type putResult struct {
	res   PutResult
	err   error
	calls int
}

func (p *putResult) done(r PutResult, err error) { p.res, p.err, p.calls = r, err, p.calls+1 }

// TestPutFollowsNewPrimary checks that a Put refused by a deposed primary
// with NotPrimary goes at once to the primary the reply names, at its
// epoch, and that the client's layout and monitor take the new primary
// (DESIGN.md section 10): the next Put goes there first.
func TestPutFollowsNewPrimary(t *testing.T) {
	c, env, s := putSession(t, Options{})
	var got putResult
	if err := c.Put(s, "k", []byte("v"), PutOptions{}, got.done); err != nil {
		t.Fatal(err)
	}
	first := env.takePut(t, england)
	if first.Epoch != 0 {
		t.Fatalf("first Put carries epoch %d, want 0 (unknown)", first.Epoch)
	}
	env.advance(ms(100))
	c.Receive(england, &wire.PutReply{Req: first.Req, Code: wire.NotPrimary, Epoch: 2, Primary: us})
	second := env.takePut(t, us)
	if second.Epoch != 2 || got.calls != 0 {
		t.Fatalf("Put sent again with epoch %d (want 2), callback called %d times (want 0)", second.Epoch, got.calls)
	}
	c.Receive(us, &wire.PutReply{Req: second.Req, Code: wire.OK, TS: wallTS(1001)})
	if got.err != nil || got.res.Node != us {
		t.Fatalf("Put at the new primary: node %s, err %v; want us/r1, no error", got.res.Node, got.err)
	}
	l := s.table.Layout()
	if tb := l.Tablets[0]; tb.Primary != us || !slices.Equal(tb.Secondaries, []wire.NodeID{england, india}) {
		t.Fatalf("layout after the move: primary %s, secondaries %v; want us/r1 with england/r1, india/r1", tb.Primary, tb.Secondaries)
	}
	tv := &s.table.tablets[0]
	if tv.replicas[0].id != us || !tv.replicas[0].primary || tv.replicas[1].primary {
		t.Fatalf("monitor's replicas after the move: %s first (primary %v), %s primary %v", tv.replicas[0].id, tv.replicas[0].primary, tv.replicas[1].id, tv.replicas[1].primary)
	}
	if err := c.Put(s, "k2", []byte("v"), PutOptions{}, got.done); err != nil {
		t.Fatal(err)
	}
	if next := env.takePut(t, us); next.Epoch != 2 {
		t.Fatalf("next Put carries epoch %d, want 2", next.Epoch)
	}
}

// TestPutNewPrimaryOutsideReplicas checks a NotPrimary naming a node the
// client's layout does not hold for the tablet (its replica set
// changed): the client asks that node for the layout and sends the Put
// there.
func TestPutNewPrimaryOutsideReplicas(t *testing.T) {
	const china = wire.NodeID("china/r1")
	c, env, s := putSession(t, Options{})
	var got putResult
	if err := c.Put(s, "k", []byte("v"), PutOptions{}, got.done); err != nil {
		t.Fatal(err)
	}
	c.Receive(england, &wire.PutReply{Req: env.takePut(t, england).Req, Code: wire.NotPrimary, Epoch: 3, Primary: china})
	moved := wire.Layout{Name: "t", ID: 7, Tablets: []wire.Tablet{{Primary: china, Secondaries: []wire.NodeID{us, india}}}}
	c.Receive(china, &wire.TableInfoReply{Req: env.take(t, china, false), Code: wire.OK, Layout: moved})
	put := env.takePut(t, china)
	if put.Epoch != 3 {
		t.Fatalf("Put at the new primary carries epoch %d, want 3", put.Epoch)
	}
	c.Receive(china, &wire.PutReply{Req: put.Req, Code: wire.OK, TS: wallTS(1001)})
	if got.err != nil || got.res.Node != china {
		t.Fatalf("Put: node %s, err %v; want china/r1, no error", got.res.Node, got.err)
	}
	if l := s.table.Layout(); !l.Equal(&moved) {
		t.Fatalf("layout %+v, want %+v", l.Tablets, moved.Tablets)
	}
}

// TestPutBacksOff checks that a Put answered NoLease, or NotPrimary
// without a primary, is sent again after 100 ms, then 200 ms, 400 ms...,
// and fails with ErrTimeout once the next wait would pass its timeout.
func TestPutBacksOff(t *testing.T) {
	c, env, s := putSession(t, Options{RequestTimeout: time.Second})
	var got putResult
	if err := c.Put(s, "k", []byte("v"), PutOptions{}, got.done); err != nil {
		t.Fatal(err)
	}
	c.Receive(england, &wire.PutReply{Req: env.takePut(t, england).Req, Code: wire.NoLease})
	env.fireRetry(t, c, ms(100))
	c.Receive(england, &wire.PutReply{Req: env.takePut(t, england).Req, Code: wire.NotPrimary, Epoch: 1})
	env.fireRetry(t, c, ms(200))
	c.Receive(england, &wire.PutReply{Req: env.takePut(t, england).Req, Code: wire.NoLease})
	env.fireRetry(t, c, ms(400))
	if got.calls != 0 {
		t.Fatalf("Put ended after 700 ms of a 1 s timeout: %v", got.err)
	}
	c.Receive(england, &wire.PutReply{Req: env.takePut(t, england).Req, Code: wire.NoLease})
	if got.calls != 1 || !errors.Is(got.err, ErrTimeout) {
		t.Fatalf("Put after its time: %d calls, err %v; want one, ErrTimeout", got.calls, got.err)
	}
}

// TestBoundedPutNoLease checks that a staged write refused NoLease (its
// receiver could not reach a leased primary) keeps its place in the
// session's queue and is sent again after the backoff.
func TestBoundedPutNoLease(t *testing.T) {
	c, env, s := putSession(t, Options{})
	c.mon.rtt[england].Add(env.now, ms(150))
	c.mon.rtt[us].Add(env.now, ms(10))
	c.mon.rtt[india].Add(env.now, ms(250))
	var got putResult
	if err := c.Put(s, "k", []byte("v"), PutOptions{Bound: wire.Immediate}, got.done); err != nil {
		t.Fatal(err)
	}
	// The bounded Put goes to the nearest replica, us; its primary has
	// no lease.
	c.Receive(us, &wire.PutReply{Req: env.takePut(t, us).Req, Code: wire.NoLease})
	if len(s.pending) != 1 {
		t.Fatalf("a bounded Put waiting to be sent again left the session's queue (%d pending)", len(s.pending))
	}
	env.fireRetry(t, c, ms(100))
	put := env.takePut(t, us)
	c.Receive(us, &wire.PutReply{Req: put.Req, Code: wire.OK, Stage: wire.Received, WriteID: 1})
	if got.err != nil || got.res.Stage != wire.Received {
		t.Fatalf("bounded Put after NoLease: stage %s, err %v; want received", got.res.Stage, got.err)
	}
}

// TestPutUngovernedNotPrimary checks that a NotPrimary of epoch 0 (no
// configuration service: the client's layout is wrong) fails the Put at
// once, as before failover existed.
func TestPutUngovernedNotPrimary(t *testing.T) {
	c, env, s := putSession(t, Options{})
	var got putResult
	if err := c.Put(s, "k", []byte("v"), PutOptions{}, got.done); err != nil {
		t.Fatal(err)
	}
	c.Receive(england, &wire.PutReply{Req: env.takePut(t, england).Req, Code: wire.NotPrimary, Primary: us})
	if got.calls != 1 || got.err == nil || errors.Is(got.err, ErrTimeout) {
		t.Fatalf("ungoverned NotPrimary: %d calls, err %v; want one, not a timeout", got.calls, got.err)
	}
	for _, m := range env.sent {
		if _, ok := m.m.(*wire.PutRequest); ok {
			t.Fatalf("Put sent again to %s", m.to)
		}
	}
}

// TestGetPrimaryDown checks Pileus selection while the primary is down
// (issue 27 item 4), as a command line's client sees it
// (MeasureNeeded): the Get waits for the primary's probe, which times
// out; then the strong subSLA is skipped and the eventual one met from
// the nearest secondary, the wait not counted in the Get's latency.
func TestGetPrimaryDown(t *testing.T) {
	c, env, table := openedClient(t, Options{Measure: MeasureNeeded})
	agreement := sla.SLA{
		{Consistency: sla.StrongConsistency, Latency: ms(300), Utility: 1},
		{Consistency: sla.EventualConsistency, Latency: ms(300), Utility: 0.5},
	}
	s, err := c.BeginSession(table, agreement, Pileus)
	if err != nil {
		t.Fatal(err)
	}
	var res GetResult
	var getErr error
	calls := 0
	if err := c.Get(s, "k", GetOptions{}, func(r GetResult, err error) { res, getErr, calls = r, err, calls+1 }); err != nil {
		t.Fatal(err)
	}
	englandWarmUp := env.take(t, england, true)
	for _, n := range []wire.NodeID{us, india} {
		env.advance(ms(50))
		c.Receive(n, &wire.ProbeReply{Req: env.take(t, n, true), Code: wire.OK, HighTS: wallTS(1000)})
		env.advance(ms(50))
		c.Receive(n, &wire.ProbeReply{Req: env.take(t, n, true), Code: wire.OK, HighTS: wallTS(1000)})
	}
	env.advance(2 * time.Second)
	c.Fire(timeoutTimer{englandWarmUp})
	env.advance(ms(50))
	c.Receive(us, &wire.GetReply{Req: env.take(t, us, false), Code: wire.OK, HighTS: wallTS(1000)})
	if calls != 1 || getErr != nil || res.Node != us || res.Met != 1 || res.RTT != ms(50) {
		t.Fatalf("Get with the primary down: %d calls, node %s, met %d, rtt %s, err %v; want eventual (2) met at us/r1 in 50ms",
			calls, res.Node, res.Met+1, res.RTT, getErr)
	}
}

// TestReadFollowsNewPrimary checks that a replica taken for a secondary
// that answers a probe as the primary (it holds the lease: a failover
// moved the tablet there) becomes the primary of the client's layout,
// so that strong reads and Puts go there; and that a primary answering
// as a secondary (between leases) is kept.
func TestReadFollowsNewPrimary(t *testing.T) {
	c, env, table := openedClient(t, Options{})
	c.Receive(england, &wire.ProbeReply{Req: env.take(t, england, true), Code: wire.OK, HighTS: wallTS(1000)})
	if p := table.Layout().Tablets[0].Primary; p != england {
		t.Fatalf("a primary answering without its lease was replaced by %s", p)
	}
	c.Receive(us, &wire.ProbeReply{Req: env.take(t, us, true), Code: wire.OK, HighTS: wallTS(1001), Primary: true})
	if tb := table.Layout().Tablets[0]; tb.Primary != us || !slices.Equal(tb.Secondaries, []wire.NodeID{england, india}) {
		t.Fatalf("layout after us answered as primary: %s with %v; want us/r1 with england/r1, india/r1", tb.Primary, tb.Secondaries)
	}
	s, err := c.BeginSession(table, defaultSLA, Pileus)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Put(s, "k", []byte("v"), PutOptions{}, func(PutResult, error) {}); err != nil {
		t.Fatal(err)
	}
	env.takePut(t, us)
}

// TestPutsInFlightFollow checks two Puts sent to the old primary before
// the client learnt of the move: the first reply moves the layout, and
// the second Put goes to the new primary at once too, not after a
// backoff.
func TestPutsInFlightFollow(t *testing.T) {
	c, env, s := putSession(t, Options{})
	var a, b putResult
	for _, p := range []*putResult{&a, &b} {
		if err := c.Put(s, "k", []byte("v"), PutOptions{}, p.done); err != nil {
			t.Fatal(err)
		}
	}
	first, second := env.takePut(t, england), env.takePut(t, england)
	c.Receive(england, &wire.PutReply{Req: first.Req, Code: wire.NotPrimary, Epoch: 2, Primary: us})
	c.Receive(england, &wire.PutReply{Req: second.Req, Code: wire.NotPrimary, Epoch: 2, Primary: us})
	for range 2 {
		if put := env.takePut(t, us); put.Epoch != 2 {
			t.Fatalf("Put sent again with epoch %d, want 2", put.Epoch)
		}
	}
}

// TestPutAfterStaleRead checks a probe answer that the old primary sent
// before it was deposed and that reaches the client after it followed
// the move: it takes the client back to the old primary, whose
// NotPrimary, at the client's own epoch, sends the Put on to the new one
// at once.
func TestPutAfterStaleRead(t *testing.T) {
	c, env, s := putSession(t, Options{})
	var got putResult
	if err := c.Put(s, "k", []byte("v"), PutOptions{}, got.done); err != nil {
		t.Fatal(err)
	}
	c.Receive(england, &wire.PutReply{Req: env.takePut(t, england).Req, Code: wire.NotPrimary, Epoch: 2, Primary: us})
	c.Receive(us, &wire.PutReply{Req: env.takePut(t, us).Req, Code: wire.OK, TS: wallTS(1001)})
	tv := &s.table.tablets[0]
	c.probe(tv, tv.replicas[1], false)
	probe := env.take(t, england, true)
	c.Receive(england, &wire.ProbeReply{Req: probe, Code: wire.OK, HighTS: wallTS(1000), Primary: true})
	if err := c.Put(s, "k", []byte("w"), PutOptions{}, got.done); err != nil {
		t.Fatal(err)
	}
	c.Receive(england, &wire.PutReply{Req: env.takePut(t, england).Req, Code: wire.NotPrimary, Epoch: 2, Primary: us})
	if put := env.takePut(t, us); put.Epoch != 2 {
		t.Fatalf("Put sent on with epoch %d, want 2", put.Epoch)
	}
}

// TestPutSeeksPrimary checks that a Put the primary leaves unanswered
// (it died), or refuses without naming another (no lease), has the
// client probe the tablet's other replicas, again every 250 ms while
// none answers as the primary (the failover takes a lease): the one that
// does takes the next Put, without waiting for the routine probe (10 s
// by default).
func TestPutSeeksPrimary(t *testing.T) {
	c, env, s := putSession(t, Options{RequestTimeout: time.Second})
	var got putResult
	if err := c.Put(s, "k", []byte("v"), PutOptions{}, got.done); err != nil {
		t.Fatal(err)
	}
	first := env.takePut(t, england)
	c.Fire(timeoutTimer{first.Req})
	if got.calls != 1 || !errors.Is(got.err, ErrTimeout) {
		t.Fatalf("Put without a reply: %d calls, err %v; want one, ErrTimeout", got.calls, got.err)
	}
	// No new primary yet: the next round asks again.
	c.Receive(india, &wire.ProbeReply{Req: env.take(t, india, true), Code: wire.OK, HighTS: wallTS(1001)})
	c.Receive(us, &wire.ProbeReply{Req: env.take(t, us, true), Code: wire.OK, HighTS: wallTS(1001)})
	fireFirst[seekTimer](t, env, c, ms(100))
	c.Receive(india, &wire.ProbeReply{Req: env.take(t, india, true), Code: wire.OK, HighTS: wallTS(1001)})
	c.Receive(us, &wire.ProbeReply{Req: env.take(t, us, true), Code: wire.OK, HighTS: wallTS(1002), Primary: true})
	fireFirst[seekTimer](t, env, c, ms(100)) // ends the seek: the client follows us/r1
	if len(env.sent) != 0 {
		t.Fatalf("the seek went on after the client followed the new primary: sent %v", env.sent)
	}
	if err := c.Put(s, "k", []byte("v2"), PutOptions{}, got.done); err != nil {
		t.Fatal(err)
	}
	c.Receive(us, &wire.PutReply{Req: env.takePut(t, us).Req, Code: wire.NoLease})
	env.take(t, england, true)
	env.take(t, india, true)
}

// TestPutAtADeposedPrimaryEnds checks a Put waiting at a primary that
// died, when a probe finds the new primary: it ends at once, of unknown
// outcome (ErrTimeout), not at its timeout, and the next Put goes to the
// new primary.
func TestPutAtADeposedPrimaryEnds(t *testing.T) {
	c, env, s := putSession(t, Options{RequestTimeout: 2 * time.Second})
	var first, second putResult
	if err := c.Put(s, "k", []byte("v"), PutOptions{}, first.done); err != nil {
		t.Fatal(err)
	}
	env.takePut(t, england)
	tv := &s.table.tablets[0]
	c.probe(tv, tv.replicas[1], false)
	c.Receive(us, &wire.ProbeReply{Req: env.take(t, us, true), Code: wire.OK, HighTS: wallTS(1002), Primary: true})
	if first.calls != 1 || !errors.Is(first.err, ErrTimeout) {
		t.Fatalf("the Put at the deposed primary: %d calls, err %v; want one, ErrTimeout", first.calls, first.err)
	}
	if err := c.Put(s, "k", []byte("w"), PutOptions{}, second.done); err != nil {
		t.Fatal(err)
	}
	c.Receive(us, &wire.PutReply{Req: env.takePut(t, us).Req, Code: wire.OK, TS: wallTS(1003)})
	if second.calls != 1 || second.err != nil {
		t.Fatalf("the next Put: %d calls, err %v; want one, no error", second.calls, second.err)
	}
	if first.calls != 1 {
		t.Fatalf("the abandoned Put ended %d times", first.calls)
	}
}
