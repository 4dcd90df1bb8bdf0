package causal

import (
	"time"

	"github.com/cosla/cosla/internal/core/wire"
)

// maxRetransmit bounds retransmit's wait, in Resends.
const maxRetransmit = 8

// retransmit is how long a node waits for another's answer before sending
// a request again: Resend, or longer for a node whose answers take
// longer, up to maxRetransmit Resends. The transport is reliable, so a
// request is lost only with a crashed node or a cut link; a node slowed
// by load answers late but answers, and every copy sent to it again is
// one more message its queue serves before the others. With a fixed
// second, Karma at 9600 sessions (karma-fig7, clients outside Brazil)
// sent over a third of its propagations again, to nodes that were only
// busy, and made 11% fewer operations (README, Karma).
//
// The wait follows the answers as TCP's retransmission timeout follows
// round trips (RFC 6298): the smoothed time plus four times its smoothed
// deviation. Only answers to requests sent once are measured (Karn's
// rule: an answer to a request sent twice may answer either copy), so a
// wait grows only while answers keep coming late but within it; a node
// that stops answering leaves it as it was.
type retransmit struct {
	base  time.Duration
	nodes map[wire.NodeID]answerTimes
}

// answerTimes are a node's smoothed answer time and deviation.
type answerTimes struct {
	mean, dev time.Duration
}

func newRetransmit(base time.Duration) *retransmit {
	return &retransmit{base: base, nodes: map[wire.NodeID]answerTimes{}}
}

// answered records that node answered, took after it was sent, a request
// sent once.
func (r *retransmit) answered(node wire.NodeID, took time.Duration) {
	t, ok := r.nodes[node]
	if !ok {
		r.nodes[node] = answerTimes{mean: took, dev: took / 2}
		return
	}
	diff := t.mean - took
	if diff < 0 {
		diff = -diff
	}
	t.dev += (diff - t.dev) / 4
	t.mean += (took - t.mean) / 8
	r.nodes[node] = t
}

// wait is how long to wait for node's answer before sending again.
func (r *retransmit) wait(node wire.NodeID) time.Duration {
	t := r.nodes[node]
	return min(max(r.base, t.mean+4*t.dev), maxRetransmit*r.base)
}

// backoff is how long to wait for node's answer to a request that was
// sent again sent times: wait, doubled for each copy, up to
// maxRetransmit Resends. Without it a node whose answers stop coming in
// time is sent every request it owes again each wait, while Karn's rule
// keeps the wait where it was, so a process starved of CPU for a moment
// falls further behind with each round of copies (TCP doubles its
// timeout on each retransmission for the same reason, RFC 6298 5.5).
func (r *retransmit) backoff(node wire.NodeID, sent uint8) time.Duration {
	return min(r.wait(node)<<min(sent, 5), maxRetransmit*r.base)
}
