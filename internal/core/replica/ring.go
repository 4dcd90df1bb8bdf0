package replica

// ring keeps the last max values added: a node's bounded memories (the
// Puts it has received, the planner's decisions), so that none grows
// without limit.
type ring[T any] struct {
	max  int
	vals []T
	// next is the oldest value's index once the ring is full.
	next int
}

func newRing[T any](max int) ring[T] { return ring[T]{max: max} }

// add adds v and returns the value it replaced, the oldest, if the ring
// was full.
func (r *ring[T]) add(v T) (old T, replaced bool) {
	if len(r.vals) < r.max {
		r.vals = append(r.vals, v)
		return old, false
	}
	old = r.vals[r.next]
	r.vals[r.next] = v
	r.next = (r.next + 1) % r.max
	return old, true
}

// all returns the values, oldest first.
func (r *ring[T]) all() []T {
	out := append([]T(nil), r.vals[r.next:]...)
	return append(out, r.vals[:r.next]...)
}
