package workload

import "math/rand/v2"

// Latest is YCSB's "latest" request distribution (Cooper et al. SoCC'10,
// benchmark workloads): the most recently inserted records are the most
// popular, as in a feed where users read the newest posts. With max records,
// Next returns max-1-z where z is drawn from a zipfian over [0, max) with
// theta ZipfianTheta, so item max-1 (the newest) is the most popular, max-2
// the next, and so on.
//
// The workload calls SetMax whenever an insert raises the record count. A
// Latest is not safe for concurrent SetMax and Next; the simulator is single
// threaded.
type Latest struct {
	z *zipfian
}

var _ Generator = (*Latest)(nil)

// NewLatest returns a Latest over n records. n is limited to
// MaxZipfianItems and construction takes O(n) time, as for NewZipfian.
func NewLatest(n uint64) (*Latest, error) {
	z, err := newZipfian(n, ZipfianTheta)
	if err != nil {
		return nil, err
	}
	return &Latest{z: z}, nil
}

// SetMax sets the record count to n, so that Next draws from [0, n) skewed
// towards n-1. Growing by k records costs O(k): only the new terms are added
// to zeta, which gives exactly the value a fresh NewLatest(n) would compute.
// Shrinking recomputes zeta in O(n). On error the Latest is unchanged.
func (l *Latest) SetMax(n uint64) error {
	if err := checkZipfianItems(n); err != nil {
		return err
	}
	switch {
	case n > l.z.n:
		l.z.setItems(n, zetaSum(l.z.n, n, l.z.theta, l.z.zetaN))
	case n < l.z.n:
		l.z.setItems(n, zetaSum(0, n, l.z.theta, 0))
	}
	return nil
}

// Max returns the current record count.
func (l *Latest) Max() uint64 { return l.z.n }

// Next returns an item in [0, Max()), most likely Max()-1.
func (l *Latest) Next(r *rand.Rand) uint64 { return l.z.n - 1 - l.z.Next(r) }
