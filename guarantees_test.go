package cosla_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cosla/cosla"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/lab/check"
	"github.com/cosla/cosla/internal/lab/driver"
	"github.com/cosla/cosla/internal/runtime/certs"
	"github.com/cosla/cosla/internal/runtime/server"
	"github.com/cosla/cosla/internal/runtime/wan"
	"github.com/cosla/cosla/sla"
)

// wanCluster starts one server per site in this process with the network
// between sites emulated: every site reaches another through a link that
// delays each direction by oneWay. It returns, per site, the addresses a
// client there dials.
func wanCluster(t *testing.T, oneWay time.Duration, sites ...string) testNet {
	t.Helper()
	certDir, clientTLS := testCerts(t, sites...)
	n, err := wan.NewNet(wan.Options{Jitter: oneWay / 10})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	ports, release := reservePorts(t, len(sites))
	direct := map[string]string{}
	for i, s := range sites {
		direct[s] = ports[i]
	}
	views := map[string]map[string]string{}
	for _, from := range sites {
		views[from] = map[string]string{}
		for _, to := range sites {
			addr := direct[to]
			if from != to {
				l, err := n.Add(wan.Key{From: from, To: to, Target: to}, direct[to])
				if err != nil {
					t.Fatal(err)
				}
				if err := l.SetLatency(oneWay, oneWay/10); err != nil {
					t.Fatal(err)
				}
				addr = l.Addr()
			}
			views[from][to+"/r1"] = addr
		}
	}
	for i, s := range sites {
		peers := map[wire.NodeID]string{}
		for id, a := range views[s] {
			if id != s+"/r1" {
				peers[wire.NodeID(id)] = a
			}
		}
		release(i)
		srv, err := server.Start(server.Options{Site: s, Listen: direct[s], DataDir: t.TempDir(), Peers: peers,
			TLS: server.TLSFiles(certs.NodeFiles(certDir, s))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srv.Close)
	}
	return testNet{views: views, tls: clientTLS}
}

// TestGuaranteesOverNetwork runs sessions with SLAs over all six
// guarantees from clients at three sites of a real cluster, records what
// every operation did, and checks the history with the simulator's
// checkers: every Get reported as meeting a subSLA must really have met
// its guarantee and latency.
func TestGuaranteesOverNetwork(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cluster for a few seconds")
	}
	n := wanCluster(t, 15*time.Millisecond, "england", "us", "india")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin, err := cosla.Open(ctx, n.config("england"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	spec := cosla.TableSpec{Name: "t", PullInterval: 300 * time.Millisecond,
		Tablets: []cosla.TabletSpec{{Primary: "england/r1", Secondaries: []string{"us/r1", "india/r1"}}}}
	if err := admin.CreateTable(ctx, spec); err != nil {
		t.Fatal(err)
	}
	slas := []string{
		"strong 200ms 1; eventual 200ms 0.5",
		"causal 20ms 1; eventual 20ms 0.5",
		"bounded(400ms) 20ms 1; eventual 20ms 0.5",
		"read-my-writes 20ms 1; monotonic 20ms 0.7; eventual 200ms 0.5",
		"monotonic 20ms 1; strong 200ms 0.5",
		"eventual 20ms 1",
	}
	// Client i runs a group per SLA, its n-th with slas[(i+n)%6], each of
	// two sessions of random Puts and Gets; Pileus chooses the replicas
	// twice as often as Random and Closest.
	const seed = 1
	clients := []string{"england", "us", "us", "india"}
	mix, err := driver.PutGetMix(4, "k")
	if err != nil {
		t.Fatal(err)
	}
	var groups []*driver.Group
	for i, site := range clients {
		r := rand.New(rand.NewPCG(seed, uint64(i)))
		for n := range slas {
			agreement, err := sla.Parse(slas[(i+n)%len(slas)])
			if err != nil {
				t.Fatal(err)
			}
			strategy := []cosla.Strategy{cosla.Pileus, cosla.Pileus, cosla.Random, cosla.Closest}[r.IntN(4)]
			groups = append(groups, &driver.Group{
				Name: fmt.Sprintf("c%d-%d", i, n), Site: site, Sessions: 2,
				Streams: []driver.Stream{{Mix: mix}},
				Rand:    rand.New(rand.NewPCG(seed, uint64(len(slas)*i+n+len(clients)))),
				Cosla:   driver.CoslaOf(agreement, strategy, driver.Levels{}, 0),
			})
		}
	}
	loop := driver.NewLoop(time.Now())
	target := &driver.HostTarget{Loop: loop, Table: "t", TLS: n.tls, Nodes: func(site string) (map[string]string, error) {
		if v, ok := n.views[site]; ok {
			return v, nil
		}
		return nil, fmt.Errorf("no site %q", site)
	}}
	var history []check.Op
	rec := &driver.Recorder{OnOp: func(_ *driver.Group, op *driver.Op) {
		// A Put may time out (its outcome is then unknown), a Get miss its
		// SLA; anything else is a failure of the test's cluster.
		if op.Err != nil && !errors.Is(op.Err, cosla.ErrTimeout) && !(op.Kind == driver.Get && errors.Is(op.Err, cosla.ErrSLAUnmet)) {
			t.Errorf("%s %s %q: %v", op.Session, op.Kind, op.Key, op.Err)
		}
		history = append(history, op.CheckOp())
	}}
	d, err := driver.New(target, driver.Spec{Groups: groups, Steps: 600, Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	d.Start(loop)
	if err := loop.Run(ctx, d.Done); err != nil {
		t.Fatalf("after %d operations: %v", len(history), err)
	}
	if err := d.Err(); err != nil {
		t.Fatal(err)
	}
	if vs := check.Check(history); len(vs) > 0 {
		for i, v := range vs {
			if i == 10 {
				break
			}
			t.Error(v)
		}
		t.Fatalf("%d violations in %d operations (seed %d)", len(vs), len(history), seed)
	}
	met := map[sla.Kind]int{}
	for _, op := range history {
		if op.Kind == check.Get && op.OK {
			met[op.Met.Consistency.Kind]++
		}
	}
	t.Logf("%d operations checked; Gets meeting each guarantee: %v", len(history), met)
	if raceEnabled {
		// The race detector slows every operation several times over,
		// past the 20 ms of most subSLAs: the history is still checked,
		// but which guarantees it exercises is left to the plain run.
		return
	}
	for _, k := range sla.Kinds {
		if met[k] == 0 {
			t.Errorf("no Get met %s: the check of that guarantee checked nothing", k)
		}
	}
}
