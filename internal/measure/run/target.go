package run

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/cosla/cosla/internal/adapters"
)

// Target is a store `cosla measure run --target` measures: the simulator,
// a running cosla cluster, or a store of package adapters that the run
// starts (and stops) itself.
type Target struct {
	Name string
	// About says what it is, for the help text.
	About string
	// ReadOptions and WriteOptions are the options it takes, default
	// first; "" is always the default. For sim and cosla the read options
	// are examples: SimReadOption takes any guarantee.
	ReadOptions, WriteOptions []string

	kind targetKind
	// start starts the store, its servers in dir (see adapters: Close
	// stops them).
	start func(ctx context.Context, dir string, lag time.Duration) (adapters.Store, error)
	// addrs lists the addresses a worker process dials to reach a store
	// start returned, and connect connects to them; nil for a store that
	// lives in one process.
	addrs   func(adapters.Store) []string
	connect func(ctx context.Context, addrs []string) (adapters.Store, error)
}

type targetKind int

const (
	kindStore targetKind = iota
	kindSim
	kindCosla
)

// coslaReadOptions are examples of SimReadOption's options.
var coslaReadOptions = []string{"eventual", "consistent", "strong", "read-my-writes", "monotonic", "causal", "bounded(<d>)", "pileus-<preset>"}

// targets is the registry of targets, in the order of the help text.
var targets = []Target{
	{Name: "sim", About: "the deterministic simulator (times are virtual); --preset simpledb is Wada 4.3's SimpleDB",
		ReadOptions: coslaReadOptions, kind: kindSim},
	{Name: "mem", About: "an in-memory store whose replica lags by --lag",
		ReadOptions: []string{"primary", "replica"}, kind: kindStore,
		start: func(_ context.Context, _ string, lag time.Duration) (adapters.Store, error) {
			return NewLagStore(lag), nil
		}},
	{Name: "cosla", About: "a running `cosla cluster up` (--cluster-dir, --writer-site, --reader-site)",
		ReadOptions: coslaReadOptions, kind: kindCosla},
	{Name: "redis", About: "a Redis primary and replica started on loopback (in DIR/servers)",
		ReadOptions:  []string{adapters.OptionRedisReplica, adapters.OptionRedisPrimary},
		WriteOptions: []string{adapters.OptionRedisAsync, adapters.OptionRedisWait},
		start: func(ctx context.Context, dir string, _ time.Duration) (adapters.Store, error) {
			return adapters.StartRedis(ctx, dir)
		},
		addrs: func(s adapters.Store) []string {
			r := s.(*adapters.Redis)
			return []string{r.PrimaryAddr(), r.ReplicaAddr()}
		},
		connect: func(_ context.Context, addrs []string) (adapters.Store, error) {
			if len(addrs) != 2 {
				return nil, fmt.Errorf("%w: redis wants 2 addresses, primary and replica, not %q", ErrInvalidWorkload, addrs)
			}
			return adapters.ConnectRedis(addrs[0], addrs[1])
		}},
	{Name: "etcd", About: "a three-member etcd started on loopback (in DIR/servers)",
		ReadOptions:  []string{adapters.OptionEtcdSerializable, adapters.OptionEtcdLinearizable},
		WriteOptions: []string{adapters.OptionEtcdLinearizable},
		start: func(ctx context.Context, dir string, _ time.Duration) (adapters.Store, error) {
			return adapters.StartEtcd(ctx, dir)
		},
		addrs: func(s adapters.Store) []string { return s.(*adapters.Etcd).Endpoints() },
		connect: func(ctx context.Context, addrs []string) (adapters.Store, error) {
			if len(addrs) == 0 || addrs[0] == "" {
				return nil, fmt.Errorf("%w: etcd wants the members' addresses", ErrInvalidWorkload)
			}
			return adapters.ConnectEtcd(ctx, addrs)
		}},
	{Name: "postgres", About: "a PostgreSQL primary and streaming standby started on loopback (in DIR/servers)",
		ReadOptions:  []string{adapters.OptionPostgresStandby, adapters.OptionPostgresPrimary},
		WriteOptions: []string{adapters.OptionPostgresAsync, adapters.OptionPostgresSync},
		start: func(ctx context.Context, dir string, _ time.Duration) (adapters.Store, error) {
			return adapters.StartPostgres(ctx, dir)
		},
		addrs: func(s adapters.Store) []string {
			pg := s.(*adapters.Postgres)
			return []string{pg.PrimaryAddr(), pg.StandbyAddr()}
		},
		connect: func(ctx context.Context, addrs []string) (adapters.Store, error) {
			if len(addrs) != 2 {
				return nil, fmt.Errorf("%w: postgres wants 2 addresses, primary and standby, not %q", ErrInvalidWorkload, addrs)
			}
			dsn := func(addr string) string { return "postgres://postgres@" + addr + "/postgres?sslmode=disable" }
			return adapters.ConnectPostgres(ctx, dsn(addrs[0]), dsn(addrs[1]))
		}},
}

// Targets returns the targets, in the order of the help text.
func Targets() []Target { return slices.Clone(targets) }

// TargetNames lists the targets' names for messages: "sim, mem, ... or
// postgres".
func TargetNames() string {
	names := make([]string, len(targets))
	for i, t := range targets {
		names[i] = t.Name
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// LookupTarget returns the target of that name.
func LookupTarget(name string) (Target, error) {
	for _, t := range targets {
		if t.Name == name {
			return t, nil
		}
	}
	return Target{}, fmt.Errorf("%w: --target %q is not %s", ErrInvalidWorkload, name, TargetNames())
}

// OptionsHelp lists every target's read options (or write options), for
// the help text: "sim: eventual, ...; mem: primary, replica; ...".
func OptionsHelp(write bool) string {
	var parts []string
	for _, t := range targets {
		opts := t.ReadOptions
		if write {
			opts = t.WriteOptions
		}
		if len(opts) > 0 {
			parts = append(parts, t.Name+": "+strings.Join(opts, ", "))
		}
	}
	return strings.Join(parts, "; ")
}

// Live reports whether the target runs in real time.
func (t Target) Live() bool { return t.kind != kindSim }

// checkOptions reports the first option the target does not take. The
// simulator ignores the write option (every Put goes to the primary).
func (t Target) checkOptions(read []string, write string) error {
	switch t.kind {
	case kindSim, kindCosla:
		for _, o := range read {
			if t.kind == kindCosla {
				o = orEventual(o)
			}
			if _, _, err := SimReadOption(o); err != nil {
				return err
			}
		}
		if t.kind == kindCosla && write != "" {
			return fmt.Errorf("%w: write option %q: cosla has none (every Put goes to the primary)", ErrInvalidWorkload, write)
		}
		return nil
	}
	for _, o := range read {
		if o != "" && !slices.Contains(t.ReadOptions, o) {
			return fmt.Errorf("%w: %s has no read option %q (valid: %s)", ErrInvalidWorkload, t.Name, o, strings.Join(t.ReadOptions, ", "))
		}
	}
	if write != "" && !slices.Contains(t.WriteOptions, write) {
		valid := "none"
		if len(t.WriteOptions) > 0 {
			valid = strings.Join(t.WriteOptions, ", ")
		}
		return fmt.Errorf("%w: %s has no write option %q (valid: %s)", ErrInvalidWorkload, t.Name, write, valid)
	}
	return nil
}

// serversDir is where a run starts a store's servers.
func serversDir(out string) string { return filepath.Join(out, "servers") }
