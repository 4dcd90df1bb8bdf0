package sim

import (
	"log/slog"
	"math"
	"math/rand/v2"
	"time"

	"github.com/cosla/cosla/internal/core/storage"
	"github.com/cosla/cosla/internal/core/wire"
)

type eventKind uint8

const (
	evFunc   eventKind = iota + 1 // a driver's function
	evArrive                      // a message reaches its node
	evHandle                      // the node has served the message
	evTimer                       // a node's timer fires
	evFsync                       // a node's fsync completes (group commit)
)

type event struct {
	at          time.Duration
	seq         uint64
	kind        eventKind
	fn          func()
	from, to    wire.NodeID
	msg         wire.Msg
	timer       any
	group       *fsyncGroup // of an evFsync
	incarnation int         // of the node the event is for; stale events are dropped
	// index is the event's place in the queue (heap.Fix); start, urgent:
	// when the message is served, and whether it is urgent, at a node
	// with urgency (simNode.served).
	index  int
	start  time.Duration
	urgent bool
}

// eventQueue is a min-heap ordered by (at, seq): time order, and the order
// of scheduling among events at the same time.
type eventQueue []*event

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q eventQueue) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].index, q[j].index = i, j
}
func (q *eventQueue) Push(x any) {
	ev := x.(*event)
	ev.index = len(*q)
	*q = append(*q, ev)
}
func (q *eventQueue) Pop() any {
	old := *q
	ev := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	ev.index = -1
	return ev
}

// nodeEnv is a node's view of the simulated world (node.Env). It belongs
// to one incarnation: after a crash its sends and timers go nowhere.
type nodeEnv struct {
	sim         *Sim
	node        *simNode
	incarnation int
	logger      *slog.Logger
}

func (e *nodeEnv) live() bool { return e.node.up && e.node.incarnation == e.incarnation }

func (e *nodeEnv) ID() wire.NodeID { return e.node.id }

func (e *nodeEnv) Now() time.Time {
	return time.Unix(0, e.sim.opts.EpochNanos).Add(e.node.clock(e.sim.now))
}

func (e *nodeEnv) WallNanos() int64 {
	return e.sim.opts.EpochNanos + int64(e.sim.now) + int64(e.node.opts.Skew)
}

func (e *nodeEnv) Send(to wire.NodeID, m wire.Msg) {
	if e.live() {
		e.sim.send(e.node, to, m)
	}
}

// After schedules the timer; one beyond the end of simulated time (a
// duration near math.MaxInt64) is kept at its end rather than wrapping
// into the past.
func (e *nodeEnv) After(d time.Duration, timer any) {
	if e.live() {
		at := e.sim.now + e.node.real(max(d, 0))
		if at < e.sim.now {
			at = math.MaxInt64
		}
		e.sim.push(&event{at: at, kind: evTimer, to: e.node.id, timer: timer, incarnation: e.incarnation})
	}
}

func (e *nodeEnv) Rand() *rand.Rand       { return e.node.rng }
func (e *nodeEnv) Engine() storage.Engine { return e.node.disk }
func (e *nodeEnv) Logger() *slog.Logger   { return e.logger }
