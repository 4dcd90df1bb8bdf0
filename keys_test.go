package cosla_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cosla/cosla"
	"github.com/cosla/cosla/sla"
)

// oddKey is the i'th of a set of keys that are not UTF-8 (issue 25), with
// a NUL and the encoding of a surrogate; even ones sort after "\xc3",
// odd ones before it.
func oddKey(i int) string {
	if i%2 == 0 {
		return fmt.Sprintf("\xff\xfe\x80key-%d\x00\xed\xa0\x80", i)
	}
	return fmt.Sprintf("\x80\x00key-%d\xc3", i)
}

// TestKeysAnyBytes (issue 25): over the network, one Client with 16
// sessions Puts while one of them Puts keys that are not UTF-8. Before,
// the first such Put could not be encoded, ended the stream every session
// shared, and the other sessions' operations timed out. Now every Put
// succeeds and the odd keys read back byte for byte, also from both
// tablets of a table split at a start that is not UTF-8; names that
// cannot travel are refused as bad input.
func TestKeysAnyBytes(t *testing.T) {
	n := testCluster(t, "england", "us")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := cosla.Open(ctx, n.config("us"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	one := cosla.TableSpec{Name: "t", PullInterval: time.Second, Tablets: []cosla.TabletSpec{{Primary: "england/r1", Secondaries: []string{"us/r1"}}}}
	if err := c.CreateTable(ctx, one); err != nil {
		t.Fatal(err)
	}
	const sessions, puts = 16, 40
	ss := make([]*cosla.Session, sessions)
	for i := range ss {
		ss[i] = strongSession(ctx, t, c, "t")
	}
	errs := make([]error, sessions)
	var wg sync.WaitGroup
	for i := range sessions {
		wg.Go(func() {
			for j := range puts {
				key := fmt.Sprintf("s%d-%d", i, j)
				if i == 0 {
					key = oddKey(j)
				}
				if _, err := c.Put(ctx, ss[i], key, []byte(key)); err != nil {
					errs[i] = fmt.Errorf("session %d: put %d of %d: %w", i, j+1, puts, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("puts failed:\n%v", err)
	}
	getBack := func(s *cosla.Session, key string) {
		t.Helper()
		v, res, err := c.Get(ctx, s, key)
		if err != nil || string(v) != key || !res.Primary {
			t.Fatalf("get %q = %q, %+v, %v; want its value from the primary", key, v, res, err)
		}
	}
	for j := range puts {
		getBack(ss[0], oddKey(j))
	}

	split := cosla.TableSpec{Name: "split", PullInterval: time.Second, Tablets: []cosla.TabletSpec{
		{Primary: "england/r1", Secondaries: []string{"us/r1"}},
		{Start: "\xc3", Primary: "us/r1", Secondaries: []string{"england/r1"}},
	}}
	if err := c.CreateTable(ctx, split); err != nil {
		t.Fatal(err)
	}
	s := strongSession(ctx, t, c, "split")
	for j := range 4 {
		if _, err := c.Put(ctx, s, oddKey(j), []byte(oddKey(j))); err != nil {
			t.Fatalf("put %q in the split table: %v", oddKey(j), err)
		}
		getBack(s, oddKey(j))
	}

	// Names travel as protobuf strings, which must be UTF-8: one that is
	// not is bad input, refused before anything is sent.
	if _, err := c.OpenTable(ctx, "t\xff"); !errors.Is(err, cosla.ErrInvalid) {
		t.Errorf("OpenTable of a name that is not UTF-8: %v, want ErrInvalid", err)
	}
	if err := c.DeleteTable(ctx, "t\xff"); !errors.Is(err, cosla.ErrInvalid) {
		t.Errorf("DeleteTable of a name that is not UTF-8: %v, want ErrInvalid", err)
	}
	bad := one
	bad.Name = "\xc3"
	if err := c.CreateTable(ctx, bad); !errors.Is(err, cosla.ErrInvalid) {
		t.Errorf("CreateTable of a name that is not UTF-8: %v, want ErrInvalid", err)
	}
	bad.Name, bad.Tablets = "u", []cosla.TabletSpec{{Primary: "england/\xff"}}
	if err := c.CreateTable(ctx, bad); !errors.Is(err, cosla.ErrInvalid) {
		t.Errorf("CreateTable placing a node whose name is not UTF-8: %v, want ErrInvalid", err)
	}
	for _, cfg := range []cosla.Config{{Site: "\xc3", Nodes: n.views["us"], TLS: n.tls}, {Site: "us", Name: "c\xff", Nodes: n.views["us"], TLS: n.tls}} {
		if _, err := cosla.Open(ctx, cfg); !errors.Is(err, cosla.ErrInvalid) {
			t.Errorf("Open with site %q and name %q: %v, want ErrInvalid", cfg.Site, cfg.Name, err)
		}
	}
}

// TestCausalKeysAnyBytes: a causal table's keys may be any bytes too,
// through its whole path: a put, its propagation with a dependency on
// another such key, reads at another site, and a get-transaction.
func TestCausalKeysAnyBytes(t *testing.T) {
	n := testCluster(t, "a", "b")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ca, err := cosla.Open(ctx, n.config("a"))
	if err != nil {
		t.Fatal(err)
	}
	defer ca.Close()
	spec := cosla.CausalTableSpec{Name: "k", Sites: []string{"a", "b"}, Caches: true,
		Rings: []cosla.RingSpec{{Name: "a", Nodes: []string{"a/r1"}}, {Name: "b", Nodes: []string{"b/r1"}}}}
	if err := ca.CreateCausalTable(ctx, spec); err != nil {
		t.Fatal(err)
	}
	causalSLA, _ := sla.Parse("causal 10s 1")
	session := func(c *cosla.Client) *cosla.Session {
		tbl, err := c.OpenTable(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		s, err := c.BeginSession(tbl, causalSLA)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	x, y := oddKey(0), oddKey(1)
	sa := session(ca)
	for _, k := range []string{x, y} { // y's write depends on x's
		if _, err := ca.Put(ctx, sa, k, []byte(k)); err != nil {
			t.Fatalf("put %q: %v", k, err)
		}
	}
	cb, err := cosla.Open(ctx, n.config("b"))
	if err != nil {
		t.Fatal(err)
	}
	defer cb.Close()
	sb := session(cb)
	// Bounded by ctx: y reaches b's ring by propagation.
	for {
		v, _, err := cb.Get(ctx, sb, y)
		if err != nil {
			t.Fatal(err)
		}
		if string(v) == y {
			break
		}
	}
	items, _, err := cb.GetTx(ctx, sb, []string{x, y})
	if err != nil || len(items) != 2 || items[0].Key != x || string(items[0].Value) != x || items[1].Key != y || string(items[1].Value) != y {
		t.Fatalf("GetTx of %q and %q: %+v, %v; want both, byte for byte", x, y, items, err)
	}
}
