package cluster

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cosla/cosla"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/lab/workload"
	"github.com/cosla/cosla/internal/runtime/certs"
	"github.com/cosla/cosla/internal/runtime/cluster/clustertest"
	"github.com/cosla/cosla/internal/runtime/server"
	"github.com/cosla/cosla/internal/runtime/topology"
	"github.com/cosla/cosla/internal/runtime/wan"
	"github.com/cosla/cosla/sla"
	"gopkg.in/yaml.v3"
)

// TestMain lets the test binary stand in for `cosla serve --config FILE`,
// the command a cluster runs once per site (clustertest).
func TestMain(m *testing.M) { clustertest.Main(m) }

func TestTableLayout(t *testing.T) {
	pileus := topology.Pileus4()
	pull := func(d time.Duration) wire.Replication { return wire.Replication{Mode: wire.ModePull, Interval: d} }
	for _, tc := range []struct {
		name string
		opts Options
		want wire.Layout
	}{
		{"default", Options{Table: "usertable", PullInterval: time.Minute}, wire.Layout{
			Name: "usertable", Replication: pull(time.Minute),
			Tablets: []wire.Tablet{{Primary: "england/r1", Secondaries: []wire.NodeID{"us/r1", "india/r1"}}},
		}},
		{"primary in india, push", Options{Table: "t", PullInterval: time.Second, Push: true, WriteLevel: wire.Quorum,
			Placement: topology.Placement{Sites: []string{"india", "us"}}}, wire.Layout{
			Name: "t", Replication: wire.Replication{Mode: wire.ModePush, Interval: time.Second}, WriteLevel: wire.Quorum,
			Tablets: []wire.Tablet{{Primary: "india/r1", Secondaries: []wire.NodeID{"us/r1"}}},
		}},
		{"by hash", Options{Table: "t", PullInterval: time.Second,
			Placement: topology.Placement{Replicas: 2, Tablets: 2, Partition: "hash"}}, wire.Layout{
			Name: "t", Partition: wire.ByHash, Replication: pull(time.Second),
			Tablets: []wire.Tablet{
				{Primary: "england/r1", Secondaries: []wire.NodeID{"us/r1"}},
				{Start: wire.HashStarts(2)[0], Primary: "england/r1", Secondaries: []wire.NodeID{"us/r1"}},
			},
		}},
		{"by range", Options{Table: "t", PullInterval: time.Second,
			Placement: topology.Placement{Sites: []string{"us"}, Tablets: 2, Starts: []string{"m"}}}, wire.Layout{
			Name: "t", Replication: pull(time.Second),
			Tablets: []wire.Tablet{{Primary: "us/r1", Secondaries: []wire.NodeID{}}, {Start: "m", Primary: "us/r1", Secondaries: []wire.NodeID{}}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tableLayout(pileus, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("tableLayout =\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

// TestStartBadPlacement checks that a placement the topology cannot hold
// is refused before anything starts.
func TestStartBadPlacement(t *testing.T) {
	dir := t.TempDir()
	_, err := Start(context.Background(), Options{Dir: dir, Topology: topology.Pileus4(),
		Placement: topology.Placement{Sites: []string{"china"}}})
	if !errors.Is(err, topology.ErrInvalid) {
		t.Fatalf("Start with the primary at a client-only site: err %v, want topology.ErrInvalid", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("Start left %d entries in its directory", len(entries))
	}
}

// TestSeveralTabletsAndNodes runs a cluster of two sites with two storage
// nodes each and a client-only site, whose table has four tablets placed
// by hash with three replicas each, and checks that a client writes and
// reads every key and that the status shows every tablet replica; that
// every file of the cluster is its owner's only, whatever the umask (here
// the common 022); that each HTTP listener refuses a foreign Host; and
// that the control API takes only its token's requests.
func TestSeveralTabletsAndNodes(t *testing.T) {
	defer syscall.Umask(syscall.Umask(0o022))
	topo := topology.Topology{Name: "two-by-two", LocalRTT: time.Millisecond,
		Sites: []topology.Site{
			{Name: "a", Replicas: []string{"r1", "r2"}},
			{Name: "b", Replicas: []string{"r1", "r2"}},
			{Name: "c", Clients: []string{"c1"}},
		},
		Links: []topology.Link{
			{A: "a", B: "b", RTT: 4 * time.Millisecond},
			{A: "a", B: "c", RTT: 4 * time.Millisecond},
			{A: "b", B: "c", RTT: 4 * time.Millisecond},
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	placement := topology.Placement{Replicas: 3, Tablets: 4, Partition: "hash"}
	c, err := Start(ctx, Options{Dir: t.TempDir(), Topology: topo, Placement: placement, PullInterval: 200 * time.Millisecond, Fresh: true,
		Clients: []string{"alice"}, Config: server.ConfigOptions{Voters: []string{"b"}, Planner: server.PlannerOptions{Window: 3 * time.Second}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	info := c.Info()
	if len(info.Sites) != 2 || len(info.Sites[0].Nodes) != 2 || len(info.Sites[1].Nodes) != 2 {
		t.Fatalf("info sites %+v, want a and b with two nodes each", info.Sites)
	}
	// Each site's coordinator and cache start with the topology's round
	// trips, as in the simulator (site.TopologyRTTs).
	var served server.Options
	data, err := os.ReadFile(filepath.Join(c.opts.Dir, "b", "serve.yaml"))
	if err == nil {
		err = yaml.Unmarshal(data, &served)
	}
	if err != nil || served.Causal.RTT["a/r2"] != 4*time.Millisecond || served.Causal.RTT["b/r1"] != time.Millisecond || served.Causal.RTT["a/cache"] != 4*time.Millisecond {
		t.Fatalf("site b's serve.yaml causal rtt %v (%v), want a's nodes and cache at 4ms, b's at 1ms", served.Causal.RTT, err)
	}
	// Options.Config reaches every site, but for the voters: the
	// topology's.
	if v, w := served.Config.Voters, served.Config.Planner.Window; !slices.Equal(v, []string{"a"}) || w != 3*time.Second {
		t.Fatalf("site b's serve.yaml config: voters %v, planner window %v; want [a] (the topology's), 3s", v, w)
	}
	nodes, err := info.NodesFor("c")
	if _, ok := nodes["a/cfg"]; err != nil || len(nodes) != 9 || !ok {
		t.Fatalf("nodes for a client at c: %v, %v; want the four storage nodes, each site's coordinator and cache, and a's configuration member (a two-site cluster's one voter)", nodes, err)
	}
	client, s := strongSession(ctx, t, "c", info)
	const keys = 40
	for i := range uint64(keys) {
		if _, err := client.Put(ctx, s, workload.Key(i), []byte{byte(i)}); err != nil {
			t.Fatalf("put %s: %v", workload.Key(i), err)
		}
	}
	for i := range uint64(keys) {
		v, res, err := client.Get(ctx, s, workload.Key(i))
		if err != nil || !bytes.Equal(v, []byte{byte(i)}) || res.Met != 0 {
			t.Fatalf("get %s = %v, %+v, %v; want [%d] meeting strong", workload.Key(i), v, res, err, i)
		}
	}

	// Every tablet has one primary and two secondaries among the four
	// nodes, and the Puts went to all four primaries.
	st := c.Status(ctx)
	primaries, replicas := map[int32]wire.NodeID{}, map[int32]int{}
	var puts int64
	for _, site := range st.Sites {
		if !site.Up {
			t.Fatalf("site %s is down: %s", site.Name, site.Error)
		}
		for _, n := range site.Serve.Nodes {
			puts += n.Metrics.Puts
			for _, tb := range n.Metrics.Tablets {
				replicas[tb.Ref.Tablet]++
				if tb.Primary {
					primaries[tb.Ref.Tablet] = n.ID
				}
			}
		}
	}
	want := map[int32]wire.NodeID{0: "a/r1", 1: "a/r2", 2: "a/r1", 3: "a/r2"}
	if !reflect.DeepEqual(primaries, want) || !reflect.DeepEqual(replicas, map[int32]int{0: 3, 1: 3, 2: 3, 3: 3}) {
		t.Errorf("status shows primaries %v and replicas per tablet %v; want %v and 3 each", primaries, replicas, want)
	}
	if puts != keys {
		t.Errorf("the nodes served %d Puts, want %d", puts, keys)
	}
	if _, err := os.Stat(certs.NamedClientFiles(certs.ClusterDir(info.Dir), "alice").Key); err != nil {
		t.Errorf("alice's certificate: %v", err)
	}
	checkPrivate(t, info.Dir)
	for _, s := range info.Sites {
		if code := controlRequest(t, http.MethodGet, s.HTTP, "/status", "rebound.example", "", ""); code != http.StatusForbidden {
			t.Errorf("site %s's /status with a foreign Host: status %d, want 403", s.Name, code)
		}
	}
	checkStatusOfAStoppedSite(ctx, t, c)
	checkControl(ctx, t, c, "a", "b")
}

// checkStatusOfAStoppedSite stops the first site's process (SIGSTOP) and
// checks that Status still hears from the others within its context:
// chaos's failover faults read the new primary from it while the old one
// is stopped.
func checkStatusOfAStoppedSite(ctx context.Context, t *testing.T, c *Cluster) {
	t.Helper()
	sites := c.Info().Sites
	stopped := sites[0]
	if err := syscall.Kill(stopped.PID, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Kill(stopped.PID, syscall.SIGCONT) }()
	waitStopped(t, stopped.PID)
	sctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	st := c.Status(sctx)
	for i, s := range st.Sites {
		if up := i != 0; s.Up != up {
			t.Errorf("status with site %s stopped: site %s up %t (%s), want %t", stopped.Name, s.Name, s.Up, s.Error, up)
		}
	}
}

// waitStopped returns once the kernel shows process pid stopped (state T
// in /proc/PID/stat): a signal stops a process's threads one by one, and
// one still running could answer a request sent just after kill
// returned (seen on a loaded machine).
func waitStopped(t *testing.T, pid int) {
	t.Helper()
	for range 100000 {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			t.Fatal(err)
		}
		// The state follows the command name, which is in parentheses.
		if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) && b[i+2] == 'T' {
			return
		}
	}
	t.Fatalf("process %d not stopped after 100,000 looks at its state", pid)
}

// TestOneSiteDirect runs a one-site cluster with no local round trip to
// emulate: its clients dial the node directly, there is no link to
// change, and the node commits a durable Put with a sync. It runs without
// TLS, and the site warns of it. Its directory is given relative to the
// working directory, and the site keeps its data there.
func TestOneSiteDirect(t *testing.T) {
	topo := topology.Topology{Name: "one", Sites: []topology.Site{{Name: "local", Replicas: []string{"r1"}, Clients: []string{"c1"}}}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	work := t.TempDir()
	t.Chdir(work)
	started := make(chan string, 8) // the sites the supervisor starts, from its log
	c, err := Start(ctx, Options{Dir: filepath.Join("runs", "one"), Topology: topo, Fresh: true, Insecure: true, Logger: slog.New(startedSites{started})})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	info := c.Info()
	if want := filepath.Join(work, "runs", "one"); info.Dir != want {
		t.Errorf("cluster directory %q, want %q", info.Dir, want)
	}
	if log := logTail(filepath.Join(info.Dir, "local", "serve.log"), 50); !strings.Contains(log, "insecure is set: TLS is off") {
		t.Errorf("the insecure site did not warn; its log:\n%s", log)
	}
	nodes, err := info.NodesFor("local")
	if err != nil || nodes["local/r1"] != info.Sites[0].Addr {
		t.Fatalf("nodes for a client at local: %v, %v; want local/r1 at the node's own address %s", nodes, err, info.Sites[0].Addr)
	}
	if err := c.SetLink("local", "local", wan.Settings{Latency: time.Millisecond}); err == nil || !strings.Contains(err.Error(), "directly") {
		t.Fatalf("SetLink on the direct local link: %v, want an error saying clients reach the node directly", err)
	}
	client, s := strongSession(ctx, t, "local", info)
	if _, err := client.Put(ctx, s, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	st := c.Status(ctx)
	if len(st.Sites) != 1 || st.Sites[0].Serve == nil || len(st.Sites[0].Serve.Nodes) != 1 {
		t.Fatalf("status %+v, want one site with one node", st)
	}
	// The table's creation and the Put each made synced writes.
	if cs := st.Sites[0].Serve.Nodes[0].Commit; cs.Syncs < 1 || cs.Events < 2 {
		t.Fatalf("commit stats %+v, want at least one sync covering the two events", cs)
	}
	siteDir := filepath.Join(work, "runs", "one", "local")
	if _, err := os.Stat(filepath.Join(siteDir, "data")); err != nil {
		t.Errorf("the site's data is not in its directory: %v", err)
	}
	if _, err := os.Stat(filepath.Join(siteDir, "runs")); err == nil {
		t.Errorf("the site's directory holds the cluster's relative path again: %s", filepath.Join(siteDir, "runs"))
	}

	// A crash and a restart while the status is asked for, as the
	// control API may be: the race detector watches the site's PID.
	if err := c.Crash("local"); err != nil {
		t.Fatal(err)
	}
	restarted := make(chan error, 1)
	go func() { restarted <- c.Restart(ctx, "local") }()
	for asking := true; asking; {
		select {
		case err := <-restarted:
			if err != nil {
				t.Fatal(err)
			}
			asking = false
		default:
			c.Status(ctx)
			c.Info()
		}
	}
	if pid := c.Info().Sites[0].PID; pid == info.Sites[0].PID || pid == 0 {
		t.Errorf("after the restart the site's PID is %d, before %d", pid, info.Sites[0].PID)
	}
	if v, _, err := client.Get(ctx, s, "k"); err != nil || string(v) != "v" {
		t.Errorf("after the restart: Get = %q, %v; want the acknowledged v", v, err)
	}
	if n := c.Info().Sites[0].Restarts; n != 0 {
		t.Errorf("the supervisor restarted a site Crash stopped on purpose %d times", n)
	}

	// A site process that dies on its own is reaped, logged and started
	// again on its data.
	for len(started) > 0 {
		<-started // the start and the restart above
	}
	dead := c.Info().Sites[0].PID
	if err := syscall.Kill(dead, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatalf("the supervisor never restarted the killed site: %+v", c.Info().Sites[0])
	}
	site := c.Info().Sites[0]
	if site.Restarts != 1 {
		t.Errorf("after a kill -9 the site counts %d restarts, want 1", site.Restarts)
	}
	if site.PID == dead || !strings.Contains(site.LastExit, "killed") {
		t.Errorf("after a kill -9 the site is %+v, want a new pid and the kill in last_exit", site)
	}
	if err := waitHealthy(ctx, site.HTTP); err != nil {
		t.Fatal(err)
	}
	if v, _, err := client.Get(ctx, s, "k"); err != nil || string(v) != "v" {
		t.Errorf("after the supervisor's restart: Get = %q, %v; want the acknowledged v", v, err)
	}
	after := c.Status(ctx).Sites[0]
	if after.Restarts != 1 || !after.Up {
		t.Errorf("status after the restart: %+v, want up with 1 restart", after)
	}
	// The restarted process itself says so, for its status page.
	if sv := after.Serve; sv == nil || sv.Supervisor.Restarts != 1 || !strings.Contains(sv.Supervisor.LastExit, "killed") {
		t.Errorf("the restarted process's status: %+v, want 1 restart after a kill", sv)
	}
}

// startedSites is a log handler that passes on the name of each site the
// supervisor logs it started.
type startedSites struct{ ch chan<- string }

func (h startedSites) Enabled(context.Context, slog.Level) bool { return true }
func (h startedSites) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h startedSites) WithGroup(string) slog.Handler            { return h }
func (h startedSites) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "cluster: started site" {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "site" {
				h.ch <- a.Value.String()
			}
			return true
		})
	}
	return nil
}

// strongSession opens a client at site and a session on table whose Gets
// are strong within 10 s; the client closes when the test ends.
func strongSession(ctx context.Context, t *testing.T, site string, info Info) (*cosla.Client, *cosla.Session) {
	t.Helper()
	a, err := info.Access()
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := a.Nodes(site)
	if err != nil {
		t.Fatal(err)
	}
	client, err := cosla.Open(ctx, cosla.Config{Site: site, Nodes: nodes, TLS: a.TLS, Insecure: a.TLS == nil})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	tbl, err := client.OpenTable(ctx, info.Table)
	if err != nil {
		t.Fatal(err)
	}
	strong, _ := sla.Parse("strong 10s 1")
	s, err := client.BeginSession(tbl, strong)
	if err != nil {
		t.Fatal(err)
	}
	return client, s
}
