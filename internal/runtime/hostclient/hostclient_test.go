package hostclient

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/cosla/cosla/internal/core/clientcore"
	"github.com/cosla/cosla/internal/core/wire"
)

// TestReplicas: the core monitors the storage nodes, not the sites'
// coordinators and caches of causal tables, nor the configuration
// members, which it knows apart.
func TestReplicas(t *testing.T) {
	peers := map[wire.NodeID]string{"b/r1": "x", "a/cc": "x", "a/r1": "x", "a/cache": "x", "b/cfg": "x", "a/cfg": "x"}
	if got, want := Replicas(peers), []wire.NodeID{"a/r1", "b/r1"}; !slices.Equal(got, want) {
		t.Errorf("Replicas = %v, want %v", got, want)
	}
	if got, want := Members(peers), []wire.NodeID{"a/cfg", "b/cfg"}; !slices.Equal(got, want) {
		t.Errorf("Members = %v, want %v", got, want)
	}
}

// TestClose: a call runs on the core until Close; after it every call,
// and a second Close, fails with ErrClosed.
func TestClose(t *testing.T) {
	c, err := Open(Options{ID: "a/c1", Peers: map[wire.NodeID]string{"a/r1": "127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	ran := false
	if err := c.Do(func(*clientcore.Client) { ran = true }); err != nil || !ran {
		t.Fatalf("Do before Close: ran %v, err %v", ran, err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := c.Close(); !errors.Is(err, ErrClosed) {
		t.Errorf("second Close: %v, want ErrClosed", err)
	}
	_, err = Call(context.Background(), c, func(_ *clientcore.Client, ch chan<- int) { ch <- 1 })
	if !errors.Is(err, ErrClosed) {
		t.Errorf("Call after Close: %v, want ErrClosed", err)
	}
	if err := c.Post(func(*clientcore.Client) {}); !errors.Is(err, ErrClosed) {
		t.Errorf("Post after Close: %v, want ErrClosed", err)
	}
}
