package check

import (
	"cmp"
	"fmt"
	"slices"
	"sort"

	"github.com/cosla/cosla/internal/core/hlc"
)

// levelPuts are the acknowledged Puts to one key with one write level,
// and the Gets of the key that returned once that many replicas held
// their version (Op.Held), in Return order; newest[k] is the newest
// version of puts[:k+1].
type levelPuts struct {
	w      int
	puts   []int
	newest []ref
}

// quorumBound reports whether a read of r of n replicas must see a Put
// that w of them held: the two sets of replicas overlap (CPQ 3.1).
func quorumBound(r, w, n int) bool { return r > 0 && w > 0 && n > 0 && r+w > n }

// checkQuorum checks rule "quorum": an OK Get with read level r returns a
// version no older than any acknowledged Put to its key with write level
// w, r + w > N, that returned before it was called or precedes it in its
// session, and no older than the version of any Get of the key that
// returned before it was called once w replicas held that version (see
// the package documentation for why no more). A Lost version binds none.
func (c *checker) checkQuorum() {
	byKey := make(map[string][]*levelPuts)
	add := func(i, w int) {
		levels := byKey[c.h[i].Key]
		k := slices.IndexFunc(levels, func(lp *levelPuts) bool { return lp.w == w })
		if k < 0 {
			k = len(levels)
			byKey[c.h[i].Key] = append(levels, &levelPuts{w: w})
		}
		byKey[c.h[i].Key][k].puts = append(byKey[c.h[i].Key][k].puts, i)
	}
	for i, op := range c.h {
		st := &c.st[i]
		switch {
		case !st.valid:
		case op.Kind == Put && st.acked && !st.pending && !st.lost && op.Level > 0:
			add(i, op.Level)
		case op.Kind == Get && op.OK && st.retKnown && !st.retLost && op.Held > 0:
			add(i, op.Held)
		}
	}
	for _, levels := range byKey {
		for _, lp := range levels {
			slices.SortStableFunc(lp.puts, func(a, b int) int { return cmp.Compare(c.h[a].Return, c.h[b].Return) })
			lp.newest = make([]ref, len(lp.puts))
			var newest ref
			for k, p := range lp.puts {
				newest = maxRef(newest, ref{ts: c.heldTS(p), op: p})
				lp.newest[k] = newest
			}
		}
	}
	c.quorumSessionPuts()
	for i, op := range c.h {
		st := &c.st[i]
		if op.Kind != Get || !op.OK || !st.retKnown || op.Level <= 0 {
			continue
		}
		need := st.sessionQuorum
		for _, lp := range byKey[op.Key] {
			if !quorumBound(op.Level, lp.w, op.Replicas) {
				continue
			}
			n := sort.Search(len(lp.puts), func(k int) bool { return c.h[lp.puts[k]].Return >= op.Call })
			if n > 0 {
				need = maxRef(need, lp.newest[n-1])
			}
		}
		if !st.ret.Less(need.ts) {
			continue
		}
		p := c.h[need.op]
		why := "earlier in the same session"
		if p.Return < op.Call {
			why = fmt.Sprintf("which returned at %s, before the get was called at %s", p.Return, op.Call)
		}
		held := p.Level
		if p.Kind == Get {
			held = p.Held
		}
		c.report(i, RuleQuorum, "%s %s, but a read of %d of %d replicas requires a version >= %s from %s, which %d replicas held, %s",
			c.desc(i), c.readDesc(i), op.Level, op.Replicas, need.ts, c.desc(need.op), held, why)
	}
}

// heldTS is the version timestamp of a Put of levelPuts, or of the
// version a Get of it returned.
func (c *checker) heldTS(i int) hlc.Timestamp {
	if c.h[i].Kind == Get {
		return c.st[i].ret
	}
	return c.st[i].ts
}

// quorumSessionPuts sets each OK Get's sessionQuorum: the newest
// acknowledged Put to its key earlier in its session whose write level
// overlaps its read level. Such a Put returned no later than the Get was
// called; only one that returned at that very instant is not already
// bound by real time.
func (c *checker) quorumSessionPuts() {
	type levelRef struct {
		w int
		r ref
	}
	for _, ops := range c.sessions {
		var puts map[string][]levelRef // per key, the newest acknowledged Put of each write level so far
		for _, i := range ops {
			op, st := c.h[i], &c.st[i]
			switch {
			case op.Kind == Put && st.acked && !st.pending && !st.lost && op.Level > 0:
				if puts == nil {
					puts = make(map[string][]levelRef)
				}
				lrs := puts[op.Key]
				k := slices.IndexFunc(lrs, func(lr levelRef) bool { return lr.w == op.Level })
				if k < 0 {
					puts[op.Key] = append(lrs, levelRef{w: op.Level, r: ref{ts: st.ts, op: i}})
				} else {
					lrs[k].r = maxRef(lrs[k].r, ref{ts: st.ts, op: i})
				}
			case op.Kind == Get && op.OK && op.Level > 0:
				for _, lr := range puts[op.Key] {
					if quorumBound(op.Level, lr.w, op.Replicas) {
						st.sessionQuorum = maxRef(st.sessionQuorum, lr.r)
					}
				}
			}
		}
	}
}
