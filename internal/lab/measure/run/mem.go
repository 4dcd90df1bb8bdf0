package run

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/cosla/cosla/internal/lab/adapters"
)

// LagStore is an in-memory reference adapters.Store with one primary and one
// replica that applies every write Lag after the primary, in order: read
// option "primary" (the default) sees every completed write, "replica"
// sees the writes completed Lag ago or earlier. It is the store the
// runner's own tests measure, and `cosla measure run --target mem`.
type LagStore struct {
	Lag time.Duration

	mu       sync.Mutex
	versions map[string][]lagVersion
}

type lagVersion struct {
	at    time.Time
	value string
}

// NewLagStore returns an empty store whose replica lags by lag.
func NewLagStore(lag time.Duration) *LagStore {
	return &LagStore{Lag: lag, versions: map[string][]lagVersion{}}
}

// Name implements adapters.Store.
func (s *LagStore) Name() string { return fmt.Sprintf("mem(lag %s)", s.Lag) }

// ReadOptions implements adapters.Store.
func (s *LagStore) ReadOptions() []string { return []string{"primary", "replica"} }

// WriteOptions implements adapters.Store: there are none but the default.
func (s *LagStore) WriteOptions() []string { return nil }

// Close implements adapters.Store; it does nothing.
func (s *LagStore) Close() error { return nil }

// Write implements adapters.Store.
func (s *LagStore) Write(ctx context.Context, key, value, option string) (adapters.Report, error) {
	if option != "" {
		return adapters.Report{}, fmt.Errorf("%w: mem write option %q; there are none", adapters.ErrBadOption, option)
	}
	if err := ctx.Err(); err != nil {
		return adapters.Report{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.versions[key] = append(s.versions[key], lagVersion{at: time.Now(), value: value})
	return adapters.Report{Consistency: adapters.ConsistencyStrong, Replica: "primary"}, nil
}

// Read implements adapters.Store.
func (s *LagStore) Read(ctx context.Context, key, option string) (string, bool, adapters.Report, error) {
	if err := ctx.Err(); err != nil {
		return "", false, adapters.Report{}, err
	}
	cutoff := time.Now()
	out := adapters.Report{Consistency: adapters.ConsistencyStrong, Replica: "primary"}
	switch option {
	case "", "primary":
	case "replica":
		cutoff = cutoff.Add(-s.Lag)
		out = adapters.Report{Consistency: adapters.ConsistencyEventual, Replica: "replica"}
	default:
		return "", false, adapters.Report{}, fmt.Errorf("%w: mem read option %q; valid: primary, replica", adapters.ErrBadOption, option)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	vs := s.versions[key]
	for i := len(vs) - 1; i >= 0; i-- {
		if !vs[i].at.After(cutoff) {
			return vs[i].value, true, out, nil
		}
	}
	return "", false, out, nil
}

var _ adapters.Store = (*LagStore)(nil)
