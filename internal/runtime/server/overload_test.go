package server

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cosla/cosla/internal/core/node"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/core/wire/wirepb"
)

// TestOverloaded: while the node is busy, a client request beyond its
// mailbox's room for one client is answered Overloaded at once, and
// counted; the request that got in is served once the node is free.
func TestOverloaded(t *testing.T) {
	srv, err := Start(Options{Site: "england", Listen: "127.0.0.1:0", DataDir: t.TempDir(), Insecure: true,
		Mailbox: MailboxOptions{PerClient: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	srv.mu.RLock()
	n := srv.nodes["england/r1"].node
	srv.mu.RUnlock()
	block := make(chan struct{})
	var release sync.Once
	defer release.Do(func() { close(block) }) // before Close, which waits for the node
	if err := n.Post(func(node.Handler) { <-block }); err != nil {
		t.Fatal(err)
	}

	stream, err := dialStream(t, srv.Addr(), nil)
	if err != nil {
		t.Fatal(err)
	}
	next := func() wire.Msg {
		t.Helper()
		e, err := recv(stream)
		if err != nil {
			t.Fatal(err)
		}
		_, _, m, err := wirepb.Unwrap(e)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	for req := uint64(1); req <= 2; req++ {
		if err := send(t, stream, "us/c1", &wire.TableInfoRequest{Req: req, Name: "t"}); err != nil {
			t.Fatal(err)
		}
	}
	if r, ok := next().(*wire.TableInfoReply); !ok || r.Req != 2 || r.Code != wire.Overloaded {
		t.Fatalf("first answer %v, want request 2 refused as overloaded", r)
	}
	if got := srv.overloaded.Load(); got != 1 { // Status would wait for the busy node
		t.Errorf("overloaded count %d, want 1", got)
	}
	release.Do(func() { close(block) })
	if r, ok := next().(*wire.TableInfoReply); !ok || r.Req != 1 || r.Code != wire.NoTable {
		t.Fatalf("second answer %v, want request 1 served: no table", r)
	}
	var metrics strings.Builder
	WritePrometheus(&metrics, srv.Status(), time.Now())
	if !strings.Contains(metrics.String(), "cosla_overloaded_total 1\n") {
		t.Errorf("metrics lack cosla_overloaded_total 1:\n%s", metrics.String())
	}
}
