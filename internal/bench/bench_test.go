package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cosla/cosla/internal/workload"
)

// fakeClock is a clock that only fakeStore moves: each store call advances
// it by the call's latency, so with one client an operation's measured
// latency is exactly the latency the store was told to have.
type fakeClock struct{ nanos atomic.Int64 }

func (c *fakeClock) now() time.Time          { return time.Unix(0, c.nanos.Load()) }
func (c *fakeClock) advance(d time.Duration) { c.nanos.Add(int64(d)) }

// fakeStore is an in-memory Store. Every hook is optional.
type fakeStore struct {
	mu    sync.Mutex
	data  map[string][]byte
	calls map[string]int // by method: "read", "update", "insert"

	// clock and latency: the call's latency is added to clock.
	clock   *fakeClock
	latency func(call int) time.Duration // call numbers from 0, all methods
	// fail, if set, decides the error a call returns.
	fail func(method, key string) error
	// entered and release gate every call: the call sends on entered (so a
	// test knows it has begun), then waits for a token on release or for
	// ctx to be done. Nil channels disable the gate.
	entered chan struct{}
	release chan struct{}
}

func newFakeStore() *fakeStore {
	return &fakeStore{data: make(map[string][]byte), calls: make(map[string]int)}
}

var errInjected = errors.New("fake: injected failure")

func (s *fakeStore) call(ctx context.Context, method, key string, value []byte) error {
	if s.entered != nil {
		select {
		case s.entered <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if s.release != nil {
		select {
		case <-s.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.calls {
		n += c
	}
	s.calls[method]++
	if s.clock != nil && s.latency != nil {
		s.clock.advance(s.latency(n))
	}
	if s.fail != nil {
		if err := s.fail(method, key); err != nil {
			return err
		}
	}
	if value != nil {
		s.data[key] = value
	}
	return nil
}

func (s *fakeStore) Read(ctx context.Context, key string) error {
	return s.call(ctx, "read", key, nil)
}

func (s *fakeStore) Update(ctx context.Context, key string, value []byte) error {
	return s.call(ctx, "update", key, value)
}

func (s *fakeStore) Insert(ctx context.Context, key string, value []byte) error {
	return s.call(ctx, "insert", key, value)
}

func newWorkload(t *testing.T, preset string) *workload.Workload {
	t.Helper()
	p, err := workload.Preset(preset)
	if err != nil {
		t.Fatal(err)
	}
	w, err := workload.New(p)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// repro ends failure messages with the command that reruns the test.
func repro(t *testing.T) string {
	return fmt.Sprintf("reproduce with: go test ./internal/bench/ -run '^%s$'", t.Name())
}

func kindOps(p Phase) map[string]KindStats {
	m := make(map[string]KindStats)
	for _, k := range p.Kinds {
		m[k.Kind] = k
	}
	return m
}

// TestOperationCountExact runs each preset with 8 clients and checks that
// exactly Options.Operations operations run, that the kinds add up, and that
// the store saw the calls those kinds imply.
func TestOperationCountExact(t *testing.T) {
	const operations = 3000
	for _, preset := range workload.PresetNames {
		t.Run(preset, func(t *testing.T) {
			store := newFakeStore()
			w := newWorkload(t, preset)
			opts := Options{Clients: 8, Operations: operations, Load: true, Seed: 42}
			res, err := Run(context.Background(), store, w, opts)
			if err != nil {
				t.Fatalf("Run: %v; %s", err, repro(t))
			}
			if res.Load == nil || res.Load.Operations != 1000 || res.Load.Stop != StopComplete {
				t.Fatalf("load = %+v, want 1000 operations, complete; %s", res.Load, repro(t))
			}
			run := res.Run
			if run.Operations != operations || run.Errors != 0 || run.Aborted != 0 || run.Stop != StopComplete {
				t.Fatalf("run: %d operations, %d errors, %d aborted, stop %s; want %d, 0, 0, complete; %s",
					run.Operations, run.Errors, run.Aborted, run.Stop, operations, repro(t))
			}
			kinds := kindOps(run)
			var sum uint64
			for _, k := range kinds {
				sum += k.Operations
				if uint64(k.LatencyMS.Count) != k.Operations {
					t.Errorf("%s: %d latencies recorded for %d operations; %s", k.Kind, k.LatencyMS.Count, k.Operations, repro(t))
				}
			}
			if sum != operations {
				t.Errorf("kinds add up to %d, want %d; %s", sum, operations, repro(t))
			}
			inserts := kinds["insert"].Operations
			rmw := kinds["read-modify-write"].Operations
			if got, want := store.calls["insert"], 1000+int(inserts); got != want {
				t.Errorf("store saw %d inserts, want %d; %s", got, want, repro(t))
			}
			if got, want := store.calls["update"], int(kinds["update"].Operations+rmw); got != want {
				t.Errorf("store saw %d updates, want %d; %s", got, want, repro(t))
			}
			if preset != "e" { // scans read a variable number of records
				if got, want := store.calls["read"], int(kinds["read"].Operations+rmw); got != want {
					t.Errorf("store saw %d reads, want %d; %s", got, want, repro(t))
				}
			}
			if got, want := len(store.data), 1000+int(inserts); got != want {
				t.Errorf("store holds %d keys, want %d; %s", got, want, repro(t))
			}
			for key, v := range store.data {
				if len(v) != w.Properties().ValueBytes() {
					t.Fatalf("value of %s is %d bytes, want %d; %s", key, len(v), w.Properties().ValueBytes(), repro(t))
				}
			}

			// The operation sequence depends on the seed, not on the number
			// of clients.
			one, err := Run(context.Background(), newFakeStore(), newWorkload(t, preset), Options{Operations: operations, Load: true, Seed: 42})
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range one.Run.Kinds {
				if kinds[k.Kind].Operations != k.Operations {
					t.Errorf("%s: %d operations with 1 client, %d with 8; %s", k.Kind, k.Operations, kinds[k.Kind].Operations, repro(t))
				}
			}
		})
	}
}

func TestErrorsCounted(t *testing.T) {
	store := newFakeStore()
	store.fail = func(method, key string) error {
		if method == "update" {
			return fmt.Errorf("update %s: %w", key, errInjected)
		}
		return nil
	}
	res, err := Run(context.Background(), store, newWorkload(t, "a"), Options{Clients: 4, Operations: 2000, Load: true})
	if err != nil {
		t.Fatalf("Run: %v; %s", err, repro(t))
	}
	if res.Load.Errors != 0 {
		t.Errorf("load errors = %d, want 0; %s", res.Load.Errors, repro(t))
	}
	kinds := kindOps(res.Run)
	read, update := kinds["read"], kinds["update"]
	if update.Operations == 0 || update.Errors != update.Operations || update.LatencyMS.Count != 0 {
		t.Errorf("update: %+v, want every operation an error and no latencies; %s", update, repro(t))
	}
	if !strings.Contains(update.FirstError, errInjected.Error()) {
		t.Errorf("update first error = %q, want it to contain %q; %s", update.FirstError, errInjected, repro(t))
	}
	if read.Errors != 0 || read.FirstError != "" {
		t.Errorf("read: %+v, want no errors; %s", read, repro(t))
	}
	if res.Run.Errors != update.Errors || res.Run.Operations != 2000 {
		t.Errorf("run: %d operations, %d errors; want 2000, %d; %s", res.Run.Operations, res.Run.Errors, update.Errors, repro(t))
	}
}

// TestCancel lets exactly ten reads through a gated store, cancels, and
// checks that Run returns with those ten and an error wrapping
// context.Canceled.
func TestCancel(t *testing.T) {
	const clients, passed = 4, 10
	store := newFakeStore()
	store.release = make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type ran struct {
		res Result
		err error
	}
	done := make(chan ran, 1)
	go func() {
		res, err := Run(ctx, store, newWorkload(t, "c"), Options{Clients: clients, Operations: math.MaxUint64})
		done <- ran{res, err}
	}()
	for range passed {
		store.release <- struct{}{}
	}
	cancel()
	got := <-done
	if !errors.Is(got.err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled; %s", got.err, repro(t))
	}
	run := got.res.Run
	if run.Operations != passed || run.Errors != 0 || run.Stop != StopCanceled || run.Aborted > clients {
		t.Errorf("run: %d operations, %d errors, %d aborted, stop %s; want %d, 0, <= %d, canceled; %s",
			run.Operations, run.Errors, run.Aborted, run.Stop, passed, clients, repro(t))
	}
}

// TestDuration runs against a store that never answers: only the duration
// bound can end the run, and every client's operation is aborted, not
// counted as an error. The bound passes when the test says so, once all
// clients are inside the store.
func TestDuration(t *testing.T) {
	const clients = 3
	store := newFakeStore()
	store.entered = make(chan struct{})
	store.release = make(chan struct{}) // never sent on
	expire := make(chan context.CancelFunc, 1)
	opts := Options{
		Clients:  clients,
		Duration: time.Hour,
		withDuration: func(ctx context.Context, _ time.Duration) (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(ctx)
			expire <- cancel
			return ctx, cancel
		},
	}
	type ran struct {
		res Result
		err error
	}
	w := newWorkload(t, "b")
	done := make(chan ran, 1)
	go func() {
		res, err := Run(context.Background(), store, w, opts)
		done <- ran{res, err}
	}()
	pass := <-expire
	for range clients {
		<-store.entered
	}
	pass()
	got := <-done
	if got.err != nil {
		t.Fatalf("Run: %v; %s", got.err, repro(t))
	}
	run := got.res.Run
	if run.Stop != StopDuration || run.Operations != 0 || run.Errors != 0 || run.Aborted != clients {
		t.Errorf("run: stop %s, %d operations, %d errors, %d aborted; want duration, 0, 0, %d; %s",
			run.Stop, run.Operations, run.Errors, run.Aborted, clients, repro(t))
	}
}

// nearestRank is the percentile HDR reports for exactly representable
// values: the value at rank round(q/100*n), at least 1.
func nearestRank(sorted []time.Duration, q float64) time.Duration {
	rank := int(q/100*float64(len(sorted)) + 0.5)
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

// TestPercentiles has the store report known latencies through the injected
// clock and checks the reported percentiles against the same values sorted.
func TestPercentiles(t *testing.T) {
	for _, tc := range []struct {
		name    string
		latency func(call int) time.Duration
		// relative error allowed: 0 below 2.048ms, where HDR with three
		// digits is exact, 0.1% above.
		tolerance float64
	}{
		{"1us-to-1ms", func(i int) time.Duration { return time.Duration(i+1) * time.Microsecond }, 0},
		{"skewed-ms", func(i int) time.Duration {
			// Mostly 1-2ms, with a tail every 97th call up to ~1s.
			if i%97 == 0 {
				return time.Duration(i+1) * time.Millisecond
			}
			return time.Millisecond + time.Duration(i*7%1000)*time.Microsecond
		}, 0.001},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const operations = 1000
			clock := &fakeClock{}
			store := newFakeStore()
			store.clock, store.latency = clock, tc.latency
			res, err := Run(context.Background(), store, newWorkload(t, "c"),
				Options{Operations: operations, Clock: clock.now})
			if err != nil {
				t.Fatalf("Run: %v; %s", err, repro(t))
			}
			var latencies []time.Duration
			var total time.Duration
			for i := range operations {
				latencies = append(latencies, tc.latency(i))
				total += tc.latency(i)
			}
			slices.Sort(latencies)
			read := kindOps(res.Run)["read"]
			check := func(name string, gotMS float64, want time.Duration) {
				t.Helper()
				wantMS := float64(want) / float64(time.Millisecond)
				if math.Abs(gotMS-wantMS) > tc.tolerance*wantMS {
					t.Errorf("%s = %vms, want %vms (tolerance %v); %s", name, gotMS, wantMS, tc.tolerance, repro(t))
				}
			}
			l := read.LatencyMS
			check("p50", l.P50, nearestRank(latencies, 50))
			check("p90", l.P90, nearestRank(latencies, 90))
			check("p95", l.P95, nearestRank(latencies, 95))
			check("p99", l.P99, nearestRank(latencies, 99))
			check("p99.9", l.P999, nearestRank(latencies, 99.9))
			check("max", l.Max, latencies[len(latencies)-1])
			check("mean", l.Mean, total/operations)
			// The fake clock moves only in the store, so the phase lasted
			// exactly the sum of the latencies.
			check("elapsed", res.Run.ElapsedMS, total)
			wantOpsPerS := operations / total.Seconds()
			if math.Abs(res.Run.ThroughputOpsPerS-wantOpsPerS) > 1e-9*wantOpsPerS {
				t.Errorf("throughput = %v ops/s, want %v; %s", res.Run.ThroughputOpsPerS, wantOpsPerS, repro(t))
			}
		})
	}
}

// TestProgress drives the progress ticker by hand. The store's entered
// channel makes the count exact: when the client enters its (k+1)th call,
// its kth operation has been recorded and the (k+1)th has not.
func TestProgress(t *testing.T) {
	const operations = 5
	store := newFakeStore()
	store.entered = make(chan struct{})
	store.release = make(chan struct{})
	ticks := make(chan time.Time)
	reports := make(chan Progress, 1)
	opts := Options{
		Operations: operations,
		Progress:   func(p Progress) { reports <- p },
		newTicker: func(time.Duration) (<-chan time.Time, func()) {
			return ticks, func() {}
		},
	}
	done := make(chan error, 1)
	go func() {
		_, err := Run(context.Background(), store, newWorkload(t, "c"), opts)
		done <- err
	}()
	<-store.entered
	for k := 1; k < operations; k++ {
		store.release <- struct{}{}
		<-store.entered
		ticks <- time.Time{}
		if p := <-reports; p.Phase != PhaseRun || p.Operations != uint64(k) || p.Done {
			t.Fatalf("progress after %d operations: %+v; %s", k, p, repro(t))
		}
	}
	store.release <- struct{}{}
	if p := <-reports; p.Operations != operations || !p.Done {
		t.Errorf("final progress: %+v, want %d operations, done; %s", p, operations, repro(t))
	}
	if err := <-done; err != nil {
		t.Fatalf("Run: %v; %s", err, repro(t))
	}
}

func TestOptionsValidate(t *testing.T) {
	w := newWorkload(t, "a")
	for _, tc := range []struct {
		name  string
		opts  Options
		field string
	}{
		{"negative clients", Options{Clients: -1}, "Clients"},
		{"too many clients", Options{Clients: MaxClients + 1}, "Clients"},
		{"negative duration", Options{Duration: -time.Second}, "Duration"},
		{"negative interval", Options{ProgressInterval: -1}, "ProgressInterval"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Run(context.Background(), newFakeStore(), w, tc.opts)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.field) {
				t.Errorf("err = %v, want ErrInvalid naming %s", err, tc.field)
			}
		})
	}
	var o Options
	o.EnsureDefaults(w)
	if err := o.Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
	if o.Clients != 1 || o.Operations != 1000 || o.ProgressInterval != DefaultProgressInterval {
		t.Errorf("defaults = %v", o)
	}
}

func TestResultRendering(t *testing.T) {
	clock := &fakeClock{}
	store := newFakeStore()
	store.clock = clock
	store.latency = func(i int) time.Duration { return time.Duration(i%10+1) * 100 * time.Microsecond }
	store.fail = func(method, key string) error {
		if method == "update" {
			return errInjected
		}
		return nil
	}
	res, err := Run(context.Background(), store, newWorkload(t, "f"), Options{Operations: 100, Load: true, Seed: 9, Clock: clock.now})
	if err != nil {
		t.Fatal(err)
	}

	var text strings.Builder
	if err := res.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"seed 9, 1 clients",
		"load: 1000 ops in ",
		"run: 100 ops in ",
		"p99.9_ms",
		"read-modify-write",
		"first read-modify-write error: " + errInjected.Error(),
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text output lacks %q:\n%s", want, text.String())
		}
	}

	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"throughput_ops_per_s":`, `"latency_ms":{"count":`, `"p99_9":`, `"elapsed_ms":`, `"stop":"complete"`, `"load":{`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("JSON lacks %s:\n%s", want, b)
		}
	}
	var back Result
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(back.Run.Kinds, res.Run.Kinds) || back.Run.Operations != res.Run.Operations {
		t.Errorf("JSON round trip changed the result:\n%+v\nwant\n%+v", back.Run, res.Run)
	}
}
