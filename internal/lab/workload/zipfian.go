package workload

import (
	"math"
	"math/rand/v2"
)

// ZipfianTheta is YCSB's default zipfian constant: the skew of its
// "zipfian" and "latest" request distributions.
const ZipfianTheta = 0.99

// MaxZipfianItems bounds the item count of NewZipfian and Latest. Building a
// zipfian sums n terms (about 40ns each), so the bound keeps construction
// under a minute instead of letting a typo hang a simulation
// ("put a limit on everything", TigerBeetle's TIGER_STYLE). The scrambled
// zipfian is not bound by it: it uses a precomputed zeta.
const MaxZipfianItems = 1 << 30

// Scrambled zipfian parameters. YCSB draws its default "zipfian" requests
// from a zipfian over ten billion items and folds them onto the real record
// count by hashing, so that the popularity ranking does not depend on the
// record count and popular items are scattered over the key space.
//
// scrambledZeta is zeta(10^10, 0.99) = sum_{i=1}^{10^10} i^-0.99, the value
// YCSB hard-codes for this item count because summing 10^10 terms at start-up
// would take minutes. TestScrambledZetaConstant checks it against an
// Euler-Maclaurin evaluation of the same sum.
const (
	scrambledItems = 10_000_000_000
	scrambledZeta  = 26.46902820178302
)

// zipfian draws item i in [0, n) with probability proportional to
// 1/(i+1)^theta, item 0 the most popular, using the closed-form inversion of
// Gray et al., "Quickly generating billion-record synthetic databases",
// SIGMOD'94 (the Zipfian generator of its non-uniform distributions). Items 0
// and 1 are drawn with their exact probabilities; the rest follow the
// continuous approximation of the paper, which costs O(1) per draw after an
// O(n) computation of zeta(n, theta).
type zipfian struct {
	n     uint64
	theta float64
	// zetaN is zeta(n, theta) = sum_{i=1}^{n} i^-theta, the normalising
	// constant. It is kept as the running left-to-right sum, so growing n
	// (Latest.SetMax) by adding the new terms gives bit for bit the value a
	// fresh sum would.
	zetaN float64
	// zeta2 is zeta(2, theta) = 1 + 2^-theta: u*zetaN below 1 is item 0,
	// below zeta2 item 1 (Gray et al. SIGMOD'94).
	zeta2 float64
	// alpha = 1/(1-theta) and eta = (1-(2/n)^(1-theta)) / (1-zeta2/zetaN)
	// are Gray et al.'s constants for mapping u to items 2 and up.
	alpha float64
	eta   float64
}

// NewZipfian returns a generator of items in [0, n) where item i has
// probability proportional to 1/(i+1)^theta. theta must be in (0, 1): Gray
// et al.'s inversion divides by 1-theta. YCSB uses ZipfianTheta.
//
// Construction takes O(n) time (0.4s for n = 10^7, BenchmarkNewZipfian10M);
// n is limited to MaxZipfianItems.
func NewZipfian(n uint64, theta float64) (Generator, error) {
	z, err := newZipfian(n, theta)
	if err != nil {
		return nil, err
	}
	return z, nil
}

func newZipfian(n uint64, theta float64) (*zipfian, error) {
	if err := checkZipfianItems(n); err != nil {
		return nil, err
	}
	if !(theta > 0 && theta < 1) { // also rejects NaN
		return nil, invalid("theta = %v, want 0 < theta < 1", theta)
	}
	z := &zipfian{theta: theta}
	z.setItems(n, zetaSum(0, n, theta, 0))
	return z, nil
}

func checkZipfianItems(n uint64) error {
	if n == 0 {
		return invalid("n = 0, want n > 0")
	}
	if n > MaxZipfianItems {
		return invalid("n = %d, want n <= MaxZipfianItems (%d)", n, uint64(MaxZipfianItems))
	}
	return nil
}

// zetaSum adds i^-theta for i = from+1 .. to, in increasing i, to sum. With
// from = 0 and sum = 0 it is zeta(to, theta).
func zetaSum(from, to uint64, theta, sum float64) float64 {
	for i := from + 1; i <= to; i++ {
		sum += math.Pow(float64(i), -theta)
	}
	return sum
}

// setItems sets the item count and the derived constants of Gray et al.
// SIGMOD'94 from zetaN = zeta(n, z.theta).
func (z *zipfian) setItems(n uint64, zetaN float64) {
	z.n = n
	z.zetaN = zetaN
	z.zeta2 = 1 + math.Pow(0.5, z.theta)
	z.alpha = 1 / (1 - z.theta)
	z.eta = 0
	if n > 2 {
		// For n <= 2 every draw is item 0 or 1 and eta (0/0 at n = 2) is
		// unused; eta = 0 sends a draw that rounding pushes past zeta2 to
		// item n-1 rather than computing with NaN.
		z.eta = (1 - math.Pow(2/float64(n), 1-z.theta)) / (1 - z.zeta2/zetaN)
	}
}

func (z *zipfian) Next(r *rand.Rand) uint64 {
	u := r.Float64()
	uz := u * z.zetaN
	if uz < 1 {
		return 0
	}
	if uz < z.zeta2 {
		return 1
	}
	// Gray et al. SIGMOD'94: 1 + n*(eta*u - eta + 1)^alpha for 1-based
	// items, so n*(eta*u - eta + 1)^alpha 0-based. It is 2 at the boundary
	// u = zeta2/zetaN and tends to n, one past the last item, as u tends to 1.
	v := uint64(float64(z.n) * math.Pow(z.eta*u-z.eta+1, z.alpha))
	if v >= z.n { // u close to 1, or rounding
		v = z.n - 1
	}
	return v
}

// scrambledZipfian is YCSB's default "zipfian" request distribution.
type scrambledZipfian struct {
	n    uint64
	base zipfian
}

// NewScrambledZipfian returns YCSB's default "zipfian" request distribution
// over [0, n): a zipfian with theta ZipfianTheta over 10^10 items, hashed
// with FNV-1a and taken modulo n. Popularity is as skewed as a zipfian's, but
// the popular items are spread over the key space instead of being the
// lowest-numbered (which, for a freshly loaded table, are also the oldest)
// records. The most popular item is fnv64(0) mod n, with probability a
// little over 1/zeta(10^10, 0.99), about 3.8%.
func NewScrambledZipfian(n uint64) (Generator, error) {
	if n == 0 {
		return nil, invalid("n = 0, want n > 0")
	}
	s := &scrambledZipfian{n: n}
	s.base.theta = ZipfianTheta
	s.base.setItems(scrambledItems, scrambledZeta)
	return s, nil
}

// ScrambledRankProbability is the probability that NewScrambledZipfian
// draws the rank-th most popular item (rank from 1) of the zipfian over
// 10^10 items it folds onto its n keys: rank^-theta / zeta(10^10, theta).
// A key's probability is the sum over the ranks that hash onto it.
func ScrambledRankProbability(rank float64) float64 {
	return math.Pow(rank, -ZipfianTheta) / scrambledZeta
}

func (s *scrambledZipfian) Next(r *rand.Rand) uint64 {
	return ScrambledItem(s.base.Next(r), s.n)
}

// ScrambledItem is the item of [0, n) onto which NewScrambledZipfian
// folds its rank-th most popular zipfian item (rank from 0).
func ScrambledItem(rank, n uint64) uint64 { return fnv64(rank) % n }
