package check

import "github.com/cosla/cosla/internal/hlc"

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
// indexes with fan-out clockFan. Raising one entry copies a root-to-leaf
// path; merging two clocks descends only where they are different nodes,
// and returns an input unchanged wherever it already dominates the other,
// so clocks that were merged before keep sharing nodes and later merges
// stay cheap.
const (
	clockBits = 4
	clockFan  = 1 << clockBits
)

// clockNode is a trie node; a nil *clockNode is the all-zero clock.
type clockNode struct {
	kids *[clockFan]*clockNode // inner nodes
	ents *[clockFan]position   // leaves
}

// newClockLeaf and newClockInner allocate a node together with its array.
func newClockLeaf() *clockNode {
	l := &struct {
		n   clockNode
		arr [clockFan]position
	}{}
	l.n.ents = &l.arr
	return &l.n
}

func newClockInner() *clockNode {
	in := &struct {
		n   clockNode
		arr [clockFan]*clockNode
	}{}
	in.n.kids = &in.arr
	return &in.n
}

// clockShape is the shape shared by all clocks of one history: enough
// levels of clockBits each for the number of sessions.
type clockShape struct {
	levels int
}

func newClockShape(sessions int) clockShape {
	levels := 1
	for capacity := clockFan; capacity < sessions; capacity *= clockFan {
		levels++
	}
	return clockShape{levels: levels}
}

func (t clockShape) digit(session, level int) int {
	return (session >> (clockBits * (t.levels - 1 - level))) & (clockFan - 1)
}

// get returns the entry of session in clock n.
func (t clockShape) get(n *clockNode, session int) position {
	for level := 0; n != nil; level++ {
		d := t.digit(session, level)
		if n.ents != nil {
			return n.ents[d]
		}
		n = n.kids[d]
	}
	return 0
}

// with returns n with the entry of session raised to at least p; n itself
// is never modified.
func (t clockShape) with(n *clockNode, session int, p position) *clockNode {
	if p <= t.get(n, session) {
		return n
	}
	return t.set(n, session, p, 0)
}

func (t clockShape) set(n *clockNode, session int, p position, level int) *clockNode {
	d := t.digit(session, level)
	if level == t.levels-1 {
		c := newClockLeaf()
		if n != nil {
			*c.ents = *n.ents
		}
		c.ents[d] = p
		return c
	}
	c := newClockInner()
	var old *clockNode
	if n != nil {
		*c.kids = *n.kids
		old = n.kids[d]
	}
	c.kids[d] = t.set(old, session, p, level+1)
	return c
}

// mergeClocks returns the entry-wise maximum of a and b. Where the result
// equals one of the inputs it is that input, not a copy.
func mergeClocks(a, b *clockNode) *clockNode {
	if a == b || b == nil {
		return a
	}
	if a == nil {
		return b
	}
	if a.ents != nil {
		aWins, bWins := true, true
		for i, pa := range a.ents {
			if pb := b.ents[i]; pa < pb {
				aWins = false
			} else if pa > pb {
				bWins = false
			}
		}
		switch {
		case aWins:
			return a
		case bWins:
			return b
		}
		c := newClockLeaf()
		for i, pa := range a.ents {
			c.ents[i] = max(pa, b.ents[i])
		}
		return c
	}
	var kids [clockFan]*clockNode
	aWins, bWins := true, true
	for i := range kids {
		kids[i] = mergeClocks(a.kids[i], b.kids[i])
		aWins = aWins && kids[i] == a.kids[i]
		bWins = bWins && kids[i] == b.kids[i]
	}
	switch {
	case aWins:
		return a
	case bWins:
		return b
	}
	c := newClockInner()
	*c.kids = kids
	return c
}
