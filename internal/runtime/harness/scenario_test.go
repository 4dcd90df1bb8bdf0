package harness

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/cosla/cosla/internal/core/clientcore"
	"github.com/cosla/cosla/internal/core/replica"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/runtime/sim"
	"github.com/cosla/cosla/internal/runtime/topology"
	"github.com/cosla/cosla/sla"
)

// TestScenarios runs the scripts in testdata/scenarios. Each command's
// expected output is the trace of messages the command caused, followed by
// its outcome. Commands:
//
//	topology                                   body: "site NAME [replicas=a,b] [clients=c]" and
//	                                           "link A B rtt=D [jitter=D]" lines; "local rtt=D"
//	world [seed=N] [probes=hide] [config=show] [adaptive-probing] [measure-needed] [pull-batch-max=N]
//	                                           build the world from the topology; config=show keeps
//	                                           the configuration service's routine traffic (serviceLine)
//	                                           in the trace; adaptive-probing
//	                                           sets the clients' Options.AdaptiveProbing,
//	                                           measure-needed their Options.Measure to MeasureNeeded,
//	                                           pull-batch-max the nodes' replica.Options.PullBatchMax
//	create-table client=C name=T primary=SITE [mode=pull|push] [interval=D] [write-level=L]
//	session client=C table=T name=S [strategy=pileus|primary|random|closest]
//	                                           body: the SLA, a preset name or text
//	put session=S key=K value=V [level=L] [timeout=D] [async]
//	                                           level and timeout set PutOptions.Write and Timeout;
//	                                           async returns at once, the outcome joining the trace later
//	get session=S key=K [strategy=...] [retry] [hedge=COST] [level=L] [repair|norepair] [delay=D] [noquorum]
//	                                           body (optional): an SLA overriding the session's;
//	                                           retry and hedge set GetOptions.RetryAfterMiss and HedgeCost,
//	                                           level, delay and noquorum GetOptions.Read, Delay and
//	                                           NoQuorum; repair and norepair set ReadRepair to RepairOn
//	                                           and RepairOff (default RepairAuto)
//	tick D                                     run the world for D of virtual time
//	partition A B | heal A B                   cut or restore the link between two sites
//	latency A B rtt=D                          change a link's round-trip time
//	crash NODE | restart NODE
//	wipe NODE                                  crash a node and lose its storage (sim.Wipe)
//	skew NODE D                                set a node's clock skew
//	status NODE                                a storage node's tablets, epochs and high timestamps
//	rollbacks                                  the versions rolled back since the last rollbacks
//	monitor NODE                               a client's probes sent and round-trip estimates
func TestScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata/scenarios", func(t *testing.T, path string) {
		sc := &scenario{sessions: map[string]*scenarioSession{}}
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

type scenario struct {
	t          *testing.T
	topo       topology.Topology
	world      *World
	trace      []string
	hideProbes bool
	showConfig bool
	// rolled are the versions the replicas rolled back (rollbacks).
	rolled   []replica.RolledBack
	sessions map[string]*scenarioSession
}

type scenarioSession struct {
	client  wire.NodeID
	session *clientcore.Session
}

func (sc *scenario) run(d *datadriven.TestData) (string, error) {
	if d.Cmd != "topology" && d.Cmd != "world" && sc.world == nil {
		return "", fmt.Errorf("%s before world", d.Cmd)
	}
	var err error
	var outcome string
	switch d.Cmd {
	case "topology":
		sc.topo, err = parseTopology(d.Input)
	case "world":
		seed := uint64(1)
		if d.HasArg("seed") {
			d.ScanArgs(sc.t, "seed", &seed)
		}
		sc.hideProbes = d.HasArg("probes")
		sc.showConfig = d.HasArg("config")
		ropts := replica.Options{Rollback: func(rb replica.RolledBack) { sc.rolled = append(sc.rolled, rb) }}
		if d.HasArg("pull-batch-max") {
			d.ScanArgs(sc.t, "pull-batch-max", &ropts.PullBatchMax)
		}
		measure := clientcore.MeasureLater
		if d.HasArg("measure-needed") {
			measure = clientcore.MeasureNeeded
		}
		sc.world, err = New(Options{Seed: seed, Topology: sc.topo, Trace: sc.record, Replica: ropts,
			Client: clientcore.Options{AdaptiveProbing: d.HasArg("adaptive-probing"), Measure: measure}})
	case "create-table":
		outcome, err = sc.createTable(d)
	case "session":
		outcome, err = sc.session(d)
	case "put":
		outcome, err = sc.put(d)
	case "get":
		outcome, err = sc.get(d)
	case "tick", "partition", "heal", "latency", "crash", "restart":
		err = simCommand(sc.t, sc.world.Sim, d)
	case "wipe":
		err = sc.world.Sim.Wipe(wire.NodeID(d.CmdArgs[0].Key))
	case "skew":
		var dur time.Duration
		if dur, err = time.ParseDuration(d.CmdArgs[1].Key); err == nil {
			err = sc.world.Sim.SetSkew(wire.NodeID(d.CmdArgs[0].Key), dur)
		}
	case "status":
		outcome, err = sc.status(wire.NodeID(d.CmdArgs[0].Key))
	case "monitor":
		outcome, err = sc.monitor(wire.NodeID(d.CmdArgs[0].Key))
	case "versions":
		outcome, err = sc.versions(wire.NodeID(d.CmdArgs[0].Key))
	case "rollbacks":
		outcome = sc.rollbacks()
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

// record keeps the trace lines worth reading: deliveries, drops, crashes,
// restarts and link changes, not timers, nor the configuration service's
// routine traffic unless asked (and not probes if asked).
func (sc *scenario) record(line string) {
	fields := strings.SplitN(line, " ", 3)
	if len(fields) < 2 || fields[1] == "timer" || (!sc.showConfig && serviceLine(line)) {
		return
	}
	if sc.hideProbes && strings.Contains(line, "Probe") {
		return
	}
	sc.trace = append(sc.trace, line)
}

func parseTopology(input string) (topology.Topology, error) {
	topo := topology.Topology{Name: "scenario", LocalRTT: time.Millisecond}
	for _, line := range strings.Split(strings.TrimSpace(input), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		args := map[string]string{}
		var pos []string
		for _, a := range f[1:] {
			if k, v, ok := strings.Cut(a, "="); ok {
				args[k] = v
			} else {
				pos = append(pos, a)
			}
		}
		switch f[0] {
		case "site":
			s := topology.Site{Name: pos[0]}
			if v := args["replicas"]; v != "" {
				s.Replicas = strings.Split(v, ",")
			}
			if v := args["clients"]; v != "" {
				s.Clients = strings.Split(v, ",")
			}
			topo.Sites = append(topo.Sites, s)
		case "link":
			l := topology.Link{A: pos[0], B: pos[1]}
			var err error
			if l.RTT, err = time.ParseDuration(args["rtt"]); err != nil {
				return topo, err
			}
			if j := args["jitter"]; j != "" {
				if l.Jitter, err = time.ParseDuration(j); err != nil {
					return topo, err
				}
			}
			topo.Links = append(topo.Links, l)
		case "local":
			var err error
			if topo.LocalRTT, err = time.ParseDuration(args["rtt"]); err != nil {
				return topo, err
			}
		default:
			return topo, fmt.Errorf("unknown topology line %q", line)
		}
	}
	return topo, nil
}

func (sc *scenario) createTable(d *datadriven.TestData) (string, error) {
	var client, name, primary string
	d.ScanArgs(sc.t, "client", &client)
	d.ScanArgs(sc.t, "name", &name)
	d.ScanArgs(sc.t, "primary", &primary)
	r := wire.Replication{Mode: wire.ModePull, Interval: time.Minute}
	if d.HasArg("mode") {
		var mode string
		d.ScanArgs(sc.t, "mode", &mode)
		if mode == "push" {
			r.Mode = wire.ModePush
		}
	}
	if d.HasArg("interval") {
		var s string
		d.ScanArgs(sc.t, "interval", &s)
		var err error
		if r.Interval, err = time.ParseDuration(s); err != nil {
			return "", err
		}
	}
	l, err := sc.topo.Layout(name, sc.topo.PrimaryAt(primary), r)
	if err != nil {
		return "", err
	}
	if d.HasArg("write-level") {
		var s string
		d.ScanArgs(sc.t, "write-level", &s)
		if l.WriteLevel, err = wire.ParseLevel(s); err != nil {
			return "", err
		}
	}
	// A fixed ID keeps traces stable.
	l.ID = 7
	if err := sc.world.CreateTable(wire.NodeID(client), l); err != nil {
		return "", err
	}
	return "ok\n", nil
}

func (sc *scenario) session(d *datadriven.TestData) (string, error) {
	var client, table, name string
	d.ScanArgs(sc.t, "client", &client)
	d.ScanArgs(sc.t, "table", &table)
	d.ScanArgs(sc.t, "name", &name)
	strategy := clientcore.Pileus
	if d.HasArg("strategy") {
		var s string
		d.ScanArgs(sc.t, "strategy", &s)
		var err error
		if strategy, err = clientcore.ParseStrategy(s); err != nil {
			return "", err
		}
	}
	agreement, err := sla.Resolve(strings.TrimSpace(d.Input))
	if err != nil {
		return "", err
	}
	t, err := sc.world.OpenTable(wire.NodeID(client), table)
	if err != nil {
		return "", err
	}
	c, err := sc.world.Client(wire.NodeID(client))
	if err != nil {
		return "", err
	}
	s, err := c.BeginSession(t, agreement, strategy)
	if err != nil {
		return "", err
	}
	sc.sessions[name] = &scenarioSession{client: wire.NodeID(client), session: s}
	return fmt.Sprintf("session %s: %s\n", name, agreement), nil
}

func (sc *scenario) lookupSession(d *datadriven.TestData) (*scenarioSession, *clientcore.Client, error) {
	var name string
	d.ScanArgs(sc.t, "session", &name)
	s, ok := sc.sessions[name]
	if !ok {
		return nil, nil, fmt.Errorf("no session %q", name)
	}
	c, err := sc.world.Client(s.client)
	return s, c, err
}

func (sc *scenario) put(d *datadriven.TestData) (string, error) {
	s, c, err := sc.lookupSession(d)
	if err != nil {
		return "", err
	}
	var key, value string
	d.ScanArgs(sc.t, "key", &key)
	d.ScanArgs(sc.t, "value", &value)
	var o clientcore.PutOptions
	if d.HasArg("level") {
		if o.Write, err = scanLevel(sc.t, d); err != nil {
			return "", err
		}
	}
	if d.HasArg("timeout") {
		var s string
		d.ScanArgs(sc.t, "timeout", &s)
		if o.Timeout, err = time.ParseDuration(s); err != nil {
			return "", err
		}
	}
	if o.Bound, err = scanBound(sc.t, d); err != nil {
		return "", err
	}
	if d.HasArg("test-key") {
		o.Test = &wire.Test{}
		d.ScanArgs(sc.t, "test-key", &o.Test.Key)
		if d.HasArg("test-value") {
			var v string
			d.ScanArgs(sc.t, "test-value", &v)
			o.Test.Found, o.Test.Value = true, []byte(v)
		}
	}
	if d.HasArg("async") {
		// The outcome joins the trace when the Put returns, in a later
		// command's output if need be.
		err := c.Put(s.session, key, []byte(value), o, func(r clientcore.PutResult, err error) {
			sc.trace = append(sc.trace, strings.TrimSuffix(formatPut(key, value, o, r, err), "\n"))
		})
		return fmt.Sprintf("put %s=%s: started\n", key, value), err
	}
	var out string
	err = sc.world.Await(time.Minute, func(done func()) {
		if err := c.Put(s.session, key, []byte(value), o, func(r clientcore.PutResult, err error) {
			out = formatPut(key, value, o, r, err)
			done()
		}); err != nil {
			out = fmt.Sprintf("put %s=%s: %v\n", key, value, err)
			done()
		}
	})
	return out, err
}

// formatPut describes a Put's outcome on one line.
func formatPut(key, value string, o clientcore.PutOptions, r clientcore.PutResult, err error) string {
	acks := ""
	if r.Level > 1 {
		acks = fmt.Sprintf(" acks=%d/%d", r.Acks, r.Level)
	}
	staged := ""
	if r.Stage != 0 {
		staged = fmt.Sprintf(" stage=%s node=%s", r.Stage, r.Node)
		if r.WriteID != 0 {
			staged += fmt.Sprintf(" write=%d", r.WriteID)
		}
		if len(r.Holders) > 0 {
			staged += fmt.Sprintf(" holders=%v", r.Holders)
		}
	}
	if o.Test != nil {
		staged += " test " + r.Tested.String()
	}
	if err != nil {
		return fmt.Sprintf("put %s=%s:%s%s %v\n", key, value, acks, staged, err)
	}
	return fmt.Sprintf("put %s=%s: ts=%s rtt=%s%s%s\n", key, value, r.TS, r.RTT, acks, staged)
}

func (sc *scenario) get(d *datadriven.TestData) (string, error) {
	s, c, err := sc.lookupSession(d)
	if err != nil {
		return "", err
	}
	var key string
	d.ScanArgs(sc.t, "key", &key)
	var opts clientcore.GetOptions
	if in := strings.TrimSpace(d.Input); in != "" {
		if opts.SLA, err = sla.Resolve(in); err != nil {
			return "", err
		}
	}
	if d.HasArg("strategy") {
		var name string
		d.ScanArgs(sc.t, "strategy", &name)
		if opts.Strategy, err = clientcore.ParseStrategy(name); err != nil {
			return "", err
		}
	}
	opts.RetryAfterMiss = d.HasArg("retry")
	switch {
	case d.HasArg("repair"):
		opts.ReadRepair = clientcore.RepairOn
	case d.HasArg("norepair"):
		opts.ReadRepair = clientcore.RepairOff
	}
	opts.NoQuorum = d.HasArg("noquorum")
	if d.HasArg("level") {
		if opts.Read, err = scanLevel(sc.t, d); err != nil {
			return "", err
		}
	}
	if d.HasArg("delay") {
		var s string
		d.ScanArgs(sc.t, "delay", &s)
		if opts.Delay, err = time.ParseDuration(s); err != nil {
			return "", err
		}
	}
	if d.HasArg("hedge") {
		d.ScanArgs(sc.t, "hedge", &opts.HedgeCost)
	}
	if opts.Bound, err = scanBound(sc.t, d); err != nil {
		return "", err
	}
	var out string
	err = sc.world.Await(time.Minute, func(done func()) {
		if err := c.Get(s.session, key, opts, func(r clientcore.GetResult, err error) {
			out = formatGet(key, r, err)
			done()
		}); err != nil {
			out = fmt.Sprintf("get %s: %v\n", key, err)
			done()
		}
	})
	return out, err
}

// scanBound reads a bound= argument: immediate, unbounded or a duration.
func scanBound(t *testing.T, d *datadriven.TestData) (wire.Bound, error) {
	if !d.HasArg("bound") {
		return wire.NoBound, nil
	}
	var s string
	d.ScanArgs(t, "bound", &s)
	switch s {
	case "immediate":
		return wire.Immediate, nil
	case "unbounded":
		return wire.Unbounded, nil
	}
	dur, err := time.ParseDuration(s)
	return wire.Bound(dur), err
}

// scanLevel reads a level= argument.
func scanLevel(t *testing.T, d *datadriven.TestData) (clientcore.Choice, error) {
	var s string
	d.ScanArgs(t, "level", &s)
	l, err := wire.ParseLevel(s)
	return clientcore.Fixed(l), err
}

func formatGet(key string, r clientcore.GetResult, err error) string {
	var b strings.Builder
	fmt.Fprintf(&b, "get %s: strategy=%s", key, r.Strategy)
	if r.Level > 1 {
		fmt.Fprintf(&b, " level=%d", r.Level)
	}
	if r.Delay > 0 {
		fmt.Fprintf(&b, " delay=%s", r.Delay)
	}
	if r.Target >= 0 {
		fmt.Fprintf(&b, " target=%d expected-utility=%s", r.Target+1, strconv.FormatFloat(r.ExpectedUtility, 'f', -1, 64))
	}
	if r.Hedged {
		b.WriteString(" hedged")
	}
	if r.Bound != wire.NoBound {
		fmt.Fprintf(&b, " bound=%s applied=%d pending=%d", r.Bound, r.Applied, r.Pending)
	}
	if r.Null {
		b.WriteString(" null")
	}
	if r.FromSession {
		b.WriteString(" from-session")
	}
	if r.Retries > 0 {
		fmt.Fprintf(&b, " retried=%d", r.Retries)
	}
	fmt.Fprintf(&b, " node=%s", r.Node)
	if r.Level > 1 && r.Primary {
		b.WriteString(" (primary)")
	}
	fmt.Fprintf(&b, " rtt=%s\n", r.RTT)
	for _, rr := range r.Replies {
		value := "not-found"
		if rr.Found {
			value = "version=" + rr.VersionTS.String()
		}
		fmt.Fprintf(&b, "  reply %s %s high=%s rtt=%s\n", rr.Node, value, rr.HighTS, rr.RTT)
	}
	if r.Quorum {
		b.WriteString("  strong by quorum\n")
	}
	if r.Repaired > 0 {
		fmt.Fprintf(&b, "  repaired %d\n", r.Repaired)
	}
	if r.Level > 1 {
		fmt.Fprintf(&b, "  held by %d\n", r.Held)
	}
	if err != nil {
		fmt.Fprintf(&b, "  unmet: %v\n", err)
		return b.String()
	}
	value := "not-found"
	if r.Found {
		value = strconv.Quote(string(r.Value))
	}
	fmt.Fprintf(&b, "  met=%d (%s) value=%s version=%s high=%s\n", r.Met+1, r.SubSLA, value, r.VersionTS, r.HighTS)
	return b.String()
}

// simCommand runs the commands every scenario script has, on its world's
// simulator: tick D, partition A B, heal A B, latency A B rtt=D, crash
// NODE and restart NODE.
func simCommand(t *testing.T, s *sim.Sim, d *datadriven.TestData) error {
	switch d.Cmd {
	case "tick":
		dur, err := time.ParseDuration(d.CmdArgs[0].Key)
		if err != nil {
			return err
		}
		return s.Run(s.Now() + dur)
	case "partition":
		return s.Partition(d.CmdArgs[0].Key, d.CmdArgs[1].Key)
	case "heal":
		return s.Heal(d.CmdArgs[0].Key, d.CmdArgs[1].Key)
	case "latency":
		a, b := d.CmdArgs[0].Key, d.CmdArgs[1].Key
		var rtt string
		d.ScanArgs(t, "rtt", &rtt)
		dur, err := time.ParseDuration(rtt)
		if err != nil {
			return err
		}
		l, _ := s.Latency(a, b)
		l.Mean = dur / 2
		return s.SetLatency(a, b, l)
	case "crash":
		return s.Crash(wire.NodeID(d.CmdArgs[0].Key))
	case "restart":
		return s.Restart(wire.NodeID(d.CmdArgs[0].Key))
	}
	return fmt.Errorf("unknown command %q", d.Cmd)
}

func (sc *scenario) status(id wire.NodeID) (string, error) {
	r, err := sc.world.Replica(id)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, t := range r.Metrics().Tablets {
		role := "secondary"
		if t.Primary {
			role = "primary"
		}
		fmt.Fprintf(&b, "%s tablet %s %s epoch=%d high=%s last-update=%s\n", t.Table, t.Ref, role, t.Epoch, t.High, t.LastUpdate)
	}
	if m := r.Metrics(); m.RolledBack > 0 {
		fmt.Fprintf(&b, "rolled back %d versions\n", m.RolledBack)
	}
	return b.String(), nil
}

// rollbacks prints the versions rolled back since it was last asked.
func (sc *scenario) rollbacks() string {
	var b strings.Builder
	for _, rb := range sc.rolled {
		fmt.Fprintf(&b, "%s tablet %d epoch %d: %s=%q ts=%s\n", rb.Table, rb.Tablet.Tablet, rb.Epoch, rb.Entry.Key, rb.Entry.Value, rb.Entry.TS)
	}
	sc.rolled = nil
	if b.Len() == 0 {
		return "none\n"
	}
	return b.String()
}

// versions prints a node's versions of the scenario's tablet (ID 7) and
// its staged-write counters.
func (sc *scenario) versions(id wire.NodeID) (string, error) {
	r, err := sc.world.Replica(id)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, e := range r.Versions(wire.TabletRef{Table: 7}) {
		fmt.Fprintf(&b, "%s=%q ts=%s\n", e.Key, e.Value, e.TS)
	}
	m := r.Metrics()
	fmt.Fprintf(&b, "staged puts %d, forwards sent %d resent %d ordered %d duplicate %d out-of-order %d, deadlines %d, null reads %d\n",
		m.StagedPuts, m.ForwardsSent, m.ForwardResends, m.ForwardsOrdered, m.DuplicateForwards, m.ForwardsOutOfOrder, m.Deadlines, m.NullReads)
	for _, c := range m.Costs {
		fmt.Fprintf(&b, "cost of %s toward %s: %s + %s per write, %d samples, warm %t\n", c.Step, c.Primary, c.Fixed, c.PerWrite, c.Samples, c.Warm)
	}
	return b.String(), nil
}

func (sc *scenario) monitor(id wire.NodeID) (string, error) {
	c, err := sc.world.Client(id)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "probes sent %d\n", c.ProbesSent())
	for _, e := range c.RTTEstimates() {
		fmt.Fprintf(&b, "%s rtt mean=%s samples=%d\n", e.Node, e.Mean, e.Samples)
	}
	return b.String(), nil
}

// serviceLine reports whether a trace line is the configuration
// service's routine traffic (DESIGN.md section 10): its members' raft
// messages, the primaries' lease renewals and the clients' utility
// reports. Its failovers, epoch changes and refusals show.
func serviceLine(line string) bool {
	for _, kind := range []string{" ConfigRaft(", " LeaseRenew(", " LeaseGrant(", " UtilityReport("} {
		if strings.Contains(line, kind) {
			return true
		}
	}
	return false
}
