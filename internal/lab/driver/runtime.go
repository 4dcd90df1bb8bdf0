package driver

import (
	"container/heap"
	"context"
	"sync"
	"time"

	"github.com/cosla/cosla/internal/runtime/sim"
)

// A Runtime is where a run's events happen: the simulator's virtual time
// (SimRuntime) or real time (Loop). The driver's code runs on the
// runtime's loop, one event at a time; only the targets' own goroutines
// run beside it, and they hand results back through the loop. A run's
// clock reads zero when the driver starts.
type Runtime interface {
	// Now is the runtime's clock: virtual time since the simulation
	// began, or the time since the loop's origin.
	Now() time.Duration
	// After runs fn on the loop d from now.
	After(d time.Duration, fn func())
}

// SimRuntime is the simulator as a runtime.
type SimRuntime struct{ Sim *sim.Sim }

// Now implements Runtime.
func (r SimRuntime) Now() time.Duration { return r.Sim.Now() }

// After implements Runtime.
func (r SimRuntime) After(d time.Duration, fn func()) { r.Sim.After(d, fn) }

// Loop is the real-time runtime: a loop that runs timers and the
// functions other goroutines post, one at a time, on the goroutine that
// calls Run. Its clock is the monotonic time since its origin.
type Loop struct {
	origin time.Time

	mu     sync.Mutex
	posted []func()
	wake   chan struct{}

	// timers and seq belong to the loop's goroutine.
	timers timerHeap
	seq    uint64
}

// NewLoop returns a loop whose clock reads zero at origin (which may be in
// the future: worker processes share the parent's schedule).
func NewLoop(origin time.Time) *Loop {
	return &Loop{origin: origin, wake: make(chan struct{}, 1)}
}

// Origin returns the wall-clock time of the loop's zero.
func (l *Loop) Origin() time.Time { return l.origin }

// Now implements Runtime; it may be called from any goroutine.
func (l *Loop) Now() time.Duration { return time.Since(l.origin) }

// After implements Runtime; it must be called on the loop.
func (l *Loop) After(d time.Duration, fn func()) {
	l.seq++
	heap.Push(&l.timers, &timer{at: l.Now() + max(d, 0), seq: l.seq, fn: fn})
}

// Post runs fn on the loop as soon as it can; it may be called from any
// goroutine, before or during Run.
func (l *Loop) Post(fn func()) {
	l.mu.Lock()
	l.posted = append(l.posted, fn)
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// Run runs the loop until done reports true or ctx is done (both checked
// between events); it returns ctx.Err() in the second case.
func (l *Loop) Run(ctx context.Context, done func() bool) error {
	idle := time.NewTimer(time.Hour)
	defer idle.Stop()
	for !done() {
		if err := ctx.Err(); err != nil {
			return err
		}
		l.mu.Lock()
		posted := l.posted
		l.posted = nil
		l.mu.Unlock()
		for _, fn := range posted {
			fn()
		}
		ran := len(posted) > 0
		for len(l.timers) > 0 && l.timers[0].at <= l.Now() {
			heap.Pop(&l.timers).(*timer).fn()
			ran = true
		}
		if ran {
			continue
		}
		wait := time.Hour
		if len(l.timers) > 0 {
			wait = l.timers[0].at - l.Now()
		}
		idle.Reset(wait)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-l.wake:
		case <-idle.C:
		}
		idle.Stop()
	}
	return nil
}

// Sleep waits d in real time, or until ctx ends, whose error it then
// returns: the pause of a campaign or a run between its steps on a live
// cluster.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

type timer struct {
	at  time.Duration
	seq uint64
	fn  func()
}

// timerHeap orders timers by (at, seq).
type timerHeap []*timer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}
func (h timerHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *timerHeap) Push(x any)   { *h = append(*h, x.(*timer)) }
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return t
}
