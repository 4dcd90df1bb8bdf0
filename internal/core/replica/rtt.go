package replica

import (
	"cmp"
	"slices"
	"time"

	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/rtt"
	"github.com/cosla/cosla/internal/core/wire"
)

// Round trips to replication peers, as the node measures them from the
// messages it already exchanges (no probes of its own, no change to the
// wire format): a secondary times each PullRequest to its PullReply, a
// primary each Push that asks for an acknowledgement to its PushAck. The
// time comes from Env.Now, the runtime's monotonic clock, so the simulator
// measures virtual time and stays deterministic. A sample is the round
// trip as replication sees it: the network both ways plus the peer's
// queue and service, its fsync included (a primary syncs the high
// timestamp it reveals in a pull reply, a secondary the pushed version
// before it acknowledges). That is the delay a client's read of a
// secondary trails by, so it is the figure to show beside the links.
//
// The first round trip to each peer is not counted: on a live cluster the
// first message to a peer opens the transport's connection (TCP and TLS
// handshakes over the WAN, two or three round trips more), and as the
// first sample it would set the estimate, which at one sample per pull
// interval (a minute by default) takes some twenty samples to forget.
// That measured 600 ms for a 435 ms link; without it the estimate is
// right from the second pull.

// rttGain is the weight of a new sample in the smoothed round trip
// (rtt.Smoothed): RFC 6298 section 2.3's SRTT with alpha = 1/8, TCP's
// estimator, which follows a changed link within a few dozen samples and
// does not jump at one slow reply.
const rttGain = 8

// pushTimedMax bounds the acknowledged pushes a primary times per
// secondary; our choice. Beyond it acknowledgements are being lost or the
// secondary is far behind, and the oldest are forgotten unsampled.
const pushTimedMax = 64

// LinkStatus is a node's estimate of the round trip to a peer it
// replicates with.
type LinkStatus struct {
	Peer wire.NodeID
	// RTT is the smoothed round trip (RFC 6298's SRTT): the first sample
	// counted, then each later one weighted 1/8.
	RTT time.Duration
	// Samples counts the round trips in RTT: those measured since the
	// node started but the first.
	Samples int64
}

// timedPush is a Push with Ack set, waiting for its PushAck.
type timedPush struct {
	ts   hlc.Timestamp
	sent time.Time
}

// links are a node's estimates of the round trip to each peer.
type links map[wire.NodeID]*rtt.Smoothed

// sample adds one measured round trip to peer's estimate. The first
// round trip to a peer, the connection's, is left out: the peer's
// estimate is made then, with no sample.
func (ls links) sample(peer wire.NodeID, took time.Duration) {
	if took < 0 {
		return // Env.Now is monotonic; a runtime that breaks that is not measured
	}
	l := ls[peer]
	if l == nil {
		s := rtt.NewSmoothed(rttGain)
		ls[peer] = &s
		return
	}
	l.Add(took) // RFC 6298 2.2: the first measurement is the estimate
}

// status returns the estimates, sorted by peer.
func (ls links) status() []LinkStatus {
	var out []LinkStatus
	for peer, l := range ls {
		if l.Samples() == 0 {
			continue
		}
		srtt, _ := l.Value()
		out = append(out, LinkStatus{Peer: peer, RTT: srtt, Samples: l.Samples()})
	}
	slices.SortFunc(out, func(a, b LinkStatus) int { return cmp.Compare(a.Peer, b.Peer) })
	return out
}

// timePullSent notes a pull the secondary is about to send. A pull with
// the same Since as one still unanswered is a retransmission (the periodic
// pull fired again): its reply could answer either, so it is not sampled
// (Karn's algorithm, Karn and Partridge, SIGCOMM 1987). The periodic pull
// interval (a minute by default) is far above any round trip, so this
// costs few samples.
func (n *Node) timePullSent(tb *tablet, since hlc.Timestamp) {
	if tb.pullTimed && tb.pullSince == since {
		tb.pullResent = true
		return
	}
	tb.pullTimed, tb.pullSince, tb.pullSent, tb.pullResent = true, since, n.env.Now(), false
}

// timePullReply samples the round trip of the timed pull that m answers.
// A reply to an older pull (another Since) is not the timed one's.
func (n *Node) timePullReply(tb *tablet, from wire.NodeID, m *wire.PullReply) {
	if !tb.pullTimed || from != tb.primary || m.Since != tb.pullSince {
		return
	}
	tb.pullTimed = false
	if !tb.pullResent {
		took := n.env.Now().Sub(tb.pullSent)
		n.links.sample(from, took)
		if !m.Snapshot {
			// dConssandra's acquisition: a pull round for the writes
			// it brings.
			n.plan.costsFor(from).acquire.Add(n.elapsed(), len(m.Entries), took)
		}
	}
}

// timePushSent notes a Push with Ack set to secondary s.
func (n *Node) timePushSent(tb *tablet, s wire.NodeID, ts hlc.Timestamp) {
	timed := append(tb.pushTimed[s], timedPush{ts: ts, sent: n.env.Now()})
	if len(timed) > pushTimedMax {
		timed = slices.Delete(timed, 0, len(timed)-pushTimedMax)
	}
	tb.pushTimed[s] = timed
}

// timePushAck samples the round trip of the Push that a PushAck answers:
// a secondary that applies a pushed version in order acknowledges it with
// its timestamp as High. An acknowledgement covers every timed push at or
// below High, which are forgotten; only the one it names exactly is
// sampled, since the others were answered by a pull (a gap) or together.
func (n *Node) timePushAck(tb *tablet, from wire.NodeID, high hlc.Timestamp) {
	timed := tb.pushTimed[from]
	i := 0
	for i < len(timed) && !high.Less(timed[i].ts) {
		i++
	}
	if i == 0 {
		return
	}
	if timed[i-1].ts == high {
		n.links.sample(from, n.env.Now().Sub(timed[i-1].sent))
	}
	tb.pushTimed[from] = slices.Delete(timed, 0, i)
}
