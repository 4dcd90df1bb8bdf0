package server

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/cosla/cosla/internal/core/node"
	"github.com/cosla/cosla/internal/core/replica"
	"github.com/cosla/cosla/internal/core/wire"
)

// freeAddr returns a loopback address with a port free a moment ago, for
// processes that must know each other's addresses before they listen.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// inspect runs fn on a hosted node's replica, on the node's goroutine,
// and waits for it.
func inspect(t *testing.T, s *Server, id wire.NodeID, fn func(*replica.Node)) {
	t.Helper()
	s.mu.RLock()
	h, ok := s.nodes[id]
	s.mu.RUnlock()
	if !ok {
		t.Fatalf("no node %s", id)
	}
	if err := h.node.Do(func(node.Handler) { fn(h.replica) }); err != nil {
		t.Fatalf("%s: %v", id, err)
	}
}

// TestSnapshotOverNetwork: two processes, the primary of a tablet of 8
// MiB in one and its secondary in the other, over the transport with the default
// message limit (replica.Options.MessageBytesMax, about 5.1 MiB). The
// secondary loses its storage after the primary truncated its log, so it
// needs a snapshot larger than any message: the chunks each fit, and the
// secondary recovers every version. An unchunked snapshot was dropped by
// the transport (too_large) at every pull, and the secondary stayed empty.
func TestSnapshotOverNetwork(t *testing.T) {
	const (
		values     = 64
		valueBytes = 128 << 10
		pollsMax   = 10_000_000
	)
	englandAddr, usAddr := freeAddr(t), freeAddr(t)
	usDir := t.TempDir()
	startUS := func() *Server {
		t.Helper()
		s, err := Start(Options{Site: "us", Listen: usAddr, DataDir: usDir, Insecure: true,
			Peers: map[wire.NodeID]string{"england/r1": englandAddr}})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	england, err := Start(Options{Site: "england", Listen: englandAddr, DataDir: t.TempDir(), Insecure: true,
		Peers: map[wire.NodeID]string{"us/r1": usAddr}})
	if err != nil {
		t.Fatal(err)
	}
	defer england.Close()
	us := startUS()
	defer func() { us.Close() }()

	layout := wire.Layout{Name: "big", ID: 5, Tablets: []wire.Tablet{{Primary: "england/r1", Secondaries: []wire.NodeID{"us/r1"}}},
		Replication: wire.Replication{Mode: wire.ModePull, Interval: 50 * time.Millisecond}}
	ref := wire.TabletRef{Table: 5}
	create := func(s *Server, id wire.NodeID) {
		t.Helper()
		s.deliver("england/c1", id, &wire.CreateTableRequest{Req: 1, Layout: layout})
		var tablets int
		inspect(t, s, id, func(r *replica.Node) { tablets = len(r.Metrics().Tablets) })
		if tablets != 1 {
			t.Fatalf("%s did not create the table", id)
		}
	}
	create(england, "england/r1")
	create(us, "us/r1")
	for i := range values {
		value := bytes.Repeat([]byte{byte(i)}, valueBytes)
		england.deliver("england/c1", "england/r1", &wire.PutRequest{Req: uint64(2 + i), Tablet: ref, Key: fmt.Sprintf("key%03d", i), Value: value})
	}
	var want []wire.Entry
	inspect(t, england, "england/r1", func(r *replica.Node) { want = r.Versions(ref) })
	if len(want) != values {
		t.Fatalf("the primary holds %d versions, want %d", len(want), values)
	}

	// waitFor asks until done holds, at most pollsMax times; each ask is
	// a round trip to a node's goroutine, so the loop yields to the nodes
	// it waits on.
	waitFor := func(what string, done func() bool) {
		t.Helper()
		for i := 0; !done(); i++ {
			if i == pollsMax {
				t.Fatalf("%s: not after %d polls; england transport %+v, us transport %+v", what, pollsMax,
					england.Status().Transport, us.Status().Transport)
			}
			runtime.Gosched()
		}
	}
	// The secondary pulls everything, then reports it: the primary
	// truncates its log.
	waitFor("the primary truncates its log", func() bool {
		var truncated int64
		inspect(t, england, "england/r1", func(r *replica.Node) { truncated = r.Metrics().LogEntriesTruncated })
		return truncated == values
	})

	// The secondary's disk is lost and replaced; the table is created
	// again there.
	us.Close()
	if err := os.RemoveAll(filepath.Join(usDir, "r1")); err != nil {
		t.Fatal(err)
	}
	us = startUS()
	create(us, "us/r1")
	// The secondary's high timestamp leaves zero with the snapshot's last
	// chunk; nothing is written after it, so it then holds every version.
	waitFor("the secondary completes the snapshot", func() bool {
		var high bool
		inspect(t, us, "us/r1", func(r *replica.Node) { high = !r.Metrics().Tablets[0].High.IsZero() })
		return high
	})
	var got []wire.Entry
	inspect(t, us, "us/r1", func(r *replica.Node) { got = r.Versions(ref) })
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("after the snapshot the secondary holds %d versions, not the primary's %d", len(got), len(want))
	}
	var m replica.Metrics
	inspect(t, england, "england/r1", func(r *replica.Node) { m = r.Metrics() })
	if tr := england.Status().Transport; tr.TooLarge != 0 {
		t.Errorf("the primary's transport dropped %d messages over the limit", tr.TooLarge)
	}
	if m.SnapshotsSent < 1 || m.SnapshotChunksSent < 2 {
		t.Errorf("the primary sent %d snapshots in %d chunks, want one in two chunks at least", m.SnapshotsSent, m.SnapshotChunksSent)
	}
	t.Logf("snapshots sent %d in %d chunks", m.SnapshotsSent, m.SnapshotChunksSent)
}
