package replica

import (
	"testing"

	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/wire"
)

// TestRollbackFloor: a replica that missed no epoch rolls back above the
// new epoch's start; one that missed some, above the lowest start of the
// epochs after its own, which may lie below the new one's (TestRandomized
// seeds 143 and 713) or above it (seeds 726 and 958); one further behind
// than EpochChange lists, above nothing.
func TestRollbackFloor(t *testing.T) {
	ts := func(s int64) hlc.Timestamp { return hlc.Timestamp{WallNanos: s} }
	m := &wire.EpochChange{Epoch: 5, Start: ts(50), Earlier: []wire.EpochStart{{Epoch: 4, Start: ts(40)}, {Epoch: 3, Start: ts(30)}}}
	for _, tc := range []struct {
		own  uint64
		want hlc.Timestamp
	}{{4, ts(50)}, {3, ts(40)}, {2, ts(30)}, {1, hlc.Timestamp{}}, {5, ts(50)}} {
		if got := rollbackFloor(tc.own, m); got != tc.want {
			t.Errorf("a replica at epoch %d rolls back above %s, want %s", tc.own, got, tc.want)
		}
	}
	// A later epoch's start below an earlier one's: a replica that
	// missed both rolls back above the lower (seed 726).
	lower := &wire.EpochChange{Epoch: 3, Start: ts(10), Earlier: []wire.EpochStart{{Epoch: 2, Start: ts(11)}}}
	if got := rollbackFloor(1, lower); got != ts(10) {
		t.Errorf("a replica at epoch 1 rolls back above %s, want %s", got, ts(10))
	}
}

// TestElectable: a replica reports its high timestamp to an election
// only if it holds every version it held (not catching up) and, as a
// secondary, none above its high timestamp that a snapshot brought:
// elected from its high, it would have to wipe them (TestRandomized seed
// 830). A primary's high is its clock, above any of its versions.
func TestElectable(t *testing.T) {
	ts := func(s int64) hlc.Timestamp { return hlc.Timestamp{WallNanos: s} }
	for _, tc := range []struct {
		name string
		tb   tablet
		want bool
	}{
		{"caught up", tablet{high: ts(10), ahead: ts(9)}, true},
		{"a version above its high", tablet{high: ts(10), ahead: ts(12)}, false},
		{"catching up", tablet{high: ts(10), recover: ts(11)}, false},
		{"a primary", tablet{isPrimary: true, high: ts(10), ahead: ts(12)}, true},
	} {
		if got := tc.tb.electable(); got != tc.want {
			t.Errorf("%s: electable = %t, want %t", tc.name, got, tc.want)
		}
	}
}
