//go:build unix

package adapters

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Bounds of the tests. They bound waiting, they are not measurements: no
// test asserts how long anything took.
const (
	// visibleTimeout bounds the wait for a write to reach a replica.
	visibleTimeout = 10 * time.Second
	// testTimeout bounds one store's whole test.
	testTimeout = 60 * time.Second
)

// start runs a harness's Start in t.TempDir() and registers its Close.
// A missing server fails the test when CI is set (CI must install it) and
// skips it otherwise, naming the Debian package.
func start[S Store](t *testing.T, startFn func(context.Context, string) (S, error)) S {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	s, err := startFn(ctx, t.TempDir())
	if errors.Is(err, ErrNotInstalled) {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set and a server is missing: %v", err)
		}
		t.Skipf("skipping (set CI to make this a failure): %v", err)
	}
	if err != nil {
		t.Fatalf("starting the servers: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// contract is what a store's test expects beyond the Store interface.
type contract struct {
	readOptions, writeOptions []string
	// fresh holds the (write option, read option) pairs after which a
	// read must return the write at once; other pairs are polled for.
	fresh map[[2]string]bool
	// consistency maps an option to the Report.Consistency it gets.
	readConsistency, writeConsistency map[string]string
}

// testStore is the contract suite every adapter passes; it closes s.
func testStore(t *testing.T, s Store, c contract) {
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	// Keys are unique to this run so that a store the caller runs may be
	// tested too.
	prefix := fmt.Sprintf("cosla-test-%d-", time.Now().UnixNano())

	t.Run("options", func(t *testing.T) {
		if got := s.ReadOptions(); !slices.Equal(got, c.readOptions) {
			t.Errorf("ReadOptions() = %q, want %q", got, c.readOptions)
		}
		if got := s.WriteOptions(); !slices.Equal(got, c.writeOptions) {
			t.Errorf("WriteOptions() = %q, want %q", got, c.writeOptions)
		}
		s.ReadOptions()[0] = "mutated"
		if s.ReadOptions()[0] == "mutated" {
			t.Errorf("ReadOptions returns the store's own slice")
		}
	})

	t.Run("missing", func(t *testing.T) {
		for _, opt := range s.ReadOptions() {
			value, found, rep, err := s.Read(ctx, prefix+"never-written", opt)
			if err != nil || found || value != "" {
				t.Errorf("Read(never written, %q) = %q, %v, %v; want not found", opt, value, found, err)
			}
			checkReport(t, "Read "+opt, rep, c.readConsistency[opt])
		}
	})

	t.Run("write-read", func(t *testing.T) {
		for _, w := range s.WriteOptions() {
			key := prefix + "key-" + w
			for version := 1; version <= 2; version++ {
				value := fmt.Sprintf("value-%s-%d", w, version)
				rep, err := s.Write(ctx, key, value, w)
				if err != nil {
					t.Fatalf("Write(%q, %q, %q): %v", key, value, w, err)
				}
				checkReport(t, "Write "+w, rep, c.writeConsistency[w])
				for _, r := range s.ReadOptions() {
					if c.fresh[[2]string{w, r}] {
						got, found, rep, err := s.Read(ctx, key, r)
						if err != nil || !found || got != value {
							t.Errorf("after a %q write, Read(%q) = %q, %v, %v; want %q at once", w, r, got, found, err, value)
						}
						checkReport(t, "Read "+r, rep, c.readConsistency[r])
						continue
					}
					eventually(t, ctx, s, key, r, value)
				}
			}
		}
	})

	t.Run("default-options", func(t *testing.T) {
		key := prefix + "default"
		rep, err := s.Write(ctx, key, "value-default", "")
		if err != nil {
			t.Fatalf("Write with option \"\": %v", err)
		}
		checkReport(t, "Write \"\"", rep, c.writeConsistency[c.writeOptions[0]])
		eventually(t, ctx, s, key, "", "value-default")
	})

	t.Run("bad-option", func(t *testing.T) {
		_, err := s.Write(ctx, prefix+"bad", "value", "no-such-option")
		checkBadOption(t, "Write", err, s.WriteOptions())
		_, _, _, err = s.Read(ctx, prefix+"bad", "no-such-option")
		checkBadOption(t, "Read", err, s.ReadOptions())
		if _, found, _, err := s.Read(ctx, prefix+"bad", s.ReadOptions()[len(s.ReadOptions())-1]); err != nil || found {
			t.Errorf("a write with a bad option wrote: found=%v err=%v", found, err)
		}
	})

	// Concurrent use, for the race detector: the benchmark runs many
	// clients on one Store.
	t.Run("concurrent", func(t *testing.T) {
		const clients, ops = 4, 10
		var wg sync.WaitGroup
		errs := make(chan error, clients*ops*2)
		for client := range clients {
			wg.Go(func() {
				for i := range ops {
					key := fmt.Sprintf("%sconcurrent-%d", prefix, i%3)
					w := s.WriteOptions()[i%len(s.WriteOptions())]
					if _, err := s.Write(ctx, key, fmt.Sprintf("c%d-%d", client, i), w); err != nil {
						errs <- err
					}
					r := s.ReadOptions()[i%len(s.ReadOptions())]
					if _, _, _, err := s.Read(ctx, key, r); err != nil {
						errs <- err
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})

	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func checkReport(t *testing.T, what string, rep Report, consistency string) {
	t.Helper()
	if rep.Consistency != consistency {
		t.Errorf("%s: Report.Consistency = %q, want %q", what, rep.Consistency, consistency)
	}
	if !strings.HasPrefix(rep.Replica, "127.0.0.1:") {
		t.Errorf("%s: Report.Replica = %q, want a loopback host:port", what, rep.Replica)
	}
}

func checkBadOption(t *testing.T, what string, err error, valid []string) {
	t.Helper()
	if !errors.Is(err, ErrBadOption) {
		t.Errorf("%s with a bad option: err = %v, want ErrBadOption", what, err)
		return
	}
	for _, opt := range valid {
		if !strings.Contains(err.Error(), opt) {
			t.Errorf("%s with a bad option: %q does not name the valid option %q", what, err, opt)
		}
	}
}

// eventually polls Read(key, option) until it returns want, for at most
// visibleTimeout.
func eventually(t *testing.T, ctx context.Context, s Store, key, option, want string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, visibleTimeout)
	defer cancel()
	ticker := time.NewTicker(10 * time.Millisecond)
	defer ticker.Stop()
	for {
		got, found, _, err := s.Read(ctx, key, option)
		if err == nil && found && got == want {
			return
		}
		select {
		case <-ctx.Done():
			t.Errorf("Read(%q, %q) never returned %q within %v; last %q, %v, %v", key, option, want, visibleTimeout, got, found, err)
			return
		case <-ticker.C:
		}
	}
}

// checkStopped fails unless every server process has exited and its
// process group is gone.
func checkStopped(t *testing.T, procs []*proc) {
	t.Helper()
	if len(procs) == 0 {
		t.Fatal("the harness recorded no server processes")
	}
	for _, p := range procs {
		if !p.exited() {
			t.Errorf("%s still running after Close", p.name)
		}
		if err := syscall.Kill(-p.cmd.Process.Pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("%s's process group %d still exists after Close (kill 0: %v)", p.name, p.cmd.Process.Pid, err)
		}
	}
}

func TestRedis(t *testing.T) {
	r := start(t, StartRedis)
	c := contract{
		readOptions:  []string{"replica", "primary"},
		writeOptions: []string{"async", "wait"},
		fresh: map[[2]string]bool{
			{"async", "primary"}: true,
			{"wait", "primary"}:  true,
		},
		readConsistency:  map[string]string{"replica": ConsistencyEventual, "primary": ConsistencyStrong},
		writeConsistency: map[string]string{"async": ConsistencyAsync, "wait": ConsistencyReplicated},
	}
	checkRegistry(t, r, c)
	t.Run("connect", func(t *testing.T) {
		s, err := Connect(t.Context(), "redis", r.Addrs())
		if err != nil {
			t.Fatal(err)
		}
		testStore(t, s, c)
	})
	procs := r.procs
	t.Run("harness", func(t *testing.T) { testStore(t, r, c) })
	checkStopped(t, procs)
}

func TestEtcd(t *testing.T) {
	e := start(t, StartEtcd)
	if e.LeaderEndpoint() == e.FollowerEndpoint() {
		t.Errorf("reads go to the leader %s, want a follower", e.LeaderEndpoint())
	}
	c := contract{
		readOptions:  []string{"serializable", "linearizable"},
		writeOptions: []string{"linearizable"},
		fresh: map[[2]string]bool{
			{"linearizable", "linearizable"}: true,
		},
		readConsistency:  map[string]string{"serializable": ConsistencySerializable, "linearizable": ConsistencyLinearizable},
		writeConsistency: map[string]string{"linearizable": ConsistencyLinearizable},
	}
	checkRegistry(t, e, c)
	t.Run("connect", func(t *testing.T) {
		// host:port, as a user types it: Connect adds the scheme.
		var members []string
		for _, ep := range e.Addrs() {
			members = append(members, hostPort(ep))
		}
		s, err := Connect(t.Context(), "etcd", members)
		if err != nil {
			t.Fatal(err)
		}
		testStore(t, s, c)
	})
	procs := e.procs
	t.Run("harness", func(t *testing.T) { testStore(t, e, c) })
	checkStopped(t, procs)
}

func TestPostgres(t *testing.T) {
	pg := start(t, StartPostgres)
	c := contract{
		readOptions:  []string{"standby", "primary"},
		writeOptions: []string{"async", "sync"},
		fresh: map[[2]string]bool{
			{"async", "primary"}: true,
			{"sync", "primary"}:  true,
			// remote_apply: the standby applied the write before commit returned.
			{"sync", "standby"}: true,
		},
		readConsistency:  map[string]string{"standby": ConsistencyEventual, "primary": ConsistencyStrong},
		writeConsistency: map[string]string{"async": ConsistencyAsync, "sync": ConsistencyReplicated},
	}
	checkRegistry(t, pg, c)
	t.Run("connect", func(t *testing.T) {
		// host:port, as a user types it: Connect makes the URL.
		s, err := Connect(t.Context(), "postgres", []string{pg.PrimaryAddr(), pg.StandbyAddr()})
		if err != nil {
			t.Fatal(err)
		}
		testStore(t, s, c)
	})
	t.Run("connect-addrs", func(t *testing.T) {
		s, err := Connect(t.Context(), "postgres", pg.Addrs())
		if err != nil {
			t.Fatal(err)
		}
		if got := s.WriteOptions(); !slices.Equal(got, c.writeOptions) {
			t.Errorf("connected by Addrs %q: WriteOptions() = %q, want %q", pg.Addrs(), got, c.writeOptions)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	})
	procs, dataDir := pg.procs, pg.dataDir
	t.Run("harness", func(t *testing.T) { testStore(t, pg, c) })
	checkStopped(t, procs)
	if dataDir != "" {
		if _, err := os.Stat(dataDir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("Close left the data directory %s (stat: %v)", dataDir, err)
		}
	}
}

// checkRegistry fails unless the registry lists s's name with the
// options s takes.
func checkRegistry(t *testing.T, s Store, c contract) {
	t.Helper()
	info, err := Lookup(s.Name())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(info.ReadOptions, c.readOptions) || !slices.Equal(info.WriteOptions, c.writeOptions) {
		t.Errorf("registry: %s options %q, %q; the store takes %q, %q", s.Name(), info.ReadOptions, info.WriteOptions, c.readOptions, c.writeOptions)
	}
}

func TestRegistry(t *testing.T) {
	var names []string
	for _, s := range Stores() {
		names = append(names, s.Name)
	}
	if want := []string{"redis", "etcd", "postgres"}; !slices.Equal(names, want) {
		t.Errorf("Stores() names %q, want %q", names, want)
	}
	Stores()[0].ReadOptions[0] = "mutated"
	if Stores()[0].ReadOptions[0] == "mutated" {
		t.Errorf("Stores returns the registry's own slices")
	}
	ctx := t.Context()
	if _, err := Lookup("oracle"); !errors.Is(err, ErrUnknownStore) || !strings.Contains(err.Error(), "redis, etcd or postgres") {
		t.Errorf("Lookup(oracle) = %v, want ErrUnknownStore naming the stores", err)
	}
	if _, err := Start(ctx, "oracle", t.TempDir()); !errors.Is(err, ErrUnknownStore) {
		t.Errorf("Start(oracle) = %v, want ErrUnknownStore", err)
	}
	if _, err := Connect(ctx, "oracle", []string{"127.0.0.1:1"}); !errors.Is(err, ErrUnknownStore) {
		t.Errorf("Connect(oracle) = %v, want ErrUnknownStore", err)
	}
	for _, tc := range []struct {
		name  string
		addrs []string
		want  string
	}{
		{"redis", nil, "PRIMARY,REPLICA"},
		{"redis", []string{"", " "}, "PRIMARY,REPLICA"},
		{"redis", []string{"127.0.0.1:1"}, "2 addresses"},
		{"redis", []string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"}, "2 addresses"},
		{"postgres", []string{"127.0.0.1:1"}, "2 addresses"},
		{"etcd", []string{}, "MEMBER"},
	} {
		if _, err := Connect(ctx, tc.name, tc.addrs); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Connect(%s, %q) = %v, want an error naming %q", tc.name, tc.addrs, err, tc.want)
		}
	}
	// Empty entries are dropped: "a,b," is two addresses. ConnectRedis
	// does not dial until the first op.
	s, err := Connect(ctx, "redis", []string{"127.0.0.1:1", "127.0.0.1:2", ""})
	if err != nil {
		t.Fatalf("Connect(redis, two addresses and an empty one): %v", err)
	}
	if got := s.(Remote).Addrs(); !slices.Equal(got, []string{"127.0.0.1:1", "127.0.0.1:2"}) {
		t.Errorf("Addrs() = %q", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestFailedConnectIsNilStore checks that a store the registry failed to
// connect to is a nil Store, not a nil pointer in a Store that a caller's
// nil check lets through.
func TestFailedConnectIsNilStore(t *testing.T) {
	s, err := Connect(t.Context(), "postgres", []string{"port=bad", "port=bad"})
	if err == nil || s != nil {
		t.Fatalf("Connect(postgres, a bad connection string) = %#v, %v; want a nil Store and an error", s, err)
	}
}

func TestPostgresDSN(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:5432":                    "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable",
		"postgres://u:p@db:5432/x":          "postgres://u:p@db:5432/x",
		"host=db port=5432 user=u dbname=x": "host=db port=5432 user=u dbname=x",
	} {
		if got := postgresDSN(in); got != want {
			t.Errorf("postgresDSN(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestResolveOption(t *testing.T) {
	valid := []string{"a", "b"}
	for _, tc := range []struct {
		name, in, want string
		bad            bool
	}{
		{name: "default", in: "", want: "a"},
		{name: "first", in: "a", want: "a"},
		{name: "second", in: "b", want: "b"},
		{name: "unknown", in: "c", bad: true},
		{name: "case matters", in: "A", bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := resolveOption("store", "read", tc.in, valid)
			if tc.bad {
				if !errors.Is(err, ErrBadOption) || !strings.Contains(err.Error(), "a, b") {
					t.Fatalf("resolveOption(%q) = %q, %v; want ErrBadOption naming a, b", tc.in, got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("resolveOption(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestBinaryNotInstalled(t *testing.T) {
	b := binary{name: "cosla-no-such-server", paths: []string{"/nonexistent/*/bin/cosla-no-such-server"}, pkg: "cosla-pkg"}
	_, err := b.find()
	if !errors.Is(err, ErrNotInstalled) || !strings.Contains(err.Error(), "apt-get install -y cosla-pkg") {
		t.Fatalf("find() = %v; want ErrNotInstalled naming the package", err)
	}
}

func TestHostPort(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:2379": "127.0.0.1:2379",
		"127.0.0.1:2379":        "127.0.0.1:2379",
	} {
		if got := hostPort(in); got != want {
			t.Errorf("hostPort(%q) = %q, want %q", in, got, want)
		}
	}
}
