package clientcore

import (
	"errors"
	"testing"
	"time"

	"github.com/cosla/cosla/internal/core/wire"
)

// takeReconfigures removes the Reconfigures sent and returns their
// request numbers by member.
func (e *fakeEnv) takeReconfigures(t *testing.T) map[wire.NodeID]uint64 {
	t.Helper()
	reqs, kept := map[wire.NodeID]uint64{}, e.sent[:0]
	for _, s := range e.sent {
		if m, ok := s.m.(*wire.Reconfigure); ok {
			if m.Table != "t" || m.Tablet != 0 || m.Primary != us {
				t.Fatalf("sent %v, want a switchover of t's tablet 0 to us/r1", m)
			}
			reqs[s.to] = m.Req
			continue
		}
		kept = append(kept, s)
	}
	e.sent = kept
	if len(reqs) != len(members) {
		t.Fatalf("Reconfigure sent to %v, want every member %v", reqs, members)
	}
	return reqs
}

type reconfigureResult struct {
	reply wire.ReconfigureReply
	err   error
	calls int
}

func (r *reconfigureResult) done(reply wire.ReconfigureReply, err error) {
	r.reply, r.err, r.calls = reply, err, r.calls+1
}

// TestReconfigure checks an operator's switchover request: sent to every
// configuration member, answered by the leader once committed, the
// others' NotLeader ignored; while no member knows a leader, sent again
// after a backoff; ErrTimeout when no leader answers in time.
func TestReconfigure(t *testing.T) {
	c, env, table := openedClient(t, Options{Config: members})
	m := wire.Reconfigure{Table: "t", Primary: us}
	var got reconfigureResult
	c.Reconfigure(m, 5*time.Second, got.done)
	reqs := env.takeReconfigures(t)
	// An election is under way: a majority refuse without a leader.
	c.Receive("england/cfg", &wire.ReconfigureReply{Req: reqs["england/cfg"], Code: wire.NotLeader})
	c.Receive("india/cfg", &wire.ReconfigureReply{Req: reqs["india/cfg"], Code: wire.NotLeader})
	env.fireRetry(t, c, ms(100))
	reqs = env.takeReconfigures(t)
	c.Receive("england/cfg", &wire.ReconfigureReply{Req: reqs["england/cfg"], Code: wire.NotLeader, Leader: "us/cfg"})
	c.Receive("india/cfg", &wire.ReconfigureReply{Req: reqs["india/cfg"], Code: wire.NotLeader, Leader: "us/cfg"})
	if got.calls != 0 {
		t.Fatalf("ended before the leader answered: %v", got.err)
	}
	for _, tm := range env.timers {
		if _, ok := tm.timer.(retryTimer); ok {
			t.Fatal("sent again although the members named a leader")
		}
	}
	moved := wire.Layout{Name: "t", ID: 7, Tablets: []wire.Tablet{{Primary: us, Secondaries: []wire.NodeID{england, india}}}}
	c.Receive("us/cfg", &wire.ReconfigureReply{Req: reqs["us/cfg"], Epoch: 2, Layout: moved})
	if got.calls != 1 || got.err != nil || got.reply.Epoch != 2 || got.reply.Layout.Tablets[0].Primary != us {
		t.Fatalf("%d calls, reply %+v, err %v; want one, epoch 2 with us/r1 primary", got.calls, got.reply, got.err)
	}
	// The client's own view of the open table follows the move.
	if tv := &table.tablets[0]; table.Layout().Tablets[0].Primary != us || tv.epoch != 2 || tv.replicas[0].id != us {
		t.Fatalf("open table after the move: primary %s, epoch %d; want us/r1 at 2", table.Layout().Tablets[0].Primary, tv.epoch)
	}

	// Refused: a bad request.
	got = reconfigureResult{}
	c.Reconfigure(m, 5*time.Second, got.done)
	reqs = env.takeReconfigures(t)
	c.Receive("us/cfg", &wire.ReconfigureReply{Req: reqs["us/cfg"], Code: wire.Invalid})
	if got.calls != 1 || !errors.Is(got.err, ErrInvalid) {
		t.Fatalf("refused: %d calls, err %v; want one, ErrInvalid", got.calls, got.err)
	}

	// No leader answers.
	got = reconfigureResult{}
	c.Reconfigure(m, 5*time.Second, got.done)
	reqs = env.takeReconfigures(t)
	for _, tm := range env.timers {
		if to, ok := tm.timer.(timeoutTimer); ok && to.req == reqs["us/cfg"] {
			env.now = tm.at
			c.Fire(to)
		}
	}
	if got.calls != 1 || !errors.Is(got.err, ErrTimeout) {
		t.Fatalf("no leader: %d calls, err %v; want one, ErrTimeout", got.calls, got.err)
	}
}

// TestReconfigureNoMembers checks that a client that knows no member
// refuses a Reconfigure at once.
func TestReconfigureNoMembers(t *testing.T) {
	c, env, _ := openedClient(t, Options{})
	var got reconfigureResult
	c.Reconfigure(wire.Reconfigure{Table: "t", Primary: us}, time.Second, got.done)
	if got.calls != 1 || !errors.Is(got.err, ErrInvalid) || len(env.sent) != 3 {
		t.Fatalf("%d calls, err %v, sent %v; want one, ErrInvalid, nothing sent but the probes", got.calls, got.err, env.sent)
	}
}
