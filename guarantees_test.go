package cosla_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/cosla/cosla"
	"github.com/cosla/cosla/internal/check"
	"github.com/cosla/cosla/internal/server"
	"github.com/cosla/cosla/internal/wan"
	"github.com/cosla/cosla/internal/wire"
	"github.com/cosla/cosla/sla"
)

// wanCluster starts one server per site in this process with the network
// between sites emulated: every site reaches another through a link that
// delays each direction by oneWay. It returns, per site, the addresses a
// client there dials.
func wanCluster(t *testing.T, oneWay time.Duration, sites ...string) map[string]map[string]string {
	t.Helper()
	n, err := wan.NewNet(wan.Options{Jitter: oneWay / 10})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	direct := map[string]string{}
	for _, s := range sites {
		direct[s] = freeAddr(t)
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
	for _, s := range sites {
		peers := map[wire.NodeID]string{}
		for id, a := range views[s] {
			if id != s+"/r1" {
				peers[wire.NodeID(id)] = a
			}
		}
		srv, err := server.Start(server.Options{Site: s, Listen: direct[s], DataDir: t.TempDir(), Peers: peers})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srv.Close)
	}
	return views
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
	views := wanCluster(t, 15*time.Millisecond, "england", "us", "india")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin, err := cosla.Open(ctx, cosla.Config{Site: "england", Nodes: views["england"]})
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
	start := time.Now()
	since := func() time.Duration { return time.Since(start) }
	var mu sync.Mutex
	var history []check.Op
	var wg sync.WaitGroup
	const seed = 1
	clients := []string{"england", "us", "us", "india"}
	for i, site := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := runRecordedClient(ctx, views[site], site, i, slas, rand.New(rand.NewPCG(seed, uint64(i))), since, func(op check.Op) {
				mu.Lock()
				history = append(history, op)
				mu.Unlock()
			}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
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
	for _, k := range sla.Kinds {
		if met[k] == 0 {
			t.Errorf("no Get met %s: the check of that guarantee checked nothing", k)
		}
	}
}

// runRecordedClient runs sessions of random Puts and Gets over a few keys
// and reports every operation as check.Op.
func runRecordedClient(ctx context.Context, nodes map[string]string, site string, id int, slas []string,
	r *rand.Rand, since func() time.Duration, record func(check.Op)) error {
	c, err := cosla.Open(ctx, cosla.Config{Site: site, Name: fmt.Sprintf("c%d", id), Nodes: nodes})
	if err != nil {
		return err
	}
	defer c.Close()
	tbl, err := c.OpenTable(ctx, "t")
	if err != nil {
		return err
	}
	for sn := range 6 {
		agreement, err := sla.Parse(slas[(id+sn)%len(slas)])
		if err != nil {
			return err
		}
		strategy := []cosla.Strategy{cosla.Pileus, cosla.Pileus, cosla.Random, cosla.Closest}[r.IntN(4)]
		s, err := c.BeginSession(tbl, agreement, cosla.WithStrategy(strategy))
		if err != nil {
			return err
		}
		session := fmt.Sprintf("%s/c%d#%d", site, id, sn)
		for op := range 25 {
			key := fmt.Sprintf("k%d", r.IntN(4))
			rec := check.Op{Client: fmt.Sprintf("c%d", id), Session: session, Key: key, Call: since()}
			if r.IntN(2) == 0 {
				rec.Kind, rec.Value = check.Put, fmt.Sprintf("c%d-%d-%d", id, sn, op)
				ts, err := c.Put(ctx, s, key, []byte(rec.Value))
				rec.Return, rec.OK, rec.TS = since(), err == nil, ts
				if err != nil && !errors.Is(err, cosla.ErrTimeout) {
					return err
				}
			} else {
				rec.Kind = check.Get
				v, res, err := c.Get(ctx, s, key)
				// The client's own round trip: the time from its send to
				// the reply, which the latency of the met subSLA bounds.
				rec.Return = rec.Call + res.RTT
				if err == nil {
					rec.OK, rec.Found, rec.Value, rec.TS = true, res.Found, string(v), res.VersionTS
					rec.Met, rec.MetRank = res.SubSLA, res.Met+1
				} else if !errors.Is(err, cosla.ErrSLAUnmet) && !errors.Is(err, cosla.ErrTimeout) {
					return err
				}
			}
			record(rec)
		}
		c.EndSession(s)
	}
	return nil
}
