package cosla_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/cosla/cosla"
	"github.com/cosla/cosla/sla"
)

// TestCloseWithOperationsInFlight closes a client while 100 Gets and Puts
// whose contexts have no deadline wait for a node that stopped answering:
// every one returns ErrClosed, and so does every call after Close.
func TestCloseWithOperationsInFlight(t *testing.T) {
	n, servers := testServers(t, "england")
	srv := servers["england"]
	ctx := context.Background()
	open, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	// Requests never time out on their own: only Close can end them.
	cfg := n.config("england")
	cfg.RequestTimeout = time.Hour
	c, err := cosla.Open(open, cfg)
	if err != nil {
		t.Fatal(err)
	}
	spec := cosla.TableSpec{Name: "t", Tablets: []cosla.TabletSpec{{Primary: "england/r1"}}}
	if err := c.CreateTable(open, spec); err != nil {
		t.Fatal(err)
	}
	tbl, err := c.OpenTable(open, "t")
	if err != nil {
		t.Fatal(err)
	}
	s := strongSession(open, t, c, "t")
	srv.Close()

	const ops = 100
	errs := make(chan error, ops)
	var started, wg sync.WaitGroup
	started.Add(ops)
	for i := range ops {
		wg.Go(func() {
			started.Done()
			if i%2 == 0 {
				_, err := c.Put(ctx, s, "k", []byte("v"))
				errs <- err
				return
			}
			_, _, err := c.Get(ctx, s, "k")
			errs <- err
		})
	}
	started.Wait()
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if !errors.Is(err, cosla.ErrClosed) {
			t.Fatalf("an operation in flight at Close returned %v, want ErrClosed", err)
		}
	}

	strong, _ := sla.Parse("strong 1s 1")
	after := map[string]error{"Close": c.Close(), "EndSession": c.EndSession(s),
		"CreateTable": c.CreateTable(ctx, spec), "DeleteTable": c.DeleteTable(ctx, "t")}
	_, after["OpenTable"] = c.OpenTable(ctx, "t")
	_, after["BeginSession"] = c.BeginSession(tbl, strong)
	_, after["Put"] = c.Put(ctx, s, "k", []byte("v"))
	_, _, after["Get"] = c.Get(ctx, s, "k")
	_, after["Metrics"] = c.Metrics()
	for call, err := range after {
		if !errors.Is(err, cosla.ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", call, err)
		}
	}
}

// TestForeignHandles passes nil, zero and another client's tables and
// sessions: each call returns ErrInvalid, never panics.
func TestForeignHandles(t *testing.T) {
	n := testCluster(t, "england")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	open := func() *cosla.Client {
		c, err := cosla.Open(ctx, n.config("england"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	a, b := open(), open()
	if err := a.CreateTable(ctx, cosla.TableSpec{Name: "t", Tablets: []cosla.TabletSpec{{Primary: "england/r1"}}}); err != nil {
		t.Fatal(err)
	}
	tblA, err := a.OpenTable(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	sA := strongSession(ctx, t, a, "t")
	strong, _ := sla.Parse("strong 1s 1")
	calls := map[string]func() error{
		"BeginSession(nil)": func() error { _, err := b.BeginSession(nil, strong); return err },
		"BeginSession(zero)": func() error {
			_, err := b.BeginSession(&cosla.Table{}, strong)
			return err
		},
		"BeginSession(foreign)": func() error { _, err := b.BeginSession(tblA, strong); return err },
		"Put(nil)":              func() error { _, err := b.Put(ctx, nil, "k", nil); return err },
		"Put(foreign)":          func() error { _, err := b.Put(ctx, sA, "k", nil); return err },
		"Get(zero)":             func() error { _, _, err := b.Get(ctx, &cosla.Session{}, "k"); return err },
		"Get(foreign)":          func() error { _, _, err := b.Get(ctx, sA, "k"); return err },
		"EndSession(nil)":       func() error { return b.EndSession(nil) },
		"EndSession(foreign)":   func() error { return b.EndSession(sA) },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, cosla.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	// The session still works for the client that began it.
	if _, err := a.Put(ctx, sA, "k", []byte("v")); err != nil {
		t.Fatalf("Put in a's own session: %v", err)
	}
}

// TestSessionLimit: beyond Config.MaxSessions open sessions BeginSession
// fails with ErrTooManySessions; ending one makes room.
func TestSessionLimit(t *testing.T) {
	n := testCluster(t, "england")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := n.config("england")
	cfg.MaxSessions = 2
	c, err := cosla.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.CreateTable(ctx, cosla.TableSpec{Name: "t", Tablets: []cosla.TabletSpec{{Primary: "england/r1"}}}); err != nil {
		t.Fatal(err)
	}
	tbl, err := c.OpenTable(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	eventual, _ := sla.Parse("eventual 1s 1")
	var open []*cosla.Session
	for range 2 {
		s, err := c.BeginSession(tbl, eventual)
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, s)
	}
	if _, err := c.BeginSession(tbl, eventual); !errors.Is(err, cosla.ErrTooManySessions) {
		t.Fatalf("a third session: %v, want ErrTooManySessions", err)
	}
	if err := c.EndSession(open[0]); err != nil {
		t.Fatal(err)
	}
	if err := c.EndSession(open[0]); err != nil { // ending twice frees one place only
		t.Fatal(err)
	}
	if _, err := c.BeginSession(tbl, eventual); err != nil {
		t.Fatalf("a session after ending one: %v", err)
	}
	if _, err := c.BeginSession(tbl, eventual); !errors.Is(err, cosla.ErrTooManySessions) {
		t.Fatalf("a third session again: %v, want ErrTooManySessions", err)
	}
}
