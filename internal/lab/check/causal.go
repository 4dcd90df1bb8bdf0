package check

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/cosla/cosla/sla"
)

// maxExplained bounds how many causal violations get a precedence chain in
// their Detail; each chain costs a search of the history.
const maxExplained = 32

// checkCausal checks causal Gets (Pileus 3.2): a Get must return a version
// at least as new as every Put to its key that causally precedes it, where
// op1 precedes op2 if (a) op1 is before op2 in the same session, (b) op2
// is a Get returning the version op1 put, or (c) transitively.
//
// A Put whose timestamp is unknown (unacknowledged and never read) cannot
// be required. An unacknowledged Put whose version some Get returned is
// required only downstream of a Get that returned it, not merely of its own
// session successor: its client never learned its timestamp, and it may
// take effect long after it failed (clientcore.Client.Put), so no client
// could honour the requirement. Its own causal past still flows on.
//
// A Lost Put is never required: its version was rolled back. Its causal
// past still flows on, through its session and its readers: a Get that
// returned it raised its session's minimum acceptable read timestamp to
// the Lost version's (Pileus 4.4), above every version of that past, and
// a version that survived the failover is in the log of every replica
// whose high timestamp reaches it.
//
// Causal pasts are downward closed in session order, so each is a vector
// clock (see wideShape): ops are visited in a topological order of the
// session-order and reads-from edges, a Get merging into its session's
// clock the clock of the Put it read, unless the clock shows it already has
// that Put's past. A causal Get then walks the versions of its key newer
// than the one it returned, newest first, and the first one its clock
// includes is a violation: the newest version in its causal past.
//
// Cost, for n ops and S sessions: O(n log n) for the topological order and
// the version lists, O(log S) per Put that some Get read, O(v log S) per
// causal Get that returned a version with v newer ones (times the readers
// of an unacknowledged one), and per clock merge O(log S) for each trie
// leaf in which the two clocks differ: the sessions that made progress one
// clock has seen and the other has not. Merges are O(S) at worst, O(n*S)
// in all, and near-linear for realistic histories.
func (c *checker) checkCausal() {
	n := len(c.h)
	clocks := newWideShape(len(c.sessions))
	indegree := make([]int32, n)
	readers := make(map[int][]int)
	versions := make(map[string][]int) // per key: Puts with known timestamps, not Lost, newest first
	for i, op := range c.h {
		st := &c.st[i]
		if !st.valid {
			continue
		}
		if st.pred >= 0 {
			indegree[i]++
		}
		switch {
		case op.Kind == Get && st.readsFrom:
			indegree[i]++
			readers[st.writer] = append(readers[st.writer], i)
		case op.Kind == Put && st.tsKnown && !st.lost:
			versions[op.Key] = append(versions[op.Key], i)
		}
	}
	for _, puts := range versions {
		slices.SortFunc(puts, func(a, b int) int {
			if r := c.st[b].ts.Compare(c.st[a].ts); r != 0 {
				return r
			}
			return cmp.Compare(b, a)
		})
	}

	// The clock an op hands to its session successor. Its entry for the
	// op's own session is not kept up to date: it is implicitly the op's
	// position.
	clock := make([]*wideNode, n)
	// The clock a Put hands to its readers, with its own position.
	visibleClock := make([]*wideNode, n)
	unread := make([]int, n) // readers of a Put not yet visited

	q := newKahn(indegree, func(i int) bool { return c.st[i].valid })
	readDone := func(w int) {
		if unread[w]--; unread[w] == 0 {
			visibleClock[w] = nil
		}
	}
	type miss struct {
		get  int
		need ref
	}
	var misses []miss
	cursor := 0 // Gets before cursor cannot close a cycle any more
	for {
		for q.ready() {
			i := q.next()
			op, st := c.h[i], &c.st[i]
			var vc *wideNode
			if st.pred >= 0 {
				vc = clock[st.pred]
				clock[st.pred] = nil // only the successor needs it
			}
			switch op.Kind {
			case Get:
				if w := st.writer; st.readsFrom {
					if !c.includes(clocks, vc, i, w) {
						vc = mergeWide(vc, visibleClock[w], shared)
					}
					readDone(w)
				}
				if st.checked && st.retKnown && op.Met.Consistency.Kind == sla.Causal {
					for _, p := range versions[op.Key] {
						if !st.ret.Less(c.st[p].ts) {
							break
						}
						if p == st.writer {
							// It returned a rolled-back version of this
							// very write (Op.RolledBack), which took
							// effect again later: no version it missed.
							continue
						}
						if c.inPast(clocks, vc, i, p, readers[p]) {
							misses = append(misses, miss{get: i, need: ref{ts: c.st[p].ts, op: p}})
							break
						}
					}
				}
			case Put:
				unread[i] = 0
				for _, r := range readers[i] {
					if c.st[r].readsFrom {
						unread[i]++
					}
				}
				if unread[i] > 0 {
					visibleClock[i] = clocks.with(vc, st.session, st.pos)
				}
			}
			if st.succ >= 0 {
				clock[i] = vc
				q.release(st.succ)
			}
			q.finish(i)
			for _, r := range readers[i] {
				if c.st[r].readsFrom {
					q.release(r)
				}
			}
		}
		if q.left == 0 {
			break
		}
		// Every op left waits on a cycle, which only a reads-from edge can
		// close: an op not waiting on its writer waits on its session
		// predecessor, and following those back reaches one that is.
		for ; cursor < n; cursor++ {
			st := c.st[cursor]
			if st.valid && st.readsFrom && !q.done[cursor] && !q.done[st.writer] {
				break
			}
		}
		if cursor == n {
			break // unreachable: see above
		}
		g, w := cursor, c.st[cursor].writer
		c.report(g, RuleHistory, "%s read %q from %s, which causally follows the get: session order and reads-from form a cycle",
			c.desc(g), c.h[g].Value, c.desc(w))
		c.st[g].readsFrom = false // w is not visited yet and will not count g
		q.release(g)
	}

	for k, ms := range misses {
		why := "which causally precedes it"
		if k < maxExplained {
			if chain := c.causalChain(ms.need.op, ms.get); chain != "" {
				why += ": " + chain
			}
		}
		c.reportStale(ms.get, ms.need, why)
	}
}

// includes reports whether clock vc, of an op that is at or after op x in
// session order, includes what op y hands to its session successor: y is
// before x in x's session, or vc's entry for y's session has reached y.
func (c *checker) includes(clocks wideShape, vc *wideNode, x, y int) bool {
	xs, ys := &c.st[x], &c.st[y]
	if xs.session == ys.session {
		return ys.pos < xs.pos
	}
	return clocks.get(vc, ys.session) >= ys.pos
}

// inPast reports whether Put p is in the causal past of Get g, whose clock
// is vc. An acknowledged Put hands itself to its session successor, so the
// clock tells directly; an unacknowledged one reaches only its readers.
func (c *checker) inPast(clocks wideShape, vc *wideNode, g, p int, readers []int) bool {
	if c.st[p].acked {
		return c.includes(clocks, vc, g, p)
	}
	for _, r := range readers {
		if c.st[r].readsFrom && (r == g || c.includes(clocks, vc, g, r)) {
			return true
		}
	}
	return false
}

// causalChain finds a shortest precedence chain from Put p to Get g along
// the edges checkCausal used and formats it, printing one op per session
// visited, e.g. `put #1 (session a) -> get #4 (session b) reads put #1 ->
// put #5 later in session b -> get #9 (session c) reads put #5 -> get #12
// later in session c`.
func (c *checker) causalChain(p, g int) string {
	next := map[int]int{g: -1} // op -> its successor on the chain to g
	queue := []int{g}
	found := false
	for len(queue) > 0 && !found {
		u := queue[0]
		queue = queue[1:]
		st := c.st[u]
		var preds [2]int
		preds[0], preds[1] = st.pred, -1
		if st.readsFrom {
			preds[1] = st.writer
		}
		for k, v := range preds {
			if v < 0 {
				continue
			}
			if v == p {
				// An unacknowledged Put reaches only its readers.
				if k == 1 || c.st[p].acked {
					next[p], found = u, true
					break
				}
				continue
			}
			if _, seen := next[v]; !seen {
				next[v] = u
				queue = append(queue, v)
			}
		}
	}
	if !found {
		return ""
	}
	var steps []string
	steps = append(steps, fmt.Sprintf("put #%d (session %s)", p, c.h[p].Session))
	for prev, u := p, next[p]; u >= 0; prev, u = u, next[u] {
		if st := c.st[u]; st.readsFrom && st.writer == prev {
			steps = append(steps, fmt.Sprintf("get #%d (session %s) reads put #%d", u, c.h[u].Session, prev))
			continue
		}
		// A session-order edge: print only the last op of a run of them.
		if v := next[u]; v >= 0 && !(c.st[v].readsFrom && c.st[v].writer == u) {
			continue
		}
		steps = append(steps, fmt.Sprintf("%s #%d later in session %s", c.h[u].Kind, u, c.h[u].Session))
	}
	return joinChain(steps)
}

// joinChain joins the steps of a precedence chain for a message, the
// middle of a long one left out.
func joinChain(steps []string) string {
	const keep = 8
	if len(steps) > 2*keep {
		steps = append(append(steps[:keep:keep], "..."), steps[len(steps)-keep:]...)
	}
	return strings.Join(steps, " -> ")
}

// kahn visits the valid ops of a history in a topological order of causal
// precedence (session order and reads-from), Kahn's way: an op is ready
// once every edge into it has been released. When none is ready and some
// are left, those wait on a cycle, which the checker breaks by reporting
// one of its reads-from edges and releasing that edge's read.
type kahn struct {
	indegree []int32 // edges into each op not released yet
	queue    []int   // the ready ops, in the order they became ready
	done     []bool  // the ops finished
	left     int     // the valid ops not finished yet
}

// newKahn starts with the valid ops that no edge enters.
func newKahn(indegree []int32, valid func(i int) bool) *kahn {
	q := &kahn{indegree: indegree, queue: make([]int, 0, len(indegree)), done: make([]bool, len(indegree))}
	for i, d := range indegree {
		if valid(i) {
			q.left++
			if d == 0 {
				q.queue = append(q.queue, i)
			}
		}
	}
	return q
}

// ready reports whether an op is ready.
func (q *kahn) ready() bool { return len(q.queue) > 0 }

// next returns the op that became ready first; ready must be true.
func (q *kahn) next() int {
	i := q.queue[0]
	q.queue = q.queue[1:]
	return i
}

// finish marks op i, returned by next, as visited.
func (q *kahn) finish(i int) {
	q.done[i] = true
	q.left--
}

// release removes one edge into op i.
func (q *kahn) release(i int) {
	if q.indegree[i]--; q.indegree[i] == 0 {
		q.queue = append(q.queue, i)
	}
}
