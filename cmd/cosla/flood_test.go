package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cosla/cosla"
	"github.com/cosla/cosla/internal/lab/driver"
	"github.com/cosla/cosla/internal/lab/workload"
	"github.com/cosla/cosla/sla"
)

var floodDuration = flag.Duration("flood.duration", 3*time.Second, "how long TestFlood's 200 clients flood the node")

// floodRSSMax is the memory bound the README states for a node under a
// flood: the peak resident set of its `cosla serve` process.
const floodRSSMax = 512 << 20

// TestFlood floods one `cosla serve` process through the driver: 200
// clients (a group each), each running 4 sessions of Puts of 1 KiB and
// Gets back to back, for -flood.duration (and at most 5,000 steps a
// session). The node must keep answering (every failure is ErrOverloaded
// or ErrTimeout, most operations succeed), stay under floodRSSMax, and
// serve normally afterwards. It logs the throughput of one client of 8
// sessions before and after, and of all during.
func TestFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("floods a node for seconds")
	}
	t.Parallel()
	addrs := e2eFreeAddrs(t, 2)
	p := newServeProc(t, "england", addrs[0], addrs[1], t.TempDir(), nil)
	p.start()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	nodes := map[string]string{"england/r1": addrs[0]}
	admin := openClient(ctx, t, "england", nodes, 10*time.Second)
	if err := admin.CreateTable(ctx, cosla.TableSpec{Name: "t", Tablets: []cosla.TabletSpec{{Primary: "england/r1"}}}); err != nil {
		t.Fatal(err)
	}
	admin.Close()
	keys, err := workload.NewUniform(50)
	if err != nil {
		t.Fatal(err)
	}
	mix, err := driver.NewKeyMix([]driver.Weighted{{Kind: driver.Put, Weight: 1}, {Kind: driver.Get, Weight: 1}}, keys, 1024)
	if err != nil {
		t.Fatal(err)
	}
	eventual := sla.SLA{{Consistency: sla.EventualConsistency, Latency: sla.Unbounded, Utility: 1}}
	// run runs clients groups of sessions each, for at most steps steps
	// or duration, and returns the operations done, those refused as
	// overloaded or timed out, and the operations done per second.
	run := func(phase string, clients, sessions, steps int, duration time.Duration) (done, failed int, perS float64) {
		loop := driver.NewLoop(time.Now())
		target := &driver.HostTarget{Loop: loop, Table: "t", Nodes: func(string) (map[string]string, error) { return nodes, nil }}
		var groups []*driver.Group
		for i := range clients {
			groups = append(groups, &driver.Group{Name: fmt.Sprintf("%s%d", phase, i), Site: "england", Sessions: sessions,
				Streams: []driver.Stream{{Mix: mix}}, Rand: rand.New(rand.NewPCG(1, uint64(i))),
				Cosla: driver.CoslaOf(eventual, cosla.Closest, driver.Levels{}, 0)})
		}
		other := 0
		rec := &driver.Recorder{OnOp: func(_ *driver.Group, op *driver.Op) {
			switch {
			case op.Err == nil:
				done++
			case errors.Is(op.Err, cosla.ErrOverloaded) || errors.Is(op.Err, cosla.ErrTimeout):
				failed++
			default:
				if other++; other <= 10 {
					t.Errorf("%s: %s %s %q: %v", phase, op.Session, op.Kind, op.Key, op.Err)
				}
			}
		}}
		d, err := driver.New(target, driver.Spec{Groups: groups, Steps: steps, Duration: duration, Recorder: rec})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		start := time.Now()
		d.Start(loop)
		if err := loop.Run(ctx, d.Done); err != nil {
			t.Fatalf("%s: %v", phase, err)
		}
		if err := d.Err(); err != nil {
			t.Fatalf("%s: %v", phase, err)
		}
		return done, failed, float64(done) / time.Since(start).Seconds()
	}
	measure := func(phase string) float64 {
		done, failed, perS := run(phase, 1, 8, 2000, time.Minute)
		if failed > 0 || done != 2000 {
			t.Errorf("%s the flood: %d of 2000 operations done, %d failed", phase, done, failed)
		}
		return perS
	}
	before := measure("before")

	const clients, sessions = 200, 4
	done, failed, during := run("flood", clients, sessions, clients*sessions*5000, *floodDuration)
	if done < 10*failed || done == 0 {
		t.Errorf("during the flood: %d operations done, %d refused or timed out; want most done", done, failed)
	}
	after := measure("after")

	peak := peakRSS(t, p.cmd.Process.Pid)
	t.Logf("flood of %d clients x %d sessions for %v: %d operations done (%.0f/s), %d overloaded or timed out; "+
		"one client before %.0f ops/s, after %.0f ops/s; node peak RSS %d MiB (bound %d MiB)",
		clients, sessions, *floodDuration, done, during, failed, before, after, peak>>20, floodRSSMax>>20)
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
