package config

import (
	"errors"
	"slices"
	"testing"

	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/wire"
)

func TestMoveMakesAReplicaPrimaryAtTheNextEpoch(t *testing.T) {
	var s State
	if err := s.Apply(Command{Op: OpCreate, Layout: table("t", 1)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(Command{Op: OpRenew, Node: "c/r1"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(Command{Op: OpMove, Table: "t", Tablet: 0, Epoch: 1, Node: "c/r1"}); err != nil {
		t.Fatal(err)
	}
	tb := s.Tables["t"].Layout.Tablets[0]
	if tb.Primary != "c/r1" || !slices.Equal(tb.Secondaries, []wire.NodeID{"b/r1", "a/r1"}) || s.Tables["t"].Epochs[0] != 2 {
		t.Errorf("after the move: %+v epoch %d, want c/r1 primary, secondaries [b/r1 a/r1], epoch 2", tb, s.Tables["t"].Epochs[0])
	}
	if _, ok := s.Leases["c/r1"]; ok {
		t.Errorf("the new primary kept renewals from before its epoch: %v", s.Leases)
	}
	if got := s.PrimaryOf("c/r1"); !slices.Equal(got, []TabletEpoch{{Table: "t", Tablet: 0, Epoch: 2}}) {
		t.Errorf("PrimaryOf(c/r1) = %v", got)
	}
}

func TestRefusals(t *testing.T) {
	var s State
	if err := s.Apply(Command{Op: OpCreate, Layout: table("t", 1)}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		c    Command
		want error
	}{
		{Command{Op: OpCreate, Layout: table("t", 1)}, nil}, // a retried create
		{Command{Op: OpCreate, Layout: table("t", 2)}, ErrTableExists},
		{Command{Op: OpCreate, Layout: wire.Layout{Name: "u"}}, ErrBadCommand},
		{Command{Op: OpMove, Table: "t", Epoch: 2, Node: "b/r1"}, ErrStaleEpoch},
		{Command{Op: OpMove, Table: "t", Epoch: 1, Node: "d/r1"}, ErrNotReplica},
		{Command{Op: OpMove, Table: "u", Epoch: 1, Node: "b/r1"}, ErrNoTable},
		{Command{Op: OpMove, Table: "t", Tablet: 1, Epoch: 1, Node: "b/r1"}, ErrNoTablet},
		{Command{Op: "grow"}, ErrBadCommand},
	} {
		before := string(s.Snapshot())
		err := s.Apply(tc.c)
		if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("Apply(%+v) = %v, want %v", tc.c, err, tc.want)
		}
		if tc.want != nil && string(s.Snapshot()) != before {
			t.Errorf("refused %+v changed the state", tc.c)
		}
	}
}

func TestSnapshotRoundTrip(t *testing.T) {
	var s, r State
	for _, c := range []Command{{Op: OpCreate, Layout: table("t", 1)}, {Op: OpRenew, Node: "a/r1"}, {Op: OpMove, Table: "t", Epoch: 1, Node: "b/r1"}} {
		if err := s.Apply(c); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Restore(s.Snapshot()); err != nil {
		t.Fatal(err)
	}
	if string(r.Snapshot()) != string(s.Snapshot()) {
		t.Errorf("restored %s, want %s", r.Snapshot(), s.Snapshot())
	}
	c, err := DecodeCommand(Command{Op: OpMove, Table: "t", Epoch: 3, Node: "x"}.Encode())
	if err != nil || c.Epoch != 3 || c.Node != "x" {
		t.Errorf("a command's round trip gave %+v, %v", c, err)
	}
	if _, err := DecodeCommand([]byte("{")); !errors.Is(err, ErrBadCommand) {
		t.Errorf("a torn command decoded: %v", err)
	}
}

func TestMoveRecordsTheNewPrimarysStart(t *testing.T) {
	var s State
	start := hlc.Timestamp{WallNanos: 42, Logical: 1}
	for _, c := range []Command{{Op: OpCreate, Layout: table("t", 1)}, {Op: OpMove, Table: "t", Epoch: 1, Node: "b/r1", Start: start}} {
		if err := s.Apply(c); err != nil {
			t.Fatal(err)
		}
	}
	tb := s.Tables["t"]
	if tb.Start(0) != start || tb.Layout.Tablets[0].Primary != "b/r1" || !tb.Moved(0) {
		t.Errorf("after the move: start %v primary %s moved %v, want %v b/r1 true", tb.Start(0), tb.Layout.Tablets[0].Primary, tb.Moved(0), start)
	}
	// The move to the primary itself (a switchover's fallback) only
	// raises the epoch.
	if err := s.Apply(Command{Op: OpMove, Table: "t", Epoch: 2, Node: "b/r1", Start: start}); err != nil {
		t.Fatal(err)
	}
	if tb.Epochs[0] != 3 || !slices.Equal(tb.Layout.Tablets[0].Secondaries, []wire.NodeID{"a/r1", "c/r1"}) {
		t.Errorf("after a move to the primary: epoch %d secondaries %v", tb.Epochs[0], tb.Layout.Tablets[0].Secondaries)
	}
}

func TestReplicasAddAndRemoveKeepThePrimaryAndEpoch(t *testing.T) {
	var s State
	if err := s.Apply(Command{Op: OpCreate, Layout: table("t", 1)}); err != nil {
		t.Fatal(err)
	}
	if s.Tables["t"].Moved(0) {
		t.Fatal("a new table counts as moved")
	}
	for _, tc := range []struct {
		c    Command
		want error
		secs []wire.NodeID
	}{
		{Command{Op: OpReplicas, Table: "t", Epoch: 1, Add: "d/r1"}, nil, []wire.NodeID{"b/r1", "c/r1", "d/r1"}},
		{Command{Op: OpReplicas, Table: "t", Epoch: 1, Remove: "b/r1"}, nil, []wire.NodeID{"c/r1", "d/r1"}},
		{Command{Op: OpReplicas, Table: "t", Epoch: 1, Add: "c/r1"}, ErrIsReplica, nil},
		{Command{Op: OpReplicas, Table: "t", Epoch: 1, Remove: "a/r1"}, ErrPrimary, nil},
		{Command{Op: OpReplicas, Table: "t", Epoch: 1, Remove: "x/r1"}, ErrNotReplica, nil},
		{Command{Op: OpReplicas, Table: "t", Epoch: 2, Add: "x/r1"}, ErrStaleEpoch, nil},
		{Command{Op: OpReplicas, Table: "t", Epoch: 1, Add: "x/r1", Remove: "c/r1"}, ErrBadCommand, nil},
	} {
		before := string(s.Snapshot())
		err := s.Apply(tc.c)
		if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("Apply(%+v) = %v, want %v", tc.c, err, tc.want)
			continue
		}
		tb := s.Tables["t"]
		if tc.want != nil {
			if string(s.Snapshot()) != before {
				t.Errorf("refused %+v changed the state", tc.c)
			}
			continue
		}
		got := tb.Layout.Tablets[0]
		if got.Primary != "a/r1" || !slices.Equal(got.Secondaries, tc.secs) || tb.Epochs[0] != 1 || !tb.Moved(0) {
			t.Errorf("after %+v: %+v epoch %d, want a/r1 primary, secondaries %v, epoch 1, moved", tc.c, got, tb.Epochs[0], tc.secs)
		}
	}
}

func TestRestoreReadsASnapshotWithoutStarts(t *testing.T) {
	// A state snapshotted before tablets had starts and replica changes.
	old := `{"tables":{"t":{"layout":{"Name":"t","ID":1,"Partition":0,"Tablets":[{"Start":"","Primary":"a/r1","Secondaries":["b/r1"]}],"Replication":{"Mode":0,"Interval":0}},"epochs":[3]}}}`
	var s State
	if err := s.Restore([]byte(old)); err != nil {
		t.Fatal(err)
	}
	tb := s.Tables["t"]
	if !tb.Start(0).IsZero() || !tb.Moved(0) {
		t.Fatalf("restored start %v moved %v, want zero and moved (epoch 3)", tb.Start(0), tb.Moved(0))
	}
	if err := s.Apply(Command{Op: OpMove, Table: "t", Epoch: 3, Node: "b/r1", Start: hlc.Timestamp{WallNanos: 9}}); err != nil {
		t.Fatal(err)
	}
	if tb.Start(0).WallNanos != 9 {
		t.Errorf("start after a move of a restored table: %v", tb.Start(0))
	}
}
