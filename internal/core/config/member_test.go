package config

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/cosla/cosla/internal/core/storage"
	"github.com/cosla/cosla/internal/core/wire"
)

// group runs members over a lossless, ordered in-memory network, one
// message or tick at a time, so a run is a function of its seed.
type group struct {
	t       *testing.T
	seed    uint64
	opts    MemberOptions
	members map[wire.NodeID]*Member
	engines map[wire.NodeID]*storage.Mem
	queue   []envelope
	cut     map[wire.NodeID]bool // a cut member sends and receives nothing
	trace   []string
	// leaders records, per term, the members that led in it.
	leaders map[uint64][]wire.NodeID
	// snapshots counts the snapshots delivered.
	snapshots int
}

type envelope struct {
	to  wire.NodeID
	msg raftpb.Message
}

func newGroup(t *testing.T, seed uint64, voters ...wire.NodeID) *group {
	g := &group{
		t: t, seed: seed, opts: MemberOptions{Voters: voters, SnapshotEvery: 20},
		members: map[wire.NodeID]*Member{}, engines: map[wire.NodeID]*storage.Mem{},
		cut: map[wire.NodeID]bool{}, leaders: map[uint64][]wire.NodeID{},
	}
	for _, v := range voters {
		g.engines[v] = storage.NewMem()
		g.start(v)
	}
	return g
}

// start starts (or restarts) member id on its engine.
func (g *group) start(id wire.NodeID) {
	g.t.Helper()
	m := NewMember(g.opts)
	env := testEnv{id: id, engine: g.engines[id], rand: rand.New(rand.NewPCG(g.seed, uint64(len(g.trace))<<8|uint64(slices.Index(g.opts.Voters, id))))}
	send := func(to wire.NodeID, msg raftpb.Message) {
		if !g.cut[id] && !g.cut[to] {
			g.queue = append(g.queue, envelope{to, msg})
		}
	}
	applied := func(a Applied) {
		if !a.Restored {
			g.trace = append(g.trace, fmt.Sprintf("%s applied %d %s %v", id, a.Index, a.Command.Op, a.Err))
		}
	}
	if err := m.Start(env, send, applied); err != nil {
		g.t.Fatalf("starting %s: %v", id, err)
	}
	g.members[id] = m
}

// crash loses id's volatile state and its unsynced writes.
func (g *group) crash(id wire.NodeID) {
	g.engines[id].Crash()
	delete(g.members, id)
}

// run ticks every member and delivers the messages that follow, n times.
func (g *group) run(n int) {
	g.t.Helper()
	for range n {
		for _, id := range slices.Sorted(mapKeys(g.members)) {
			if err := g.members[id].Tick(); err != nil {
				g.t.Fatalf("%s tick: %v", id, err)
			}
		}
		g.deliver()
		g.note()
	}
}

func (g *group) deliver() {
	g.t.Helper()
	for len(g.queue) > 0 {
		e := g.queue[0]
		g.queue = g.queue[1:]
		m, ok := g.members[e.to]
		if !ok || g.cut[e.to] {
			continue
		}
		if e.msg.Type == raftpb.MsgSnap {
			g.snapshots++
		}
		if err := m.Step(e.msg); err != nil {
			g.t.Fatalf("%s step %v: %v", e.to, e.msg.Type, err)
		}
	}
}

// note records who leads in which term, and fails on two leaders of one
// term (raft's election safety).
func (g *group) note() {
	for _, id := range slices.Sorted(mapKeys(g.members)) {
		m := g.members[id]
		if !m.IsLeader() {
			continue
		}
		term := m.Term()
		if !slices.Contains(g.leaders[term], id) {
			g.leaders[term] = append(g.leaders[term], id)
			g.trace = append(g.trace, fmt.Sprintf("%s leads term %d", id, term))
		}
		if len(g.leaders[term]) > 1 {
			g.t.Fatalf("term %d has leaders %v", term, g.leaders[term])
		}
	}
}

func (g *group) leader() wire.NodeID {
	for _, id := range slices.Sorted(mapKeys(g.members)) {
		if !g.cut[id] && g.members[id].IsLeader() {
			return id
		}
	}
	return ""
}

// propose proposes c at id and runs until every live member applied it.
func (g *group) propose(id wire.NodeID, c Command) {
	g.t.Helper()
	if err := g.members[id].Propose(c); err != nil {
		g.t.Fatalf("propose at %s: %v", id, err)
	}
	g.deliver()
	g.run(3)
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

type testEnv struct {
	id     wire.NodeID
	engine storage.Engine
	rand   *rand.Rand
}

func (e testEnv) ID() wire.NodeID            { return e.id }
func (e testEnv) Now() time.Time             { return time.Unix(0, 0) }
func (e testEnv) WallNanos() int64           { return 0 }
func (e testEnv) Send(wire.NodeID, wire.Msg) {}
func (e testEnv) After(time.Duration, any)   {}
func (e testEnv) Rand() *rand.Rand           { return e.rand }
func (e testEnv) Engine() storage.Engine     { return e.engine }
func (e testEnv) Logger() *slog.Logger       { return slog.New(slog.DiscardHandler) }

var voters3 = []wire.NodeID{"a/cfg", "b/cfg", "c/cfg"}

func table(name string, id uint64) wire.Layout {
	return wire.Layout{Name: name, ID: id, Tablets: []wire.Tablet{{Primary: "a/r1", Secondaries: []wire.NodeID{"b/r1", "c/r1"}}}}
}

func TestElectsALeaderAndReplicates(t *testing.T) {
	g := newGroup(t, 1, voters3...)
	g.run(40)
	lead := g.leader()
	if lead == "" {
		t.Fatalf("no leader after 40 ticks (2x the longest quiet spell); trace %q", g.trace)
	}
	follower := voters3[(slices.Index(voters3, lead)+1)%3]
	g.propose(follower, Command{Op: OpCreate, Layout: table("t", 7)}) // a follower's proposal is forwarded
	for _, id := range voters3 {
		tb := g.members[id].State().Tables["t"]
		if tb == nil || tb.Layout.ID != 7 || !slices.Equal(tb.Epochs, []uint64{1}) {
			t.Errorf("%s holds %+v, want table t at epoch 1", id, tb)
		}
	}
}

func TestPartitionedLeaderIsReplaced(t *testing.T) {
	g := newGroup(t, 2, voters3...)
	g.run(40)
	old := g.leader()
	g.cut[old] = true
	g.run(40)
	lead := g.leader()
	if lead == "" || lead == old {
		t.Fatalf("leader %q after cutting %s off; trace %q", lead, old, g.trace)
	}
	g.propose(lead, Command{Op: OpCreate, Layout: table("t", 1)})
	g.propose(lead, Command{Op: OpMove, Table: "t", Epoch: 1, Node: "b/r1"})
	if g.members[old].State().Tables["t"] != nil {
		t.Fatalf("the cut-off member applied a command")
	}
	g.cut[old] = false
	g.run(20)
	for _, id := range voters3 {
		tb := g.members[id].State().Tables["t"]
		if tb == nil || tb.Layout.Tablets[0].Primary != "b/r1" || tb.Epochs[0] != 2 {
			t.Errorf("%s holds %+v, want b/r1 primary at epoch 2", id, tb)
		}
	}
	if g.leader() != lead {
		t.Errorf("the returning member took the lead from %s: %s", lead, g.leader())
	}
}

func TestRestartRecoversFromTheEngine(t *testing.T) {
	g := newGroup(t, 3, voters3...)
	g.run(40)
	lead := g.leader()
	for i := range 30 { // past SnapshotEvery: recovery starts from a snapshot
		g.propose(lead, Command{Op: OpRenew, Node: wire.NodeID(fmt.Sprintf("a/r%d", i%2))})
	}
	victim := voters3[(slices.Index(voters3, lead)+1)%3]
	if snap, _, _ := load[raftpb.Snapshot](g.engines[victim], keySnapshot); snap.Metadata.Index <= 1 {
		t.Fatalf("%s holds no snapshot past the first after 30 commands", victim)
	}
	g.crash(victim)
	g.propose(lead, Command{Op: OpRenew, Node: "a/r0"})
	g.start(victim)
	// The last commit index the victim heard need not have been synced
	// (raftLog.mustSync): it recovers every renewal but perhaps the last.
	if got := g.members[victim].State().Leases["a/r1"]; got < 14 || got > 15 {
		t.Errorf("restarted %s recovered %d renewals of a/r1, want 14 or 15", victim, got)
	}
	g.run(10)
	if r0, r1 := g.members[victim].State().Leases["a/r0"], g.members[victim].State().Leases["a/r1"]; r0 != 16 || r1 != 15 {
		t.Errorf("restarted %s caught up to %d renewals of a/r0 and %d of a/r1, want 16 and 15", victim, r0, r1)
	}
}

func TestLaggingMemberCatchesUpBySnapshot(t *testing.T) {
	g := newGroup(t, 4, voters3...)
	g.run(40)
	lead := g.leader()
	lag := voters3[(slices.Index(voters3, lead)+1)%3]
	g.cut[lag] = true
	for range 50 { // the leader compacts its log past what lag holds
		g.propose(lead, Command{Op: OpRenew, Node: "a/r1"})
	}
	g.cut[lag] = false
	g.run(20)
	if got := g.members[lag].State().Leases["a/r1"]; got != 50 {
		t.Errorf("%s holds %d renewals after rejoining, want 50", lag, got)
	}
	if g.snapshots == 0 {
		t.Errorf("%s caught up without a snapshot: the log was not compacted", lag)
	}
}

func TestSameSeedSameRun(t *testing.T) {
	runOnce := func(seed uint64) string {
		g := newGroup(t, seed, voters3...)
		g.run(40)
		g.cut[g.leader()] = true
		g.run(60)
		return strings.Join(g.trace, "\n")
	}
	a, b := runOnce(9), runOnce(9)
	if a != b {
		t.Fatalf("seed 9 gave two runs:\n%s\n---\n%s", a, b)
	}
	if a == "" {
		t.Fatal("the run recorded nothing")
	}
}

func TestMemberOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		opts MemberOptions
		want string
	}{
		{MemberOptions{Voters: []wire.NodeID{"a", "b"}}, "2 voters"},
		{MemberOptions{Voters: []wire.NodeID{"a", "b", "a"}}, "twice"},
		{MemberOptions{Voters: []wire.NodeID{"a"}, HeartbeatTicks: 5, ElectionTicks: 5}, "must exceed"},
	} {
		err := tc.opts.EnsureDefaults().Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%+v) = %v, want an error saying %q", tc.opts, err, tc.want)
		}
	}
	if err := (MemberOptions{Voters: voters3}).EnsureDefaults().Validate(); err != nil {
		t.Errorf("defaults with 3 voters: %v", err)
	}
}
