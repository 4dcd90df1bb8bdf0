//go:build unix

package adapters

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// RedisWaitTimeout bounds the WAIT of a write with option "wait": the
// write fails if the replica has not acknowledged it by then.
const RedisWaitTimeout = time.Second

var (
	redisReadOptions  = []string{OptionRedisReplica, OptionRedisPrimary}
	redisWriteOptions = []string{OptionRedisAsync, OptionRedisWait}
)

// Redis is a Redis primary with one asynchronous replica (Redis
// replication: the primary acknowledges a write before the replica has
// it). Writes go to the primary; option "wait" follows the SET with
// `WAIT 1 <RedisWaitTimeout>` on the same connection, so that the write
// returns only once the replica acknowledged it. Reads go to the replica
// (option "replica", the default) or to the primary ("primary").
type Redis struct {
	primaryAddr, replicaAddr string
	primary, replica         *redis.Client
	started
}

var _ Remote = (*Redis)(nil)

// ConnectRedis returns a Store for a Redis primary and one of its
// replicas that the caller runs, at host:port addresses. It does not
// connect until the first op.
func ConnectRedis(primaryAddr, replicaAddr string) (*Redis, error) {
	if primaryAddr == "" || replicaAddr == "" {
		return nil, errors.New("adapters: ConnectRedis needs a primary and a replica address")
	}
	return &Redis{
		primaryAddr: primaryAddr,
		replicaAddr: replicaAddr,
		primary:     newRedisClient(primaryAddr),
		replica:     newRedisClient(replicaAddr),
	}, nil
}

func newRedisClient(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr: addr,
		// No CLIENT SETINFO (Redis 7.2+) and no CLIENT MAINT_NOTIFICATIONS:
		// the Debian server may predate both.
		DisableIdentity:          true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
		// A blocked WAIT must not time out in the client first.
		ReadTimeout: RedisWaitTimeout + 2*time.Second,
	})
}

// Name implements Store.
func (r *Redis) Name() string { return "redis" }

// ReadOptions implements Store.
func (r *Redis) ReadOptions() []string { return slices.Clone(redisReadOptions) }

// WriteOptions implements Store.
func (r *Redis) WriteOptions() []string { return slices.Clone(redisWriteOptions) }

// PrimaryAddr and ReplicaAddr are the servers' host:port addresses.
func (r *Redis) PrimaryAddr() string { return r.primaryAddr }
func (r *Redis) ReplicaAddr() string { return r.replicaAddr }

// Addrs implements Remote: the primary's address, then the replica's.
func (r *Redis) Addrs() []string { return []string{r.primaryAddr, r.replicaAddr} }

// Write implements Store.
func (r *Redis) Write(ctx context.Context, key, value, option string) (Report, error) {
	option, err := resolveOption("redis", "write", option, redisWriteOptions)
	if err != nil {
		return Report{}, err
	}
	rep := Report{Consistency: ConsistencyAsync, Replica: r.primaryAddr}
	if option == OptionRedisAsync {
		if err := r.primary.Set(ctx, key, value, 0).Err(); err != nil {
			return rep, fmt.Errorf("adapters: redis SET at %s: %w", r.primaryAddr, err)
		}
		return rep, nil
	}
	// One pipeline, so that WAIT runs on the connection that did the SET:
	// WAIT waits for that connection's writes only.
	var set *redis.StatusCmd
	var wait *redis.Cmd
	_, _ = r.primary.Pipelined(ctx, func(p redis.Pipeliner) error {
		set = p.Set(ctx, key, value, 0)
		wait = p.Do(ctx, "wait", 1, RedisWaitTimeout.Milliseconds())
		return nil
	})
	if err := set.Err(); err != nil {
		return rep, fmt.Errorf("adapters: redis SET at %s: %w", r.primaryAddr, err)
	}
	n, err := wait.Int64()
	if err != nil {
		return rep, fmt.Errorf("adapters: redis WAIT at %s: %w", r.primaryAddr, err)
	}
	if n < 1 {
		return rep, fmt.Errorf("adapters: redis WAIT at %s: no replica acknowledged the write within %v", r.primaryAddr, RedisWaitTimeout)
	}
	rep.Consistency = ConsistencyReplicated
	return rep, nil
}

// Read implements Store.
func (r *Redis) Read(ctx context.Context, key, option string) (string, bool, Report, error) {
	option, err := resolveOption("redis", "read", option, redisReadOptions)
	if err != nil {
		return "", false, Report{}, err
	}
	client, rep := r.replica, Report{Consistency: ConsistencyEventual, Replica: r.replicaAddr}
	if option == OptionRedisPrimary {
		client, rep = r.primary, Report{Consistency: ConsistencyStrong, Replica: r.primaryAddr}
	}
	value, err := client.Get(ctx, key).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return "", false, rep, nil
	case err != nil:
		return "", false, rep, fmt.Errorf("adapters: redis GET at %s: %w", rep.Replica, err)
	}
	return value, true, rep, nil
}

// Close closes the clients and stops the servers the harness started.
// Safe to call more than once.
func (r *Redis) Close() error {
	return r.closeOnce(func() error {
		return errors.Join(r.primary.Close(), r.replica.Close(), stopAll(r.procs))
	})
}

var redisServer = binary{name: "redis-server", paths: []string{"/usr/bin/redis-server"}, pkg: "redis-server"}

// StartRedis starts a Redis primary and a replica of it on loopback on
// free ports, with their data and logs under dir, and returns once a
// write at the primary has reached the replica. Each server runs in its own
// process group without persistence (no RDB snapshots, no AOF), and with
// diskless initial sync so that the replica attaches at once. Close stops
// them with SIGTERM, then kills their process groups after 10 s.
func StartRedis(ctx context.Context, dir string) (*Redis, error) {
	path, err := redisServer.find()
	if err != nil {
		return nil, err
	}
	return startRetrying(func(attempt int) (*Redis, error) { return startRedis(ctx, dir, path, attempt) })
}

func startRedis(ctx context.Context, dir, path string, attempt int) (_ *Redis, err error) {
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	primaryAddr, replicaAddr := loopback(ports[0]), loopback(ports[1])
	var procs []*proc
	defer func() {
		if err != nil {
			_ = stopAll(procs)
		}
	}()
	for i, role := range []string{"primary", "replica"} {
		data := fmt.Sprintf("%s/redis-%d/%s", dir, attempt, role)
		if err := mkdirAll(data); err != nil {
			return nil, err
		}
		args := []string{
			"--port", fmt.Sprint(ports[i]), "--bind", "127.0.0.1",
			"--dir", data, "--daemonize", "no", "--logfile", "",
			"--save", "", "--appendonly", "no",
			"--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0",
		}
		if role == "replica" {
			args = append(args, "--replicaof", "127.0.0.1", fmt.Sprint(ports[0]), "--replica-read-only", "yes")
		}
		p, err := spawn("redis "+role, data+".log", sigterm, nil, path, args...)
		if err != nil {
			return nil, err
		}
		procs = append(procs, p)
	}
	r, _ := ConnectRedis(primaryAddr, replicaAddr)
	r.procs = procs
	// Ready when a write at the primary reaches the replica: with diskless
	// sync the primary counts the replica online, but streams writes to it
	// only from its first REPLCONF ACK, sent once a second.
	const readyKey = "cosla:adapters:ready"
	err = waitReady(ctx, "redis replication", procs, func(ctx context.Context) error {
		if err := r.primary.Set(ctx, readyKey, "1", 0).Err(); err != nil {
			return err
		}
		v, err := r.replica.Get(ctx, readyKey).Result()
		if err != nil {
			return fmt.Errorf("replica: %w", err)
		}
		if v != "1" {
			return fmt.Errorf("replica has %q", v)
		}
		return r.primary.Del(ctx, readyKey).Err()
	})
	if err != nil {
		_ = r.primary.Close()
		_ = r.replica.Close()
		return nil, err
	}
	return r, nil
}
