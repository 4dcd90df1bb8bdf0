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
