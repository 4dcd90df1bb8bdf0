package clientcore

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/storage"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/sla"
)

// fakeEnv is an environment whose clock moves only when a test advances
// it; the client's wall clock reads the same instant. Messages sent are
// queued for the test to answer, timers for it to fire.
type fakeEnv struct {
	now    time.Time
	sent   []sentMsg
	timers []timerAt
}

type timerAt struct {
	at    time.Time
	timer any
}

type sentMsg struct {
	to wire.NodeID
	m  wire.Msg
}

func (e *fakeEnv) ID() wire.NodeID                 { return "china/c1" }
func (e *fakeEnv) Now() time.Time                  { return e.now }
func (e *fakeEnv) WallNanos() int64                { return e.now.UnixNano() }
func (e *fakeEnv) Send(to wire.NodeID, m wire.Msg) { e.sent = append(e.sent, sentMsg{to, m}) }
func (e *fakeEnv) After(d time.Duration, timer any) {
	e.timers = append(e.timers, timerAt{e.now.Add(d), timer})
}
func (e *fakeEnv) Rand() *rand.Rand       { return rand.New(rand.NewPCG(1, 2)) }
func (e *fakeEnv) Engine() storage.Engine { return nil }
func (e *fakeEnv) Logger() *slog.Logger   { return slog.New(slog.DiscardHandler) }

func (e *fakeEnv) advance(d time.Duration) { e.now = e.now.Add(d) }

// take removes the first request sent to node, a probe or not as probe
// says, and returns its request number.
func (e *fakeEnv) take(t *testing.T, to wire.NodeID, probe bool) uint64 {
	t.Helper()
	for i, s := range e.sent {
		if _, isProbe := s.m.(*wire.ProbeRequest); s.to != to || isProbe != probe {
			continue
		}
		e.sent = append(e.sent[:i], e.sent[i+1:]...)
		switch m := s.m.(type) {
		case *wire.TableInfoRequest:
			return m.Req
		case *wire.ProbeRequest:
			return m.Req
		case *wire.GetRequest:
			return m.Req
		case *wire.PutRequest:
			return m.Req
		}
		t.Fatalf("unexpected %T to %s", s.m, to)
	}
	t.Fatalf("nothing sent to %s; sent %v", to, e.sent)
	return 0
}

const (
	england = wire.NodeID("england/r1") // the primary
	us      = wire.NodeID("us/r1")
	india   = wire.NodeID("india/r1")
)

// wallTS is the timestamp sec seconds after the Unix epoch.
func wallTS(sec float64) hlc.Timestamp { return hlc.FromTime(int64(sec * float64(time.Second))) }

// openedClient starts a client at 1000 s on the fake clock and opens
// table t, one tablet with the primary in england and secondaries in the
// U.S. and India, answering the layout lookup; the probes OpenTable sends
// are left for the test to answer.
func openedClient(t *testing.T, opts Options) (*Client, *fakeEnv, *Table) {
	t.Helper()
	env := &fakeEnv{now: time.Unix(1000, 0)}
	opts.Nodes = []wire.NodeID{england}
	c := New(opts)
	if err := c.Start(env); err != nil {
		t.Fatal(err)
	}
	layout := wire.Layout{Name: "t", ID: 7, Tablets: []wire.Tablet{{Primary: england, Secondaries: []wire.NodeID{us, india}}}}
	var table *Table
	c.OpenTable("t", func(tb *Table, err error) {
		if err != nil {
			t.Fatal(err)
		}
		table = tb
	})
	c.Receive(england, &wire.TableInfoReply{Req: env.take(t, england, false), Code: wire.OK, Layout: layout})
	if table == nil {
		t.Fatal("OpenTable did not finish")
	}
	return c, env, table
}

// stalenessOf renders each replica's estimate as node=staleness+age.
func stalenessOf(m Metrics) string {
	s := ""
	for _, r := range m.Replicas {
		s += fmt.Sprintf("%s=%s+%s ", r.Node, r.Staleness, r.Age)
	}
	return s
}

// TestReplicaStaleness follows the monitor's staleness estimates (Pileus
// 4.3-4.5) through probes, time passing without news, a Get's reply and
// a primary whose clock leads the client's.
func TestReplicaStaleness(t *testing.T) {
	c, env, table := openedClient(t, Options{})
	probe := func(node wire.NodeID, highSec float64, primary bool) {
		c.Receive(node, &wire.ProbeReply{Req: env.take(t, node, true), Code: wire.OK, HighTS: wallTS(highSec), Primary: primary})
	}
	check := func(step, want string) {
		t.Helper()
		if got := stalenessOf(c.Metrics()); got != want {
			t.Fatalf("%s: staleness %s, want %s", step, got, want)
		}
	}
	// OpenTable probed every replica; none has answered.
	check("before any answer", "england/r1=0s+0s us/r1=0s+0s india/r1=0s+0s ")
	probe(england, 1000, true)
	probe(us, 998, false)
	check("india not heard from", "england/r1=0s+0s us/r1=2s+0s india/r1=0s+0s ")
	probe(india, 990, false)
	check("all heard from", "england/r1=0s+0s us/r1=2s+0s india/r1=10s+0s ")

	// Without news the estimates stand and grow older: staleness + age
	// bounds a replica's staleness now.
	env.advance(5 * time.Second)
	check("5s later", "england/r1=0s+5s us/r1=2s+5s india/r1=10s+5s ")

	// A Get's reply brings the U.S. replica's new high timestamp, and the
	// result carries the read's staleness.
	s, err := c.BeginSession(table, sla.SLA{{Consistency: sla.EventualConsistency, Latency: time.Second, Utility: 1}}, Closest)
	if err != nil {
		t.Fatal(err)
	}
	// The probes' round trips were all 0 s on the fake clock: make the
	// U.S. replica the closest.
	c.mon.rtt[england].Add(env.now, ms(100))
	c.mon.rtt[india].Add(env.now, ms(100))
	var res GetResult
	if err := c.Get(s, "k", GetOptions{}, func(r GetResult, err error) { res = r }); err != nil {
		t.Fatal(err)
	}
	env.advance(ms(100))
	c.Receive(us, &wire.GetReply{Req: env.take(t, us, false), Code: wire.OK, HighTS: wallTS(1004.1)})
	if res.Node != us || res.Staleness != time.Second {
		t.Fatalf("Get from %s with staleness %s, want us/r1 with 1s", res.Node, res.Staleness)
	}
	check("after the Get", "england/r1=0s+5.1s us/r1=1s+0s india/r1=10s+5.1s ")

	// Five seconds later a primary whose clock leads the client's by 5 s
	// answers a Get; the probe round that follows finds India behind it
	// by 6 s, not the 1 s the client's clock alone would say.
	env.advance(5 * time.Second)
	if err := c.Get(s, "k", GetOptions{Strategy: Primary}, func(r GetResult, err error) { res = r }); err != nil {
		t.Fatal(err)
	}
	c.Receive(england, &wire.GetReply{Req: env.take(t, england, false), Code: wire.OK, HighTS: wallTS(1015.1), Primary: true})
	if res.Staleness != 0 {
		t.Fatalf("a Get from the primary has staleness %s, want 0", res.Staleness)
	}
	c.Fire(probeTimer{}) // India was last heard from 10.1 s ago
	probe(india, 1009.1, false)
	check("primary ahead", "england/r1=0s+0s us/r1=1s+5s india/r1=6s+0s ")

	// A secondary never trails by less than nothing, even one ahead of
	// every clock the client knows.
	if got := staleness(&table.tablets[0], wallTS(2000), false, wallTS(1005).WallNanos); got != 0 {
		t.Fatalf("staleness of a replica ahead of the primary = %s, want 0", got)
	}
	m := c.Metrics()
	if r := m.Replicas[1]; r.Table != "t" || r.Tablet != 0 || r.Primary || r.HighTS != wallTS(1004.1) {
		t.Fatalf("replica estimate %+v, want us/r1 of t/0, a secondary with high 1004.1", r)
	}
}

// TestSLAWindow checks the SLA outcomes of Metrics: all-time counts, and
// the window of the last SLAWindow, which moves a twelfth of it at a time,
// on a fake clock.
func TestSLAWindow(t *testing.T) {
	c, env, table := openedClient(t, Options{SLAWindow: time.Minute})
	for _, n := range []wire.NodeID{england, us, india} {
		c.Receive(n, &wire.ProbeReply{Req: env.take(t, n, true), Code: wire.OK, HighTS: wallTS(1000), Primary: n == england})
	}
	agreement := sla.SLA{
		{Consistency: sla.StrongConsistency, Latency: ms(100), Utility: 1},
		{Consistency: sla.EventualConsistency, Latency: time.Second, Utility: 0.5},
	}
	s, err := c.BeginSession(table, agreement, Primary)
	if err != nil {
		t.Fatal(err)
	}
	// get reads from the primary, which answers after rtt: within 100 ms
	// it meets subSLA 0, within 1 s subSLA 1, later none.
	get := func(rtt time.Duration, o GetOptions) {
		t.Helper()
		if err := c.Get(s, "k", o, func(GetResult, error) {}); err != nil {
			t.Fatal(err)
		}
		env.advance(rtt)
		c.Receive(england, &wire.GetReply{Req: env.take(t, england, false), Code: wire.OK, HighTS: hlc.FromTime(env.WallNanos()), Primary: true})
	}
	check := func(step string, gets, unmet int64, met ...int64) {
		t.Helper()
		m := c.Metrics()
		w := m.SLAs[0].Window
		if got, want := fmt.Sprint(w.Gets, w.Met, w.Unmet), fmt.Sprint(gets, met, unmet); got != want {
			t.Fatalf("%s: window gets, met, unmet = %s, want %s", step, got, want)
		}
	}
	get(ms(50), GetOptions{})
	get(ms(50), GetOptions{})
	get(ms(500), GetOptions{})
	check("three Gets", 3, 0, 2, 1)
	env.advance(30 * time.Second)
	get(2*time.Second, GetOptions{})
	check("an unmet Get", 4, 1, 2, 1)
	if w := c.Metrics().SLAs[0].Window; w.Share(0) != 0.5 || w.Share(1) != 0.25 || w.MetShare() != 0.75 {
		t.Fatalf("shares %v %v, met %v; want 0.5 0.25, 0.75", w.Share(0), w.Share(1), w.MetShare())
	}
	// The first three fell in the bucket of [0 s, 5 s) after the start;
	// they leave the window once a minute has passed since it began.
	env.now = c.counters.started.Add(time.Minute - time.Nanosecond)
	check("just under a minute", 4, 1, 2, 1)
	env.now = c.counters.started.Add(time.Minute)
	check("a minute", 1, 1, 0, 0)
	env.advance(time.Hour)
	check("an hour later", 0, 0, 0, 0)

	// Another SLA, for one Get, is counted apart.
	eventual := sla.SLA{{Consistency: sla.EventualConsistency, Latency: time.Second, Utility: 1}}
	get(ms(10), GetOptions{SLA: eventual})
	m := c.Metrics()
	if len(m.SLAs) != 2 || m.SLAs[1].SLA.String() != eventual.String() || m.SLAs[1].Window.Gets != 1 || m.SLAs[1].Total.Gets != 1 {
		t.Fatalf("SLAs %+v, want the session's then eventual with one Get", m.SLAs)
	}
	total := m.SLAs[0].Total
	if got, want := fmt.Sprint(total.Gets, total.Met, total.Unmet), "4 [2 1] 1"; got != want {
		t.Fatalf("all-time gets, met, unmet = %s, want %s", got, want)
	}
	if m.Gets != 5 || m.Unmet != 1 || m.Met["strong 100ms 1"] != 2 || m.Met["eventual 1s 0.5"] != 1 || m.Met["eventual 1s 1"] != 1 {
		t.Fatalf("Gets %d, Unmet %d, Met %v", m.Gets, m.Unmet, m.Met)
	}
	if m.SLAWindow != time.Minute {
		t.Fatalf("SLAWindow %s, want 1m", m.SLAWindow)
	}

	// Beyond maxSLAStats SLAs, Gets still count but not apart.
	for i := range maxSLAStats {
		c.counters.get(sla.SLA{{Consistency: sla.EventualConsistency, Latency: time.Duration(i+1) * time.Hour, Utility: 1}}, 0, env.Now())
	}
	if m := c.Metrics(); len(m.SLAs) != maxSLAStats || m.Gets != 5+maxSLAStats {
		t.Fatalf("%d SLAs kept and %d Gets counted, want %d and %d", len(m.SLAs), m.Gets, maxSLAStats, 5+maxSLAStats)
	}
}

// TestPutCounts checks Metrics' Put counters: a failed Put counts as an
// error, one refused at once not at all.
func TestPutCounts(t *testing.T) {
	c, env, table := openedClient(t, Options{MaxValueBytes: 8})
	s, err := c.BeginSession(table, sla.SLA{{Consistency: sla.EventualConsistency, Latency: time.Second, Utility: 1}}, Pileus)
	if err != nil {
		t.Fatal(err)
	}
	for _, code := range []wire.Code{wire.OK, wire.Overloaded} {
		if err := c.Put(s, "k", []byte("v"), PutOptions{}, func(PutResult, error) {}); err != nil {
			t.Fatal(err)
		}
		c.Receive(england, &wire.PutReply{Req: env.take(t, england, false), Code: code, TS: wallTS(1000)})
	}
	if err := c.Put(s, "k", []byte("far too long"), PutOptions{}, func(PutResult, error) {}); err == nil {
		t.Fatal("a Put over MaxValueBytes was not refused")
	}
	if m := c.Metrics(); m.Puts != 2 || m.PutErrors != 1 {
		t.Fatalf("Puts %d, PutErrors %d; want 2, 1", m.Puts, m.PutErrors)
	}
}

// TestReplyOfWrongKind: a node answering a Get with a PutReply of the
// same request number neither crashes the client nor ends the Get, which
// finishes with the real reply.
func TestReplyOfWrongKind(t *testing.T) {
	c, env, table := openedClient(t, Options{})
	s, err := c.BeginSession(table, sla.SLA{{Consistency: sla.StrongConsistency, Latency: time.Second, Utility: 1}}, Primary)
	if err != nil {
		t.Fatal(err)
	}
	done := 0
	var res GetResult
	if err := c.Get(s, "k", GetOptions{}, func(r GetResult, err error) {
		if err != nil {
			t.Fatal(err)
		}
		done++
		res = r
	}); err != nil {
		t.Fatal(err)
	}
	req := env.take(t, england, false)
	c.Receive(england, &wire.PutReply{Req: req, Code: wire.OK})
	c.Receive(england, &wire.ProbeReply{Req: req, Code: wire.OK, Primary: true})
	if done != 0 {
		t.Fatal("a reply of the wrong kind ended the Get")
	}
	c.Receive(england, &wire.GetReply{Req: req, Code: wire.OK, Found: true, Value: []byte("v"), HighTS: wallTS(1000), Primary: true})
	if done != 1 || string(res.Value) != "v" {
		t.Fatalf("after the real reply: %d results, value %q; want 1 and v", done, res.Value)
	}
}
