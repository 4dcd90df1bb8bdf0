package cosla_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cosla/cosla"
	"github.com/cosla/cosla/sla"
)

// TestBoundsOverNetwork runs dConssandra's bounded operations on real
// nodes over loopback TCP with Pebble: an unbounded Put is applied at
// every replica when it returns; an immediate one at least received; a
// ReadTestWrite holds, then fails; a zero bound is refused naming
// Immediate; and with the primary down, an immediate Put is still taken
// by the secondary, the session reads it back, and another session's
// immediate read there gets the paper's NULL.
func TestBoundsOverNetwork(t *testing.T) {
	n, servers := testServers(t, "england", "us")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := cosla.Open(ctx, n.config("us"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	spec := cosla.TableSpec{Name: "t", Push: true, PullInterval: time.Second,
		Tablets: []cosla.TabletSpec{{Primary: "england/r1", Secondaries: []string{"us/r1"}}}}
	if err := c.CreateTable(ctx, spec); err != nil {
		t.Fatal(err)
	}
	tbl, err := c.OpenTable(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	rmw, _ := sla.Parse("read-my-writes 10s 1")
	s, err := c.BeginSession(tbl, rmw)
	if err != nil {
		t.Fatal(err)
	}

	var w cosla.WriteResult
	ts, err := c.Put(ctx, s, "k", []byte("v1"), cosla.WithBound(cosla.Unbounded), cosla.WithWriteResult(&w))
	if err != nil {
		t.Fatal(err)
	}
	if w.Stage != cosla.Executed || ts.IsZero() || w.TS != ts || !slices.Equal(sorted(w.Holders), []string{"england/r1", "us/r1"}) {
		t.Fatalf("unbounded Put: %+v (ts %s), want executed at england/r1 and us/r1", w, ts)
	}
	strong, _ := sla.Parse("strong 10s 1")
	if v, _, err := c.Get(ctx, s, "k", cosla.WithSLA(strong)); err != nil || string(v) != "v1" {
		t.Fatalf("strong Get after an unbounded Put: %q, %v", v, err)
	}

	if _, err := c.Put(ctx, s, "k", []byte("v2"), cosla.WithBound(cosla.Immediate), cosla.WithWriteResult(&w)); err != nil {
		t.Fatal(err)
	}
	if w.Stage < cosla.Received || (w.TS.IsZero() && w.WriteID == 0) {
		t.Fatalf("immediate Put: %+v, want received with a timestamp or a write ID", w)
	}
	if v, res, err := c.Get(ctx, s, "k"); err != nil || string(v) != "v2" {
		t.Fatalf("read-my-writes Get after an immediate Put: %q, %+v, %v", v, res, err)
	}
	if v, res, err := c.Get(ctx, s, "k", cosla.WithBound(cosla.Within(2*time.Second))); err != nil || string(v) != "v2" || res.Bound != cosla.Within(2*time.Second) {
		t.Fatalf("bounded Get: %q, %+v, %v", v, res, err)
	}

	r, err := c.ReadTestWrite(ctx, s, "k", []byte("v2"), "k2", []byte("x"), cosla.WithBound(cosla.Unbounded))
	if err != nil || r.Tested != cosla.Held || r.TS.IsZero() {
		t.Fatalf("ReadTestWrite expecting v2: %+v, %v; want held", r, err)
	}
	r, err = c.ReadTestWrite(ctx, s, "k", []byte("v1"), "k2", []byte("y"), cosla.WithBound(cosla.Unbounded))
	if err != nil || r.Tested != cosla.Failed || !r.TS.IsZero() {
		t.Fatalf("ReadTestWrite expecting v1: %+v, %v; want failed", r, err)
	}
	if v, _, err := c.Get(ctx, s, "k2", cosla.WithSLA(strong)); err != nil || string(v) != "x" {
		t.Fatalf("k2 after a held and a failed ReadTestWrite: %q, %v; want x", v, err)
	}
	if _, err := c.Put(ctx, s, "k", []byte("v3"), cosla.WithBound(cosla.Within(0))); !errors.Is(err, cosla.ErrInvalid) || !strings.Contains(err.Error(), "Immediate") {
		t.Fatalf("Put with a zero bound: %v, want ErrInvalid naming Immediate", err)
	}

	// The primary goes down; a new client, which never reached it, takes
	// its secondary as the nearest replica.
	servers["england"].Close()
	c2, err := cosla.Open(ctx, n.config("us"))
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	tbl2, err := c2.OpenTable(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	s2, err := c2.BeginSession(tbl2, rmw)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c2.Put(ctx, s2, "k", []byte("v4"), cosla.WithBound(cosla.Immediate), cosla.WithWriteResult(&w)); err != nil {
		t.Fatal(err)
	}
	if w.Node != "us/r1" || w.Stage > cosla.Transmitted || w.WriteID == 0 || !w.TS.IsZero() {
		t.Fatalf("immediate Put with the primary down: %+v, want received or transmitted at us/r1 with a write ID", w)
	}
	if v, res, err := c2.Get(ctx, s2, "k"); err != nil || string(v) != "v4" || !res.FromSession {
		t.Fatalf("read-my-writes Get of the pending write: %q, %+v, %v; want v4 from the session", v, res, err)
	}
	other, err := c2.BeginSession(tbl2, sla.SLA{{Consistency: sla.EventualConsistency, Latency: 10 * time.Second, Utility: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if _, res, err := c2.Get(ctx, other, "k", cosla.WithBound(cosla.Immediate)); !errors.Is(err, cosla.ErrNull) || !res.Null || res.Pending != 1 {
		t.Fatalf("another session's immediate Get of a key with a staged write: %+v, %v; want ErrNull, 1 pending", res, err)
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
