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

// TestSessionRebind checks that a reply saying Rebound moves the session's
// restrictions to the reply's ring only if the request named them all:
// one read since (in flight, from the old ring) keeps the session where
// it is. A later in-flight read from the new ring then joins them there.
func TestSessionRebind(t *testing.T) {
	v := func(n int64) wire.Version { return wire.Version{TS: hlc.Timestamp{WallNanos: n}, Origin: "b/cc"} }
	x, y := wire.Dep{Key: "x", Version: v(1)}, wire.Dep{Key: "y", Version: v(2)}
	for _, tc := range []struct {
		name  string
		named []wire.Dep
		ring  int32
	}{
		{"all named", []wire.Dep{x, y}, 1},
		{"one not named", []wire.Dep{x}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewSession(1)
			s.Read("x", true, x.Version, wire.FromRing, 0, true)
			s.Read("y", true, y.Version, wire.FromRing, 0, true)
			s.Rebind(1, tc.named)
			if s.Ring() != tc.ring || s.Restrictions() != 2 {
				t.Fatalf("rebound to 1 naming %v: ring %d with %d restrictions, want ring %d with 2", tc.named, s.Ring(), s.Restrictions(), tc.ring)
			}
			s.Read("z", true, v(3), wire.FromRing, tc.ring, true)
			if got := s.Get(1, "w"); got.Ring != tc.ring || len(got.Restrictions) != 3 {
				t.Errorf("next request: ring %d naming %v, want ring %d naming 3", got.Ring, got.Restrictions, tc.ring)
			}
		})
	}
}
