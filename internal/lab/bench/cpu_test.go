package bench

import (
	"math"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestParseProcStat(t *testing.T) {
	data := []byte("cpu  100 10 50 800 40 5 15 2 7 0\ncpu0 50 5 25 400 20 2 8 1 3 0\ncpu1 50 5 25 400 20 3 7 1 4 0\nintr 1 2 3\nctxt 99\n")
	busy, total, cores := parseProcStat(data)
	// busy: user, nice, system, irq, softirq, steal; total adds idle and
	// iowait; guest (7) is inside user.
	if busy != 100+10+50+5+15+2 || total != busy+800+40 || cores != 2 {
		t.Errorf("parseProcStat = %d, %d, %d; want 182, 1022, 2", busy, total, cores)
	}
	if busy, total, cores := parseProcStat([]byte("cpu  1 x 3 4\ncpu0 1 2 3 4\n")); busy != 0 || total != 0 || cores != 0 {
		t.Errorf("a malformed cpu line: %d, %d, %d; want zeros", busy, total, cores)
	}
}

func TestParseProcessStat(t *testing.T) {
	fields := func(comm string) []byte {
		// pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime cutime cstime ...
		return []byte("4242 (" + comm + ") S 17 4240 4240 0 -1 4194304 97 0 0 0 250 50 30 20 20 0 1 0 5688810\n")
	}
	for _, comm := range []string{"redis-server", "a (b) c", "x)"} {
		p, ok := parseProcessStat(fields(comm))
		want := process{pid: 4242, parent: 17, group: 4240, cpu: 350 * time.Second / userHZ}
		if !ok || p != want {
			t.Errorf("comm %q: %+v, %t; want %+v", comm, p, ok, want)
		}
	}
	for _, bad := range []string{"", "4242 no parens", "x (a) S 1 2", "4242 (a) S 1 2 3"} {
		if p, ok := parseProcessStat([]byte(bad)); ok {
			t.Errorf("%q parsed as %+v", bad, p)
		}
	}
}

func TestCPUBetween(t *testing.T) {
	at := time.Unix(1000, 0)
	a := cpuSample{at: at, client: 3 * time.Second, store: 10 * time.Second, storeProcesses: 2, busy: 1000, total: 2000, cores: 2}
	// Over 2 s: the client used 1.5 s of CPU, the store 1 s; the machine's
	// processors were busy 360 of the 400 jiffies that passed.
	b := cpuSample{at: at.Add(2 * time.Second), client: 4500 * time.Millisecond, store: 11 * time.Second, storeProcesses: 2,
		busy: 1360, total: 2400, cores: 2}
	got := cpuBetween(a, b)
	want := &CPU{Cores: 2, Client: 0.75, Store: 0.5, StoreProcesses: 2, Machine: 1.8, Other: 0.55, ClientBound: true, Shared: true}
	if got == nil || !cpuNear(*got, *want) {
		t.Errorf("cpuBetween = %+v, want %+v", got, want)
	}
	// The store's servers unknown: no store figure.
	a.storeProcesses, b.storeProcesses = 0, 0
	if got := cpuBetween(a, b); got == nil || got.StoreProcesses != 0 || got.Store != 0 {
		t.Errorf("unknown servers: %+v", got)
	}
	for _, tc := range []struct {
		name string
		b    cpuSample
	}{
		{"no time", cpuSample{at: at, cores: 2, total: 2400}},
		{"no /proc/stat", cpuSample{at: at.Add(time.Second)}},
		{"no jiffies", cpuSample{at: at.Add(time.Second), cores: 2, total: 2000}},
	} {
		if got := cpuBetween(a, tc.b); got != nil {
			t.Errorf("%s: %+v, want nil", tc.name, got)
		}
	}
}

func cpuNear(a, b CPU) bool {
	near := func(x, y float64) bool { return x-y < 1e-9 && y-x < 1e-9 }
	return a.Cores == b.Cores && a.StoreProcesses == b.StoreProcesses && a.ClientBound == b.ClientBound && a.Shared == b.Shared &&
		near(a.Client, b.Client) && near(a.Store, b.Store) && near(a.Machine, b.Machine) && near(a.Other, b.Other)
}

// TestClientMayBind checks the rule that warns of a client that may have
// been the bottleneck, and the one that says the machine was shared.
func TestClientMayBind(t *testing.T) {
	for _, tc := range []struct {
		name         string
		cpu          CPU
		bound, share bool
	}{
		{"quiet machine, client above the store", CPU{Cores: 2, Client: 0.8, Store: 0.3, StoreProcesses: 1, Machine: 1.15, Other: 0.05}, false, false},
		{"saturated, client above the store", CPU{Cores: 2, Client: 1.0, Store: 0.9, StoreProcesses: 2, Machine: 1.95, Other: 0.05}, true, false},
		{"saturated, client equal to the store", CPU{Cores: 2, Client: 0.9, Store: 0.9, StoreProcesses: 1, Machine: 1.8}, true, false},
		{"saturated by the store", CPU{Cores: 2, Client: 0.6, Store: 1.3, StoreProcesses: 1, Machine: 1.95, Other: 0.05}, false, false},
		{"just under 90% busy", CPU{Cores: 4, Client: 2, Store: 1.5, StoreProcesses: 1, Machine: 3.59, Other: 0.09}, false, false},
		{"saturated by other work", CPU{Cores: 2, Client: 0.57, Store: 0.49, StoreProcesses: 1, Machine: 2, Other: 0.94}, true, true},
		{"other work, not saturated", CPU{Cores: 2, Client: 0.2, Store: 0.3, StoreProcesses: 1, Machine: 1, Other: 0.5}, false, true},
		{"store unknown, client the larger half", CPU{Cores: 2, Client: 1.1, Machine: 1.9, Other: 0.8}, true, false},
		{"store unknown, client the smaller half", CPU{Cores: 2, Client: 0.7, Machine: 1.9, Other: 1.2}, false, false},
		{"not measured", CPU{}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.cpu.ClientMayBind(); got != tc.bound {
				t.Errorf("ClientMayBind() = %t, want %t", got, tc.bound)
			}
			if got := tc.cpu.IsShared(); got != tc.share {
				t.Errorf("IsShared() = %t, want %t", got, tc.share)
			}
		})
	}
	c := CPU{Cores: 2, Client: 1.02, Store: 0.85, StoreProcesses: 2, Machine: 1.96, Other: 0.09, ClientBound: true}
	if got, want := c.String(), "client 1.02, store 0.85 (2 processes), other 0.09, machine 1.96 of 2 cores"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if w := c.Warnings(); len(w) != 1 || !strings.HasPrefix(w[0], "the client may be the bottleneck: ") || !strings.Contains(w[0], "as the store") {
		t.Errorf("Warnings() = %q", w)
	}
	c.StoreProcesses, c.Shared = 0, true
	if got := c.String(); !strings.Contains(got, "store not measured") {
		t.Errorf("String() = %q", got)
	}
	if w := c.Warnings(); len(w) != 2 || !strings.Contains(w[0], "the rest of the machine") || !strings.HasPrefix(w[1], "the machine was shared") {
		t.Errorf("Warnings() = %q", w)
	}
	if w := (CPU{Cores: 2}).Warnings(); w != nil {
		t.Errorf("no flag: Warnings() = %q", w)
	}
}

// TestStartedGroups starts a process as package adapters starts a
// server, the leader of its own group: startedGroups finds its group,
// and sampleCPU counts it as the store's.
func TestStartedGroups(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skipf("no /proc: %v", err)
	}
	var cmd *exec.Cmd
	groups, err := startedGroups(func() error {
		cmd = exec.Command("sleep", "60")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		return cmd.Start()
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	if !slices.Contains(groups, cmd.Process.Pid) {
		t.Errorf("startedGroups = %v, want the group of pid %d among them", groups, cmd.Process.Pid)
	}
	if s := sampleCPU([]int{cmd.Process.Pid}); s.storeProcesses != 1 || s.cores < 1 || s.total == 0 || s.client <= 0 {
		t.Errorf("sampleCPU = %+v, want one store process, the machine's counters and this process's CPU", s)
	}
	// A start that fails reports no group.
	if groups, err := startedGroups(func() error { return errInjected }); err != errInjected || groups != nil {
		t.Errorf("a failed start: %v, %v", groups, err)
	}
}

// TestRunCPU runs a phase bounded by a duration of several of the
// kernel's clock ticks, so that its CPU is measured whatever the
// machine's speed, with a process standing for the store's server.
func TestRunCPU(t *testing.T) {
	if _, err := os.Stat("/proc/stat"); err != nil {
		t.Skipf("no /proc: %v", err)
	}
	server := exec.Command("sleep", "60")
	server.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = server.Process.Kill()
		_ = server.Wait()
	}()
	res, err := run(t.Context(), newMemStore(), newWorkload(t, "c"),
		Options{Clients: 2, Operations: math.MaxUint64, Duration: 50 * time.Millisecond, Servers: []int{server.Process.Pid}})
	if err != nil {
		t.Fatalf("Run: %v; %s", err, repro(t))
	}
	c := res.Run.CPU
	if c == nil || c.Cores < 1 || c.Client < 0 || c.Machine < 0 || c.StoreProcesses != 1 || c.Store < 0 {
		t.Fatalf("CPU %+v: want the machine's cores, the client's and one store process's", c)
	}
	var text strings.Builder
	if err := res.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "cpu: client ") || !strings.Contains(text.String(), "(1 process), other ") {
		t.Errorf("text lacks the CPU line:\n%s", text.String())
	}
}
