package cosla_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/cosla/cosla"
	"github.com/cosla/cosla/internal/server"
	"github.com/cosla/cosla/internal/wire"
	"github.com/cosla/cosla/sla"
)

// freeAddr returns a loopback address with a port free at the time of the
// call.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// testCluster starts one cosla serve process per site in this process,
// on loopback, with no WAN emulation.
func testCluster(t *testing.T, sites ...string) map[string]string {
	t.Helper()
	addrs := map[string]string{}
	for _, s := range sites {
		addrs[s+"/r1"] = freeAddr(t)
	}
	for _, s := range sites {
		peers := map[wire.NodeID]string{}
		for id, a := range addrs {
			if id != s+"/r1" {
				peers[wire.NodeID(id)] = a
			}
		}
		srv, err := server.Start(server.Options{Site: s, Listen: addrs[s+"/r1"], DataDir: t.TempDir(), Peers: peers})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srv.Close)
	}
	return addrs
}

func TestClientOverNetwork(t *testing.T) {
	nodes := testCluster(t, "england", "us")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := cosla.Open(ctx, cosla.Config{Site: "us", Nodes: nodes})
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
	strong, _ := sla.Parse("strong 10s 1")
	s, err := c.BeginSession(tbl, strong)
	if err != nil {
		t.Fatal(err)
	}
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
}
