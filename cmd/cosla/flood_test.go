package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cosla/cosla"
	"github.com/cosla/cosla/sla"
)

var floodDuration = flag.Duration("flood.duration", 3*time.Second, "how long TestFlood's 200 clients flood the node")

// floodRSSMax is the memory bound the README states for a node under a
// flood: the peak resident set of its `cosla serve` process.
const floodRSSMax = 512 << 20

// TestFlood floods one `cosla serve` process with 200 clients, each
// running 4 sessions of Puts of 1 KiB and Gets as fast as they can, for
// -flood.duration (and at most 5,000 operations a session). The node must
// keep answering (every failure is ErrOverloaded or ErrTimeout, most
// operations succeed), stay under floodRSSMax, and serve normally
// afterwards. It logs the throughput of one client before and after, and
// of all during.
func TestFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("floods a node for seconds")
	}
	addrs := e2eFreeAddrs(t, 2)
	p := newServeProc(t, "england", addrs[0], addrs[1], t.TempDir(), nil)
	p.start()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	nodes := map[string]string{"england/r1": addrs[0]}
	admin := openClient(ctx, t, "england", nodes, 10*time.Second)
	defer admin.Close()
	if err := admin.CreateTable(ctx, cosla.TableSpec{Name: "t", Tablets: []cosla.TabletSpec{{Primary: "england/r1"}}}); err != nil {
		t.Fatal(err)
	}
	eventual := sla.SLA{{Consistency: sla.EventualConsistency, Latency: sla.Unbounded, Utility: 1}}
	value := []byte(strings.Repeat("v", 1024))
	// run does ops Puts and Gets (alternating) in a session of c, until
	// ops or the deadline, and counts them.
	run := func(c *cosla.Client, id string, ops int, deadline time.Time, done, failed *atomic.Int64) error {
		tbl, err := c.OpenTable(ctx, "t")
		if err != nil {
			return err
		}
		s, err := c.BeginSession(tbl, eventual)
		if err != nil {
			return err
		}
		defer c.EndSession(s)
		for i := 0; i < ops && time.Now().Before(deadline); i++ {
			key := id + "-" + strconv.Itoa(i%50)
			if i%2 == 0 {
				_, err = c.Put(ctx, s, key, value)
			} else {
				_, _, err = c.Get(ctx, s, key)
			}
			switch {
			case err == nil:
				done.Add(1)
			case errors.Is(err, cosla.ErrOverloaded) || errors.Is(err, cosla.ErrTimeout):
				failed.Add(1)
			default:
				return fmt.Errorf("%s: %w", id, err)
			}
		}
		return nil
	}
	// measure runs 8 sessions of one client for 2,000 operations and
	// returns its operations per second.
	measure := func(phase string) float64 {
		var done, failed atomic.Int64
		start := time.Now()
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				if err := run(admin, fmt.Sprintf("%s%d", phase, i), 250, start.Add(time.Minute), &done, &failed); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if failed.Load() > 0 || done.Load() != 2000 {
			t.Errorf("%s the flood: %d of 2000 operations done, %d failed", phase, done.Load(), failed.Load())
		}
		return float64(done.Load()) / time.Since(start).Seconds()
	}
	before := measure("before")

	const clients, sessions = 200, 4
	flooders := make([]*cosla.Client, clients)
	var opening sync.WaitGroup
	for i := range flooders {
		opening.Go(func() {
			c, err := cosla.Open(ctx, cosla.Config{Site: "england", Nodes: nodes, Insecure: true})
			if err != nil {
				t.Error(err)
				return
			}
			flooders[i] = c
			t.Cleanup(func() { _ = c.Close() })
		})
	}
	opening.Wait()
	if t.Failed() {
		t.FailNow()
	}
	var done, failed atomic.Int64
	start := time.Now()
	deadline := start.Add(*floodDuration)
	var wg sync.WaitGroup
	for i, c := range flooders {
		for j := range sessions {
			wg.Go(func() {
				if err := run(c, fmt.Sprintf("c%d.%d", i, j), 5000, deadline, &done, &failed); err != nil {
					t.Error(err)
				}
			})
		}
	}
	wg.Wait()
	during := float64(done.Load()) / time.Since(start).Seconds()
	if done.Load() < 10*failed.Load() || done.Load() == 0 {
		t.Errorf("during the flood: %d operations done, %d refused or timed out; want most done", done.Load(), failed.Load())
	}
	after := measure("after")

	peak := peakRSS(t, p.cmd.Process.Pid)
	t.Logf("flood of %d clients x %d sessions for %v: %d operations done (%.0f/s), %d overloaded or timed out; "+
		"one client before %.0f ops/s, after %.0f ops/s; node peak RSS %d MiB (bound %d MiB)",
		clients, sessions, *floodDuration, done.Load(), during, failed.Load(), before, after, peak>>20, floodRSSMax>>20)
	if peak > floodRSSMax {
		t.Errorf("the node's peak RSS %d MiB passes the bound of %d MiB", peak>>20, floodRSSMax>>20)
	}
}

// peakRSS returns the peak resident set of process pid, in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc status")
	return 0
}
