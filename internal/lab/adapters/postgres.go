//go:build unix

package adapters

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// postgresStandbyName is the standby's application_name, which the
// harness's primary names in synchronous_standby_names.
const postgresStandbyName = "cosla_standby"

var postgresReadOptions = []string{OptionPostgresStandby, OptionPostgresPrimary}

const (
	postgresSchema = `CREATE TABLE IF NOT EXISTS kv (key text PRIMARY KEY, value text NOT NULL)`
	postgresUpsert = `INSERT INTO kv (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`
	postgresSelect = `SELECT value FROM kv WHERE key = $1`
)

// Postgres is a PostgreSQL primary with a streaming-replication hot
// standby, storing the pairs in a table kv(key text primary key, value
// text). A write is one upsert at the primary. Option "async" (the
// default) commits with synchronous_commit=local: the primary
// acknowledges before the standby has the write. Option "sync", offered
// when the primary names a synchronous standby, commits with
// synchronous_commit=remote_apply: the commit returns once the standby has
// applied it, so that a later standby read sees it. Reads go to the
// standby ("standby", the default) or to the primary ("primary").
type Postgres struct {
	primaryAddr, standbyAddr string
	primaryDSN, standbyDSN   string
	// async and sync are pools at the primary whose sessions start with
	// the write option's synchronous_commit; sync is nil without a
	// synchronous standby.
	async, sync  *pgxpool.Pool
	standby      *pgxpool.Pool
	writeOptions []string

	dataDir string // removed by Close when the harness made it outside dir
	started
}

var _ Remote = (*Postgres)(nil)

// ConnectPostgres returns a Store for a PostgreSQL primary and one of its
// hot standbys that the caller runs, given their connection strings (URL
// or key=value form). It creates the table kv at the primary if missing,
// and offers write option "sync" only if the primary's
// synchronous_standby_names is set.
func ConnectPostgres(ctx context.Context, primaryDSN, standbyDSN string) (*Postgres, error) {
	pg, err := connectPostgres(primaryDSN, standbyDSN)
	if err != nil {
		return nil, err
	}
	if err := pg.setup(ctx); err != nil {
		pg.closePools()
		return nil, err
	}
	var names string
	if err := pg.async.QueryRow(ctx, "SHOW synchronous_standby_names").Scan(&names); err != nil {
		pg.closePools()
		return nil, fmt.Errorf("adapters: postgres at %s: %w", pg.primaryAddr, err)
	}
	if names != "" {
		pg.writeOptions = append(pg.writeOptions, OptionPostgresSync)
	}
	return pg, nil
}

// connectPostgres makes the pools, which connect on first use, and
// offers write option "async" only.
func connectPostgres(primaryDSN, standbyDSN string) (*Postgres, error) {
	pg := &Postgres{primaryDSN: primaryDSN, standbyDSN: standbyDSN, writeOptions: []string{OptionPostgresAsync}}
	var err error
	if pg.async, pg.primaryAddr, err = newPostgresPool(primaryDSN, "local"); err != nil {
		return nil, err
	}
	if pg.sync, _, err = newPostgresPool(primaryDSN, "remote_apply"); err != nil {
		pg.closePools()
		return nil, err
	}
	if pg.standby, pg.standbyAddr, err = newPostgresPool(standbyDSN, ""); err != nil {
		pg.closePools()
		return nil, err
	}
	return pg, nil
}

func newPostgresPool(dsn, synchronousCommit string) (*pgxpool.Pool, string, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, "", fmt.Errorf("adapters: postgres connection string: %w", err)
	}
	if synchronousCommit != "" {
		cfg.ConnConfig.RuntimeParams["synchronous_commit"] = synchronousCommit
	}
	addr := net.JoinHostPort(cfg.ConnConfig.Host, strconv.Itoa(int(cfg.ConnConfig.Port)))
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return nil, "", fmt.Errorf("adapters: postgres pool for %s: %w", addr, err)
	}
	return pool, addr, nil
}

func (pg *Postgres) setup(ctx context.Context) error {
	if _, err := pg.async.Exec(ctx, postgresSchema); err != nil {
		return fmt.Errorf("adapters: postgres create table kv at %s: %w", pg.primaryAddr, err)
	}
	return nil
}

// Name implements Store.
func (pg *Postgres) Name() string { return "postgres" }

// ReadOptions implements Store.
func (pg *Postgres) ReadOptions() []string { return slices.Clone(postgresReadOptions) }

// WriteOptions implements Store.
func (pg *Postgres) WriteOptions() []string { return slices.Clone(pg.writeOptions) }

// PrimaryAddr and StandbyAddr are the servers' host:port addresses.
func (pg *Postgres) PrimaryAddr() string { return pg.primaryAddr }
func (pg *Postgres) StandbyAddr() string { return pg.standbyAddr }

// Addrs implements Remote: the primary's connection string, then the
// standby's.
func (pg *Postgres) Addrs() []string { return []string{pg.primaryDSN, pg.standbyDSN} }

// Write implements Store.
func (pg *Postgres) Write(ctx context.Context, key, value, option string) (Report, error) {
	option, err := resolveOption("postgres", "write", option, pg.writeOptions)
	if err != nil {
		return Report{}, err
	}
	pool, rep := pg.async, Report{Consistency: ConsistencyAsync, Replica: pg.primaryAddr}
	if option == OptionPostgresSync {
		pool, rep.Consistency = pg.sync, ConsistencyReplicated
	}
	if _, err := pool.Exec(ctx, postgresUpsert, key, value); err != nil {
		return rep, fmt.Errorf("adapters: postgres %s upsert at %s: %w", option, pg.primaryAddr, err)
	}
	return rep, nil
}

// Read implements Store.
func (pg *Postgres) Read(ctx context.Context, key, option string) (string, bool, Report, error) {
	option, err := resolveOption("postgres", "read", option, postgresReadOptions)
	if err != nil {
		return "", false, Report{}, err
	}
	pool, rep := pg.standby, Report{Consistency: ConsistencyEventual, Replica: pg.standbyAddr}
	if option == OptionPostgresPrimary {
		pool, rep = pg.async, Report{Consistency: ConsistencyStrong, Replica: pg.primaryAddr}
	}
	var value string
	err = pool.QueryRow(ctx, postgresSelect, key).Scan(&value)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return "", false, rep, nil
	case err != nil:
		return "", false, rep, fmt.Errorf("adapters: postgres select at %s: %w", rep.Replica, err)
	}
	return value, true, rep, nil
}

func (pg *Postgres) closePools() {
	for _, p := range []*pgxpool.Pool{pg.async, pg.sync, pg.standby} {
		if p != nil {
			p.Close()
		}
	}
}

// Close closes the pools and stops the servers the harness started,
// standby and primary together. Safe to call more than once.
func (pg *Postgres) Close() error {
	return pg.closeOnce(func() error {
		pg.closePools()
		if err := stopAll(pg.procs); err != nil || pg.dataDir == "" {
			return err
		}
		if err := os.RemoveAll(pg.dataDir); err != nil {
			return fmt.Errorf("adapters: %w", err)
		}
		return nil
	})
}

var (
	postgresServer = binary{name: "postgres", paths: []string{"/usr/lib/postgresql/*/bin/postgres"}, pkg: "postgresql"}
	postgresUser   = "postgres" // created by the Debian package postgresql
)

// postgresBins are the paths of postgres, initdb and pg_basebackup.
type postgresBins struct{ postgres, initdb, basebackup string }

// postgresBinaries returns the paths of postgres, initdb and
// pg_basebackup, all from the directory of the postgres found first, so
// that they are of one major version. (Debian's /usr/bin/pg_basebackup
// is a wrapper that may pick another.)
func postgresBinaries() (postgresBins, error) {
	postgres, err := postgresServer.find()
	if err != nil {
		return postgresBins{}, err
	}
	real, err := filepath.EvalSymlinks(postgres)
	if err != nil {
		return postgresBins{}, fmt.Errorf("adapters: %w", err)
	}
	bin := filepath.Dir(real)
	bins := postgresBins{postgres: postgres, initdb: filepath.Join(bin, "initdb"), basebackup: filepath.Join(bin, "pg_basebackup")}
	for _, p := range []string{bins.initdb, bins.basebackup} {
		if _, err := os.Stat(p); err != nil {
			return postgresBins{}, fmt.Errorf("%w: %s is missing beside %s; install the Debian package %s (apt-get install -y %s)",
				ErrNotInstalled, filepath.Base(p), real, postgresServer.pkg, postgresServer.pkg)
		}
	}
	return bins, nil
}

// StartPostgres starts a PostgreSQL primary and a hot standby that
// streams from it, on loopback on free ports with no Unix sockets, and
// returns once the primary reports the standby as its synchronous
// standby. It runs initdb (trust authentication for loopback, superuser
// "postgres"), starts the primary with synchronous_standby_names naming
// the standby, creates the table kv, copies the primary with
// pg_basebackup, and starts the copy as a standby. Each postmaster runs
// in its own process group; Close asks for a fast shutdown (SIGINT), then
// kills the process groups after 10 s. Logs are dir/postgres-*.log.
//
// PostgreSQL refuses to run as root. When the caller's effective uid is
// 0, the harness runs initdb, pg_basebackup and postgres with the uid and
// gid of the user "postgres", which the Debian package creates, and
// chowns the data directory to it. That user must be able to reach the
// data directory: if it cannot traverse dir's ancestors (t.TempDir() is
// inside a 0700 directory), the data goes to a new directory under
// os.TempDir() instead, dir/postgres links to it, and Close removes it.
func StartPostgres(ctx context.Context, dir string) (*Postgres, error) {
	bins, err := postgresBinaries()
	if err != nil {
		return nil, err
	}
	if err := mkdirAll(dir); err != nil {
		return nil, err
	}
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		if cred, err = lookupCredential(postgresUser); err != nil {
			return nil, err
		}
	}
	return startRetrying(func(attempt int) (*Postgres, error) {
		return startPostgres(ctx, bins, cred, dir, attempt)
	})
}

func lookupCredential(name string) (*syscall.Credential, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("%w: PostgreSQL will not run as root and there is no user %q to run it as (%v); install the Debian package postgresql, which creates it",
			ErrNotInstalled, name, err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("adapters: user %q: %w", name, err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// postgresDataDir makes the directory that holds the primary's and the
// standby's data directories, owned by cred's user if cred is not nil.
// It returns the directory and whether Close must remove it.
func postgresDataDir(dir string, attempt int, cred *syscall.Credential) (string, bool, error) {
	link := fmt.Sprintf("%s/postgres-%d", dir, attempt)
	if cred == nil || reachable(dir, cred) {
		if err := os.Mkdir(link, 0o700); err != nil {
			return "", false, fmt.Errorf("adapters: %w", err)
		}
		if cred != nil {
			if err := os.Chown(link, int(cred.Uid), int(cred.Gid)); err != nil {
				return "", false, fmt.Errorf("adapters: %w", err)
			}
		}
		return link, false, nil
	}
	data, err := os.MkdirTemp("", "cosla-postgres-")
	if err != nil {
		return "", false, fmt.Errorf("adapters: %w", err)
	}
	if err := os.Chown(data, int(cred.Uid), int(cred.Gid)); err != nil {
		os.RemoveAll(data)
		return "", false, fmt.Errorf("adapters: %w", err)
	}
	if err := os.Symlink(data, link); err != nil {
		os.RemoveAll(data)
		return "", false, fmt.Errorf("adapters: %w", err)
	}
	return data, true, nil
}

// reachable reports whether cred's user may traverse dir and each of its
// ancestors, by their permission bits (supplementary groups and ACLs are
// not consulted, so it may say no when the answer is yes).
func reachable(dir string, cred *syscall.Credential) bool {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return false
	}
	for p := abs; ; p = filepath.Dir(p) {
		st, err := os.Stat(p)
		if err != nil {
			return false
		}
		sys, ok := st.Sys().(*syscall.Stat_t)
		if !ok {
			return false
		}
		mode := st.Mode().Perm()
		var x os.FileMode
		switch {
		case sys.Uid == cred.Uid:
			x = mode & 0o100
		case sys.Gid == cred.Gid:
			x = mode & 0o010
		default:
			x = mode & 0o001
		}
		if x == 0 {
			return false
		}
		if p == filepath.Dir(p) {
			return true
		}
	}
}

// postgresRun is one attempt at starting the primary and the standby.
type postgresRun struct {
	postgresBins
	cred      *syscall.Credential // nil: run as the caller
	logPrefix string              // of the logs: dir/postgres-ATTEMPT-
	ports     []int               // the primary's, then the standby's
}

func startPostgres(ctx context.Context, bins postgresBins, cred *syscall.Credential, dir string, attempt int) (_ *Postgres, err error) {
	r := postgresRun{postgresBins: bins, cred: cred, logPrefix: fmt.Sprintf("%s/postgres-%d-", dir, attempt)}
	if r.ports, err = freePorts(2); err != nil {
		return nil, err
	}
	data, removeData, err := postgresDataDir(dir, attempt, cred)
	if err != nil {
		return nil, err
	}
	var procs []*proc
	var pg *Postgres
	defer func() {
		if err != nil {
			if pg != nil {
				pg.closePools()
			}
			_ = stopAll(procs)
			if removeData {
				os.RemoveAll(data)
			}
		}
	}()
	primary, err := r.startPrimary(ctx, data+"/primary")
	if err != nil {
		return nil, err
	}
	procs = append(procs, primary)
	if pg, err = r.connect(ctx, primary); err != nil {
		return nil, err
	}
	standby, err := r.startStandby(ctx, data+"/standby")
	if err != nil {
		return nil, err
	}
	procs = append(procs, standby)
	pg.procs = procs
	if err := waitReady(ctx, "postgres synchronous standby", procs, pg.syncStandbyReady); err != nil {
		return nil, err
	}
	pg.writeOptions = []string{OptionPostgresAsync, OptionPostgresSync}
	if removeData {
		pg.dataDir = data
	}
	return pg, nil
}

// startPrimary makes the primary's data directory with initdb and starts
// the primary, naming the standby its synchronous standby.
func (r postgresRun) startPrimary(ctx context.Context, data string) (*proc, error) {
	if err := runOnce(ctx, "initdb", r.logPrefix+"initdb.log", r.cred, r.initdb,
		"--pgdata", data, "--username", "postgres", "--auth", "trust",
		"--encoding", "UTF8", "--no-locale", "--no-sync"); err != nil {
		return nil, err
	}
	return spawn("postgres primary", r.logPrefix+"primary.log", sigint, r.cred, r.postgres,
		r.serverArgs(r.ports[0], data,
			"-c", "wal_level=replica",
			"-c", "synchronous_standby_names="+postgresStandbyName)...)
}

// startStandby copies the primary with pg_basebackup and starts the copy
// as a hot standby streaming from it.
func (r postgresRun) startStandby(ctx context.Context, data string) (*proc, error) {
	if err := runOnce(ctx, "pg_basebackup", r.logPrefix+"basebackup.log", r.cred, r.basebackup,
		"--host", "127.0.0.1", "--port", strconv.Itoa(r.ports[0]), "--username", "postgres",
		"--pgdata", data, "--wal-method", "stream", "--checkpoint", "fast",
		"--write-recovery-conf", "--no-sync"); err != nil {
		return nil, err
	}
	return spawn("postgres standby", r.logPrefix+"standby.log", sigint, r.cred, r.postgres,
		r.serverArgs(r.ports[1], data,
			"-c", "hot_standby=on",
			"-c", fmt.Sprintf("primary_conninfo=host=127.0.0.1 port=%d user=postgres application_name=%s", r.ports[0], postgresStandbyName))...)
}

// serverArgs is a postmaster's command line: its data directory, its own
// settings, then those every server of the pair gets on its port.
// Settings on the command line outrank the configuration files, so the
// standby, a copy of the primary, needs its own.
func (r postgresRun) serverArgs(port int, data string, settings ...string) []string {
	return append(append([]string{"-D", data}, settings...),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "port="+strconv.Itoa(port),
		"-c", "unix_socket_directories=")
}

// connect makes the pools for the primary and the standby once the
// primary answers, and creates the table kv.
func (r postgresRun) connect(ctx context.Context, primary *proc) (*Postgres, error) {
	dsn := func(port int) string {
		return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	}
	pg, err := connectPostgres(dsn(r.ports[0]), dsn(r.ports[1]))
	if err != nil {
		return nil, err
	}
	pg.procs = []*proc{primary}
	err = waitReady(ctx, "postgres primary", pg.procs, func(ctx context.Context) error {
		return pg.async.Ping(ctx)
	})
	if err == nil {
		err = pg.setup(ctx)
	}
	if err != nil {
		pg.closePools()
		return nil, err
	}
	return pg, nil
}

// syncStandbyReady is the readiness probe of the pair: the standby is in
// recovery and the primary streams to it as its synchronous standby.
func (pg *Postgres) syncStandbyReady(ctx context.Context) error {
	var recovering bool
	if err := pg.standby.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&recovering); err != nil {
		return err
	}
	if !recovering {
		return errors.New("standby is not in recovery")
	}
	var state string
	err := pg.async.QueryRow(ctx,
		"SELECT sync_state FROM pg_stat_replication WHERE application_name = $1 AND state = 'streaming'",
		postgresStandbyName).Scan(&state)
	if err != nil {
		return fmt.Errorf("standby not streaming: %w", err)
	}
	if state != "sync" {
		return fmt.Errorf("standby's sync_state is %q", state)
	}
	return nil
}
