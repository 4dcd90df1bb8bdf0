package cosla_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cosla/cosla"
	"github.com/cosla/cosla/sla"
)

// TestCausalOverNetwork runs a causal table (Karma) on real nodes over
// loopback TCP with Pebble: sites a and b form one ring, c another. A
// client at a writes and reads its write back; a
// client at c reads it once it has arrived, from a ring or its cache,
// sees it become stable (every ring acknowledged it), and reads keys as
// one snapshot; bad requests are refused with ErrInvalid. c's status
// shows what its cache counted.
func TestCausalOverNetwork(t *testing.T) {
	n, servers := testServers(t, "a", "b", "c")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ca, err := cosla.Open(ctx, n.config("a"))
	if err != nil {
		t.Fatal(err)
	}
	defer ca.Close()
	spec := cosla.CausalTableSpec{Name: "k", Sites: []string{"a", "b", "c"}, Caches: true,
		Rings: []cosla.RingSpec{{Name: "ab", Nodes: []string{"a/r1", "b/r1"}}, {Name: "c", Nodes: []string{"c/r1"}}}}
	if err := ca.CreateCausalTable(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if err := ca.CreateCausalTable(ctx, spec); !errors.Is(err, cosla.ErrTableExists) {
		t.Fatalf("creating the causal table again: %v, want ErrTableExists", err)
	}
	bad := spec
	bad.Name, bad.Sites = "bad", []string{"a/x"}
	if err := ca.CreateCausalTable(ctx, bad); !errors.Is(err, cosla.ErrInvalid) {
		t.Fatalf("a causal table with site %q: %v, want ErrInvalid", "a/x", err)
	}
	tbl, err := ca.OpenTable(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	strong, _ := sla.Parse("strong 10s 1")
	if _, err := ca.BeginSession(tbl, strong); !errors.Is(err, cosla.ErrInvalid) {
		t.Fatalf("a strong session on a causal table: %v, want ErrInvalid", err)
	}
	causalSLA, _ := sla.Parse("causal 10s 1")
	s, err := ca.BeginSession(tbl, causalSLA)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ca.Put(ctx, s, "x", []byte("1"), cosla.WithBound(cosla.Immediate)); !errors.Is(err, cosla.ErrInvalid) {
		t.Fatalf("a bounded Put on a causal table: %v, want ErrInvalid", err)
	}
	if _, _, err := ca.Get(ctx, s, "x", cosla.WithBound(cosla.Within(50*time.Millisecond))); !errors.Is(err, cosla.ErrInvalid) {
		t.Fatalf("a bounded Get on a causal table: %v, want ErrInvalid", err)
	}
	if _, err := ca.BeginSession(tbl, causalSLA, cosla.WithReadLevel(cosla.Quorum)); !errors.Is(err, cosla.ErrInvalid) {
		t.Fatalf("a session at read level quorum on a causal table: %v, want ErrInvalid", err)
	}
	ts, err := ca.Put(ctx, s, "x", []byte("1"))
	if err != nil || ts.IsZero() {
		t.Fatalf("Put: %s, %v", ts, err)
	}
	if _, err := ca.Put(ctx, s, "y", []byte("2")); err != nil {
		t.Fatal(err)
	}
	// The session reads its write back: from its write buffer, or, once
	// every ring has it (on loopback that may be already), from a ring or
	// the cache.
	v, res, err := ca.Get(ctx, s, "x")
	if err != nil || string(v) != "1" || res.Causal == nil || res.Causal.Version != ts || res.Causal.Origin != "a/cc" {
		t.Fatalf("Get of the session's own write: %q, %+v, %v; want 1 at %s by a/cc", v, res.Causal, err, ts)
	}

	cc, err := cosla.Open(ctx, n.config("c"))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	tblc, err := cc.OpenTable(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	sc, err := cc.BeginSession(tblc, causalSLA)
	if err != nil {
		t.Fatal(err)
	}
	// y was written after x in one session: once c reads y, it must read
	// x too (causal consistency), from wherever it reads.
	for {
		v, res, err := cc.Get(ctx, sc, "y")
		if err != nil {
			t.Fatal(err)
		}
		if res.Causal == nil || res.Causal.Source == cosla.FromBuffer {
			t.Fatalf("Get at c: %+v, want a ring or cache read", res.Causal)
		}
		if string(v) == "2" {
			break
		}
	}
	if v, res, err := cc.Get(ctx, sc, "x"); err != nil || string(v) != "1" {
		t.Fatalf("Get of x after reading y at c: %q, %+v, %v; want 1", v, res.Causal, err)
	}
	// The writes complete: every ring acknowledges them, their
	// coordinator sends STABLE, and reads see them stable.
	for {
		_, res, err := cc.Get(ctx, sc, "x")
		if err != nil {
			t.Fatal(err)
		}
		if !res.Causal.InFlight {
			break
		}
	}
	// c's reads went through its cache, whose counters its status shows.
	if caches := servers["c"].Status().Caches; len(caches) != 1 || caches[0].ID != "c/cache" || caches[0].Metrics.Hits+caches[0].Metrics.Misses == 0 {
		t.Errorf("site c's caches in its status: %+v, want c/cache having served or filled reads", caches)
	}
	items, tx, err := cc.GetTx(ctx, sc, []string{"x", "y", "z"})
	if err != nil || len(items) != 3 || string(items[0].Value) != "1" || string(items[1].Value) != "2" || items[2].Found || tx.Rounds < 2 {
		t.Fatalf("GetTx: %+v, %+v, %v; want x=1 y=2 z absent in at least two rounds", items, tx, err)
	}
	if _, _, err := cc.GetTx(ctx, sc, []string{"x", "x"}); !errors.Is(err, cosla.ErrInvalid) {
		t.Fatalf("GetTx naming a key twice: %v, want ErrInvalid", err)
	}

	// A static table (COPS-PR): c's reads all go to its own ring, c,
	// whichever ring is nearer for the key.
	pr := spec
	pr.Name, pr.Caches, pr.Static = "pr", false, true
	if err := ca.CreateCausalTable(ctx, pr); err != nil {
		t.Fatal(err)
	}
	tblpr, err := cc.OpenTable(ctx, "pr")
	if err != nil {
		t.Fatal(err)
	}
	spr, err := cc.BeginSession(tblpr, causalSLA)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		if _, res, err := cc.Get(ctx, spr, k); err != nil || res.Causal.Source != cosla.FromRing || res.Causal.RingName != "c" {
			t.Fatalf("Get %s of a static table at c: %+v, %v; want it from ring c", k, res.Causal, err)
		}
	}
	bad = pr
	bad.Name, bad.Rings = "bad", spec.Rings[:1]
	if err := ca.CreateCausalTable(ctx, bad); !errors.Is(err, cosla.ErrInvalid) {
		t.Fatalf("a static table with site c in no ring: %v, want ErrInvalid", err)
	}
}
