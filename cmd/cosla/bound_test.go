package main

// Tests of --bound on put and get and of `cosla rtw`: the command lines
// they refuse, in process, and the commands run through the built binary
// against a two-site local cluster, as a user would (see e2e_test.go for
// the helpers). Every wait is bounded by the commands' own deadlines; no
// assertion depends on how long anything took.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cosla/cosla"
	"github.com/cosla/cosla/internal/runtime/cluster"
)

// TestBoundFlagsRejected checks the usage errors of --bound and rtw's
// operands: each exits 2 before any cluster is looked for, with a message
// that names the fix.
func TestBoundFlagsRejected(t *testing.T) {
	dir := t.TempDir() // no cluster: a command that got past its flags would fail otherwise
	for _, tc := range []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"put zero", []string{"put", "--dir", dir, "--bound", "0", "k", "v"}, "--bound immediate"},
		{"get zero seconds", []string{"get", "--dir", dir, "--bound", "0s", "k"}, "--bound immediate"},
		{"rtw zero", []string{"rtw", "--dir", dir, "--bound", "0ms", "--expect-absent", "t", "k", "v"}, "--bound immediate"},
		{"negative", []string{"put", "--dir", dir, "--bound", "-5ms", "k", "v"}, "must be positive"},
		{"not a bound", []string{"get", "--dir", dir, "--bound", "soon", "k"}, "want immediate, unbounded or a duration"},
		{"put with a write level", []string{"put", "--dir", dir, "--bound", "50ms", "--write-level", "all", "k", "v"}, "nearest replica alone"},
		{"get with a read level", []string{"get", "--dir", dir, "--bound", "immediate", "--read-level", "quorum", "k"}, "nearest replica alone"},
		{"get with a strategy", []string{"get", "--dir", dir, "--bound", "unbounded", "--strategy", "primary", "k"}, "not with --strategy"},
		{"rtw three operands", []string{"rtw", "--dir", dir, "t", "k", "v"}, "want TESTKEY EXPECT WRITEKEY VALUE"},
		{"rtw absent and four operands", []string{"rtw", "--dir", dir, "--expect-absent", "t", "e", "k", "v"}, "want TESTKEY WRITEKEY VALUE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCosla(t, tc.args...)
			if code != exitUsage || !strings.Contains(stderr, tc.want) {
				t.Errorf("cosla %s: exit %d, want %d with %q in stderr:\n%s", strings.Join(tc.args, " "), code, exitUsage, tc.want, stderr)
			}
		})
	}
}

// twoSites is England (the primary) and the U.S. (a secondary, and a
// client), 40 ms apart with 1 ms within a site: a U.S. client's nearest
// replica is the U.S. one, which takes its bounded operations.
const twoSites = `name: two
sites:
  - {name: england, replicas: [r1], clients: [c1]}
  - {name: us, replicas: [r1], clients: [c1]}
links:
  - {a: us, b: england, rtt: 40ms}
local_rtt: 1ms
`

// clusterUp starts a local cluster of the topology with `cluster up` and
// stops it at the end of the test (killing what is left by PID if
// `cluster down` fails). It returns the cluster's directory.
func clusterUp(t *testing.T, topology string, args ...string) string {
	t.Helper()
	dir, _ := startCluster(t, topology, args...)
	return dir
}

// startCluster is clusterUp, returning cluster up's result too.
func startCluster(t *testing.T, topology string, args ...string) (string, e2eResult) {
	t.Helper()
	coslaBinary(t)
	dir := t.TempDir()
	topo := filepath.Join(dir, "topology.yaml")
	if err := os.WriteFile(topo, []byte(topology), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		in, infoErr := cluster.ReadInfo(dir)
		r := coslaCmd(t, 90*time.Second, "cluster", "down", "--dir", dir)
		if r.code == 0 || infoErr != nil {
			return
		}
		t.Logf("cleanup: cluster down failed; killing the processes by PID; %s", r)
		for _, pid := range append([]int{in.PID}, sitePIDs(in)...) {
			if pid > 0 && syscall.Kill(pid, 0) == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	r := coslaCmd(t, 2*time.Minute, append([]string{"cluster", "up", "--dir", dir, "--topology", topo, "--fresh"}, args...)...)
	wantExit(t, r, 0)
	return dir, r
}

// boundedWrite is the JSON that put --bound and rtw print.
type boundedWrite struct {
	Op      string   `json:"op"`
	Bound   string   `json:"bound"`
	Stage   string   `json:"stage"`
	WriteID *uint64  `json:"write_id"`
	Node    string   `json:"node"`
	Holders []string `json:"holders"`
	TS      string   `json:"ts"`
	Test    string   `json:"test"`
	// Durations are integer nanoseconds, as in the public Result.
	LatencyNS *int64 `json:"latency_ns"`
	RTTNS     *int64 `json:"rtt_ns"`
}

func decodeWrite(t *testing.T, r e2eResult) boundedWrite {
	t.Helper()
	var w boundedWrite
	if err := json.Unmarshal([]byte(r.stdout), &w); err != nil {
		t.Fatalf("--json: %v; %s", err, r)
	}
	if w.LatencyNS == nil || *w.LatencyNS <= 0 || w.RTTNS == nil || *w.RTTNS <= 0 || strings.Contains(r.stdout, "_ms") {
		t.Fatalf("--json: want latency_ns and rtt_ns in integer nanoseconds, no _ms field; %s", r)
	}
	return w
}

// TestWriteFieldsNanoseconds checks that a write's JSON gives its round
// trip as rtt_ns in integer nanoseconds, the public Result's convention.
func TestWriteFieldsNanoseconds(t *testing.T) {
	out := map[string]any{"op": "put", "latency_ns": 2500 * time.Microsecond}
	addWriteFields(out, cosla.WriteResult{Node: "us/r1", RTT: 1500 * time.Microsecond, Stage: cosla.Transmitted, WriteID: 3}, cosla.Immediate)
	js, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"rtt_ns":1500000`, `"latency_ns":2500000`} {
		if !strings.Contains(string(js), want) {
			t.Errorf("write JSON %s: want %s", js, want)
		}
	}
	if strings.Contains(string(js), "_ms") {
		t.Errorf("write JSON %s: a duration in milliseconds", js)
	}
}

// TestBoundCommands runs a staged write with --bound immediate at the
// U.S. replica, a bounded read there that must see it, and read-test-
// writes whose tests hold and then fail, on a two-site cluster.
func TestBoundCommands(t *testing.T) {
	t.Parallel()
	dir := clusterUp(t, twoSites, "--pull-interval", "1s")
	const limit = time.Minute

	// Immediate: the U.S. replica answers once the write is durable in
	// its staging space, before the primary has ordered it.
	r := coslaCmd(t, limit, "put", "--dir", dir, "--site", "us", "--bound", "immediate", "--json", "cart", "book")
	wantExit(t, r, 0)
	w := decodeWrite(t, r)
	if w.Bound != "immediate" || w.Node != "us/r1" || !slices.Contains([]string{"received", "transmitted"}, w.Stage) ||
		w.WriteID == nil || *w.WriteID == 0 || w.TS != "" || w.Holders == nil {
		t.Fatalf("put --bound immediate from us: want a write received or transmitted by us/r1, with a write ID, holders and no ts; %s", r)
	}
	// Unbounded: the U.S. replica waits until the primary has ordered the
	// staged writes it holds, and has them, before it reads.
	r = coslaCmd(t, limit, "get", "--dir", dir, "--site", "us", "--bound", "unbounded", "cart")
	wantExit(t, r, 0)
	if !strings.Contains(r.stdout, `cart = "book"`) || !strings.Contains(r.stdout, "  bound unbounded: ") {
		t.Fatalf("get --bound unbounded from us after the staged put: want cart = \"book\" and the bound's line; %s", r)
	}
	r = coslaCmd(t, limit, "get", "--dir", dir, "--site", "us", "--bound", "50ms", "--json", "cart")
	wantExit(t, r, 0)
	var got struct {
		Value  string `json:"value"`
		Result struct {
			Bound string `json:"bound"`
			Node  string `json:"node"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || got.Value != "book" || got.Result.Bound != "50ms" || got.Result.Node != "us/r1" {
		t.Fatalf("get --bound 50ms --json from us: want book from us/r1 with bound 50ms (%v); %s", err, r)
	}
	// A session script goes on after a Get that met no subSLA, reports
	// that line alone, and exits 3.
	r = coslaCmd(t, limit, "session", "run", "--dir", dir, "--site", "us", filepath.Join("testdata", "session-unmet.txt"))
	wantExit(t, r, exitUnmet)
	if !strings.Contains(r.stderr, "line 2: ") || strings.Contains(r.stderr, "line 3: ") {
		t.Fatalf("session run of an unmet get then a sleep: want line 2 reported, not the sleep's line 3; %s", r)
	}
	r = coslaCmd(t, limit, "put", "--dir", dir, "--bound", "0", "cart", "pen")
	if r.code != exitUsage || !strings.Contains(r.stderr, "--bound immediate") {
		t.Fatalf("put --bound 0: want exit %d naming --bound immediate; %s", exitUsage, r)
	}

	// Read-test-write at the primary: the lock is free, then taken.
	r = coslaCmd(t, limit, "rtw", "--dir", dir, "--site", "us", "--expect-absent", "lock", "lock", "me")
	wantExit(t, r, 0)
	if !strings.HasPrefix(r.stdout, `test lock absent: held; wrote lock = "me"`) {
		t.Fatalf("rtw --expect-absent on a free lock: want the test held; %s", r)
	}
	r = coslaCmd(t, limit, "rtw", "--dir", dir, "--site", "us", "--expect-absent", "lock", "lock", "you")
	wantExit(t, r, exitUnmet)
	if !strings.HasPrefix(r.stdout, "test lock absent: failed; lock not written") || !strings.Contains(r.stderr, "failed") {
		t.Fatalf("rtw --expect-absent on a taken lock: want the test failed; %s", r)
	}
	// Staged at the U.S. replica with an unbounded bound: the answer waits
	// for the primary's outcome, and for every replica when it held.
	r = coslaCmd(t, limit, "rtw", "--dir", dir, "--site", "us", "--bound", "unbounded", "--json", "lock", "you", "lock", "them")
	wantExit(t, r, exitUnmet)
	if w := decodeWrite(t, r); w.Op != "rtw" || w.Test != "failed" || w.Stage != "coordinated" || w.TS != "" || w.Node != "us/r1" {
		t.Fatalf("rtw --bound unbounded of a test that fails: want failed, coordinated, no ts, through us/r1; %s", r)
	}
	r = coslaCmd(t, limit, "rtw", "--dir", dir, "--site", "us", "--bound", "unbounded", "--json", "lock", "me", "lock", "you")
	wantExit(t, r, 0)
	if w := decodeWrite(t, r); w.Test != "held" || w.Stage != "executed" || w.TS == "" || len(w.Holders) != 2 {
		t.Fatalf("rtw --bound unbounded of a test that holds: want held, executed at both replicas, with a ts; %s", r)
	}
	r = coslaCmd(t, limit, "get", "--dir", dir, "--site", "england", "--sla", "strong 2s 1", "lock")
	wantExit(t, r, 0)
	if !strings.Contains(r.stdout, `lock = "you"`) {
		t.Fatalf("strong get of lock after the read-test-writes: want \"you\", written by the one whose test held last; %s", r)
	}

	// A YCSB run with every Put and Get bounded. The bound leaves room for
	// a machine busy with the other tests: at 200 ms, 2 of 100 operations
	// once failed while go test ./... ran every package on 2 cores.
	r = coslaCmd(t, limit, "bench", "--dir", dir, "--site", "us", "--bound", "1s",
		"--workload", "a", "--records", "20", "--operations", "100", "--clients", "2", "--json")
	wantExit(t, r, 0)
	var res struct {
		Read, Write string
		Load        struct{ Operations, Errors int }
		Run         struct {
			Operations, Errors int
			Stop               string
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("bench --json: %v; %s", err, r)
	}
	if res.Load.Operations != 20 || res.Run.Operations != 100 || res.Load.Errors+res.Run.Errors != 0 || res.Run.Stop != "complete" ||
		!strings.HasSuffix(res.Read, ", bound 1s") || !strings.HasSuffix(res.Write, ", bound 1s") {
		t.Fatalf("bench --bound 1s: %+v; want 20 loads and 100 operations without error, reads and writes bound 1s", res)
	}
	wantExit(t, coslaCmd(t, limit, "bench", "--dir", dir, "--bound", "50ms", "--strategy", "closest"), exitUsage)
}
