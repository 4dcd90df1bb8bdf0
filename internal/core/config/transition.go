package config

import (
	"slices"
	"time"

	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/wire"
)

// The leader's side of leases, failover and switchover (DESIGN.md
// section 10; PROTO27 names the messages).

// renew handles a primary's LeaseRenew: the leader records the tables it
// does not know and the renewal, and grants the lease once the renewal
// applied (grant). A member that does not lead names the one it takes
// for the leader.
func (n *Node) renew(from wire.NodeID, m *wire.LeaseRenew) {
	if !n.member.IsLeader() {
		n.env.Send(from, &wire.LeaseGrant{Seq: m.Seq, Code: wire.NotLeader, Leader: n.member.Leader()})
		return
	}
	// The latest, not the highest: a primary that restarted numbers
	// its renewals from 1 again.
	n.seqs[from] = m.Seq
	st := n.member.State()
	for _, l := range m.Layouts {
		if t, ok := st.Tables[l.Name]; !ok {
			n.propose(Command{Op: OpCreate, Layout: l})
		} else if t.Layout.ID != l.ID {
			n.env.Logger().Debug("config: a primary's table has another ID here", "table", l.Name, "from", from, "id", l.ID, "recorded", t.Layout.ID)
		}
	}
	n.propose(Command{Op: OpRenew, Node: from})
}

// grant answers the newest renewal of p, held from held, with the
// tablets the state has p primary of. A tablet in transition is left
// out: its lease must run out (it may be moving away from p).
func (n *Node) grant(p wire.NodeID, held time.Time) {
	n.leases.renewed(p, held)
	seq, ok := n.seqs[p]
	if !ok {
		return // renewed by an earlier leader, which answered it
	}
	st := n.member.State()
	var tablets []wire.TabletEpoch
	for _, te := range st.PrimaryOf(p) {
		ref := wire.TabletRef{Table: st.Tables[te.Table].Layout.ID, Tablet: int32(te.Tablet)}
		if n.transitions[ref] == nil {
			tablets = append(tablets, wire.TabletEpoch{Tablet: ref, Epoch: te.Epoch})
		}
	}
	n.metrics.RenewalsGranted++
	n.env.Send(p, &wire.LeaseGrant{Seq: seq, Tablets: tablets})
}

// transition is a tablet's move to the next epoch under way at the
// leader: a failover (the primary's lease lapsed; the longest prefix of
// a majority wins) or a switchover (a fixed target catches up with the
// old primary first).
type transition struct {
	ref    wire.TabletRef
	table  string
	index  int
	epoch  uint64      // the tablet's epoch; the move is to epoch+1
	tablet wire.Tablet // its replicas when the transition began
	// want is a switchover's target; to is the same until the
	// switchover falls back to an election (then "").
	want, to wire.NodeID
	reply    *requester
	highs    map[wire.NodeID]hlc.Timestamp
	// refused holds the replicas that refused the HighRequest, with
	// their answer; one Behind (catching up) is asked again.
	refused map[wire.NodeID]wire.Code
	// began, when a majority answered, when the old primary answered,
	// and when the HighRequests were last sent.
	began, majorityAt, primaryAt, sentAt time.Time
	// safeAt: a failover, or a switchover that falls back, moves
	// nothing before the old primary's lease has run out (the
	// transition withholds its grants from began on), unless the old
	// primary answered (it is fenced).
	safeAt    time.Time
	untilSent bool
	proposed  bool
}

// startFailovers starts a failover of each tablet of a primary whose
// lease ends within twice the margin, that is not in transition
// already. By then the primary's own count of its lease has ended (it
// stops Margin before the end it asked for, and the leader counts Margin
// past it): fencing the replicas takes nothing from it, and their
// answers (a WAN round trip, up to 435 ms on pileus4) come while the
// leader waits out the margin. The move waits for the lease's end
// (transition.safeAt) unless the old primary answers, fenced.
func (n *Node) startFailovers(now time.Time) {
	st := n.member.State()
	for _, p := range n.leases.lapsed(now.Add(2 * n.opts.Lease.Margin)) {
		tablets := st.PrimaryOf(p)
		if len(tablets) == 0 {
			n.leases.forget(p)
			continue
		}
		for _, te := range tablets {
			t := st.Tables[te.Table]
			if ref := (wire.TabletRef{Table: t.Layout.ID, Tablet: int32(te.Tablet)}); n.transitions[ref] == nil && n.changes[ref] == nil {
				ends := n.leases.ends[p]
				n.env.Logger().Info("config: lease ending; failover", "primary", p, "table", te.Table, "tablet", te.Tablet, "epoch", te.Epoch, "in", ends.Sub(now))
				n.metrics.FailoversStarted++
				n.begin(t, te.Tablet, "", nil, now).safeAt = ends
				n.env.After(ends.Sub(now), safeTimer{ref})
			}
		}
	}
}

// begin starts a transition of t's tablet i: every replica is asked for
// its high timestamp ahead of the next epoch. to is a switchover's
// target ("" for a failover).
func (n *Node) begin(t *Table, i int, to wire.NodeID, reply *requester, now time.Time) *transition {
	tr := &transition{
		ref: wire.TabletRef{Table: t.Layout.ID, Tablet: int32(i)}, table: t.Layout.Name, index: i, epoch: t.Epochs[i],
		tablet: t.Layout.Tablets[i], want: to, to: to, reply: reply,
		highs: map[wire.NodeID]hlc.Timestamp{}, refused: map[wire.NodeID]wire.Code{}, began: now,
	}
	n.transitions[tr.ref] = tr
	n.resendHighs(tr, now)
	return tr
}

// resendHighs asks the replicas that have not answered for their high
// timestamps, at the transition's start and every Lease.Renew after,
// and those that answered Behind: caught up, they count (without them a
// tablet of four replicas, two of them catching up, would never move).
func (n *Node) resendHighs(tr *transition, now time.Time) {
	if tr.proposed || (!tr.sentAt.IsZero() && now.Before(tr.sentAt.Add(n.opts.Lease.Renew))) {
		return
	}
	tr.sentAt = now
	for _, r := range tr.tablet.Replicas() {
		if !tr.answered(r) || tr.refused[r] == wire.Behind {
			n.env.Send(r, &wire.HighRequest{Tablet: tr.ref, Epoch: tr.epoch + 1, Term: n.member.Term()})
		}
	}
}

// answered reports whether replica r answered the transition's
// HighRequest, with its high timestamp or a refusal.
func (tr *transition) answered(r wire.NodeID) bool {
	_, high := tr.highs[r]
	_, refused := tr.refused[r]
	return high || refused
}

// highReply records a replica's high timestamp and moves its transition
// on.
func (n *Node) highReply(from wire.NodeID, m *wire.HighReply) {
	tr := n.transitions[m.Tablet]
	if tr == nil || tr.proposed || m.Epoch != tr.epoch+1 || !slices.Contains(tr.tablet.Replicas(), from) {
		return
	}
	if no := n.notices[m.Tablet]; no != nil && no.msg.Epoch == tr.epoch && slices.Contains(no.waiting, from) {
		// A replica that has not acknowledged the tablet's epoch may
		// hold versions of an older one that the epoch's start rolls
		// back: its high is no prefix of the epoch's log. It is asked
		// again once it knows the epoch.
		return
	}
	now := n.env.Now()
	if m.Code != wire.OK {
		n.env.Logger().Info("config: a replica refused a high request", "replica", from, "table", tr.table, "tablet", tr.index, "code", m.Code)
		tr.refused[from] = m.Code
		n.progress(tr, now)
		return
	}
	hP, primaryAnswered := tr.highs[tr.tablet.Primary]
	if tr.untilSent && from == tr.to && m.High.Less(hP) && primaryAnswered {
		tr.highs[from] = hlc.Max(tr.highs[from], m.High)
		n.fallBack(tr, "the target did not catch up")
		n.progress(tr, now)
		return
	}
	delete(tr.refused, from)
	tr.highs[from] = hlc.Max(tr.highs[from], m.High)
	if from == tr.tablet.Primary && tr.primaryAt.IsZero() {
		tr.primaryAt = now
	}
	if tr.majorityAt.IsZero() && len(tr.highs) > len(tr.tablet.Replicas())/2 {
		tr.majorityAt = now
	}
	n.progress(tr, now)
}

// progress proposes a transition's move once it can be decided.
func (n *Node) progress(tr *transition, now time.Time) {
	if tr.proposed {
		return
	}
	if tr.to != "" {
		n.progressSwitchover(tr, now)
		if tr.to != "" {
			return
		}
	}
	expected := len(tr.tablet.Replicas())
	if !tr.answered(tr.tablet.Primary) && tr.want == "" {
		expected-- // a failover's primary, whose lease lapsed: down or cut off
	}
	if len(tr.highs)+len(tr.refused) < expected && (tr.majorityAt.IsZero() || now.Before(tr.majorityAt.Add(n.opts.Collect))) {
		return // wait for every replica expected, or Collect after a majority
	}
	if tr.primaryAt.IsZero() && now.Before(tr.safeAt) {
		return
	}
	if target, ok := Elect(tr.tablet, tr.highs); ok {
		n.proposeMove(tr, target)
	}
}

// progressSwitchover moves a switchover on: once the old primary
// answered (it accepts no more Puts), the target catches up to its high
// timestamp and takes over. It falls back to an election when the old
// primary does not answer within Collect + 1s, or the target does not
// catch up within a lease length of its answer (the tablet accepts no
// Puts meanwhile, as during a failover).
func (n *Node) progressSwitchover(tr *transition, now time.Time) {
	hP, ok := tr.highs[tr.tablet.Primary]
	if !ok {
		if !now.Before(tr.began.Add(n.opts.Collect + time.Second)) {
			n.fallBack(tr, "the old primary did not answer")
		}
		return
	}
	hT, ok := tr.highs[tr.to]
	switch {
	case ok && !hT.Less(hP):
		n.proposeMove(tr, tr.to)
	case !now.Before(tr.primaryAt.Add(n.opts.Lease.Length)):
		n.fallBack(tr, "the target did not catch up in time")
	case ok && !tr.untilSent:
		tr.untilSent = true
		n.env.Send(tr.to, &wire.HighRequest{Tablet: tr.ref, Epoch: tr.epoch + 1, Until: hP, Term: n.member.Term()})
	}
}

// fallBack turns a switchover into an election among the answers. If
// the old primary never answered, it may still hold a lease: nothing
// moves before that lease has run out by the leader's clock.
func (n *Node) fallBack(tr *transition, why string) {
	n.env.Logger().Info("config: switchover falls back to an election", "table", tr.table, "tablet", tr.index, "to", tr.to, "why", why)
	n.metrics.SwitchoverFallbacks++
	tr.to = ""
	if tr.primaryAt.IsZero() {
		tr.safeAt = tr.began.Add(n.opts.Lease.Length + n.opts.Lease.Margin)
		n.env.After(tr.safeAt.Sub(n.env.Now()), safeTimer{tr.ref})
	}
}

func (n *Node) proposeMove(tr *transition, target wire.NodeID) {
	tr.proposed = true
	c := Command{Op: OpMove, Table: tr.table, Tablet: tr.index, Epoch: tr.epoch, Node: target, Start: tr.highs[target]}
	if !n.propose(c) {
		tr.proposed = false
	}
}

// moved acts on an applied move, held from held: the new primary's
// lease counts from then, the old one's is forgotten if it is primary
// of nothing else, and every replica hears the new epoch.
func (n *Node) moved(c Command, held time.Time) {
	now := n.env.Now()
	st := n.member.State()
	t := st.Tables[c.Table]
	tb := t.Layout.Tablets[c.Tablet]
	ref := wire.TabletRef{Table: t.Layout.ID, Tablet: int32(c.Tablet)}
	n.env.Logger().Info("config: moved", "table", c.Table, "tablet", c.Tablet, "epoch", t.Epochs[c.Tablet], "primary", tb.Primary, "start", c.Start)
	n.leases.renewed(tb.Primary, held)
	for _, r := range tb.Secondaries {
		if len(st.PrimaryOf(r)) == 0 {
			n.leases.forget(r)
		}
	}
	n.announce(t, c.Tablet, tb.Replicas(), now)
	tr := n.transitions[ref]
	if tr == nil {
		return
	}
	delete(n.transitions, ref)
	if tr.want == "" {
		n.metrics.FailoversCompleted++
	} else {
		n.metrics.SwitchoversCompleted++
	}
	if r := tr.reply; r != nil {
		// Behind: the switchover fell back to an election that chose
		// another replica (the target did not catch up in time).
		code := wire.OK
		if tb.Primary != tr.want {
			code = wire.Behind
		}
		n.env.Send(r.from, &wire.ReconfigureReply{Req: r.req, Code: code, Epoch: t.Epochs[c.Tablet], Layout: t.Layout})
	}
}

// notice is an EpochChange the leader sends every Lease.Renew until each
// replica it names acknowledged it.
type notice struct {
	msg     wire.EpochChange
	waiting []wire.NodeID
	sentAt  time.Time
}

// announce tells to (and whoever has not acknowledged the tablet's last
// change yet) t's tablet i's epoch, primary and start.
func (n *Node) announce(t *Table, i int, to []wire.NodeID, now time.Time) {
	ref := wire.TabletRef{Table: t.Layout.ID, Tablet: int32(i)}
	waiting := slices.Clone(to)
	if old := n.notices[ref]; old != nil {
		waiting = append(waiting, old.waiting...)
	}
	slices.Sort(waiting)
	no := &notice{
		msg: wire.EpochChange{Layout: t.Layout, Tablet: int32(i), Epoch: t.Epochs[i], Start: t.Start(i), Earlier: t.EarlierOf(i),
			Term: n.member.Term()},
		waiting: slices.Compact(waiting),
	}
	n.notices[ref] = no
	n.sendNotice(no, now)
}

func (n *Node) sendNotice(no *notice, now time.Time) {
	no.sentAt = now
	for _, r := range no.waiting {
		m := no.msg
		n.metrics.EpochChangesSent++
		n.env.Send(r, &m)
	}
}

func (n *Node) resendNotices(now time.Time) {
	for _, ref := range sortedRefs(n.notices) {
		if no := n.notices[ref]; !now.Before(no.sentAt.Add(n.opts.Lease.Renew)) {
			n.sendNotice(no, now)
		}
	}
}

// epochAck takes a replica off the tablet's notice once it knows the
// notice's epoch, or a newer one.
func (n *Node) epochAck(from wire.NodeID, m *wire.EpochAck) {
	no := n.notices[m.Tablet]
	if no == nil || m.Epoch < no.msg.Epoch {
		return
	}
	no.waiting = slices.DeleteFunc(no.waiting, func(r wire.NodeID) bool { return r == from })
	if len(no.waiting) == 0 {
		delete(n.notices, m.Tablet)
	}
}
