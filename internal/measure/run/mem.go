package run

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// LagStore is an in-memory reference Store with one primary and one
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

// Name implements Store.
func (s *LagStore) Name() string { return fmt.Sprintf("mem(lag %s)", s.Lag) }

// ReadOptions lists the read options.
func (s *LagStore) ReadOptions() []string { return []string{"primary", "replica"} }

// Write implements Store; there are no write options.
func (s *LagStore) Write(ctx context.Context, key, value, option string) (Outcome, error) {
	if option != "" {
		return Outcome{}, fmt.Errorf("measure: mem store: unknown write option %q", option)
	}
	if err := ctx.Err(); err != nil {
		return Outcome{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.versions[key] = append(s.versions[key], lagVersion{at: time.Now(), value: value})
	return Outcome{Consistency: "strong", Replica: "primary"}, nil
}

// Read implements Store.
func (s *LagStore) Read(ctx context.Context, key, option string) (string, bool, Outcome, error) {
	if err := ctx.Err(); err != nil {
		return "", false, Outcome{}, err
	}
	cutoff := time.Now()
	out := Outcome{Consistency: "strong", Replica: "primary"}
	switch option {
	case "", "primary":
	case "replica":
		cutoff = cutoff.Add(-s.Lag)
		out = Outcome{Consistency: "eventual", Replica: "replica"}
	default:
		return "", false, Outcome{}, fmt.Errorf("measure: mem store: unknown read option %q (want primary or replica)", option)
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
