package main

// End-to-end tests: they build the cosla binary and drive it as a user
// would, on loopback: `cluster up`, `put`, `get`, `link set`, `session run`
// and `cluster down` against a pileus4 cluster, and `serve` processes
// SIGKILLed under load to show that no acknowledged Put is lost.
//
// `go test -short` skips them. Every process they start is killed in
// t.Cleanup, every wait is bounded, and no assertion depends on wall-clock
// time.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cosla/cosla"
	"github.com/cosla/cosla/internal/runtime/cluster"
	"github.com/cosla/cosla/internal/runtime/nettest"
	"github.com/cosla/cosla/keyfmt"
	"github.com/cosla/cosla/sla"
)

var e2eSeedFlag = flag.Uint64("e2e.seed", 0, "TestKillNineLosesNoAcknowledgedPut: seed of the kill points (0: from the clock)")

// e2eBin is the binary the e2e tests run. It is built at most once: by
// TestMain beside the first tests when every test runs, else by the
// first test that needs it, so that a -run of other tests (and -short
// runs) do not pay for the build.
var e2eBin struct {
	once sync.Once
	dir  string // made by TestMain, removed at the end
	path string
	err  error
}

// e2eParallel is how many tests of this package run at once unless
// -parallel is given (whose default is GOMAXPROCS, two on a small CI
// machine): the end-to-end tests mostly wait, on processes starting, on
// the emulated WAN's round trips and on timeouts, not on the CPU.
const e2eParallel = 4

func TestMain(m *testing.M) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		if err := flag.Set("test.parallel", strconv.Itoa(e2eParallel)); err != nil {
			fmt.Fprintln(os.Stderr, "e2e: -parallel:", err)
			os.Exit(1)
		}
	}
	dir, err := os.MkdirTemp("", "cosla-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: temporary directory:", err)
		os.Exit(1)
	}
	e2eBin.dir = dir
	if !testing.Short() && flag.Lookup("test.run").Value.String() == "" {
		go e2eBin.once.Do(buildBinary)
	}
	code := m.Run()
	e2eBin.once.Do(func() {}) // a build under way ends before its directory goes
	os.RemoveAll(dir)
	os.Exit(code)
}

// buildBinary builds the binary into e2eBin.dir with the go on the PATH.
func buildBinary() {
	path := filepath.Join(e2eBin.dir, "cosla")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "build", "-o", path, ".").CombinedOutput()
	if err != nil {
		e2eBin.err = fmt.Errorf("go build -o %s .: %v\n%s", path, err, out)
		return
	}
	e2eBin.path = path
}

// coslaBinary returns the path of the built binary, waiting for its
// build, or skips the test under -short.
func coslaBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("e2e: skipped in -short mode")
	}
	e2eBin.once.Do(buildBinary)
	if e2eBin.err != nil {
		t.Fatal(e2eBin.err)
	}
	return e2eBin.path
}

// e2eResult is one finished command.
type e2eResult struct {
	args           []string
	code           int
	stdout, stderr string
}

func (r e2eResult) String() string {
	return fmt.Sprintf("cosla %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(r.args, " "), r.code, r.stdout, r.stderr)
}

// coslaCmd runs the binary with args, for at most limit, and returns its exit
// status and output. It fails the test if the command cannot run or does
// not finish in time.
func coslaCmd(t *testing.T, limit time.Duration, args ...string) e2eResult {
	t.Helper()
	return runCommand(t, limit, nil, args)
}

// runCommand runs the binary with args, behind the words of prefix (such
// as "ip netns exec NS"), as coslaCmd does.
func runCommand(t *testing.T, limit time.Duration, prefix, args []string) e2eResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	argv := append(slices.Clone(prefix), coslaBinary(t))
	argv = append(argv, args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	r := e2eResult{args: args, stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("cosla %s: not finished within %s\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), limit, r.stdout, r.stderr)
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("cosla %s: %v", strings.Join(args, " "), err)
	}
	return r
}

// wantExit fails the test unless r exited with code.
func wantExit(t *testing.T, r e2eResult, code int) {
	t.Helper()
	if r.code != code {
		t.Fatalf("want exit %d; %s", code, r)
	}
}

// TestClusterCommands runs a pileus4 cluster with `cluster up` and uses it
// only through the command line, as the README shows.
func TestClusterCommands(t *testing.T) {
	t.Parallel()
	coslaBinary(t)
	// The common umask, which leaves files readable by others unless
	// cosla sets their modes: the cluster's must be its owner's only.
	defer syscall.Umask(syscall.Umask(0o022))
	dir := t.TempDir()
	clusterDown := false
	t.Cleanup(func() {
		if clusterDown {
			return
		}
		// Read the PIDs before `cluster down` removes the description: if
		// the orderly shutdown fails, kill what is left by PID.
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

	r := coslaCmd(t, 2*time.Minute, "cluster", "up", "--dir", dir, "--pull-interval", "1s", "--fresh")
	wantExit(t, r, 0)
	for _, site := range []string{"england", "us", "india"} {
		if !strings.Contains(r.stdout, "  "+site+" ") {
			t.Errorf("cluster up does not list site %s:\n%s", site, r.stdout)
		}
	}
	if !strings.Contains(r.stdout, "china") {
		t.Errorf("cluster up does not list the client site china:\n%s", r.stdout)
	}
	// It prints its first site's status page, which answers.
	if in, err := cluster.ReadInfo(dir); err != nil || !strings.Contains(r.stdout, "status page: http://"+in.Sites[0].HTTP+"/\n") || !httpOK("http://"+in.Sites[0].HTTP+"/") {
		t.Errorf("cluster up does not print a status page that answers (%v):\n%s", err, r.stdout)
	}
	// Every connection below is mutual TLS, with the certificates cluster
	// up wrote; the sites' configs name them.
	if !strings.Contains(r.stdout, "mutual TLS: CA and certificates in "+filepath.Join(dir, "tls")) {
		t.Errorf("cluster up does not say it runs with TLS:\n%s", r.stdout)
	}
	if cfg, err := os.ReadFile(filepath.Join(dir, "england", "serve.yaml")); err != nil || !strings.Contains(string(cfg), "node-england.pem") || strings.Contains(string(cfg), "insecure: true") {
		t.Errorf("england's serve config does not name its node certificate (%v):\n%s", err, cfg)
	}

	wantExit(t, coslaCmd(t, time.Minute, "put", "--dir", dir, "k", "v1"), 0)
	checkPrivate(t, dir)

	// Keys are any bytes (issue 25): one that is not UTF-8 and holds a
	// terminal escape is written and read back; text output shows it
	// escaped, JSON in base64.
	const odd, oddText = "\xff\xfe\x80key\x1b[31m", `"\xff\xfe\x80key\x1b[31m"`
	r = coslaCmd(t, time.Minute, "put", "--dir", dir, odd, "v")
	wantExit(t, r, 0)
	if !strings.HasPrefix(r.stdout, "put "+oddText+": ok") || strings.Contains(r.stdout, "\x1b") {
		t.Errorf("put of a key that is not UTF-8: want it shown escaped; %s", r)
	}
	r = coslaCmd(t, time.Minute, "get", "--dir", dir, "--site", "england", "--sla", "strong 2s 1", odd)
	wantExit(t, r, 0)
	if !strings.HasPrefix(r.stdout, oddText+` = "v"`) {
		t.Errorf("get of a key that is not UTF-8: want %s = \"v\"; %s", oddText, r)
	}
	r = coslaCmd(t, time.Minute, "get", "--dir", dir, "--site", "england", "--sla", "strong 2s 1", "--json", odd)
	wantExit(t, r, 0)
	var oddJSON struct {
		Key   keyfmt.JSON `json:"key"`
		Value keyfmt.JSON `json:"value"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &oddJSON); err != nil || oddJSON.Key != odd || oddJSON.Value != "v" ||
		!strings.Contains(r.stdout, `"key":{"base64":`) {
		t.Errorf("get --json of a key that is not UTF-8: key %q, value %q (%v), want it byte for byte in base64; %s", oddJSON.Key, oddJSON.Value, err, r)
	}

	r = coslaCmd(t, time.Minute, "get", "--dir", dir, "--site", "england", "--sla", "strong 2s 1", "--json", "k")
	wantExit(t, r, 0)
	var got struct {
		Value  string `json:"value"`
		Result struct {
			Met     int  `json:"met"`
			Primary bool `json:"primary"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("get --json: %v; %s", err, r)
	}
	if got.Value != "v1" || got.Result.Met != 0 || !got.Result.Primary {
		t.Fatalf("get --json: value %q, met %d, primary %t; want v1, 0, true; %s", got.Value, got.Result.Met, got.Result.Primary, r)
	}

	// Levels (CPQ): a Put at ALL is held by all three replicas when it
	// returns, and a Get of all three sees it at each.
	wantExit(t, coslaCmd(t, time.Minute, "put", "--dir", dir, "--write-level", "all", "levels", "v2"), 0)
	r = coslaCmd(t, time.Minute, "get", "--dir", dir, "--site", "us", "--sla", "eventual unbounded 1", "--read-level", "all", "--json", "levels")
	wantExit(t, r, 0)
	var all struct {
		Value  string `json:"value"`
		Result struct {
			Level   int `json:"level"`
			Replies []struct {
				Node      string `json:"node"`
				VersionTS string `json:"version_ts"`
			} `json:"replies"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &all); err != nil {
		t.Fatalf("get --read-level all --json: %v; %s", err, r)
	}
	if all.Value != "v2" || all.Result.Level != 3 || len(all.Result.Replies) != 3 {
		t.Fatalf("get --read-level all: value %q from %d replicas (%d replies), want v2 from 3; %s", all.Value, all.Result.Level, len(all.Result.Replies), r)
	}
	for _, rr := range all.Result.Replies[1:] {
		if rr.VersionTS != all.Result.Replies[0].VersionTS {
			t.Errorf("after a Put at ALL, %s holds version %s and %s %s; %s", rr.Node, rr.VersionTS,
				all.Result.Replies[0].Node, all.Result.Replies[0].VersionTS, r)
		}
	}

	// China-England is 307 ms round trip in pileus4: no replica can give a
	// strong read within 100 ms.
	wantExit(t, coslaCmd(t, time.Minute, "get", "--dir", dir, "--site", "china", "--sla", "strong 100ms 1", "k"), exitUnmet)
	wantExit(t, coslaCmd(t, time.Minute, "get", "--dir", dir, "--site", "nowhere", "k"), exitUsage)

	// A short YCSB run from England: the load and run phases through the
	// driver, their operations counted exactly.
	r = coslaCmd(t, time.Minute, "bench", "--dir", dir, "--site", "england", "--sla", "eventual 1s 1",
		"--workload", "a", "--records", "50", "--operations", "200", "--clients", "4", "--json")
	wantExit(t, r, 0)
	var res struct {
		Target, Read, Write string
		Load                struct{ Operations, Errors int }
		Run                 struct {
			Operations, Errors int
			Stop               string
			Kinds              []struct{ Kind string }
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("bench --json: %v\n%s", err, r.stdout)
	}
	if res.Load.Operations != 50 || res.Run.Operations != 200 || res.Load.Errors+res.Run.Errors != 0 ||
		res.Run.Stop != "complete" || len(res.Run.Kinds) != 2 {
		t.Errorf("bench: %+v; want 50 inserts, 200 reads and updates, no error", res)
	}
	if res.Target != "cosla" || res.Read != `"eventual 1s 1" (pileus)` || res.Write != "durable" {
		t.Errorf("bench: target %q, reads %q, writes %q; want cosla, the SLA and strategy, durable", res.Target, res.Read, res.Write)
	}

	wantExit(t, coslaCmd(t, time.Minute, "cluster", "link", "set", "england", "us", "--latency", "400ms", "--dir", dir), 0)
	if rtt := linkRTT(t, dir, "england", "us"); rtt != 400 {
		t.Fatalf("cluster status: england-us rtt_ms %v after link set --latency 400ms, want 400", rtt)
	}

	wantExit(t, coslaCmd(t, time.Minute, "cluster", "link", "set", "england", "us", "--down", "--dir", dir), 0)
	// Partitioned from the primary, a strong read from the U.S. cannot be
	// met. (The command takes about 15 s: Open and OpenTable wait for the
	// unreachable primary for their connect and request timeouts.)
	r = coslaCmd(t, time.Minute, "get", "--dir", dir, "--site", "us", "--sla", "strong 2s 1", "--timeout", "25s", "k")
	if r.code == 0 {
		t.Fatalf("strong get from us across a partition succeeded; %s", r)
	}
	t.Logf("partitioned strong get from us: exit %d: %s", r.code, strings.TrimSpace(r.stderr))
	wantExit(t, coslaCmd(t, time.Minute, "cluster", "link", "set", "england", "us", "--up", "--dir", dir), 0)
	const healAttempts = 10
	for attempt := 1; ; attempt++ {
		r = coslaCmd(t, time.Minute, "get", "--dir", dir, "--site", "us", "--sla", "strong 2s 1", "k")
		if r.code == 0 {
			t.Logf("strong get from us after healing: ok at attempt %d", attempt)
			break
		}
		if attempt == healAttempts {
			t.Fatalf("strong get from us still failing after healing the link, %d attempts; last: %s", attempt, r)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !strings.Contains(r.stdout, `k = "v1"`) {
		t.Fatalf("strong get from us after healing: want k = \"v1\"; %s", r)
	}

	r = coslaCmd(t, time.Minute, "session", "run", "--dir", dir, "--site", "us", filepath.Join("testdata", "session-rmw.txt"))
	wantExit(t, r, 0)
	if !strings.Contains(r.stdout, `sk = "written-in-session"`) || !strings.Contains(r.stdout, "met subSLA 1 of 1: read-my-writes 1s 1") {
		t.Fatalf("session run: want sk read back under read-my-writes; %s", r)
	}
	r = coslaCmd(t, time.Minute, "session", "run", "--dir", dir, "--site", "us", filepath.Join("testdata", "session-malformed.txt"))
	wantExit(t, r, exitUsage)
	if !strings.Contains(r.stderr, "session-malformed.txt:3:") {
		t.Fatalf("session run of a malformed script: want the error to name line 3; %s", r)
	}
	if strings.Contains(r.stdout, "put") {
		t.Fatalf("session run of a malformed script ran a line before reporting it; %s", r)
	}

	wantExit(t, coslaCmd(t, 90*time.Second, "cluster", "down", "--dir", dir), 0)
	clusterDown = true
	r = coslaCmd(t, time.Minute, "get", "--dir", dir, "k")
	if r.code != exitFailed || !strings.Contains(r.stderr, "no cluster running") {
		t.Fatalf("get after cluster down: want a failure saying no cluster is running; %s", r)
	}
}

func sitePIDs(in *cluster.Info) []int {
	var pids []int
	for _, s := range in.Sites {
		pids = append(pids, s.PID)
	}
	return pids
}

// linkRTT returns the round trip `cluster status --json` reports for the
// link between sites a and b.
func linkRTT(t *testing.T, dir, a, b string) float64 {
	t.Helper()
	r := coslaCmd(t, time.Minute, "cluster", "status", "--json", "--dir", dir)
	wantExit(t, r, 0)
	var st struct {
		Links []struct {
			A     string  `json:"a"`
			B     string  `json:"b"`
			RTTMS float64 `json:"rtt_ms"`
		} `json:"links"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatalf("cluster status --json: %v; %s", err, r)
	}
	for _, l := range st.Links {
		if (l.A == a && l.B == b) || (l.A == b && l.B == a) {
			return l.RTTMS
		}
	}
	t.Fatalf("cluster status --json: no link %s-%s; %s", a, b, r)
	return 0
}

// e2eFreeAddrs returns n distinct loopback addresses whose ports were
// free at the time of the call (each held until all are chosen: one
// released at once may be chosen again).
func e2eFreeAddrs(t *testing.T, n int) []string {
	t.Helper()
	addrs := make([]string, n)
	for i := range addrs {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		addrs[i] = l.Addr().String()
	}
	return addrs
}

// serveProc is one `cosla serve` process, restartable from its config.
type serveProc struct {
	t        *testing.T
	site     string
	config   string
	httpAddr string
	logPath  string
	cmd      *exec.Cmd
	exited   chan struct{} // closed when cmd has been waited for
}

// newServeProc writes the config of a site's process: one node r1, data in
// dir, peers the other sites' nodes.
func newServeProc(t *testing.T, site, listen, httpListen, dir string, peers map[string]string) *serveProc {
	t.Helper()
	var cfg strings.Builder
	// Without TLS: these tests are about durability; TestClusterCommands
	// runs a cluster with TLS.
	fmt.Fprintf(&cfg, "site: %s\nnodes: [r1]\nlisten: %s\nhttp_listen: %s\ndata_dir: %s\ninsecure: true\npeers:\n", site, listen, httpListen, filepath.Join(dir, "data"))
	for id, addr := range peers {
		fmt.Fprintf(&cfg, "  %s: %s\n", id, addr)
	}
	p := &serveProc{t: t, site: site, config: filepath.Join(dir, "serve.yaml"), httpAddr: httpListen, logPath: filepath.Join(dir, "serve.log")}
	if err := os.WriteFile(p.config, []byte(cfg.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.kill)
	return p
}

// start starts the process and waits, at most 30 s, until its /healthz
// answers.
func (p *serveProc) start() {
	p.t.Helper()
	logFile, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		p.t.Fatal(err)
	}
	defer logFile.Close()
	p.cmd = exec.Command(coslaBinary(p.t), "serve", "--config", p.config)
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	if err := p.cmd.Start(); err != nil {
		p.t.Fatalf("start %s: %v", p.site, err)
	}
	exited := make(chan struct{})
	p.exited = exited
	go func(cmd *exec.Cmd) { _ = cmd.Wait(); close(exited) }(p.cmd)

	deadline := time.Now().Add(30 * time.Second)
	for {
		if httpOK("http://" + p.httpAddr + "/healthz") {
			return
		}
		select {
		case <-exited:
			p.t.Fatalf("cosla serve --config %s exited: %s\n%s", p.config, p.cmd.ProcessState, p.logTail())
		default:
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("cosla serve (%s) not healthy within 30 s:\n%s", p.site, p.logTail())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *serveProc) kill() {
	if p.cmd == nil {
		return
	}
	select {
	case <-p.exited:
	default:
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
	p.cmd = nil
}

func (p *serveProc) logTail() string {
	b, _ := os.ReadFile(p.logPath)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

func httpOK(url string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// putLedger records the Puts of the writers: per key, the highest sequence
// number issued and the last one acknowledged, with its timestamp. Each
// key has one writer, so a key's sequence numbers grow in issue order.
type putLedger struct {
	mu      sync.Mutex
	issued  map[string]uint64
	acked   map[string]ackedPut
	nAcked  int
	nFailed int
}

type ackedPut struct {
	seq uint64
	ts  cosla.Timestamp
}

func (l *putLedger) issue(key string, seq uint64) {
	l.mu.Lock()
	l.issued[key] = seq
	l.mu.Unlock()
}

func (l *putLedger) ack(key string, seq uint64, ts cosla.Timestamp) {
	l.mu.Lock()
	l.acked[key] = ackedPut{seq, ts}
	l.nAcked++
	l.mu.Unlock()
}

func (l *putLedger) fail() {
	l.mu.Lock()
	l.nFailed++
	l.mu.Unlock()
}

func (l *putLedger) ackedCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.nAcked
}

func putValue(key string, seq uint64) string { return fmt.Sprintf("%s#%d", key, seq) }

// parsePutValue returns the sequence number of a value written by
// putValue for key.
func parsePutValue(key, value string) (uint64, error) {
	k, seq, ok := strings.Cut(value, "#")
	if !ok || k != key {
		return 0, fmt.Errorf("value %q was not written for key %q", value, key)
	}
	return strconv.ParseUint(seq, 10, 64)
}

// TestKillNineLosesNoAcknowledgedPut runs two sites as `cosla serve`
// processes, the primary in England and a secondary in the U.S., writes
// from a few goroutines, SIGKILLs the primary's process five times at
// random points and restarts it from its data directory, and then checks
// that every key's last acknowledged Put (or a later one) is what a strong
// Get at the primary returns and what the secondary converges to.
func TestKillNineLosesNoAcknowledgedPut(t *testing.T) {
	t.Parallel()
	coslaBinary(t)
	const (
		writers     = 4
		keys        = 50
		kills       = 5
		minAcked    = 1000
		killSpacing = 200 // acknowledged Puts between restart and kill, plus up to 100
		afterLast   = 100 // acknowledged Puts after the last restart
	)
	seed := *e2eSeedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	repro := fmt.Sprintf("go test ./cmd/cosla -run TestKillNineLosesNoAcknowledgedPut -e2e.seed %d -v", seed)
	t.Logf("seed %d (kill points only: process scheduling is not reproducible); rerun with: %s", seed, repro)
	rng := rand.New(rand.NewPCG(seed, 0))

	addrs := e2eFreeAddrs(t, 4)
	engAddr, usAddr := addrs[0], addrs[1]
	england := newServeProc(t, "england", engAddr, addrs[2], t.TempDir(), map[string]string{"us/r1": usAddr})
	us := newServeProc(t, "us", usAddr, addrs[3], t.TempDir(), map[string]string{"england/r1": engAddr})
	england.start()
	us.start()
	nodes := map[string]string{"england/r1": engAddr, "us/r1": usAddr}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// A short request timeout: Puts in flight at a kill fail in 2 s rather
	// than 10.
	writer, err := cosla.Open(ctx, cosla.Config{Site: "england", Nodes: nodes, Insecure: true, RequestTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	spec := cosla.TableSpec{Name: "t", Push: true, PullInterval: time.Second,
		Tablets: []cosla.TabletSpec{{Primary: "england/r1", Secondaries: []string{"us/r1"}}}}
	if err := writer.CreateTable(ctx, spec); err != nil {
		t.Fatal(err)
	}
	tbl, err := writer.OpenTable(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	strong := mustSLA(t, "strong 5s 1")

	ledger := &putLedger{issued: map[string]uint64{}, acked: map[string]ackedPut{}}
	keyName := func(i int) string { return fmt.Sprintf("key%02d", i) }
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range writers {
		s, err := writer.BeginSession(tbl, strong)
		if err != nil {
			t.Fatal(err)
		}
		// Writer w owns the keys k with k % writers == w.
		var own []string
		for k := w; k < keys; k += writers {
			own = append(own, keyName(k))
		}
		wg.Go(func() {
			next := map[string]uint64{}
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key := own[i%len(own)]
				next[key]++
				seq := next[key]
				ledger.issue(key, seq)
				pctx, pcancel := context.WithTimeout(ctx, 3*time.Second)
				ts, err := writer.Put(pctx, s, key, []byte(putValue(key, seq)))
				pcancel()
				if err == nil {
					ledger.ack(key, seq, ts)
					continue
				}
				// The primary is down or restarting: the outcome is
				// unknown; back off a little and go on.
				ledger.fail()
				select {
				case <-stop:
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
		})
	}
	stopWriters := sync.OnceFunc(func() { close(stop); wg.Wait() })
	defer stopWriters()

	nKills, restartedAt := 0, 0
	nextKill := killSpacing + rng.IntN(101)
	deadline := time.Now().Add(75 * time.Second)
	for {
		n := ledger.ackedCount()
		if nKills >= kills && n >= minAcked && n >= restartedAt+afterLast {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 75 s: %d Puts acknowledged, %d kills; want %d and %d; rerun with: %s", n, nKills, minAcked, kills, repro)
		}
		if nKills < kills && n >= nextKill {
			england.kill()
			nKills++
			t.Logf("kill %d: SIGKILL england after %d acknowledged Puts", nKills, n)
			england.start()
			restartedAt = ledger.ackedCount()
			nextKill = restartedAt + killSpacing + rng.IntN(101)
		}
		time.Sleep(5 * time.Millisecond)
	}
	stopWriters()
	ledger.mu.Lock()
	acked := ledger.acked
	issued := ledger.issued
	nAcked, nFailed := ledger.nAcked, ledger.nFailed
	ledger.mu.Unlock()

	// Every acknowledged Put survived at the primary: a strong Get from
	// England returns it or a later one.
	reader := openClient(ctx, t, "england", nodes, 5*time.Second)
	rtbl, err := reader.OpenTable(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	rs, err := reader.BeginSession(rtbl, strong)
	if err != nil {
		t.Fatal(err)
	}
	upToDate := 0
	for i := range keys {
		key := keyName(i)
		a, ok := acked[key]
		if !ok {
			t.Errorf("%s: no Put acknowledged", key)
			continue
		}
		value, res, err := reader.Get(ctx, rs, key)
		if err != nil {
			t.Errorf("strong get %s at england: %v", key, err)
			continue
		}
		seq, err := parsePutValue(key, string(value))
		switch {
		case err != nil || !res.Found:
			t.Errorf("strong get %s at england: found %t, %v; last acknowledged Put #%d at %s", key, res.Found, err, a.seq, a.ts)
		case seq < a.seq:
			t.Errorf("strong get %s at england: #%d (version %s), but Put #%d was acknowledged at %s: an acknowledged Put was lost", key, seq, res.VersionTS, a.seq, a.ts)
		case seq > issued[key]:
			t.Errorf("strong get %s at england: #%d, never issued (last issued #%d)", key, seq, issued[key])
		case seq == a.seq && res.VersionTS != a.ts:
			t.Errorf("strong get %s at england: #%d has version %s, but its Put was acknowledged with %s", key, seq, res.VersionTS, a.ts)
		default:
			upToDate++
		}
	}
	t.Logf("%d Puts acknowledged, %d failed or of unknown outcome, %d kills of the primary; %d keys checked, %d up to date at the primary",
		nAcked, nFailed, nKills, keys, upToDate)
	if t.Failed() {
		t.Fatalf("rerun with: %s", repro)
	}

	// The U.S. secondary converges. Its client is told of no reachable
	// England node (a port that refuses connections), so that Closest
	// cannot pick the primary, which on loopback is as near as the
	// secondary.
	deadAddr := nettest.RefusedAddr(t)
	// (OpenTable waits for its probe of that node to time out: keep the
	// request timeout short.)
	usClient := openClient(ctx, t, "us", map[string]string{"england/r1": deadAddr, "us/r1": usAddr}, 2*time.Second)
	utbl, err := usClient.OpenTable(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	us2, err := usClient.BeginSession(utbl, mustSLA(t, "eventual 5s 1"), cosla.WithStrategy(cosla.Closest))
	if err != nil {
		t.Fatal(err)
	}
	behind := map[string]string{}
	convergeDeadline := time.Now().Add(30 * time.Second)
	for round := 1; ; round++ {
		clear(behind)
		for i := range keys {
			key := keyName(i)
			value, res, err := usClient.Get(ctx, us2, key, cosla.WithGetStrategy(cosla.Closest))
			if err != nil {
				behind[key] = err.Error()
				continue
			}
			if res.Node != "us/r1" {
				t.Fatalf("closest get %s from us went to %s, want us/r1", key, res.Node)
			}
			seq, err := parsePutValue(key, string(value))
			switch {
			case !res.Found:
				behind[key] = "not found"
			case err != nil:
				t.Fatalf("closest get %s at us/r1: %v", key, err)
			case seq < acked[key].seq:
				behind[key] = fmt.Sprintf("#%d, last acknowledged #%d", seq, acked[key].seq)
			case seq > issued[key]:
				t.Fatalf("closest get %s at us/r1: #%d, never issued (last issued #%d)", key, seq, issued[key])
			}
		}
		if len(behind) == 0 {
			t.Logf("us/r1 up to date for all %d keys after %d rounds of Gets", keys, round)
			break
		}
		if time.Now().After(convergeDeadline) {
			t.Fatalf("us/r1 still behind on %d of %d keys after 30 s: %v; rerun with: %s", len(behind), keys, behind, repro)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func openClient(ctx context.Context, t *testing.T, site string, nodes map[string]string, requestTimeout time.Duration) *cosla.Client {
	t.Helper()
	c, err := cosla.Open(ctx, cosla.Config{Site: site, Nodes: nodes, Insecure: true, RequestTimeout: requestTimeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func mustSLA(t *testing.T, text string) sla.SLA {
	t.Helper()
	agreement, err := sla.Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	return agreement
}
