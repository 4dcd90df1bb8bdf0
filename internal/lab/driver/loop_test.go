package driver

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cosla/cosla/internal/lab/adapters"
	"github.com/cosla/cosla/internal/lab/workload"
)

// TestLoopOrder checks that timers run in time order, ties in the order
// they were set, and that posted functions run on the loop.
func TestLoopOrder(t *testing.T) {
	l := NewLoop(time.Now())
	var got []string
	l.After(3*time.Millisecond, func() { got = append(got, "c") })
	l.After(time.Millisecond, func() { got = append(got, "a") })
	l.After(time.Millisecond, func() { got = append(got, "b") })
	var wg sync.WaitGroup
	posted := 0
	for range 100 {
		wg.Go(func() { l.Post(func() { posted++ }) })
	}
	if err := l.Run(context.Background(), func() bool { return len(got) == 3 && posted == 100 }); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("timers ran in order %v", got)
	}
}

func TestLoopCancel(t *testing.T) {
	l := NewLoop(time.Now())
	ctx, cancel := context.WithCancel(context.Background())
	l.After(time.Hour, func() { t.Error("a timer an hour away ran") })
	l.Post(cancel)
	if err := l.Run(ctx, func() bool { return false }); !errors.Is(err, context.Canceled) {
		t.Errorf("Run returned %v, want context.Canceled", err)
	}
}

// memStore is an in-memory adapters.Store for the tests.
type memStore struct {
	mu     sync.Mutex
	values map[string]string
	// block, if set, makes every call wait for it or for its context.
	block chan struct{}
}

func (s *memStore) Name() string           { return "mem" }
func (s *memStore) ReadOptions() []string  { return []string{"any"} }
func (s *memStore) WriteOptions() []string { return []string{"any"} }
func (s *memStore) Close() error           { return nil }

func (s *memStore) wait(ctx context.Context) error {
	if s.block == nil {
		return nil
	}
	select {
	case <-s.block:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *memStore) Write(ctx context.Context, key, value, option string) (adapters.Report, error) {
	if err := s.wait(ctx); err != nil {
		return adapters.Report{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.values[key] = value
	return adapters.Report{Consistency: "strong", Replica: "mem:" + option}, nil
}

func (s *memStore) Read(ctx context.Context, key, option string) (string, bool, adapters.Report, error) {
	if err := s.wait(ctx); err != nil {
		return "", false, adapters.Report{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.values[key]
	return v, ok, adapters.Report{Consistency: "strong", Replica: "mem:" + option}, nil
}

// TestStoreTarget runs a closed loop of four sessions against a store:
// every op is recorded, reads name the values written and the store's
// report reaches the op.
func TestStoreTarget(t *testing.T) {
	l := NewLoop(time.Now())
	store := &memStore{values: map[string]string{}}
	var ops []Op
	rec := &Recorder{OnOp: collect(&ops)}
	mix, err := NewKeyMix([]Weighted{{Kind: Put, Weight: 1}, {Kind: Get, Weight: 1}}, mustUniform(t, 5), 100)
	if err != nil {
		t.Fatal(err)
	}
	g := &Group{Name: "s", Sessions: 4, Rand: rand.New(rand.NewPCG(1, 1)), Streams: []Stream{{Mix: mix}}}
	d, err := New(&StoreTarget{Loop: l, Store: store, Ctx: context.Background()}, Spec{Groups: []*Group{g}, Steps: 200, Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	d.Start(l)
	if err := l.Run(context.Background(), d.Done); err != nil {
		t.Fatal(err)
	}
	if len(ops) != 200 {
		t.Fatalf("%d ops recorded, want 200", len(ops))
	}
	written := map[string]bool{}
	for _, op := range ops {
		if op.Kind == Put {
			written[op.ValueID] = true
		}
	}
	for _, op := range ops {
		if op.Err != nil || op.Node != "mem:" || op.Consistency != "strong" || op.End < op.Start {
			t.Fatalf("op %+v", op)
		}
		if op.Kind == Get && op.Found && !written[op.ValueID] {
			t.Errorf("read returned %q, which no Put wrote", op.ValueID)
		}
	}
}

// TestStoreTargetInterrupted stops a run whose store calls hang: the
// calls are cut short by the context and counted as aborted, not as
// failures.
func TestStoreTargetInterrupted(t *testing.T) {
	l := NewLoop(time.Now())
	store := &memStore{values: map[string]string{}, block: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	rec := &Recorder{}
	g := &Group{Name: "s", Sessions: 3, Rand: rand.New(rand.NewPCG(1, 1)), Streams: []Stream{{Mix: getMix(t, 5)}}}
	d, err := New(&StoreTarget{Loop: l, Store: store, Ctx: ctx}, Spec{Groups: []*Group{g}, Steps: 10, Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	d.Start(l)
	// After the sessions' first steps, which are due now.
	l.After(0, func() {
		d.Stop()
		cancel()
	})
	if err := l.Run(context.Background(), d.Done); err != nil {
		t.Fatal(err)
	}
	if gs := rec.Groups()[0]; gs.Aborted != 3 || gs.Steps != 0 {
		t.Errorf("group %+v, want 3 aborted and no steps recorded", gs)
	}
}

func mustUniform(t *testing.T, n uint64) workload.Generator {
	t.Helper()
	g, err := workload.NewUniform(n)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestSleepEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep with a cancelled context = %v, want context.Canceled", err)
	}
	if err := Sleep(context.Background(), 0); err != nil {
		t.Fatalf("Sleep(0) = %v, want nil", err)
	}
}

func TestReadMixGetsEachKeyOnceInOrder(t *testing.T) {
	m := &ReadMix{Keys: []string{"a", "b"}}
	var got []string
	for {
		step, ok := m.Next(nil)
		if !ok {
			break
		}
		if len(step.Ops) != 1 || step.Ops[0].Kind != Get {
			t.Fatalf("ReadMix step %+v, want one Get", step)
		}
		got = append(got, step.Ops[0].Key)
	}
	if !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("ReadMix read %v, want [a b]", got)
	}
}
