package wire

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/cosla/cosla/internal/core/hlc"
)

// TestAppendTS checks the appended timestamp text against
// hlc.Timestamp.String, which the other messages print.
func TestAppendTS(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	cases := []hlc.Timestamp{{}, {WallNanos: 1}, {WallNanos: -1, Logical: 3}, {WallNanos: 1_000_000_000}, {WallNanos: math.MinInt64}, {WallNanos: math.MaxInt64, Logical: math.MaxUint32}}
	for range 1000 {
		cases = append(cases, hlc.Timestamp{WallNanos: r.Int64() >> r.IntN(63), Logical: r.Uint32() >> r.IntN(32)})
	}
	for _, ts := range cases {
		if got, want := string(appendTS(nil, ts)), ts.String(); got != want {
			t.Fatalf("appendTS(%#v) = %q, want %q", ts, got, want)
		}
	}
}
