package check

import "github.com/cosla/cosla/internal/core/hlc"

// ref names a version: the op that wrote (or, for monotonic reads, returned)
// it and its timestamp. The zero TS means "no version".
type ref struct {
	ts hlc.Timestamp
	op int
}

func (r ref) ok() bool { return !r.ts.IsZero() }

// newer orders refs by timestamp and, for equal timestamps (already
// reported as a history violation), by op index so results are
// deterministic.
func (r ref) newer(s ref) bool {
	if c := r.ts.Compare(s.ts); c != 0 {
		return c > 0
	}
	return r.op > s.op
}

func maxRef(r, s ref) ref {
	if s.newer(r) {
		return s
	}
	return r
}

// position is the 1-based position of an op in its session; zero means
// none.
type position int32

// A vector clock maps each session to a position in it: the op's causal
// past includes what the op at that position handed to its session
// successor, and so everything before it in that session. Ops share most
// of their past, so clocks are persistent: fixed-shape tries over session
// indexes. Raising one entry copies a root-to-leaf path; merging two
// clocks descends only where they are different nodes, and returns an
// input unchanged wherever it already dominates the other, so clocks that
// were merged before keep sharing nodes and later merges stay cheap.
// Inner nodes have wideFan children, leaves wideLeaf entries: the pasts
// of ops of a busy history hold most sessions and differ in most, so a
// merge visits most leaves, and few wide leaves cost less than many
// narrow ones.
const (
	wideLeafBits = 7
	wideLeaf     = 1 << wideLeafBits
	wideFanBits  = 4
	wideFan      = 1 << wideFanBits
)

// wideNode is a trie node; a nil *wideNode is the all-zero clock. A node
// whose owner is not zero (shared) was made by a merge into a session's
// running past and, until the session hands that past to the readers of a
// Put and takes a new owner token, only that past holds it: merges update
// it in place instead of copying it (CheckMulti's clocks; Check's are all
// shared).
type wideNode struct {
	owner uint32
	kids  *[wideFan]*wideNode // inner nodes
	ents  *[wideLeaf]position // leaves
}

// wideShape is the shape of all clocks of one history: levels inner
// levels above the leaves.
type wideShape struct {
	levels int
}

func newWideShape(sessions int) wideShape {
	levels := 0
	for capacity := wideLeaf; capacity < sessions; capacity *= wideFan {
		levels++
	}
	return wideShape{levels: levels}
}

// digit is the index of session's child in a node of the given level:
// 0 for leaves.
func (t wideShape) digit(session, level int) int {
	if level == 0 {
		return session & (wideLeaf - 1)
	}
	return (session >> (wideLeafBits + wideFanBits*(level-1))) & (wideFan - 1)
}

// get returns the entry of session in clock n.
func (t wideShape) get(n *wideNode, session int) position {
	for level := t.levels; n != nil; level-- {
		if level == 0 {
			return n.ents[t.digit(session, 0)]
		}
		n = n.kids[t.digit(session, level)]
	}
	return 0
}

// with returns n with the entry of session raised to at least p; n itself
// is never modified.
func (t wideShape) with(n *wideNode, session int, p position) *wideNode {
	if p <= t.get(n, session) {
		return n
	}
	return t.set(n, session, p, t.levels)
}

func (t wideShape) set(n *wideNode, session int, p position, level int) *wideNode {
	d := t.digit(session, level)
	if level == 0 {
		c := &wideNode{ents: new([wideLeaf]position)}
		if n != nil {
			*c.ents = *n.ents
		}
		c.ents[d] = p
		return c
	}
	c := &wideNode{kids: new([wideFan]*wideNode)}
	var old *wideNode
	if n != nil {
		*c.kids = *n.kids
		old = n.kids[d]
	}
	c.kids[d] = t.set(old, session, p, level-1)
	return c
}

// shared is the owner of nodes that any clock may hold: never updated in
// place.
const shared uint32 = 0

// mergeWide returns the entry-wise maximum of a and b. Where the result
// equals one of the inputs it is that input, not a copy, except that a
// node of a whose owner is owner (not shared) is updated in place; new
// nodes get owner.
func mergeWide(a, b *wideNode, owner uint32) *wideNode {
	if a == b || b == nil {
		return a
	}
	if a == nil {
		return b
	}
	if a.ents != nil {
		ae, be := a.ents, b.ents
		if owner != shared && a.owner == owner {
			for i := range ae {
				ae[i] = max(ae[i], be[i])
			}
			return a
		}
		// Branch-free: the sign bit of below is set if some entry of a
		// is below b's, of above if some is above.
		var m [wideLeaf]position
		var below, above uint32
		for i := range m {
			pa, pb := ae[i], be[i]
			below |= uint32(pa - pb)
			above |= uint32(pb - pa)
			m[i] = max(pa, pb)
		}
		switch {
		case below>>31 == 0:
			return a
		case above>>31 == 0:
			return b
		}
		c := &wideNode{owner: owner, ents: new([wideLeaf]position)}
		*c.ents = m
		return c
	}
	var kids [wideFan]*wideNode
	aWins, bWins := true, true
	for i := range kids {
		kids[i] = mergeWide(a.kids[i], b.kids[i], owner)
		aWins = aWins && kids[i] == a.kids[i]
		bWins = bWins && kids[i] == b.kids[i]
	}
	switch {
	case aWins:
		return a
	case bWins:
		return b
	case owner != shared && a.owner == owner:
		*a.kids = kids
		return a
	}
	return &wideNode{owner: owner, kids: &kids}
}
