package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSeveralHosts deploys a cluster as the README's "Deploying on several
// hosts" says, on hosts that are network namespaces joined by veth pairs
// to a bridge: `cluster plan` for pileus4's three storage sites, each
// site's start.sh in its own namespace with TLS on, `cluster init` and the
// client commands with --config from a fourth namespace, the client-only
// site china. Each namespace has only its own address; the nodes find one
// another through the planned addresses alone.
func TestSeveralHosts(t *testing.T) {
	t.Parallel()
	bin := coslaBinary(t)
	hosts := []string{"england", "us", "india"}
	nets := newHostNet(t, len(hosts)+1)
	client := nets.hosts[len(hosts)]

	dir := t.TempDir()
	plan := []string{"cluster", "plan", "--dir", dir, "--push", "--pull-interval", "1s"}
	for i, site := range hosts {
		plan = append(plan, "--host", site+"="+nets.hosts[i].addr)
	}
	r := coslaCmd(t, time.Minute, plan...)
	wantExit(t, r, 0)
	t.Logf("%s", r.stdout)
	config := filepath.Join(dir, "client", "client.yaml")

	for i, site := range hosts {
		h := nets.hosts[i]
		cmd := exec.Command("ip", "netns", "exec", h.ns, "env", "COSLA="+bin, filepath.Join(dir, "hosts", site, "start.sh"))
		startSite(t, cmd, site)
		t.Logf("site %s: namespace %s, address %s", site, h.ns, h.addr)
	}
	inClient := func(limit time.Duration, args ...string) e2eResult {
		t.Helper()
		return runCommand(t, limit, []string{"ip", "netns", "exec", client.ns}, args)
	}

	r = inClient(time.Minute, "cluster", "init", "--config", config)
	wantExit(t, r, 0)
	if !strings.Contains(r.stdout, "created table usertable") {
		t.Fatalf("cluster init: %s", r)
	}

	// A Put from china, read back under a strong subSLA: from the primary
	// at england's host.
	wantExit(t, inClient(time.Minute, "put", "--config", config, "--site", "china", "cart", "book"), 0)
	r = inClient(time.Minute, "get", "--config", config, "--site", "china", "--sla", "strong 2s 1; eventual unbounded 0.5", "--json", "cart")
	wantExit(t, r, 0)
	var got struct {
		Value  string `json:"value"`
		Result struct {
			Met    int    `json:"met"`
			SubSLA string `json:"sub_sla"`
			Node   string `json:"node"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("get --json: %v; %s", err, r)
	}
	if got.Value != "book" || got.Result.Met != 0 || got.Result.Node != "england/r1" {
		t.Fatalf("get: value %q, met %d from %s; want book, the strong subSLA 0, from england/r1; %s", got.Value, got.Result.Met, got.Result.Node, r)
	}
	t.Logf("china: put cart=book; get under %q: %q from %s, subSLA met %q", "strong 2s 1; eventual unbounded 0.5", got.Value, got.Result.Node, got.Result.SubSLA)

	// A Put at write level all is at every host when it returns; a Get of
	// all three replicas from india finds it at each.
	wantExit(t, inClient(time.Minute, "put", "--config", config, "--write-level", "all", "everywhere", "yes"), 0)
	r = inClient(time.Minute, "get", "--config", config, "--site", "india", "--sla", "eventual unbounded 1", "--read-level", "all", "--json", "everywhere")
	wantExit(t, r, 0)
	var all struct {
		Value  string `json:"value"`
		Result struct {
			Met     int `json:"met"`
			Replies []struct {
				Node  string `json:"node"`
				Found bool   `json:"found"`
			} `json:"replies"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &all); err != nil {
		t.Fatalf("get --json: %v; %s", err, r)
	}
	found := 0
	for _, rep := range all.Result.Replies {
		if rep.Found {
			found++
		}
	}
	if all.Value != "yes" || all.Result.Met != 0 || found != len(hosts) {
		t.Fatalf("get at read level all: value %q, met %d, found at %d of %d replicas; %s", all.Value, all.Result.Met, found, len(hosts), r)
	}
	t.Logf("india: get at read level all: %q, found at %d of %d replicas, subSLA met", all.Value, found, len(hosts))

	// Load: YCSB workload A from china, 4 clients.
	r = inClient(3*time.Minute, "bench", "--config", config, "--site", "china", "--workload", "a", "--records", "200",
		"--operations", "400", "--clients", "4", "--duration", "2m", "--sla", "strong 2s 1; eventual unbounded 0.5", "--json")
	wantExit(t, r, 0)
	var res struct {
		Run struct {
			Operations uint64 `json:"operations"`
			Errors     uint64 `json:"errors"`
		} `json:"run"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("bench --json: %v; %s", err, r)
	}
	if res.Run.Operations != 400 || res.Run.Errors != 0 {
		t.Fatalf("bench: %d operations, %d errors; want 400 and 0; %s", res.Run.Operations, res.Run.Errors, r)
	}
	t.Logf("china: bench workload a, 4 clients: %d operations, %d errors", res.Run.Operations, res.Run.Errors)

	// The consistency benchmark, its writer at england and its reader at
	// india in worker processes that read the same config.
	out := t.TempDir()
	r = inClient(3*time.Minute, "measure", "run", "--target", "cosla", "--config", config, "--writer-site", "england", "--reader-site", "india",
		"--placement", "processes", "--duration", "3s", "--write-every", "500ms", "--read-hz", "20", "--out", out, "--json")
	wantExit(t, r, 0)
	var summary map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &summary); err != nil {
		t.Fatalf("measure run --json: %v; %s", err, r)
	}
	reads := 0.0
	for k, v := range summary {
		if n, ok := v.(float64); ok && strings.HasPrefix(k, "reads_") {
			reads += n
		}
	}
	if reads == 0 {
		t.Fatalf("measure run: no reads analysed; %s", r)
	}
	t.Logf("measure run, the writer at england and the reader at india in worker processes: %.0f reads analysed, read-your-writes violations %v, monotonic-read violations %v",
		reads, summary["ryw_violation_fraction"], summary["mr_violation_fraction"])
}

// startSite starts a site's serve process and waits until it says it
// listens; the test's end stops it with SIGTERM and checks that it exits
// cleanly.
func startSite(t *testing.T, cmd *exec.Cmd, site string) {
	t.Helper()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	cmd.Stderr = &log
	if err := cmd.Start(); err != nil {
		t.Fatalf("site %s: %v", site, err)
	}
	// exited closes once the process has exited, with its error in
	// waitErr.
	var waitErr error
	exited := make(chan struct{})
	listening := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "listening on") {
				close(listening)
				break
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		waitErr = cmd.Wait()
		close(exited)
	}()
	// A site that neither listens nor exits, or ignores SIGTERM, is left
	// to go test's -timeout, which names the test stuck here.
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-exited
		if waitErr != nil {
			t.Errorf("site %s exited: %v\n%s", site, waitErr, log.String())
		}
	})
	select {
	case <-listening:
	case <-exited:
		t.Fatalf("site %s exited at start: %v\n%s", site, waitErr, log.String())
	}
}

// hostNet is a network of hosts made of network namespaces, each joined
// by a veth pair to a bridge in a namespace of its own, on 10.213.0.0/24.
// It is the test's own and removed at its end.
type hostNet struct{ hosts []netHost }

type netHost struct{ ns, addr string }

// newHostNet makes n hosts, or skips the test where this process may not
// make namespaces (not root, or a kernel without them).
func newHostNet(t *testing.T, n int) *hostNet {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("several hosts: network namespaces need root; run the test as root")
	}
	prefix := fmt.Sprintf("cosla%d", os.Getpid())
	bridge := prefix + "-sw"
	var made []string
	t.Cleanup(func() {
		for _, ns := range made {
			if out, err := exec.Command("ip", "netns", "del", ns).CombinedOutput(); err != nil {
				t.Errorf("ip netns del %s: %v: %s", ns, err, out)
			}
		}
	})
	ip := func(args ...string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	if err := ip("netns", "add", bridge); err != nil {
		t.Skipf("several hosts: this kernel or sandbox does not allow network namespaces: %v", err)
	}
	made = append(made, bridge)
	steps := [][]string{{"-n", bridge, "link", "add", "br0", "type", "bridge"}, {"-n", bridge, "link", "set", "br0", "up"}}
	hn := &hostNet{}
	for i := range n {
		ns := fmt.Sprintf("%s-h%d", prefix, i+1)
		if err := ip("netns", "add", ns); err != nil {
			t.Fatal(err)
		}
		made = append(made, ns)
		h := netHost{ns: ns, addr: fmt.Sprintf("10.213.0.%d", i+1)}
		port := fmt.Sprintf("p%d", i+1)
		steps = append(steps,
			[]string{"link", "add", "eth0", "netns", ns, "type", "veth", "peer", "name", port, "netns", bridge},
			[]string{"-n", bridge, "link", "set", port, "master", "br0", "up"},
			[]string{"-n", ns, "addr", "add", h.addr + "/24", "dev", "eth0"},
			[]string{"-n", ns, "link", "set", "eth0", "up"},
			[]string{"-n", ns, "link", "set", "lo", "up"})
		hn.hosts = append(hn.hosts, h)
	}
	for _, s := range steps {
		if err := ip(s...); err != nil {
			t.Skipf("several hosts: this kernel or sandbox does not allow veth pairs and bridges in namespaces: %v", err)
		}
	}
	return hn
}
