package config

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/node"
	"github.com/cosla/cosla/internal/core/wire"
)

// MemberName is the name of a configuration member's node at its site:
// the member of site S is the node "S/cfg".
const MemberName = "cfg"

// NodeOptions configures a Node. The zero value of every field but
// Member.Voters means its default.
type NodeOptions struct {
	// Member configures the node's raft member; its Voters are the
	// service's members.
	Member MemberOptions
	// Lease sets the primaries' leases; the storage nodes must use the
	// same values.
	Lease LeaseOptions
	// Collect is how long a failover waits, once a majority of a
	// tablet's replicas reported their high timestamps, for the others
	// before it elects; it does not wait for the primary whose lease
	// lapsed, which is down or cut off (it would have renewed). Default
	// 1s.
	Collect time.Duration
	// Planner configures SLA-driven reconfiguration (Pileus 6.2).
	Planner PlannerOptions
	// Plan switches SLA-driven reconfiguration on: each Planner.Window,
	// the leader moves the primaries its planner chooses. Default off:
	// utility reports are counted and nothing moves by plan.
	Plan bool
}

// EnsureDefaults returns a copy of o with every unset field given its
// default.
func (o NodeOptions) EnsureDefaults() NodeOptions {
	o.Member = o.Member.EnsureDefaults()
	o.Lease = o.Lease.EnsureDefaults()
	o.Collect = cmp.Or(o.Collect, time.Second)
	o.Planner = o.Planner.EnsureDefaults()
	return o
}

// Validate names the first invalid field.
func (o NodeOptions) Validate() error {
	if err := o.Member.Validate(); err != nil {
		return err
	}
	if err := o.Lease.Validate(); err != nil {
		return err
	}
	if o.Collect < 0 {
		return fmt.Errorf("config: collect %v is negative", o.Collect)
	}
	return o.Planner.Validate()
}

// Metrics is a snapshot of a node's counters since it started.
type Metrics struct {
	// Leader is set while the node leads the service (Member.Ready);
	// Term is raft's term and Applied the index of the last command
	// applied.
	Leader  bool
	Term    uint64
	Applied uint64
	// RenewalsGranted counts the LeaseGrants sent with Code OK.
	RenewalsGranted int64
	// Failovers started (a lapsed lease) and completed (their move
	// applied); switchovers likewise, and those that fell back to an
	// election because the old primary did not answer or the target did
	// not catch up.
	FailoversStarted, FailoversCompleted     int64
	SwitchoversStarted, SwitchoversCompleted int64
	SwitchoverFallbacks                      int64
	// ReplicaChanges counts the replica adds and removes applied while
	// leading; EpochChangesSent the EpochChange messages sent, resends
	// included.
	ReplicaChanges, EpochChangesSent int64
	// RaftSent and RaftReceived count the raft messages among members.
	RaftSent, RaftReceived int64
	// EntriesPersisted and Fsyncs count the raft log's entries written
	// and its synced writes to the engine.
	EntriesPersisted, Fsyncs int64
	// UtilityReports counts the reports received, PlannedMoves the
	// switchovers the planner started.
	UtilityReports, PlannedMoves int64
}

// Node is a member of the configuration service as a node handler
// (package node): it hosts a Member and, while it leads, does the
// leader's work of DESIGN.md section 10: it grants primaries their
// leases, moves the tablets of a primary whose lease lapsed to the
// replica holding the longest prefix (failover), moves a primary on
// request or by plan without loss (switchover), changes replica sets,
// and tells every replica of a tablet its new epoch until it
// acknowledges.
//
// Choices the design leaves open, made here:
//   - The leader acts only once its member is Ready (it applied an
//     entry of its own term) and only while it has heard from a
//     majority of the members within an election timeout (inTouch).
//   - A grant leaves out a tablet in transition, so the old primary's
//     lease on it runs out; a switchover whose old primary never
//     answered therefore moves nothing before the transition's start +
//     Length + Margin.
//   - A high timestamp counts only from a replica that acknowledged
//     the tablet's current epoch (one behind may hold versions the
//     epoch's start rolled back).
//   - A switchover's target must catch up within Lease.Length of the
//     old primary's answer; the Until request is sent once. After a
//     fallback the reply says Behind when another replica won, with
//     the epoch and layout.
//   - A Reconfigure of a tablet already changing, of a node that is no
//     replica, or removing the primary is Invalid; one of an unknown
//     table or tablet NoTable; at a leader out of touch Unavailable.
type Node struct {
	opts    NodeOptions
	env     node.Env
	member  *Member
	metrics Metrics
	// lead is set while the member is ready to lead (Member.Ready), as of
	// the last event; everything below is the leader's and empty
	// otherwise.
	lead   bool
	leases leaseClock
	// seqs is the last LeaseRenew.Seq received from each primary.
	seqs        map[wire.NodeID]uint64
	transitions map[wire.TabletRef]*transition
	changes     map[wire.TabletRef]*requester
	notices     map[wire.TabletRef]*notice
	planner     *Planner
	// heard is when each other member was last heard from.
	heard map[wire.NodeID]time.Time
}

// tickTimer drives the member's raft clock and the leader's checks;
// planTimer ends a planner window; safeTimer moves a failover on at the
// end of the old primary's lease (transition.safeAt), not up to a tick
// later.
type (
	tickTimer struct{}
	planTimer struct{}
	safeTimer struct{ ref wire.TabletRef }
)

// requester is whoever sent a Reconfigure the leader answers once the
// change applied.
type requester struct {
	from wire.NodeID
	req  uint64
}

// NewNode returns a node with opts (EnsureDefaults applied); Start
// validates them.
func NewNode(opts NodeOptions) *Node {
	return &Node{opts: opts.EnsureDefaults()}
}

// Start recovers the member from env's engine and starts its clock.
func (n *Node) Start(env node.Env) error {
	if err := n.opts.Validate(); err != nil {
		return err
	}
	n.env = env
	n.leases = leaseClock{opts: n.opts.Lease}
	n.seqs = map[wire.NodeID]uint64{}
	n.transitions = map[wire.TabletRef]*transition{}
	n.changes = map[wire.TabletRef]*requester{}
	n.notices = map[wire.TabletRef]*notice{}
	n.heard = map[wire.NodeID]time.Time{}
	n.member = NewMember(n.opts.Member)
	if err := n.member.Start(env, n.sendRaft, n.applied); err != nil {
		return err
	}
	env.After(n.opts.Member.Tick, tickTimer{})
	if n.opts.Plan {
		env.After(n.opts.Planner.Window, planTimer{})
	}
	return nil
}

// Receive handles one message.
func (n *Node) Receive(from wire.NodeID, m wire.Msg) {
	switch m := m.(type) {
	case *wire.ConfigRaft:
		n.stepRaft(from, m)
	case *wire.LeaseRenew:
		n.renew(from, m)
	case *wire.HighReply:
		n.highReply(from, m)
	case *wire.EpochAck:
		n.epochAck(from, m)
	case *wire.Reconfigure:
		n.reconfigure(from, m)
	case *wire.UtilityReport:
		n.utilityReport(from, m)
	default:
		n.env.Logger().Warn("config: unexpected message", "from", from, "type", fmt.Sprintf("%T", m))
	}
}

// Fire handles a timer.
func (n *Node) Fire(timer any) {
	switch t := timer.(type) {
	case tickTimer:
		n.env.After(n.opts.Member.Tick, tickTimer{})
		n.tick()
	case planTimer:
		n.env.After(n.opts.Planner.Window, planTimer{})
		n.endWindow()
	case safeTimer:
		now := n.env.Now()
		if tr := n.transitions[t.ref]; tr != nil && n.lead && n.inTouch(now) {
			n.progress(tr, now)
		}
	default:
		n.env.Logger().Warn("config: unexpected timer", "type", fmt.Sprintf("%T", timer))
	}
}

// Metrics returns a snapshot of the node's counters.
func (n *Node) Metrics() Metrics {
	m := n.metrics
	m.Leader, m.Term, m.Applied = n.lead, n.member.Term(), n.member.Applied()
	m.EntriesPersisted, m.Fsyncs = n.member.LogMetrics()
	return m
}

func (n *Node) sendRaft(to wire.NodeID, m raftpb.Message) {
	data, err := m.Marshal()
	if err != nil {
		n.env.Logger().Error("config: encoding a raft message", "to", to, "err", err)
		return
	}
	n.metrics.RaftSent++
	n.env.Send(to, &wire.ConfigRaft{Data: data})
}

func (n *Node) stepRaft(from wire.NodeID, m *wire.ConfigRaft) {
	if n.member.raftID(from) == 0 {
		n.env.Logger().Warn("config: a raft message from a node that is no member", "from", from)
		return
	}
	var msg raftpb.Message
	if err := msg.Unmarshal(m.Data); err != nil {
		n.env.Logger().Warn("config: decoding a raft message", "from", from, "err", err)
		return
	}
	n.metrics.RaftReceived++
	n.heard[from] = n.env.Now()
	n.check(n.member.Step(msg))
}

// tick advances raft's clock and, at the leader, starts the failovers
// of lapsed leases, moves transitions on and sends again what was not
// answered.
func (n *Node) tick() {
	n.check(n.member.Tick())
	if !n.lead {
		return
	}
	now := n.env.Now()
	if !n.inTouch(now) {
		return
	}
	n.startFailovers(now)
	for _, ref := range sortedRefs(n.transitions) {
		if tr := n.transitions[ref]; tr != nil {
			n.resendHighs(tr, now)
			n.progress(tr, now)
		}
	}
	n.resendNotices(now)
}

// inTouch reports whether the leader has heard from a majority of the
// members within an election timeout. Raft's own check of it
// (CheckQuorum) counts on raft's election timer, which the member does
// not use (member.go); without it, a leader cut off from the other
// members would lead on, see every lease lapse and fence the replicas
// it still reaches with HighRequests, though its moves can never
// commit. It waits instead, until it hears from them again or learns of
// a newer term.
func (n *Node) inTouch(now time.Time) bool {
	timeout := time.Duration(n.opts.Member.ElectionTicks) * n.opts.Member.Tick
	heard := 1 // itself
	for _, v := range n.opts.Member.Voters {
		if at, ok := n.heard[v]; ok && v != n.env.ID() && now.Sub(at) < timeout {
			heard++
		}
	}
	return heard > len(n.opts.Member.Voters)/2
}

// check logs a member's failure (of its engine, or raft's) and notices
// a change of leadership after each member event.
func (n *Node) check(err error) {
	if err != nil {
		n.env.Logger().Error("config: raft member", "err", err)
	}
	n.notice()
}

// propose proposes c; a proposal raft drops (no leader known, or a
// leadership transfer) is logged and left to the caller's retry.
func (n *Node) propose(c Command) bool {
	err := n.member.Propose(c)
	if err != nil {
		n.env.Logger().Warn("config: proposal dropped", "op", c.Op, "table", c.Table, "err", err)
	}
	n.notice()
	return err == nil
}

// notice starts or ends the leader's work when the member's readiness to
// lead changed.
func (n *Node) notice() {
	switch ready := n.member.Ready(); {
	case ready && !n.lead:
		n.becomeLeader()
	case !ready && n.lead:
		n.stepDown()
	}
}

// becomeLeader starts a leader's view of the leases (every primary's
// counted from the last renewal this member applied, leaseClock) and
// tells the replicas of every tablet its epoch again, in case they
// missed it or wait behind a fence of a transition given up.
func (n *Node) becomeLeader() {
	n.lead = true
	now := n.env.Now()
	st := n.member.State()
	n.leases.lead(now, st.Primaries())
	n.planner = NewPlanner(n.opts.Planner)
	n.env.Logger().Info("config: leading", "term", n.member.Term(), "applied", n.member.Applied())
	for _, name := range slices.Sorted(maps.Keys(st.Tables)) {
		t := st.Tables[name]
		for i, tb := range t.Layout.Tablets {
			// Every tablet, moved or not: a replica fenced by a
			// transition an earlier leader gave up lifts its fence
			// (EpochChange.Term).
			n.announce(t, i, tb.Replicas(), now)
		}
	}
}

// stepDown drops the leader's work; whoever waits for a change hears
// NotLeader.
func (n *Node) stepDown() {
	n.lead = false
	leader := n.member.Leader()
	for _, ref := range sortedRefs(n.transitions) {
		if r := n.transitions[ref].reply; r != nil {
			n.env.Send(r.from, &wire.ReconfigureReply{Req: r.req, Code: wire.NotLeader, Leader: leader})
		}
	}
	for _, ref := range sortedRefs(n.changes) {
		r := n.changes[ref]
		n.env.Send(r.from, &wire.ReconfigureReply{Req: r.req, Code: wire.NotLeader, Leader: leader})
	}
	clear(n.seqs)
	clear(n.transitions)
	clear(n.changes)
	clear(n.notices)
	n.leases.ends, n.planner = nil, nil
	n.env.Logger().Info("config: no longer leading", "term", n.member.Term(), "leader", leader)
}

// applied is told of every command the member applied, and of every
// snapshot it restored.
func (n *Node) applied(a Applied) {
	switch {
	case a.Restored:
		n.leases.restored(n.member.State().Primaries(), a.Held)
	case a.Err == nil:
		n.leases.applied(a.Command, a.Held)
	}
	n.notice()
	if !n.lead || a.Restored {
		return
	}
	c := a.Command
	if a.Err != nil {
		n.refused(c, a.Err)
		return
	}
	switch c.Op {
	case OpCreate:
		for _, tb := range c.Layout.Tablets {
			n.leases.track(tb.Primary, n.env.Now())
		}
	case OpRenew:
		n.grant(c.Node, a.Held)
	case OpMove:
		n.moved(c, a.Held)
	case OpReplicas:
		n.changed(c, n.env.Now())
	}
}

// refused ends the transition or change whose command the state refused
// (the tablet moved meanwhile, or the change was invalid).
func (n *Node) refused(c Command, err error) {
	n.env.Logger().Info("config: command refused", "op", c.Op, "table", c.Table, "tablet", c.Tablet, "err", err)
	ref, ok := n.ref(c.Table, c.Tablet)
	if !ok {
		return
	}
	var r *requester
	switch c.Op {
	case OpMove:
		tr := n.transitions[ref]
		if tr == nil || !tr.proposed {
			return
		}
		r = tr.reply
		delete(n.transitions, ref)
	case OpReplicas:
		r = n.changes[ref]
		delete(n.changes, ref)
	}
	if r != nil {
		n.env.Send(r.from, &wire.ReconfigureReply{Req: r.req, Code: wire.Invalid})
	}
}

// ref names a tablet of the state's table by its layout's ID.
func (n *Node) ref(table string, tablet int) (wire.TabletRef, bool) {
	t, ok := n.member.State().Tables[table]
	if !ok || tablet < 0 || tablet >= len(t.Layout.Tablets) {
		return wire.TabletRef{}, false
	}
	return wire.TabletRef{Table: t.Layout.ID, Tablet: int32(tablet)}, true
}

func sortedRefs[V any](m map[wire.TabletRef]V) []wire.TabletRef {
	return slices.SortedFunc(maps.Keys(m), func(a, b wire.TabletRef) int {
		return cmp.Or(cmp.Compare(a.Table, b.Table), cmp.Compare(a.Tablet, b.Tablet))
	})
}

// TabletStatus is one tablet as the service records it.
type TabletStatus struct {
	Primary     wire.NodeID   `json:"primary"`
	Secondaries []wire.NodeID `json:"secondaries,omitempty"`
	Epoch       uint64        `json:"epoch"`
	// Start is the high timestamp the primary started its epoch from.
	Start hlc.Timestamp `json:"start,omitzero"`
	// Moving is set while this node, leading, moves the tablet's primary
	// or changes its replicas.
	Moving bool `json:"moving,omitempty"`
}

// TableStatus is one table as the service records it.
type TableStatus struct {
	Name    string         `json:"name"`
	ID      uint64         `json:"id"`
	Tablets []TabletStatus `json:"tablets"`
}

// Status is what a node knows of the service: whether it leads, whom it
// takes for the leader, and the tables as of its last applied command,
// in name order.
type Status struct {
	Leader  wire.NodeID   `json:"leader,omitempty"`
	Leading bool          `json:"leading"`
	Term    uint64        `json:"term"`
	Applied uint64        `json:"applied"`
	Tables  []TableStatus `json:"tables,omitempty"`
}

// Status returns the node's view of the service.
func (n *Node) Status() Status {
	st := n.member.State()
	s := Status{Leader: n.member.Leader(), Leading: n.lead, Term: n.member.Term(), Applied: n.member.Applied()}
	for _, name := range slices.Sorted(maps.Keys(st.Tables)) {
		t := st.Tables[name]
		ts := TableStatus{Name: name, ID: t.Layout.ID}
		for i, tb := range t.Layout.Tablets {
			ref := wire.TabletRef{Table: t.Layout.ID, Tablet: int32(i)}
			ts.Tablets = append(ts.Tablets, TabletStatus{
				Primary: tb.Primary, Secondaries: slices.Clone(tb.Secondaries), Epoch: t.Epochs[i], Start: t.Start(i),
				Moving: n.transitions[ref] != nil || n.changes[ref] != nil,
			})
		}
		s.Tables = append(s.Tables, ts)
	}
	return s
}
