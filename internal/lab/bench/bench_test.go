package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cosla/cosla/internal/lab/adapters"
	"github.com/cosla/cosla/internal/lab/driver"
	"github.com/cosla/cosla/internal/lab/workload"
)

// memStore is an in-memory adapters.Store that counts its calls. Every
// hook is optional.
type memStore struct {
	mu     sync.Mutex
	values map[string]string
	writes map[string]int // by key
	reads  int
	// options counts the calls by "read " or "write " and their option.
	options map[string]int

	// name, readOptions and writeOptions are what the Store methods
	// return; default "mem" and one option, "".
	name                      string
	readOptions, writeOptions []string

	// wait, if set, is called first by every call; an error ends the call.
	wait func(ctx context.Context) error
	// fail, if set, decides a call's error: write tells a Write from a
	// Read, existed whether the key held a value.
	fail func(write bool, key string, existed bool) error
}

func newMemStore() *memStore {
	return &memStore{values: map[string]string{}, writes: map[string]int{}, options: map[string]int{},
		name: "mem", readOptions: []string{""}, writeOptions: []string{""}}
}

var errInjected = errors.New("mem: injected failure")

func (s *memStore) Name() string           { return s.name }
func (s *memStore) ReadOptions() []string  { return slices.Clone(s.readOptions) }
func (s *memStore) WriteOptions() []string { return slices.Clone(s.writeOptions) }
func (s *memStore) Close() error           { return nil }

// optionCount returns how many calls had that option ("read replica").
func (s *memStore) optionCount(option string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.options[option]
}

// call waits, then records the call under the lock and returns its
// error.
func (s *memStore) call(ctx context.Context, write bool, key, value, option string) (string, bool, error) {
	if s.wait != nil {
		if err := s.wait(ctx); err != nil {
			return "", false, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if write {
		s.options["write "+option]++
	} else {
		s.options["read "+option]++
	}
	old, existed := s.values[key]
	if s.fail != nil {
		if err := s.fail(write, key, existed); err != nil {
			return "", false, err
		}
	}
	if !write {
		s.reads++
		return old, existed, nil
	}
	s.values[key] = value
	s.writes[key]++
	return "", false, nil
}

func (s *memStore) Write(ctx context.Context, key, value, option string) (adapters.Report, error) {
	_, _, err := s.call(ctx, true, key, value, option)
	return adapters.Report{}, err
}

func (s *memStore) Read(ctx context.Context, key, option string) (string, bool, adapters.Report, error) {
	v, found, err := s.call(ctx, false, key, "", option)
	return v, found, adapters.Report{}, err
}

// run runs w against store through a driver.StoreTarget on a loop of its
// own.
func run(ctx context.Context, store adapters.Store, w *workload.Workload, opts Options) (Result, error) {
	loop := driver.NewLoop(time.Now())
	return Run(ctx, loop, &driver.StoreTarget{Loop: loop, Store: store, Ctx: ctx}, w, opts)
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
	return fmt.Sprintf("reproduce with: go test ./internal/lab/bench/ -run '^%s$'", t.Name())
}

func kindOps(p Phase) map[string]KindStats {
	m := make(map[string]KindStats)
	for _, k := range p.Kinds {
		m[k.Kind] = k
	}
	return m
}

// TestLoadWritesEveryRecordOnce loads with eight sessions and checks that
// each record was written exactly once.
func TestLoadWritesEveryRecordOnce(t *testing.T) {
	store := newMemStore()
	w := newWorkload(t, "c") // reads only: the run phase writes nothing
	res, err := run(context.Background(), store, w, Options{Clients: 8, Operations: 10, Load: true, Seed: 3})
	if err != nil {
		t.Fatalf("Run: %v; %s", err, repro(t))
	}
	records := w.Properties().RecordCount
	if l := res.Load; l == nil || l.Operations != records || l.Errors != 0 || l.Aborted != 0 || l.Stop != StopComplete {
		t.Fatalf("load = %+v, want %d operations, complete; %s", l, records, repro(t))
	}
	if k := res.Load.Kinds; len(k) != 1 || k[0].Kind != "insert" || k[0].Operations != records {
		t.Errorf("load kinds = %+v; %s", k, repro(t))
	}
	if uint64(len(store.writes)) != records {
		t.Errorf("%d keys written, want %d; %s", len(store.writes), records, repro(t))
	}
	for i := range records {
		if n := store.writes[workload.Key(i)]; n != 1 {
			t.Fatalf("record %d (%s) written %d times, want once; %s", i, workload.Key(i), n, repro(t))
		}
	}
}

// TestOperationCountExact runs each preset with 8 clients and checks that
// exactly Options.Operations operations run, that the kinds add up, and that
// the store saw the calls those kinds imply.
func TestOperationCountExact(t *testing.T) {
	const operations = 3000
	for _, preset := range workload.PresetNames {
		t.Run(preset, func(t *testing.T) {
			store := newMemStore()
			w := newWorkload(t, preset)
			res, err := run(context.Background(), store, w, Options{Clients: 8, Operations: operations, Load: true, Seed: 42})
			if err != nil {
				t.Fatalf("Run: %v; %s", err, repro(t))
			}
			if res.Load == nil || res.Load.Operations != 1000 || res.Load.Stop != StopComplete {
				t.Fatalf("load = %+v, want 1000 operations, complete; %s", res.Load, repro(t))
			}
			phase := res.Run
			if phase.Operations != operations || phase.Errors != 0 || phase.Aborted != 0 || phase.Stop != StopComplete {
				t.Fatalf("run: %d operations, %d errors, %d aborted, stop %s; want %d, 0, 0, complete; %s",
					phase.Operations, phase.Errors, phase.Aborted, phase.Stop, operations, repro(t))
			}
			kinds := kindOps(phase)
			var sum uint64
			for _, k := range phase.Kinds {
				sum += k.Operations
				if uint64(k.LatencyMS.Count) != k.Operations {
					t.Errorf("%s: %d latencies recorded for %d operations; %s", k.Kind, k.LatencyMS.Count, k.Operations, repro(t))
				}
			}
			if sum != operations {
				t.Errorf("kinds add up to %d, want %d; %s", sum, operations, repro(t))
			}
			if !slices.IsSortedFunc(phase.Kinds, func(a, b KindStats) int { return order(a.Kind) - order(b.Kind) }) {
				t.Errorf("kinds not in workload order: %+v; %s", phase.Kinds, repro(t))
			}
			inserts, updates := kinds["insert"].Operations, kinds["update"].Operations
			rmw := kinds["read-modify-write"].Operations
			writes := 0
			for _, n := range store.writes {
				writes += n
			}
			if got, want := writes, 1000+int(inserts+updates+rmw); got != want {
				t.Errorf("store saw %d writes, want %d; %s", got, want, repro(t))
			}
			if preset != "e" { // scans read a variable number of records
				if got, want := store.reads, int(kinds["read"].Operations+rmw); got != want {
					t.Errorf("store saw %d reads, want %d; %s", got, want, repro(t))
				}
			}
			if got, want := len(store.values), 1000+int(inserts); got != want {
				t.Errorf("store holds %d keys, want %d; %s", got, want, repro(t))
			}
			for key, v := range store.values {
				if len(v) != w.Properties().ValueBytes() {
					t.Fatalf("value of %s is %d bytes, want %d; %s", key, len(v), w.Properties().ValueBytes(), repro(t))
				}
			}

			// The operation sequence depends on the seed, not on the number
			// of clients.
			one, err := run(context.Background(), newMemStore(), newWorkload(t, preset), Options{Operations: operations, Load: true, Seed: 42})
			if err != nil {
				t.Fatal(err)
			}
			if len(one.Run.Kinds) != len(phase.Kinds) {
				t.Errorf("kinds %+v with 1 client, %+v with 8; %s", one.Run.Kinds, phase.Kinds, repro(t))
			}
			for _, k := range one.Run.Kinds {
				if kinds[k.Kind].Operations != k.Operations {
					t.Errorf("%s: %d operations with 1 client, %d with 8; %s", k.Kind, k.Operations, kinds[k.Kind].Operations, repro(t))
				}
			}
		})
	}
}

// failUpdates fails the writes of keys that hold a value: the run phase's
// updates, not the load phase's writes.
func failUpdates(write bool, key string, existed bool) error {
	if write && existed {
		return fmt.Errorf("update %s: %w", key, errInjected)
	}
	return nil
}

func TestErrorsCounted(t *testing.T) {
	store := newMemStore()
	store.fail = failUpdates
	res, err := run(context.Background(), store, newWorkload(t, "a"), Options{Clients: 4, Operations: 2000, Load: true})
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
	if res.Run.Errors != update.Errors || res.Run.Operations != 2000 || res.Run.Stop != StopComplete {
		t.Errorf("run: %d operations, %d errors, stop %s; want 2000, %d, complete; %s",
			res.Run.Operations, res.Run.Errors, res.Run.Stop, update.Errors, repro(t))
	}
}

// TestCancel lets exactly ten reads through, then blocks every call until
// the context is cancelled, which the test does once every client is
// blocked: Run returns those ten, the blocked ones as aborted, and an
// error wrapping context.Canceled.
func TestCancel(t *testing.T) {
	const clients, passed = 4, 10
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var calls atomic.Int64
	blocked := make(chan struct{}, clients)
	store := newMemStore()
	store.wait = func(ctx context.Context) error {
		if calls.Add(1) <= passed {
			return nil
		}
		blocked <- struct{}{}
		<-ctx.Done()
		return ctx.Err()
	}
	type ran struct {
		res Result
		err error
	}
	done := make(chan ran, 1)
	go func() {
		res, err := run(ctx, store, newWorkload(t, "c"), Options{Clients: clients, Operations: math.MaxUint64})
		done <- ran{res, err}
	}()
	for range clients {
		<-blocked
	}
	cancel()
	got := <-done
	if !errors.Is(got.err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled; %s", got.err, repro(t))
	}
	r := got.res.Run
	if r.Operations != passed || r.Errors != 0 || r.Stop != StopCanceled || r.Aborted != clients {
		t.Errorf("run: %d operations, %d errors, %d aborted, stop %s; want %d, 0, %d, canceled; %s",
			r.Operations, r.Errors, r.Aborted, r.Stop, passed, clients, repro(t))
	}
}

// TestDuration bounds the run phase by a nanosecond alone: whatever few
// operations start before it, the phase ends, stopped by the duration.
func TestDuration(t *testing.T) {
	const clients = 3
	res, err := run(context.Background(), newMemStore(), newWorkload(t, "b"),
		Options{Clients: clients, Operations: math.MaxUint64, Duration: time.Nanosecond})
	if err != nil {
		t.Fatalf("Run: %v; %s", err, repro(t))
	}
	r := res.Run
	if r.Stop != StopDuration || r.Operations > clients || r.Errors != 0 || r.Aborted != 0 {
		t.Errorf("run: stop %s, %d operations, %d errors, %d aborted; want duration, <= %d, 0, 0; %s",
			r.Stop, r.Operations, r.Errors, r.Aborted, clients, repro(t))
	}
}

// TestProgress lets each store call through only after a periodic
// progress report, so that reports are made whatever the machine's speed:
// the first before any operation completed, counts that never go back,
// and a last one, done, with every operation.
func TestProgress(t *testing.T) {
	const operations = 5
	tokens := make(chan struct{}, 1)
	store := newMemStore()
	var reports []Progress // appended on the loop, read after Run
	store.wait = func(ctx context.Context) error {
		select {
		case <-tokens:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	opts := Options{
		Operations:       operations,
		ProgressInterval: time.Millisecond,
		Progress: func(p Progress) {
			reports = append(reports, p)
			select {
			case tokens <- struct{}{}:
			default:
			}
		},
	}
	if _, err := run(context.Background(), store, newWorkload(t, "c"), opts); err != nil {
		t.Fatalf("Run: %v; %s", err, repro(t))
	}
	if len(reports) < operations+1 {
		t.Fatalf("%d progress reports for %d operations that each waited for one: %+v; %s", len(reports), operations, reports, repro(t))
	}
	periodic, last := reports[:len(reports)-1], reports[len(reports)-1]
	if periodic[0].Operations != 0 {
		t.Errorf("first report %+v, made before any operation could complete; %s", periodic[0], repro(t))
	}
	for i, p := range periodic {
		if p.Phase != PhaseRun || p.Done || p.Operations > operations || (i > 0 && p.Operations < periodic[i-1].Operations) {
			t.Fatalf("periodic report %d: %+v after %+v; %s", i, p, periodic[max(i-1, 0)], repro(t))
		}
	}
	if last.Phase != PhaseRun || !last.Done || last.Operations != operations {
		t.Errorf("final progress: %+v, want %d operations, done; %s", last, operations, repro(t))
	}
}

// refusingTarget refuses every op, as a target does an op it can never
// perform.
type refusingTarget struct{ loop *driver.Loop }

func (t refusingTarget) Open(*driver.Group) (driver.Client, error) { return t, nil }
func (t refusingTarget) Begin(string) (driver.Session, error)      { return t, nil }
func (t refusingTarget) Close()                                    {}
func (t refusingTarget) End()                                      {}
func (t refusingTarget) Do(op *driver.Op, done func()) {
	op.Start, op.End = t.loop.Now(), t.loop.Now()
	op.Err, op.Refused = errors.New("refused"), true
	t.loop.Post(done)
}

func TestRefused(t *testing.T) {
	loop := driver.NewLoop(time.Now())
	res, err := Run(context.Background(), loop, refusingTarget{loop}, newWorkload(t, "a"), Options{Clients: 2})
	if err == nil || !strings.Contains(err.Error(), "refused") || res.Run.Stop != StopError {
		t.Errorf("Run: %v, stop %s; want the refusal and stop error; %s", err, res.Run.Stop, repro(t))
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
			_, err := run(context.Background(), newMemStore(), w, tc.opts)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.field) {
				t.Errorf("err = %v, want ErrInvalid naming %s", err, tc.field)
			}
		})
	}
	var o Options
	o = o.EnsureDefaults(w)
	if err := o.Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
	if o.Clients != 1 || o.Operations != 1000 || o.ProgressInterval != DefaultProgressInterval {
		t.Errorf("defaults = %v", o)
	}
}

// TestStoreOptions checks that every Get and Put, of the load too, carries
// the store option asked for.
func TestStoreOptions(t *testing.T) {
	store := newMemStore()
	res, err := run(context.Background(), store, newWorkload(t, "f"), Options{Operations: 100, Load: true, Seed: 9,
		ReadOption: "replica", WriteOption: "wait"})
	if err != nil {
		t.Fatalf("Run: %v; %s", err, repro(t))
	}
	reads, writes := store.optionCount("read replica"), store.optionCount("write wait")
	// Workload F: every operation reads, the read-modify-writes write too;
	// the load writes each record once.
	if reads != 100 || writes < 1000 || reads+writes != int(res.Run.Operations)+int(res.Load.Operations)+int(kindOps(res.Run)["read-modify-write"].Operations) {
		t.Errorf("%d reads with option replica, %d writes with option wait; result %+v; %s", reads, writes, res.Run, repro(t))
	}
	if n := store.optionCount("read ") + store.optionCount("write "); n != 0 {
		t.Errorf("%d calls without the option; %s", n, repro(t))
	}
}

func TestResultRendering(t *testing.T) {
	store := newMemStore()
	store.fail = failUpdates
	res, err := run(context.Background(), store, newWorkload(t, "f"), Options{Operations: 100, Load: true, Seed: 9,
		Setup: Setup{Target: "mem", Read: "replica", Write: "async"}})
	if err != nil {
		t.Fatal(err)
	}

	var text strings.Builder
	if err := res.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"mem, reads replica, writes async",
		"seed 9, 1 clients",
		"load: 1000 ops in ",
		"run: 100 ops in ",
		"(stop: complete)",
		"p99.9_ms",
		"read-modify-write",
		"first read-modify-write error: ",
		errInjected.Error(),
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text output lacks %q:\n%s", want, text.String())
		}
	}

	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"target":"mem","read":"replica","write":"async"`, `"throughput_ops_per_s":`, `"latency_ms":{"count":`,
		`"p99_9":`, `"elapsed_ms":`, `"stop":"complete"`, `"load":{`, `"latency_cdf_ms":[{"q":0,"ms":`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("JSON lacks %s:\n%s", want, b)
		}
	}
	var back Result
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Run.Kinds, res.Run.Kinds) || back.Run.Operations != res.Run.Operations {
		t.Errorf("JSON round trip changed the result:\n%+v\nwant\n%+v", back.Run, res.Run)
	}
}
