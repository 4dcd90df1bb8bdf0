package config

import (
	"errors"
	"slices"
	"testing"

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
