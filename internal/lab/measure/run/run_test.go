package run

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cosla/cosla/internal/lab/measure"
)

func shortSim(seed uint64) SimOptions {
	w := SimpleDBWorkload()
	w.Duration = 30 * time.Second
	return SimOptions{Workload: w, Seed: seed}
}

// TestSimSameSeedSameTrace: a simulated run is a pure function of its
// seed (STYLE 2).
func TestSimSameSeedSameTrace(t *testing.T) {
	var traces [3]bytes.Buffer
	var hashes [3]uint64
	for i, seed := range []uint64{7, 7, 8} {
		o := shortSim(seed)
		o.Trace = &traces[i]
		res, err := Sim(o)
		if err != nil {
			t.Fatal(err)
		}
		hashes[i] = res.TraceHash
	}
	if !bytes.Equal(traces[0].Bytes(), traces[1].Bytes()) || hashes[0] != hashes[1] {
		t.Errorf("seed 7 twice gave different traces (hashes %x, %x)", hashes[0], hashes[1])
	}
	if bytes.Equal(traces[0].Bytes(), traces[2].Bytes()) {
		t.Errorf("seeds 7 and 8 gave the same trace")
	}
	ops, err := measure.ReadJSONL(&traces[0])
	if err != nil || len(ops) == 0 {
		t.Fatalf("trace unreadable: %d ops, %v", len(ops), err)
	}
}

// TestSimPlacements runs every placement and the two-element test in the
// simulator and checks the roles and the analyses they feed.
func TestSimPlacements(t *testing.T) {
	for _, tc := range []struct {
		name      string
		placement Placement
		keys      []string
		clients   int
	}{
		{"thread", PlacementThread, nil, 2},
		{"threads", PlacementThreads, nil, 3},
		{"processes", PlacementProcesses, nil, 3},
		{"two-elements", PlacementThreads, []string{"x", "y"}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := shortSim(3)
			o.Workload.Placement, o.Workload.Keys = tc.placement, tc.keys
			res, err := Sim(o)
			if err != nil {
				t.Fatal(err)
			}
			rep := measure.Analyze(res.Ops, AnalysisConfig())
			if rep.Summary.Clients != tc.clients || rep.Summary.Failed != 0 || rep.Anomalies.NeverWrittenReads != 0 {
				t.Errorf("summary %+v, anomalies %+v", rep.Summary, rep.Anomalies)
			}
			if tc.keys != nil {
				if rep.InterElement.Skipped != "" || len(rep.InterElement.Options) == 0 {
					t.Fatalf("inter-element: %+v", rep.InterElement)
				}
				for _, g := range rep.InterElement.Options {
					if g.Option == "consistent" && g.A != g.Observations {
						t.Errorf("consistent reads of X and Y not always fresh: %+v", g)
					}
				}
			}
		})
	}
}

// TestSimReadOptions: every documented read option runs.
func TestSimReadOptions(t *testing.T) {
	o := shortSim(4)
	o.Workload.Placement = PlacementThread
	o.Workload.ReadOptions = []string{"strong", "read-my-writes", "pileus-shopping-cart", "bounded(1s)"}
	res, err := Sim(o)
	if err != nil {
		t.Fatal(err)
	}
	rep := measure.Analyze(res.Ops, AnalysisConfig())
	for _, of := range rep.Freshness.Options {
		if (of.Option == "strong" || of.Option == "read-my-writes") && of.P != 1 {
			t.Errorf("%s reads fresh with P %v, want 1 (a thread reading its own writes)", of.Option, of.P)
		}
	}
	if _, _, err := SimReadOption("pileus-nope"); !errors.Is(err, ErrInvalidWorkload) {
		t.Errorf("unknown preset: %v", err)
	}
	if _, _, err := SimReadOption("sometimes"); !errors.Is(err, ErrInvalidWorkload) {
		t.Errorf("unknown option: %v", err)
	}
}

func TestWorkloadValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Workload)
	}{
		{"writers", func(w *Workload) { w.Writers = -1 }},
		{"read hz", func(w *Workload) { w.ReadHz = -5 }},
		{"three keys", func(w *Workload) { w.Keys = []string{"a", "b", "c"} }},
		{"same key", func(w *Workload) { w.Keys = []string{"a", "a"} }},
		{"placement", func(w *Workload) { w.Placement = "fibers" }},
		{"duration", func(w *Workload) { w.Duration = -time.Second }},
		{"max ops", func(w *Workload) { w.MaxOps = -1 }},
		{"repeated option", func(w *Workload) { w.ReadOptions = []string{"a", "a"} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w Workload
			tc.edit(&w)
			w = w.EnsureDefaults()
			if err := w.Validate(); !errors.Is(err, ErrInvalidWorkload) {
				t.Errorf("Validate() = %v, want ErrInvalidWorkload", err)
			}
		})
	}
	var w Workload
	if err := w.EnsureDefaults().Validate(); err != nil {
		t.Errorf("defaults invalid: %v", err)
	}
}

// TestRoleSchedule checks the roles' driver groups: a write round every
// period, reads at the rate, nothing started after the duration, X before
// Y and the write first when both are due.
func TestRoleSchedule(t *testing.T) {
	res, err := Sim(SimOptions{Seed: 5, Workload: Workload{Placement: PlacementThread, WriteEvery: 100 * time.Millisecond,
		ReadHz: 50, ReadOptions: []string{"consistent"}, Keys: []string{"x", "y"}, Duration: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	var writes, reads int
	var prev measure.Op
	for i, op := range res.Ops {
		if op.Client != "t1" || op.CallUS >= res.Ops[0].CallUS+time.Second.Microseconds()+5000 {
			t.Fatalf("op %d: %+v", i, op)
		}
		if op.Key == "y" && (prev.Key != "x" || prev.Kind != op.Kind || prev.ReturnUS > op.CallUS) {
			t.Fatalf("op %d on y does not follow one on x: %+v after %+v", i, op, prev)
		}
		if op.Kind == measure.KindWrite {
			writes++
		} else {
			reads++
		}
		prev = op
	}
	if writes != 20 || reads != 100 {
		t.Errorf("writes %d (want 20: 10 rounds of 2 keys), reads %d (want 100: 50 rounds)", writes, reads)
	}
	if res.Ops[0].Kind != measure.KindWrite {
		t.Errorf("first op %+v, want the write", res.Ops[0])
	}
}

// TestLiveLagStore runs the real-time runner briefly against the
// in-memory store whose replica lags 40 ms and checks the freshness it
// sees: replica reads stale before the lag, every primary read fresh.
func TestLiveLagStore(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time run")
	}
	var trace bytes.Buffer
	var progress []Progress
	ops, err := Live(context.Background(), LiveOptions{
		Workload: Workload{WriteEvery: 100 * time.Millisecond, ReadHz: 500, ReadOptions: []string{"replica", "primary"},
			Duration: 700 * time.Millisecond, MaxOps: 5000},
		Store: NewLagStore(40 * time.Millisecond), Trace: &trace,
		Progress: func(p Progress) { progress = append(progress, p) }, ProgressEvery: time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	streamed, err := measure.ReadJSONL(&trace)
	if err != nil || len(streamed) != len(ops) {
		t.Fatalf("streamed %d ops (%v), returned %d", len(streamed), err, len(ops))
	}
	if len(progress) != 1 || progress[0].Ops != len(ops) {
		t.Errorf("progress %+v, want one final report of %d ops", progress, len(ops))
	}
	rep := measure.Analyze(ops, AnalysisConfig())
	s := Summarize(ops, rep, "replica", "primary")
	if s.PFreshConsistent != 1 || s.ReadsConsistent == 0 {
		t.Errorf("primary reads: %+v", s)
	}
	for _, of := range rep.Freshness.Options {
		if of.Option != "replica" {
			continue
		}
		// Reads within 30 ms of a write's start cannot see it: the replica
		// applies it 40 ms after it returned.
		var early, fresh int
		for _, b := range of.Buckets {
			if b.StartMS < 30 {
				early += b.Reads
				fresh += b.Fresh
			}
		}
		if early == 0 || float64(fresh) > 0.2*float64(early) {
			t.Errorf("replica reads within 30 ms of a write: %d of %d fresh, want few", fresh, early)
		}
	}
}

// TestLiveMaxOps: the op limit ends a run long before its duration.
func TestLiveMaxOps(t *testing.T) {
	ops, err := Live(context.Background(), LiveOptions{
		Workload: Workload{ReadHz: 1000, Duration: time.Hour, MaxOps: 25, ReadOptions: []string{"primary"}},
		Store:    NewLagStore(0),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) != 25 {
		t.Errorf("%d ops, want 25", len(ops))
	}
}

// fakeProcess runs a worker in a goroutine, standing in for a child.
type fakeProcess struct{ done chan error }

func (p fakeProcess) Wait() error { return <-p.done }

// TestLiveProcessesMerge drives the processes placement with workers in
// goroutines and checks that their traces are merged in call order.
func TestLiveProcessesMerge(t *testing.T) {
	store := NewLagStore(0)
	dir := t.TempDir()
	var specs []RoleSpec
	ops, err := Live(context.Background(), LiveOptions{
		Workload: Workload{Placement: PlacementProcesses, Writers: 1, Readers: 2, ReadHz: 200,
			WriteEvery: 50 * time.Millisecond, MaxOps: 60, Duration: 5 * time.Second, ReadOptions: []string{"primary"}},
		Store: store, WorkDir: dir,
		Spawn: func(ctx context.Context, w WorkerConfig) (Process, error) {
			specs = append(specs, w.Spec)
			b, _ := json.Marshal(w) // the work crosses a command line
			var got WorkerConfig
			if err := json.Unmarshal(b, &got); err != nil {
				return nil, err
			}
			f, err := os.Create(got.TracePath)
			if err != nil {
				return nil, err
			}
			p := fakeProcess{done: make(chan error, 1)}
			go func() {
				_, err := runRole(ctx, live{store: store}, got.Spec, got.StartUS, f)
				f.Close()
				p.done <- err
			}()
			return p, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 3 || specs[0].MaxOps != 20 {
		t.Fatalf("specs %+v, want 3 roles of 20 ops", specs)
	}
	if len(ops) != 60 {
		t.Errorf("%d ops, want 60", len(ops))
	}
	for i := 1; i < len(ops); i++ {
		if ops[i].CallUS < ops[i-1].CallUS {
			t.Fatalf("merged trace out of call order at %d", i)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "w1.jsonl")); err != nil {
		t.Errorf("worker trace: %v", err)
	}
	rep := measure.Analyze(ops, AnalysisConfig())
	if rep.Summary.Clients != 3 || rep.Anomalies.NeverWrittenReads != 0 || rep.Freshness.Options[0].P != 1 {
		t.Errorf("summary %+v anomalies %+v freshness %+v", rep.Summary, rep.Anomalies, rep.Freshness.Options)
	}
}

// TestLoadSweep runs a tiny sweep on the in-memory store.
func TestLoadSweep(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time run")
	}
	ops, inputs, err := LoadSweep(context.Background(), SweepOptions{Store: NewLagStore(0), Clients: []int{1, 4},
		ClientHz: 50, ReadFraction: 0.5, Duration: 200 * time.Millisecond, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	res := measure.Sweep(inputs)
	if len(res.Points) != 2 || res.Points[1].OfferedOpsPerS != 200 || len(ops) == 0 {
		t.Fatalf("sweep %+v", res)
	}
	if n := res.Points[1].OK; n < 20 || n > 44 {
		t.Errorf("4 clients at 50 Hz for 200 ms did %d ops, want about 40", n)
	}
}
