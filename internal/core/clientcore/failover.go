package clientcore

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/keyfmt"
)

// Following a failover (DESIGN.md section 10). A Put carries the
// client's epoch of its tablet. A node that is no longer the primary
// answers NotPrimary with the epoch and primary it knows: the client
// takes the new primary into its layout and monitor and sends the Put
// there at once. A primary without a valid lease answers NoLease, and a
// node that does not know the new primary answers NotPrimary without
// one: the client tries again after a backoff. Either way within the
// Put's own time (its timeout). A tablet no service governs has epoch 0
// and gets neither answer.

// The backoff of a Put turned away without a primary to go to: from
// retryBackoffMin, doubling up to retryBackoffMax (our choice: a failover
// takes a lease length, 4 s by default, so a second of delay costs little
// and a faster retry would only load the nodes).
const (
	retryBackoffMin = 100 * time.Millisecond
	retryBackoffMax = time.Second
)

// putRetry is what a Put keeps across its attempts: when its time runs
// out and its next backoff.
type putRetry struct {
	deadline time.Time
	backoff  time.Duration
}

// newPutRetry starts a Put's attempts, which may take timeout in all.
func (c *Client) newPutRetry(timeout time.Duration) *putRetry {
	return &putRetry{deadline: c.env.Now().Add(timeout), backoff: retryBackoffMin}
}

// retryTimer sends a request turned away again after its backoff: a
// Put of key, or a Reconfigure of table key (reconfigure.go).
type retryTimer struct {
	key  string
	send func()
}

// String names the timer by its key, not the function, so that a
// simulator's trace of it is the same in every run.
func (t retryTimer) String() string { return "retry(" + keyfmt.Quote(t.key) + ")" }

// retryPut handles a reply of from that turned away a Put of key to tv
// (NotPrimary of a governed tablet, NoLease): it follows the new primary
// or backs off, then runs again with the time the Put has left, or fail
// once it has none. It reports false, and does nothing, for any other
// reply.
func (c *Client) retryPut(t *Table, tv *tabletView, key string, from wire.NodeID, reply *wire.PutReply, rt *putRetry, again func(timeout time.Duration), fail func(error)) bool {
	switch {
	case reply.Code == wire.NotPrimary && reply.Epoch == 0, reply.Code != wire.NotPrimary && reply.Code != wire.NoLease:
		return false // not governed: the layout is wrong, an error as ever
	}
	giveUp := func() {
		fail(fmt.Errorf("%w: put %s: no primary took it in time; %s answered %q last", ErrTimeout, keyfmt.Quote(key), from, reply.Code))
	}
	resend := func() {
		if left := rt.deadline.Sub(c.env.Now()); left > 0 {
			again(left)
			return
		}
		giveUp()
	}
	later := func() {
		wait := rt.backoff
		rt.backoff = min(2*rt.backoff, retryBackoffMax)
		if !c.env.Now().Add(wait).Before(rt.deadline) {
			giveUp()
			return
		}
		c.env.After(wait, retryTimer{key: key, send: resend})
	}
	if reply.Primary == "" {
		c.seekPrimary(tv)
	}
	switch {
	case reply.Code == wire.NotPrimary && reply.Primary != "" && reply.Primary != from && reply.Epoch >= tv.epoch:
		// At the client's epoch too: a late answer of a primary it
		// has left since may have taken it back there (observeRead).
		c.follow(t, tv, reply.Epoch, reply.Primary, rt.deadline, resend, later)
	case reply.Code == wire.NotPrimary && from != tv.replicas[0].id:
		resend() // the client has followed the move since it sent the Put
	default:
		later()
	}
	return true
}

// Seeking a new primary (our choice; the paper has none): when the
// primary does not take a Put (no reply, or no primary named), the
// client probes the tablet's other replicas every seekEvery, for at most
// seekFor, until one answers as the primary (observeRead follows it).
// The next Put then goes to the new
// primary at once, not after the old one's timeouts until the next
// routine probe (ProbeInterval, 10 s by default): a failover takes a
// lease, 4 s by default, and seekFor covers two. A round every 100 ms
// finds the new primary at most 100 ms after it takes over (the failover
// target is the lease plus 1 s); a probe is a few dozen bytes, and the
// rounds end with the seek.
const (
	seekEvery = 100 * time.Millisecond
	seekFor   = 10 * time.Second
)

// seekTimer is the next round of a seek of tv's primary.
type seekTimer struct{ tv *tabletView }

func (t seekTimer) String() string { return fmt.Sprintf("seek(%s)", t.tv.ref) }

// seekPrimary starts seeking a successor of tv's primary, unless the
// client seeks one already.
func (c *Client) seekPrimary(tv *tabletView) {
	if tv.seekFrom != nil {
		return
	}
	tv.seekFrom, tv.seekAt = tv.replicas[0], c.env.Now()
	c.seekRound(tv)
}

// seekRound probes tv's other replicas and schedules the next round,
// or ends the seek: the client follows another primary, or seekFor has
// passed.
func (c *Client) seekRound(tv *tabletView) {
	if tv.seekFrom == nil {
		return
	}
	if tv.replicas[0] != tv.seekFrom || c.env.Now().Sub(tv.seekAt) >= seekFor {
		tv.seekFrom = nil
		return
	}
	for _, r := range tv.replicas[1:] {
		c.probe(tv, r, false)
	}
	c.env.After(seekEvery, seekTimer{tv})
}

// follow takes primary, at epoch, as tv's primary, and runs again once
// the client's layout names it: at once when primary is one of the
// tablet's replicas (wire.Layout.MoveTo); otherwise once primary has
// told the client the table's layout, the replica set having changed
// (later, if its answer does not name it primary; again at deadline if
// it does not answer).
func (c *Client) follow(t *Table, tv *tabletView, epoch uint64, primary wire.NodeID, deadline time.Time, again, later func()) {
	l := t.layout
	if l.MoveTo(tv.index(), primary) {
		c.relayout(t, l)
		tv.epoch = epoch
		again()
		return
	}
	req := c.newReq()
	c.send(primary, &wire.TableInfoRequest{Req: req, Name: l.Name}, req, deadline.Sub(c.env.Now()), &pending{
		onReply: func(_ wire.NodeID, m wire.Msg) {
			r := m.(*wire.TableInfoReply)
			if r.Code != wire.OK || r.Layout.ID != l.ID || len(r.Layout.Tablets) != len(l.Tablets) || r.Layout.Tablets[tv.index()].Primary != primary {
				later()
				return
			}
			c.relayout(t, r.Layout)
			tv.epoch = max(tv.epoch, epoch)
			again()
		},
		onTimeout: again,
	})
}

// relayout replaces t's layout with l, of the same table, and the
// views of its tablets in place (operations under way hold pointers to
// them), keeping what the client knows of the replicas that stay.
func (c *Client) relayout(t *Table, l wire.Layout) {
	t.layout = l
	for i := range t.tablets {
		t.tablets[i] = c.newTabletView(&l, i, &t.tablets[i])
	}
}

// observeRead records what replica r of tv said of itself answering a
// read or probe: its high timestamp and whether it is the primary.
//
// Reads under leases (DESIGN.md section 10): a node answers as the
// primary only while it is the tablet's primary and holds its lease. A
// replica the client took for a secondary that answers so is the
// primary now, a failover or switchover having moved the tablet there:
// the client follows at once, a client that only reads as well as one
// whose Puts would learn it from NotPrimary. The converse is no news: a
// primary that answers otherwise may be deposed, or only between
// leases, and the client keeps it until it learns of another.
func (c *Client) observeRead(tv *tabletView, r *replicaState, high hlc.Timestamp, primary bool) {
	c.observeHigh(tv, r, high)
	if !primary || r.primary {
		return
	}
	old := tv.replicas[0].id
	for _, t := range c.tables {
		if l := t.layout; l.ID == tv.ref.Table && l.Causal == nil && l.MoveTo(tv.index(), r.id) {
			c.relayout(t, l)
			c.abandonPuts(tv.ref, old, r.id)
		}
	}
}

// abandonPuts ends the Puts of tablet ref still waiting at old, which
// the client has just learned is deposed: primary answered as the
// tablet's primary, which it does only once old's lease has run out, so
// old orders nothing more. Each ends as it would at its timeout (its
// outcome unknown: old may have ordered it before it lost its lease),
// but now, so that the caller's next Put goes to primary; a client
// whose Put waits out a dead primary's timeout would otherwise send its
// next one there too.
func (c *Client) abandonPuts(ref wire.TabletRef, old, primary wire.NodeID) {
	for _, req := range slices.Sorted(maps.Keys(c.pending)) {
		p := c.pending[req]
		if m, ok := p.request.(*wire.PutRequest); ok && p.onDeposed != nil && p.to == old && m.Tablet == ref {
			delete(c.pending, req)
			p.onDeposed(primary)
		}
	}
}
