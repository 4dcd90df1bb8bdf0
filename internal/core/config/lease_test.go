package config

import (
	"slices"
	"testing"
	"time"

	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/wire"
)

func TestLeaseAtTheLeaderOutlastsTheHolders(t *testing.T) {
	o := LeaseOptions{}.EnsureDefaults()
	t0 := time.Unix(100, 0)
	l := leaseClock{opts: o}
	l.lead(t0, []wire.NodeID{"a/r1", "b/r1"})
	// The holder asked at t0 and the renewal committed 1s later.
	l.renewed("a/r1", t0.Add(time.Second))
	last := t0 // the last instant the holder still accepts a Put
	for now := t0; o.Holds(t0, now); now = now.Add(time.Millisecond) {
		last = now
	}
	if slices.Contains(l.lapsed(last), "a/r1") {
		t.Fatalf("the leader saw a/r1's lease lapse at %v while its holder still held it", last.Sub(t0))
	}
	if got := l.lapsed(t0.Add(o.Length + o.Margin)); !slices.Equal(got, []wire.NodeID{"b/r1"}) {
		t.Errorf("lapsed at length+margin after the election = %v, want [b/r1] (taken as renewed at the election)", got)
	}
	if got := l.lapsed(t0.Add(time.Second + o.Length + o.Margin)); !slices.Equal(got, []wire.NodeID{"a/r1", "b/r1"}) {
		t.Errorf("lapsed after both ends = %v", got)
	}
	l.forget("b/r1")
	if got := l.lapsed(t0.Add(time.Hour)); !slices.Equal(got, []wire.NodeID{"a/r1"}) {
		t.Errorf("a forgotten primary still lapses: %v", got)
	}
}

func TestLeaseOptionsValidate(t *testing.T) {
	if err := (LeaseOptions{}).EnsureDefaults().Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
	for _, o := range []LeaseOptions{
		{Length: time.Second, Renew: time.Second, Margin: time.Millisecond},
		{Length: -time.Second, Renew: time.Millisecond, Margin: time.Millisecond},
		{Length: time.Second, Renew: 100 * time.Millisecond, Margin: -time.Millisecond},
	} {
		if err := o.Validate(); err == nil {
			t.Errorf("Validate(%+v) accepted it", o)
		}
	}
}

func TestElectChoosesTheLongestPrefixOfAMajority(t *testing.T) {
	tb := wire.Tablet{Primary: "a/r1", Secondaries: []wire.NodeID{"b/r1", "c/r1", "d/r1", "e/r1"}}
	ts := func(w int64) hlc.Timestamp { return hlc.Timestamp{WallNanos: w} }
	for _, tc := range []struct {
		highs map[wire.NodeID]hlc.Timestamp
		want  wire.NodeID
		ok    bool
	}{
		{map[wire.NodeID]hlc.Timestamp{"b/r1": ts(5), "c/r1": ts(9)}, "", false},                    // 2 of 5
		{map[wire.NodeID]hlc.Timestamp{"b/r1": ts(5), "c/r1": ts(9), "d/r1": ts(7)}, "c/r1", true},  // the longest
		{map[wire.NodeID]hlc.Timestamp{"b/r1": ts(9), "c/r1": ts(9), "e/r1": ts(1)}, "b/r1", true},  // a tie: set order
		{map[wire.NodeID]hlc.Timestamp{"a/r1": ts(10), "b/r1": ts(9), "c/r1": ts(2)}, "a/r1", true}, // the old primary, alive
		{map[wire.NodeID]hlc.Timestamp{"x/r1": ts(99), "b/r1": ts(1), "c/r1": ts(2)}, "", false},    // a stranger does not count
	} {
		got, ok := Elect(tb, tc.highs)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Elect(%v) = %q %v, want %q %v", tc.highs, got, ok, tc.want, tc.ok)
		}
	}
}
