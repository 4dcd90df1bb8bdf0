package config

import (
	"slices"
	"time"

	"github.com/cosla/cosla/internal/core/causal"
	"github.com/cosla/cosla/internal/core/wire"
)

// Reconfiguration at the leader: an operator's switchover and replica
// add or remove (wire.Reconfigure), and the planner's switchovers from
// the clients' utility reports (Pileus 6.2).

// reconfigure starts the change m asks for; the reply follows once it
// applied (moved, changed), or at once if it is refused.
func (n *Node) reconfigure(from wire.NodeID, m *wire.Reconfigure) {
	refuse := func(code wire.Code) {
		n.env.Send(from, &wire.ReconfigureReply{Req: m.Req, Code: code})
	}
	if !n.lead {
		n.env.Send(from, &wire.ReconfigureReply{Req: m.Req, Code: wire.NotLeader, Leader: n.member.Leader()})
		return
	}
	if !n.inTouch(n.env.Now()) {
		refuse(wire.Unavailable)
		return
	}
	t, ok := n.member.State().Tables[m.Table]
	if !ok || m.Tablet < 0 || int(m.Tablet) >= len(t.Layout.Tablets) {
		refuse(wire.NoTable)
		return
	}
	ref := wire.TabletRef{Table: t.Layout.ID, Tablet: m.Tablet}
	set := 0
	for _, id := range []wire.NodeID{m.Primary, m.Add, m.Remove} {
		if id != "" {
			set++
		}
	}
	if set != 1 || n.transitions[ref] != nil || n.changes[ref] != nil {
		refuse(wire.Invalid)
		return
	}
	i, r := int(m.Tablet), &requester{from: from, req: m.Req}
	if m.Primary != "" {
		n.switchover(t, i, m.Primary, r)
		return
	}
	n.changes[ref] = r
	if !n.propose(Command{Op: OpReplicas, Table: t.Layout.Name, Tablet: i, Epoch: t.Epochs[i], Add: m.Add, Remove: m.Remove}) {
		delete(n.changes, ref)
		refuse(wire.Unavailable)
	}
}

// switchover moves t's tablet i to to, a replica of it, without loss;
// r hears the outcome.
func (n *Node) switchover(t *Table, i int, to wire.NodeID, r *requester) {
	tb := t.Layout.Tablets[i]
	switch {
	case !slices.Contains(tb.Secondaries, to) && tb.Primary != to:
		n.env.Send(r.from, &wire.ReconfigureReply{Req: r.req, Code: wire.Invalid})
	case tb.Primary == to:
		n.env.Send(r.from, &wire.ReconfigureReply{Req: r.req, Code: wire.OK, Epoch: t.Epochs[i], Layout: t.Layout})
	default:
		n.beginSwitchover(t, i, to, r)
	}
}

// beginSwitchover starts the switchover of t's tablet i to to; r, if
// set, hears the outcome.
func (n *Node) beginSwitchover(t *Table, i int, to wire.NodeID, r *requester) {
	n.env.Logger().Info("config: switchover", "table", t.Layout.Name, "tablet", i, "from", t.Layout.Tablets[i].Primary, "to", to, "epoch", t.Epochs[i])
	n.metrics.SwitchoversStarted++
	n.begin(t, i, to, r, n.env.Now())
}

// changed acts on an applied replica add or remove: the old and the new
// replica sets hear the tablet's new layout (at the same epoch), and the
// requester the outcome.
func (n *Node) changed(c Command, now time.Time) {
	t := n.member.State().Tables[c.Table]
	to := t.Layout.Tablets[c.Tablet].Replicas()
	if c.Remove != "" {
		to = append(to, c.Remove)
	}
	n.env.Logger().Info("config: replicas changed", "table", c.Table, "tablet", c.Tablet, "add", c.Add, "remove", c.Remove, "replicas", to)
	n.metrics.ReplicaChanges++
	n.announce(t, c.Tablet, to, now)
	ref := wire.TabletRef{Table: t.Layout.ID, Tablet: int32(c.Tablet)}
	if r := n.changes[ref]; r != nil {
		delete(n.changes, ref)
		n.env.Send(r.from, &wire.ReconfigureReply{Req: r.req, Code: wire.OK, Epoch: t.Epochs[c.Tablet], Layout: t.Layout})
	}
}

// utilityReport adds a client's report to the leader's planner, if
// planning is on. A member that does not lead passes a client's report
// on to the leader it knows (a report from another member, which took
// this one for the leader, is dropped, so that no report circles).
func (n *Node) utilityReport(from wire.NodeID, m *wire.UtilityReport) {
	n.metrics.UtilityReports++
	if !n.lead {
		if l := n.member.Leader(); n.opts.Plan && l != "" && l != n.env.ID() && n.member.raftID(from) == 0 {
			n.env.Send(l, m)
		}
		return
	}
	t, ok := n.member.State().ByID(m.Tablet.Table)
	if !ok || !n.opts.Plan {
		return
	}
	u := make(map[string]float64, len(m.Sites))
	for _, s := range m.Sites {
		u[s.Site] += float64(s.Micro) / 1e6
	}
	n.planner.Add(UtilityReport{Table: t.Layout.Name, Tablet: int(m.Tablet.Tablet), Ops: int64(m.Ops), Utility: u})
}

// endWindow ends the planner's window and starts a switchover for each
// move it chose.
func (n *Node) endWindow() {
	if !n.lead || !n.inTouch(n.env.Now()) {
		return
	}
	st := n.member.State()
	primarySite := func(table string, tablet int) string {
		return causal.Site(st.Tables[table].Layout.Tablets[tablet].Primary)
	}
	for _, mv := range n.planner.EndWindow(n.env.Now(), primarySite) {
		t := st.Tables[mv.Table]
		ref := wire.TabletRef{Table: t.Layout.ID, Tablet: int32(mv.Tablet)}
		i := slices.IndexFunc(t.Layout.Tablets[mv.Tablet].Secondaries, func(r wire.NodeID) bool { return causal.Site(r) == mv.Site })
		if i < 0 || n.transitions[ref] != nil || n.changes[ref] != nil {
			n.env.Logger().Info("config: planned move skipped", "table", mv.Table, "tablet", mv.Tablet, "site", mv.Site, "replica at site", i >= 0)
			continue
		}
		to := t.Layout.Tablets[mv.Tablet].Secondaries[i]
		n.env.Logger().Info("config: planned move", "table", mv.Table, "tablet", mv.Tablet, "to", to, "gain", mv.Gain)
		n.metrics.PlannedMoves++
		n.beginSwitchover(t, mv.Tablet, to, nil)
	}
}
