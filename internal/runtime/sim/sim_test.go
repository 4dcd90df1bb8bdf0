package sim_test

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/cosla/cosla/internal/core/node"
	"github.com/cosla/cosla/internal/core/storage"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/runtime/sim"
)

// epochNanos is the physical time at virtual time zero in these tests; a
// nonzero value checks that Env.Now and Env.WallNanos honour it.
const epochNanos int64 = 1_700_000_000_000_000_000

var epoch = time.Unix(0, epochNanos)

// arrival is one message a testNode received.
type arrival struct {
	at   time.Duration // virtual time, from Env.Now
	from wire.NodeID
	req  uint64
}

// firing is one timer a testNode saw fire.
type firing struct {
	at    time.Duration
	timer any
}

// testNode is a tiny protocol core: it records every message and timer
// with the time it saw it and, if echo is set, answers each ProbeRequest
// with a ProbeReply carrying the same Req. It always answers a PutRequest,
// after writing the value at the key with a synced batch, as a primary
// does, and a GetRequest, without touching storage.
type testNode struct {
	env     node.Env
	echo    bool
	started int
	got     []arrival
	fired   []firing
	// onFire, if set, runs after a timer is recorded.
	onFire func(n *testNode, timer any)
}

func (n *testNode) Start(env node.Env) error {
	n.env = env
	n.started++
	return nil
}

func (n *testNode) now() time.Duration { return n.env.Now().Sub(epoch) }

func (n *testNode) Receive(from wire.NodeID, m wire.Msg) {
	switch m := m.(type) {
	case *wire.ProbeRequest:
		n.got = append(n.got, arrival{at: n.now(), from: from, req: m.Req})
		if n.echo {
			n.env.Send(from, &wire.ProbeReply{Req: m.Req})
		}
	case *wire.ProbeReply:
		n.got = append(n.got, arrival{at: n.now(), from: from, req: m.Req})
	case *wire.PutRequest:
		n.got = append(n.got, arrival{at: n.now(), from: from, req: m.Req})
		if err := n.put(m.Key, string(m.Value), true); err != nil {
			panic(fmt.Sprintf("testNode: put: %v", err))
		}
		n.env.Send(from, &wire.PutReply{Req: m.Req})
	case *wire.PutReply:
		n.got = append(n.got, arrival{at: n.now(), from: from, req: m.Req})
	case *wire.GetRequest:
		n.got = append(n.got, arrival{at: n.now(), from: from, req: m.Req})
		n.env.Send(from, &wire.GetReply{Req: m.Req})
	case *wire.GetReply:
		n.got = append(n.got, arrival{at: n.now(), from: from, req: m.Req})
	default:
		panic(fmt.Sprintf("testNode: unexpected message %T", m))
	}
}

func (n *testNode) Fire(timer any) {
	n.fired = append(n.fired, firing{at: n.now(), timer: timer})
	if n.onFire != nil {
		n.onFire(n, timer)
	}
}

func (n *testNode) send(to wire.NodeID, req uint64) {
	n.env.Send(to, &wire.ProbeRequest{Req: req})
}

func (n *testNode) put(key, value string, sync bool) error {
	var b storage.Batch
	b.Set([]byte(key), []byte(value))
	return n.env.Engine().Apply(&b, sync)
}

func (n *testNode) reqs() []uint64 {
	var reqs []uint64
	for _, a := range n.got {
		reqs = append(reqs, a.req)
	}
	return reqs
}

// world is a Sim plus every handler each node has had, oldest first.
type world struct {
	t        *testing.T
	sim      *sim.Sim
	handlers map[wire.NodeID][]*testNode
}

func newWorld(t *testing.T, seed uint64, sites ...string) *world {
	t.Helper()
	w := &world{
		t:        t,
		sim:      sim.New(sim.Options{Seed: seed, EpochNanos: epochNanos}),
		handlers: map[wire.NodeID][]*testNode{},
	}
	for _, s := range sites {
		w.sim.AddSite(s)
	}
	return w
}

func (w *world) add(id wire.NodeID, site string, opts sim.NodeOptions, echo bool) {
	w.t.Helper()
	err := w.sim.AddNode(id, site, opts, func() node.Handler {
		n := &testNode{echo: echo}
		w.handlers[id] = append(w.handlers[id], n)
		return n
	})
	if err != nil {
		w.t.Fatalf("AddNode(%s, %s): %v", id, site, err)
	}
}

// node returns the node's current (latest) handler.
func (w *world) node(id wire.NodeID) *testNode {
	hs := w.handlers[id]
	if len(hs) == 0 {
		w.t.Fatalf("no handler for node %s", id)
	}
	return hs[len(hs)-1]
}

func (w *world) at(t time.Duration, fn func()) { w.sim.At(t, fn) }

func (w *world) run(until time.Duration) {
	w.t.Helper()
	if err := w.sim.Run(until); err != nil {
		w.t.Fatalf("Run(%v): %v", until, err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestEventOrder(t *testing.T) {
	w := newWorld(t, 1)
	var order []string
	var times []time.Duration
	log := func(name string) func() {
		return func() {
			order = append(order, name)
			times = append(times, w.sim.Now())
		}
	}
	w.at(30*time.Millisecond, log("c@30"))
	w.at(10*time.Millisecond, log("a1@10"))
	w.at(20*time.Millisecond, func() {
		log("b@20")()
		// Scheduled from inside an event at the same time: runs after
		// what is already queued for that time.
		w.at(20*time.Millisecond, log("b3@20"))
		// In the past: runs now, not back in time.
		w.at(5*time.Millisecond, log("past@20"))
		w.sim.After(10*time.Millisecond, log("after@30"))
	})
	w.at(10*time.Millisecond, log("a2@10"))
	w.at(20*time.Millisecond, log("b2@20"))

	w.run(25 * time.Millisecond)
	wantOrder := []string{"a1@10", "a2@10", "b@20", "b2@20", "b3@20", "past@20"}
	if !slices.Equal(order, wantOrder) {
		t.Fatalf("order up to 25ms = %v, want %v", order, wantOrder)
	}
	if got := w.sim.Now(); got != 25*time.Millisecond {
		t.Fatalf("Now after Run(25ms) = %v, want 25ms", got)
	}

	// Run includes events at exactly until.
	w.run(30 * time.Millisecond)
	wantOrder = append(wantOrder, "c@30", "after@30")
	if !slices.Equal(order, wantOrder) {
		t.Fatalf("order up to 30ms = %v, want %v", order, wantOrder)
	}
	wantTimes := []time.Duration{10, 10, 20, 20, 20, 20, 30, 30}
	for i := range wantTimes {
		if times[i] != wantTimes[i]*time.Millisecond {
			t.Errorf("event %s ran at %v, want %v", order[i], times[i], wantTimes[i]*time.Millisecond)
		}
	}

	// With nothing queued, Run still advances the clock, and never
	// moves it back.
	w.run(time.Second)
	if got := w.sim.Now(); got != time.Second {
		t.Fatalf("Now after Run(1s) on empty queue = %v, want 1s", got)
	}
	w.run(time.Millisecond)
	if got := w.sim.Now(); got != time.Second {
		t.Fatalf("Now after Run(1ms) at 1s = %v, want 1s", got)
	}
	if got := w.sim.Stats().Events; got != int64(len(order)) {
		t.Fatalf("Stats.Events = %d, want %d", got, len(order))
	}
}

func TestRunUntil(t *testing.T) {
	w := newWorld(t, 1)
	count := 0
	for i := 1; i <= 100; i++ {
		w.at(time.Duration(i)*time.Millisecond, func() { count++ })
	}
	must(t, w.sim.RunUntil(time.Minute, func() bool { return count == 5 }))
	if count != 5 {
		t.Fatalf("RunUntil stopped after %d events, want 5", count)
	}
	if got := w.sim.Now(); got != 5*time.Millisecond {
		t.Fatalf("Now = %v, want 5ms (RunUntil does not advance past the last event)", got)
	}
	// done already true: nothing runs.
	must(t, w.sim.RunUntil(time.Minute, func() bool { return true }))
	if count != 5 {
		t.Fatalf("RunUntil with done() true ran events: count = %d", count)
	}
	// The limit stops it before an event later than limit.
	must(t, w.sim.RunUntil(10*time.Millisecond+time.Microsecond, func() bool { return false }))
	if count != 10 || w.sim.Now() != 10*time.Millisecond {
		t.Fatalf("after RunUntil(limit 10.001ms): count %d at %v, want 10 at 10ms", count, w.sim.Now())
	}
	// An empty queue stops it.
	must(t, w.sim.RunUntil(time.Hour, func() bool { return false }))
	if count != 100 || w.sim.Now() != 100*time.Millisecond {
		t.Fatalf("after draining: count %d at %v, want 100 at 100ms", count, w.sim.Now())
	}
}

func TestLatency(t *testing.T) {
	w := newWorld(t, 1, "us", "eu")
	must(t, w.sim.SetLatency("us", "eu", sim.Latency{Mean: 40 * time.Millisecond}))
	w.add("us1", "us", sim.NodeOptions{}, false)
	w.add("us2", "us", sim.NodeOptions{}, true)
	w.add("eu1", "eu", sim.NodeOptions{}, true)

	if l, ok := w.sim.Latency("us", "eu"); !ok || l != (sim.Latency{Mean: 40 * time.Millisecond}) {
		t.Fatalf("Latency(us, eu) = %v, %v", l, ok)
	}
	if l, ok := w.sim.Latency("eu", "us"); !ok || l.Mean != 40*time.Millisecond {
		t.Fatalf("Latency(eu, us) = %v, %v; SetLatency sets both directions", l, ok)
	}
	if l, ok := w.sim.Latency("us", "us"); !ok || l != (sim.Latency{Mean: 500 * time.Microsecond}) {
		t.Fatalf("default local Latency(us, us) = %v, %v, want 0.5ms", l, ok)
	}
	if _, ok := w.sim.Latency("us", "mars"); ok {
		t.Fatal("Latency(us, mars) reported a link to an unknown site")
	}

	w.at(10*time.Millisecond, func() {
		w.node("us1").send("eu1", 1)
		w.node("us1").send("us2", 2)
	})
	w.run(time.Second)

	if got, want := w.node("eu1").got, []arrival{{50 * time.Millisecond, "us1", 1}}; !slices.Equal(got, want) {
		t.Errorf("eu1 received %v, want %v", got, want)
	}
	if got, want := w.node("us2").got, []arrival{{10*time.Millisecond + 500*time.Microsecond, "us1", 2}}; !slices.Equal(got, want) {
		t.Errorf("us2 received %v, want %v", got, want)
	}
	// Replies: the remote one takes 40ms back, the local one 0.5ms.
	want := []arrival{
		{11 * time.Millisecond, "us2", 2},
		{90 * time.Millisecond, "eu1", 1},
	}
	if got := w.node("us1").got; !slices.Equal(got, want) {
		t.Errorf("us1 received %v, want %v", got, want)
	}
	st := w.sim.Stats()
	if st.Sent != 4 || st.Delivered != 4 || st.Dropped != 0 {
		t.Errorf("Stats = %+v, want 4 sent, 4 delivered, 0 dropped", st)
	}

	// The local link can be changed too.
	must(t, w.sim.SetLatency("us", "us", sim.Latency{Mean: 2 * time.Millisecond}))
	w.at(time.Second, func() { w.node("us1").send("us2", 3) })
	w.run(2 * time.Second)
	if got := w.node("us2").got; len(got) != 2 || got[1].at != time.Second+2*time.Millisecond {
		t.Errorf("after SetLatency(us, us, 2ms): us2 received %v, want req 3 at 1.002s", got)
	}
}

func TestJitter(t *testing.T) {
	const (
		n      = 4000
		mean   = 50 * time.Millisecond
		jitter = 10 * time.Millisecond
		gap    = time.Second // far above any delay drawn, so FIFO never delays a message
	)
	w := newWorld(t, 7, "a", "b")
	must(t, w.sim.SetLatency("a", "b", sim.Latency{Mean: mean, Jitter: jitter}))
	w.add("x", "a", sim.NodeOptions{}, false)
	w.add("y", "b", sim.NodeOptions{}, false)
	for i := range n {
		w.at(time.Duration(i)*gap, func() { w.node("x").send("y", uint64(i)) })
	}
	w.run(time.Duration(n+1) * gap)

	got := w.node("y").got
	if len(got) != n {
		t.Fatalf("received %d messages, want %d", len(got), n)
	}
	var sum, sumSq float64
	lo, hi := time.Duration(math.MaxInt64), time.Duration(0)
	for _, a := range got {
		d := a.at - time.Duration(a.req)*gap
		if d < mean-jitter {
			t.Fatalf("message %d delayed %v, below Mean-Jitter %v", a.req, d, mean-jitter)
		}
		lo, hi = min(lo, d), max(hi, d)
		sum += float64(d)
		sumSq += float64(d) * float64(d)
	}
	sampleMean := sum / n
	sampleSD := math.Sqrt(sumSq/n - sampleMean*sampleMean)
	// The delay's standard deviation is Jitter, so the sample mean is
	// within 5 standard errors of Mean except with negligible probability.
	tol := 5 * float64(jitter) / math.Sqrt(n)
	if math.Abs(sampleMean-float64(mean)) > tol {
		t.Errorf("sample mean delay %v, want %v ± %v", time.Duration(sampleMean), mean, time.Duration(tol))
	}
	// And the spread is really there: a constant delay would pass the mean
	// check.
	if sampleSD < 0.5*float64(jitter) || sampleSD > 1.5*float64(jitter) {
		t.Errorf("sample standard deviation %v, want about %v", time.Duration(sampleSD), jitter)
	}
	if hi < mean+jitter {
		t.Errorf("longest delay %v, want a tail above Mean+Jitter %v", hi, mean+jitter)
	}
	t.Logf("delays over %d messages: min %v, mean %v, sd %v, max %v", n, lo, time.Duration(sampleMean), time.Duration(sampleSD), hi)
}

func TestFIFOWithJitter(t *testing.T) {
	// Jitter as large as the mean: independent draws would reorder most
	// back-to-back messages.
	w := newWorld(t, 3, "a", "b")
	must(t, w.sim.SetLatency("a", "b", sim.Latency{Mean: 20 * time.Millisecond, Jitter: 20 * time.Millisecond}))
	w.add("x", "a", sim.NodeOptions{}, false)
	w.add("z", "a", sim.NodeOptions{}, false)
	w.add("y", "b", sim.NodeOptions{}, false)
	const n = 200
	for i := range n {
		w.at(time.Duration(i)*100*time.Microsecond, func() {
			w.node("x").send("y", uint64(i))
			w.node("z").send("y", uint64(n+i))
		})
	}
	w.run(10 * time.Second)

	got := w.node("y").got
	if len(got) != 2*n {
		t.Fatalf("received %d messages, want %d", len(got), 2*n)
	}
	var fromX, fromZ []uint64
	interleaved := false
	for i, a := range got {
		if i > 0 && got[i].at < got[i-1].at {
			t.Fatalf("message %d handled at %v, before previous at %v", a.req, got[i].at, got[i-1].at)
		}
		if a.from == "x" {
			fromX = append(fromX, a.req)
		} else {
			fromZ = append(fromZ, a.req)
		}
		if i > 0 && got[i].from != got[i-1].from {
			interleaved = true
		}
	}
	if !slices.IsSorted(fromX) || !slices.IsSorted(fromZ) {
		t.Fatalf("messages reordered within a pair:\nx: %v\nz: %v", fromX, fromZ)
	}
	if !interleaved {
		t.Fatal("the two senders' messages did not interleave; the test exercises nothing")
	}
}

func TestPartition(t *testing.T) {
	w := newWorld(t, 1, "a", "b")
	must(t, w.sim.SetLatency("a", "b", sim.Latency{Mean: 10 * time.Millisecond}))
	w.add("x", "a", sim.NodeOptions{}, false)
	w.add("y", "b", sim.NodeOptions{}, false)
	w.add("x2", "a", sim.NodeOptions{}, false)

	must(t, w.sim.Partition("a", "b"))
	w.at(0, func() {
		w.node("x").send("y", 1)
		w.node("y").send("x", 2)
		w.node("x").send("x2", 3) // within a site: unaffected
	})
	w.run(time.Second)
	if got := w.node("y").got; len(got) != 0 {
		t.Fatalf("y received %v across a partition", got)
	}
	if got := w.node("x").got; len(got) != 0 {
		t.Fatalf("x received %v across a partition", got)
	}
	if got := w.node("x2").reqs(); !slices.Equal(got, []uint64{3}) {
		t.Fatalf("x2 received %v, want [3]: a partition between sites cut a local link", got)
	}
	if st := w.sim.Stats(); st.Dropped != 2 || st.Delivered != 1 || st.Sent != 3 {
		t.Fatalf("Stats = %+v, want 3 sent, 2 dropped, 1 delivered", st)
	}

	must(t, w.sim.Heal("b", "a"))
	w.at(2*time.Second, func() {
		w.node("x").send("y", 4)
		w.node("y").send("x", 5)
	})
	w.run(3 * time.Second)
	if got := w.node("y").got; !slices.Equal(got, []arrival{{2*time.Second + 10*time.Millisecond, "x", 4}}) {
		t.Fatalf("after Heal, y received %v", got)
	}
	if got := w.node("x").reqs(); !slices.Equal(got, []uint64{5}) {
		t.Fatalf("after Heal, x received %v, want [5]", got)
	}
}

func TestLoss(t *testing.T) {
	w := newWorld(t, 1, "a", "b")
	w.add("x", "a", sim.NodeOptions{}, false)
	w.add("y", "b", sim.NodeOptions{}, false)
	must(t, w.sim.SetLatency("a", "b", sim.Latency{Mean: time.Millisecond}))
	const n = 500

	must(t, w.sim.SetLoss("a", "b", 1))
	w.at(0, func() {
		for i := range n {
			w.node("x").send("y", uint64(i))
			w.node("y").send("x", uint64(i))
		}
	})
	w.run(time.Second)
	if len(w.node("y").got)+len(w.node("x").got) != 0 {
		t.Fatalf("with loss 1, %d messages got through", len(w.node("y").got)+len(w.node("x").got))
	}
	if st := w.sim.Stats(); st.Dropped != 2*n {
		t.Fatalf("with loss 1, Dropped = %d, want %d", st.Dropped, 2*n)
	}

	must(t, w.sim.SetLoss("a", "b", 0))
	w.at(2*time.Second, func() {
		for i := range n {
			w.node("x").send("y", uint64(i))
			w.node("y").send("x", uint64(i))
		}
	})
	w.run(3 * time.Second)
	if len(w.node("y").got) != n || len(w.node("x").got) != n {
		t.Fatalf("with loss 0, received %d and %d, want %d each", len(w.node("y").got), len(w.node("x").got), n)
	}

	// A loss in between drops some but not all.
	must(t, w.sim.SetLoss("a", "b", 0.5))
	w.at(4*time.Second, func() {
		for i := range n {
			w.node("x").send("y", uint64(i))
		}
	})
	w.run(5 * time.Second)
	if got := len(w.node("y").got) - n; got < n/4 || got > 3*n/4 {
		t.Fatalf("with loss 0.5, %d of %d messages got through", got, n)
	}

	for _, p := range []float64{-0.1, 1.0001, math.NaN(), math.Inf(1)} {
		err := w.sim.SetLoss("a", "b", p)
		if !errors.Is(err, sim.ErrConfig) {
			t.Errorf("SetLoss(%v) = %v, want an error wrapping ErrConfig", p, err)
		}
	}
}

func TestTimers(t *testing.T) {
	w := newWorld(t, 1, "a")
	w.add("x", "a", sim.NodeOptions{}, false)
	type tick struct{ n int }
	w.at(10*time.Millisecond, func() {
		x := w.node("x")
		x.env.After(30*time.Millisecond, tick{3})
		x.env.After(10*time.Millisecond, tick{1})
		x.env.After(10*time.Millisecond, tick{2})
		x.env.After(-time.Second, "negative") // fires now, not in the past
	})
	w.run(time.Second)
	want := []firing{
		{10 * time.Millisecond, "negative"},
		{20 * time.Millisecond, tick{1}},
		{20 * time.Millisecond, tick{2}},
		{40 * time.Millisecond, tick{3}},
	}
	if got := w.node("x").fired; !slices.Equal(got, want) {
		t.Fatalf("timers fired %v, want %v", got, want)
	}
	if got := w.sim.Stats().Timers; got != 4 {
		t.Fatalf("Stats.Timers = %d, want 4", got)
	}
}

func TestCrashRestart(t *testing.T) {
	// far sends to b over a 20ms link, near over the 0.5ms local one.
	w := newWorld(t, 1, "x", "y")
	must(t, w.sim.SetLatency("x", "y", sim.Latency{Mean: 20 * time.Millisecond}))
	w.add("b", "x", sim.NodeOptions{}, true)
	w.add("near", "x", sim.NodeOptions{}, false)
	w.add("far", "y", sim.NodeOptions{}, false)
	old := w.node("b")
	if old.started != 1 {
		t.Fatalf("Start called %d times, want 1", old.started)
	}

	w.at(0, func() {
		must(t, old.put("synced", "1", false))
		must(t, old.put("synced2", "2", true)) // syncs "synced" too
		must(t, old.put("unsynced", "3", false))
		old.env.After(5*time.Millisecond, "early")
		old.env.After(30*time.Millisecond, "late")
		w.node("far").send("b", 1) // in flight across the crash: arrives at 20ms
	})
	w.at(time.Millisecond, func() { must(t, w.sim.Crash("b")) })
	w.at(2*time.Millisecond, func() {
		if _, ok := w.sim.Handler("b"); ok {
			t.Error("Handler(b) found a crashed node")
		}
		w.node("near").send("b", 2) // arrives at 2.5ms while b is down
		w.node("far").send("b", 3)  // arrives at 22ms, after the restart
		// The dead incarnation can no longer act.
		old.env.Send("near", &wire.ProbeRequest{Req: 99})
		old.env.After(time.Millisecond, "zombie")
	})
	w.at(5*time.Millisecond, func() { must(t, w.sim.Restart("b")) })
	w.at(6*time.Millisecond, func() { w.node("far").send("b", 4) }) // arrives at 26ms
	w.run(time.Second)

	if len(w.handlers["b"]) != 2 {
		t.Fatalf("b had %d handlers, want 2 (a fresh one at restart)", len(w.handlers["b"]))
	}
	cur := w.node("b")
	if cur == old || cur.started != 1 || old.started != 1 {
		t.Fatalf("restart: new handler started %d times, old %d times; want a fresh handler started once", cur.started, old.started)
	}
	if h, ok := w.sim.Handler("b"); !ok || h != cur {
		t.Fatalf("Handler(b) = %v, %v, want the restarted handler", h, ok)
	}
	if len(old.got) != 0 || len(old.fired) != 0 {
		t.Errorf("crashed handler received %v and fired %v", old.got, old.fired)
	}
	if len(cur.fired) != 0 {
		t.Errorf("timers set before the crash fired on the restarted node: %v", cur.fired)
	}
	if want := []arrival{{26 * time.Millisecond, "far", 4}}; !slices.Equal(cur.got, want) {
		t.Errorf("restarted node received %v, want %v", cur.got, want)
	}
	if got := w.node("near").reqs(); len(got) != 0 {
		t.Errorf("near received %v from the crashed incarnation", got)
	}
	if got := w.node("far").reqs(); !slices.Equal(got, []uint64{4}) {
		t.Errorf("far received replies %v, want [4]", got)
	}

	// Storage: synced writes survive, unsynced ones do not.
	eng := cur.env.Engine()
	for key, want := range map[string]string{"synced": "1", "synced2": "2"} {
		v, ok, err := eng.Get([]byte(key))
		if err != nil || !ok || string(v) != want {
			t.Errorf("after restart Get(%q) = %q, %v, %v; want %q", key, v, ok, err, want)
		}
	}
	if v, ok, err := eng.Get([]byte("unsynced")); err != nil || ok {
		t.Errorf("after restart Get(unsynced) = %q, %v, %v; want it lost", v, ok, err)
	}

	st := w.sim.Stats()
	if st.Crashes != 1 || st.Restarts != 1 {
		t.Errorf("Stats = %+v, want 1 crash and 1 restart", st)
	}
	// Sent: 1, 2, 3, 4 and the reply to 4; the zombie send does not count.
	// Dropped: 1 (old incarnation), 2 (down), 3 (sent while down).
	if st.Sent != 5 || st.Dropped != 3 || st.Delivered != 2 || st.Timers != 0 {
		t.Errorf("Stats = %+v, want 5 sent, 3 dropped, 2 delivered, 0 timers", st)
	}

	// Crashing a crashed node and restarting a running one change nothing.
	must(t, w.sim.Restart("b"))
	if len(w.handlers["b"]) != 2 {
		t.Errorf("Restart of a running node built a new handler")
	}
	must(t, w.sim.Crash("b"))
	must(t, w.sim.Crash("b"))
	if st := w.sim.Stats(); st.Crashes != 2 {
		t.Errorf("Crashes = %d after crashing twice in a row, want 2", st.Crashes)
	}
}

// TestWipe: a wiped node restarts over empty storage, synced writes
// gone, and is crashed first if it is up.
func TestWipe(t *testing.T) {
	w := newWorld(t, 1, "x")
	w.add("b", "x", sim.NodeOptions{}, true)
	w.at(0, func() { must(t, w.node("b").put("synced", "1", true)) })
	w.at(time.Millisecond, func() { must(t, w.sim.Wipe("b")) })
	w.at(2*time.Millisecond, func() { must(t, w.sim.Restart("b")) })
	w.run(time.Second)
	if v, ok, err := w.node("b").env.Engine().Get([]byte("synced")); err != nil || ok {
		t.Errorf("after a wipe Get(synced) = %q, %v, %v; want it lost", v, ok, err)
	}
	if st := w.sim.Stats(); st.Crashes != 1 || st.Restarts != 1 {
		t.Errorf("Stats = %+v, want 1 crash and 1 restart", st)
	}
}

func TestCrashDropsQueuedMessages(t *testing.T) {
	// A message that reached the node but waits in its service queue dies
	// with the node, and the restarted node does not wait behind it.
	w := newWorld(t, 1, "a")
	w.add("x", "a", sim.NodeOptions{}, false)
	w.add("y", "a", sim.NodeOptions{Service: sim.Latency{Mean: 10 * time.Millisecond}}, false)
	w.at(0, func() { w.node("x").send("y", 1) })                   // arrives 0.5ms, served at 10.5ms
	w.at(5*time.Millisecond, func() { must(t, w.sim.Crash("y")) }) // while serving
	w.at(6*time.Millisecond, func() { must(t, w.sim.Restart("y")) })
	w.at(6*time.Millisecond, func() { w.node("x").send("y", 2) }) // arrives 6.5ms, served at 16.5ms
	w.run(time.Second)
	if got, want := w.node("y").got, []arrival{{16*time.Millisecond + 500*time.Microsecond, "x", 2}}; !slices.Equal(got, want) {
		t.Fatalf("restarted y received %v, want %v", got, want)
	}
	if got := w.handlers["y"][0].got; len(got) != 0 {
		t.Fatalf("crashed y received %v", got)
	}
}

func TestSkew(t *testing.T) {
	w := newWorld(t, 1, "a")
	w.add("x", "a", sim.NodeOptions{Skew: -2 * time.Second}, false)
	w.add("y", "a", sim.NodeOptions{}, false)
	type reading struct {
		now  time.Time
		wall int64
	}
	read := func(id wire.NodeID) reading {
		env := w.node(id).env
		return reading{env.Now(), env.WallNanos()}
	}
	var x0, y0, x1, y1 reading
	w.at(time.Second, func() { x0, y0 = read("x"), read("y") })
	w.at(2*time.Second, func() {
		must(t, w.sim.SetSkew("x", 150*time.Millisecond))
		x1, y1 = read("x"), read("y")
	})
	w.run(3 * time.Second)

	check := func(name string, got reading, virtual, skew time.Duration) {
		t.Helper()
		if want := epoch.Add(virtual); !got.now.Equal(want) {
			t.Errorf("%s: Now = %v, want %v (no skew)", name, got.now, want)
		}
		if want := epochNanos + int64(virtual+skew); got.wall != want {
			t.Errorf("%s: WallNanos = %d, want %d (skew %v)", name, got.wall, want, skew)
		}
	}
	check("x at 1s", x0, time.Second, -2*time.Second)
	check("y at 1s", y0, time.Second, 0)
	check("x at 2s after SetSkew", x1, 2*time.Second, 150*time.Millisecond)
	check("y at 2s", y1, 2*time.Second, 0)
}

// TestRate: a node whose clock runs 25% fast from 1 s reads 3.5 s at
// virtual 3 s, and a 1 s timer it sets then fires 0.8 s later in
// virtual time; its wall clock (the HLC's) is not affected, nor is any
// other node's clock.
func TestRate(t *testing.T) {
	w := newWorld(t, 1, "a")
	w.add("x", "a", sim.NodeOptions{}, false)
	w.add("y", "a", sim.NodeOptions{}, false)
	var xNow, yNow time.Time
	var xWall int64
	var firedAt time.Duration
	w.node("x").onFire = func(*testNode, any) { firedAt = w.sim.Now() }
	w.at(time.Second, func() { must(t, w.sim.SetRate("x", 1.25)) })
	w.at(3*time.Second, func() {
		x := w.node("x")
		xNow, yNow, xWall = x.env.Now(), w.node("y").env.Now(), x.env.WallNanos()
		x.env.After(time.Second, "tick")
	})
	w.run(5 * time.Second)
	if want := epoch.Add(3500 * time.Millisecond); !xNow.Equal(want) {
		t.Errorf("x's clock at virtual 3s = %v, want %v", xNow, want)
	}
	if want := epoch.Add(3 * time.Second); !yNow.Equal(want) {
		t.Errorf("y's clock at virtual 3s = %v, want %v", yNow, want)
	}
	if want := epochNanos + int64(3*time.Second); xWall != want {
		t.Errorf("x's wall clock = %d, want %d (the rate leaves it alone)", xWall, want)
	}
	if want := 3800 * time.Millisecond; firedAt != want {
		t.Errorf("x's 1s timer fired at virtual %v, want %v", firedAt, want)
	}
}

func TestService(t *testing.T) {
	const service = 3 * time.Millisecond
	w := newWorld(t, 1, "a", "b")
	must(t, w.sim.SetLatency("a", "b", sim.Latency{Mean: 10 * time.Millisecond}))
	w.add("x", "a", sim.NodeOptions{}, false)
	w.add("y", "b", sim.NodeOptions{}, false)
	must(t, w.sim.SetService("y", sim.Latency{Mean: service}))
	w.at(0, func() {
		for i := 1; i <= 3; i++ {
			w.node("x").send("y", uint64(i))
		}
	})
	// Arrives after the queue has drained: no wait.
	w.at(50*time.Millisecond, func() { w.node("x").send("y", 4) })
	w.run(time.Second)
	arrive := 10 * time.Millisecond
	want := []arrival{
		{arrive + service, "x", 1},
		{arrive + 2*service, "x", 2},
		{arrive + 3*service, "x", 3},
		{60*time.Millisecond + service, "x", 4},
	}
	if got := w.node("y").got; !slices.Equal(got, want) {
		t.Fatalf("y handled %v, want %v", got, want)
	}

	// Back to infinitely fast.
	must(t, w.sim.SetService("y", sim.Latency{}))
	w.at(2*time.Second, func() {
		w.node("x").send("y", 5)
		w.node("x").send("y", 6)
	})
	w.run(3 * time.Second)
	got := w.node("y").got[4:]
	if want := []arrival{{2*time.Second + arrive, "x", 5}, {2*time.Second + arrive, "x", 6}}; !slices.Equal(got, want) {
		t.Fatalf("with zero service time y handled %v, want %v", got, want)
	}
}

// urgentNode is a testNode whose ProbeReplies are urgent (node.Urgency).
type urgentNode struct{ testNode }

func (n *urgentNode) Urgent(m wire.Msg) bool {
	_, reply := m.(*wire.ProbeReply)
	return reply
}

func TestUrgency(t *testing.T) {
	// A node whose handler has urgent messages serves them ahead of the
	// others waiting, each class in arrival order; the one in service is
	// not interrupted. A crash drops what waits.
	const service = 3 * time.Millisecond
	w := newWorld(t, 1, "a", "b")
	must(t, w.sim.SetLatency("a", "b", sim.Latency{Mean: 10 * time.Millisecond}))
	w.add("x", "a", sim.NodeOptions{}, false)
	var ys []*urgentNode
	must(t, w.sim.AddNode("y", "b", sim.NodeOptions{Service: sim.Latency{Mean: service}}, func() node.Handler {
		ys = append(ys, &urgentNode{})
		return ys[len(ys)-1]
	}))
	x := func() *testNode { return w.node("x") }
	w.at(0, func() {
		x().send("y", 1)
		x().send("y", 2)
		x().send("y", 3)
		x().env.Send("y", &wire.ProbeReply{Req: 4})
		x().env.Send("y", &wire.ProbeReply{Req: 5})
	})
	w.run(time.Second)
	arrive := 10 * time.Millisecond
	want := []arrival{
		{arrive + service, "x", 1},
		{arrive + 2*service, "x", 4},
		{arrive + 3*service, "x", 5},
		{arrive + 4*service, "x", 2},
		{arrive + 5*service, "x", 3},
	}
	if got := ys[0].got; !slices.Equal(got, want) {
		t.Fatalf("y handled %v, want %v", got, want)
	}

	dropped := w.sim.Stats().Dropped
	w.at(2*time.Second, func() {
		for i := uint64(6); i <= 8; i++ {
			x().send("y", i)
		}
	})
	w.at(2*time.Second+arrive+service/2, func() { must(t, w.sim.Crash("y")) })
	w.at(3*time.Second, func() { must(t, w.sim.Restart("y")) })
	w.at(3*time.Second, func() { x().env.Send("y", &wire.ProbeReply{Req: 9}) })
	w.run(4 * time.Second)
	if got := w.sim.Stats().Dropped - dropped; got != 3 {
		t.Fatalf("crash while serving one of three messages dropped %d, want 3", got)
	}
	if got, want := ys[1].got, []arrival{{3*time.Second + arrive + service, "x", 9}}; !slices.Equal(got, want) {
		t.Fatalf("restarted y handled %v, want %v", got, want)
	}
}

func TestConfigErrors(t *testing.T) {
	w := newWorld(t, 1, "a", "b")
	w.add("x", "a", sim.NodeOptions{}, false)
	factory := func() node.Handler { return &testNode{} }

	for _, tc := range []struct {
		name string
		err  error
	}{
		{"AddNode unknown site", w.sim.AddNode("z", "mars", sim.NodeOptions{}, factory)},
		{"AddNode twice", w.sim.AddNode("x", "b", sim.NodeOptions{}, factory)},
		{"SetLatency unknown site", w.sim.SetLatency("a", "mars", sim.Latency{Mean: time.Millisecond})},
		{"SetLatency unknown first site", w.sim.SetLatency("mars", "a", sim.Latency{Mean: time.Millisecond})},
		{"SetLoss unknown site", w.sim.SetLoss("mars", "a", 0.5)},
		{"Partition unknown site", w.sim.Partition("a", "mars")},
		{"Heal unknown site", w.sim.Heal("a", "mars")},
		{"Crash unknown node", w.sim.Crash("nobody")},
		{"Restart unknown node", w.sim.Restart("nobody")},
		{"Wipe unknown node", w.sim.Wipe("nobody")},
		{"SetSkew unknown node", w.sim.SetSkew("nobody", time.Second)},
		{"SetRate unknown node", w.sim.SetRate("nobody", 1)},
		{"SetRate zero", w.sim.SetRate("x", 0)},
		{"SetService unknown node", w.sim.SetService("nobody", sim.Latency{})},
		{"SetService negative", w.sim.SetService("x", sim.Latency{Mean: -time.Millisecond})},
		{"SetServiceByKind unknown node", w.sim.SetServiceByKind("nobody", nil)},
		{"SetServiceByKind negative", w.sim.SetServiceByKind("x", map[string]sim.Latency{"get": {Jitter: -1}})},
		{"SetServiceByKind unknown kind", w.sim.SetServiceByKind("x", map[string]sim.Latency{"gte": {Mean: 1}})},
		{"SetFsync unknown node", w.sim.SetFsync("nobody", sim.Latency{})},
		{"SetFsync negative", w.sim.SetFsync("x", sim.Latency{Mean: -1})},
		{"SetBandwidth unknown site", w.sim.SetBandwidth("a", "mars", 1000)},
		{"SetBandwidth negative", w.sim.SetBandwidth("a", "b", -1)},
		{"AddNode negative Service", w.sim.AddNode("n1", "a", sim.NodeOptions{Service: sim.Latency{Mean: -1}}, factory)},
		{"AddNode negative ServiceByKind", w.sim.AddNode("n2", "a", sim.NodeOptions{ServiceByKind: map[string]sim.Latency{"put": {Mean: -1}}}, factory)},
		{"AddNode unknown kind", w.sim.AddNode("n3", "a", sim.NodeOptions{ServiceByKind: map[string]sim.Latency{"Put": {Mean: 1}}}, factory)},
		{"AddNode negative Fsync", w.sim.AddNode("n4", "a", sim.NodeOptions{Fsync: sim.Latency{Jitter: -1}}, factory)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !errors.Is(tc.err, sim.ErrConfig) {
				t.Fatalf("err = %v, want one wrapping sim.ErrConfig", tc.err)
			}
		})
	}
	for _, id := range []wire.NodeID{"z", "n1", "n2", "n3", "n4"} {
		if _, ok := w.sim.Site(id); ok {
			t.Errorf("node %s, rejected, was added", id)
		}
	}
	if site, ok := w.sim.Site("x"); !ok || site != "a" {
		t.Errorf("Site(x) = %q, %v; adding it twice must not move it", site, ok)
	}
	if _, ok := w.sim.Latency("a", "mars"); ok {
		t.Error("a link to an unknown site was created")
	}
}

func TestSendToUnknownNode(t *testing.T) {
	w := newWorld(t, 1, "a")
	w.add("x", "a", sim.NodeOptions{}, false)
	ran := false
	w.at(time.Millisecond, func() { w.node("x").send("ghost", 1) })
	w.at(2*time.Millisecond, func() { ran = true })
	err := w.sim.Run(time.Second)
	if !errors.Is(err, sim.ErrConfig) {
		t.Fatalf("Run = %v, want an error wrapping ErrConfig", err)
	}
	if ran {
		t.Error("Run went on after the error")
	}
	if got := w.sim.Now(); got != time.Millisecond {
		t.Errorf("Now = %v, want 1ms (where the error happened)", got)
	}
	// The error sticks.
	if err2 := w.sim.RunUntil(time.Hour, func() bool { return false }); !errors.Is(err2, sim.ErrConfig) {
		t.Errorf("RunUntil after an error = %v, want the error again", err2)
	}
}

func TestSendWithoutLink(t *testing.T) {
	// Sites added but never joined by SetLatency have no link.
	w := newWorld(t, 1, "a", "b")
	w.add("x", "a", sim.NodeOptions{}, false)
	w.add("y", "b", sim.NodeOptions{}, false)
	w.at(0, func() { w.node("x").send("y", 1) })
	if err := w.sim.Run(time.Second); !errors.Is(err, sim.ErrConfig) {
		t.Fatalf("Run = %v, want an error wrapping ErrConfig for a missing link", err)
	}
}

type startErr struct{ testNode }

func (*startErr) Start(node.Env) error { return errors.New("disk on fire") }

func TestStartError(t *testing.T) {
	w := newWorld(t, 1, "a")
	err := w.sim.AddNode("x", "a", sim.NodeOptions{}, func() node.Handler { return &startErr{} })
	if err == nil {
		t.Fatal("AddNode with a failing Start returned nil")
	}
	if _, ok := w.sim.Handler("x"); ok {
		t.Error("Handler(x) found a node whose Start failed")
	}
}

func TestRand(t *testing.T) {
	draws := func(seed uint64) (x, y []uint64) {
		w := newWorld(t, seed, "a")
		w.add("x", "a", sim.NodeOptions{}, false)
		w.add("y", "a", sim.NodeOptions{}, false)
		for range 4 {
			x = append(x, w.node("x").env.Rand().Uint64())
			y = append(y, w.node("y").env.Rand().Uint64())
		}
		return x, y
	}
	x1, y1 := draws(1)
	x2, y2 := draws(1)
	x3, _ := draws(2)
	if !slices.Equal(x1, x2) || !slices.Equal(y1, y2) {
		t.Errorf("same seed, different draws: %v %v vs %v %v", x1, y1, x2, y2)
	}
	if slices.Equal(x1, y1) {
		t.Errorf("two nodes drew the same numbers %v", x1)
	}
	if slices.Equal(x1, x3) {
		t.Errorf("seeds 1 and 2 drew the same numbers %v", x1)
	}
}

func TestTrace(t *testing.T) {
	var lines []string
	s := sim.New(sim.Options{Seed: 1, Trace: func(l string) { lines = append(lines, l) }})
	s.AddSite("a")
	var x *testNode
	must(t, s.AddNode("x", "a", sim.NodeOptions{}, func() node.Handler { x = &testNode{}; return x }))
	must(t, s.AddNode("y", "a", sim.NodeOptions{}, func() node.Handler { return &testNode{} }))
	s.At(time.Millisecond, func() { x.send("y", 7) })
	must(t, s.Run(time.Second))
	want := fmt.Sprintf("1.500ms x -> y %v", &wire.ProbeRequest{Req: 7})
	if !slices.Contains(lines, want) {
		t.Fatalf("trace %q lacks %q", lines, want)
	}
}

// scenario runs a small busy world exercising every source of randomness:
// jitter, loss, random service times and timers set with Env.Rand. If
// costly is set, it also charges per-kind service times with jitter,
// fsyncs with jitter and link bandwidth, and half the messages are Puts,
// which make synced writes, as do some timers.
func scenario(t *testing.T, seed uint64, costly bool) (uint64, sim.Stats, []string) {
	t.Helper()
	var lines []string
	w := &world{
		t:        t,
		sim:      sim.New(sim.Options{Seed: seed, Trace: func(l string) { lines = append(lines, l) }}),
		handlers: map[wire.NodeID][]*testNode{},
	}
	w.sim.AddSite("a")
	w.sim.AddSite("b")
	must(t, w.sim.SetLatency("a", "b", sim.Latency{Mean: 30 * time.Millisecond, Jitter: 10 * time.Millisecond}))
	must(t, w.sim.SetLoss("a", "b", 0.1))
	var xOpts, zOpts sim.NodeOptions
	yOpts := sim.NodeOptions{Service: sim.Latency{Mean: time.Millisecond, Jitter: time.Millisecond / 2}}
	if costly {
		must(t, w.sim.SetBandwidth("a", "b", 200_000))
		must(t, w.sim.SetBandwidth("b", "b", 1_000_000))
		xOpts.Fsync = sim.Latency{Mean: 2 * time.Millisecond}
		yOpts.ServiceByKind = map[string]sim.Latency{
			"put":   {Mean: 2 * time.Millisecond, Jitter: time.Millisecond},
			"probe": {Mean: 100 * time.Microsecond},
		}
		yOpts.Fsync = sim.Latency{Mean: 20 * time.Millisecond, Jitter: 5 * time.Millisecond}
		zOpts.Fsync = sim.Latency{Mean: time.Millisecond}
	}
	w.add("x", "a", xOpts, true)
	w.add("y", "b", yOpts, true)
	w.add("z", "b", zOpts, true)
	ids := []wire.NodeID{"x", "y", "z"}
	req := uint64(0)
	value := make([]byte, 1000)
	for _, id := range ids {
		w.node(id).onFire = func(n *testNode, _ any) {
			req++
			to := ids[n.env.Rand().IntN(len(ids))]
			switch {
			case !costly:
				n.send(to, req)
			case n.env.Rand().IntN(2) == 0:
				n.env.Send(to, &wire.PutRequest{Req: req, Key: fmt.Sprint(req), Value: value})
			default:
				if n.env.Rand().IntN(4) == 0 {
					must(t, n.put("tick", fmt.Sprint(req), true))
				}
				n.send(to, req)
			}
			if n.now() < 2*time.Second {
				gap := 50 // ms
				if costly {
					gap = 10
				}
				n.env.After(time.Duration(n.env.Rand().IntN(gap))*time.Millisecond, "tick")
			}
		}
		w.node(id).env.After(0, "tick")
	}
	w.at(time.Second, func() { must(t, w.sim.Crash("z")) })
	w.at(1500*time.Millisecond, func() { must(t, w.sim.Restart("z")) })
	w.run(3 * time.Second)
	return w.sim.TraceHash(), w.sim.Stats(), lines
}

func TestDeterminism(t *testing.T) {
	const seed = 42
	h1, st1, tr1 := scenario(t, seed, false)
	h2, st2, tr2 := scenario(t, seed, false)
	repro := fmt.Sprintf("reproduce: go test ./internal/runtime/sim -run 'TestDeterminism' -v (seed %d)", seed)
	if st1.Delivered == 0 || st1.Dropped == 0 || st1.Timers == 0 {
		t.Fatalf("scenario too quiet to test anything: %+v\n%s", st1, repro)
	}
	if h1 != h2 || st1 != st2 {
		for i := range min(len(tr1), len(tr2)) {
			if tr1[i] != tr2[i] {
				t.Logf("first difference at line %d:\n  %s\n  %s", i, tr1[i], tr2[i])
				break
			}
		}
		t.Fatalf("seed %d: hash %x then %x, stats %+v then %+v\n%s", seed, h1, h2, st1, st2, repro)
	}
	if !slices.Equal(tr1, tr2) {
		t.Fatalf("seed %d: same hash, different traces\n%s", seed, repro)
	}
	h3, _, _ := scenario(t, seed+1, false)
	if h3 == h1 {
		t.Fatalf("seeds %d and %d gave the same trace hash %x\n%s", seed, seed+1, h1, repro)
	}
	if w := newWorld(t, seed); w.sim.Seed() != seed {
		t.Fatalf("Seed() = %d, want %d", w.sim.Seed(), seed)
	}
}

func TestFormatTime(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0.000ms"},
		{1500 * time.Millisecond, "1500.000ms"},
		{500 * time.Microsecond, "0.500ms"},
		{time.Nanosecond, "0.000ms"},
	} {
		if got := sim.FormatTime(tc.d); got != tc.want {
			t.Errorf("FormatTime(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

// jitterOnly runs a world whose only randomness is the network's jitter:
// the handlers never draw from Env.Rand.
func jitterOnly(t *testing.T, seed uint64) (uint64, sim.Stats) {
	t.Helper()
	w := newWorld(t, seed, "a", "b")
	must(t, w.sim.SetLatency("a", "b", sim.Latency{Mean: 30 * time.Millisecond, Jitter: 10 * time.Millisecond}))
	w.add("x", "a", sim.NodeOptions{}, true)
	w.add("y", "b", sim.NodeOptions{}, true)
	for i := range 20 {
		w.at(time.Duration(i)*time.Millisecond, func() { w.node("x").send("y", uint64(i)) })
	}
	w.run(time.Second)
	return w.sim.TraceHash(), w.sim.Stats()
}

func TestDeterminismJitterOnly(t *testing.T) {
	const seed = 5
	repro := "reproduce: go test ./internal/runtime/sim -run 'TestDeterminismJitterOnly' -v"
	h1, st1 := jitterOnly(t, seed)
	h2, st2 := jitterOnly(t, seed)
	if h1 != h2 || st1 != st2 {
		t.Fatalf("seed %d: hash %x then %x, stats %+v then %+v\n%s", seed, h1, h2, st1, st2, repro)
	}
	if st1.Delivered != 40 {
		t.Fatalf("seed %d: Delivered = %d, want 40\n%s", seed, st1.Delivered, repro)
	}
	h3, st3 := jitterOnly(t, seed+1)
	if h3 == h1 {
		t.Fatalf("seeds %d and %d gave the same trace hash %x with jitter\n%s", seed, seed+1, h1, repro)
	}
	// Same events, different times: the stats do not depend on the draws.
	if st3 != st1 {
		t.Fatalf("seeds %d and %d: stats %+v and %+v differ without loss\n%s", seed, seed+1, st1, st3, repro)
	}
}

// TestTraceHashUnchanged pins the trace hashes of worlds that set none of
// the cost options (per-kind service, fsync, bandwidth) to the values they
// had before those options existed: a run that does not ask for the costs
// must be event for event what it was, so that published experiment
// numbers do not move. A change to the trace format (wire's String
// methods, the trace lines) changes these hashes too; update them only
// for such a change, never for a change of the model.
func TestTraceHashUnchanged(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func() uint64
		want uint64
	}{
		{"scenario seed 42", func() uint64 { h, _, _ := scenario(t, 42, false); return h }, 0x481efc0857494490},
		{"scenario seed 43", func() uint64 { h, _, _ := scenario(t, 43, false); return h }, 0x22e2f68b0559bb0c},
		{"jitterOnly seed 5", func() uint64 { h, _ := jitterOnly(t, 5); return h }, 0x7fbc51d300e21cff},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.run(); got != tc.want {
				t.Fatalf("trace hash %#x, want %#x\nreproduce: go test ./internal/runtime/sim -run 'TestTraceHashUnchanged' -v", got, tc.want)
			}
		})
	}
}

func TestDeterminismWithCosts(t *testing.T) {
	const seed = 42
	repro := fmt.Sprintf("reproduce: go test ./internal/runtime/sim -run 'TestDeterminismWithCosts' -v (seed %d)", seed)
	h1, st1, tr1 := scenario(t, seed, true)
	h2, st2, tr2 := scenario(t, seed, true)
	if st1.Fsyncs == 0 || st1.FsyncedEvents <= st1.Fsyncs || st1.Dropped == 0 {
		t.Fatalf("scenario does not exercise group commit: %+v\n%s", st1, repro)
	}
	if h1 != h2 || st1 != st2 || !slices.Equal(tr1, tr2) {
		t.Fatalf("seed %d: hash %x then %x, stats %+v then %+v\n%s", seed, h1, h2, st1, st2, repro)
	}
	if h3, _, _ := scenario(t, seed+1, true); h3 == h1 {
		t.Fatalf("seeds %d and %d gave the same trace hash %x\n%s", seed, seed+1, h1, repro)
	}
	if h0, _, _ := scenario(t, seed, false); h0 == h1 {
		t.Fatalf("seed %d: the costs changed nothing in the trace\n%s", seed, repro)
	}
	t.Logf("seed %d: %+v, %.2f events per fsync", seed, st1, float64(st1.FsyncedEvents)/float64(st1.Fsyncs))
}

// msgAt is a message a test sends at a virtual time.
type msgAt struct {
	at       time.Duration
	from, to wire.NodeID
	m        wire.Msg
}

func (w *world) sendAll(msgs []msgAt) {
	for _, s := range msgs {
		w.at(s.at, func() { w.node(s.from).env.Send(s.to, s.m) })
	}
}

func put(req uint64) wire.Msg {
	return &wire.PutRequest{Req: req, Key: fmt.Sprint(req), Value: []byte("v")}
}
func get(req uint64) wire.Msg   { return &wire.GetRequest{Req: req} }
func probe(req uint64) wire.Msg { return &wire.ProbeRequest{Req: req} }

const (
	us = time.Microsecond
	ms = time.Millisecond
)

// TestServiceByKind checks per-kind service times, their sum with Service
// and the FIFO queue they share. x sends to y at time 0 over the 0.5ms
// local link; y handles each message when its service ends.
func TestServiceByKind(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts sim.NodeOptions
		msgs []wire.Msg
		want []arrival // at y
	}{
		{
			name: "per kind, queued",
			opts: sim.NodeOptions{ServiceByKind: map[string]sim.Latency{"put": {Mean: 2 * ms}, "get": {Mean: ms}}},
			msgs: []wire.Msg{put(1), get(2), probe(3), put(4)},
			// probe costs nothing but waits behind get.
			want: []arrival{{2500 * us, "x", 1}, {3500 * us, "x", 2}, {3500 * us, "x", 3}, {5500 * us, "x", 4}},
		},
		{
			name: "Service and ServiceByKind add up",
			opts: sim.NodeOptions{Service: sim.Latency{Mean: ms}, ServiceByKind: map[string]sim.Latency{"get": {Mean: 3 * ms}}},
			msgs: []wire.Msg{get(1), probe(2), get(3)},
			want: []arrival{{4500 * us, "x", 1}, {5500 * us, "x", 2}, {9500 * us, "x", 3}},
		},
		{
			name: "kinds not in the map",
			opts: sim.NodeOptions{ServiceByKind: map[string]sim.Latency{"pull": {Mean: time.Second}}},
			msgs: []wire.Msg{get(1), put(2)},
			want: []arrival{{500 * us, "x", 1}, {500 * us, "x", 2}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, 1, "a")
			w.add("x", "a", sim.NodeOptions{}, false)
			w.add("y", "a", tc.opts, true)
			for _, m := range tc.msgs {
				w.sendAll([]msgAt{{0, "x", "y", m}})
			}
			w.run(time.Second)
			if got := w.node("y").got; !slices.Equal(got, tc.want) {
				t.Fatalf("y handled %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSetServiceByKind(t *testing.T) {
	w := newWorld(t, 1, "a")
	w.add("x", "a", sim.NodeOptions{}, false)
	w.add("y", "a", sim.NodeOptions{}, true)
	byKind := map[string]sim.Latency{"get": {Mean: ms}}
	must(t, w.sim.SetServiceByKind("y", byKind))
	byKind["get"] = sim.Latency{Mean: time.Hour} // the sim keeps its own copy
	w.sendAll([]msgAt{{0, "x", "y", get(1)}})
	w.at(10*ms, func() { must(t, w.sim.SetServiceByKind("y", nil)) })
	w.sendAll([]msgAt{{20 * ms, "x", "y", get(2)}})
	w.run(time.Second)
	if got, want := w.node("y").got, []arrival{{1500 * us, "x", 1}, {20500 * us, "x", 2}}; !slices.Equal(got, want) {
		t.Fatalf("y handled %v, want %v", got, want)
	}
}

// TestFsync checks group commit at y, which x reaches over the 0.5ms
// local link: the times at which x receives y's replies, the fsyncs y
// made, and which writes a crash of y keeps.
func TestFsync(t *testing.T) {
	const fsync = ms
	type crash struct {
		at      time.Duration
		durable []string // keys y holds after the crash
	}
	for _, tc := range []struct {
		name   string
		msgs   []msgAt
		crash  *crash
		want   []arrival // at x
		fsyncs int64
		events int64
	}{
		{
			name: "one synced write pays one fsync",
			// Put at 0, handled at 0.5ms, fsync until 1.5ms, reply at 2ms.
			msgs:   []msgAt{{0, "x", "y", put(1)}},
			want:   []arrival{{2 * ms, "y", 1}},
			fsyncs: 1, events: 1,
		},
		{
			name: "ten puts 100us apart make two groups",
			// Put 1 is handled at 0.5ms and its fsync runs until 1.5ms.
			// Puts 2-10, handled from 0.6ms to 1.4ms, all wait for the
			// disk and share the next fsync, 1.5ms to 2.5ms.
			msgs: func() []msgAt {
				var msgs []msgAt
				for i := range 10 {
					msgs = append(msgs, msgAt{time.Duration(i) * 100 * us, "x", "y", put(uint64(i + 1))})
				}
				return msgs
			}(),
			want: []arrival{
				{2 * ms, "y", 1},
				{3 * ms, "y", 2}, {3 * ms, "y", 3}, {3 * ms, "y", 4}, {3 * ms, "y", 5}, {3 * ms, "y", 6},
				{3 * ms, "y", 7}, {3 * ms, "y", 8}, {3 * ms, "y", 9}, {3 * ms, "y", 10},
			},
			fsyncs: 2, events: 10,
		},
		{
			name: "an idle disk starts the fsync at once",
			// The second put is handled at 3.5ms, after the first fsync
			// ended at 1.5ms.
			msgs:   []msgAt{{0, "x", "y", put(1)}, {3 * ms, "x", "y", put(2)}},
			want:   []arrival{{2 * ms, "y", 1}, {5 * ms, "y", 2}},
			fsyncs: 2, events: 2,
		},
		{
			name: "reads wait for a pending fsync",
			// The get and the probe, handled at 0.6ms and 0.7ms during the
			// put's fsync, may have read its write: persist, then send.
			msgs:   []msgAt{{0, "x", "y", put(1)}, {100 * us, "x", "y", get(2)}, {200 * us, "x", "y", probe(3)}},
			want:   []arrival{{2 * ms, "y", 1}, {2 * ms, "y", 2}, {2 * ms, "y", 3}},
			fsyncs: 1, events: 1,
		},
		{
			name: "messages of events with no synced write go out at once when no fsync is pending",
			// The probe is handled before the put; the put's reply waits.
			msgs:   []msgAt{{0, "x", "y", probe(2)}, {0, "x", "y", put(1)}},
			want:   []arrival{{1 * ms, "y", 2}, {2 * ms, "y", 1}},
			fsyncs: 1, events: 1,
		},
		{
			name: "a crash during the fsyncs drops the held replies and loses the writes",
			// Put 1's fsync runs from 0.5 to 1.5ms, put 2's waits for it;
			// y crashes at 1ms.
			msgs:   []msgAt{{0, "x", "y", put(1)}, {100 * us, "x", "y", put(2)}},
			crash:  &crash{at: ms},
			fsyncs: 0, events: 0,
		},
		{
			name: "a crash after the fsync keeps the writes",
			// Put 1's fsync ends at 1.5ms; put 2's, which started then,
			// would end at 2.5ms. Put 2 was written before put 1's fsync
			// ended, so that fsync made it durable too, as a real disk
			// may (the storage contract allows it), but its reply is
			// lost.
			msgs:   []msgAt{{0, "x", "y", put(1)}, {100 * us, "x", "y", put(2)}},
			crash:  &crash{at: 2 * ms, durable: []string{"1", "2"}},
			want:   []arrival{{2 * ms, "y", 1}},
			fsyncs: 1, events: 1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, 1, "a")
			w.add("x", "a", sim.NodeOptions{}, false)
			w.add("y", "a", sim.NodeOptions{Fsync: sim.Latency{Mean: fsync}}, true)
			w.sendAll(tc.msgs)
			if tc.crash != nil {
				w.at(tc.crash.at, func() { must(t, w.sim.Crash("y")) })
				w.at(tc.crash.at, func() { must(t, w.sim.Restart("y")) })
			}
			w.run(time.Second)
			if got := w.node("x").got; !slices.Equal(got, tc.want) {
				t.Errorf("x received %v, want %v", got, tc.want)
			}
			st := w.sim.Stats()
			if st.Fsyncs != tc.fsyncs || st.FsyncedEvents != tc.events {
				t.Errorf("Stats = %+v, want %d fsyncs covering %d events", st, tc.fsyncs, tc.events)
			}
			if st.Sent != st.Delivered+st.Dropped {
				t.Errorf("Stats = %+v: messages unaccounted for", st)
			}
			if tc.crash == nil {
				return
			}
			if want := int64(len(tc.msgs) - len(tc.want)); st.Dropped != want {
				t.Errorf("Dropped = %d, want the %d held replies", st.Dropped, want)
			}
			var keys []string
			must(t, w.node("y").env.Engine().Scan(nil, nil, func(k, _ []byte) bool {
				keys = append(keys, string(k))
				return true
			}))
			if !slices.Equal(keys, tc.crash.durable) {
				t.Errorf("after the crash y holds %q, want %q", keys, tc.crash.durable)
			}
		})
	}
}

// TestFsyncTimer checks that a timer whose handling makes a synced write
// has its messages held too, and that a synced write outside any event (a
// driver's call) is not charged.
func TestFsyncTimer(t *testing.T) {
	w := newWorld(t, 1, "a")
	w.add("x", "a", sim.NodeOptions{}, false)
	w.add("y", "a", sim.NodeOptions{Fsync: sim.Latency{Mean: ms}}, false)
	w.node("y").onFire = func(n *testNode, _ any) {
		must(t, n.put("k", "v", true))
		n.send("x", 1)
	}
	w.at(0, func() {
		y := w.node("y")
		must(t, y.put("direct", "v", true))
		y.send("x", 2)
		y.env.After(10*ms, "tick")
	})
	w.run(time.Second)
	// 2 leaves at once; 1 at the end of the timer's fsync, 11ms.
	if got, want := w.node("x").got, []arrival{{500 * us, "y", 2}, {11500 * us, "y", 1}}; !slices.Equal(got, want) {
		t.Fatalf("x received %v, want %v", got, want)
	}
	if st := w.sim.Stats(); st.Fsyncs != 1 || st.FsyncedEvents != 1 {
		t.Fatalf("Stats = %+v, want 1 fsync of 1 event", st)
	}
}

func TestBandwidth(t *testing.T) {
	const (
		latency   = 10 * ms
		bandwidth = 1_000_000 // bytes per second
	)
	w := newWorld(t, 1, "a", "b")
	must(t, w.sim.SetLatency("a", "b", sim.Latency{Mean: latency}))
	must(t, w.sim.SetBandwidth("a", "b", bandwidth))
	w.add("x", "a", sim.NodeOptions{}, false)
	w.add("z", "a", sim.NodeOptions{}, false)
	w.add("y", "b", sim.NodeOptions{}, false)
	big := &wire.PutRequest{Req: 1, Key: "k", Value: make([]byte, 1_000_000)}
	bigSize := wire.EnvelopeSize("x", "y", big)
	small := probe(2)
	smallSize := wire.EnvelopeSize("z", "y", small)
	back := probe(3)
	backSize := wire.EnvelopeSize("y", "x", back)
	replySize := wire.EnvelopeSize("y", "x", &wire.PutReply{Req: 1})
	w.sendAll([]msgAt{{0, "x", "y", big}, {0, "z", "y", small}, {0, "y", "x", back}})
	w.run(10 * time.Second)

	// At 1 MB/s a byte takes a microsecond.
	bigDone := time.Duration(bigSize) * us
	if bigDone < time.Second || bigDone > time.Second+100*us {
		t.Fatalf("a 1 MB value makes a %d-byte message", bigSize)
	}
	// The probe from z shares the link a->b, so it is sent after the big
	// message; the probe from y goes the other way, on its own.
	if got, want := w.node("y").got, []arrival{
		{bigDone + latency, "x", 1},
		{bigDone + time.Duration(smallSize)*us + latency, "z", 2},
	}; !slices.Equal(got, want) {
		t.Errorf("y received %v, want %v", got, want)
	}
	// y answers the put; by then its link back is free.
	if got, want := w.node("x").got, []arrival{
		{time.Duration(backSize)*us + latency, "y", 3},
		{bigDone + latency + time.Duration(replySize)*us + latency, "y", 1},
	}; !slices.Equal(got, want) {
		t.Errorf("x received %v, want %v", got, want)
	}

	// Unlimited again: latency only.
	must(t, w.sim.SetBandwidth("b", "a", 0))
	w.sendAll([]msgAt{{20 * time.Second, "x", "y", big}})
	w.run(30 * time.Second)
	if got := w.node("y").got[2:]; !slices.Equal(got, []arrival{{20*time.Second + latency, "x", 1}}) {
		t.Errorf("with unlimited bandwidth y received %v, want the message at 20.010s", got)
	}
}

func TestBandwidthLocalLink(t *testing.T) {
	// A site's own link is shared by its nodes; FIFO per pair still holds
	// when a small message follows a large one.
	w := newWorld(t, 1, "a")
	must(t, w.sim.SetBandwidth("a", "a", 1000))
	w.add("x", "a", sim.NodeOptions{}, false)
	w.add("y", "a", sim.NodeOptions{}, false)
	m1 := &wire.PutRequest{Req: 1, Value: make([]byte, 985)}
	m2 := probe(2)
	s1, s2 := wire.EnvelopeSize("x", "y", m1), wire.EnvelopeSize("x", "y", m2)
	w.sendAll([]msgAt{{0, "x", "y", m1}, {0, "x", "y", m2}})
	w.run(10 * time.Second)
	want := []arrival{
		{time.Duration(s1)*ms + 500*us, "x", 1},
		{time.Duration(s1+s2)*ms + 500*us, "x", 2},
	}
	if got := w.node("y").got; !slices.Equal(got, want) {
		t.Fatalf("y received %v, want %v (sizes %d and %d bytes at 1000 B/s)", got, want, s1, s2)
	}
}

// TestCores checks nodes that share a machine (SetCores) and nodes that
// serve messages concurrently: x sends three gets at time 0, to y, z and
// y again, each costing 1 ms of service, over the 0.5 ms local link.
func TestCores(t *testing.T) {
	getCost := sim.NodeOptions{ServiceByKind: map[string]sim.Latency{"get": {Mean: ms}}}
	concurrent := getCost
	concurrent.Concurrent = true
	for _, tc := range []struct {
		name  string
		cores int
		opts  sim.NodeOptions
		wantY []time.Duration
		wantZ []time.Duration
	}{
		// Each node its own machine: y's two queue, z's runs beside them.
		{name: "a machine each", opts: getCost, wantY: []time.Duration{1500 * us, 2500 * us}, wantZ: []time.Duration{1500 * us}},
		// One core for the site: the three run one after the other.
		{name: "one core", cores: 1, opts: getCost, wantY: []time.Duration{1500 * us, 3500 * us}, wantZ: []time.Duration{2500 * us}},
		// Two cores: y's second waits for y, not for a core.
		{name: "two cores", cores: 2, opts: getCost, wantY: []time.Duration{1500 * us, 2500 * us}, wantZ: []time.Duration{1500 * us}},
		// Concurrent nodes serve at once, as far as the cores allow.
		{name: "concurrent", opts: concurrent, wantY: []time.Duration{1500 * us, 1500 * us}, wantZ: []time.Duration{1500 * us}},
		{name: "concurrent, two cores", cores: 2, opts: concurrent, wantY: []time.Duration{1500 * us, 2500 * us}, wantZ: []time.Duration{1500 * us}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, 1, "a")
			if tc.cores > 0 {
				must(t, w.sim.SetCores("a", tc.cores))
			}
			w.add("x", "a", sim.NodeOptions{}, false)
			w.add("y", "a", tc.opts, false)
			w.add("z", "a", tc.opts, false)
			w.sendAll([]msgAt{{0, "x", "y", get(1)}, {0, "x", "z", get(2)}, {0, "x", "y", get(3)}})
			w.run(time.Second)
			for id, want := range map[wire.NodeID][]time.Duration{"y": tc.wantY, "z": tc.wantZ} {
				var got []time.Duration
				for _, a := range w.node(id).got {
					got = append(got, a.at)
				}
				if !slices.Equal(got, want) {
					t.Errorf("%s handled gets at %v, want %v", id, got, want)
				}
			}
		})
	}
	w := newWorld(t, 1, "a")
	if err := w.sim.SetCores("mars", 2); !errors.Is(err, sim.ErrConfig) {
		t.Errorf("cores of an unknown site: %v", err)
	}
	if err := w.sim.SetCores("a", -1); !errors.Is(err, sim.ErrConfig) {
		t.Errorf("negative cores: %v", err)
	}
}
