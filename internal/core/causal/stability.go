package causal

import (
	"slices"
	"time"

	"github.com/cosla/cosla/internal/core/wire"
)

// This file lifts ring restrictions at stability (Karma 1, 2.3: a client
// is released "when the objects become stable"; section 4.2's
// put-completion and notify-after are cheap ways to learn it, and stay).
//
// A session's get names the in-flight versions that restrict it. A
// version is stable once its coordinator has it complete: every ring
// processed it after its dependencies held there, so every ring holds
// its causal past, and a read anywhere (the cache included, which holds
// only stable versions) is as safe as one in the restricting ring. The
// read's coordinator knows that of its own writes (they leave its write
// buffer); of another coordinator's it asks once with a watching
// DepCheck, which that coordinator answers when the write completes
// (completions sent to the coordinators of sites that read them), and
// it remembers the answers. Its reply names the restrictions it lifted;
// if it lifted them all, it serves the get unbound. A read-only session
// is so released without writing.
//
// The writer's coordinator may be out of reach while the version's stores
// are not: a partition within a ring (Karma 4.4, Claim 2) cut the
// coordinators on either side of it apart, and a session bound to that
// ring by a write from across the split stayed bound, its reads of the
// keys across it failing until the heal, though the write was stable
// (TestCausalFaults, seeds 3 and 106). So a watch that has waited
// ReadTimeout, as long as a bound read waits between checks, is also
// sent to the version's key's node in every ring, which answers once that
// coordinator's STABLE has reached it.

// stableCap bounds the versions a coordinator remembers as stable, and
// the watches it keeps: the oldest learnt is forgotten first, which only
// makes it ask again.
const stableCap = 1 << 16

// watchFor is how long a watch waits for its answer before a session
// naming the version may ask again: the answer is lost only with the
// writer's coordinator restarted, which forgets its watchers.
const watchFor = 5 * time.Second

// learntSet is what a node has learnt, up to stableCap items: the oldest
// learnt is forgotten first, which only makes the node ask again.
type learntSet[K comparable] struct {
	items map[K]struct{}
	order []K // items, oldest learnt first
}

// stableSet is the versions a node has learnt stable.
type stableSet = learntSet[wire.Version]

func newLearntSet[K comparable]() learntSet[K] { return learntSet[K]{items: map[K]struct{}{}} }

// learn records k.
func (s *learntSet[K]) learn(k K) {
	if _, ok := s.items[k]; ok {
		return
	}
	if len(s.order) >= stableCap {
		delete(s.items, s.order[0])
		s.order = s.order[1:]
	}
	s.items[k] = struct{}{}
	s.order = append(s.order, k)
}

// has reports whether k was learnt (and not yet forgotten).
func (s *learntSet[K]) has(k K) bool {
	_, ok := s.items[k]
	return ok
}

// stability is what a coordinator knows of other coordinators' writes'
// completion.
type stability struct {
	stableSet
	// watches are the versions asked about, by request number.
	watches map[uint64]watch
	asked   map[wire.Version]uint64
}

type watch struct {
	version wire.Version
	at      time.Time
	// stores: the version's key's nodes were asked too.
	stores bool
}

func newStability() *stability {
	return &stability{stableSet: newLearntSet[wire.Version](), watches: map[uint64]watch{}, asked: map[wire.Version]uint64{}}
}

// lift returns the restrictions known stable, and watches the others'
// versions at their coordinators.
func (c *Coordinator) lift(restrictions []wire.Dep) []wire.Dep {
	var lifted []wire.Dep
	for _, d := range restrictions {
		if c.isStable(d.Version) {
			lifted = append(lifted, d)
			continue
		}
		c.watch(d)
	}
	return lifted
}

// isStable reports whether the coordinator knows v complete: its own
// write that left its write buffer, or another's it was told of.
func (c *Coordinator) isStable(v wire.Version) bool {
	if v.Origin == c.env.ID() {
		_, pending := c.incomplete[v]
		return !pending
	}
	return c.stability.has(v)
}

// watch asks d's coordinator to say when d's version completes, unless a
// watch for it is already waiting.
func (c *Coordinator) watch(d wire.Dep) {
	s := c.stability
	now := c.env.Now()
	if req, ok := s.asked[d.Version]; ok {
		w := s.watches[req]
		if waited := now.Sub(w.at); waited < watchFor {
			if waited >= c.opts.ReadTimeout && !w.stores {
				w.stores = true
				s.watches[req] = w
				c.watchStores(d)
			}
			return
		}
		delete(s.watches, req)
	}
	if d.Version.Origin == c.env.ID() || d.Version.Origin == "" {
		return
	}
	if len(s.watches) >= stableCap {
		s.forgetOld(now)
	}
	c.nextReq++
	s.watches[c.nextReq] = watch{version: d.Version, at: now}
	s.asked[d.Version] = c.nextReq
	c.env.Send(d.Version.Origin, &wire.DepCheck{Req: c.nextReq, Table: c.layout.Table, Key: d.Key, Version: d.Version, Watch: true})
}

// watchStores asks d's key's node in every ring to say when d's version
// is stable there.
func (c *Coordinator) watchStores(d wire.Dep) {
	s := c.stability
	for r := range c.layout.Rings {
		if len(s.watches) >= stableCap {
			s.forgetOld(c.env.Now())
		}
		c.nextReq++
		s.watches[c.nextReq] = watch{version: d.Version, at: c.env.Now(), stores: true}
		c.env.Send(c.layout.Node(r, d.Key), &wire.DepCheck{Req: c.nextReq, Table: c.layout.Table, Key: d.Key, Version: d.Version, Watch: true})
	}
}

// forgetOld drops the watches waiting longer than watchFor, whose
// answers were lost.
func (s *stability) forgetOld(now time.Time) {
	for req, w := range s.watches {
		if now.Sub(w.at) >= watchFor {
			delete(s.watches, req)
			delete(s.asked, w.version)
		}
	}
}

// watched takes a watch's answer.
func (c *Coordinator) watched(m *wire.DepCheckReply) {
	s := c.stability
	w, ok := s.watches[m.Req]
	if !ok {
		return
	}
	delete(s.watches, m.Req)
	// A store that holds a newer version cannot tell (not Done): the
	// watch at the version's coordinator, if any, still waits.
	if m.Done || s.asked[w.version] == m.Req {
		delete(s.asked, w.version)
	}
	if m.Done {
		s.learn(w.version)
		c.releaseWaiting()
	}
}

// depCheck answers another node's question whether the coordinator's
// write m.Version is complete: at once, or with Watch once it is.
func (c *Coordinator) depCheck(from wire.NodeID, m *wire.DepCheck) {
	if e := c.incomplete[m.Version]; e != nil && m.Watch {
		// A watch sent again (every Resend until answered) is kept once.
		if ask := (askID{from, m.Req}); !slices.Contains(e.watchers, ask) {
			e.watchers = append(e.watchers, ask)
		}
		return
	}
	_, pending := c.incomplete[m.Version]
	c.env.Send(from, &wire.DepCheckReply{Req: m.Req, Table: c.layout.Table, Done: !pending})
}
