package workload

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// repro ends every failure message: the seed and the command that reruns
// the failing (sub)test (STYLE.md habit 2).
func repro(t *testing.T, seed uint64) string {
	return fmt.Sprintf("seed %d; reproduce with: go test ./internal/lab/workload/ -run '^%s$'", seed, t.Name())
}

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x636f736c61)) }

// must(t)(NewX(...)) is the generator NewX built, failing t on an error.
func must(t *testing.T) func(Generator, error) Generator {
	return func(g Generator, err error) Generator {
		t.Helper()
		if err != nil {
			t.Fatalf("constructor: %v", err)
		}
		return g
	}
}

func mustLatest(t *testing.T, n uint64) *Latest {
	t.Helper()
	l, err := NewLatest(n)
	if err != nil {
		t.Fatalf("NewLatest(%d): %v", n, err)
	}
	return l
}

// counts draws n items from g and returns how often each came up.
func counts(g Generator, r *rand.Rand, items, draws int) []int {
	c := make([]int, items)
	for range draws {
		c[g.Next(r)]++
	}
	return c
}

type genCase struct {
	name string
	n    uint64
	make func() (Generator, error)
}

func allGenerators() []genCase {
	var cases []genCase
	add := func(name string, n uint64, make func() (Generator, error)) {
		cases = append(cases, genCase{name, n, make})
	}
	for _, n := range []uint64{1, 2, 7, 1000, 1 << 40, math.MaxUint64} {
		add(fmt.Sprintf("uniform/n=%d", n), n, func() (Generator, error) { return NewUniform(n) })
		add(fmt.Sprintf("scrambled/n=%d", n), n, func() (Generator, error) { return NewScrambledZipfian(n) })
		add(fmt.Sprintf("hotspot/n=%d", n), n, func() (Generator, error) { return NewHotspot(n, 0.2, 0.8) })
	}
	for _, n := range []uint64{1, 2, 3, 1000} {
		for _, theta := range []float64{0.01, 0.5, ZipfianTheta} {
			add(fmt.Sprintf("zipfian/n=%d/theta=%v", n, theta), n, func() (Generator, error) { return NewZipfian(n, theta) })
		}
		add(fmt.Sprintf("latest/n=%d", n), n, func() (Generator, error) { return NewLatest(n) })
	}
	for _, f := range [][2]float64{{0, 0.8}, {1, 0.3}, {0.5, 0}, {0.5, 1}} {
		add(fmt.Sprintf("hotspot/n=10/set=%v/op=%v", f[0], f[1]), 10, func() (Generator, error) { return NewHotspot(10, f[0], f[1]) })
	}
	add("latest/n=10/grown=1000", 1000, func() (Generator, error) {
		l, err := NewLatest(10)
		if err != nil {
			return nil, err
		}
		return l, l.SetMax(1000)
	})
	return cases
}

func TestNextInRange(t *testing.T) {
	const seed, draws = 1, 100_000
	for _, tc := range allGenerators() {
		t.Run(tc.name, func(t *testing.T) {
			g := must(t)(tc.make())
			r := newRand(seed)
			for i := range draws {
				if v := g.Next(r); v >= tc.n {
					t.Fatalf("draw %d = %d, want < %d (%s)", i, v, tc.n, repro(t, seed))
				}
			}
		})
	}
}

func TestSameSeedSameSequence(t *testing.T) {
	const seed, draws = 7, 1000
	for _, tc := range allGenerators() {
		t.Run(tc.name, func(t *testing.T) {
			g1, g2 := must(t)(tc.make()), must(t)(tc.make())
			r1, r2 := newRand(seed), newRand(seed)
			for i := range draws {
				if a, b := g1.Next(r1), g2.Next(r2); a != b {
					t.Fatalf("draw %d: %d then %d from the same seed (%s)", i, a, b, repro(t, seed))
				}
			}
		})
	}
}

func TestUniformBuckets(t *testing.T) {
	const seed, n, buckets, draws = 2, 1000, 10, 100_000
	g := must(t)(NewUniform(n))
	c := counts(g, newRand(seed), n, draws)
	want := float64(draws) / buckets
	for b := range buckets {
		got := 0
		for _, k := range c[b*n/buckets : (b+1)*n/buckets] {
			got += k
		}
		// The sampling sd of a bucket is about sqrt(10000*0.9) = 95, so 10%
		// (1000) is over 10 sd: only a broken generator fails.
		if math.Abs(float64(got)-want) > 0.1*want {
			t.Errorf("bucket %d has %d draws, want %v +- 10%% (%s)", b, got, want, repro(t, seed))
		}
	}
}

// zetaEM is zeta(n, theta) = sum_{i=1}^{n} i^-theta by Euler-Maclaurin
// summation: the first m-1 terms directly, the rest as the integral plus
// endpoint and Bernoulli corrections up to the third derivative. With
// m = 1000 the next correction is below 1e-18, so this is as exact as
// float64 allows, in O(m) time for any n.
func zetaEM(n, theta float64) float64 {
	const m = 1000
	sum := 0.0
	for i := 1; i < m; i++ {
		sum += math.Pow(float64(i), -theta)
	}
	f := func(x float64) float64 { return math.Pow(x, -theta) }
	f1 := func(x float64) float64 { return -theta * math.Pow(x, -theta-1) }
	f3 := func(x float64) float64 { return -theta * (theta + 1) * (theta + 2) * math.Pow(x, -theta-3) }
	integral := (math.Pow(n, 1-theta) - math.Pow(m, 1-theta)) / (1 - theta)
	return sum + integral + (f(m)+f(n))/2 + (f1(n)-f1(m))/12 - (f3(n)-f3(m))/720
}

func TestZetaSumMatchesEulerMaclaurin(t *testing.T) {
	for _, tc := range []struct {
		n     uint64
		theta float64
	}{{1_000_000, ZipfianTheta}, {1_000_000, 0.5}, {5000, 0.2}} {
		got, want := zetaSum(0, tc.n, tc.theta, 0), zetaEM(float64(tc.n), tc.theta)
		if math.Abs(got-want) > 1e-9*want {
			t.Errorf("zeta(%d, %v) = %.15g by summation, %.15g by Euler-Maclaurin", tc.n, tc.theta, got, want)
		}
	}
}

// TestScrambledZetaConstant checks the hard-coded zeta(10^10, 0.99) without
// summing 10^10 terms. The two agree to about 1e-12 relative; the bound
// leaves room for rounding in the constant's original summation.
func TestScrambledZetaConstant(t *testing.T) {
	want := zetaEM(scrambledItems, ZipfianTheta)
	if math.Abs(scrambledZeta-want) > 1e-9*want {
		t.Errorf("scrambledZeta = %.16g, Euler-Maclaurin gives %.16g", float64(scrambledZeta), want)
	}
}

func TestZipfianHead(t *testing.T) {
	const draws = 200_000
	for _, tc := range []struct {
		n     uint64
		theta float64
		seed  uint64
	}{
		{1000, ZipfianTheta, 3},
		{1000, 0.5, 4},
		{10, 0.2, 5},
		{2, ZipfianTheta, 6},
	} {
		t.Run(fmt.Sprintf("n=%d/theta=%v", tc.n, tc.theta), func(t *testing.T) {
			g := must(t)(NewZipfian(tc.n, tc.theta))
			c := counts(g, newRand(tc.seed), int(tc.n), draws)
			zeta := zetaSum(0, tc.n, tc.theta, 0)
			// Gray et al.'s method is exact for items 0 and 1. At 200k draws
			// the sampling error of p = 0.07 is about 0.8% relative.
			for item, want := range []float64{1 / zeta, math.Pow(2, -tc.theta) / zeta} {
				got := float64(c[item]) / draws
				if math.Abs(got-want) > 0.05*want {
					t.Errorf("P(item %d) = %.4f, want %.4f +- 5%% (%s)", item, got, want, repro(t, tc.seed))
				}
			}
			if tc.n > 2 && !(c[0] > c[1] && c[1] > c[2]) {
				t.Errorf("counts of items 0, 1, 2 = %v, want decreasing (%s)", c[:3], repro(t, tc.seed))
			}
		})
	}
}

// top returns the k most frequent items of c, most frequent first.
func top(c []int, k int) []int {
	items := make([]int, len(c))
	for i := range items {
		items[i] = i
	}
	slices.SortStableFunc(items, func(a, b int) int { return c[b] - c[a] })
	return items[:k]
}

func TestScrambledZipfianSpread(t *testing.T) {
	const seed, n, draws = 8, 10_000, 200_000
	g := must(t)(NewScrambledZipfian(n))
	c := counts(g, newRand(seed), n, draws)
	best := top(c, 10)

	// The most popular item is base item 0 hashed. Its probability is
	// 1/zeta(10^10, 0.99) = 0.0378, plus whatever other base items hash to
	// the same bucket: on average (1-0.0378)/10^4 = 0.0001, and a collision
	// with base item 1 (0.019) is ruled out by the first check. Sampling sd at
	// 200k draws is 0.0004, so [0.03, 0.06] is a loose but meaningful bound.
	if want := int(fnv64(0) % n); best[0] != want {
		t.Errorf("most frequent item = %d, want fnv64(0) mod n = %d (%s)", best[0], want, repro(t, seed))
	}
	if p := float64(c[best[0]]) / draws; p < 0.03 || p > 0.06 {
		t.Errorf("most frequent item has frequency %.4f, want in [0.03, 0.06] (%s)", p, repro(t, seed))
	}
	if slices.Max(best) < 100 {
		t.Errorf("top-10 items %v all below 100: popularity is not scattered (%s)", best, repro(t, seed))
	}
	low := 0
	for _, k := range c[:n/2] {
		low += k
	}
	if f := float64(low) / draws; f < 0.3 || f > 0.7 {
		t.Errorf("%.3f of draws in the lower half of the key space, want about half (%s)", f, repro(t, seed))
	}
}

func TestHotspotFractions(t *testing.T) {
	const n, draws = 1000, 100_000
	for i, tc := range []struct {
		set, op float64
		wantHot float64 // expected share of draws in the hot set
	}{
		{0.2, 0.8, 0.8},
		{0.5, 0.5, 0.5},
		{0.1, 0.99, 0.99},
		{0.3, 0, 0},
		{0, 0.8, 0}, // empty hot set: everything is cold
		{1, 0.3, 1}, // hot set is everything
	} {
		seed := uint64(10 + i)
		t.Run(fmt.Sprintf("set=%v/op=%v", tc.set, tc.op), func(t *testing.T) {
			g := must(t)(NewHotspot(n, tc.set, tc.op))
			c := counts(g, newRand(seed), n, draws)
			hotSize := int(tc.set * n)
			hot := 0
			for _, k := range c[:hotSize] {
				hot += k
			}
			// Sampling sd is at most sqrt(0.25/100k) = 0.0016.
			if got := float64(hot) / draws; math.Abs(got-tc.wantHot) > 0.01 {
				t.Errorf("%.4f of draws in the hot set [0, %d), want %v +- 0.01 (%s)", got, hotSize, tc.wantHot, repro(t, seed))
			}
			// Within each set the choice is uniform: no item gets more than
			// twice its share.
			for item, k := range c {
				share, size := tc.wantHot, hotSize
				if item >= hotSize {
					share, size = 1-tc.wantHot, n-hotSize
				}
				if want := share * draws / float64(size); float64(k) > 2*want+10 {
					t.Fatalf("item %d drawn %d times, want about %.0f (%s)", item, k, want, repro(t, seed))
				}
			}
		})
	}
}

func TestLatestSkewsToNewest(t *testing.T) {
	const seed, draws = 20, 200_000
	l := mustLatest(t, 1000)
	r := newRand(seed)
	check := func(max uint64) {
		t.Helper()
		if l.Max() != max {
			t.Fatalf("Max() = %d, want %d", l.Max(), max)
		}
		c := counts(l, r, int(max), draws)
		if best := top(c, 1)[0]; best != int(max-1) {
			t.Errorf("max %d: most frequent item = %d, want max-1 (%s)", max, best, repro(t, seed))
		}
		want := 1 / zetaSum(0, max, ZipfianTheta, 0)
		if got := float64(c[max-1]) / draws; math.Abs(got-want) > 0.05*want {
			t.Errorf("max %d: P(max-1) = %.4f, want 1/zeta(max) = %.4f +- 5%% (%s)", max, got, want, repro(t, seed))
		}
		if !(c[max-1] > c[max-2] && c[max-2] > c[max-3]) {
			t.Errorf("max %d: counts of max-1, max-2, max-3 = %d, %d, %d, want decreasing (%s)",
				max, c[max-1], c[max-2], c[max-3], repro(t, seed))
		}
	}
	check(1000)
	if err := l.SetMax(2000); err != nil {
		t.Fatal(err)
	}
	check(2000)
	// Growing adds the new terms to the running sum, so zeta is bit for bit
	// that of a fresh generator.
	if fresh := mustLatest(t, 2000); l.z.zetaN != fresh.z.zetaN || l.z.eta != fresh.z.eta {
		t.Errorf("after SetMax(2000): zeta %v eta %v, fresh NewLatest(2000): zeta %v eta %v",
			l.z.zetaN, l.z.eta, fresh.z.zetaN, fresh.z.eta)
	}
	if err := l.SetMax(500); err != nil {
		t.Fatal(err)
	}
	check(500)
	if err := l.SetMax(0); err == nil || l.Max() != 500 {
		t.Errorf("SetMax(0) = %v and Max() = %d, want an error and Max() unchanged at 500", err, l.Max())
	}
}

func TestInvalidParameters(t *testing.T) {
	for _, tc := range []struct {
		name, param string
		err         error
	}{
		{"uniform n=0", "n", second(NewUniform(0))},
		{"zipfian n=0", "n", second(NewZipfian(0, ZipfianTheta))},
		{"zipfian n too large", "n", second(NewZipfian(MaxZipfianItems+1, ZipfianTheta))},
		{"zipfian theta=0", "theta", second(NewZipfian(10, 0))},
		{"zipfian theta=1", "theta", second(NewZipfian(10, 1))},
		{"zipfian theta<0", "theta", second(NewZipfian(10, -0.5))},
		{"zipfian theta=NaN", "theta", second(NewZipfian(10, math.NaN()))},
		{"scrambled n=0", "n", second(NewScrambledZipfian(0))},
		{"hotspot n=0", "n", second(NewHotspot(0, 0.2, 0.8))},
		{"hotspot set<0", "hotSetFraction", second(NewHotspot(10, -0.1, 0.8))},
		{"hotspot set>1", "hotSetFraction", second(NewHotspot(10, 1.1, 0.8))},
		{"hotspot set=NaN", "hotSetFraction", second(NewHotspot(10, math.NaN(), 0.8))},
		{"hotspot op<0", "hotOpFraction", second(NewHotspot(10, 0.2, -0.1))},
		{"hotspot op>1", "hotOpFraction", second(NewHotspot(10, 0.2, 1.5))},
		{"latest n=0", "n", second(NewLatest(0))},
		{"latest SetMax(0)", "n", mustLatest(t, 10).SetMax(0)},
		{"latest SetMax too large", "n", mustLatest(t, 10).SetMax(MaxZipfianItems + 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			switch {
			case tc.err == nil:
				t.Fatal("no error")
			case !errors.Is(tc.err, ErrInvalid):
				t.Errorf("error %q does not wrap ErrInvalid", tc.err)
			case !strings.HasPrefix(tc.err.Error(), "workload: "+"invalid parameter: "+tc.param+" = "):
				t.Errorf("error %q does not start by naming %s", tc.err, tc.param)
			}
		})
	}
}

func second[T any](_ T, err error) error { return err }

func TestFNV64MatchesHashFNV(t *testing.T) {
	for _, v := range []uint64{0, 1, 2, 255, 256, 1 << 32, 0x0123456789abcdef, math.MaxUint64} {
		h := fnv.New64a()
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], v)
		h.Write(b[:])
		if got, want := fnv64(v), h.Sum64(); got != want {
			t.Errorf("fnv64(%#x) = %#x, hash/fnv FNV-1a of its little-endian bytes = %#x", v, got, want)
		}
	}
}

func TestKey(t *testing.T) {
	// Golden values computed by this implementation (and cross-checked with
	// an independent FNV-1a in Python): simulation traces depend on key names,
	// so a change here must be deliberate.
	golden := map[uint64]string{
		0:          "user12161962213042174405",
		1:          "user9929646806074584996",
		2:          "user16626593026977353223",
		9999:       "user1396365430676646275",
		1234567890: "user9867912105250356560",
	}
	for i, want := range golden {
		if got := Key(i); got != want {
			t.Errorf("Key(%d) = %q, want %q", i, got, want)
		}
	}
	shape := regexp.MustCompile(`^user[0-9]{1,20}$`)
	seen := make(map[string]uint64)
	for i := range uint64(10_000) {
		k := Key(i)
		if !shape.MatchString(k) {
			t.Fatalf("Key(%d) = %q, want user followed by decimal digits", i, k)
		}
		if j, dup := seen[k]; dup {
			t.Fatalf("Key(%d) = Key(%d) = %q", i, j, k)
		}
		seen[k] = i
	}
}

func BenchmarkScrambledZipfianNext(b *testing.B) {
	g, err := NewScrambledZipfian(1_000_000)
	if err != nil {
		b.Fatal(err)
	}
	r := newRand(1)
	b.ReportAllocs()
	var sink uint64
	for b.Loop() {
		sink += g.Next(r)
	}
	_ = sink
}

// BenchmarkNewZipfian measures the O(n) construction for the largest item
// count the package is expected to serve quickly.
func BenchmarkNewZipfian10M(b *testing.B) {
	for b.Loop() {
		if _, err := NewZipfian(10_000_000, ZipfianTheta); err != nil {
			b.Fatal(err)
		}
	}
}
