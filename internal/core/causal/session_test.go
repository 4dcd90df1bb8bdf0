package causal

import (
	"testing"

	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/wire"
)

// TestSessionLift checks how a session's restrictions end (issue 28 item
// 1): a coordinator's reply lifts the ones it names, the session stays
// bound while any is left, and its next request names only those left.
func TestSessionLift(t *testing.T) {
	v := func(n int64) wire.Version { return wire.Version{TS: hlc.Timestamp{WallNanos: n}, Origin: "b/cc"} }
	x, y := wire.Dep{Key: "x", Version: v(1)}, wire.Dep{Key: "y", Version: v(2)}
	for _, tc := range []struct {
		name   string
		lifted []wire.Dep
		ring   int32
		left   int
	}{
		{"none", nil, 0, 2},
		{"one", []wire.Dep{x}, 0, 1},
		{"both", []wire.Dep{y, x}, wire.NoRing, 0},
		{"another version", []wire.Dep{{Key: "x", Version: v(3)}}, 0, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewSession(1)
			s.Read("x", true, x.Version, wire.FromRing, 0, true)
			s.Read("y", true, y.Version, wire.FromRing, 0, true)
			if got := s.Get(1, "z").Restrictions; len(got) != 2 {
				t.Fatalf("before: request names %v, want both restrictions", got)
			}
			s.Lift(tc.lifted)
			if s.Ring() != tc.ring || s.Restrictions() != tc.left {
				t.Fatalf("after lifting %v: ring %d with %d restrictions, want ring %d with %d", tc.lifted, s.Ring(), s.Restrictions(), tc.ring, tc.left)
			}
			if got := s.Get(1, "z").Restrictions; len(got) != tc.left {
				t.Errorf("after lifting %v: request names %v, want %d", tc.lifted, got, tc.left)
			}
		})
	}
}
