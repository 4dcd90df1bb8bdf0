package replica

import (
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/wire"
)

// Leases (DESIGN.md section 10). A governed node that is primary of a
// tablet asks the configuration service's leader, every Lease.Renew,
// to renew its lease on the tablets it believes it leads (LeaseRenew);
// the leader commits the renewal and answers with the tablets the
// service has it primary of (LeaseGrant). The lease of a listed tablet,
// at the node's epoch of it, holds until Lease.Length less Lease.Margin
// after the node sent the request the grant answers: counted from
// before the leader saw it, by the node's own clock, so that it ends
// before the leader's view of it (config.LeaseOptions).

// leaseState is a node's renewal of its leases (volatile).
type leaseState struct {
	// seq numbers the last renewal sent; sentAt holds when each renewal
	// not yet granted was sent; applied is the last grant applied.
	seq, applied uint64
	sentAt       map[uint64]time.Time
	// guess is the index in Options.Config of the member taken for the
	// leader; unanswered is when the first renewal it has not answered
	// was sent (zero: none).
	guess      int
	unanswered time.Time
	// listed are the tables the last grant named a tablet of.
	listed map[uint64]bool
	// timer: the renewal timer is set.
	timer bool
}

// renewTimer fires a governed primary's next renewal.
type renewTimer struct{}

func (renewTimer) String() string { return "renew" }

// startLeases prepares a governed node's renewals: its first guess at the
// leader is the member at its own site, if any.
func (n *Node) startLeases() {
	n.lease = leaseState{sentAt: map[uint64]time.Time{}, listed: map[uint64]bool{}}
	site := siteOf(n.env.ID())
	if i := slices.IndexFunc(n.opts.Config, func(m wire.NodeID) bool { return siteOf(m) == site }); i >= 0 {
		n.lease.guess = i
	}
}

func siteOf(id wire.NodeID) string {
	site, _, _ := strings.Cut(string(id), "/")
	return site
}

// renewNow sends a renewal at once, if the node leads a governed tablet,
// and keeps the renewal timer going.
func (n *Node) renewNow() {
	if n.governed() {
		n.renewAndRearm()
	}
}

// renewTimerFired sends the periodic renewal.
func (n *Node) renewTimerFired() {
	n.lease.timer = false
	n.renewAndRearm()
}

func (n *Node) renewAndRearm() {
	if !n.renew() || n.lease.timer {
		return
	}
	n.lease.timer = true
	n.env.After(n.opts.Lease.Renew, renewTimer{})
}

// renew sends a LeaseRenew for the tablets the node leads, and reports
// whether it leads any. A member that has left the renewals unanswered
// for two renewal periods is taken to be no leader: the next one is
// asked.
func (n *Node) renew() bool {
	tablets, layouts := n.leading()
	if len(tablets) == 0 {
		return false
	}
	now := n.env.Now()
	switch {
	case n.lease.unanswered.IsZero():
		n.lease.unanswered = now
	case now.Sub(n.lease.unanswered) >= 2*n.opts.Lease.Renew:
		n.lease.guess = (n.lease.guess + 1) % len(n.opts.Config)
		n.lease.unanswered = now
	}
	for seq, at := range n.lease.sentAt {
		if now.Sub(at) >= n.opts.Lease.Length {
			delete(n.lease.sentAt, seq) // a grant of it would give no lease
		}
	}
	n.lease.seq++
	n.lease.sentAt[n.lease.seq] = now
	n.metrics.LeaseRenewsSent++
	n.env.Send(n.opts.Config[n.lease.guess], &wire.LeaseRenew{Seq: n.lease.seq, Tablets: tablets, Layouts: layouts})
	return true
}

// leading lists the tablets the node believes it is primary of, at their
// epochs, in table and tablet order, and the layouts of their tables
// that the last grant did not name.
func (n *Node) leading() ([]wire.TabletEpoch, []wire.Layout) {
	var tablets []wire.TabletEpoch
	var layouts []wire.Layout
	for _, id := range slices.Sorted(maps.Keys(n.byID)) {
		t := n.byID[id]
		before := len(tablets)
		for _, i := range slices.Sorted(maps.Keys(t.tablets)) {
			if tb := t.tablets[i]; tb.isPrimary {
				tablets = append(tablets, wire.TabletEpoch{Tablet: tb.ref, Epoch: tb.epoch})
			}
		}
		if len(tablets) > before && !n.lease.listed[id] {
			layouts = append(layouts, t.layout)
		}
	}
	return tablets, layouts
}

// leaseGranted applies a LeaseGrant: a refusal names the leader, who is
// asked at once; a grant newer than the last applied gives each tablet
// it lists, at the node's epoch of it, the lease counted from when the
// renewal was sent.
func (n *Node) leaseGranted(from wire.NodeID, m *wire.LeaseGrant) {
	if !n.governed() || from != n.opts.Config[n.lease.guess] {
		return // a stale answer, from a member no longer asked
	}
	n.lease.unanswered = time.Time{}
	if m.Code == wire.NotLeader {
		// A named leader is asked at once; none named (an election under
		// way): the next member, at the next renewal, so that members
		// without a leader are not asked round and round.
		i := slices.Index(n.opts.Config, m.Leader)
		if i < 0 || i == n.lease.guess {
			n.lease.guess = (n.lease.guess + 1) % len(n.opts.Config)
			return
		}
		n.lease.guess = i
		n.renew()
		return
	}
	asked, ok := n.lease.sentAt[m.Seq]
	if m.Code != wire.OK || m.Seq <= n.lease.applied || !ok {
		return
	}
	n.lease.applied = m.Seq
	for seq := range n.lease.sentAt {
		if seq <= m.Seq {
			delete(n.lease.sentAt, seq)
		}
	}
	n.metrics.LeaseGrants++
	clear(n.lease.listed)
	for _, te := range m.Tablets {
		n.lease.listed[te.Tablet.Table] = true
		if tb := n.tablet(te.Tablet); tb != nil && tb.isPrimary && tb.epoch == te.Epoch {
			n.abandoned(tb, asked)
			if tb.leaseAsked.Before(asked) {
				tb.leaseAsked = asked
			}
		}
	}
}

// abandoned lifts the fence of a tablet the leader grants a lease on
// for a renewal sent after the fence came: a leader leaves out a tablet
// in transition, so the transition that fenced it was dropped with its
// leader (one that lost its leadership); none is under way, and no move
// of it can commit before a new one begins (raft commits an earlier
// leader's entries before the one that granted this). Else the tablet
// stays fenced, and refuses Puts and Forwards, until a restart.
func (n *Node) abandoned(tb *tablet, asked time.Time) {
	if tb.fence == 0 || tb.fenceAsked.IsZero() || !tb.fenceAsked.Before(asked) {
		return
	}
	n.metrics.FencesLifted++
	tb.fence, tb.fenceLimit, tb.fenceAsked, tb.highWaits = 0, hlc.Timestamp{}, time.Time{}, nil
}
