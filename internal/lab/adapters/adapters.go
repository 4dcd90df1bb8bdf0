// Package adapters connects `cosla measure` and `cosla bench` to real
// key-value stores, so that the consumer-side measurements of Wada et al.
// (CIDR'11, sections 2-4) and the YCSB workloads can be run on stores
// other than cosla itself: Redis with an asynchronous replica, a
// three-member etcd cluster, and PostgreSQL with a streaming standby.
//
// Each store is a Store: Write and Read take an option, the client-side
// choice that Wada 2.1 varies ("eventual" or "consistent" reads in
// SimpleDB), and return a Report of what the store said about the op, so
// that the benchmark can fill measure.Op's Option, Consistency and Replica
// fields. The options, from the weakest (the default) to the strongest,
// which is how `cosla bench` maps its weak and strong reads and writes:
//
//	store     read options                write options
//	redis     replica, primary            async, wait
//	etcd      serializable, linearizable  linearizable
//	postgres  standby, primary            async, sync (if a synchronous standby is set)
//
// Report.Consistency uses one vocabulary across stores:
//
//	eventual      a read served by a replica that may lag (Redis replica,
//	              PostgreSQL hot standby); it may return a stale value
//	serializable  an etcd read served from one member's local state
//	              without consulting the leader; it may be stale
//	strong        a read at the single primary (Redis, PostgreSQL): it sees
//	              every write the primary acknowledged, as long as there is
//	              no failover (the harness never fails over)
//	linearizable  an etcd read or write that went through Raft consensus
//	async         a write acknowledged by the primary alone
//	replicated    a write acknowledged after the replica had it: Redis WAIT
//	              saw the replica acknowledge it; PostgreSQL with
//	              synchronous_commit=remote_apply, so the standby has
//	              applied it and a standby read sees it
//
// Report.Replica is the host:port address of the server that served the
// op (for etcd, the member's client URL without its scheme).
//
// # Harness
//
// StartRedis, StartEtcd and StartPostgres start real servers from the
// Debian binaries, as child processes listening on loopback on free ports,
// with their data and logs under a directory the caller gives; the Close
// of the returned store stops them. ConnectRedis, ConnectEtcd and
// ConnectPostgres attach to servers the user already runs. Start and
// Connect do the same by the store's name (the registry, Stores), and a
// store's Addrs (Remote) is what Connect takes to reach it again, from
// another process too. The caller's duties:
//  1. install the servers (ErrNotInstalled names the Debian package);
//  2. give each Start its own directory and keep it until Close returns;
//  3. call Close, even after a failed op, so that no server outlives the
//     caller (a harness started on Linux also dies with the process that
//     started it, through the parent-death signal).
//
// PostgreSQL refuses to run as root. When the caller is root, the harness
// runs initdb, pg_basebackup and postgres as the unprivileged `postgres`
// user that the Debian package creates, and hands it the data directory;
// see StartPostgres.
package adapters

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Store is a key-value store under measurement. Safe for concurrent use.
// It is the one interface through which the workload driver calls a store
// (driver.StoreTarget); measure/run's LagStore is an in-memory
// implementation.
type Store interface {
	// Name is a short label, e.g. "redis", "etcd", "postgres".
	Name() string
	// Write writes value at key with a write option ("" = the store's default).
	Write(ctx context.Context, key, value, option string) (Report, error)
	// Read reads key with a read option; found is false if the key has no value.
	Read(ctx context.Context, key, option string) (value string, found bool, rep Report, err error)
	// ReadOptions and WriteOptions list the options the store accepts,
	// from the weakest, the default, to the strongest.
	ReadOptions() []string
	WriteOptions() []string
	Close() error
}

// Report is what the store said about an operation.
type Report struct {
	// Consistency is the guarantee the store claims the op met, in the
	// vocabulary of the package comment.
	Consistency string
	// Replica is the address of the server that served the op.
	Replica string
}

// ErrBadOption is wrapped by the error of an op given an option its store
// does not accept; the message names the valid ones.
var ErrBadOption = errors.New("adapters: bad option")

// ErrNotInstalled is wrapped by the error of a Start whose server binaries
// (or, for PostgreSQL run as root, the postgres user) are missing; the
// message names the Debian package to install.
var ErrNotInstalled = errors.New("adapters: not installed")

// Options of the stores, default first. The slices returned by
// ReadOptions and WriteOptions are copies.
const (
	OptionRedisReplica = "replica"
	OptionRedisPrimary = "primary"
	OptionRedisAsync   = "async"
	OptionRedisWait    = "wait"

	OptionEtcdSerializable = "serializable"
	OptionEtcdLinearizable = "linearizable"

	OptionPostgresStandby = "standby"
	OptionPostgresPrimary = "primary"
	OptionPostgresAsync   = "async"
	OptionPostgresSync    = "sync"
)

// The values of Report.Consistency.
const (
	ConsistencyEventual     = "eventual"
	ConsistencySerializable = "serializable"
	ConsistencyStrong       = "strong"
	ConsistencyLinearizable = "linearizable"
	ConsistencyAsync        = "async"
	ConsistencyReplicated   = "replicated"
)

// resolveOption returns option, or the default (valid[0]) when option is
// empty, or an ErrBadOption error naming the valid options.
func resolveOption(store, kind, option string, valid []string) (string, error) {
	if option == "" {
		return valid[0], nil
	}
	if slices.Contains(valid, option) {
		return option, nil
	}
	return "", fmt.Errorf("%w: %s %s option %q; valid: %s (\"\" is %s)",
		ErrBadOption, store, kind, option, strings.Join(valid, ", "), valid[0])
}
