package config

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/wire"
)

// LeaseOptions sets how long a primary's lease lasts. The same values must
// hold at the primaries and the service's members.
type LeaseOptions struct {
	// Length is how long a renewal lets a primary accept Puts, counted by
	// the primary from when it asked. Default 4s.
	Length time.Duration
	// Renew is how often a primary asks for a renewal. Default 1s, so that
	// three renewals in a row may fail (a renewal takes up to three of the
	// pileus4 WAN's 435ms round trips: the request, the log's commit, the
	// grant) before the lease lapses.
	Renew time.Duration
	// Margin is the clock uncertainty both sides allow for: a primary
	// stops accepting Puts Margin before its lease ends by its clock, and
	// the leader waits Margin after the lease ends by its own before it
	// moves the primary's tablets. Default 250ms. The hybrid logical clock
	// bounds no offset of its own (package hlc), so this is the service's
	// assumption about how far two nodes' clocks may run apart over one
	// lease; DESIGN.md section 10.
	Margin time.Duration
}

// EnsureDefaults returns a copy of o with every unset field given its
// default.
func (o LeaseOptions) EnsureDefaults() LeaseOptions {
	if o.Length == 0 {
		o.Length = 4 * time.Second
	}
	if o.Renew == 0 {
		o.Renew = time.Second
	}
	if o.Margin == 0 {
		o.Margin = 250 * time.Millisecond
	}
	return o
}

// Validate names the first invalid field.
func (o LeaseOptions) Validate() error {
	switch {
	case o.Length <= 0 || o.Renew <= 0 || o.Margin < 0:
		return fmt.Errorf("config: lease length %v, renew %v and margin %v must be positive", o.Length, o.Renew, o.Margin)
	case o.Renew >= o.Length-o.Margin:
		return fmt.Errorf("config: lease renew %v must be shorter than the length %v less the margin %v", o.Renew, o.Length, o.Margin)
	}
	return nil
}

// Holds reports whether a lease asked for at asked still lets its primary
// accept a Put at now, by the primary's own clock.
func (o LeaseOptions) Holds(asked, now time.Time) bool {
	return now.Before(asked.Add(o.Length - o.Margin))
}

// leaseClock is the leader's view of every primary's lease, by its own
// clock. A lease is at least as long there as at its holder: the holder
// counts from before it asked, the leader from after the renewal
// reached it, and the leader adds the margin the holder takes off.
//
// Every member, leader or not, notes when it first held the last
// command that gave each primary a lease (a renewal, a move to it, its
// table's creation; Applied.Held): the command was proposed after its
// holder asked, so the lease, counted by its holder from before the
// asking, ends before that time plus a lease length and the margin.
// A new leader counts from there, not from its election nor from when
// it applied the command: a primary lost with the leader moves about as
// soon as it would have with the leader alive, even when its last
// renewal commits only with the new leader's first entry. A snapshot
// holds every lease it grants from before it arrived: a member that
// catches up by one counts each of its primaries from then.
type leaseClock struct {
	opts  LeaseOptions
	ends  map[wire.NodeID]time.Time
	heard map[wire.NodeID]time.Time
}

// applied notes, at a member, a command c it held from held.
func (l *leaseClock) applied(c Command, held time.Time) {
	switch c.Op {
	case OpRenew, OpMove:
		l.hear(c.Node, held)
	case OpCreate:
		for _, tb := range c.Layout.Tablets {
			l.hear(tb.Primary, held)
		}
	}
}

// restored notes, at a member, a snapshot that arrived at now, whose
// state has primaries.
func (l *leaseClock) restored(primaries []wire.NodeID, now time.Time) {
	for _, p := range primaries {
		l.hear(p, now)
	}
}

// hear notes a lease of p counted from at, unless one counted from later
// is noted already.
func (l *leaseClock) hear(p wire.NodeID, at time.Time) {
	if l.heard == nil {
		l.heard = make(map[wire.NodeID]time.Time)
	}
	if at.After(l.heard[p]) {
		l.heard[p] = at
	}
}

// lead starts a leader's view at now: every primary's lease counted from
// when this member held the last command that gave it one, or from now
// if it applied none (since it started).
func (l *leaseClock) lead(now time.Time, primaries []wire.NodeID) {
	l.ends = make(map[wire.NodeID]time.Time, len(primaries))
	for _, p := range primaries {
		at, ok := l.heard[p]
		if !ok || now.Before(at) {
			at = now
		}
		l.renewed(p, at)
	}
}

// renewed records a renewal of p's lease held from at.
func (l *leaseClock) renewed(p wire.NodeID, at time.Time) {
	l.ends[p] = at.Add(l.opts.Length + l.opts.Margin)
}

// track starts counting p's lease from now if it is not counted yet: a
// table's primary is watched from when the leader records the table.
func (l *leaseClock) track(p wire.NodeID, now time.Time) {
	if _, ok := l.ends[p]; !ok {
		l.renewed(p, now)
	}
}

// forget drops p, which is primary of nothing any more.
func (l *leaseClock) forget(p wire.NodeID) { delete(l.ends, p) }

// lapsed lists, in name order, the primaries whose lease has ended by now.
func (l *leaseClock) lapsed(now time.Time) []wire.NodeID {
	var out []wire.NodeID
	for _, p := range slices.Sorted(maps.Keys(l.ends)) {
		if !now.Before(l.ends[p]) {
			out = append(out, p)
		}
	}
	return out
}

// Elect chooses a tablet's next primary from the high timestamps its
// replicas reported, or reports false while fewer than a majority of the
// tablet's replicas have answered. Every replica holds a prefix of the
// primary's one log, so the highest high timestamp is the longest prefix,
// and a majority's answers include every Put acknowledged by w replicas
// with w + majority > N. Ties go to the replica first in the tablet's
// order (primary, then secondaries), so that every leader chooses alike.
func Elect(t wire.Tablet, highs map[wire.NodeID]hlc.Timestamp) (wire.NodeID, bool) {
	replicas := t.Replicas()
	var best wire.NodeID
	var bestTS hlc.Timestamp
	answered := 0
	for _, r := range replicas {
		ts, ok := highs[r]
		if !ok {
			continue
		}
		answered++
		if best == "" || bestTS.Less(ts) {
			best, bestTS = r, ts
		}
	}
	if answered <= len(replicas)/2 {
		return "", false
	}
	return best, true
}
