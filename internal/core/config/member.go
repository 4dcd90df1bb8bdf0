package config

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"go.etcd.io/raft/v3/tracker"

	"github.com/cosla/cosla/internal/core/node"
	"github.com/cosla/cosla/internal/core/wire"
)

// MemberOptions configures a Member. The zero value of every field but
// Voters means its default.
type MemberOptions struct {
	// Voters are the service's members, the same set at every member: 1,
	// 3 or 5 nodes (cluster up and cluster plan name one per site).
	Voters []wire.NodeID
	// Tick is raft's tick. Default 100ms.
	Tick time.Duration
	// HeartbeatTicks is how often the leader sends heartbeats, in ticks.
	// Default 1.
	HeartbeatTicks int
	// ElectionTicks is how long a member waits without hearing a leader
	// before it campaigns, at the least. Default 10, so 1s: more than
	// twice the pileus4 WAN's longest round trip (435ms).
	ElectionTicks int
	// StaggerTicks is how much longer each voter waits than the one
	// before it in name order, plus a draw of up to a third of it.
	// Default 6, so 0.6s: two members that campaigned within one
	// message's flight of each other (217ms on pileus4's longest link)
	// would each win the other's pre-vote and split the vote, and wait
	// again; staggered, the first that hears no leader wins in one
	// round.
	StaggerTicks int
	// SnapshotEvery is how many applied entries the log keeps before it
	// is replaced by a snapshot of the state. Default 1,000.
	SnapshotEvery uint64
}

// EnsureDefaults returns a copy of o with every unset field given its
// default.
func (o MemberOptions) EnsureDefaults() MemberOptions {
	if o.Tick == 0 {
		o.Tick = 100 * time.Millisecond
	}
	if o.HeartbeatTicks == 0 {
		o.HeartbeatTicks = 1
	}
	if o.ElectionTicks == 0 {
		o.ElectionTicks = 10
	}
	if o.StaggerTicks == 0 {
		o.StaggerTicks = 6
	}
	if o.SnapshotEvery == 0 {
		o.SnapshotEvery = 1000
	}
	return o
}

// Validate names the first invalid field.
func (o MemberOptions) Validate() error {
	switch {
	case len(o.Voters) != 1 && len(o.Voters) != 3 && len(o.Voters) != 5:
		return fmt.Errorf("config: %d voters; want 1, 3 or 5", len(o.Voters))
	case len(slices.Compact(slices.Sorted(slices.Values(o.Voters)))) != len(o.Voters):
		return fmt.Errorf("config: voters %v name a node twice", o.Voters)
	case o.Tick < 0:
		return fmt.Errorf("config: tick %v is negative", o.Tick)
	case o.HeartbeatTicks < 0 || o.ElectionTicks <= o.HeartbeatTicks:
		return fmt.Errorf("config: election ticks %d must exceed heartbeat ticks %d", o.ElectionTicks, o.HeartbeatTicks)
	case o.StaggerTicks < 0:
		return fmt.Errorf("config: stagger ticks %d is negative", o.StaggerTicks)
	}
	return nil
}

// A Member is one replica of the configuration service: a raft RawNode
// whose log holds Commands, applied in order to a State. It is driven by
// its node's events: Tick every Options.Tick, Step for each raft message
// received, Propose for a command; each persists, sends and applies what
// raft has ready before it returns.
//
// Raft's own election timer draws from a random source of its own, which
// would make simulated runs unrepeatable, so the member gives raft an
// election timeout it never reaches and campaigns itself, after a quiet
// spell staggered by its place among the voters, with a little drawn
// from the node's seeded source (DESIGN.md section 10; StaggerTicks).
type Member struct {
	opts MemberOptions
	// voters are opts.Voters in name order: raft IDs are places in it.
	voters []wire.NodeID
	env    node.Env
	send   func(to wire.NodeID, m raftpb.Message)
	apply  func(Applied)

	rn    *raft.RawNode
	log   *raftLog
	state State
	// applied is the index of the last entry applied to state, and
	// appliedTerm its term; snapshotAt the index of the state's last
	// snapshot.
	applied, appliedTerm, snapshotAt uint64
	// quiet counts the ticks since a leader was last heard (or since the
	// last campaign), and campaignAt is the count at which to campaign;
	// tries counts the campaigns since a leader was last heard.
	quiet, campaignAt, tries int
	// ticks counts every Tick; snapshots holds, per follower (raft ID),
	// the tick at which a snapshot was last sent to it.
	ticks     int
	snapshots map[uint64]int
	// deferred holds the pre-votes held back (holdPreVote), and
	// rejected records that a voter rejected the pre-campaign under way.
	deferred []raftpb.Message
	rejected bool
	// held holds when the member appended each entry it has not
	// applied yet (Applied.Held).
	held map[uint64]time.Time
}

// Applied is what a member tells its node of each command it applied,
// and of each snapshot that replaced its state.
type Applied struct {
	Index   uint64
	Command Command
	// Err is the State's refusal of the command, if it refused it.
	Err error
	// Held is when the member first held the command, by its clock:
	// when it appended the entry to its log (a leader, when it proposed
	// it). Whatever asked for the command (a primary's renewal) did so
	// before then, so a lease the command grants counts from before
	// Held (leaseClock). An entry the member recovered from its engine
	// at a restart, which it cannot date, is held from when it applies.
	Held time.Time
	// Restored: a snapshot replaced the state, with every command up to
	// Index, at Held; Command is empty.
	Restored bool
}

// neverElect is the election timeout raft is given: a member campaigns
// by its own timer instead.
const neverElect = 1 << 30

// NewMember returns a member; Start starts it.
func NewMember(opts MemberOptions) *Member {
	return &Member{opts: opts.EnsureDefaults(), voters: slices.Sorted(slices.Values(opts.Voters))}
}

// Start recovers the member from env's engine. send carries a raft
// message to another member; apply, if set, is told of every command
// applied and every snapshot restored.
func (m *Member) Start(env node.Env, send func(to wire.NodeID, msg raftpb.Message), apply func(Applied)) error {
	if err := m.opts.Validate(); err != nil {
		return err
	}
	if m.raftID(env.ID()) == raft.None {
		return fmt.Errorf("config: %s is not one of the voters %v", env.ID(), m.opts.Voters)
	}
	m.env, m.send, m.apply = env, send, apply
	l, err := openLog(env.Engine(), m.boot())
	if err != nil {
		return err
	}
	snap, err := l.mem.Snapshot()
	if err != nil {
		return err
	}
	if err := m.state.Restore(snap.Data); err != nil {
		return err
	}
	m.log, m.applied, m.appliedTerm, m.snapshotAt = l, snap.Metadata.Index, snap.Metadata.Term, snap.Metadata.Index
	m.rn, err = raft.NewRawNode(&raft.Config{
		ID:              m.raftID(env.ID()),
		ElectionTick:    neverElect,
		HeartbeatTick:   m.opts.HeartbeatTicks,
		Storage:         l.mem,
		Applied:         m.applied,
		MaxSizePerMsg:   1 << 20,
		MaxInflightMsgs: 64,
		PreVote:         true,
		Logger:          raftLogger{env.Logger()},
	})
	if err != nil {
		return fmt.Errorf("config: starting raft: %w", err)
	}
	m.campaignAt = m.drawQuiet(env.Rand())
	if len(m.opts.Voters) == 1 || (m.rn.BasicStatus().Term <= 1 && m.raftID(env.ID()) == 1) {
		// A new service's first voter, and the one voter of a service
		// of one, campaign at their first tick, so that the primaries'
		// leases wait a round trip, not a quiet spell: no other member
		// can be leading then.
		m.campaignAt = 1
	}
	m.snapshots, m.held = map[uint64]int{}, map[uint64]time.Time{}
	return m.flush()
}

// boot is the log's first snapshot: the voters at index 1, term 1.
func (m *Member) boot() raftpb.Snapshot {
	var cs raftpb.ConfState
	for _, v := range m.opts.Voters {
		cs.Voters = append(cs.Voters, m.raftID(v))
	}
	return raftpb.Snapshot{Metadata: raftpb.SnapshotMetadata{Index: 1, Term: 1, ConfState: cs}}
}

// raftID is a voter's raft ID: its place among the voters in name order,
// from 1; raft.None for a node that is not a voter.
func (m *Member) raftID(n wire.NodeID) uint64 {
	return uint64(slices.Index(m.voters, n) + 1)
}

func (m *Member) nodeID(id uint64) wire.NodeID {
	return m.voters[id-1]
}

// drawQuiet is how many ticks without a leader the member waits before
// it campaigns (StaggerTicks), and ElectionTicks more for each campaign
// since it last heard one: a campaign whose round trips outlast the wait
// would otherwise be overtaken by the next, on a slow enough network
// for ever.
func (m *Member) drawQuiet(r *rand.Rand) int {
	stagger := m.opts.StaggerTicks
	return (1+m.tries)*m.opts.ElectionTicks + int(m.raftID(m.env.ID())-1)*stagger + r.IntN(stagger/3+1)
}

// heardLeader restarts the quiet count, and the waits from the first, on
// news of a leader (or leading).
func (m *Member) heardLeader() {
	m.quiet = 0
	if m.tries > 0 {
		m.tries = 0
		m.campaignAt = m.drawQuiet(m.env.Rand())
	}
}

// Tick advances raft's clock by one tick and campaigns after a quiet
// spell.
func (m *Member) Tick() error {
	m.rn.Tick()
	m.ticks++
	if m.IsLeader() {
		m.heardLeader()
		m.retrySnapshots()
	} else if m.quiet++; m.quiet >= m.campaignAt {
		m.tries++
		m.quiet, m.campaignAt, m.rejected = 0, m.drawQuiet(m.env.Rand()), false
		if err := m.stepDeferred(); err != nil {
			return err
		}
		if err := m.rn.Campaign(); err != nil {
			return err
		}
	}
	return m.flush()
}

// Step hands raft a message from another member.
func (m *Member) Step(msg raftpb.Message) error {
	switch msg.Type {
	case raftpb.MsgApp, raftpb.MsgHeartbeat, raftpb.MsgSnap:
		// Only a leader sends these: a leader is heard.
		m.heardLeader()
	case raftpb.MsgPreVote:
		if m.holdPreVote(msg) {
			return nil
		}
	case raftpb.MsgPreVoteResp:
		m.rejected = m.rejected || msg.Reject
	}
	if err := m.step(msg); err != nil {
		return err
	}
	if len(m.deferred) > 0 && (msg.Type == raftpb.MsgPreVoteResp && msg.Reject || m.rn.BasicStatus().RaftState != raft.StatePreCandidate) {
		if err := m.stepDeferred(); err != nil {
			return err
		}
	}
	return m.flush()
}

// holdPreVote holds back, during the member's first pre-campaign since it
// last heard a leader, a pre-vote of a voter after it in name order:
// the two campaign in turn (StaggerTicks), but a network slower than
// the stagger would have each grant the other's pre-vote and split the
// real vote, and both wait again. The held pre-vote is answered once
// the pre-campaign ends (the member campaigns, or hears a leader or a
// newer term) or a voter rejects it (its log is behind: the later
// voter may win), at the latest at the next campaign. Once a voter has
// rejected it, the member holds none: held until its next campaign, a
// later voter's pre-vote cost a second round of campaigns (a member
// restarted with a log behind, then its leader cut off: 6.1 s to a new
// leader where 3.5 s suffice, TestARejectedPreCampaignHoldsNoPreVote).
func (m *Member) holdPreVote(msg raftpb.Message) bool {
	if m.tries != 1 || m.rejected || msg.From <= m.raftID(m.env.ID()) || m.rn.BasicStatus().RaftState != raft.StatePreCandidate {
		return false
	}
	m.deferred = append(m.deferred, msg)
	return true
}

// stepDeferred hands raft the pre-votes held back.
func (m *Member) stepDeferred() error {
	held := m.deferred
	m.deferred = nil
	for _, msg := range held {
		if err := m.step(msg); err != nil {
			return err
		}
	}
	return nil
}

// step hands raft one message.
func (m *Member) step(msg raftpb.Message) error {
	err := m.rn.Step(msg)
	if errors.Is(err, raft.ErrStepPeerNotFound) {
		err = nil // a reply from a node no longer tracked: nothing to do
	}
	return err
}

// Propose appends c to the log, if this member knows a leader; raft
// forwards a follower's proposal to it. It returns raft.ErrProposalDropped
// when no leader is known; a proposal may also be lost with a leader
// change, so a proposer watches the applied commands and retries.
func (m *Member) Propose(c Command) error {
	if err := m.rn.Propose(c.Encode()); err != nil {
		return err
	}
	return m.flush()
}

// IsLeader reports whether this member leads.
func (m *Member) IsLeader() bool { return m.rn.BasicStatus().RaftState == raft.StateLeader }

// Ready reports whether this member leads and has applied an entry of
// its own term: raft commits the entries of earlier terms it holds with
// the first of its own, so from then on its state holds every command an
// earlier leader proposed that will ever commit. A Node does a leader's
// work (counts leases, tells replicas their epochs, moves primaries) only
// when ready, from a state no earlier leader's move can still change.
func (m *Member) Ready() bool { return m.IsLeader() && m.appliedTerm == m.Term() }

// Leader is the member this one believes leads, or "" if none.
func (m *Member) Leader() wire.NodeID {
	if lead := m.rn.BasicStatus().Lead; lead != raft.None {
		return m.nodeID(lead)
	}
	return ""
}

// Term is raft's current term.
func (m *Member) Term() uint64 { return m.rn.BasicStatus().Term }

// State is the state as of the last applied command. The caller must not
// change it.
func (m *Member) State() *State { return &m.state }

// Applied is the index of the last applied command.
func (m *Member) Applied() uint64 { return m.applied }

// LogMetrics counts what the member's log wrote to its engine since it
// started: entries persisted, and synced writes (each one fsync).
func (m *Member) LogMetrics() (entries, syncs int64) { return m.log.entries, m.log.syncs }

// flush does what raft has ready: persist, then send, then apply
// (raft's Ready contract, synchronous storage writes).
func (m *Member) flush() error {
	for m.rn.HasReady() {
		rd := m.rn.Ready()
		if err := m.log.save(rd.HardState, rd.Entries, rd.Snapshot); err != nil {
			return err
		}
		now := m.env.Now()
		for _, e := range rd.Entries {
			m.held[e.Index] = now
		}
		if !raft.IsEmptySnap(rd.Snapshot) {
			if err := m.restore(rd.Snapshot, now); err != nil {
				return err
			}
		}
		for _, msg := range rd.Messages {
			if msg.Type == raftpb.MsgSnap {
				m.snapshots[msg.To] = m.ticks
			}
			m.send(m.nodeID(msg.To), msg)
		}
		for _, e := range rd.CommittedEntries {
			m.applyEntry(e)
		}
		m.rn.Advance(rd)
		if err := m.maybeCompact(); err != nil {
			return err
		}
	}
	return nil
}

// retrySnapshots reports as failed a snapshot that has not brought its
// follower out of raft's snapshot state within an election timeout. Raft
// sends such a follower nothing more until the snapshot is reported, and
// a snapshot lost on the way (the follower crashed, the network dropped
// it) is reported by nobody else: the follower would never catch up.
func (m *Member) retrySnapshots() {
	if len(m.snapshots) == 0 {
		return
	}
	progress := m.rn.Status().Progress
	for _, id := range slices.Sorted(maps.Keys(m.snapshots)) {
		pr, ok := progress[id]
		switch {
		case !ok || pr.State != tracker.StateSnapshot:
			delete(m.snapshots, id)
		case m.ticks-m.snapshots[id] >= m.opts.ElectionTicks:
			delete(m.snapshots, id)
			m.rn.ReportSnapshot(id, raft.SnapshotFailure)
		}
	}
}

// restore replaces the state with a snapshot's, received at now.
func (m *Member) restore(snap raftpb.Snapshot, now time.Time) error {
	if err := m.state.Restore(snap.Data); err != nil {
		return err
	}
	m.applied, m.snapshotAt = snap.Metadata.Index, snap.Metadata.Index
	m.appliedTerm = snap.Metadata.Term
	maps.DeleteFunc(m.held, func(i uint64, _ time.Time) bool { return i <= m.applied })
	if m.apply != nil {
		m.apply(Applied{Index: m.applied, Held: now, Restored: true})
	}
	return nil
}

func (m *Member) applyEntry(e raftpb.Entry) {
	if e.Index <= m.applied {
		return
	}
	m.applied, m.appliedTerm = e.Index, e.Term
	held, ok := m.held[e.Index]
	if !ok {
		held = m.env.Now()
	}
	delete(m.held, e.Index)
	if e.Type != raftpb.EntryNormal || len(e.Data) == 0 {
		return // a new leader's empty entry; the voters never change
	}
	c, err := DecodeCommand(e.Data)
	if err == nil {
		err = m.state.Apply(c)
	}
	if m.apply != nil {
		m.apply(Applied{Index: e.Index, Command: c, Err: err, Held: held})
	}
}

func (m *Member) maybeCompact() error {
	if m.applied-m.snapshotAt < m.opts.SnapshotEvery {
		return nil
	}
	if err := m.log.compact(m.applied, m.boot().Metadata.ConfState, m.state.Snapshot()); err != nil {
		return err
	}
	m.snapshotAt = m.applied
	return nil
}

// raftLogger writes raft's log through the node's logger: informational
// lines at debug level, warnings and errors as they are.
type raftLogger struct{ l *slog.Logger }

func (r raftLogger) Debug(v ...any)              { r.l.Debug(fmt.Sprint(v...)) }
func (r raftLogger) Debugf(f string, v ...any)   { r.l.Debug(fmt.Sprintf(f, v...)) }
func (r raftLogger) Info(v ...any)               { r.l.Debug(fmt.Sprint(v...)) }
func (r raftLogger) Infof(f string, v ...any)    { r.l.Debug(fmt.Sprintf(f, v...)) }
func (r raftLogger) Warning(v ...any)            { r.l.Warn(fmt.Sprint(v...)) }
func (r raftLogger) Warningf(f string, v ...any) { r.l.Warn(fmt.Sprintf(f, v...)) }
func (r raftLogger) Error(v ...any)              { r.l.Error(fmt.Sprint(v...)) }
func (r raftLogger) Errorf(f string, v ...any)   { r.l.Error(fmt.Sprintf(f, v...)) }
func (r raftLogger) Fatal(v ...any)              { r.Panic(v...) }
func (r raftLogger) Fatalf(f string, v ...any)   { r.Panicf(f, v...) }
func (r raftLogger) Panic(v ...any)              { panic(fmt.Sprint(v...)) }
func (r raftLogger) Panicf(f string, v ...any)   { panic(fmt.Sprintf(f, v...)) }
