package replica

import (
	"slices"
	"testing"
)

// TestRing checks that a ring keeps the last max values, oldest first,
// and hands back each value it replaces once full.
func TestRing(t *testing.T) {
	r := newRing[int](3)
	var replaced []int
	for v := range 7 {
		if old, ok := r.add(v); ok {
			replaced = append(replaced, old)
		}
		if got := r.all(); len(got) != min(v+1, 3) || got[len(got)-1] != v {
			t.Fatalf("after adding %d: all() = %v", v, got)
		}
	}
	if got := r.all(); !slices.Equal(got, []int{4, 5, 6}) {
		t.Errorf("all() = %v, want [4 5 6]", got)
	}
	if !slices.Equal(replaced, []int{0, 1, 2, 3}) {
		t.Errorf("replaced %v, want [0 1 2 3]", replaced)
	}
}
