package check

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/cosla/cosla/internal/core/hlc"
)

// CheckMulti checks histories of causal tables (Karma, Mahmood et al.):
// every datacenter accepts writes, a version is an HLC timestamp with the
// writing coordinator's name as tie-break, and the newest version of a key
// wins (last-writer-wins). Versions need not follow real time, so Check's
// rule "history" would wrongly reject them; CheckMulti checks the history
// obligations of a causally consistent store instead (H1-H4 below). It is
// a pure function of its arguments, like Check.
//
// Causal precedence ⇝ is the transitive closure of session order (ops of
// a session sorted by Call) and reads-from: a Put precedes every Get, and
// every get-transaction (Tx), that returned its value. The causal past of
// an op holds the acknowledged Puts that precede it and the
// unacknowledged Puts that precede some op that read them, or that it
// read itself: an unacknowledged Put is indeterminate and may take effect
// long after it failed, so it binds no op merely by session order, as in
// checkCausal, but its own causal past flows on through its readers. A
// session's acknowledged Puts precede its later ops (read-your-writes).
//
// Rules:
//   - "multi-op": the history is possible at all: every op has a known
//     Kind and Return >= Call; a session runs one op at a time; Put
//     values are unique; an OK Put has a version after zero; a Found read
//     (a Get, or an item of a Tx) returns a value that a Put to its key
//     called no later than the read returned wrote, with that Put's
//     version (for an unacknowledged Put, the version the first read of
//     it, by index, returned; every read of it must agree); a read that
//     found nothing reports no version; a Tx reads each key once and only
//     a Tx has items; session order and reads-from have no cycle.
//   - "multi-version" (H2): versions of a key are unique among its Puts,
//     and if Put A ⇝ Put B on the same key then Version(A) < Version(B):
//     one total version order per key extends ⇝.
//   - "multi-causal" (H1): a read never returns a version of its key older
//     than that of a Put to the key in the causal past of its op, and
//     finds a version if there is one. Only the session past counts here:
//     what the Put a Get read had in its own past is rule multi-version's
//     business, and what the Puts a Tx read had, rule multi-snapshot's.
//   - "multi-snapshot" (H4): for items i != j of a Tx, on different keys,
//     the causal past of the Put that item i read holds no Put to item
//     j's key with a version newer than the one item j returned (any
//     version, if item j found none).
//   - "multi-converge" (H3): when final states are given, every replica
//     holds the same version of every key after quiescence, the newest
//     version of it that any acknowledged Put was assigned, any read
//     returned or any replica holds. At most 20 keys are reported one by
//     one, then one violation counts the rest.
//
// Violations are ordered by op index, then come those of rule
// multi-converge, by key. A multi-converge violation names the Put that
// wrote the version every replica should hold as its Op, or -1 if none
// did (and for the count of the keys not reported one by one).
//
// Cost, for n ops and S sessions: O(n log n) besides the causal rules.
// Those visit the ops in a topological order of session order and
// reads-from, carrying each op's causal past as a vector clock over
// sessions, and answer each check from a segment tree per key that lists
// the candidates, the Puts of a newer version called no later than the
// latest Put of the past, at O(log S) for each (see traverse). A merge of
// two clocks costs O(S) at worst, when the pasts differ in most sessions,
// as in busy histories where every session soon reads what every other
// wrote: O(n*S) in all, which BenchmarkCheckMulti measures.
func CheckMulti(h []MultiOp, final []FinalState) []Violation {
	c := &multiChecker{h: h, final: final, st: make([]multiState, len(h))}
	c.checkOps()
	c.indexPuts()
	c.resolveReads()
	c.orderSessions()
	c.rankVersions()
	c.traverse()
	c.explain()
	slices.SortStableFunc(c.vs, func(a, b Violation) int { return cmp.Compare(a.Op, b.Op) })
	c.checkConverge()
	return c.vs
}

// Rules of CheckMulti.
const (
	RuleMultiOp       = "multi-op"
	RuleMultiVersion  = "multi-version"
	RuleMultiCausal   = "multi-causal"
	RuleMultiSnapshot = "multi-snapshot"
	RuleMultiConverge = "multi-converge"
)

// maxConverge bounds the keys that rule multi-converge reports one by one.
const maxConverge = 20

// Version is a causal table's version: the HLC timestamp the writing
// coordinator assigned, then the coordinator's name as tie-break. The
// zero Version means "no version".
type Version struct {
	TS     hlc.Timestamp
	Origin string
}

// Compare returns -1, 0 or +1 as v is older than, equal to or newer than u.
func (v Version) Compare(u Version) int {
	if c := v.TS.Compare(u.TS); c != 0 {
		return c
	}
	return strings.Compare(v.Origin, u.Origin)
}

// Less reports whether v is older than u.
func (v Version) Less(u Version) bool { return v.Compare(u) < 0 }

// IsZero reports whether v is the zero Version.
func (v Version) IsZero() bool { return v.TS.IsZero() && v.Origin == "" }

// String formats v as its timestamp, a slash and its origin, e.g.
// "1.500000000,2/dc-a".
func (v Version) String() string {
	if v.Origin == "" {
		return v.TS.String()
	}
	return v.TS.String() + "/" + v.Origin
}

// TxItem is what a get-transaction returned for one key.
type TxItem struct {
	Key, Value string
	// Found reports that a version was returned; false means the key's
	// initial, never-written state.
	Found bool
	// Version is the version returned when Found.
	Version Version
}

// MultiOp is one client operation on a causal table as the client saw it.
// Times are on the true (simulated) clock.
type MultiOp struct {
	// Session is unique across the history; a session issues its
	// operations one at a time.
	Session string
	// Kind is Put, Get or Tx.
	Kind Kind
	// Key is the key of a Put or Get. Value is, for a Put, the value
	// written, unique across the history so that a read identifies its
	// write; for a Get, the value read when Found.
	Key, Value string
	// Found reports, for a Get, that a version was returned; false means
	// the key's initial, never-written state.
	Found bool
	// Items are, for a Tx, what it returned, one per key read.
	Items []TxItem
	// Call and Return are the invocation and response times.
	Call, Return time.Duration
	// OK reports, for a Put, that it was acknowledged; a Put that is not
	// OK is indeterminate: it may take effect, possibly later. For a Get
	// or Tx, OK reports that it returned data; one that is not OK is not
	// checked.
	OK bool
	// Version is, for an OK Put, the version assigned; for an OK and
	// Found Get, the version returned.
	Version Version
	// FromBuffer reports that a Get was answered from its session's own
	// write buffer. It is informational only.
	FromBuffer bool
}

// FinalState is one store's final version of each key after quiescence; a
// key absent was never written there.
type FinalState struct {
	Replica  string
	Versions map[string]Version
}

// multiRead is one read: a Get, or one item of a Tx.
type multiRead struct {
	op, item  int // item is -1 for a Get
	key       string
	value     string
	found     bool
	version   Version // as reported; zero when not found
	writer    int     // the Put whose value it returned, or -1
	readsFrom bool    // writer -> op is an edge of causal precedence
}

// multiState is what CheckMulti derives about one op.
type multiState struct {
	valid bool // Kind is Put, Get or Tx

	// Puts.
	acked      bool     // OK with a version after zero
	known      bool     // version is the Put's version
	version    Version  // when known
	revealedBy int      // the read that revealed an unacknowledged Put's version, or -1
	key        int      // key index
	rank       position // 1-based rank among the known versions of the key, or 0

	// Gets and Txs: their reads are c.reads[readLo:readHi].
	readLo, readHi int

	// Sessions.
	sessionLink
}

// multiMiss is a violation of a causal rule, reported once the traversal
// is over so that the precedence chain can be searched.
type multiMiss struct {
	rule string
	op   int // the op that broke the rule
	read int // the read that broke it (causal, snapshot), or -1
	via  int // snapshot: the read whose Put's past holds need
	need int // the Put in the causal past
}

type multiChecker struct {
	h     []MultiOp
	final []FinalState
	st    []multiState
	reads []multiRead
	vs    []Violation
	miss  []multiMiss

	putIndex
	keys     map[string]int // key index of each key some Put wrote
	ranked   [][]int        // per key index: Puts of known version, by rank
	index    []multiKey     // per key index
	sessions [][]int

	shape       wideShape
	readerStart []int32 // the reads of Put i are readers[readerStart[i]:readerStart[i+1]]
	readers     []int32
	cands       []int     // scratch for newestIn
	stack       []segNode // scratch for multiKey.candidates
	tokens      uint32    // the last owner token handed out (see wideNode)
}

func (c *multiChecker) report(op int, rule, format string, args ...any) {
	c.vs = append(c.vs, Violation{Op: op, Rule: rule, Detail: fmt.Sprintf(format, args...)})
}

// checkOps checks each op on its own and collects the reads.
func (c *multiChecker) checkOps() {
	n := 0
	for _, op := range c.h {
		n += max(1, len(op.Items))
	}
	c.reads = make([]multiRead, 0, n)
	for i, op := range c.h {
		st := &c.st[i]
		st.revealedBy, st.pred, st.succ, st.key = -1, -1, -1, -1
		st.readLo = len(c.reads)
		st.readHi = st.readLo
		if op.Kind != Put && op.Kind != Get && op.Kind != Tx {
			c.report(i, RuleMultiOp, "op #%d (session %s, key %q) has unknown kind %d", i, op.Session, op.Key, uint8(op.Kind))
			continue
		}
		st.valid = true
		if op.Return < op.Call {
			c.report(i, RuleMultiOp, "%s returned at %s, before it was called at %s", c.desc(i), op.Return, op.Call)
		}
		if op.Kind != Tx && len(op.Items) > 0 {
			c.report(i, RuleMultiOp, "%s has %d transaction items; only a gettx has items", c.desc(i), len(op.Items))
		}
		switch {
		case op.Kind == Put && op.OK:
			if positive(op.Version.TS) {
				st.acked, st.known, st.version = true, true, op.Version
			} else {
				c.report(i, RuleMultiOp, "%s was acknowledged with version %s; a version needs a timestamp after zero", c.desc(i), op.Version)
			}
		case op.Kind == Get && op.OK:
			c.addRead(i, -1, op.Key, op.Value, op.Found, op.Version)
		case op.Kind == Tx && op.OK:
			for j, it := range op.Items {
				for _, prev := range op.Items[:j] {
					if prev.Key == it.Key {
						c.report(i, RuleMultiOp, "%s returned key %q twice; a get-transaction reads each key once", c.desc(i), it.Key)
						break
					}
				}
				c.addRead(i, j, it.Key, it.Value, it.Found, it.Version)
			}
		}
		st.readHi = len(c.reads)
	}
}

func (c *multiChecker) addRead(op, item int, key, value string, found bool, v Version) {
	if !found && !v.IsZero() {
		what := fmt.Sprintf("of key %q ", key)
		if item < 0 {
			what = ""
		}
		c.report(op, RuleMultiOp, "%s found no version %sbut reports version %s", c.desc(op), what, v)
		v = Version{}
	}
	c.reads = append(c.reads, multiRead{op: op, item: item, key: key, value: value, found: found, version: v, writer: -1})
}

// indexPuts records the writer of each value, reports duplicate values and
// numbers the keys that Puts write.
func (c *multiChecker) indexPuts() {
	c.putIndex = newPutIndex(len(c.h), func(i int) (string, string, bool) {
		return c.h[i].Key, c.h[i].Value, c.st[i].valid && c.h[i].Kind == Put
	}, func(i, first int) {
		c.report(i, RuleMultiOp, dupValue, c.desc(i), c.desc(first))
	})
	c.keys = make(map[string]int)
	for i, op := range c.h {
		if !c.st[i].valid || op.Kind != Put {
			continue
		}
		k, ok := c.keys[op.Key]
		if !ok {
			k = len(c.keys)
			c.keys[op.Key] = k
		}
		c.st[i].key = k
	}
}

// resolveReads finds the Put each Found read returned, learns the versions
// of unacknowledged Puts from the first read that returned them, and
// checks that reads agree with writes.
func (c *multiChecker) resolveReads() {
	for r := range c.reads {
		rd := &c.reads[r]
		if !rd.found {
			continue
		}
		writer, other := c.writerOf(rd.key, rd.value, func(w int) bool { return c.st[w].known && c.st[w].version == rd.version })
		switch {
		case writer < 0 && other >= 0:
			c.report(rd.op, RuleMultiOp, "%s %s, which %s wrote to another key", c.desc(rd.op), c.readDesc(r), c.desc(other))
			continue
		case writer < 0:
			c.report(rd.op, RuleMultiOp, "%s %s, which no put ever wrote", c.desc(rd.op), c.readDesc(r))
			continue
		}
		rd.writer = writer
		if w := &c.st[rd.writer]; !w.known && positive(rd.version.TS) {
			w.known, w.version, w.revealedBy = true, rd.version, r
		}
	}
	for r := range c.reads {
		rd := &c.reads[r]
		if rd.writer < 0 {
			continue
		}
		op, w, wst := c.h[rd.op], c.h[rd.writer], &c.st[rd.writer]
		rd.readsFrom = true
		if w.Call > op.Return {
			rd.readsFrom = false // an edge from the future would make a cycle
			c.report(rd.op, RuleMultiOp, "%s %s, but %s writing it was called only after the %s returned",
				c.desc(rd.op), c.readDesc(r), c.desc(rd.writer), op.Kind)
		}
		switch {
		case wst.acked && rd.version != wst.version:
			c.report(rd.op, RuleMultiOp, "%s %s, but %s was assigned %s for it",
				c.desc(rd.op), c.readDesc(r), c.desc(rd.writer), wst.version)
		case !wst.acked && !positive(rd.version.TS):
			c.report(rd.op, RuleMultiOp, "%s %s; a version needs a timestamp after zero", c.desc(rd.op), c.readDesc(r))
		case !wst.acked && rd.version != wst.version:
			c.report(rd.op, RuleMultiOp, "%s %s, but %s read another version of unacknowledged %s",
				c.desc(rd.op), c.readDesc(r), c.desc(c.reads[wst.revealedBy].op), c.desc(rd.writer))
		}
	}
}

// readVersion returns the version read r returned: its Put's when known,
// as checkCausal does, else the one it reported; zero when not found.
func (c *multiChecker) readVersion(r int) Version {
	rd := c.reads[r]
	if w := rd.writer; w >= 0 && c.st[w].known {
		return c.st[w].version
	}
	return rd.version
}

// orderSessions puts each session's ops in session order (by Call, then
// Return) and checks that a session runs one op at a time.
func (c *multiChecker) orderSessions() {
	c.sessions = linkSessions(len(c.h), func(i int) (string, time.Duration, time.Duration, bool) {
		return c.h[i].Session, c.h[i].Call, c.h[i].Return, c.st[i].valid
	}, func(i int) *sessionLink { return &c.st[i].sessionLink }, func(_, prev, cur int) {
		if c.h[cur].Call < c.h[prev].Return {
			c.report(cur, RuleMultiOp, "%s was called while %s of the same session was still running; a session issues one op at a time",
				c.desc(cur), c.desc(prev))
		}
	})
}

// rankVersions ranks the Puts of known version of each key by version and
// reports equal versions (H2).
func (c *multiChecker) rankVersions() {
	c.ranked = make([][]int, len(c.keys))
	for i, op := range c.h {
		if st := &c.st[i]; st.valid && op.Kind == Put && st.known {
			c.ranked[st.key] = append(c.ranked[st.key], i)
		}
	}
	for _, puts := range c.ranked {
		slices.SortStableFunc(puts, func(a, b int) int { return c.st[a].version.Compare(c.st[b].version) })
		for k, p := range puts {
			c.st[p].rank = position(k + 1)
			if k > 0 && c.st[puts[k-1]].version == c.st[p].version {
				c.report(p, RuleMultiVersion, "%s has the same version as %s; versions of a key must be unique",
					c.desc(p), c.desc(puts[k-1]))
			}
		}
	}
}

// putOf returns the Put of key that has version v, or -1.
func (c *multiChecker) putOf(key string, v Version) int {
	k, ok := c.keys[key]
	if !ok {
		return -1
	}
	puts := c.ranked[k]
	j := sort.Search(len(puts), func(j int) bool { return !c.st[puts[j]].version.Less(v) })
	if j < len(puts) && c.st[puts[j]].version == v {
		return puts[j]
	}
	return -1
}

// traverse visits the ops in a topological order of session order and
// reads-from, breaking cycles, and checks rules multi-version,
// multi-causal and multi-snapshot (see CheckMulti for the cost).
//
// Causal pasts are downward closed in session order, so each is a vector
// clock over sessions, as in checkCausal: an op hands its session
// successor its past, in which its own session's entry is implicitly its
// position; a Put hands its readers its past with its own position; a read
// merges what its Put handed it into its session's past unless that past
// already holds the Put. Beside the clock, each op carries a bound: the
// latest Call of a Put in its past, or of a Put whose past it holds.
//
// A check asks for the newest Put of a key in a past with a version newer
// than some version. Its candidates are the Puts of the key of a newer
// version called no later than the bound, which a segment tree per key
// (multiKey) lists; checked newest first, the first that the clock
// includes is the answer. A Put in the past of an op was called before the
// op was (when the op is a Put or the past is its session's), so in a
// sane history the candidates are the Puts of the key concurrent with the
// op that got a newer version, and reads that returned the latest version
// have none.
func (c *multiChecker) traverse() {
	n := len(c.h)
	c.shape = newWideShape(len(c.sessions))
	c.indexKeys()
	indegree := make([]int32, n)
	// The reads of each Put, in CSR form.
	c.readerStart = make([]int32, n+1)
	for _, rd := range c.reads {
		if rd.writer >= 0 {
			c.readerStart[rd.writer+1]++
		}
	}
	for i := range n {
		c.readerStart[i+1] += c.readerStart[i]
	}
	c.readers = make([]int32, c.readerStart[n])
	fill := slices.Clone(c.readerStart[:n])
	for r, rd := range c.reads {
		if rd.writer >= 0 {
			c.readers[fill[rd.writer]] = int32(r)
			fill[rd.writer]++
		}
	}
	for i := range c.h {
		if st := c.st[i]; st.valid && st.pred >= 0 {
			indegree[i]++
		}
	}
	for _, rd := range c.reads {
		if rd.readsFrom {
			indegree[rd.op]++
		}
	}

	// owner[s] marks the nodes that only session s's running past
	// holds, which merges may update in place.
	owner := make([]uint32, len(c.sessions))
	for s := range owner {
		c.tokens++
		owner[s] = c.tokens
	}
	next := make([]multiPast, n)    // what an op hands its session successor
	visible := make([]multiPast, n) // what a Put hands its readers
	unread := make([]int32, n)      // readers of a Put not visited yet
	q := newKahn(indegree, func(i int) bool { return c.st[i].valid })
	cursor := 0 // ops before cursor are done or invalid
	for {
		for q.ready() {
			i := q.next()
			op, st := c.h[i], &c.st[i]
			past := multiPast{bound: noBound}
			if st.pred >= 0 {
				past = next[st.pred]
				next[st.pred] = multiPast{} // only the successor needs it
			}
			switch op.Kind {
			case Put:
				if st.known {
					c.checkPutOrder(i, past)
				}
				for _, r := range c.reader(i) {
					if c.reads[r].readsFrom {
						unread[i]++
					}
				}
				// The bound may hold an unacknowledged Put that is not in
				// the past: it only narrows the candidates.
				past.bound = max(past.bound, op.Call)
				if unread[i] > 0 {
					visible[i] = multiPast{clock: c.shape.with(past.clock, st.session, st.pos), bound: past.bound}
					// The readers share the session's nodes: freeze them.
					c.tokens++
					owner[st.session] = c.tokens
				}
			case Get, Tx:
				for r := st.readLo; r < st.readHi; r++ {
					c.checkRead(r, past)
				}
				if op.Kind == Tx {
					c.checkSnapshot(i, visible)
				}
				for r := st.readLo; r < st.readHi; r++ {
					rd := c.reads[r]
					if !rd.readsFrom {
						continue
					}
					w := rd.writer
					if !c.includes(past.clock, i, w) {
						past.clock = mergeWide(past.clock, visible[w].clock, owner[st.session])
						past.bound = max(past.bound, visible[w].bound)
					}
					if unread[w]--; unread[w] == 0 {
						visible[w] = multiPast{}
					}
				}
			}
			if st.succ >= 0 {
				next[i] = past
				q.release(st.succ)
			}
			q.finish(i)
			for _, r := range c.reader(i) {
				if rd := c.reads[r]; rd.readsFrom {
					q.release(rd.op)
				}
			}
		}
		if q.left == 0 {
			break
		}
		for ; cursor < n && (!c.st[cursor].valid || q.done[cursor]); cursor++ {
		}
		r := c.findCycle(cursor, q.done)
		if r < 0 {
			break // unreachable: every op left waits on a cycle
		}
		rd := &c.reads[r]
		c.report(rd.op, RuleMultiOp, "%s %s from %s, which causally follows the %s: session order and reads-from form a cycle",
			c.desc(rd.op), c.readDesc(r), c.desc(rd.writer), c.h[rd.op].Kind)
		rd.readsFrom = false // the writer is not visited yet and will not count it
		q.release(rd.op)
	}
}

// noBound is the bound of a past without Puts.
const noBound = time.Duration(math.MinInt64)

// multiPast is a causal past: a vector clock and a bound on the Calls of
// its Puts (see traverse).
type multiPast struct {
	clock *wideNode
	bound time.Duration
}

// reader returns the reads of Put i.
func (c *multiChecker) reader(i int) []int32 {
	return c.readers[c.readerStart[i]:c.readerStart[i+1]]
}

// findCycle walks back from op u, which is not done, along edges from ops
// not done either, until it meets an op twice, and returns a reads-from
// edge of the cycle found, as the index of its read; -1 if there is none.
// Every op left has an edge from an op left: its indegree counts exactly
// those.
func (c *multiChecker) findCycle(u int, done []bool) int {
	type step struct{ op, read int } // read is -1 for a session-order edge
	seen := make(map[int]int)
	var path []step
	for {
		if k, ok := seen[u]; ok {
			for _, s := range path[k:] {
				if s.read >= 0 {
					return s.read
				}
			}
			return -1 // unreachable: session order alone has no cycle
		}
		seen[u] = len(path)
		st := c.st[u]
		if st.pred >= 0 && !done[st.pred] {
			path = append(path, step{u, -1})
			u = st.pred
			continue
		}
		r := st.readLo
		for ; r < st.readHi; r++ {
			if rd := c.reads[r]; rd.readsFrom && !done[rd.writer] {
				break
			}
		}
		if r == st.readHi {
			return -1
		}
		path = append(path, step{u, r})
		u = c.reads[r].writer
	}
}

// includes reports whether clock, of a past of op x or of what op x
// hands on, includes op y: y is before x in x's session, or the clock's
// entry for y's session has reached y.
func (c *multiChecker) includes(clock *wideNode, x, y int) bool {
	xs, ys := &c.st[x], &c.st[y]
	if xs.session == ys.session {
		return ys.pos < xs.pos
	}
	return c.shape.get(clock, ys.session) >= ys.pos
}

// inPast reports whether Put p is in the causal past given by clock (see
// includes). An acknowledged Put hands itself to its session successor,
// so the clock tells directly; an unacknowledged one reaches only its
// readers.
func (c *multiChecker) inPast(clock *wideNode, x, p int) bool {
	if c.st[p].acked {
		return c.includes(clock, x, p)
	}
	for _, r := range c.reader(p) {
		if rd := c.reads[r]; rd.readsFrom && c.includes(clock, x, rd.op) {
			return true
		}
	}
	return false
}

// newestIn returns the Put of key with the newest version newer than v in
// past, of op x or handed on by op x, or -1. Put w of the key, if not -1,
// may have version v.
func (c *multiChecker) newestIn(past multiPast, x int, key string, v Version, found bool, w int) int {
	k, ok := c.keys[key]
	if !ok {
		return -1
	}
	var above position // the rank of the newest version of the key not newer than v
	if puts := c.ranked[k]; !found {
	} else if w >= 0 && c.st[w].rank > 0 && c.st[w].version == v {
		for above = c.st[w].rank; int(above) < len(puts) && c.st[puts[above]].version == v; above++ {
		}
	} else {
		above = position(sort.Search(len(puts), func(j int) bool { return v.Less(c.st[puts[j]].version) }))
	}
	c.cands = c.index[k].candidates(c.cands[:0], c, past.bound, above)
	for _, p := range c.cands {
		if c.inPast(past.clock, x, p) {
			return p
		}
	}
	return -1
}

// checkPutOrder checks H2 for Put i, whose session hands it past.
func (c *multiChecker) checkPutOrder(i int, past multiPast) {
	// Equal versions are reported by rankVersions.
	if p := c.newestIn(past, i, c.h[i].Key, c.st[i].version, true, i); p >= 0 {
		c.miss = append(c.miss, multiMiss{rule: RuleMultiVersion, op: i, read: -1, via: -1, need: p})
	}
}

// checkRead checks H1 for read r, whose session hands its op past.
func (c *multiChecker) checkRead(r int, past multiPast) {
	rd := c.reads[r]
	if p := c.newestIn(past, rd.op, rd.key, c.readVersion(r), rd.found, rd.writer); p >= 0 {
		c.miss = append(c.miss, multiMiss{rule: RuleMultiCausal, op: rd.op, read: r, via: -1, need: p})
	}
}

// checkSnapshot checks H4 for Tx i: for each item, the first other item
// whose Put had a newer version of the item's key in its causal past.
func (c *multiChecker) checkSnapshot(i int, visible []multiPast) {
	st := c.st[i]
	for j := st.readLo; j < st.readHi; j++ {
		rj := c.reads[j]
		for x := st.readLo; x < st.readHi; x++ {
			rx := c.reads[x]
			if x == j || !rx.readsFrom || rx.key == rj.key {
				continue
			}
			if p := c.newestIn(visible[rx.writer], rx.writer, rj.key, c.readVersion(j), rj.found, rj.writer); p >= 0 {
				c.miss = append(c.miss, multiMiss{rule: RuleMultiSnapshot, op: i, read: j, via: x, need: p})
				break
			}
		}
	}
}

// multiKey lists the Puts of known version of one key by Call, with a
// segment tree of their ranks: tree[1] is the maximum of all, tree[k] that
// of tree[2k] and tree[2k+1], and tree[size+j] the rank of byCall[j].
type multiKey struct {
	byCall []int
	tree   []position
	size   int
}

// segNode is a node of a multiKey's tree and the range it covers.
type segNode struct{ k, lo, hi int }

// indexKeys builds the multiKey of each key.
func (c *multiChecker) indexKeys() {
	c.index = make([]multiKey, len(c.ranked))
	for k, puts := range c.ranked {
		byCall := slices.Clone(puts)
		slices.SortStableFunc(byCall, func(a, b int) int { return cmp.Compare(c.h[a].Call, c.h[b].Call) })
		size := 1
		for size < len(byCall) {
			size *= 2
		}
		tree := make([]position, 2*size)
		for j, p := range byCall {
			tree[size+j] = c.st[p].rank
		}
		for j := size - 1; j > 0; j-- {
			tree[j] = max(tree[2*j], tree[2*j+1])
		}
		c.index[k] = multiKey{byCall: byCall, tree: tree, size: size}
	}
}

// candidates appends to buf the Puts called no later than bound with a
// rank above above, newest first.
func (m *multiKey) candidates(buf []int, c *multiChecker, bound time.Duration, above position) []int {
	if m.tree[1] <= above {
		return buf
	}
	n := sort.Search(len(m.byCall), func(j int) bool { return c.h[m.byCall[j]].Call > bound })
	// Descend into the nodes that cover a part of [0, n) and hold a rank
	// above above.
	stack := append(c.stack[:0], segNode{1, 0, m.size})
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if v.lo >= n || m.tree[v.k] <= above {
			continue
		}
		if v.k >= m.size {
			buf = append(buf, m.byCall[v.lo])
			continue
		}
		mid := (v.lo + v.hi) / 2
		stack = append(stack, segNode{2*v.k + 1, mid, v.hi}, segNode{2 * v.k, v.lo, mid})
	}
	c.stack = stack
	slices.SortFunc(buf, func(a, b int) int { return cmp.Compare(c.st[b].rank, c.st[a].rank) })
	return buf
}

// explain reports the causal misses, each with a precedence chain for the
// first maxExplained.
func (c *multiChecker) explain() {
	for k, m := range c.miss {
		chain := ""
		if k < maxExplained {
			to := m.op
			if m.rule == RuleMultiSnapshot {
				to = c.reads[m.via].writer
			}
			if s := c.chain(m.need, to); s != "" {
				chain = ": " + s
			}
		}
		need := c.st[m.need].version
		switch m.rule {
		case RuleMultiVersion:
			c.report(m.op, m.rule, "%s was assigned version %s, older than version %s of %s to the same key, which causally precedes it%s; the version order of a key must extend causal order",
				c.desc(m.op), c.st[m.op].version, need, c.desc(m.need), chain)
		case RuleMultiCausal:
			c.report(m.op, m.rule, "%s %s, but causal consistency requires a version >= %s from %s, which causally precedes it%s",
				c.desc(m.op), c.readDesc(m.read), need, c.desc(m.need), chain)
		case RuleMultiSnapshot:
			via := c.reads[m.via]
			c.report(m.op, m.rule, "%s %s, but it %s from %s, whose causal past holds %s with the newer version %s%s; a get-transaction must return a causal snapshot",
				c.desc(m.op), c.readDesc(m.read), c.readDesc(m.via), c.desc(via.writer), c.desc(m.need), need, chain)
		}
	}
}

// chain finds a shortest precedence chain from Put p to op to along the
// edges traverse used, entering to by session order only, and formats it
// as checkCausal's causalChain does.
func (c *multiChecker) chain(p, to int) string {
	next := map[int]int{to: -1} // op -> its successor on the chain
	queue := []int{to}
	found := false
	// edge handles an edge v -> u; an unacknowledged Put reaches its
	// readers only.
	edge := func(v, u int, read bool) {
		if found {
			return
		}
		if v == p {
			if read || c.st[p].acked {
				next[p], found = u, true
			}
			return
		}
		if _, seen := next[v]; !seen {
			next[v] = u
			queue = append(queue, v)
		}
	}
	for len(queue) > 0 && !found {
		u := queue[0]
		queue = queue[1:]
		st := c.st[u]
		if st.pred >= 0 {
			edge(st.pred, u, false)
		}
		if u == to {
			continue
		}
		for r := st.readLo; r < st.readHi; r++ {
			if rd := c.reads[r]; rd.readsFrom {
				edge(rd.writer, u, true)
			}
		}
	}
	if !found {
		return ""
	}
	reads := func(u, w int) bool {
		st := c.st[u]
		for r := st.readLo; r < st.readHi; r++ {
			if rd := c.reads[r]; rd.readsFrom && rd.writer == w {
				return u != to
			}
		}
		return false
	}
	var steps []string
	steps = append(steps, fmt.Sprintf("put #%d (session %s)", p, c.h[p].Session))
	for prev, u := p, next[p]; u >= 0; prev, u = u, next[u] {
		if reads(u, prev) {
			steps = append(steps, fmt.Sprintf("%s #%d (session %s) reads put #%d", c.h[u].Kind, u, c.h[u].Session, prev))
			continue
		}
		// A session-order edge: print only the last op of a run of them.
		if v := next[u]; v >= 0 && !reads(v, u) {
			continue
		}
		steps = append(steps, fmt.Sprintf("%s #%d later in session %s", c.h[u].Kind, u, c.h[u].Session))
	}
	return joinChain(steps)
}

// checkConverge checks H3 against the final states.
func (c *multiChecker) checkConverge() {
	if len(c.final) == 0 {
		return
	}
	type newest struct {
		v       Version
		replica string // a replica that holds v, when no Put or read had it
		read    int    // a read that returned v, or -1
	}
	keys := make(map[string]*newest)
	consider := func(key string, v Version, replica string, read int) {
		n := keys[key]
		if n == nil {
			keys[key] = &newest{v: v, replica: replica, read: read}
			return
		}
		if n.v.Less(v) {
			*n = newest{v: v, replica: replica, read: read}
		}
	}
	for i, op := range c.h {
		if st := c.st[i]; st.valid && op.Kind == Put && st.acked {
			consider(op.Key, st.version, "", -1)
		}
	}
	for r, rd := range c.reads {
		if rd.found {
			consider(rd.key, c.readVersion(r), "", r)
		}
	}
	for _, f := range c.final {
		for key, v := range f.Versions {
			consider(key, v, f.Replica, -1)
		}
	}
	names := make([]string, 0, len(keys))
	for key := range keys {
		names = append(names, key)
	}
	slices.Sort(names)
	differ := 0
	for _, key := range names {
		n := keys[key]
		same := true
		for _, f := range c.final {
			if v, ok := f.Versions[key]; !ok || v != n.v {
				same = false
				break
			}
		}
		if same {
			continue
		}
		if differ++; differ > maxConverge {
			continue
		}
		var held []string
		for _, f := range c.final {
			if v, ok := f.Versions[key]; ok {
				held = append(held, fmt.Sprintf("%s holds %s", f.Replica, v))
			} else {
				held = append(held, fmt.Sprintf("%s holds nothing", f.Replica))
			}
		}
		p := c.putOf(key, n.v)
		var from string
		switch {
		case p >= 0:
			from = "of " + c.desc(p)
		case n.read >= 0:
			from = "returned by " + c.desc(c.reads[n.read].op)
		default:
			from = "held by replica " + n.replica
		}
		c.report(p, RuleMultiConverge, "key %q differs across replicas after quiescence: %s; every replica must hold the newest version %s, %s",
			key, strings.Join(held, ", "), n.v, from)
	}
	if differ > maxConverge {
		c.report(-1, RuleMultiConverge, "%d more keys differ across replicas after quiescence, %d in all", differ-maxConverge, differ)
	}
}

// desc describes op i for a report.
func (c *multiChecker) desc(i int) string {
	op, st := c.h[i], c.st[i]
	var b strings.Builder
	fmt.Fprintf(&b, "%s #%d (session %s", op.Kind, i, op.Session)
	switch op.Kind {
	case Put:
		fmt.Fprintf(&b, ", key %q, value %q", op.Key, op.Value)
	case Tx:
		const keep = 8
		b.WriteString(", keys")
		for k, it := range op.Items {
			if k == keep {
				fmt.Fprintf(&b, " and %d more", len(op.Items)-keep)
				break
			}
			if k > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, " %q", it.Key)
		}
	default:
		fmt.Fprintf(&b, ", key %q", op.Key)
	}
	fmt.Fprintf(&b, ", called %s, returned %s", op.Call, op.Return)
	switch {
	case op.Kind == Put && op.OK:
		fmt.Fprintf(&b, ", version %s", op.Version)
	case op.Kind == Put && st.revealedBy >= 0:
		r := c.reads[st.revealedBy].op
		fmt.Fprintf(&b, ", unacknowledged, version %s as read by %s #%d", st.version, c.h[r].Kind, r)
	case op.Kind == Put:
		b.WriteString(", unacknowledged")
	case !op.OK:
		b.WriteString(", not OK")
	case op.FromBuffer:
		b.WriteString(", from the buffer")
	}
	b.WriteString(")")
	return b.String()
}

// readDesc describes what read r returned, e.g. `read "x1"@V` for a Get
// and `read "x1"@V of key "x"` for an item of a Tx.
func (c *multiChecker) readDesc(r int) string {
	rd := c.reads[r]
	s := "found no version"
	if rd.found {
		v := c.readVersion(r)
		s = fmt.Sprintf("read %q@%s", rd.value, v)
		if v != rd.version {
			s += fmt.Sprintf(" (reported as @%s)", rd.version)
		}
	}
	if rd.item >= 0 {
		s += fmt.Sprintf(" of key %q", rd.key)
	}
	return s
}
