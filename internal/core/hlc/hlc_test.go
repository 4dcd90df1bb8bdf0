package hlc_test

import (
	"math"
	"testing"

	"github.com/cosla/cosla/internal/core/hlc"
)

func ts(wall int64, logical uint32) hlc.Timestamp {
	return hlc.Timestamp{WallNanos: wall, Logical: logical}
}

// fakeClock is a physical clock the test sets by hand.
type fakeClock struct{ nanos int64 }

func (f *fakeClock) read() int64 { return f.nanos }

func TestCompare(t *testing.T) {
	for _, tc := range []struct {
		name string
		t, u hlc.Timestamp
		want int
	}{
		{"zero equals zero", hlc.Timestamp{}, hlc.Timestamp{}, 0},
		{"equal", ts(5, 3), ts(5, 3), 0},
		{"wall decides", ts(4, 9), ts(5, 0), -1},
		{"wall decides over logical", ts(6, 0), ts(5, math.MaxUint32), 1},
		{"logical breaks ties", ts(5, 1), ts(5, 2), -1},
		{"logical breaks ties after", ts(5, 2), ts(5, 1), 1},
		{"negative wall", ts(-1, 0), ts(0, 0), -1},
		{"zero below first issued", hlc.Timestamp{}, ts(0, 1), -1},
		{"extremes", ts(math.MinInt64, 0), ts(math.MaxInt64, math.MaxUint32), -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.t.Compare(tc.u); got != tc.want {
				t.Errorf("%v.Compare(%v) = %d, want %d", tc.t, tc.u, got, tc.want)
			}
			if got := tc.u.Compare(tc.t); got != -tc.want {
				t.Errorf("%v.Compare(%v) = %d, want %d (antisymmetry)", tc.u, tc.t, got, -tc.want)
			}
			if got := tc.t.Less(tc.u); got != (tc.want < 0) {
				t.Errorf("%v.Less(%v) = %v, want %v", tc.t, tc.u, got, tc.want < 0)
			}
			if got := tc.u.Less(tc.t); got != (tc.want > 0) {
				t.Errorf("%v.Less(%v) = %v, want %v", tc.u, tc.t, got, tc.want > 0)
			}
		})
	}
}

// TestTotalOrder checks that Compare is a total order over a set of
// timestamps: reflexive, antisymmetric, transitive and consistent with Less
// and ==.
func TestTotalOrder(t *testing.T) {
	var all []hlc.Timestamp
	for _, w := range []int64{math.MinInt64, -2, -1, 0, 1, 2, math.MaxInt64} {
		for _, l := range []uint32{0, 1, 2, math.MaxUint32} {
			all = append(all, ts(w, l))
		}
	}
	for _, a := range all {
		for _, b := range all {
			c := a.Compare(b)
			if (c == 0) != (a == b) {
				t.Errorf("%v.Compare(%v) = %d but equality is %v", a, b, c, a == b)
			}
			if a.Less(b) != (c < 0) {
				t.Errorf("%v.Less(%v) = %v disagrees with Compare %d", a, b, a.Less(b), c)
			}
			for _, d := range all {
				if a.Less(b) && b.Less(d) && !a.Less(d) {
					t.Errorf("not transitive: %v < %v < %v but not %v < %v", a, b, d, a, d)
				}
			}
		}
	}
}

func TestIsZero(t *testing.T) {
	if !(hlc.Timestamp{}).IsZero() {
		t.Error("zero Timestamp: IsZero = false")
	}
	for _, x := range []hlc.Timestamp{ts(0, 1), ts(1, 0), ts(-1, 0)} {
		if x.IsZero() {
			t.Errorf("%v.IsZero() = true", x)
		}
	}
}

func TestMax(t *testing.T) {
	for _, tc := range []struct {
		name       string
		t, u, want hlc.Timestamp
	}{
		{"first later", ts(5, 0), ts(4, 7), ts(5, 0)},
		{"second later", ts(4, 7), ts(5, 0), ts(5, 0)},
		{"logical", ts(5, 1), ts(5, 2), ts(5, 2)},
		{"equal", ts(5, 2), ts(5, 2), ts(5, 2)},
		{"zero", hlc.Timestamp{}, ts(0, 1), ts(0, 1)},
		{"negative", ts(-3, 0), ts(-5, 9), ts(-3, 0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := hlc.Max(tc.t, tc.u); got != tc.want {
				t.Errorf("Max(%v, %v) = %v, want %v", tc.t, tc.u, got, tc.want)
			}
		})
	}
}

func TestFromTime(t *testing.T) {
	for _, wall := range []int64{math.MinInt64, -1, 0, 1, 1_700_000_000_000_000_000, math.MaxInt64} {
		got := hlc.FromTime(wall)
		if got != ts(wall, 0) {
			t.Errorf("FromTime(%d) = %+v, want WallNanos %d Logical 0", wall, got, wall)
		}
		// The smallest timestamp at wall: above everything at wall-1.
		if wall != math.MinInt64 && !ts(wall-1, math.MaxUint32).Less(got) {
			t.Errorf("FromTime(%d) = %v is not above %v", wall, got, ts(wall-1, math.MaxUint32))
		}
	}
}

func TestString(t *testing.T) {
	for _, tc := range []struct {
		t    hlc.Timestamp
		want string
	}{
		{hlc.Timestamp{}, "0.000000000,0"},
		{ts(1_500_000_000, 2), "1.500000000,2"},
		{ts(1, 0), "0.000000001,0"},
		{ts(999_999_999, 0), "0.999999999,0"},
		{ts(1_000_000_000, math.MaxUint32), "1.000000000,4294967295"},
		{ts(-1, 0), "-0.000000001,0"},
		{ts(-1_500_000_000, 2), "-1.500000000,2"},
		{ts(math.MaxInt64, 0), "9223372036.854775807,0"},
		{ts(math.MinInt64, 0), "-9223372036.854775808,0"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			if got := tc.t.String(); got != tc.want {
				t.Errorf("Timestamp{%d, %d}.String() = %q, want %q", tc.t.WallNanos, tc.t.Logical, got, tc.want)
			}
		})
	}
}

func TestNowFollowsPhysicalClock(t *testing.T) {
	pc := &fakeClock{nanos: 100}
	c := hlc.NewClock(pc.read)
	if got := c.Last(); !got.IsZero() {
		t.Fatalf("new clock: Last = %v, want zero", got)
	}
	if got := c.Now(); got != ts(100, 0) {
		t.Fatalf("Now = %v, want %v", got, ts(100, 0))
	}
	if got := c.Now(); got != ts(100, 1) {
		t.Fatalf("Now with stalled physical clock = %v, want %v", got, ts(100, 1))
	}
	pc.nanos = 250
	if got := c.Now(); got != ts(250, 0) {
		t.Fatalf("Now after physical jump ahead = %v, want %v (logical reset)", got, ts(250, 0))
	}
	if got := c.Last(); got != ts(250, 0) {
		t.Fatalf("Last = %v, want %v", got, ts(250, 0))
	}
	if got := c.Last(); got != ts(250, 0) {
		t.Fatalf("Last advanced the clock: %v", got)
	}
}

func TestNowStrictlyIncreasing(t *testing.T) {
	// The physical clock stalls, goes backwards, jumps ahead and goes
	// backwards again; Now must keep increasing and never lag behind the
	// physical clock.
	physical := []int64{100, 100, 100, 90, 50, 101, 101, 200, 150, 150, 0, -5, 201, 300}
	pc := &fakeClock{}
	c := hlc.NewClock(pc.read)
	var prev hlc.Timestamp
	for i, p := range physical {
		pc.nanos = p
		got := c.Now()
		if !prev.Less(got) {
			t.Fatalf("step %d (physical %d): Now = %v, not after previous %v", i, p, got, prev)
		}
		if got.WallNanos < p {
			t.Fatalf("step %d: Now = %v is behind the physical clock %d", i, got, p)
		}
		if got != c.Last() {
			t.Fatalf("step %d: Last = %v, want %v", i, c.Last(), got)
		}
		prev = got
	}
	if want := ts(300, 0); prev != want {
		t.Fatalf("final Now = %v, want %v", prev, want)
	}
}

func TestNowBackwardsKeepsWall(t *testing.T) {
	pc := &fakeClock{nanos: 1000}
	c := hlc.NewClock(pc.read)
	c.Now()
	pc.nanos = 10
	for i := uint32(1); i <= 3; i++ {
		if got, want := c.Now(), ts(1000, i); got != want {
			t.Fatalf("Now with physical clock behind = %v, want %v", got, want)
		}
	}
}

func TestLogicalOverflowBorrowsNanosecond(t *testing.T) {
	pc := &fakeClock{nanos: 100}
	c := hlc.NewClock(pc.read)
	c.Update(ts(100, math.MaxUint32-1))
	if got, want := c.Now(), ts(100, math.MaxUint32); got != want {
		t.Fatalf("Now = %v, want %v", got, want)
	}
	if got, want := c.Now(), ts(101, 0); got != want {
		t.Fatalf("Now at exhausted counter = %v, want %v (borrowed nanosecond)", got, want)
	}
	if got, want := c.Now(), ts(101, 1); got != want {
		t.Fatalf("Now after borrowing = %v, want %v", got, want)
	}
	// Once the physical clock catches up past the borrowed nanosecond, the
	// clock follows it again.
	pc.nanos = 102
	if got, want := c.Now(), ts(102, 0); got != want {
		t.Fatalf("Now after physical clock caught up = %v, want %v", got, want)
	}
}

func TestLogicalOverflowAfterUpdate(t *testing.T) {
	pc := &fakeClock{nanos: 5}
	c := hlc.NewClock(pc.read)
	remote := ts(100, math.MaxUint32)
	c.Update(remote)
	got := c.Now()
	if !remote.Less(got) {
		t.Fatalf("Now = %v, not after remote %v", got, remote)
	}
	if want := ts(101, 0); got != want {
		t.Fatalf("Now = %v, want %v", got, want)
	}
}

func TestUpdate(t *testing.T) {
	for _, tc := range []struct {
		name             string
		physical         int64
		issued           int // Now calls before Update
		remote           hlc.Timestamp
		wantLast, wantTS hlc.Timestamp // after Update; Now after that
	}{
		{"remote ahead of everything", 10, 1, ts(50, 3), ts(50, 3), ts(50, 4)},
		{"remote behind last", 10, 3, ts(10, 1), ts(10, 2), ts(10, 3)},
		{"remote equal to last", 10, 1, ts(10, 0), ts(10, 0), ts(10, 1)},
		{"remote behind physical", 100, 0, ts(50, 7), ts(50, 7), ts(100, 0)},
		{"remote at physical", 100, 0, ts(100, 7), ts(100, 7), ts(100, 8)},
		{"zero remote", 10, 1, hlc.Timestamp{}, ts(10, 0), ts(10, 1)},
		{"fresh clock, zero physical", 0, 0, ts(0, 5), ts(0, 5), ts(0, 6)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pc := &fakeClock{nanos: tc.physical}
			c := hlc.NewClock(pc.read)
			for range tc.issued {
				c.Now()
			}
			before := c.Last()
			c.Update(tc.remote)
			if got := c.Last(); got != tc.wantLast {
				t.Fatalf("Last after Update(%v) = %v, want %v", tc.remote, got, tc.wantLast)
			}
			if c.Last().Less(before) {
				t.Fatalf("Update(%v) moved the clock back from %v to %v", tc.remote, before, c.Last())
			}
			got := c.Now()
			if got != tc.wantTS {
				t.Fatalf("Now after Update(%v) = %v, want %v", tc.remote, got, tc.wantTS)
			}
			if !tc.remote.Less(got) {
				t.Fatalf("Now after Update(%v) = %v, not strictly greater", tc.remote, got)
			}
		})
	}
}

// TestUpdateSequence interleaves Now and Update with remote timestamps
// from a clock far ahead and checks that Now always exceeds everything seen.
func TestUpdateSequence(t *testing.T) {
	pc := &fakeClock{nanos: 1000}
	c := hlc.NewClock(pc.read)
	var seen hlc.Timestamp
	steps := []struct {
		physical int64
		remote   hlc.Timestamp
	}{
		{1000, ts(5000, 0)},
		{1001, ts(4000, 9)},
		{6000, ts(5999, math.MaxUint32)},
		{6000, ts(6000, 3)},
		{10, ts(7000, 1)},
		{8000, hlc.Timestamp{}},
	}
	for i, st := range steps {
		pc.nanos = st.physical
		c.Update(st.remote)
		seen = hlc.Max(seen, st.remote)
		got := c.Now()
		if !seen.Less(got) {
			t.Fatalf("step %d: Now = %v, not after everything seen (%v)", i, got, seen)
		}
		if got.WallNanos < st.physical {
			t.Fatalf("step %d: Now = %v behind physical clock %d", i, got, st.physical)
		}
		seen = got
	}
}
