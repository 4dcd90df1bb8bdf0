package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/cosla/cosla/internal/core/replica"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/runtime/host"
	"github.com/cosla/cosla/internal/runtime/pebbledb"
)

// TestHealthReportsFailedNode: a node whose disk failed a sync turns
// /healthz to 503 naming the node and the error, and cosla_node_failed
// to 1 for it, 0 for the others.
func TestHealthReportsFailedNode(t *testing.T) {
	srv := startForHealth(t)
	defer srv.Close()
	if resp, body := httpGet(t, srv, "/healthz"); resp.StatusCode != http.StatusOK || body != "ok\n" {
		t.Fatalf("/healthz before the failure: %d %q", resp.StatusCode, body)
	}

	// A second node, on a disk whose WAL syncs fail once it is running.
	failSync := &errorfs.Toggle{Injector: errorfs.InjectorFunc(func(op errorfs.Op) error {
		if strings.HasSuffix(op.Path, ".log") && (op.Kind == errorfs.OpFileSync || op.Kind == errorfs.OpFileSyncData) {
			return syscall.EIO
		}
		return nil
	})}
	n, _ := addFaultyNode(t, srv, errorfs.Wrap(vfs.NewMem(), failSync), nil)
	failSync.On()
	n.Deliver("c/1", &wire.CreateTableRequest{Req: 1, Layout: healthLayout})
	const polls = 10_000_000
	for i := 0; n.Err() == nil; i++ {
		if i == polls {
			t.Fatalf("the node has not failed after %d polls", polls)
		}
		runtime.Gosched()
	}

	wantReported(t, srv, "input/output error")
	if _, body := httpGet(t, srv, "/healthz"); strings.Contains(body, "england/r1") {
		t.Errorf("/healthz names the healthy node: %q", body)
	}
	_, metrics := httpGet(t, srv, "/metrics")
	for _, want := range []string{`cosla_node_failed{node="england/r1"} 0`, `cosla_node_failed{node="england/r9"} 1`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s:\n%s", want, metrics)
		}
	}
	if strings.Contains(metrics, `cosla_replica_puts_total{node="england/r9"}`) {
		t.Errorf("/metrics reports counters of the failed node:\n%s", metrics)
	}
}

// TestCloseAfterStorageFailure fills a node's disk under a stream of
// synced Puts, in the two ways that used to stop the process from ending
// or end it: while a write waits in Pebble's write stall for a flush,
// which then fails (before, Close waited for that write for ever), and
// with a write of Pebble's MANIFEST failing (before, Pebble's Fatalf
// ended the process). Each time the node reports its failure in /healthz
// and /status, Close returns, and Err names the node and the cause.
func TestCloseAfterStorageFailure(t *testing.T) {
	tests := []struct {
		name   string
		inject func(stalled <-chan struct{}) func(errorfs.Op) error
		stuck  bool // a write is held in Pebble for good
	}{
		{"disk full under a stalled write", stallThenFill, true},
		{"MANIFEST write fails", func(<-chan struct{}) func(errorfs.Op) error {
			return func(op errorfs.Op) error {
				if strings.Contains(op.Path, "MANIFEST") && (op.Kind == errorfs.OpFileWrite || op.Kind == errorfs.OpFileWriteAt) {
					return syscall.ENOSPC
				}
				return nil
			}
		}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := startForHealth(t)
			stalled := make(chan struct{})
			faults := &errorfs.Toggle{Injector: errorfs.InjectorFunc(tc.inject(stalled))}
			n, eng := addFaultyNode(t, srv, errorfs.Wrap(vfs.NewMem(), faults), stalled)
			faults.On()
			n.Deliver("c/1", &wire.CreateTableRequest{Req: 1, Layout: healthLayout})
			// 2 MiB of Puts in memtables of 64 KiB: several flushes.
			value := make([]byte, 8<<10)
			for i := range 256 {
				n.Deliver(wire.NodeID(fmt.Sprintf("c/%d", i%8)), &wire.PutRequest{Req: uint64(i + 2),
					Tablet: wire.TabletRef{Table: healthLayout.ID}, Key: fmt.Sprintf("k%d", i), Value: value})
			}
			<-eng.Failed()
			wantReported(t, srv, "no space left on device")

			// A Close that waits for a storage call that never returns
			// hangs here (the -timeout reports it).
			srv.Close()
			err := srv.Err()
			t.Logf("Err after Close: %v", err)
			if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "england/r9") {
				t.Errorf("Err after Close = %v, want england/r9's ENOSPC", err)
			}
			if tc.stuck && !errors.Is(err, host.ErrStorageStuck) {
				t.Errorf("Err after Close = %v, want host.ErrStorageStuck for the write held in Pebble", err)
			}
		})
	}
}

// stallThenFill returns faults for a disk that fills while a write waits
// in Pebble's write stall: the first flush is held where it creates its
// sstable until the writes stall (stalled is closed), then it and every
// later allocation fail with ENOSPC.
func stallThenFill(stalled <-chan struct{}) func(errorfs.Op) error {
	var full atomic.Bool
	return func(op errorfs.Op) error {
		if op.Kind == errorfs.OpCreate && strings.HasSuffix(op.Path, ".sst") && !full.Load() {
			<-stalled
			full.Store(true)
		}
		if !full.Load() {
			return nil
		}
		switch op.Kind {
		case errorfs.OpCreate, errorfs.OpReuseForWrite, errorfs.OpLink, errorfs.OpFileWrite, errorfs.OpFileWriteAt,
			errorfs.OpFileSync, errorfs.OpFileSyncData, errorfs.OpFileSyncTo:
			return syscall.ENOSPC
		}
		return nil
	}
}

var healthLayout = wire.Layout{Name: "t", ID: 1, Tablets: []wire.Tablet{{Primary: "england/r9"}},
	Replication: wire.Replication{Mode: wire.ModePull, Interval: time.Minute}}

func startForHealth(t *testing.T) *Server {
	t.Helper()
	srv, err := Start(Options{Site: "england", Listen: "127.0.0.1:0", HTTPListen: "127.0.0.1:0", DataDir: t.TempDir(), Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

// addFaultyNode starts a replica node england/r9 on a Pebble store in fs,
// with memtables of 64 KiB, and has the server serve it as one of its
// own. If stalled is not nil, it is closed when the store's writes
// stall.
func addFaultyNode(t *testing.T, srv *Server, fs vfs.FS, stalled chan<- struct{}) (*host.Node, *pebbledb.Engine) {
	t.Helper()
	var logger *slog.Logger
	if stalled != nil {
		logger = slog.New(&stallWatch{Handler: slog.DiscardHandler, stalled: stalled})
	}
	eng, err := pebbledb.Open("db", pebbledb.Options{FS: fs, MemTableSizeBytes: 64 << 10, Logger: logger})
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
	return n, eng
}

// stallWatch closes stalled at the first record saying writes stall.
type stallWatch struct {
	slog.Handler
	once    sync.Once
	stalled chan<- struct{}
}

func (w *stallWatch) Enabled(context.Context, slog.Level) bool { return true }

func (w *stallWatch) Handle(ctx context.Context, r slog.Record) error {
	if strings.Contains(r.Message, "writes stall") {
		w.once.Do(func() { close(w.stalled) })
	}
	return w.Handler.Handle(ctx, r)
}

// wantReported checks that /healthz and /status report england/r9
// failed, with cause in the reason.
func wantReported(t *testing.T, srv *Server, cause string) {
	t.Helper()
	resp, body := httpGet(t, srv, "/healthz")
	code := resp.StatusCode
	t.Logf("/healthz: %d %s", code, body)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "england/r9 failed") || !strings.Contains(body, cause) {
		t.Errorf("/healthz after the failure: %d %q, want 503 naming england/r9 and %q", code, body, cause)
	}
	// /status keeps the node, saying why it stopped.
	var failed *NodeStatus
	for _, n := range srv.Status().Nodes {
		if n.ID == "england/r9" {
			failed = &n
		}
	}
	if failed == nil || !strings.Contains(failed.Failed, cause) {
		t.Errorf("/status after the failure: %+v; want england/r9 with %q", failed, cause)
	}
}

// TestHealthWaitsForTheLease: a primary that the configuration service
// has not granted a lease (here no leader can be elected: two of the
// three voters never answer) makes /healthz 503 naming its tablet, so
// that `cluster up` and a restart wait until Puts can be taken.
func TestHealthWaitsForTheLease(t *testing.T) {
	srv, err := Start(Options{Site: "england", Listen: "127.0.0.1:0", HTTPListen: "127.0.0.1:0", DataDir: t.TempDir(), Insecure: true,
		Peers:  map[wire.NodeID]string{"us/cfg": "127.0.0.1:1", "india/cfg": "127.0.0.1:1"},
		Config: ConfigOptions{Voters: []string{"england", "us", "india"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if resp, body := httpGet(t, srv, "/healthz"); resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz with no table: %d %q, want ok", resp.StatusCode, body)
	}
	l := healthLayout
	l.Tablets = []wire.Tablet{{Primary: "england/r1"}}
	srv.nodes["england/r1"].node.Deliver("c/1", &wire.CreateTableRequest{Req: 1, Layout: l})
	const polls = 10_000_000
	for i := 0; len(srv.unleased()) == 0; i++ {
		if i == polls {
			t.Fatalf("the table has no unleased primary after %d polls", polls)
		}
		runtime.Gosched()
	}
	resp, body := httpGet(t, srv, "/healthz")
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "england/r1: primary of t/0 without a lease") {
		t.Errorf("/healthz with a primary and no leader: %d %q, want 503 naming the tablet", resp.StatusCode, body)
	}
}
