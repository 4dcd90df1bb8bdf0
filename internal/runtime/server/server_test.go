package server

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/cosla/cosla/internal/core/config"
	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/node"
	"github.com/cosla/cosla/internal/core/replica"
	"github.com/cosla/cosla/internal/core/wire"
)

func TestValidate(t *testing.T) {
	good := Options{Site: "england", Listen: "127.0.0.1:0", DataDir: "/tmp/x", Insecure: true}
	for _, tc := range []struct {
		name  string
		edit  func(*Options)
		field string
	}{
		{"no site", func(o *Options) { o.Site = "" }, "site"},
		{"site with slash", func(o *Options) { o.Site = "a/b" }, "site"},
		{"site not UTF-8", func(o *Options) { o.Site = "\xffx" }, "site"},
		{"node not UTF-8", func(o *Options) { o.Nodes = []string{"r\xc3"} }, "nodes"},
		{"peer not UTF-8", func(o *Options) { o.Peers = map[wire.NodeID]string{"us/\x80": "127.0.0.1:1"} }, "peers"},
		{"no listen", func(o *Options) { o.Listen = "" }, "listen"},
		{"no data dir", func(o *Options) { o.DataDir = "" }, "data_dir"},
		{"node twice", func(o *Options) { o.Nodes = []string{"r1", "r1"} }, "nodes"},
		{"peer without site", func(o *Options) { o.Peers = map[wire.NodeID]string{"r1": "127.0.0.1:1"} }, "peers"},
		{"peer at own site", func(o *Options) { o.Peers = map[wire.NodeID]string{"england/r2": "127.0.0.1:1"} }, "peers"},
		{"negative key limit", func(o *Options) { o.Replica.MaxKeyBytes = -1 }, "replica"},
		{"neither tls nor insecure", func(o *Options) { o.Insecure = false }, "tls"},
		{"tls without ca", func(o *Options) { o.Insecure, o.TLS = false, TLSFiles{Cert: "c.pem", Key: "k.pem"} }, "tls"},
		{"tls and insecure", func(o *Options) { o.TLS = TLSFiles{Cert: "c.pem", Key: "k.pem", CA: "ca.pem"} }, "insecure"},
		{"status peer without port", func(o *Options) { o.StatusPeers = map[string]string{"us": "127.0.0.1"} }, "status_peers"},
		{"status peer at own site", func(o *Options) { o.StatusPeers = map[string]string{"england": "127.0.0.1:7180"} }, "status_peers"},
		{"negative causal read timeout", func(o *Options) { o.Causal.ReadTimeout = -time.Second }, "causal"},
		{"causal rtt of no site", func(o *Options) { o.Causal.RTT = map[wire.NodeID]time.Duration{"r1": time.Millisecond} }, "rtt"},
		{"causal rtt negative", func(o *Options) { o.Causal.RTT = map[wire.NodeID]time.Duration{"us/r1": -time.Millisecond} }, "rtt"},
		{"node named as the configuration member", func(o *Options) { o.Nodes = []string{"cfg"} }, "configuration member"},
		{"voter without an address", func(o *Options) { o.Config.Voters = []string{"england", "us", "india"} }, "us/cfg"},
		{"two voters", func(o *Options) {
			o.Config.Voters = []string{"england", "us"}
			o.Peers = map[wire.NodeID]string{"us/cfg": "127.0.0.1:1"}
		}, "voters"},
		{"lease renewal beyond its length", func(o *Options) {
			o.Config.Voters, o.Config.LeaseLength, o.Config.LeaseRenew = []string{"england"}, time.Second, 2*time.Second
		}, "lease"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := good
			tc.edit(&o)
			o = o.EnsureDefaults()
			err := o.Validate()
			if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("Validate() = %v, want an error naming %s", err, tc.field)
			}
		})
	}
	o := good
	o = o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		t.Fatalf("valid options: %v", err)
	}
}

func TestHTTPEndpoints(t *testing.T) {
	srv, err := Start(Options{Site: "england", Listen: "127.0.0.1:0", HTTPListen: "127.0.0.1:0", DataDir: t.TempDir(), Insecure: true,
		Config: ConfigOptions{Voters: []string{"england"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	for path, want := range map[string]string{
		"/healthz": "ok",
		"/metrics": `cosla_replica_puts_total{node="england/r1"} 0`,
		// The site's configuration member and the rollbacks.
		"/metrics ":  `cosla_config_fsyncs_total{node="england/cfg"}`,
		"/metrics  ": `cosla_replica_rolled_back_total{node="england/r1"} 0`,
		"/status ":   `"config": {`,
		"/status":    `"site": "england"`,
		// No decision yet, but the node is listed.
		"/decisions": `{"england/r1":`,
	} {
		resp, err := http.Get("http://" + srv.HTTPAddr() + strings.TrimSpace(path))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			t.Errorf("GET %s: %s %q, want 200 containing %q", path, resp.Status, body, want)
		}
	}

	// DNS rebinding: a page whose own name resolves to 127.0.0.1 reaches
	// the listener, but its Host header names it; every path refuses it.
	for _, path := range []string{"/", "/cluster", "/healthz", "/metrics", "/status", "/decisions"} {
		req, err := http.NewRequest(http.MethodGet, "http://"+srv.HTTPAddr()+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = "rebound.example"
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("GET %s with Host rebound.example: %s, want 403 Forbidden", path, resp.Status)
		}
	}
}

// TestStartErrors checks that a port in use is reported, not fatal.
func TestStartErrors(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := Start(Options{Site: "england", Listen: l.Addr().String(), DataDir: t.TempDir(), Insecure: true}); err == nil {
		t.Fatal("Start on a port in use succeeded")
	}
}

func TestWritePrometheusLag(t *testing.T) {
	now := time.Unix(100, 0)
	st := Status{Nodes: []NodeStatus{{ID: "us/r1", Metrics: replica.Metrics{Tablets: []replica.TabletStatus{
		{Table: "t", Ref: wire.TabletRef{Table: 1, Tablet: 0}, High: hlc.FromTime(int64(98 * time.Second))},
	}}}}}
	var b strings.Builder
	WritePrometheus(&b, st, now)
	if want := `cosla_tablet_replication_lag_seconds{node="us/r1",table="t",tablet="0"} 2.000000`; !strings.Contains(b.String(), want) {
		t.Fatalf("metrics lack %s:\n%s", want, b.String())
	}
}

// TestCloseWhileANodeSends closes a server while one of its nodes is in
// the middle of an event that sends a message within the process. Close
// used to hold the server's lock while it waited for that event, and the
// send needs the same lock to find its node: Close never returned.
func TestCloseWhileANodeSends(t *testing.T) {
	srv, err := Start(Options{Site: "england", Nodes: []string{"r1", "r2"}, Listen: "127.0.0.1:0", DataDir: t.TempDir(), Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	a, b := wire.NodeID("england/r1"), wire.NodeID("england/r2")
	srv.mu.RLock()
	nodeA := srv.nodes[a].node
	srv.mu.RUnlock()
	inEvent, release := make(chan struct{}), make(chan struct{})
	if err := nodeA.Post(func(node.Handler) {
		close(inEvent)
		<-release
		srv.deliver(a, b, &wire.ProbeRequest{})
	}); err != nil {
		t.Fatal(err)
	}
	<-inEvent
	closed := make(chan struct{})
	go func() { srv.Close(); close(closed) }()
	// Close has reached node A's Stop once A refuses work.
	const polls = 10_000_000
	for i := 0; nodeA.Post(func(node.Handler) {}) == nil; i++ {
		if i == polls {
			t.Fatalf("node A still takes messages after %d polls: Close never stopped it", polls)
		}
		runtime.Gosched()
	}
	close(release)
	// A Close that waits for node A's event, which waits for the server's
	// lock, hangs here (the -timeout reports it).
	<-closed
}

// TestRollbackFile checks that a rolled-back version is appended to its
// table, tablet and epoch's file under the data directory, one JSON
// object a line.
func TestRollbackFile(t *testing.T) {
	dir := t.TempDir()
	s := &Server{opts: Options{DataDir: dir}.EnsureDefaults()}
	for _, v := range []string{"a", "b"} {
		s.writeRollback(replica.RolledBack{Table: "cart", Tablet: wire.TabletRef{Table: 7, Tablet: 2}, Epoch: 3,
			Entry: wire.Entry{Key: "k" + v, Value: []byte(v), TS: hlc.Timestamp{WallNanos: 5}}})
	}
	data, err := os.ReadFile(filepath.Join(dir, RollbackDir, "cart-2-3.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	var got RolledBackVersion
	if len(lines) != 2 || json.Unmarshal([]byte(lines[1]), &got) != nil || got.Key != "kb" || string(got.Value) != "b" || got.Epoch != 3 || got.TS.WallNanos != 5 {
		t.Fatalf("rollback file:\n%s\nwant two lines, the second kb=b at epoch 3", data)
	}
	read, err := ReadRollbacks(dir)
	if err != nil || len(read) != 2 || read[0].Key != "ka" || read[1].Key != "kb" || read[1].Table != "cart" || read[1].Tablet != 2 {
		t.Errorf("ReadRollbacks = %+v, %v; want ka and kb of cart tablet 2", read, err)
	}
	if none, err := ReadRollbacks(t.TempDir()); len(none) != 0 || err != nil {
		t.Errorf("ReadRollbacks of a directory with no rollback files = %+v, %v; want none", none, err)
	}
}

// TestPlannerOptions: a serve config's planner options reach the
// configuration node, and a bad one fails validation naming it.
func TestPlannerOptions(t *testing.T) {
	var c ConfigOptions
	text := "voters: [england]\nreconfigure: true\nplanner: {window: 2s, gain: 0.1, hold: 2, min_interval: 9s, min_ops: 3}\n"
	if err := yaml.Unmarshal([]byte(text), &c); err != nil {
		t.Fatal(err)
	}
	got := c.node()
	want := config.PlannerOptions{Window: 2 * time.Second, Gain: 0.1, Hold: 2, MinInterval: 9 * time.Second, MinOps: 3}
	if !got.Plan || got.Planner != want {
		t.Errorf("node options plan %v, planner %+v; want true, %+v", got.Plan, got.Planner, want)
	}
	c.Planner.Gain = -1
	if err := c.validate("england", nil); err == nil || !strings.Contains(err.Error(), "gain") {
		t.Errorf("validate with gain -1: %v; want an error naming the gain", err)
	}
}
