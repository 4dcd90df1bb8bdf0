package driver

import (
	"context"
	"math/rand/v2"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/cosla/cosla"
	"github.com/cosla/cosla/internal/core/clientcore"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/lab/workload"
	"github.com/cosla/cosla/internal/runtime/server"
	"github.com/cosla/cosla/sla"
)

// TestHostTargetCausal drives a causal table on real nodes (two sites'
// servers in this process, over loopback TCP) through HostTarget: Puts
// are answered by the site's coordinator, reads and get-transactions
// fill Op's causal fields as SimTarget's do (where they were
// served from, the ring, the storage node), every op succeeds.
func TestHostTargetCausal(t *testing.T) {
	sites := []string{"a", "b"}
	addrs := map[string]string{}
	var ls []net.Listener
	for _, s := range sites {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		for _, n := range []string{"r1", "cc", "cache"} {
			addrs[s+"/"+n] = l.Addr().String()
		}
	}
	for i, s := range sites {
		peers := map[wire.NodeID]string{}
		for id, a := range addrs {
			if !strings.HasPrefix(id, s+"/") {
				peers[wire.NodeID(id)] = a
			}
		}
		ls[i].Close()
		srv, err := server.Start(server.Options{Site: s, Listen: addrs[s+"/r1"], DataDir: t.TempDir(), Peers: peers, Insecure: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srv.Close)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin, err := cosla.Open(ctx, cosla.Config{Site: "a", Nodes: addrs, Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	spec := cosla.CausalTableSpec{Name: "k", Sites: sites, Caches: true,
		Rings: []cosla.RingSpec{{Name: "a", Nodes: []string{"a/r1"}}, {Name: "b", Nodes: []string{"b/r1"}}}}
	if err := admin.CreateCausalTable(ctx, spec); err != nil {
		t.Fatal(err)
	}

	keys, err := workload.NewUniform(20)
	if err != nil {
		t.Fatal(err)
	}
	mix, err := NewKeyMix([]Weighted{{Kind: Put, Weight: 1}, {Kind: Get, Weight: 3}, {Kind: GetTx, Weight: 1}}, keys, 100)
	if err != nil {
		t.Fatal(err)
	}
	mix.TxKeys = 3
	causalSLA := sla.SLA{{Consistency: sla.CausalConsistency, Latency: sla.Unbounded, Utility: 1}}
	loop := NewLoop(time.Now())
	var ops []Op
	rec := &Recorder{OnOp: func(g *Group, op *Op) { ops = append(ops, *op) }}
	var groups []*Group
	for i, s := range sites {
		groups = append(groups, &Group{Name: s, Site: s, Sessions: 3, Rand: rand.New(rand.NewPCG(1, uint64(i))),
			Streams: []Stream{{Mix: mix}}, Cosla: Cosla{SLA: causalSLA, Strategy: clientcore.Closest}})
	}
	nodes := func(string) (map[string]string, error) { return addrs, nil }
	d, err := New(&HostTarget{Loop: loop, Nodes: nodes, Table: "k"}, Spec{Groups: groups, Steps: 300, Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	d.Start(loop)
	if err := loop.Run(ctx, d.Done); err != nil || d.Err() != nil {
		t.Fatalf("run: %v, %v", err, d.Err())
	}
	count := map[Kind]int{}
	sources := map[wire.Source]int{}
	for _, op := range ops {
		count[op.Kind]++
		if op.Err != nil {
			t.Fatalf("%s %s: %v", op.Kind, op.Key, op.Err)
		}
		site, _, _ := strings.Cut(op.Client, "#")
		switch op.Kind {
		case Put:
			if op.Node != site+"/cc" || op.Ring != wire.NoRing || op.TS.IsZero() {
				t.Errorf("put at %s: node %s, ring %d, ts %s; want %s/cc, no ring", site, op.Node, op.Ring, op.TS, site)
			}
		case Get, GetTx:
			if op.Consistency != "causal" || op.Node == "" {
				t.Errorf("%s at %s: consistency %q, node %q", op.Kind, site, op.Consistency, op.Node)
			}
			sources[op.Source]++
			switch op.Source {
			case wire.FromRing:
				if op.Ring < 0 || op.Ring > 1 || !strings.HasSuffix(op.Node, "/r1") {
					t.Errorf("%s at %s from a ring: ring %d, node %s", op.Kind, site, op.Ring, op.Node)
				}
			case wire.FromBuffer:
				if op.Ring != wire.NoRing || op.Node != site+"/cc" {
					t.Errorf("%s at %s from the write buffer: ring %d, node %s", op.Kind, site, op.Ring, op.Node)
				}
			}
			if op.Found != (op.ValueID != "") {
				t.Errorf("%s at %s: found %v, value %q", op.Kind, site, op.Found, op.ValueID)
			}
		}
	}
	if count[Put] == 0 || count[Get] == 0 || count[GetTx] == 0 || sources[wire.FromRing] == 0 {
		t.Errorf("ops %v, sources %v: want every kind, and reads from a ring", count, sources)
	}
}
