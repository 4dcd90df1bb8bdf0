package main

// TestFirstHour runs, through the built binary, what an operator does in
// the first hour with a local cluster, and the exit code of each outcome
// (see exit.go): fixed ports that survive a restart, the hints and
// defaults, values from files and stdin, long session lines, and the
// store's answers that exit 1, 2 and 3. See e2e_test.go for the helpers;
// every wait is bounded by the commands' own deadlines.

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cosla/cosla/internal/runtime/cluster"
	"github.com/cosla/cosla/internal/runtime/topology"
)

// freePortBase returns a port base whose ports the sites of a two-site
// cluster may take, below Linux's ephemeral range.
func freePortBase(t *testing.T) int {
	t.Helper()
	topo := topology.Topology{Sites: []topology.Site{{Name: "england", Replicas: []string{"r1"}}, {Name: "us", Replicas: []string{"r1"}}}}
	for range 100 {
		if base := 10000 + 4*rand.IntN(5000); cluster.CheckPorts(topo, base) == nil {
			return base
		}
	}
	t.Fatal("no four free ports in a row found")
	return 0
}

func TestFirstHour(t *testing.T) {
	t.Parallel()
	coslaBinary(t)
	base := freePortBase(t)
	upArgs := []string{"--tablets", "2", "--starts", "m", "--pull-interval", "1s", "--port-base", strconv.Itoa(base)}
	dir, up := startCluster(t, twoSites, upArgs...)
	const limit = time.Minute

	// The hint names the directory, and the sites listen on the ports
	// asked for, which cluster status shows.
	if want := fmt.Sprintf("try: cosla put --dir %s cart book; cosla get --dir %s --site england", dir, dir); !strings.Contains(up.stdout, want) {
		t.Errorf("cluster up --dir: want %q in its output; %s", want, up)
	}
	for _, port := range []int{base, base + 1, base + 2, base + 3} {
		if !strings.Contains(up.stdout, fmt.Sprintf("127.0.0.1:%d", port)) {
			t.Errorf("cluster up --port-base %d: port %d not in its output; %s", base, port, up)
		}
	}
	wantHTTP := func(r e2eResult) {
		t.Helper()
		wantExit(t, r, 0)
		for site, port := range map[string]int{"england": base + 1, "us": base + 3} {
			if !strings.Contains(r.stdout, fmt.Sprintf("127.0.0.1:%d", port)) {
				t.Errorf("cluster status: %s's HTTP address 127.0.0.1:%d missing; %s", site, port, r)
			}
		}
	}
	wantHTTP(coslaCmd(t, limit, "cluster", "status", "--dir", dir))
	other := t.TempDir()
	t.Cleanup(func() {
		if _, running := cluster.Running(other); running {
			coslaCmd(t, limit, "cluster", "down", "--dir", other)
		}
	})
	r := coslaCmd(t, limit, append([]string{"cluster", "up", "--dir", other, "--topology", filepath.Join(dir, "topology.yaml")}, upArgs...)...)
	if want := fmt.Sprintf("port %d, for site england's transport, is taken", base); r.code != exitUsage || !strings.Contains(r.stderr, want) {
		t.Errorf("a second cluster on the same ports: want exit %d saying %q; %s", exitUsage, want, r)
	}

	// COSLA_DIR instead of --dir; flags after the operands.
	wantExit(t, runCommand(t, limit, []string{"env", dirEnv + "=" + dir}, []string{"put", "k", "v"}), 0)
	wantExit(t, coslaCmd(t, limit, "put", "k2", "v2", "--dir", dir, "--site", "us"), 0)

	// Values from a file and from stdin.
	file := filepath.Join(t.TempDir(), "value")
	if err := os.WriteFile(file, []byte("two words\nand a line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	wantExit(t, coslaCmd(t, limit, "put", "--dir", dir, "--value-file", file, "file"), 0)
	wantValue(t, dir, "file", "two words\nand a line\n")
	stdin := []string{"sh", "-c", `printf 'from stdin' | "$0" "$@"`}
	wantExit(t, runCommand(t, limit, stdin, []string{"put", "--dir", dir, "--value-file", "-", "stdin"}), 0)
	wantValue(t, dir, "stdin", "from stdin")

	// A session script with a line longer than bufio.Scanner's 64 KiB.
	long := strings.Repeat("v", 100<<10)
	script := filepath.Join(t.TempDir(), "long.txt")
	if err := os.WriteFile(script, []byte("put long "+long+"\nget long strong 5s 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = coslaCmd(t, limit, "session", "run", "--dir", dir, script)
	wantExit(t, r, 0)
	if !strings.Contains(r.stdout, `long = "`+long+`"`) {
		t.Errorf("session run of a 100 KiB line: want the value read back; exit %d, stderr %s", r.code, r.stderr)
	}

	// Exit 2: bad input, refused before the operation is sent.
	r = coslaCmd(t, limit, "put", "--dir", dir, strings.Repeat("a", 5000), "v")
	if r.code != exitUsage || !strings.Contains(r.stderr, "key of 5000 bytes, limit 4096") || len(r.stderr) > 300 {
		t.Errorf("put of a 5000-byte key: want exit %d saying its size without repeating it; %s", exitUsage, r)
	}
	r = coslaCmd(t, limit, "rtw", "--dir", dir, "--expect-absent", "a", "z", "v")
	if r.code != exitUsage || !strings.Contains(r.stderr, "lie in different tablets") {
		t.Errorf("rtw across tablets: want exit %d; %s", exitUsage, r)
	}
	r = coslaCmd(t, limit, "put", "--dir", dir, "--write-level", "3", "k", "v")
	if r.code != exitUsage || !strings.Contains(r.stderr, "write level 3") {
		t.Errorf("put --write-level 3 on two replicas: want exit %d; %s", exitUsage, r)
	}

	// Exit 3: answers that do not meet what was asked.
	wantExit(t, coslaCmd(t, limit, "get", "--dir", dir, "--site", "us", "--sla", "strong 1ms 1", "k"), exitUnmet)
	r = coslaCmd(t, limit, "rtw", "--dir", dir, "--expect-absent", "k", "k", "v")
	if r.code != exitUnmet || !strings.Contains(r.stderr, `test k absent failed`) {
		t.Errorf("rtw whose test fails: want exit %d; %s", exitUnmet, r)
	}

	// Exit 1: the network fails. Cut off from the primary, a Put from
	// the U.S. gets no answer within its --timeout.
	wantExit(t, coslaCmd(t, limit, "cluster", "link", "set", "--dir", dir, "england", "us", "--down"), 0)
	r = coslaCmd(t, limit, "put", "--dir", dir, "--site", "us", "--timeout", "3s", "k", "v")
	t.Logf("put across a partition: %s", r)
	wantExit(t, r, exitFailed)
	wantExit(t, coslaCmd(t, limit, "cluster", "link", "set", "--dir", dir, "england", "us", "--up"), 0)

	// The same ports after a restart; and with the cluster down, exit 1.
	wantExit(t, coslaCmd(t, limit, "cluster", "down", "--dir", dir), 0)
	wantExit(t, coslaCmd(t, 2*time.Minute, append([]string{"cluster", "up", "--dir", dir, "--topology", filepath.Join(dir, "topology.yaml")}, upArgs...)...), 0)
	wantHTTP(coslaCmd(t, limit, "cluster", "status", "--dir", dir))
	wantExit(t, coslaCmd(t, limit, "cluster", "down", "--dir", dir), 0)
	r = coslaCmd(t, limit, "get", "--dir", dir, "k")
	if r.code != exitFailed || !strings.Contains(r.stderr, "no cluster running in "+dir) {
		t.Errorf("get with the cluster down: want exit %d; %s", exitFailed, r)
	}
}

// wantValue reads key at the primary and fails the test unless it holds
// value.
func wantValue(t *testing.T, dir, key, value string) {
	t.Helper()
	r := coslaCmd(t, time.Minute, "get", "--dir", dir, "--sla", "strong 5s 1", "--json", key)
	wantExit(t, r, 0)
	var got struct{ Value string }
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || got.Value != value {
		t.Errorf("get %s: %q (%v), want %q; %s", key, got.Value, err, value, r)
	}
}
