package replica_test

import (
	"log/slog"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/cosla/cosla/internal/core/replica"
	"github.com/cosla/cosla/internal/core/storage"
	"github.com/cosla/cosla/internal/core/wire"
)

// linkWorld is a deterministic network of replicas for timing round
// trips: one clock, and a queue of messages that run delivers hop by
// hop, each hop taking oneWay of the clock. Timers are kept for the test
// to fire.
type linkWorld struct {
	now    time.Time
	oneWay time.Duration
	nodes  map[wire.NodeID]*replica.Node
	queue  []linkMsg
}

type linkMsg struct {
	from, to wire.NodeID
	m        wire.Msg
}

// linkEnv is one node's view of a linkWorld.
type linkEnv struct {
	w      *linkWorld
	id     wire.NodeID
	engine storage.Engine
	rng    *rand.Rand
	timers []any
}

func (e *linkEnv) ID() wire.NodeID  { return e.id }
func (e *linkEnv) Now() time.Time   { return e.w.now }
func (e *linkEnv) WallNanos() int64 { return e.w.now.UnixNano() }
func (e *linkEnv) Send(to wire.NodeID, m wire.Msg) {
	e.w.queue = append(e.w.queue, linkMsg{e.id, to, m})
}
func (e *linkEnv) After(_ time.Duration, t any) { e.timers = append(e.timers, t) }
func (e *linkEnv) Rand() *rand.Rand             { return e.rng }
func (e *linkEnv) Engine() storage.Engine       { return e.engine }
func (e *linkEnv) Logger() *slog.Logger         { return slog.New(slog.DiscardHandler) }

// start starts a node at id in the world.
func (w *linkWorld) start(t *testing.T, id wire.NodeID) (*replica.Node, *linkEnv) {
	t.Helper()
	env := &linkEnv{w: w, id: id, engine: storage.NewMem(), rng: rand.New(rand.NewPCG(1, 2))}
	n := replica.New(replica.Options{})
	if err := n.Start(env); err != nil {
		t.Fatal(err)
	}
	w.nodes[id] = n
	return n, env
}

// run delivers what is queued, one hop at a time, until nothing is:
// messages to a node that is not in the world (a client) are dropped.
func (w *linkWorld) run() {
	for len(w.queue) > 0 {
		hop := w.queue
		w.queue = nil
		w.now = w.now.Add(w.oneWay)
		for _, m := range hop {
			if n, ok := w.nodes[m.to]; ok {
				n.Receive(m.from, m.m)
			}
		}
	}
}

// TestLinkRTT: a secondary times its pulls and a primary its
// acknowledged pushes, on a network whose one-way delay the test sets,
// and each keeps RFC 6298's smoothed round trip per peer, leaving out the
// first round trip to each peer. A pull sent again before its reply is
// not sampled (Karn's algorithm).
func TestLinkRTT(t *testing.T) {
	w := &linkWorld{now: time.Unix(1_700_000_000, 0), nodes: map[wire.NodeID]*replica.Node{}}
	primary, _ := w.start(t, "p/r1")
	secondary, senv := w.start(t, "s/r1")
	layout := wire.Layout{Name: "t", ID: 9, Tablets: []wire.Tablet{{Primary: "p/r1", Secondaries: []wire.NodeID{"s/r1"}}},
		Replication: wire.Replication{Mode: wire.ModePull, Interval: time.Minute}}
	for _, n := range []*replica.Node{primary, secondary} {
		n.Receive("c/c1", &wire.CreateTableRequest{Req: 1, Layout: layout})
	}
	w.queue = nil // the replies to the client
	if len(senv.timers) != 1 {
		t.Fatalf("the secondary set %d timers, want its pull timer", len(senv.timers))
	}
	pull := senv.timers[0]
	ref := wire.TabletRef{Table: 9}

	// The first round trip to a peer is left out (it opens the
	// connection on a live cluster): after it, no estimate.
	w.oneWay = 200 * time.Millisecond
	secondary.Fire(pull)
	w.run()
	if links := secondary.Metrics().Links; len(links) != 0 {
		t.Fatalf("after the first pull: links %+v, want none", links)
	}
	// Pulls over 20 ms each way, then 60 ms: samples of 40 ms and 120 ms,
	// smoothed to 40 + (120-40)/8 = 50 ms.
	w.oneWay = 20 * time.Millisecond
	secondary.Fire(pull)
	w.run()
	w.oneWay = 60 * time.Millisecond
	secondary.Fire(pull)
	w.run()
	// A pull fired twice before the reply: either reply could answer
	// either pull, so neither is sampled.
	w.oneWay = 5 * time.Millisecond
	secondary.Fire(pull)
	secondary.Fire(pull)
	w.run()
	// A Put at write level two is pushed with Ack set: its PushAck is the
	// primary's sample, 2 x 10 ms, after the first one, left out. A Put
	// at level one asks for no acknowledgement and gives none.
	for i, oneWay := range []time.Duration{300 * time.Millisecond, 10 * time.Millisecond} {
		w.oneWay = oneWay
		primary.Receive("c/c1", &wire.PutRequest{Req: uint64(2 + i), Tablet: ref, Key: "k", Value: []byte("v"), W: 2})
		w.run()
	}
	primary.Receive("c/c1", &wire.PutRequest{Req: 4, Tablet: ref, Key: "k", Value: []byte("v")})
	w.run()

	for _, tc := range []struct {
		node *replica.Node
		name string
		want []replica.LinkStatus
	}{
		{secondary, "secondary", []replica.LinkStatus{{Peer: "p/r1", RTT: 50 * time.Millisecond, Samples: 2}}},
		{primary, "primary", []replica.LinkStatus{{Peer: "s/r1", RTT: 20 * time.Millisecond, Samples: 1}}},
	} {
		if got := tc.node.Metrics().Links; !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: links %+v, want %+v", tc.name, got, tc.want)
		}
	}
	if m := primary.Metrics(); m.PushAcksReceived != 2 || m.LevelPuts != 2 {
		t.Errorf("primary: %d push acks, %d level puts; want 2 and 2 (the run did not go as planned)", m.PushAcksReceived, m.LevelPuts)
	}
}
