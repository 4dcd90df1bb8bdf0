package causal

import (
	"testing"
	"time"

	"github.com/cosla/cosla/internal/core/wire"
)

// TestRetransmitWait checks the wait before a request goes again: Resend
// for a node never heard, or whose answers are quick; longer, by the
// answers' mean and deviation, for a node whose answers are slow; never
// past maxRetransmit Resends; each node its own.
func TestRetransmitWait(t *testing.T) {
	r := newRetransmit(time.Second)
	fast, slow, stuck := wire.NodeID("a/s1"), wire.NodeID("b/s1"), wire.NodeID("c/s1")
	if w := r.wait(fast); w != time.Second {
		t.Fatalf("wait for a node never heard: %v, want Resend (1s)", w)
	}
	for range 50 {
		r.answered(fast, 100*time.Millisecond)
		r.answered(slow, 1500*time.Millisecond)
		r.answered(slow, 2500*time.Millisecond)
		r.answered(stuck, time.Minute)
	}
	if w := r.wait(fast); w != time.Second {
		t.Errorf("wait for a node answering in 100ms: %v, want Resend (1s)", w)
	}
	// Mean 2s, deviation about 0.5s: about 4s.
	if w := r.wait(slow); w < 3500*time.Millisecond || w > 4500*time.Millisecond {
		t.Errorf("wait for a node answering in 1.5-2.5s: %v, want about 4s (mean + 4 deviations)", w)
	}
	if w := r.wait(stuck); w != maxRetransmit*time.Second {
		t.Errorf("wait for a node answering in a minute: %v, want the cap, %v", w, maxRetransmit*time.Second)
	}
}

// TestRetransmitBackoff checks that each copy of a request doubles the
// wait for the next, up to maxRetransmit Resends.
func TestRetransmitBackoff(t *testing.T) {
	r := newRetransmit(time.Second)
	node := wire.NodeID("a/s1")
	for sent, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 8 * time.Second, 8 * time.Second} {
		if got := r.backoff(node, uint8(sent)); got != want {
			t.Errorf("after %d copies: wait %v, want %v", sent, got, want)
		}
	}
	for range 50 {
		r.answered(node, 1500*time.Millisecond)
	}
	if w, got := r.wait(node), r.backoff(node, 1); got != min(2*w, maxRetransmit*time.Second) {
		t.Errorf("a node answering in 1.5s: after one copy %v, want twice its wait %v", got, w)
	}
}
