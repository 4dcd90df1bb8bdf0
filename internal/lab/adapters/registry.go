//go:build unix

package adapters

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrUnknownStore is wrapped by the error of a Start, Connect or Lookup
// given a name no store has; the message names the known ones.
var ErrUnknownStore = errors.New("adapters: unknown store")

// Remote is a Store whose servers another process can reach: Connect of
// the store's name with Addrs connects to the same servers. Every store
// of the registry is one; an in-memory store is not.
type Remote interface {
	Store
	// Addrs lists what Connect takes to reach the store's servers, in
	// StoreInfo.Addrs's order.
	Addrs() []string
}

// StoreInfo describes a store of the registry: the stores that `cosla
// measure run` and `cosla bench` start by name (Start) or reach on
// servers the user runs (Connect).
type StoreInfo struct {
	Name string
	// About says what Start starts, for help texts.
	About string
	// Addrs says what Connect takes, comma-separated on command lines,
	// for help texts.
	Addrs string
	// ReadOptions and WriteOptions are the options the store takes, from
	// the weakest, the default, to the strongest (a PostgreSQL primary
	// that Connect reaches without a synchronous standby lacks "sync").
	ReadOptions, WriteOptions []string

	start   func(ctx context.Context, dir string) (Store, error)
	connect func(ctx context.Context, addrs []string) (Store, error)
}

// registry lists the stores, in the order of help texts.
var registry = []StoreInfo{
	{Name: "redis", About: "a Redis primary and an asynchronous replica on loopback (Debian redis-server)",
		Addrs:        "PRIMARY,REPLICA (host:port)",
		ReadOptions:  redisReadOptions,
		WriteOptions: redisWriteOptions,
		start:        starter(StartRedis),
		connect: pairConnect("redis", "replica", func(_ context.Context, primary, replica string) (*Redis, error) {
			return ConnectRedis(primary, replica)
		})},
	{Name: "etcd", About: "a three-member etcd cluster on loopback (Debian etcd-server)",
		Addrs:        "MEMBER,... (client URLs, or host:port for http://host:port)",
		ReadOptions:  etcdReadOptions,
		WriteOptions: etcdWriteOptions,
		start:        starter(StartEtcd),
		connect: func(ctx context.Context, addrs []string) (Store, error) {
			endpoints := make([]string, len(addrs))
			for i, a := range addrs {
				endpoints[i] = a
				if !strings.Contains(a, "://") {
					endpoints[i] = "http://" + a
				}
			}
			return asStore(ConnectEtcd(ctx, endpoints))
		}},
	{Name: "postgres", About: "a PostgreSQL primary and a streaming hot standby on loopback (Debian postgresql)",
		Addrs:        "PRIMARY,STANDBY (connection URLs, or host:port for user postgres without a password)",
		ReadOptions:  postgresReadOptions,
		WriteOptions: []string{OptionPostgresAsync, OptionPostgresSync},
		start:        starter(StartPostgres),
		connect: pairConnect("postgres", "standby", func(ctx context.Context, primary, standby string) (*Postgres, error) {
			return ConnectPostgres(ctx, postgresDSN(primary), postgresDSN(standby))
		})},
}

// asStore returns a store a constructor made as a Store, and a nil Store
// with its error.
func asStore[S Store](s S, err error) (Store, error) {
	if err != nil {
		return nil, err
	}
	return s, nil
}

// starter is a registry entry's start: the store's Start.
func starter[S Store](start func(ctx context.Context, dir string) (S, error)) func(context.Context, string) (Store, error) {
	return func(ctx context.Context, dir string) (Store, error) { return asStore(start(ctx, dir)) }
}

// pairConnect is the connect of a store of a primary and one other server
// (its role named by other), given their two addresses in that order.
func pairConnect[S Store](store, other string, connect func(ctx context.Context, primary, second string) (S, error)) func(context.Context, []string) (Store, error) {
	return func(ctx context.Context, addrs []string) (Store, error) {
		if len(addrs) != 2 {
			return nil, fmt.Errorf("adapters: %s wants 2 addresses, primary and %s, not %q", store, other, addrs)
		}
		return asStore(connect(ctx, addrs[0], addrs[1]))
	}
}

// postgresDSN is a connection string as given, or, for a host:port, the
// URL of the user postgres's database postgres there without TLS (what
// StartPostgres sets up).
func postgresDSN(addr string) string {
	if strings.Contains(addr, "://") || strings.Contains(addr, "=") {
		return addr
	}
	return "postgres://postgres@" + addr + "/postgres?sslmode=disable"
}

// Stores returns the registry, in the order of help texts.
func Stores() []StoreInfo {
	out := slices.Clone(registry)
	for i := range out {
		out[i].ReadOptions = slices.Clone(out[i].ReadOptions)
		out[i].WriteOptions = slices.Clone(out[i].WriteOptions)
	}
	return out
}

// StoreNames lists the registry's names: "redis, etcd or postgres".
func StoreNames() string {
	return NameList(registry, func(s StoreInfo) string { return s.Name })
}

// NameList lists the names of a registry's entries (two or more) for
// messages: "a, b or c"; this one's, and those of registries that extend it (package
// measure/run's targets).
func NameList[T any](entries []T, name func(T) string) string {
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = name(e)
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// Lookup returns the store of that name, or an error wrapping
// ErrUnknownStore.
func Lookup(name string) (StoreInfo, error) {
	for _, s := range Stores() {
		if s.Name == name {
			return s, nil
		}
	}
	return StoreInfo{}, fmt.Errorf("%w %q (want %s)", ErrUnknownStore, name, StoreNames())
}

// Start starts the servers of the store of that name on loopback, with
// their data and logs under dir (StartRedis, StartEtcd, StartPostgres:
// the caller's duties are theirs).
func Start(ctx context.Context, name, dir string) (Store, error) {
	s, err := Lookup(name)
	if err != nil {
		return nil, err
	}
	return s.start(ctx, dir)
}

// Connect returns the store of that name on servers the caller runs, at
// addrs (StoreInfo.Addrs; empty entries are dropped, so that "a,b," is
// "a,b"). Close leaves the servers running.
func Connect(ctx context.Context, name string, addrs []string) (Store, error) {
	s, err := Lookup(name)
	if err != nil {
		return nil, err
	}
	var given []string
	for _, a := range addrs {
		if a = strings.TrimSpace(a); a != "" {
			given = append(given, a)
		}
	}
	if len(given) == 0 {
		return nil, fmt.Errorf("adapters: %s wants the addresses of its servers: %s", name, s.Addrs)
	}
	return s.connect(ctx, given)
}
