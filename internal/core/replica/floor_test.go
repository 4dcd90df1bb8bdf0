package replica

import (
	"testing"

	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/wire"
)

// TestRollbackFloor: a replica that missed no epoch rolls back above the
// new epoch's start; one that missed some, above the start of the first
// epoch after its own, which may lie below (TestRandomized seeds 143 and
// 713); one further behind than EpochChange lists, above nothing.
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
}
