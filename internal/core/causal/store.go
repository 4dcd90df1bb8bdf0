package causal

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/cosla/cosla/internal/core/node"
	"github.com/cosla/cosla/internal/core/storage"
	"github.com/cosla/cosla/internal/core/wire"
)

// StoreOptions configures a storage node of a causal table with its
// middle man.
type StoreOptions struct {
	// Layout places the table. Required, validated.
	Layout *Layout
	// Resend is how long the node waits for an answer to a dependency
	// check or an invalidation before sending it again, at least: longer
	// for a node whose answers take longer (retransmit), and twice as
	// long after each copy, up to 8 Resends. Default 1s.
	Resend time.Duration
	// Logger. Default: discard.
	Logger *slog.Logger
}

// Store is a storage node of a causal table together with its middle man
// (Karma 4.1.1): it holds one ring's replica of its keys, and per key the
// newest version, whether that version is stable, and the caches that may
// hold it (cached-at, Karma 4.3).
//
// A write arriving from a propagator is applied once its dependencies are
// in this ring (put-after: each is checked at its key's node in the ring),
// newest version winning; then the caches that may hold the key are
// invalidated, and only when they have acknowledged is the write
// acknowledged (Karma 4.3), or counted as present by the dependency
// checks of later writes (a choice of ours: Cache's comment says why).
//
// Choices the paper leaves open (karma.md section 5):
//   - A dependency (k, v) holds in a ring once k's node there has
//     processed v: applied it, or found a newer version, after v's own
//     dependencies held, and had the caches that may hold an older
//     version of k invalidated (a write that depends on v may otherwise
//     become stable first, and a session it released read an older k
//     from a cache). A newer version alone is not enough under
//     last-writer-wins: a concurrent newer write does not carry v's causal
//     past. So a node remembers the versions it processed until they are
//     stable; asked about a version older than its own that it does not
//     remember, it waits for v to arrive or for v's coordinator to say v
//     is complete (then v's past is in every ring), whichever is first.
//   - STABLE for an old version meets a newer version in flight: the key
//     stays in flight until the newer one's STABLE. Stability is stored
//     unsynced: a lost bit only leaves a stable version in flight, which
//     is safe (Karma 4.1.2).
//   - Cached-at sets are volatile. After a restart the node tells every
//     cache to drop what it filled from it, and acknowledges no write
//     until every cache has done so.
type Store struct {
	opts   StoreOptions
	layout *Layout
	env    node.Env
	ring   int
	batch  storage.Batch

	// processed holds, per key, the versions processed here and not yet
	// known stable.
	processed map[string]map[wire.Version]struct{}
	cachedAt  map[string][]wire.NodeID
	// invalidating holds, per key with invalidations outstanding, the
	// acknowledgements that wait for them: a write of the key, or a copy
	// of one sent again, is acknowledged only once no cache can hold an
	// older version.
	invalidating map[string]*invalidation
	// inProgress are the propagated writes taken and not yet
	// acknowledged: a copy sent again meanwhile is dropped. answering are
	// the dependency checks of other nodes waited on, likewise.
	inProgress map[propID]bool
	answering  map[askID]bool
	// waiters are dependency checks waiting for a version of a key to be
	// processed here (or to become stable).
	waiters map[string][]waiter
	// stableWatches are coordinators' watches (DepCheck with Watch)
	// waiting for a version of a key to become stable here, one per
	// coordinator and version: a coordinator that cannot hear from the
	// version's own coordinator learns it here (stability.go).
	stableWatches map[string][]stableWatch
	// stableSeen are the versions whose STABLE came, newer versions of
	// their keys since or not, so that a watch of one overwritten here
	// is answered all the same.
	stableSeen stableSet
	nextReq    uint64
	// checking are the dependency checks (and watches) sent and not yet
	// answered, by what they ask: the checks of one version at one node
	// share a request.
	checking map[checkID]uint64
	// out holds the requests this node sent and awaits answers to, to
	// send again after retx's wait; done is what to do with the answer.
	out  map[uint64]*outbound
	retx *retransmit
	// resetting are the caches that have not acknowledged the reset sent
	// at start; held are the acknowledgements waiting for them.
	resetting map[wire.NodeID]bool
	held      []heldAck
	retrying  bool
	metrics   StoreMetrics
}

// StoreMetrics counts what a store did.
type StoreMetrics struct {
	// AbandonedReads are the reads dropped unserved because their sender
	// had stopped waiting for them (wire.Read's Deadline).
	AbandonedReads uint64
}

type stableWatch struct {
	from    wire.NodeID
	req     uint64
	version wire.Version
}

type waiter struct {
	version wire.Version
	done    func()
}

type outbound struct {
	to   wire.NodeID
	msg  wire.Msg
	sent time.Time
	// resent counts the copies sent after the first (up to 5): the
	// answer to a request sent more than once is not measured
	// (retransmit), and each copy doubles the wait for the next.
	resent uint8
	// onDepCheck or onAck run when the answer comes.
	onDepCheck []func(done bool)
	onAck      func()
}

type propID struct {
	client  wire.NodeID
	session uint64
	seq     uint64
}

type checkID struct {
	to      wire.NodeID
	key     string
	version wire.Version
	watch   bool
}

type askID struct {
	from wire.NodeID
	req  uint64
}

type invalidation struct {
	left    int
	waiting []func()
}

type heldAck struct {
	to  wire.NodeID
	ack *wire.PropagateAck
}

type retryTimer struct{}

// EnsureDefaults returns a copy of o with unset fields given their
// defaults (see package node: the options idiom).
func (o StoreOptions) EnsureDefaults() StoreOptions {
	o.Resend = cmp.Or(o.Resend, time.Second)
	o.Logger = cmp.Or(o.Logger, slog.New(slog.DiscardHandler))
	return o
}

// Validate checks the options.
func (o StoreOptions) Validate() error {
	if o.Layout == nil {
		return errors.New("causal: StoreOptions.Layout is required")
	}
	if o.Resend < 0 {
		return errors.New("causal: StoreOptions.Resend must not be negative")
	}
	return nil
}

// NewStore returns a store; Start starts it.
func NewStore(opts StoreOptions) *Store {
	return &Store{opts: opts.EnsureDefaults()}
}

// Start implements node.Handler.
func (s *Store) Start(env node.Env) error {
	if err := s.opts.Validate(); err != nil {
		return err
	}
	s.env = env
	s.layout = s.opts.Layout
	s.ring = s.layout.RingOf(env.ID())
	if s.ring < 0 {
		return fmt.Errorf("causal: store %s is in no ring of table %d", env.ID(), s.layout.Table)
	}
	s.nextReq = firstReq(env)
	s.processed = map[string]map[wire.Version]struct{}{}
	s.cachedAt = map[string][]wire.NodeID{}
	s.invalidating = map[string]*invalidation{}
	s.inProgress = map[propID]bool{}
	s.answering = map[askID]bool{}
	s.waiters = map[string][]waiter{}
	s.stableWatches = map[string][]stableWatch{}
	s.stableSeen = newLearntSet[wire.Version]()
	s.out = map[uint64]*outbound{}
	s.checking = map[checkID]uint64{}
	s.retx = newRetransmit(s.opts.Resend)
	s.resetting = map[wire.NodeID]bool{}
	for _, cache := range s.layout.CacheNodes() {
		s.resetting[cache] = true
		s.request(cache, &wire.Invalidate{Table: s.layout.Table}, func() {
			delete(s.resetting, cache)
			if len(s.resetting) == 0 {
				for _, h := range s.held {
					s.env.Send(h.to, h.ack)
				}
				s.held = nil
			}
		})
	}
	return nil
}

// request sends an invalidation and keeps it to send again until onAck.
func (s *Store) request(to wire.NodeID, m *wire.Invalidate, onAck func()) {
	s.send(&outbound{to: to, msg: m, onAck: onAck})
}

// check asks node to whether version v of key is processed there, or
// with watch whether v is complete (stable), and runs f with the answer.
// The checks of one version at one node share one request: every write
// that depends on a version checks it, and at a node slowed by load each
// copy, and each copy sent again, is one more message served before the
// answers (TestRandomizedCausalBusy seed 3305: two nodes of a ring,
// serving a message in 10 ms, asked each other for the same versions
// over a thousand times, and their queues never drained).
func (s *Store) check(to wire.NodeID, key string, v wire.Version, watch bool, f func(done bool)) {
	id := checkID{to, key, v, watch}
	if req, ok := s.checking[id]; ok {
		o := s.out[req]
		o.onDepCheck = append(o.onDepCheck, f)
		return
	}
	m := &wire.DepCheck{Table: s.layout.Table, Key: key, Version: v, Watch: watch}
	s.checking[id] = s.send(&outbound{to: to, msg: m, onDepCheck: []func(bool){f}})
}

// send numbers and sends a request needing an answer, and keeps it to
// send again.
func (s *Store) send(o *outbound) uint64 {
	s.nextReq++
	req := s.nextReq
	switch m := o.msg.(type) {
	case *wire.DepCheck:
		m.Req = req
	case *wire.Invalidate:
		m.Req = req
	}
	o.sent = s.env.Now()
	s.out[req] = o
	s.env.Send(o.to, o.msg)
	if !s.retrying {
		s.retrying = true
		s.env.After(s.opts.Resend, retryTimer{})
	}
	return req
}

// Fire implements node.Handler: requests unanswered for their wait
// (retransmit), doubled for each copy already sent, go again.
func (s *Store) Fire(timer any) {
	if _, ok := timer.(retryTimer); !ok {
		return
	}
	s.retrying = false
	now := s.env.Now()
	for _, req := range slices.Sorted(maps.Keys(s.out)) {
		o := s.out[req]
		if now.Sub(o.sent) >= s.retx.backoff(o.to, o.resent) {
			o.sent, o.resent = now, min(o.resent+1, 5)
			s.env.Send(o.to, o.msg)
		}
	}
	if len(s.out) > 0 {
		s.retrying = true
		s.env.After(s.opts.Resend, retryTimer{})
	}
}

// Receive implements node.Handler.
func (s *Store) Receive(from wire.NodeID, m wire.Msg) {
	switch m := m.(type) {
	case *wire.Propagate:
		if m.Table == s.layout.Table {
			s.propagate(from, m)
		}
	case *wire.Stable:
		if m.Table == s.layout.Table {
			s.stable(m)
		}
	case *wire.Read:
		s.read(from, m)
	case *wire.DepCheck:
		ask := askID{from, m.Req}
		if m.Table == s.layout.Table && m.Watch {
			s.watchStable(from, m)
			return
		}
		if m.Table == s.layout.Table && !s.answering[ask] {
			s.answering[ask] = true
			s.whenProcessed(m.Key, m.Version, func() {
				delete(s.answering, ask)
				s.env.Send(from, &wire.DepCheckReply{Req: m.Req, Table: s.layout.Table, Done: true})
			})
		}
	case *wire.DepCheckReply:
		if o := s.out[m.Req]; o != nil && o.to == from && o.onDepCheck != nil {
			s.answered(m.Req, o)
			c := o.msg.(*wire.DepCheck)
			delete(s.checking, checkID{o.to, c.Key, c.Version, c.Watch})
			for _, f := range o.onDepCheck {
				f(m.Done)
			}
		}
	case *wire.InvalidateAck:
		if o := s.out[m.Req]; o != nil && o.to == from && o.onAck != nil {
			s.answered(m.Req, o)
			o.onAck()
		}
	}
}

// answered retires request req, answered.
func (s *Store) answered(req uint64, o *outbound) {
	delete(s.out, req)
	if o.resent == 0 {
		s.retx.answered(o.to, s.env.Now().Sub(o.sent))
	}
}

func (s *Store) load(key string) (record, bool) {
	v, ok, err := s.env.Engine().Get(valueKey(s.layout.Table, key))
	if err != nil || !ok {
		if err != nil {
			s.opts.Logger.Error("causal: read", "key", key, "err", err)
		}
		return record{}, false
	}
	r, err := decodeRecord(v)
	if err != nil {
		s.opts.Logger.Error("causal: decode", "key", key, "err", err)
		return record{}, false
	}
	return r, true
}

// propagate takes a put, put-after or notify-after (Karma Fig. 5).
func (s *Store) propagate(from wire.NodeID, m *wire.Propagate) {
	id := propID{m.Client, m.Session, m.Seq}
	if s.inProgress[id] {
		return
	}
	s.inProgress[id] = true
	left := len(m.Deps) + 1
	step := func() {
		left--
		if left == 0 {
			s.apply(from, m)
		}
	}
	for _, d := range m.Deps {
		to := s.layout.Node(s.ring, d.Key)
		if to == s.env.ID() {
			s.whenProcessed(d.Key, d.Version, step)
			continue
		}
		s.check(to, d.Key, d.Version, false, func(bool) { step() })
	}
	step()
}

// apply writes a propagated version whose dependencies hold here, newest
// version winning, invalidates the caches that may hold the key, and
// then acknowledges.
func (s *Store) apply(from wire.NodeID, m *wire.Propagate) {
	ack := &wire.PropagateAck{Table: s.layout.Table, Client: m.Client, Session: m.Session, Seq: m.Seq, Ring: int32(s.ring)}
	if m.Notify {
		s.acknowledge(from, ack)
		return
	}
	cur, _ := s.load(m.Key)
	if cur.version.Less(m.Version) {
		s.batch.Reset()
		s.batch.Set(valueKey(s.layout.Table, m.Key), encodeRecord(record{version: m.Version, value: m.Value}))
		if err := s.env.Engine().Apply(&s.batch, true); err != nil {
			s.opts.Logger.Error("causal: write", "key", m.Key, "err", err)
			delete(s.inProgress, propID{m.Client, m.Session, m.Seq})
			return // unacknowledged: the propagator sends it again
		}
	}
	// The version is processed here, and a dependency on it holds, once
	// no cache can serve an older version of the key: a write that
	// depends on it may complete, and be announced stable, before it
	// does, and a session that a restriction on that write bound is then
	// released to the caches (TestCausalFaults, seed 191: a cache cut
	// off from its site's storage served a version older than the causal
	// past of a stable one).
	processed := func() {
		if cur.version != m.Version || !cur.stable {
			set := s.processed[m.Key]
			if set == nil {
				set = map[wire.Version]struct{}{}
				s.processed[m.Key] = set
			}
			set[m.Version] = struct{}{}
		}
		s.release(m.Key, m.Version)
	}
	caches := s.cachedAt[m.Key]
	if cur.version.Less(m.Version) && len(caches) > 0 {
		delete(s.cachedAt, m.Key)
		inv := s.invalidating[m.Key]
		if inv == nil {
			inv = &invalidation{}
			s.invalidating[m.Key] = inv
		}
		inv.left += len(caches)
		for _, cache := range caches {
			s.request(cache, &wire.Invalidate{Table: s.layout.Table, Key: m.Key, Version: m.Version}, func() {
				inv.left--
				if inv.left == 0 {
					delete(s.invalidating, m.Key)
					for _, f := range inv.waiting {
						f()
					}
				}
			})
		}
	}
	// The version counts as processed here only once no cache filled from
	// this node can serve an older one (Cache's comment).
	if inv := s.invalidating[m.Key]; inv != nil {
		inv.waiting = append(inv.waiting, func() {
			processed()
			s.acknowledge(from, ack)
		})
		return
	}
	processed()
	s.acknowledge(from, ack)
}

func (s *Store) acknowledge(to wire.NodeID, ack *wire.PropagateAck) {
	delete(s.inProgress, propID{ack.Client, ack.Session, ack.Seq})
	if len(s.resetting) > 0 {
		s.held = append(s.held, heldAck{to, ack})
		return
	}
	s.env.Send(to, ack)
}

// whenProcessed runs done once version v of key has been processed here
// (see Store's comment) and the caches invalidated for the key have
// acknowledged, so that no session that learns of v through a later
// write can read an older version from an entry this node filled
// (Cache's comment).
func (s *Store) whenProcessed(key string, v wire.Version, done func()) {
	if inv := s.invalidating[key]; inv != nil {
		inv.waiting = append(inv.waiting, func() { s.whenProcessed(key, v, done) })
		return
	}
	if _, ok := s.processed[key][v]; ok {
		done()
		return
	}
	// A version known stable was processed in every ring, this one too.
	if s.stableSeen.has(v) {
		done()
		return
	}
	cur, _ := s.load(key)
	switch c := cur.version.Compare(v); {
	case c == 0:
		done()
		return
	case c > 0 && v.Origin != "":
		// Processed and forgotten (once stable, or by a restart), or not
		// yet arrived and overtaken by a newer version. Whichever comes
		// first, its arrival or its coordinator's word that it is
		// complete, releases the wait. Asking once was not enough: a node
		// restarted after it acknowledged v, told "not complete", waited
		// for a v that would not come again and a Stable that was lost
		// (TestRandomizedCausal seed 6045).
		s.wait(key, v, done)
		s.check(v.Origin, key, v, true, func(done bool) {
			if done {
				s.stableSeen.learn(v)
			}
			s.release(key, v)
		})
		return
	}
	s.wait(key, v, done)
}

func (s *Store) wait(key string, v wire.Version, done func()) {
	if _, ok := s.processed[key][v]; ok {
		done()
		return
	}
	s.waiters[key] = append(s.waiters[key], waiter{v, done})
}

// release runs the waiters for version v of key.
func (s *Store) release(key string, v wire.Version) {
	ws := s.waiters[key]
	if len(ws) == 0 {
		return
	}
	var keep []waiter
	var run []func()
	for _, w := range ws {
		if w.version == v {
			run = append(run, w.done)
		} else {
			keep = append(keep, w)
		}
	}
	if len(keep) == 0 {
		delete(s.waiters, key)
	} else {
		s.waiters[key] = keep
	}
	for _, f := range run {
		f()
	}
}

// watchStable answers a coordinator's watch of a version: Done once the
// version is stable here (its coordinator's STABLE came), at once if it
// is, or not Done at once if the node holds a newer version and has
// forgotten the version's STABLE, or never had it.
func (s *Store) watchStable(from wire.NodeID, m *wire.DepCheck) {
	cur, _ := s.load(m.Key)
	switch c := cur.version.Compare(m.Version); {
	case (c == 0 && cur.stable) || s.stableSeen.has(m.Version):
		s.env.Send(from, &wire.DepCheckReply{Req: m.Req, Table: s.layout.Table, Done: true})
	case c > 0:
		s.env.Send(from, &wire.DepCheckReply{Req: m.Req, Table: s.layout.Table})
	default:
		ws := s.stableWatches[m.Key]
		if i := slices.IndexFunc(ws, func(w stableWatch) bool { return w.from == from && w.version == m.Version }); i >= 0 {
			ws[i].req = m.Req // asked again: the newer request is the one waited on
			return
		}
		s.stableWatches[m.Key] = append(ws, stableWatch{from, m.Req, m.Version})
	}
}

// stable records that a version is in every ring (Karma 4.1.2 STABLE).
func (s *Store) stable(m *wire.Stable) {
	s.release(m.Key, m.Version)
	s.stableSeen.learn(m.Version)
	if ws := s.stableWatches[m.Key]; len(ws) > 0 {
		ws = slices.DeleteFunc(ws, func(w stableWatch) bool {
			if w.version != m.Version {
				return false
			}
			s.env.Send(w.from, &wire.DepCheckReply{Req: w.req, Table: s.layout.Table, Done: true})
			return true
		})
		if len(ws) == 0 {
			delete(s.stableWatches, m.Key)
		} else {
			s.stableWatches[m.Key] = ws
		}
	}
	if set := s.processed[m.Key]; set != nil {
		delete(set, m.Version)
		if len(set) == 0 {
			delete(s.processed, m.Key)
		}
	}
	cur, ok := s.load(m.Key)
	if !ok || cur.version != m.Version || cur.stable {
		return
	}
	cur.stable = true
	s.batch.Reset()
	s.batch.Set(valueKey(s.layout.Table, m.Key), encodeRecord(cur))
	if err := s.env.Engine().Apply(&s.batch, false); err != nil {
		s.opts.Logger.Error("causal: mark stable", "key", m.Key, "err", err)
	}
}

// read serves a coordinator's read or a cache's fill. A key never written
// is stable: its initial state is in every ring. A fill of a stable
// version puts the cache in the key's cached-at set (Karma 4.3); a cache
// does not keep an in-flight version (Cache's comment), so a fill of one
// does not.
func (s *Store) read(from wire.NodeID, m *wire.Read) {
	reply := &wire.ReadReply{Req: m.Req, Table: s.layout.Table, Source: wire.FromRing, Ring: int32(s.ring), Node: s.env.ID()}
	if m.Table != s.layout.Table {
		reply.Code = wire.NoTable
		s.env.Send(from, reply)
		return
	}
	if abandoned(s.env, m) {
		s.metrics.AbandonedReads++
		return
	}
	cur, ok := s.load(m.Key)
	reply.Found, reply.Value, reply.Version = ok, cur.value, cur.version
	reply.InFlight = ok && !cur.stable
	if m.Fill && !reply.InFlight && !slices.Contains(s.cachedAt[m.Key], from) {
		s.cachedAt[m.Key] = append(s.cachedAt[m.Key], from)
	}
	s.env.Send(from, reply)
}

// firstReq is where a core's request numbers start: at random, so that a
// restarted node does not reuse its previous incarnation's, whose
// answers may still arrive (a store that took a new dependency check for
// a copy of an old one dropped it, and waited for good: TestRandomizedCausal
// seed 1579 with ring restrictions lifted at stability).
func firstReq(env node.Env) uint64 { return env.Rand().Uint64() >> 1 }

// abandoned reports whether the sender of m has stopped waiting for it.
func abandoned(env node.Env, m *wire.Read) bool {
	return !m.Deadline.IsZero() && env.WallNanos() > m.Deadline.WallNanos
}

// Metrics returns the store's counters.
func (s *Store) Metrics() StoreMetrics { return s.metrics }

// Versions returns the newest version the node holds of every key, for
// checking convergence after quiescence.
func (s *Store) Versions() (map[string]wire.Version, error) {
	out := map[string]wire.Version{}
	prefix := valueKey(s.layout.Table, "")
	end := valueKey(s.layout.Table+1, "")
	err := storage.Walk(s.env.Engine(), prefix, end, func(k, v []byte) (bool, error) {
		r, err := decodeRecord(v)
		if err != nil {
			return false, err
		}
		out[string(k[len(prefix):])] = r.version
		return true, nil
	})
	return out, err
}
