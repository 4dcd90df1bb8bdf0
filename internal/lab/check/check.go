package check

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/sla"
)

// Check verifies every rule of the package documentation against h and
// returns the violations ordered by op index. A nil result means the history
// is sane and every Get reported as meeting a subSLA met it.
func Check(h []Op) []Violation {
	c := &checker{h: h, st: make([]opState, len(h))}
	c.checkOps()
	c.indexPuts()
	c.resolveReads()
	c.orderSessions()
	c.checkVersionOrder()
	c.checkSessions()
	c.checkRealTime()
	c.checkQuorum()
	c.checkCausal()
	slices.SortStableFunc(c.vs, func(a, b Violation) int { return cmp.Compare(a.Op, b.Op) })
	return c.vs
}

// opState is what the checker derives about one op.
type opState struct {
	valid bool // Kind is Put or Get

	// Puts.
	acked      bool          // OK with a positive timestamp
	pending    bool          // OK and Pending: ordered after it returned
	lost       bool          // Lost: rolled back at a failover, binds no Get
	tsKnown    bool          // ts is the version timestamp of the Put
	ts         hlc.Timestamp // when tsKnown
	revealedBy int           // the Get whose TS revealed an unacknowledged Put's ts, or -1

	// Gets.
	checked   bool          // OK and Met is valid: the guarantee is checked
	retKnown  bool          // ret is the timestamp of the version returned
	ret       hlc.Timestamp // zero when not Found
	writer    int           // the Put whose value a Found Get returned, or -1
	readsFrom bool          // writer -> this Get is an edge of causal precedence
	retLost   bool          // the version returned is a Lost Put's: it binds no later Get

	// Sessions.
	sessionLink
	sessionPut    ref  // newest acked Put to the key earlier in the session (strong)
	sessionQuorum ref  // newest acked Put to the key earlier in the session with r + w > N (quorum)
	orderReported bool // a version-order violation was reported for this Put
}

type keyValue struct{ key, value string }

type checker struct {
	h  []Op
	st []opState
	vs []Violation

	putIndex
	sessions [][]int // ops of each session in session order
}

func (c *checker) report(op int, rule, format string, args ...any) {
	c.vs = append(c.vs, Violation{Op: op, Rule: rule, Detail: fmt.Sprintf(format, args...)})
}

// positive reports whether ts can be a version timestamp: the zero
// timestamp means "no version" and every Clock issues larger ones.
func positive(ts hlc.Timestamp) bool { return (hlc.Timestamp{}).Less(ts) }

// checkOps checks each op on its own: kind, times, timestamps of
// acknowledged Puts, the reported subSLA and its latency.
func (c *checker) checkOps() {
	for i, op := range c.h {
		st := &c.st[i]
		st.revealedBy, st.writer, st.pred, st.succ = -1, -1, -1, -1
		if op.Kind != Put && op.Kind != Get {
			c.report(i, RuleHistory, "op #%d (client %s, session %s, key %q) has unknown kind %d",
				i, op.Client, op.Session, op.Key, uint8(op.Kind))
			continue
		}
		st.valid = true
		st.lost = op.Kind == Put && op.Lost
		if op.Return < op.Call {
			c.report(i, RuleHistory, "%s returned at %s, before it was called at %s", c.desc(i), op.Return, op.Call)
		}
		switch {
		case op.Kind == Put && op.OK && op.Pending:
			// Its timestamp, when known, is the one it took effect with.
			st.pending = true
			if positive(op.TS) {
				st.acked, st.tsKnown, st.ts = true, true, op.TS
			}
		case op.Kind == Put && op.OK:
			if positive(op.TS) {
				st.acked, st.tsKnown, st.ts = true, true, op.TS
			} else {
				c.report(i, RuleHistory, "%s was acknowledged with timestamp %s; a version needs a timestamp after zero", c.desc(i), op.TS)
			}
		case op.Kind == Get && op.OK:
			if err := op.Met.Consistency.Validate(); err != nil {
				c.report(i, RuleHistory, "%s reports meeting an invalid subSLA: %v", c.desc(i), err)
			} else {
				st.checked = true
			}
			if op.MetRank < 1 {
				c.report(i, RuleHistory, "%s reports meeting the subSLA of rank %d; ranks start at 1", c.desc(i), op.MetRank)
			}
			if took := op.Return - op.Call; op.Met.Latency != sla.Unbounded && took > op.Met.Latency {
				c.report(i, RuleLatency, "%s took %s, but the subSLA it reports as met allows at most %s",
					c.desc(i), took, op.Met.Latency)
			}
		}
	}
}

// indexPuts records the writer of each value and reports duplicate values.
func (c *checker) indexPuts() {
	c.putIndex = newPutIndex(len(c.h), func(i int) (string, string, bool) {
		return c.h[i].Key, c.h[i].Value, c.st[i].valid && c.h[i].Kind == Put
	}, func(i, first int) {
		c.report(i, RuleHistory, dupValue, c.desc(i), c.desc(first))
	})
}

// dupValue is the violation of a Put of a value written before.
const dupValue = "%s writes a value already written by %s; put values must be unique so that a read identifies its write"

// putIndex is where the values a history reads were written.
type putIndex struct {
	byValue    map[string]int     // first Put of each value
	byKeyValue map[keyValue][]int // Puts of each (key, value), in index order
}

// newPutIndex indexes the Puts of a history of n ops. put returns an op's
// key and value and whether it is a valid Put; dup is called for each Put
// of a value that Put first wrote before.
func newPutIndex(n int, put func(i int) (key, value string, ok bool), dup func(i, first int)) putIndex {
	x := putIndex{byValue: make(map[string]int), byKeyValue: make(map[keyValue][]int)}
	for i := range n {
		key, value, ok := put(i)
		if !ok {
			continue
		}
		if first, seen := x.byValue[value]; seen {
			dup(i, first)
		} else {
			x.byValue[value] = i
		}
		kv := keyValue{key, value}
		x.byKeyValue[kv] = append(x.byKeyValue[kv], i)
	}
	return x
}

// writerOf returns the Put a read of value at key returned: the first Put
// of value to key, or, with duplicate values, the first of them whose
// version matches the read's. Without one it returns -1, and the first Put
// of value to another key, or -1.
func (x putIndex) writerOf(key, value string, matches func(w int) bool) (writer, other int) {
	ws := x.byKeyValue[keyValue{key, value}]
	if len(ws) == 0 {
		if other, ok := x.byValue[value]; ok {
			return -1, other
		}
		return -1, -1
	}
	for _, w := range ws {
		if matches(w) {
			return w, -1
		}
	}
	return ws[0], -1
}

// resolveReads finds the Put each Found Get read from, learns the timestamps
// of unacknowledged Puts from the first Get that returned them, and checks
// that reads agree with writes.
func (c *checker) resolveReads() {
	for i, op := range c.h {
		st := &c.st[i]
		if !st.valid || op.Kind != Get || !op.OK {
			continue
		}
		if !op.Found {
			st.retKnown = true // the initial state, older than every version
			continue
		}
		writer, other := c.writerOf(op.Key, op.Value, func(w int) bool { return c.st[w].tsKnown && c.st[w].ts == op.TS })
		switch {
		case writer < 0 && other >= 0:
			c.report(i, RuleHistory, "%s read %q, which %s wrote to another key", c.desc(i), op.Value, c.desc(other))
			continue
		case writer < 0:
			// Pileus 3.2: even eventual consistency returns a value
			// written by some Put to the key.
			c.report(i, RuleEventual, "%s read %q@%s, which no put to key %q ever wrote", c.desc(i), op.Value, op.TS, op.Key)
			continue
		}
		st.writer = writer
		if w := &c.st[st.writer]; !w.tsKnown && positive(op.TS) && !slices.Contains(c.h[st.writer].RolledBack, op.TS) {
			w.tsKnown, w.ts, w.revealedBy = true, op.TS, i
		}
	}
	for i, op := range c.h {
		st := &c.st[i]
		if st.writer < 0 {
			continue
		}
		w, wst := c.h[st.writer], &c.st[st.writer]
		st.readsFrom, st.retLost = true, wst.lost
		if w.Call > op.Return {
			st.readsFrom = false // an edge from the future would make a cycle
			c.report(i, RuleHistory, "%s read %q, but %s writing it was called only after the get returned",
				c.desc(i), op.Value, c.desc(st.writer))
		}
		if op.FromSession {
			// The client's own copy: no replica's timestamp to compare.
			if !wst.pending || w.Session != op.Session || w.Call > op.Call {
				c.report(i, RuleHistory, "%s returned %q from its session's pending writes, but %s is not a pending put earlier in the session",
					c.desc(i), op.Value, c.desc(st.writer))
			}
			st.ret, st.retKnown = wst.ts, wst.tsKnown
			continue
		}
		if slices.Contains(w.RolledBack, op.TS) {
			st.ret, st.retKnown, st.retLost = op.TS, true, true
			continue
		}
		switch {
		case wst.acked && op.TS != wst.ts:
			c.report(i, RuleHistory, "%s read %q@%s, but %s was assigned %s for it",
				c.desc(i), op.Value, op.TS, c.desc(st.writer), wst.ts)
		case !wst.acked && !positive(op.TS):
			c.report(i, RuleHistory, "%s read %q@%s; a version needs a timestamp after zero", c.desc(i), op.Value, op.TS)
		case !wst.acked && op.TS != wst.ts:
			c.report(i, RuleHistory, "%s read %q@%s, but %s read the same version of unacknowledged %s@%s",
				c.desc(i), op.Value, op.TS, c.desc(wst.revealedBy), c.desc(st.writer), wst.ts)
		}
		st.ret, st.retKnown = wst.ts, wst.tsKnown
	}
}

// orderSessions puts each session's ops in session order and checks that
// a session runs one op at a time on behalf of one client. Session order is
// by Call: with one op at a time it is also the Return order, and unlike a
// strict "returned before called" test it orders ops that touch at an
// instant.
func (c *checker) orderSessions() {
	c.sessions = linkSessions(len(c.h), func(i int) (string, time.Duration, time.Duration, bool) {
		return c.h[i].Session, c.h[i].Call, c.h[i].Return, c.st[i].valid
	}, func(i int) *sessionLink { return &c.st[i].sessionLink }, func(first, prev, cur int) {
		if c.h[cur].Call < c.h[prev].Return {
			c.report(cur, RuleHistory, "%s was called while %s of the same session was still running; a session issues one op at a time",
				c.desc(cur), c.desc(prev))
		}
		if c.h[cur].Client != c.h[first].Client {
			c.report(cur, RuleHistory, "%s is in the session of %s, which belongs to another client", c.desc(cur), c.desc(first))
		}
	})
}

// putsByKey returns, per key in order of first appearance, the Puts for
// which keep is true, in index order.
func (c *checker) putsByKey(keep func(st *opState) bool) [][]int {
	index := make(map[string]int)
	var groups [][]int
	for i, op := range c.h {
		if !c.st[i].valid || op.Kind != Put || !keep(&c.st[i]) {
			continue
		}
		k, ok := index[op.Key]
		if !ok {
			k = len(groups)
			index[op.Key] = k
			groups = append(groups, nil)
		}
		groups[k] = append(groups[k], i)
	}
	return groups
}

// checkVersionOrder checks that versions of a key have distinct timestamps
// and that acknowledged Puts are ordered as in real time: the primary
// assigns update timestamps in increasing order (Pileus 4.3), so a Put
// invoked after another returned must get a larger one.
func (c *checker) checkVersionOrder() {
	// A Lost version and one written after the rollback never existed
	// together: they may share a timestamp.
	for _, puts := range c.putsByKey(func(st *opState) bool { return st.tsKnown && !st.lost }) {
		byTS := slices.Clone(puts)
		slices.SortStableFunc(byTS, func(a, b int) int { return c.st[a].ts.Compare(c.st[b].ts) })
		for k := 1; k < len(byTS); k++ {
			a, b := byTS[k-1], byTS[k]
			if c.st[a].ts == c.st[b].ts {
				c.report(b, RuleHistory, "%s has the same timestamp as %s; versions of a key need distinct timestamps",
					c.desc(b), c.desc(a))
				c.st[b].orderReported = true
			}
		}
	}
	for _, puts := range c.putsByKey(func(st *opState) bool { return st.acked }) {
		// Ops that returned before they were called are already reported
		// and have no meaningful real-time position.
		puts = slices.DeleteFunc(puts, func(i int) bool { return c.h[i].Return < c.h[i].Call })
		byCall := slices.Clone(puts)
		slices.SortStableFunc(byCall, func(a, b int) int { return cmp.Compare(c.h[a].Call, c.h[b].Call) })
		// A pending Put took effect at some time after it returned, which
		// the history does not record: it binds the Puts called after it
		// in session order only (checkSessions), not in real time. A Lost
		// Put binds none: the new primary continues from a version before
		// it, with timestamps of its own clock.
		byReturn := slices.DeleteFunc(slices.Clone(puts), func(i int) bool { return c.st[i].pending || c.st[i].lost })
		slices.SortStableFunc(byReturn, func(a, b int) int { return cmp.Compare(c.h[a].Return, c.h[b].Return) })
		var newest ref // newest Put that returned before the current one was called
		j := 0
		for _, b := range byCall {
			for ; j < len(byReturn) && c.h[byReturn[j]].Return < c.h[b].Call; j++ {
				newest = maxRef(newest, ref{ts: c.st[byReturn[j]].ts, op: byReturn[j]})
			}
			if newest.ok() && !newest.ts.Less(c.st[b].ts) && !c.st[b].orderReported {
				c.report(b, RuleHistory, "%s was assigned a timestamp no later than that of %s, which returned before it was called; version order must follow real-time order",
					c.desc(b), c.desc(newest.op))
				c.st[b].orderReported = true
			}
		}
	}
}

// checkSessions walks each session in order to check read-my-writes and
// monotonic reads, and the order of the session's own Puts (Pileus 3.2,
// 4.4: the session state is the Puts it made and the versions it read).
//
// A pending Put whose timestamp is unknown is, for its own session, the
// newest version of its key until the session's next Put to the key
// (DESIGN.md section 4: the session returns its pending writes and never
// goes back behind them): until then a read-my-writes or causal Get of
// the key in the session must return it, and so must a monotonic one once
// a Get of the session returned it. No other session can be held to it.
//
// A Lost Put and a Get that returned a Lost version enter no session
// state: the version no longer exists, so no later Get can be held to
// it. A Lost Put still ends the span in which the session's pending Put
// of unknown timestamp is the newest version of its key, and is the
// session's last Put to it: the session may return it from its pending
// writes, which do not learn of the rollback.
func (c *checker) checkSessions() {
	for _, ops := range c.sessions {
		s := newSessionState()
		for _, i := range ops {
			switch op, st := c.h[i], &c.st[i]; {
			case op.Kind == Put && st.lost:
				if st.acked {
					c.checkSessionOrder(i, s.puts[op.Key])
				}
				if st.acked || st.pending {
					s.last[op.Key] = i
				}
				delete(s.unknown, op.Key)
				delete(s.unknownRead, op.Key)
			case op.Kind == Put && st.acked:
				c.checkSessionOrder(i, s.puts[op.Key])
				s.puts[op.Key] = maxRef(s.puts[op.Key], ref{ts: st.ts, op: i})
				if !st.pending {
					s.settled[op.Key] = maxRef(s.settled[op.Key], ref{ts: st.ts, op: i})
				}
				s.last[op.Key] = i
				delete(s.unknown, op.Key)
				delete(s.unknownRead, op.Key)
			case op.Kind == Put && st.pending:
				s.last[op.Key] = i
				s.unknown[op.Key] = i
				delete(s.unknownRead, op.Key)
			case op.Kind == Get && op.OK:
				c.checkSessionGet(i, s)
			}
		}
	}
}

// sessionState is what checkSessions knows of a session so far, per key.
type sessionState struct {
	puts    map[string]ref // newest acked Put
	settled map[string]ref // the same, of the Puts not pending
	reads   map[string]ref // newest version read
	last    map[string]int // the last OK Put
	// unknown: the last OK Put, when it is pending with an unknown
	// timestamp; unknownRead: that Put, once a Get returned it.
	unknown, unknownRead map[string]int
}

func newSessionState() *sessionState {
	return &sessionState{puts: make(map[string]ref), settled: make(map[string]ref), reads: make(map[string]ref),
		last: make(map[string]int), unknown: make(map[string]int), unknownRead: make(map[string]int)}
}

// checkSessionOrder checks that acknowledged Put i got a later timestamp
// than prev, the newest acknowledged Put to its key earlier in its session.
func (c *checker) checkSessionOrder(i int, prev ref) {
	st := &c.st[i]
	if prev.ok() && !prev.ts.Less(st.ts) && !st.orderReported {
		c.report(i, RuleHistory, "%s was assigned a timestamp no later than that of %s earlier in the same session; version order must follow session order",
			c.desc(i), c.desc(prev.op))
		st.orderReported = true
	}
}

// checkSessionGet checks OK Get i against its session's state s before
// it, then adds what it read to s.
func (c *checker) checkSessionGet(i int, s *sessionState) {
	op, st := c.h[i], &c.st[i]
	if st.checked {
		c.checkUnknown(i, op.Met.Consistency.Kind, s.unknown, s.unknownRead, s.last)
	}
	if p, ok := s.unknown[op.Key]; ok && st.writer == p {
		s.unknownRead[op.Key] = p
	}
	if !st.retKnown {
		return
	}
	if st.checked {
		switch op.Met.Consistency.Kind {
		case sla.ReadMyWrites:
			if need := s.puts[op.Key]; st.ret.Less(need.ts) {
				c.reportStale(i, need, "earlier in the same session")
			}
		case sla.Monotonic:
			if need := s.reads[op.Key]; st.ret.Less(need.ts) {
				c.reportStale(i, need, "earlier in the same session")
			}
		case sla.Strong:
			// A pending Put binds strong Gets only once
			// ordered, which the history does not record.
			st.sessionPut = s.settled[op.Key]
		}
	}
	if !st.retLost {
		s.reads[op.Key] = maxRef(s.reads[op.Key], ref{ts: st.ret, op: i})
	}
}

// checkUnknown checks Get i, which reports meeting a guarantee of kind,
// against its session's pending Puts of unknown timestamp (see
// checkSessions). unknown, unknownRead and last are the session's state
// before the Get.
func (c *checker) checkUnknown(i int, kind sla.Kind, unknown, unknownRead, last map[string]int) {
	op, st := c.h[i], &c.st[i]
	var need int
	var ok bool
	switch kind {
	case sla.ReadMyWrites, sla.Causal:
		need, ok = unknown[op.Key]
		// Returning an older pending Put of the session, whose timestamp
		// is unknown, goes back behind the session's later Put.
		if w := st.writer; !ok && w >= 0 && c.st[w].pending && !c.st[w].tsKnown && c.h[w].Session == op.Session {
			if l, has := last[op.Key]; has && l != w {
				c.report(i, kind.String(), "%s %s, but %s requires the session's newest put to the key, %s",
					c.desc(i), c.readDesc(i), op.Met.Consistency, c.desc(l))
			}
		}
	case sla.Monotonic:
		need, ok = unknownRead[op.Key]
	}
	if ok && st.writer != need {
		c.report(i, kind.String(), "%s %s, but %s requires %s, whose timestamp is unknown and which is the newest version of the key for the session",
			c.desc(i), c.readDesc(i), op.Met.Consistency, c.desc(need))
	}
}

// checkRealTime checks strong and bounded(t) Gets against the acknowledged
// Puts that returned before the Get was called (strong) or more than t
// before (bounded, Pileus 3.2).
func (c *checker) checkRealTime() {
	type keyPuts struct {
		puts   []int // acked Puts in Return order
		newest []ref // newest[k] is the newest of puts[:k+1]
	}
	byKey := make(map[string]*keyPuts)
	for _, puts := range c.putsByKey(func(st *opState) bool { return st.acked && !st.pending && !st.lost }) {
		slices.SortStableFunc(puts, func(a, b int) int { return cmp.Compare(c.h[a].Return, c.h[b].Return) })
		kp := &keyPuts{puts: puts, newest: make([]ref, len(puts))}
		var newest ref
		for k, p := range puts {
			newest = maxRef(newest, ref{ts: c.st[p].ts, op: p})
			kp.newest[k] = newest
		}
		byKey[c.h[puts[0]].Key] = kp
	}
	for i, op := range c.h {
		st := &c.st[i]
		if op.Kind != Get || !st.checked || !st.retKnown {
			continue
		}
		kind := op.Met.Consistency.Kind
		if kind != sla.Strong && kind != sla.Bounded {
			continue
		}
		cutoff := op.Call
		if kind == sla.Bounded {
			cutoff -= op.Met.Consistency.Bound
		}
		var need ref
		if kp := byKey[op.Key]; kp != nil {
			n := sort.Search(len(kp.puts), func(k int) bool { return c.h[kp.puts[k]].Return >= cutoff })
			if n > 0 {
				need = kp.newest[n-1]
			}
		}
		if kind == sla.Strong {
			// Pileus 3.2 "the last preceding Put": a Put earlier in the
			// session precedes the Get even if it returned at the very
			// instant the Get was called.
			need = maxRef(need, st.sessionPut)
		}
		if !st.ret.Less(need.ts) {
			continue
		}
		p := c.h[need.op]
		switch {
		case kind == sla.Bounded:
			c.reportStale(i, need, fmt.Sprintf("which returned at %s, more than %s before the get was called at %s",
				p.Return, op.Met.Consistency.Bound, op.Call))
		case p.Return < op.Call:
			c.reportStale(i, need, fmt.Sprintf("which returned at %s, before the get was called at %s", p.Return, op.Call))
		default:
			c.reportStale(i, need, "earlier in the same session")
		}
	}
}

// reportStale reports that Get i returned a version older than need, which
// the Get's guarantee required for the reason given by why.
func (c *checker) reportStale(i int, need ref, why string) {
	op := c.h[i]
	from := c.desc(need.op)
	if c.h[need.op].Kind == Get { // monotonic: the bound is a version read before
		from += " which " + c.readDesc(need.op)
	}
	c.report(i, op.Met.Consistency.Kind.String(), "%s %s, but %s requires a version >= %s from %s, %s",
		c.desc(i), c.readDesc(i), op.Met.Consistency, need.ts, from, why)
}

// desc describes op i for a report.
func (c *checker) desc(i int) string {
	op := c.h[i]
	var b strings.Builder
	fmt.Fprintf(&b, "%s #%d (client %s, session %s, key %q", op.Kind, i, op.Client, op.Session, op.Key)
	if op.Kind == Put {
		fmt.Fprintf(&b, ", value %q", op.Value)
	}
	fmt.Fprintf(&b, ", called %s, returned %s", op.Call, op.Return)
	switch {
	case op.Kind == Put && op.OK && op.Pending && positive(op.TS):
		fmt.Fprintf(&b, ", pending, ts %s", op.TS)
	case op.Kind == Put && op.OK && op.Pending:
		b.WriteString(", pending, ts unknown")
	case op.Kind == Put && op.OK:
		fmt.Fprintf(&b, ", ts %s", op.TS)
	case op.Kind == Put && i < len(c.st) && c.st[i].revealedBy >= 0:
		fmt.Fprintf(&b, ", unacknowledged, ts %s as read by get #%d", c.st[i].ts, c.st[i].revealedBy)
	case op.Kind == Put:
		b.WriteString(", unacknowledged")
	case op.Kind == Get && op.OK:
		fmt.Fprintf(&b, ", met %s within %s at rank %d", op.Met.Consistency, latencyString(op.Met.Latency), op.MetRank)
		if op.FromSession {
			b.WriteString(", from the session")
		}
	case op.Kind == Get:
		b.WriteString(", met no subSLA")
	}
	if op.Kind == Put && op.Lost {
		b.WriteString(", lost")
	}
	if op.Level > 0 {
		fmt.Fprintf(&b, ", level %d of %d", op.Level, op.Replicas)
	}
	b.WriteString(")")
	return b.String()
}

// readDesc describes what Get i returned.
func (c *checker) readDesc(i int) string {
	op, st := c.h[i], c.st[i]
	switch {
	case !op.Found:
		return "found no version"
	case op.FromSession && st.retKnown:
		return fmt.Sprintf("read %q@%s from its session's pending writes", op.Value, st.ret)
	case op.FromSession:
		return fmt.Sprintf("read %q, of unknown timestamp, from its session's pending writes", op.Value)
	case st.ret != op.TS:
		return fmt.Sprintf("read %q@%s (reported as @%s)", op.Value, st.ret, op.TS)
	}
	return fmt.Sprintf("read %q@%s", op.Value, op.TS)
}

func latencyString(d time.Duration) string {
	if d == sla.Unbounded {
		return "unbounded"
	}
	return d.String()
}

// sessionLink is an op's place in session order.
type sessionLink struct {
	session    int      // index into the checker's sessions
	pos        position // 1-based position in session order
	pred, succ int      // neighbours in session order, or -1
}

// linkSessions groups the valid ops of a history of n by session, in the
// order each session first appears, each session's ops by Call, then
// Return; sets each op's sessionLink (link); and calls each(first, prev,
// cur) for every op cur after the first op of its session, prev its
// predecessor. op returns an op's session, call and return times, and
// whether it is valid.
func linkSessions(n int, op func(i int) (session string, call, ret time.Duration, valid bool),
	link func(i int) *sessionLink, each func(first, prev, cur int)) [][]int {
	index := make(map[string]int)
	var sessions [][]int
	type times struct{ call, ret time.Duration }
	at := make([]times, n)
	for i := range n {
		name, call, ret, valid := op(i)
		if !valid {
			continue
		}
		at[i] = times{call, ret}
		s, ok := index[name]
		if !ok {
			s = len(sessions)
			index[name] = s
			sessions = append(sessions, nil)
		}
		sessions[s] = append(sessions[s], i)
	}
	for s, ops := range sessions {
		slices.SortStableFunc(ops, func(a, b int) int {
			if r := cmp.Compare(at[a].call, at[b].call); r != 0 {
				return r
			}
			return cmp.Compare(at[a].ret, at[b].ret)
		})
		for k, i := range ops {
			link(i).session, link(i).pos = s, position(k+1)
		}
		for k := 1; k < len(ops); k++ {
			link(ops[k-1]).succ, link(ops[k]).pred = ops[k], ops[k-1]
			each(ops[0], ops[k-1], ops[k])
		}
	}
	return sessions
}
