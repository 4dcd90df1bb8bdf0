package main

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestTabletChangeFlags checks the argument checking of cluster failover
// and cluster replica add|remove without a cluster: bad input exits 2
// with a message naming the flag; input that passes the checks reaches
// the lookup of the cluster, which finds none: exit 1.
func TestTabletChangeFlags(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"cluster", "failover", "--table", "t"}, exitUsage, "--to is required"},
		{[]string{"cluster", "failover", "--table", "t", "--to", ""}, exitUsage, `--to "": want a site`},
		{[]string{"cluster", "failover", "--to", "us", "--tablet", "-2"}, exitUsage, "--tablet -2"},
		{[]string{"cluster", "failover", "--to", "us", "--timeout", "0s"}, exitUsage, "--timeout 0s"},
		{[]string{"cluster", "failover", "--to", "us", "extra"}, exitUsage, `unexpected argument "extra"`},
		{[]string{"cluster", "replica", "add", "--table", "t"}, exitUsage, "--node is required"},
		{[]string{"cluster", "replica", "add", "--node", "india/r1/x"}, exitUsage, `--node "india/r1/x"`},
		{[]string{"cluster", "replica", "remove", "--node", "/r1"}, exitUsage, `--node "/r1"`},
		{[]string{"cluster", "failover", "--table", "t", "--to", "us"}, exitFailed, "no cluster running"},
		{[]string{"cluster", "replica", "remove", "--table", "t", "--tablet", "1", "--node", "india/r1"}, exitFailed, "no cluster running"},
	} {
		args := append(tc.args, "--dir", dir)
		code, _, stderr := runCosla(t, args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("cosla %s: exit %d, want %d with %q in stderr:\n%s", strings.Join(args, " "), code, tc.code, tc.want, stderr)
		}
	}
}

// threeSites is a topology of three storage sites, each of them a voter
// of the configuration service.
const threeSites = `name: three
sites:
  - {name: england, replicas: [r1], clients: [c1]}
  - {name: us, replicas: [r1], clients: [c1]}
  - {name: india, replicas: [r1], clients: [c1]}
links:
  - {a: us, b: england, rtt: 20ms}
  - {a: india, b: england, rtt: 20ms}
  - {a: india, b: us, rtt: 20ms}
local_rtt: 1ms
`

// TestReplicaAddRemove adds a spare storage node (india/r1, where the
// table has no replica) to a tablet on a real cluster, reads there what
// was written before, and removes it, through the command line.
func TestReplicaAddRemove(t *testing.T) {
	t.Parallel()
	dir := clusterUp(t, threeSites, "--sites", "england,us", "--pull-interval", "200ms")
	const limit = time.Minute
	wantExit(t, coslaCmd(t, limit, "put", "--dir", dir, "k", "before"), 0)

	r := coslaCmd(t, limit, "cluster", "replica", "add", "--dir", dir, "--table", "usertable", "--node", "india/r1")
	wantExit(t, r, 0)
	if want := "table usertable tablet 0: primary england/r1, secondaries us/r1, india/r1, epoch 1\n"; r.stdout != want {
		t.Fatalf("replica add: want %q; %s", want, r)
	}
	// A bounded read at india/r1 waits until it holds what the primary
	// had ordered: the Put made before india/r1 was a replica.
	r = coslaCmd(t, limit, "get", "--dir", dir, "--site", "india", "--bound", "unbounded", "--json", "k")
	wantExit(t, r, 0)
	var got struct {
		Value  string `json:"value"`
		Result struct {
			Node string `json:"node"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || got.Value != "before" || got.Result.Node != "india/r1" {
		t.Fatalf("get --bound unbounded at india after replica add: want before from india/r1 (%v); %s", err, r)
	}
	r = coslaCmd(t, limit, "cluster", "status", "--dir", dir)
	wantExit(t, r, 0)
	if !regexp.MustCompile(`india/r1 +usertable +0 +secondary`).MatchString(r.stdout) {
		t.Fatalf("cluster status after replica add: want india/r1 a secondary of usertable; %s", r)
	}

	r = coslaCmd(t, limit, "cluster", "replica", "remove", "--dir", dir, "--table", "usertable", "--node", "india/r1")
	wantExit(t, r, 0)
	if want := "table usertable tablet 0: primary england/r1, secondaries us/r1, epoch 1\n"; r.stdout != want {
		t.Fatalf("replica remove: want %q; %s", want, r)
	}
	r = coslaCmd(t, limit, "cluster", "status", "--dir", dir)
	wantExit(t, r, 0)
	if strings.Contains(r.stdout, "india/r1") {
		t.Fatalf("cluster status after replica remove still lists india/r1; %s", r)
	}
}

// TestReconfigCluster runs a day of moving load on a local cluster with
// the planner on (testdata/reconfig-cluster.yaml): the primary moves to
// India once India's clients work, and not before.
func TestReconfigCluster(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	r := coslaCmd(t, 3*time.Minute, "experiment", "run", filepath.Join("testdata", "reconfig-cluster.yaml"),
		"--mode", "cluster", "--out", out)
	wantExit(t, r, 0)
	if !strings.Contains(r.stderr, "active hours: a day lasts 21.6s of real time here") {
		t.Errorf("the run does not say how long its day lasts; %s", r)
	}
	res, _ := readResults(t, out)
	t.Logf("moves: %+v", res.Runs[0].Moves)
	india := false
	for _, m := range res.Runs[0].Moves {
		hour := m.AtS / res.Scale / 3600
		if m.To == "india" && hour < 12 {
			t.Errorf("move %+v at hour %.1f, before India's clients work", m, hour)
		}
		india = india || m.To == "india"
	}
	if !india {
		t.Errorf("no move of the primary to india: %+v; %s", res.Runs[0].Moves, r)
	}
}
