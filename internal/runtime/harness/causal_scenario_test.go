package harness

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/cosla/cosla/internal/core/causal"
	"github.com/cosla/cosla/internal/core/clientcore"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/runtime/sim"
	"github.com/cosla/cosla/internal/runtime/site"
	"github.com/cosla/cosla/internal/runtime/topology"
)

// TestCausalScenarios runs the scripts in testdata/causal, which show the
// protocol of causal tables (Karma) message by message. Each command's
// expected output is the trace of what the simulator did while the command
// ran (one line per delivered or dropped message, crash, restart, link
// change and, unless hidden, timer), with the outcome lines of the
// operations that finished in it, each printed when its reply arrived and
// followed by its session's ring binding. Commands:
//
//	topology                         body: "site NAME [replicas=a,b] [clients=c]" and
//	                                 "link A B rtt=D [jitter=D]" lines; "local rtt=D"
//	world [seed=N] strategy=karma|karma-nc|cops-pr|cops-ideal rings=a+b,c [notify=D] [buffered=N] [timers=hide]
//	                                 build the world: rings lists each ring's sites (+ joins
//	                                 sites, commas separate rings), notify sets the clients'
//	                                 clientcore.Options.NotifyEvery, buffered the
//	                                 coordinators' MaxBuffered, timers=hide drops the
//	                                 timer lines; the table is created through a client core
//	                                 (a/creator) as cosla cluster up creates one, and every
//	                                 client opens it; then stabilize, so that the nodes'
//	                                 start-up messages (a store's reset of every cache) are
//	                                 answered
//	placement keys=K,...             where each key lives in each ring
//	put client=C session=N key=K value=V [async]
//	get client=C session=N key=K [async]
//	gettx client=C session=N keys=K,... [async]
//	                                 issue the operation now and run until it returns
//	                                 (at most 1m of virtual time); with async, only issue
//	                                 it: its outcome shows in the output of the command
//	                                 during which it returns (tick, stabilize, another
//	                                 operation). The outcome: a put's version; a get's
//	                                 value or not-found, version, source (write buffer,
//	                                 cache, or ring and node), in-flight or stable, and
//	                                 restricted if a ring restriction bound the session;
//	                                 a get-transaction's ring, rounds and items
//	session client=C session=N       a session's ring binding and restrictions
//	stabilize                        run until no message is in flight and none is sent
//	                                 for 2.5s (longer than every resend interval), or
//	                                 30s of virtual time passed; the clock then stands
//	                                 2.5s after the last delivery
//	versions NODE                    a store's or a cache's version of every key
//	service NODE D                   the node spends D on every message from now on (a
//	                                 slow node: messages queue behind each other)
//	metrics NODE                     a store's, a coordinator's or a cache's counters
//	tick, partition, heal, latency, crash, restart: as in TestScenarios (simCommand)
func TestCausalScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata/causal", func(t *testing.T, path string) {
		sc := &causalScenario{}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			sc.t = t
			out, err := sc.run(d)
			if err != nil {
				return fmt.Sprintf("%serror: %v\n", out, err)
			}
			return out
		})
	})
}

type causalScenario struct {
	t          *testing.T
	topo       topology.Topology
	world      *CausalWorld
	trace      []string
	hideTimers bool
	// tables, begun and sessions are the clients' open table, how many
	// sessions each began, and the sessions by label.
	tables   map[*clientcore.Client]*clientcore.Table
	begun    map[*clientcore.Client]int
	sessions map[string]*clientcore.Session
}

// quietFor is how long stabilize waits without a message sent before it
// calls the world quiet: longer than the resend intervals (1s by default;
// a store's retry timer may fire up to twice that after a request).
const quietFor = 2500 * time.Millisecond

func (sc *causalScenario) run(d *datadriven.TestData) (string, error) {
	if d.Cmd != "topology" && d.Cmd != "world" && sc.world == nil {
		return "", fmt.Errorf("%s before world", d.Cmd)
	}
	var err error
	var outcome string
	switch d.Cmd {
	case "topology":
		sc.topo, err = parseTopology(d.Input)
	case "world":
		err = sc.newWorld(d)
	case "placement":
		outcome = sc.placement(d)
	case "put", "get", "gettx":
		err = sc.op(d)
	case "session":
		outcome, err = sc.session(d)
	case "tick", "partition", "heal", "latency", "crash", "restart":
		err = simCommand(sc.t, sc.world.Sim, d)
	case "stabilize":
		outcome, err = sc.stabilize()
	case "versions":
		outcome, err = sc.versions(wire.NodeID(d.CmdArgs[0].Key))
	case "service":
		err = sc.service(d)
	case "metrics":
		outcome, err = sc.metrics(wire.NodeID(d.CmdArgs[0].Key))
	default:
		err = fmt.Errorf("unknown command %q", d.Cmd)
	}
	var b strings.Builder
	for _, line := range sc.trace {
		b.WriteString(line)
		b.WriteString("\n")
	}
	sc.trace = nil
	b.WriteString(outcome)
	return b.String(), err
}

// record keeps the simulator's trace lines, without the configuration
// service's routine traffic (serviceLine: causal tables have no
// primaries), and without timers if asked.
func (sc *causalScenario) record(line string) {
	fields := strings.SplitN(line, " ", 3)
	if len(fields) < 2 || (sc.hideTimers && fields[1] == "timer") || serviceLine(line) {
		return
	}
	sc.trace = append(sc.trace, line)
}

func (sc *causalScenario) newWorld(d *datadriven.TestData) error {
	seed := uint64(1)
	if d.HasArg("seed") {
		d.ScanArgs(sc.t, "seed", &seed)
	}
	var name, ringsArg string
	d.ScanArgs(sc.t, "strategy", &name)
	strategy, err := causal.ParseStrategy(name)
	if err != nil {
		return err
	}
	if d.HasArg("rings") {
		d.ScanArgs(sc.t, "rings", &ringsArg)
	}
	var rings [][]string
	for _, r := range strings.Split(ringsArg, ",") {
		if r != "" {
			rings = append(rings, strings.Split(r, "+"))
		}
	}
	var client clientcore.Options
	if d.HasArg("notify") {
		var s string
		d.ScanArgs(sc.t, "notify", &s)
		if client.NotifyEvery, err = time.ParseDuration(s); err != nil {
			return err
		}
	}
	var opts site.CausalOptions
	if d.HasArg("buffered") {
		d.ScanArgs(sc.t, "buffered", &opts.Coordinator.MaxBuffered)
	}
	sc.hideTimers = false
	if d.HasArg("timers") {
		var s string
		d.ScanArgs(sc.t, "timers", &s)
		sc.hideTimers = s == "hide"
	}
	sc.tables, sc.begun, sc.sessions = map[*clientcore.Client]*clientcore.Table{}, map[*clientcore.Client]int{}, map[string]*clientcore.Session{}
	sc.world, err = NewCausal(CausalOptions{Seed: seed, Topology: sc.topo, Rings: rings, Strategy: strategy,
		Client: client, Causal: opts, Trace: sc.record})
	if err != nil {
		return err
	}
	// The table's creation, every client opening it, and the start-up
	// handshake: every store resets every cache, and sends the reset
	// again (after its resend interval) to a cache it reached before the
	// table's creation did.
	for _, id := range sc.world.Clients {
		c, err := sc.world.Client(id)
		if err != nil {
			return err
		}
		if sc.tables[c], err = sc.world.OpenTable(id, sc.world.Name); err != nil {
			return err
		}
	}
	_, err = sc.stabilize()
	return err
}

// inFlight counts the messages sent (or duplicated) and neither delivered
// nor dropped yet.
func (sc *causalScenario) inFlight() int64 {
	st := sc.world.Sim.Stats()
	return st.Sent + st.Duplicated - st.Delivered - st.Dropped
}

func (sc *causalScenario) idle() bool { return sc.inFlight() == 0 }

func (sc *causalScenario) stabilize() (string, error) {
	s := sc.world.Sim
	deadline := s.Now() + 30*time.Second
	for {
		if err := s.RunUntil(deadline, sc.idle); err != nil {
			return "", err
		}
		if !sc.idle() {
			return fmt.Sprintf("still busy at %s\n", sim.FormatTime(s.Now())), nil
		}
		idleAt, sent := s.Now(), s.Stats().Sent
		end := min(idleAt+quietFor, deadline)
		if err := s.RunUntil(end, func() bool { return s.Stats().Sent != sent }); err != nil {
			return "", err
		}
		if s.Stats().Sent == sent {
			// Nothing left to run before end: this only moves the clock.
			if err := s.Run(end); err != nil {
				return "", err
			}
			return fmt.Sprintf("quiet since %s, now %s\n", sim.FormatTime(idleAt), sim.FormatTime(s.Now())), nil
		}
		if s.Now() >= deadline {
			return fmt.Sprintf("still busy at %s\n", sim.FormatTime(s.Now())), nil
		}
	}
}

func (sc *causalScenario) ringName(r int32) string {
	if r == wire.NoRing || int(r) >= len(sc.world.Layout.Rings) {
		return "none"
	}
	return fmt.Sprintf("%d (%s)", r, sc.world.Layout.Rings[r].Name)
}

func (sc *causalScenario) placement(d *datadriven.TestData) string {
	var keys string
	d.ScanArgs(sc.t, "keys", &keys)
	var b strings.Builder
	for _, k := range strings.Split(keys, ",") {
		fmt.Fprintf(&b, "%s:", k)
		for r := range sc.world.Layout.Rings {
			fmt.Fprintf(&b, " ring %s %s", sc.ringName(int32(r)), sc.world.Layout.Node(r, k))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// client returns the client core and session a command names, and a
// label for the session: client#session. Session N is the client's Nth
// session on the table, its earlier ones begun with it if they were not
// yet.
func (sc *causalScenario) client(d *datadriven.TestData) (*clientcore.Client, *clientcore.Session, string, error) {
	var id string
	var n int
	d.ScanArgs(sc.t, "client", &id)
	d.ScanArgs(sc.t, "session", &n)
	label := fmt.Sprintf("%s#%d", id, n)
	c, err := sc.world.Client(wire.NodeID(id))
	if err != nil {
		return nil, nil, "", err
	}
	if s := sc.sessions[label]; s != nil {
		return c, s, label, nil
	}
	for sc.begun[c] < n {
		s, err := c.BeginSession(sc.tables[c], CausalSLA, clientcore.Closest)
		if err != nil {
			return nil, nil, "", err
		}
		sc.begun[c]++
		sc.sessions[fmt.Sprintf("%s#%d", id, sc.begun[c])] = s
	}
	return c, sc.sessions[label], label, nil
}

func (sc *causalScenario) sessionLine(label string, s *clientcore.Session) string {
	cs := s.Causal()
	return fmt.Sprintf("  session %s: ring=%s restrictions=%d", label, sc.ringName(cs.Ring()), cs.Restrictions())
}

func (sc *causalScenario) session(d *datadriven.TestData) (string, error) {
	_, s, label, err := sc.client(d)
	if err != nil {
		return "", err
	}
	return sc.sessionLine(label, s) + "\n", nil
}

// op issues a put, get or get-transaction through the client core; its
// outcome joins the trace when its reply arrives.
func (sc *causalScenario) op(d *datadriven.TestData) error {
	c, s, label, err := sc.client(d)
	if err != nil {
		return err
	}
	finished := false
	finish := func(lines ...string) {
		sc.trace = append(sc.trace, lines...)
		sc.trace = append(sc.trace, sc.sessionLine(label, s))
		finished = true
	}
	switch d.Cmd {
	case "put":
		var key, value string
		d.ScanArgs(sc.t, "key", &key)
		d.ScanArgs(sc.t, "value", &value)
		err = c.Put(s, key, []byte(value), clientcore.PutOptions{}, func(r clientcore.PutResult, err error) {
			line := fmt.Sprintf("put %s %s=%s:", label, key, value)
			if err != nil {
				finish(fmt.Sprintf("%s failed: %v", line, err))
				return
			}
			finish(fmt.Sprintf("%s version=%s", line, wire.Version{TS: r.TS, Origin: r.Node}))
		})
	case "get":
		var key string
		d.ScanArgs(sc.t, "key", &key)
		err = c.Get(s, key, clientcore.GetOptions{}, func(r clientcore.GetResult, err error) {
			finish(fmt.Sprintf("get %s %s: %s", label, key, sc.formatGet(r, err)))
		})
	case "gettx":
		var keys string
		d.ScanArgs(sc.t, "keys", &keys)
		err = c.GetTx(s, strings.Split(keys, ","), func(r clientcore.TxResult, err error) {
			finish(sc.formatTx(keys, label, r, err)...)
		})
	}
	if err != nil {
		return err
	}
	if d.HasArg("async") {
		sc.trace = append(sc.trace, fmt.Sprintf("%s %s issued", d.Cmd, label))
		return nil
	}
	w := sc.world
	if err := w.Sim.RunUntil(w.Sim.Now()+time.Minute, func() bool { return finished }); err != nil {
		return err
	}
	if !finished {
		return fmt.Errorf("%s %s did not return within 1m of virtual time", d.Cmd, label)
	}
	return nil
}

func (sc *causalScenario) source(source wire.Source, ring int32, node wire.NodeID) string {
	switch source {
	case wire.FromBuffer:
		return "from write buffer " + string(node)
	case wire.FromCache:
		return "from cache " + string(node)
	}
	return fmt.Sprintf("from ring %s node %s", sc.ringName(ring), node)
}

func (sc *causalScenario) formatGet(r clientcore.GetResult, err error) string {
	if err != nil {
		return "failed: " + err.Error()
	}
	var b strings.Builder
	if r.Found {
		fmt.Fprintf(&b, "value=%s", strconv.Quote(string(r.Value)))
	} else {
		b.WriteString("not-found")
	}
	rc := r.Causal
	fmt.Fprintf(&b, " version=%s %s", rc.Version, sc.source(rc.Source, rc.Ring, r.Node))
	if rc.InFlight {
		b.WriteString(", in-flight")
	} else {
		b.WriteString(", stable")
	}
	if rc.Restricted {
		b.WriteString(", restricted")
	}
	return b.String()
}

func (sc *causalScenario) formatTx(keys, label string, r clientcore.TxResult, err error) []string {
	line := fmt.Sprintf("gettx %s [%s]:", label, keys)
	if err != nil {
		return []string{fmt.Sprintf("%s failed: %v, after %d rounds on ring %s", line, err, r.Rounds, sc.ringName(r.Ring))}
	}
	restricted := ""
	if r.Restricted {
		restricted = " restricted"
	}
	lines := []string{fmt.Sprintf("%s ring %s, %d rounds%s", line, sc.ringName(r.Ring), r.Rounds, restricted)}
	for _, it := range r.Items {
		lines = append(lines, "  "+sc.formatItem(it))
	}
	return lines
}

func (sc *causalScenario) formatItem(it clientcore.TxItem) string {
	var b strings.Builder
	if it.Found {
		fmt.Fprintf(&b, "%s=%s version=%s", it.Key, strconv.Quote(string(it.Value)), it.Version)
	} else {
		fmt.Fprintf(&b, "%s not-found", it.Key)
	}
	if it.Source == wire.FromBuffer {
		b.WriteString(" from write buffer")
	}
	if it.InFlight {
		b.WriteString(", in-flight")
	} else {
		b.WriteString(", stable")
	}
	return b.String()
}

// versions prints a store's or a cache's versions, by key.
func (sc *causalScenario) versions(id wire.NodeID) (string, error) {
	var vs map[string]wire.Version
	if store, err := sc.world.Store(id); err == nil {
		if vs, err = store.Versions(); err != nil {
			return "", err
		}
	} else if cache, err2 := sc.world.Cache(id); err2 == nil {
		vs = cache.Versions()
	} else {
		return "", err
	}
	if len(vs) == 0 {
		return "empty\n", nil
	}
	keys := make([]string, 0, len(vs))
	for k := range vs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s\n", k, vs[k])
	}
	return b.String(), nil
}

func (sc *causalScenario) service(d *datadriven.TestData) error {
	if len(d.CmdArgs) != 2 {
		return fmt.Errorf("service NODE D")
	}
	dur, err := time.ParseDuration(d.CmdArgs[1].Key)
	if err != nil {
		return err
	}
	return sc.world.Sim.SetService(wire.NodeID(d.CmdArgs[0].Key), sim.Latency{Mean: dur})
}

// metrics prints a store's or a cache's counters.
func (sc *causalScenario) metrics(id wire.NodeID) (string, error) {
	if store, err := sc.world.Store(id); err == nil {
		return fmt.Sprintf("abandoned reads dropped: %d\n", store.Metrics().AbandonedReads), nil
	}
	if c, err := sc.world.Coordinator(id); err == nil {
		m := c.Metrics()
		return fmt.Sprintf("buffered writes: %d, puts waiting: %d, puts that waited: %d\n", m.Buffered, m.Waiting, m.PutsWaited), nil
	}
	cache, err := sc.world.Cache(id)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("abandoned reads dropped: %d\n", cache.Metrics().AbandonedReads), nil
}
