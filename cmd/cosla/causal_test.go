package main

// Tests of causal tables from the command line: `cluster up` with a
// topology that has rings creates a causal table, and put, get and gettx
// run on it through the built binary, as a user would (see e2e_test.go
// for the helpers). No assertion depends on how long anything took.

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// threeRingSites is two rings: {a, b} and {c}.
const threeRingSites = `name: rings
sites:
  - {name: a, replicas: [r1, r2], clients: [c1]}
  - {name: b, replicas: [r1], clients: [c1]}
  - {name: c, replicas: [r1], clients: [c1]}
links:
  - {a: a, b: b, rtt: 20ms}
  - {a: a, b: c, rtt: 60ms}
  - {a: b, b: c, rtt: 60ms}
local_rtt: 1ms
rings: [[a, b], [c]]
`

// TestCausalCommands writes at site a and reads at c until the write is
// stable there, reads a snapshot of two keys, and checks the refusals: a
// strong SLA and a bound on a causal table.
func TestCausalCommands(t *testing.T) {
	t.Parallel()
	dir := clusterUp(t, threeRingSites)
	const limit = time.Minute
	r := coslaCmd(t, limit, "put", "--dir", dir, "--site", "a", "cart", "book")
	wantExit(t, r, 0)
	if !strings.Contains(r.stdout, "put cart: ok, version ") || !strings.Contains(r.stdout, "write buffer at a/cc") {
		t.Fatalf("put on a causal table: want the version and the write buffer; %s", r)
	}
	wantExit(t, coslaCmd(t, limit, "put", "--dir", dir, "--site", "a", "note", "hello"), 0)
	// Read at c until the write is in every ring: each read comes from a
	// ring or c's cache, never from a write buffer (another session's).
	var got struct {
		Value  string `json:"value"`
		Result struct {
			Causal struct {
				Source   string `json:"source"`
				Origin   string `json:"origin"`
				InFlight bool   `json:"in_flight"`
			} `json:"causal"`
		} `json:"result"`
	}
	for range 200 {
		r = coslaCmd(t, limit, "get", "--dir", dir, "--site", "c", "--json", "cart")
		wantExit(t, r, 0)
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
			t.Fatalf("get --json: %v; %s", err, r)
		}
		if got.Result.Causal.Source == "write buffer" {
			t.Fatalf("get at c of a's write: from a write buffer; %s", r)
		}
		if got.Value == "book" && !got.Result.Causal.InFlight {
			break
		}
	}
	if got.Value != "book" || got.Result.Causal.InFlight || got.Result.Causal.Origin != "a/cc" {
		t.Fatalf("get at c: want book written by a/cc, stable; got %+v", got)
	}
	r = coslaCmd(t, limit, "get", "--dir", dir, "--site", "c", "cart")
	wantExit(t, r, 0)
	if !strings.Contains(r.stdout, `cart = "book"`) || !strings.Contains(r.stdout, "stable (in every ring)") {
		t.Fatalf("get at c after the write is stable: %s", r)
	}
	r = coslaCmd(t, limit, "gettx", "--dir", dir, "--site", "b", "cart", "note", "none")
	wantExit(t, r, 0)
	if !strings.Contains(r.stdout, "snapshot from ring ") || !strings.Contains(r.stdout, `cart = "book"`) ||
		!strings.Contains(r.stdout, `note = "hello"`) || !strings.Contains(r.stdout, "none = (not found)") {
		t.Fatalf("gettx cart note none at b: %s", r)
	}
	r = coslaCmd(t, limit, "gettx", "--dir", dir, "--site", "b", "--json", "cart")
	wantExit(t, r, 0)
	var tx struct {
		RTTNS *int64 `json:"rtt_ns"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &tx); err != nil || tx.RTTNS == nil || *tx.RTTNS <= 0 || strings.Contains(r.stdout, "_ms") {
		t.Fatalf("gettx --json: want rtt_ns in integer nanoseconds, no _ms field (%v); %s", err, r)
	}
	r = coslaCmd(t, limit, "get", "--dir", dir, "--site", "b", "--sla", "strong 1s 1", "cart")
	if r.code != 2 || !strings.Contains(r.stderr, "a causal table serves causal, read-my-writes, monotonic and eventual reads") {
		t.Fatalf("a strong get on a causal table: want refused with exit 2; %s", r)
	}
	r = coslaCmd(t, limit, "put", "--dir", dir, "--site", "b", "--bound", "immediate", "cart", "pen")
	if r.code != 2 || !strings.Contains(r.stderr, "no bound") {
		t.Fatalf("a bounded put on a causal table: want refused with exit 2; %s", r)
	}
	r = coslaCmd(t, limit, "get", "--dir", dir, "--site", "b", "--bound", "50ms", "cart")
	if r.code != 2 || !strings.Contains(r.stderr, "no bound") {
		t.Fatalf("a bounded get on a causal table: want refused with exit 2; %s", r)
	}
}
