package workload

import "math/rand/v2"

// hotspot is YCSB's "hotspot" request distribution. It is not in Cooper et
// al. SoCC'10 but was added to YCSB later and is described in its workload
// documentation: a fixed hot set that receives a fixed share of operations.
type hotspot struct {
	hot, cold     uint64
	hotOpFraction float64
}

// NewHotspot returns a generator over [0, n) whose hot set is the first
// floor(hotSetFraction*n) items: with probability hotOpFraction it picks
// uniformly from the hot set, otherwise uniformly from the remaining items.
// Both fractions must be in [0, 1].
//
// When the hot set is empty every draw comes from the rest, and when it is
// the whole of [0, n) every draw comes from it, whatever hotOpFraction says:
// there is nothing else to pick.
func NewHotspot(n uint64, hotSetFraction, hotOpFraction float64) (Generator, error) {
	if n == 0 {
		return nil, invalid("n = 0, want n > 0")
	}
	if !(hotSetFraction >= 0 && hotSetFraction <= 1) { // also rejects NaN
		return nil, invalid("hotSetFraction = %v, want 0 <= hotSetFraction <= 1", hotSetFraction)
	}
	if !(hotOpFraction >= 0 && hotOpFraction <= 1) {
		return nil, invalid("hotOpFraction = %v, want 0 <= hotOpFraction <= 1", hotOpFraction)
	}
	hot := uint64(hotSetFraction * float64(n))
	if hot > n { // float64(n) rounds up for n above 2^53
		hot = n
	}
	return &hotspot{hot: hot, cold: n - hot, hotOpFraction: hotOpFraction}, nil
}

func (h *hotspot) Next(r *rand.Rand) uint64 {
	switch {
	case h.hot == 0:
		return r.Uint64N(h.cold)
	case h.cold == 0:
		return r.Uint64N(h.hot)
	case r.Float64() < h.hotOpFraction:
		return r.Uint64N(h.hot)
	default:
		return h.hot + r.Uint64N(h.cold)
	}
}
