package server

import (
	"io"
	"net/http"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/cosla/cosla/internal/host"
	"github.com/cosla/cosla/internal/replica"
	"github.com/cosla/cosla/internal/storage/pebbledb"
	"github.com/cosla/cosla/internal/wire"
)

// TestHealthReportsFailedNode: a node whose disk failed a sync turns
// /healthz to 503 naming the node and the error, and cosla_node_failed
// to 1 for it, 0 for the others.
func TestHealthReportsFailedNode(t *testing.T) {
	srv, err := Start(Options{Site: "england", Listen: "127.0.0.1:0", HTTPListen: "127.0.0.1:0", DataDir: t.TempDir(), Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get("http://" + srv.HTTPAddr() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := get("/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Fatalf("/healthz before the failure: %d %q", code, body)
	}

	// A second node, on a disk whose WAL syncs fail once it is running;
	// the server serves it as one of its own.
	failSync := &errorfs.Toggle{Injector: errorfs.InjectorFunc(func(op errorfs.Op) error {
		if strings.HasSuffix(op.Path, ".log") && (op.Kind == errorfs.OpFileSync || op.Kind == errorfs.OpFileSyncData) {
			return syscall.EIO
		}
		return nil
	})}
	eng, err := pebbledb.Open("db", pebbledb.Options{FS: errorfs.Wrap(vfs.NewMem(), failSync)})
	if err != nil {
		t.Fatal(err)
	}
	rep := replica.New(replica.Options{})
	const id = wire.NodeID("england/r9")
	n, err := host.StartNode(host.NodeOptions{ID: id, Handler: rep, Engine: eng, Send: func(wire.NodeID, wire.NodeID, wire.Msg) {}})
	if err != nil {
		t.Fatal(err)
	}
	srv.mu.Lock()
	srv.nodes[id] = &hosted{node: n, replica: rep, engine: eng}
	srv.mu.Unlock()
	failSync.On()
	n.Deliver("c/1", &wire.CreateTableRequest{Req: 1, Layout: wire.Layout{Name: "t", ID: 1,
		Tablets: []wire.Tablet{{Primary: id}}, Replication: wire.Replication{Mode: wire.ModePull, Interval: time.Minute}}})
	const polls = 10_000_000
	for i := 0; n.Err() == nil; i++ {
		if i == polls {
			t.Fatalf("the node has not failed after %d polls", polls)
		}
		runtime.Gosched()
	}

	code, body := get("/healthz")
	t.Logf("/healthz: %d %s", code, body)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "england/r9 failed") || !strings.Contains(body, "input/output error") {
		t.Errorf("/healthz after the failure: %d %q, want 503 naming england/r9 and EIO", code, body)
	}
	if strings.Contains(body, "england/r1") {
		t.Errorf("/healthz names the healthy node: %q", body)
	}
	// /status keeps the node, saying why it stopped.
	var failed *NodeStatus
	for _, n := range srv.Status().Nodes {
		if n.ID == id {
			failed = &n
		}
	}
	if failed == nil || !strings.Contains(failed.Failed, "input/output error") {
		t.Errorf("/status after the failure: %+v; want england/r9 with its error", failed)
	}
	_, metrics := get("/metrics")
	for _, want := range []string{`cosla_node_failed{node="england/r1"} 0`, `cosla_node_failed{node="england/r9"} 1`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s:\n%s", want, metrics)
		}
	}
	if strings.Contains(metrics, `cosla_replica_puts_total{node="england/r9"}`) {
		t.Errorf("/metrics reports counters of the failed node:\n%s", metrics)
	}
}
