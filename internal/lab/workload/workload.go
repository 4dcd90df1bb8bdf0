// Package workload generates the request distributions of YCSB (Cooper et
// al., "Benchmarking Cloud Serving Systems with YCSB", SoCC'10): which
// record an operation touches and what that record's key is called.
//
// Everything here is written from the published descriptions, not from
// YCSB's source. Every generator is a pure function of the *rand.Rand the
// caller passes to Next: no package-level randomness, no time, no I/O, so a
// simulation that seeds its own source replays the same keys on every run.
//
// Constructors validate their parameters and return an error wrapping
// ErrInvalid, so Next never has to panic or clamp at draw time.
package workload

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
)

// ErrInvalid is wrapped by every constructor error; the message names the
// offending parameter (STYLE.md habit 6).
var ErrInvalid = errors.New("workload: invalid parameter")

// Generator draws item numbers. Next returns a number in [0, n), where n is
// the item count the generator was built with.
//
// A Generator holds no randomness of its own: all of it comes from r, so the
// same generator may be shared by several clients, each with its own source.
type Generator interface {
	Next(r *rand.Rand) uint64
}

// uniform is YCSB's "uniform" request distribution (Cooper et al. SoCC'10,
// benchmark workloads: every record equally likely).
type uniform struct {
	n uint64
}

// NewUniform returns a generator of items in [0, n), each equally likely.
func NewUniform(n uint64) (Generator, error) {
	if n == 0 {
		return nil, invalid("n = 0, want n > 0")
	}
	return uniform{n: n}, nil
}

func (u uniform) Next(r *rand.Rand) uint64 { return r.Uint64N(u.n) }

// Key names item i the way YCSB does with insertorder=hashed: "user"
// followed by the decimal FNV-1a 64-bit hash of the item number. Hashing
// rather than using i itself spreads consecutively inserted records over the
// key space, so a range-partitioned store does not put every insert on one
// partition (Cooper et al. SoCC'10, benchmark workloads).
//
// This mirrors YCSB's naming scheme as its documentation describes it; the
// hash is kept as an unsigned 64-bit value, so keys are not guaranteed to be
// byte-identical to those of YCSB's Java client, which works with signed
// longs. Nothing in cosla needs them to be.
func Key(i uint64) string {
	return "user" + strconv.FormatUint(fnv64(i), 10)
}

// FNV-1a 64-bit parameters (Fowler, Noll and Vo; IETF draft
// draft-eastlake-fnv): the offset basis and the prime.
const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
)

// fnv64 is FNV-1a over the 8 bytes of v, least significant byte first. It is
// used both for key names (Key) and to scatter popular items over the key
// space (NewScrambledZipfian). Written out by hand rather than through
// hash/fnv so that it costs no allocation on the request path.
func fnv64(v uint64) uint64 {
	h := uint64(fnvOffset64)
	for range 8 {
		h ^= v & 0xff
		h *= fnvPrime64
		v >>= 8
	}
	return h
}

// invalid returns an error wrapping ErrInvalid whose text names the parameter
// and says what was wanted.
func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}
