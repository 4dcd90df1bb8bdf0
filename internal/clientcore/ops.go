package clientcore

import (
	"fmt"
	"slices"
	"time"

	"github.com/cosla/cosla/internal/hlc"
	"github.com/cosla/cosla/internal/invariants"
	"github.com/cosla/cosla/internal/wire"
	"github.com/cosla/cosla/sla"
)

// GetOptions overrides a session's defaults for one Get.
type GetOptions struct {
	// SLA replaces the session's default SLA when not nil (Pileus 3.1).
	SLA sla.SLA
	// Strategy replaces the session's strategy when not zero.
	Strategy Strategy
}

// GetResult describes a Get: what it returned and how.
type GetResult struct {
	// Value is the version read; Found is false if the replica held no
	// version of the key. Both are empty when no subSLA was met.
	Value []byte
	Found bool
	// Met is the index in the SLA of the subSLA met, or -1.
	Met int
	// SubSLA is the subSLA met.
	SubSLA sla.SubSLA
	// Target is the index of the subSLA that selection aimed for, or -1
	// for the fixed strategies; ExpectedUtility is its expected utility.
	Target          int
	ExpectedUtility float64
	Strategy        Strategy
	// Node is the replica the Get went to; Primary says whether it was the
	// tablet's primary.
	Node    wire.NodeID
	Primary bool
	// RTT is the measured round-trip time.
	RTT time.Duration
	// VersionTS is the timestamp of the version read, HighTS the replica's
	// high timestamp.
	VersionTS, HighTS hlc.Timestamp
	// TimedOut is set when no reply came before every subSLA's latency
	// had passed.
	TimedOut bool
}

// Utility returns the utility delivered: the met subSLA's, or zero.
func (r GetResult) Utility() float64 {
	if r.Met < 0 {
		return 0
	}
	return r.SubSLA.Utility
}

// PutResult describes an acknowledged Put.
type PutResult struct {
	TS   hlc.Timestamp
	Node wire.NodeID
	RTT  time.Duration
}

func (c *Client) checkSession(s *Session, key string) error {
	if s.ended {
		return ErrSessionEnded
	}
	if len(key) > c.opts.MaxKeyBytes {
		return fmt.Errorf("%w: key of %d bytes, limit %d", ErrTooLarge, len(key), c.opts.MaxKeyBytes)
	}
	return nil
}

// Get reads key in session s (Pileus Fig. 2). If Get returns an error,
// done is never called; otherwise done is called exactly once, later. When
// no subSLA was met done gets ErrSLAUnmet (or ErrTimeout when the request
// timed out before every subSLA's latency had passed) and a result that
// describes the attempt but carries no data (3.3).
func (c *Client) Get(s *Session, key string, o GetOptions, done func(GetResult, error)) error {
	if err := c.checkSession(s, key); err != nil {
		return err
	}
	agreement := s.sla
	if o.SLA != nil {
		if err := o.SLA.Validate(); err != nil {
			return err
		}
		agreement = o.SLA
	}
	strategy := s.strategy
	if o.Strategy != 0 {
		strategy = o.Strategy
	}
	tv := &s.table.tablets[s.table.layout.TabletFor(key)]
	mins := c.minReadTimestamps(s, agreement, key)
	res := GetResult{Met: -1, Target: -1, Strategy: strategy}
	var pick int
	switch strategy {
	case Pileus:
		res.Target, pick, res.ExpectedUtility = selectTarget(agreement, mins, tv.replicas)
	case Primary:
		pick = 0
	case Random:
		pick = c.env.Rand().IntN(len(tv.replicas))
	case Closest:
		pick = closest(tv.replicas)
	default:
		return fmt.Errorf("%w: unknown strategy %d", ErrInvalid, strategy)
	}
	mins = slices.Clone(mins) // c.mins is scratch space
	r := tv.replicas[pick]
	res.Node, res.Primary = r.id, r.primary
	timeout, unmetErr := agreement.MaxLatency(), ErrSLAUnmet
	if timeout > c.opts.RequestTimeout {
		timeout, unmetErr = c.opts.RequestTimeout, ErrTimeout
	}
	sent := c.env.Now()
	req := c.newReq()
	c.send(r.id, &wire.GetRequest{Req: req, Tablet: tv.ref, Key: key}, req, timeout, &pending{
		onReply: func(_ wire.NodeID, m wire.Msg) {
			reply := m.(*wire.GetReply)
			res.RTT = c.observeRTT(r, sent)
			if reply.Code != wire.OK {
				done(res, fmt.Errorf("get %q from %s: %w", key, r.id, codeError(reply.Code)))
				return
			}
			r.observeHigh(reply.HighTS, c.env.Now())
			res.HighTS, res.VersionTS, res.Primary = reply.HighTS, reply.VersionTS, reply.Primary
			res.Met = metSubSLA(agreement, mins, int64(res.RTT), reply.HighTS, reply.Primary)
			if res.Met < 0 {
				done(res, fmt.Errorf("%w: get %q from %s took %s with high timestamp %s", ErrSLAUnmet, key, r.id, res.RTT, reply.HighTS))
				return
			}
			res.SubSLA = agreement[res.Met]
			if invariants.Enabled {
				m := mins[res.Met]
				invariants.Check(res.RTT <= res.SubSLA.Latency && (reply.Primary || (!m.primaryOnly && !reply.HighTS.Less(m.ts))),
					"subSLA %d (%s) reported met by %s with rtt %s, high %s, minimum %s", res.Met+1, res.SubSLA, r.id, res.RTT, reply.HighTS, m.ts)
			}
			res.Value, res.Found = reply.Value, reply.Found
			s.recordRead(key, reply.VersionTS)
			done(res, nil)
		},
		onTimeout: func() {
			// The replica was at least this slow: count it, so that a
			// node that stops answering loses its appeal (4.5).
			res.RTT = c.observeRTT(r, sent)
			res.TimedOut = true
			done(res, fmt.Errorf("%w: get %q: no reply from %s within %s", unmetErr, key, r.id, timeout))
		},
	})
	return nil
}

// Put writes key in session s at the tablet's primary (Pileus 4.2). If Put
// returns an error, done is never called; otherwise done is called exactly
// once, later. An error passed to done leaves the outcome unknown: the Put
// may still take effect.
func (c *Client) Put(s *Session, key string, value []byte, done func(PutResult, error)) error {
	if err := c.checkSession(s, key); err != nil {
		return err
	}
	if len(value) > c.opts.MaxValueBytes {
		return fmt.Errorf("%w: value of %d bytes, limit %d", ErrTooLarge, len(value), c.opts.MaxValueBytes)
	}
	tv := &s.table.tablets[s.table.layout.TabletFor(key)]
	r := tv.replicas[0]
	sent := c.env.Now()
	req := c.newReq()
	m := &wire.PutRequest{Req: req, Tablet: tv.ref, Key: key, Value: slices.Clone(value), MinTS: s.maxTS}
	c.send(r.id, m, req, c.opts.RequestTimeout, &pending{
		onReply: func(_ wire.NodeID, m wire.Msg) {
			reply := m.(*wire.PutReply)
			// A Put's round trip includes the primary's synced write, which
			// a Get never waits for, so it is not a sample of PNodeLat
			// (Pileus 4.5 estimates how fast a node answers Gets). Nor is
			// it contact: the monitor keeps probing a node that only takes
			// Puts, or its latency estimate would never be refreshed.
			// A timeout, below, still counts.
			res := PutResult{Node: r.id, RTT: c.env.Now().Sub(sent)}
			if reply.Code != wire.OK {
				done(res, fmt.Errorf("put %q at %s: %w", key, r.id, codeError(reply.Code)))
				return
			}
			r.high = hlc.Max(r.high, reply.TS)
			res.TS = reply.TS
			s.recordPut(key, reply.TS)
			done(res, nil)
		},
		onTimeout: func() {
			c.observeRTT(r, sent)
			done(PutResult{Node: r.id}, fmt.Errorf("%w: put %q: no reply from primary %s within %s", ErrTimeout, key, r.id, c.opts.RequestTimeout))
		},
	})
	return nil
}

// probe asks a replica for its high timestamp, measuring the round trip.
// finished, if not nil, is called when the probe is answered or times out;
// a probe already in flight is not repeated, and then finished is not
// called.
func (c *Client) probe(ref wire.TabletRef, r *replicaState, finished func()) {
	if r.probing {
		return
	}
	r.probing = true
	sent := c.env.Now()
	req := c.newReq()
	c.send(r.id, &wire.ProbeRequest{Req: req, Tablet: ref}, req, c.opts.ProbeTimeout, &pending{
		onReply: func(_ wire.NodeID, m wire.Msg) {
			r.probing = false
			c.observeRTT(r, sent)
			if reply := m.(*wire.ProbeReply); reply.Code == wire.OK {
				r.observeHigh(reply.HighTS, c.env.Now())
			}
			if finished != nil {
				finished()
			}
		},
		onTimeout: func() {
			r.probing = false
			c.observeRTT(r, sent)
			if finished != nil {
				finished()
			}
		},
	})
}

// probeIdle probes every replica of every open table that the client has
// not heard from within the probe interval (Pileus 4.5), and forgets
// round-trip samples that have left the window.
func (c *Client) probeIdle() {
	now := c.env.Now()
	for _, s := range c.rtt {
		s.expire(now.Add(-c.opts.RTTWindow))
	}
	for _, name := range sortedKeys(c.tables) {
		t := c.tables[name]
		for i := range t.tablets {
			for _, r := range t.tablets[i].replicas {
				if now.Sub(r.lastContact) >= c.opts.ProbeInterval {
					c.probe(t.tablets[i].ref, r, nil)
				}
			}
		}
	}
}

func sortedKeys[K ~string, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
