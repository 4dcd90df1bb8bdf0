package main

// Tests of `cosla bench` and `cosla bench compare`: the command lines
// they refuse, runs against Redis and etcd started on loopback (as the
// adapters' tests do, skipped when the Debian servers are missing unless
// CI is set), and, through the built binary, comparisons of a one-site
// cosla cluster with them. Runs are bounded by operation counts; their
// --duration is only an upper bound, and no assertion depends on how long
// anything took.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cosla/cosla/internal/lab/adapters"
	"github.com/cosla/cosla/internal/lab/bench"
	"github.com/cosla/cosla/internal/lab/report"
	"github.com/cosla/cosla/internal/lab/workload"
)

// skipUnlessInstalled skips a test whose command failed because a
// store's servers are not installed, or fails it when CI is set (CI must
// install them). It returns if the command did not fail that way.
func skipUnlessInstalled(t *testing.T, code int, stderr string) {
	t.Helper()
	if code == 0 || !strings.Contains(stderr, adapters.ErrNotInstalled.Error()) {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("CI is set and a server is missing:\n%s", stderr)
	}
	t.Skipf("skipping (set CI to make this a failure): %s", strings.TrimSpace(stderr))
}

func TestBenchBadFlags(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"unknown target", []string{"bench", "--target", "oracle"}},
		{"cosla with connect", []string{"bench", "--target", "cosla", "--connect", "127.0.0.1:1"}},
		{"nofsync with connect", []string{"bench", "--target", "cosla-nofsync", "--connect", "127.0.0.1:1"}},
		{"sla for redis", []string{"bench", "--target", "redis", "--sla", "eventual 1s 1"}},
		{"strategy for etcd", []string{"bench", "--target", "etcd", "--strategy", "primary"}},
		{"site for postgres", []string{"bench", "--target", "postgres", "--site", "us"}},
		{"read and sla", []string{"bench", "--read", "weak", "--sla", "strong 1s 1", "--dir", dir}},
		{"bad read", []string{"bench", "--target", "redis", "--read", "sometimes"}},
		{"bad write", []string{"bench", "--target", "redis", "--write", "eventually"}},
		{"prop without value", []string{"bench", "--target", "redis", "--prop", "readproportion"}},
		{"unknown prop", []string{"bench", "--target", "redis", "--prop", "readproprtion=1"}},
		{"bad prop value", []string{"bench", "--target", "redis", "--prop", "fieldlength=long"}},
		{"props sum to 0", []string{"bench", "--target", "redis", "--workload", "c", "--prop", "readproportion=0"}},
		{"negative value size", []string{"bench", "--target", "redis", "--value-size", "-1"}},
		{"bad workload", []string{"bench", "--target", "redis", "--workload", "z"}},
		{"no clients", []string{"bench", "--target", "redis", "--clients", "0"}},
		{"stray argument", []string{"bench", "--target", "redis", "extra"}},
		{"bad sla", []string{"bench", "--sla", "sometimes", "--dir", dir}},
		{"metrics-listen for redis", []string{"bench", "--target", "redis", "--metrics-listen", ":0"}},
		{"bound for redis", []string{"bench", "--target", "redis", "--bound", "50ms"}},
		{"zero bound", []string{"bench", "--bound", "0", "--dir", dir}},

		{"compare unknown target", []string{"bench", "compare", "--targets", "cosla,oracle"}},
		{"compare target twice", []string{"bench", "compare", "--targets", "redis,etcd,redis"}},
		{"compare no targets", []string{"bench", "compare", "--targets", ","}},
		{"compare bad clients", []string{"bench", "compare", "--clients", "1,x"}},
		{"compare zero clients", []string{"bench", "compare", "--clients", "0"}},
		{"compare clients twice", []string{"bench", "compare", "--clients", "2,2"}},
		{"compare no clients", []string{"bench", "compare", "--clients", ""}},
		{"compare bad read", []string{"bench", "compare", "--read", "weak,sometimes"}},
		{"compare read twice", []string{"bench", "compare", "--read", "weak,weak"}},
		{"compare bad write", []string{"bench", "compare", "--write", "strongest"}},
		{"compare connect without name", []string{"bench", "compare", "--connect", "127.0.0.1:1,127.0.0.1:2"}},
		{"compare connect to another target", []string{"bench", "compare", "--targets", "redis", "--connect", "etcd=127.0.0.1:1"}},
		{"compare connect to cosla", []string{"bench", "compare", "--connect", "cosla=127.0.0.1:1"}},
		{"compare cluster-dir without cosla", []string{"bench", "compare", "--targets", "redis", "--cluster-dir", dir}},
		{"compare site without cluster-dir", []string{"bench", "compare", "--site", "us"}},
		{"compare unbounded", []string{"bench", "compare", "--duration", "0"}},
		{"compare zero repeat", []string{"bench", "compare", "--repeat", "0"}},
		{"compare negative repeat", []string{"bench", "compare", "--repeat", "-2"}},
		{"compare too many repeats", []string{"bench", "compare", "--repeat", "101"}},
		{"compare negative client procs", []string{"bench", "compare", "--client-procs", "-1"}},
		{"compare bad prop", []string{"bench", "compare", "--prop", "x"}},
		{"compare stray argument", []string{"bench", "compare", "extra"}},
		{"compare unknown flag", []string{"bench", "compare", "--target", "redis"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCosla(t, tc.args...)
			if code != exitUsage {
				t.Errorf("cosla %s: exit %d, want %d; stderr:\n%s", strings.Join(tc.args, " "), code, exitUsage, stderr)
			}
		})
	}
	// A cluster directory with no cluster: a failure, not a usage error.
	if code, _, stderr := runCosla(t, "bench", "--dir", dir); code != 1 || !strings.Contains(stderr, "no cluster running") {
		t.Errorf("bench on no cluster: exit %d, want 1 saying no cluster runs; stderr:\n%s", code, stderr)
	}
}

// benchJSON runs `cosla bench ... --json` in this process and decodes its
// result.
func benchJSON(t *testing.T, args ...string) bench.Result {
	t.Helper()
	code, stdout, stderr := runCosla(t, append([]string{"bench", "--json"}, args...)...)
	skipUnlessInstalled(t, code, stderr)
	if code != 0 {
		t.Fatalf("cosla bench %s: exit %d; stderr:\n%s", strings.Join(args, " "), code, stderr)
	}
	var res bench.Result
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("bench --json: %v\n%s", err, stdout)
	}
	return res
}

// checkRun fails unless res loaded records records and then ran
// operations operations of workload A, without an error.
func checkRun(t *testing.T, res bench.Result, records, operations uint64) {
	t.Helper()
	if res.Load == nil || res.Load.Operations != records || res.Load.Errors != 0 {
		t.Errorf("load %+v, want %d inserts", res.Load, records)
	}
	r := res.Run
	var kinds []string
	for _, k := range r.Kinds {
		kinds = append(kinds, k.Kind)
	}
	if r.Operations != operations || r.Errors != 0 || r.Stop != bench.StopComplete || !slices.Equal(kinds, []string{"read", "update"}) {
		t.Errorf("run: %d operations, %d errors, stop %s, kinds %q; want %d, 0, complete, read and update", r.Operations, r.Errors, r.Stop, kinds, operations)
	}
}

// TestBenchStores runs workload A on Redis and etcd started on loopback:
// each maps strong and weak reads and writes to its own options and says
// so.
func TestBenchStores(t *testing.T) {
	if testing.Short() {
		t.Skip("starts servers")
	}
	t.Parallel()
	common := []string{"--workload", "a", "--records", "50", "--operations", "200", "--clients", "4", "--value-size", "256", "--duration", "1m"}
	for _, tc := range []struct {
		target, read, write string
		want                bench.Setup
	}{
		{"redis", "strong", "strong", bench.Setup{Target: "redis", Read: "primary", Write: "wait", Transport: "plaintext"}},
		{"etcd", "weak", "strong", bench.Setup{Target: "etcd", Read: "serializable", Write: "linearizable", Transport: "plaintext"}},
	} {
		t.Run(tc.target, func(t *testing.T) {
			res := benchJSON(t, append([]string{"--target", tc.target, "--read", tc.read, "--write", tc.write}, common...)...)
			if res.Setup != tc.want {
				t.Errorf("setup %+v, want %+v", res.Setup, tc.want)
			}
			checkRun(t, res, 50, 200)
			if res.Clients != 4 || !strings.Contains(res.Workload, "fieldlength=256") || !strings.Contains(res.Workload, "fieldcount=1\n") {
				t.Errorf("%d clients, workload\n%s\nwant 4 clients, 256-byte values", res.Clients, res.Workload)
			}
		})
	}
	// The text says the options too, and the servers start in --dir,
	// which stays.
	dir := t.TempDir()
	code, stdout, stderr := runCosla(t, "bench", "--target", "redis", "--dir", dir, "--workload", "c", "--records", "20", "--operations", "50")
	skipUnlessInstalled(t, code, stderr)
	if code != 0 || !strings.Contains(stdout, "redis, reads replica, writes async, plaintext\n") || !strings.Contains(stdout, "run: 50 ops in ") {
		t.Errorf("bench --target redis: exit %d; stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if m, err := filepath.Glob(filepath.Join(dir, "redis-*", "redis-1", "primary.log")); err != nil || len(m) != 1 {
		t.Errorf("the servers did not start in --dir: %q, %v", m, err)
	}
	// Again in the same --dir: the servers start afresh beside the first.
	code, _, stderr = runCosla(t, "bench", "--target", "redis", "--dir", dir, "--workload", "c", "--records", "20", "--operations", "50")
	if m, _ := filepath.Glob(filepath.Join(dir, "redis-*")); code != 0 || len(m) != 2 {
		t.Errorf("a second bench in --dir: exit %d, directories %q; stderr:\n%s", code, m, stderr)
	}
}

// startRedis starts a Redis primary and replica for a test, or skips it
// as the adapters' tests do.
func startRedis(t *testing.T) *adapters.Redis {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	r, err := adapters.StartRedis(ctx, t.TempDir())
	if errors.Is(err, adapters.ErrNotInstalled) {
		skipUnlessInstalled(t, 1, err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Error(err)
		}
	})
	return r
}

// TestBenchConnect runs bench and measure run on servers the user runs:
// they use them, start none, and leave them running.
func TestBenchConnect(t *testing.T) {
	if testing.Short() {
		t.Skip("starts servers")
	}
	t.Parallel()
	r := startRedis(t)
	addrs := strings.Join(r.Addrs(), ",")
	res := benchJSON(t, "--target", "redis", "--connect", addrs, "--workload", "a", "--records", "30", "--operations", "100", "--read", "strong")
	checkRun(t, res, 30, 100)
	if res.Setup != (bench.Setup{Target: "redis", Read: "primary", Write: "async", Transport: "plaintext"}) {
		t.Errorf("setup %+v", res.Setup)
	}
	ctx := t.Context()
	// The bench's records are in our servers, which still run.
	if v, found, _, err := r.Read(ctx, workload.Key(0), "primary"); err != nil {
		t.Fatalf("read after the bench: %v", err)
	} else if !found || len(v) != 1000 {
		t.Errorf("record 0 after the bench: found %t, %d bytes; want workload A's 1000", found, len(v))
	}

	out := t.TempDir()
	code, _, stderr := runCosla(t, "measure", "run", "--target", "redis", "--connect", addrs, "--write-every", "20ms", "--read-hz", "200",
		"--read-option", "replica", "--read-option", "primary", "--max-ops", "40", "--duration", "1m", "--out", out, "--json")
	if code != 0 {
		t.Fatalf("measure run --connect: exit %d; stderr:\n%s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(out, "servers")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("measure run --connect started servers in %s/servers (stat: %v)", out, err)
	}
	data, err := os.ReadFile(filepath.Join(out, "trace.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var replicas []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var op struct{ Replica string }
		if err := json.Unmarshal([]byte(line), &op); err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(replicas, op.Replica) {
			replicas = append(replicas, op.Replica)
		}
	}
	slices.Sort(replicas)
	want := slices.Sorted(slices.Values(r.Addrs()))
	if !slices.Equal(replicas, want) {
		t.Errorf("the trace's ops were served by %q, want our servers %q", replicas, want)
	}
	if _, err := r.Write(ctx, "after-measure", "v", "async"); err != nil {
		t.Errorf("the servers stopped with measure run: %v", err)
	}
}

// compareJSON decodes `bench compare --json`.
func compareJSON(t *testing.T, r e2eResult) bench.Comparison {
	t.Helper()
	skipUnlessInstalled(t, r.code, r.stderr)
	wantExit(t, r, 0)
	var c bench.Comparison
	if err := json.Unmarshal([]byte(r.stdout), &c); err != nil {
		t.Fatalf("bench compare --json: %v\n%s", err, r.stdout)
	}
	return c
}

// TestBenchCompare compares a one-site cosla cluster with Redis and etcd,
// weak and strong reads, at 1 and 2 clients, through the built binary:
// a table per count, a row per run naming its options, the ratios, the
// report's files. Then the write-only comparison of cosla with
// cosla-nofsync, in text.
func TestBenchCompare(t *testing.T) {
	t.Parallel()
	coslaBinary(t)
	out := filepath.Join(t.TempDir(), "report")
	r := coslaCmd(t, 3*time.Minute, "bench", "compare", "--targets", "cosla,redis,etcd", "--workload", "c", "--records", "50",
		"--operations", "200", "--duration", "1m", "--clients", "1,2", "--read", "weak,strong", "--value-size", "256", "--out", out, "--json")
	c := compareJSON(t, r)
	if c.Reference != "cosla" || !strings.Contains(c.Mix, "50 records; read 100%") || !strings.Contains(c.Mix, "256-byte values") {
		t.Errorf("comparison of %s: %s", c.Reference, c.Mix)
	}
	if len(c.Tables) != 2 || c.Tables[0].Clients != 1 || c.Tables[1].Clients != 2 {
		t.Fatalf("tables %+v, want one for 1 client and one for 2", c.Tables)
	}
	want := []bench.Setup{
		{Target: "cosla", Read: "eventual (closest)", Write: "durable", Transport: "plaintext"},
		{Target: "redis", Read: "replica", Write: "async", Transport: "plaintext"},
		{Target: "etcd", Read: "serializable", Write: "linearizable", Transport: "plaintext"},
		{Target: "cosla", Read: "strong (primary)", Write: "durable", Transport: "plaintext"},
		{Target: "redis", Read: "primary", Write: "async", Transport: "plaintext"},
		{Target: "etcd", Read: "linearizable", Write: "linearizable", Transport: "plaintext"},
	}
	for _, tab := range c.Tables {
		if len(tab.Rows) != len(want) {
			t.Fatalf("%s: %d rows, want %d", tab.Title(), len(tab.Rows), len(want))
		}
		for i, row := range tab.Rows {
			res := row.Result
			if res.Setup != want[i] || res.Clients != tab.Clients || res.Run.Operations != 200 || res.Run.Errors != 0 ||
				res.Run.Stop != bench.StopComplete || len(res.Run.Kinds) != 1 || res.Run.Kinds[0].Kind != "read" {
				t.Errorf("%s row %d: %+v, run %+v; want %+v, 200 reads", tab.Title(), i, res.Setup, res.Run, want[i])
			}
			if (tab.Clients == 1 && i < 3) != (res.Load != nil) {
				t.Errorf("%s row %d: load %+v; want one in each store's first run only", tab.Title(), i, res.Load)
			}
			if v := row.VsReference; (res.Target == "cosla") != (v == nil) || (v != nil && (v.Throughput <= 0 || v.P50["read"] <= 0)) {
				t.Errorf("%s row %d (%s): ratios %+v; want them on the other stores' rows", tab.Title(), i, res.Target, v)
			}
		}
	}
	for _, f := range []string{"report.md", "report.html", report.BenchFileName, "plots/latency_cdf_read.png", "plots/latency_cdf_read.svg",
		"plots/throughput.png", "plots/throughput.svg"} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
			t.Errorf("report file %s: %v", f, err)
		}
	}
	if md, err := os.ReadFile(filepath.Join(out, "report.md")); err != nil || !strings.Contains(string(md), "## 2 clients") {
		t.Errorf("report.md lacks the 2-client table (%v)", err)
	}

	r = coslaCmd(t, 3*time.Minute, "bench", "compare", "--targets", "cosla,cosla-nofsync,redis", "--workload", "a",
		"--prop", "readproportion=0", "--prop", "updateproportion=1", "--records", "20", "--operations", "100", "--duration", "1m",
		"--clients", "1,2", "--write", "strong")
	skipUnlessInstalled(t, r.code, r.stderr)
	wantExit(t, r, 0)
	for _, want := range []string{
		"20 records; update 100%", "writes strong", "cosla/this is cosla's figure",
		"\n1 client\n", "\n2 clients\n", "update p50 ms", "cosla/this update p50",
		"cosla-nofsync  weak", "no-fsync", "redis          weak", "wait",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("bench compare text lacks %q; %s", want, r)
		}
	}
	if strings.Count(r.stdout, "durable") != 2 || strings.Contains(r.stdout, "read p50") {
		t.Errorf("want a durable cosla row per table and no reads; %s", r)
	}
}

// TestBenchCompareRepeat compares a one-site cosla cluster with Redis,
// each run twice in interleaved rounds, through the built binary: each
// row holds both repeats, the medians and their range, and every run the
// CPU of the client and of the servers bench started. The runs are
// bounded by a duration of many of the kernel's clock ticks, so that
// their CPU is measured (bench.CPU), however fast the machine. Then the
// text of a comparison of Redis alone, in this process.
func TestBenchCompareRepeat(t *testing.T) {
	t.Parallel()
	coslaBinary(t)
	out := filepath.Join(t.TempDir(), "report")
	r := coslaCmd(t, 3*time.Minute, "bench", "compare", "--targets", "cosla,redis", "--workload", "c", "--records", "20",
		"--duration", "300ms", "--repeat", "2", "--client-procs", "1", "--out", out, "--json")
	c := compareJSON(t, r)
	if c.Repeat != 2 || !strings.Contains(c.Limit, "2 times in interleaved rounds") || len(c.Tables) != 1 || len(c.Tables[0].Rows) != 2 {
		t.Fatalf("comparison: repeat %d, limit %q, tables %+v; want one table of two rows, each run twice", c.Repeat, c.Limit, c.Tables)
	}
	if c.ClientProcs != 1 || c.Cores < 1 {
		t.Errorf("comparison: the client on %d Ps of %d cores, want 1 (--client-procs 1)", c.ClientProcs, c.Cores)
	}
	for i, row := range c.Tables[0].Rows {
		if len(row.Repeats) != 2 || row.Spread == nil {
			t.Fatalf("row %d (%s): %d repeats, spread %+v; want 2 and their range", i, row.Result.Target, len(row.Repeats), row.Spread)
		}
		for ri, rep := range row.Repeats {
			if rep.Run.Stop != bench.StopDuration || rep.Run.Errors != 0 || (ri == 0) != (rep.Load != nil) {
				t.Errorf("row %d repeat %d: run %+v, load %+v; want a run to its duration, loaded in the first repeat only", i, ri, rep.Run, rep.Load)
			}
			if cpu := rep.Run.CPU; cpu == nil || cpu.Cores < 1 || cpu.StoreProcesses < 1 {
				t.Errorf("row %d repeat %d (%s): CPU %+v; want the client's and the servers'", i, ri, rep.Target, cpu)
			}
		}
		if s, v := row.Spread.ThroughputOpsPerS, row.Result.Run.ThroughputOpsPerS; v < s.Min || v > s.Max || v <= 0 {
			t.Errorf("row %d: median %v ops/s outside its range %+v", i, v, s)
		}
	}
	if v := c.Tables[0].Rows[1].VsReference; v == nil || v.Throughput <= 0 {
		t.Errorf("redis row: ratios %+v; want cosla's medians over redis's", v)
	}
	if data, err := os.ReadFile(filepath.Join(out, report.BenchFileName)); err != nil || !strings.Contains(string(data), `"repeats": [`) {
		t.Errorf("%s lacks the repeats (%v)", report.BenchFileName, err)
	}

	code, stdout, stderr := runCosla(t, "bench", "compare", "--targets", "redis", "--workload", "c", "--records", "20",
		"--operations", "50", "--duration", "1m", "--repeat", "2")
	skipUnlessInstalled(t, code, stderr)
	if code != 0 || !strings.Contains(stdout, "runs of 50 operations each, at most 1m0s, 2 times in interleaved rounds; the client on ") ||
		!regexp.MustCompile(`\nredis +weak +replica +async +[0-9.]+k? \([0-9.]+k?-[0-9.]+k?\) +0 +[0-9.]+ \([0-9.]+-[0-9.]+\) `).MatchString(stdout) ||
		strings.Count(stderr, ", round 2 of 2\n") != 1 {
		t.Errorf("bench compare --repeat 2: exit %d; stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

// processesUnder lists the processes whose command line names a path
// under dir (Linux's /proc).
func processesUnder(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	var found []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmdline), dir) {
			found = append(found, e.Name()+": "+strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	return found
}

// TestBenchCompareInterrupt interrupts a comparison in its first run, as
// Ctrl-C does: it prints what it measured, and stops every server and
// cluster it started.
func TestBenchCompareInterrupt(t *testing.T) {
	t.Parallel()
	bin := coslaBinary(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "bench", "compare", "--targets", "cosla,redis", "--workload", "c", "--records", "20",
		"--duration", "10m", "--dir", dir)
	var stdout strings.Builder
	cmd.Stdout = &stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	running := make(chan struct{})
	var log strings.Builder
	logDone := make(chan struct{})
	go func() {
		defer close(logDone)
		started := false
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
			if !started && strings.HasPrefix(sc.Text(), "cosla bench compare: cosla, ") {
				started = true
				close(running)
			}
		}
	}()
	select {
	case <-running:
		if err := cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		<-logDone
	case <-logDone:
		// It ended before its first run: the checks below say why.
	}
	err = cmd.Wait()
	skipUnlessInstalled(t, cmd.ProcessState.ExitCode(), log.String())
	if err != nil || ctx.Err() != nil {
		t.Fatalf("interrupted bench compare: %v (%v)\nstdout:\n%s\nstderr:\n%s", err, ctx.Err(), stdout.String(), log.String())
	}
	if !strings.Contains(stdout.String(), "\n1 client\n") || !strings.Contains(stdout.String(), "eventual (closest)") ||
		!strings.Contains(stdout.String(), "cosla (weak reads) stopped early (canceled)") {
		t.Errorf("interrupted bench compare printed no table of its first run:\n%s", stdout.String())
	}
	if left := processesUnder(t, dir); len(left) > 0 {
		t.Errorf("processes left running after the interrupt:\n%s\nstderr:\n%s", strings.Join(left, "\n"), log.String())
	}
}
