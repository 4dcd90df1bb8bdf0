package clientcore

import (
	"fmt"
	"slices"
	"time"

	"github.com/cosla/cosla/internal/core/causal"
	"github.com/cosla/cosla/internal/core/node"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/keyfmt"
	"github.com/cosla/cosla/sla"
)

// This file serves causal tables (Karma, DESIGN.md section 5) through the
// same Client, Table and Session: the client side of package causal runs
// inside the client core, one per open causal table, and talks to the
// coordinator at the client's site.

// causalTable is an open causal table's client side.
type causalTable struct {
	layout *causal.Layout
	client *causal.Client
	cc     wire.NodeID
}

// CausalRead says where a read of a causal table came from (Karma Fig. 3).
type CausalRead struct {
	// Version is the version read: its timestamp (also GetResult's
	// VersionTS) and the coordinator that wrote it.
	Version wire.Version
	// Source: the session's write buffer, the site's cache or a ring.
	Source wire.Source
	// Ring is the ring read (wire.NoRing for the write buffer and a cache
	// hit) and RingName its name.
	Ring     int32
	RingName string
	// InFlight: the version was not yet in every ring when read; the
	// session is then bound to Ring until it is (dynamic ring restriction).
	InFlight bool
	// Restricted: the session was bound to a ring when it read.
	Restricted bool
}

// TxItem is one key's value in a get-transaction's result.
type TxItem struct {
	Key   string
	Value []byte
	Found bool
	CausalRead
}

// TxResult is a get-transaction's result (Karma 4.5): a causally
// consistent snapshot of its keys, read from one ring in Rounds rounds.
type TxResult struct {
	Items      []TxItem
	Ring       int32
	RingName   string
	Rounds     int
	Restricted bool
	Node       wire.NodeID
	RTT        time.Duration
}

// causalConsistencies are the guarantees a causal table's Get may ask
// for: causal consistency implies the session guarantees.
var causalConsistencies = []sla.Kind{sla.Causal, sla.ReadMyWrites, sla.Monotonic, sla.Eventual}

// checkCausalSLA refuses an SLA a causal table cannot serve.
func checkCausalSLA(s sla.SLA) error {
	for _, sub := range s {
		if !slices.Contains(causalConsistencies, sub.Consistency.Kind) {
			return fmt.Errorf("%w: a causal table serves causal, read-my-writes, monotonic and eventual reads, not %s", ErrInvalid, sub.Consistency)
		}
	}
	return nil
}

// causalTables are the client sides of a client's open causal tables.
type causalTables struct {
	byID map[uint64]*causalTable
	// sessions numbers the sessions begun on them.
	sessions uint64
}

// open starts the client side of a causal table at the client env, with
// the client's options.
func (ts *causalTables) open(env node.Env, opts Options, l wire.Layout) (*causalTable, error) {
	layout, err := causal.LayoutOf(&l)
	if err != nil {
		return nil, fmt.Errorf("%w: table %q: %w", ErrInvalid, l.Name, err)
	}
	site := causal.Site(env.ID())
	cc := layout.Coordinators[site]
	if cc == "" {
		return nil, fmt.Errorf("%w: causal table %q has no coordinator at this client's site %q", ErrInvalid, l.Name, site)
	}
	if old := ts.byID[l.ID]; old != nil {
		return old, nil
	}
	client := causal.NewClient(causal.ClientOptions{Layout: layout, Coordinator: cc, Timeout: opts.RequestTimeout, NotifyEvery: opts.NotifyEvery})
	if err := client.Start(node.RouteTimers(env, l.ID)); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	ct := &causalTable{layout: layout, client: client, cc: cc}
	if ts.byID == nil {
		ts.byID = map[uint64]*causalTable{}
	}
	ts.byID[l.ID] = ct
	return ct, nil
}

// session begins a session on the open causal table ct.
func (ts *causalTables) session(ct *causalTable) *causal.Session {
	ts.sessions++
	return ct.client.Session(ts.sessions)
}

// receive hands a causal message to its table's client side.
func (ts *causalTables) receive(from wire.NodeID, m wire.Msg) bool {
	table, ok := causal.TableOf(m)
	if !ok {
		return false
	}
	if ct := ts.byID[table]; ct != nil {
		ct.client.Receive(from, m)
	}
	return true
}

// fire hands a causal table's timer, routed by its table ID, to the
// table's client side.
func (ts *causalTables) fire(t node.RoutedTimer) {
	if ct := ts.byID[t.Route]; ct != nil {
		ct.client.Fire(t.Timer)
	}
}

func (ct *causalTable) ringName(r int32) string {
	if r < 0 || int(r) >= len(ct.layout.Rings) {
		return ""
	}
	return ct.layout.Rings[r].Name
}

// causalError maps a causal reply's code to the client's errors.
func causalError(code wire.Code) error {
	switch code {
	case wire.OK:
		return nil
	case wire.Unavailable:
		return fmt.Errorf("%w: no ring of the causal table answered in time", ErrTimeout)
	case wire.Aborted:
		return ErrAborted
	}
	return codeError(code)
}

// putCausal writes into the session's write buffer at its coordinator,
// which acknowledges at once and propagates to every ring (Karma 4.1.2).
func (c *Client) putCausal(s *Session, key string, value []byte, o PutOptions, done func(PutResult, error)) error {
	if o.Bound != wire.NoBound || o.Test != nil || o.Write.set() {
		return fmt.Errorf("%w: a causal table's Put takes no bound, test or write level: it is acknowledged once durable in the site's write buffer", ErrInvalid)
	}
	ct := s.table.causal
	sent := c.env.Now()
	done = c.countPut(done)
	ct.client.Put(s.causal, key, value, func(r causal.Result) {
		done(PutResult{TS: r.Version.TS, Node: ct.cc, RTT: c.env.Now().Sub(sent)}, causalError(r.Code))
	})
	return nil
}

// getCausal reads through the coordinator (Karma Fig. 3). Every
// consistency a causal table serves holds, so the subSLA met is the first
// whose latency the read met.
func (c *Client) getCausal(s *Session, key string, o GetOptions, done func(GetResult, error)) error {
	if o.Bound != wire.NoBound || o.Read.set() {
		return fmt.Errorf("%w: a causal table's Get takes no bound or read level: its coordinator reads one ring or its site's cache", ErrInvalid)
	}
	agreement := s.sla
	if o.SLA != nil {
		agreement = o.SLA
		if err := checkCausalSLA(agreement); err != nil {
			return err
		}
	}
	ct := s.table.causal
	sent := c.env.Now()
	ct.client.Get(s.causal, key, func(r causal.Result) {
		rtt := c.env.Now().Sub(sent)
		res := GetResult{Met: -1, Target: -1, Node: r.Node, RTT: rtt, VersionTS: r.Version.TS,
			Causal: &CausalRead{Version: r.Version, Source: r.Source, Ring: r.Ring, RingName: ct.ringName(r.Ring), InFlight: r.InFlight, Restricted: r.Restricted}}
		if err := causalError(r.Code); err != nil {
			c.counters.get(agreement, -1, c.env.Now())
			if r.Code == wire.Unavailable {
				res.TimedOut = true
				err = ct.timeoutError(key, r)
			}
			done(res, err)
			return
		}
		for i, sub := range agreement {
			if rtt <= sub.Latency {
				res.Met, res.SubSLA = i, sub
				break
			}
		}
		c.counters.get(agreement, res.Met, c.env.Now())
		if res.Met < 0 {
			done(GetResult{Met: -1, Target: -1, Node: r.Node, RTT: rtt, Causal: res.Causal}, ErrSLAUnmet)
			return
		}
		res.Value, res.Found = r.Value, r.Found
		done(res, nil)
	})
	return nil
}

// timeoutError says which node a causal Get of key waited for in vain:
// the coordinator itself, which did not answer within the client's
// timeout, or the ring's node the coordinator read last (a read bound to
// a ring, Karma 4.2, waits for that one node until the read's deadline),
// if it names one.
func (ct *causalTable) timeoutError(key string, r causal.Result) error {
	switch r.Node {
	case ct.cc:
		return fmt.Errorf("%w: get %s: no answer from the coordinator %s", ErrTimeout, keyfmt.Quote(key), ct.cc)
	case "":
		return fmt.Errorf("get %s: %w", keyfmt.Quote(key), causalError(r.Code))
	}
	bound := ""
	if r.Restricted {
		bound = "; a ring restriction binds the session to that ring (Karma 4.2)"
	}
	return fmt.Errorf("%w: get %s: %s of ring %d (%s) did not answer before the read's deadline%s",
		ErrTimeout, keyfmt.Quote(key), r.Node, r.Ring, ct.ringName(r.Ring), bound)
}

// GetTx reads keys of a causal table as one causally consistent snapshot
// (Karma 4.5). If GetTx returns an error, done is never called.
func (c *Client) GetTx(s *Session, keys []string, done func(TxResult, error)) error {
	if s.ended {
		return ErrSessionEnded
	}
	if s.table.causal == nil {
		return fmt.Errorf("%w: table %q is not a causal table: get-transactions are for causal tables", ErrInvalid, s.table.Name())
	}
	if len(keys) == 0 {
		return fmt.Errorf("%w: a get-transaction needs at least one key", ErrInvalid)
	}
	seen := map[string]bool{}
	for _, k := range keys {
		if len(k) > c.opts.MaxKeyBytes {
			return fmt.Errorf("%w: key of %d bytes, limit %d", ErrTooLarge, len(k), c.opts.MaxKeyBytes)
		}
		if seen[k] {
			return fmt.Errorf("%w: key %s is named twice", ErrInvalid, keyfmt.Quote(k))
		}
		seen[k] = true
	}
	ct := s.table.causal
	sent := c.env.Now()
	ct.client.GetTx(s.causal, keys, func(r causal.Result) {
		res := TxResult{Ring: r.Ring, RingName: ct.ringName(r.Ring), Rounds: int(r.Rounds), Restricted: r.Restricted,
			Node: ct.cc, RTT: c.env.Now().Sub(sent)}
		if err := causalError(r.Code); err != nil {
			done(res, err)
			return
		}
		for _, it := range r.Items {
			res.Items = append(res.Items, TxItem{Key: it.Key, Value: it.Value, Found: it.Found, CausalRead: CausalRead{
				Version: it.Version, Source: it.Source, Ring: r.Ring, RingName: res.RingName, InFlight: it.InFlight, Restricted: r.Restricted}})
		}
		done(res, nil)
	})
	return nil
}
