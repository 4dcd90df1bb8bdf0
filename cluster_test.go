package cosla_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/cosla/cosla"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/runtime/certs"
	"github.com/cosla/cosla/internal/runtime/nettest"
	"github.com/cosla/cosla/internal/runtime/server"
	"github.com/cosla/cosla/sla"
)

// reservePorts binds n loopback ports and returns their addresses, and a
// function that releases port i: hold a port until its server binds it,
// or a listener this process opens meanwhile (a WAN link's) may be given
// it.
func reservePorts(t testing.TB, n int) ([]string, func(i int)) {
	t.Helper()
	ls := make([]net.Listener, n)
	addrs := make([]string, n)
	for i := range ls {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls[i], addrs[i] = l, l.Addr().String()
		t.Cleanup(func() { l.Close() })
	}
	return addrs, func(i int) { ls[i].Close() }
}

// strongSession opens a table and begins a session whose Gets are
// strong within 10 s.
func strongSession(ctx context.Context, t testing.TB, c *cosla.Client, table string) *cosla.Session {
	t.Helper()
	tbl, err := c.OpenTable(ctx, table)
	if err != nil {
		t.Fatal(err)
	}
	strong, _ := sla.Parse("strong 10s 1")
	s, err := c.BeginSession(tbl, strong)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// testNet is a test cluster as its clients see it: the addresses a client
// at each site dials, and the client certificate of the cluster's
// authority.
type testNet struct {
	views map[string]map[string]string
	tls   *tls.Config
}

// config returns a client's configuration at site.
func (n testNet) config(site string) cosla.Config {
	return cosla.Config{Site: site, Nodes: n.views[site], TLS: n.tls}
}

// testCerts writes a certificate authority, a node certificate for each
// site and a client certificate into a temporary directory, as `cosla
// cluster up` does, and returns the directory and the client's TLS.
func testCerts(t testing.TB, sites ...string) (string, *tls.Config) {
	t.Helper()
	dir := t.TempDir()
	if err := certs.Ensure(dir, sites); err != nil {
		t.Fatal(err)
	}
	client, err := cosla.LoadTLS(certs.ClientFiles(dir).Cert, certs.ClientFiles(dir).Key, certs.ClientFiles(dir).CA)
	if err != nil {
		t.Fatal(err)
	}
	return dir, client
}

// testCluster starts one cosla serve process per site in this process,
// on loopback, with no WAN emulation and with mutual TLS.
func testCluster(t testing.TB, sites ...string) testNet {
	t.Helper()
	n, _ := testServers(t, sites...)
	return n
}

// testServers is testCluster that also returns each site's server.
func testServers(t testing.TB, sites ...string) (testNet, map[string]*server.Server) {
	t.Helper()
	certDir, clientTLS := testCerts(t, sites...)
	servers := map[string]*server.Server{}
	ports, release := reservePorts(t, len(sites))
	addrs := map[string]string{}
	for i, s := range sites {
		// The serve process hosts r1 and the site's coordinator and cache
		// of causal tables.
		for _, n := range []string{"r1", "cc", "cache"} {
			addrs[s+"/"+n] = ports[i]
		}
	}
	for i, s := range sites {
		peers := map[wire.NodeID]string{}
		for id, a := range addrs {
			if !strings.HasPrefix(id, s+"/") {
				peers[wire.NodeID(id)] = a
			}
		}
		release(i)
		srv, err := server.Start(server.Options{Site: s, Listen: addrs[s+"/r1"], DataDir: t.TempDir(), Peers: peers,
			TLS: server.TLSFiles(certs.NodeFiles(certDir, s))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srv.Close)
		servers[s] = srv
	}
	n := testNet{views: map[string]map[string]string{}, tls: clientTLS}
	for _, s := range sites {
		n.views[s] = addrs
	}
	return n, servers
}

// pushTable opens a client at us on n's england and us nodes and creates
// table t, its primary at england and a secondary at us, pushed to at
// once; it returns the client, closed when the test ends, and a strong
// session on the table.
func pushTable(ctx context.Context, t *testing.T, n testNet) (*cosla.Client, *cosla.Session) {
	t.Helper()
	c, err := cosla.Open(ctx, n.config("us"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	spec := cosla.TableSpec{Name: "t", Push: true, PullInterval: time.Second,
		Tablets: []cosla.TabletSpec{{Primary: "england/r1", Secondaries: []string{"us/r1"}}}}
	if err := c.CreateTable(ctx, spec); err != nil {
		t.Fatal(err)
	}
	return c, strongSession(ctx, t, c, "t")
}

func TestClientOverNetwork(t *testing.T) {
	n := testCluster(t, "england", "us")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, s := pushTable(ctx, t, n)
	for i := range 20 {
		v := fmt.Sprintf("v%d", i)
		if _, err := c.Put(ctx, s, "k", []byte(v)); err != nil {
			t.Fatal(err)
		}
		got, res, err := c.Get(ctx, s, "k")
		if err != nil {
			t.Fatalf("get %d: %v", i, err)
		}
		if string(got) != v || !res.Primary || res.Met != 0 {
			t.Fatalf("get %d = %q, %+v; want %q from the primary meeting subSLA 1", i, got, res, v)
		}
	}
	if _, _, err := c.Get(ctx, s, "k", cosla.WithSLA(sla.SLA{{Consistency: sla.StrongConsistency, Latency: time.Nanosecond, Utility: 1}})); !errors.Is(err, cosla.ErrSLAUnmet) {
		t.Fatalf("a 1ns strong Get: err %v, want ErrSLAUnmet", err)
	}
	if _, err := c.OpenTable(ctx, "nope"); !errors.Is(err, cosla.ErrNoTable) {
		t.Fatalf("open unknown table: err %v, want ErrNoTable", err)
	}
	var b strings.Builder
	m, err := c.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	m.WritePrometheus(&b)
	for _, want := range []string{
		`cosla_client_gets_total{sub_sla="strong 10s 1"} 20`,
		`cosla_client_gets_total{sub_sla="none"} 1`,
		`cosla_client_puts_total{outcome="ok"} 20`,
		`cosla_client_rtt_seconds{node="england/r1"`,
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("client metrics lack %s:\n%s", want, b.String())
		}
	}
}

// TestHashTable creates a table of four tablets placed by key hash, their
// primaries alternating between two sites, and checks that every key is
// written and read back through the tablet its hash picks.
func TestHashTable(t *testing.T) {
	n := testCluster(t, "england", "us")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := cosla.Open(ctx, n.config("us"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	spec := cosla.TableSpec{Name: "h", Partition: cosla.ByHash, PullInterval: time.Second}
	for i, start := range append([]string{""}, cosla.HashStarts(4)...) {
		primary, secondary := "england/r1", "us/r1"
		if i%2 == 1 {
			primary, secondary = secondary, primary
		}
		spec.Tablets = append(spec.Tablets, cosla.TabletSpec{Start: start, Primary: primary, Secondaries: []string{secondary}})
	}
	if err := c.CreateTable(ctx, spec); err != nil {
		t.Fatal(err)
	}
	bad := spec
	bad.Name = "bad"
	bad.Tablets = []cosla.TabletSpec{{Primary: "england/r1"}, {Start: "m", Primary: "us/r1"}}
	if err := c.CreateTable(ctx, bad); !errors.Is(err, cosla.ErrInvalid) {
		t.Errorf("create a hash table split at %q: err %v, want ErrInvalid", "m", err)
	}
	s := strongSession(ctx, t, c, "h")
	for i := range 40 {
		key := fmt.Sprintf("key-%d", i)
		if _, err := c.Put(ctx, s, key, []byte(key)); err != nil {
			t.Fatalf("put %s: %v", key, err)
		}
	}
	for i := range 40 {
		key := fmt.Sprintf("key-%d", i)
		got, res, err := c.Get(ctx, s, key)
		if err != nil || string(got) != key || !res.Primary {
			t.Fatalf("get %s = %q, %+v, %v; want %q from its primary", key, got, res, err, key)
		}
	}
	if got := cosla.ByHash.String(); got != "hash" {
		t.Errorf("ByHash.String() = %q", got)
	}
}

// TestBadInput checks that bad requests get clear, typed errors and that
// the servers keep working after them.
func TestBadInput(t *testing.T) {
	n := testCluster(t, "england", "us")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := n.config("england")
	cfg.RequestTimeout = 2 * time.Second
	c, err := cosla.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	spec := cosla.TableSpec{Name: "t", Tablets: []cosla.TabletSpec{{Primary: "england/r1", Secondaries: []string{"us/r1"}}}}
	if err := c.CreateTable(ctx, spec); err != nil {
		t.Fatal(err)
	}
	other := spec
	other.Push = true
	if err := c.CreateTable(ctx, other); !errors.Is(err, cosla.ErrTableExists) {
		t.Errorf("create a table again with another layout: err %v, want ErrTableExists", err)
	}
	bad := cosla.TableSpec{Name: "bad", Tablets: []cosla.TabletSpec{{Start: "m", Primary: "england/r1"}}}
	if err := c.CreateTable(ctx, bad); !errors.Is(err, cosla.ErrInvalid) {
		t.Errorf("create a table whose first tablet does not start at \"\": err %v, want ErrInvalid", err)
	}
	tbl, err := c.OpenTable(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.BeginSession(tbl, sla.SLA{}); !errors.Is(err, cosla.ErrInvalid) {
		t.Errorf("session with an empty SLA: err %v, want ErrInvalid", err)
	}
	eventual, _ := sla.Parse("eventual 5s 1")
	s, err := c.BeginSession(tbl, eventual)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Put(ctx, s, strings.Repeat("k", 4<<10+1), []byte("v")); !errors.Is(err, cosla.ErrTooLarge) {
		t.Errorf("put of a 4 KiB + 1 key: err %v, want ErrTooLarge", err)
	}
	if _, err := c.Put(ctx, s, "k", make([]byte, 1<<20+1)); !errors.Is(err, cosla.ErrTooLarge) {
		t.Errorf("put of a 1 MiB + 1 value: err %v, want ErrTooLarge", err)
	}
	if _, err := c.Put(ctx, s, "big", make([]byte, 1<<20)); err != nil {
		t.Errorf("put of a 1 MiB value: %v", err)
	}
	if _, _, err := c.Get(ctx, s, "k", cosla.WithSLA(sla.SLA{{Consistency: sla.Consistency{Kind: sla.Bounded, Bound: -time.Second}, Latency: time.Second, Utility: 1}})); !errors.Is(err, sla.ErrInvalid) {
		t.Errorf("get with a negative bound: err %v, want sla.ErrInvalid", err)
	}
	if err := c.EndSession(s); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Put(ctx, s, "k", []byte("v")); !errors.Is(err, cosla.ErrSessionEnded) {
		t.Errorf("put in an ended session: err %v, want ErrSessionEnded", err)
	}
	// The servers still serve.
	s, err = c.BeginSession(tbl, eventual)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Put(ctx, s, "k", []byte("v")); err != nil {
		t.Fatalf("put after bad requests: %v", err)
	}
	if v, _, err := c.Get(ctx, s, "k", cosla.WithGetStrategy(cosla.Primary)); err != nil || string(v) != "v" {
		t.Fatalf("get after bad requests = %q, %v", v, err)
	}
	// A node nobody can reach: a client that knows only a dead address
	// gets a timeout, not a hang.
	dead, err := cosla.Open(ctx, cosla.Config{Site: "us", Nodes: map[string]string{"england/r1": nettest.RefusedAddr(t)}, TLS: n.tls,
		RequestTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer dead.Close()
	if _, err := dead.OpenTable(ctx, "t"); !errors.Is(err, cosla.ErrTimeout) {
		t.Errorf("open a table on a dead node: err %v, want ErrTimeout", err)
	}
	// A context deadline is respected.
	short, cancelShort := context.WithTimeout(ctx, time.Millisecond)
	defer cancelShort()
	<-short.Done()
	if _, err := c.Put(short, s, "k", []byte("v")); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("put with an expired context: err %v, want DeadlineExceeded", err)
	}
}
