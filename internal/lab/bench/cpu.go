package bench

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// CPU is what the processors did during a run phase, in cores: CPU
// seconds per second of the phase, so that 1.5 on a machine of 2 cores is
// three quarters of it. It is read from Linux's /proc and getrusage(2).
type CPU struct {
	// Cores is the number of the machine's processors (the cpuN lines of
	// /proc/stat).
	Cores int `json:"cores"`
	// Client is this process's: the sessions, the driver and the store's
	// client library (cosla's among them), with whatever else the process
	// runs, such as the supervisor of a cosla cluster it started.
	Client float64 `json:"client"`
	// Store is that of the store's servers that the bench started (their
	// process groups: a server and its children) and StoreProcesses
	// counts them; both are 0 when it reached servers it did not start.
	// A server child that exits during the phase before its parent
	// collects it is left out.
	Store          float64 `json:"store"`
	StoreProcesses int     `json:"store_processes"`
	// Machine is the busy time of all the processors, whoever used them,
	// and Other what Client and Store leave of it: other processes, the
	// kernel's work charged to no process, and the store's servers when
	// their CPU was not measured.
	Machine float64 `json:"machine"`
	Other   float64 `json:"other"`
	// ClientBound says that the client may have been the bottleneck of
	// the phase (see ClientMayBind), Shared that other work took a share
	// of the machine (see IsShared).
	ClientBound bool `json:"client_bound"`
	Shared      bool `json:"shared"`
}

// MachineBusyShare is the share of its processors' time a machine was
// busy from which its CPU was the bottleneck of a run: each side of the
// benchmark could have gone faster only by taking from the other. The
// figure leaves a tenth for the kernel's own work and sampling noise.
const MachineBusyShare = 0.9

// ClientMayBind reports whether the client may have been the bottleneck
// of a phase: the processors were saturated (busy at least
// MachineBusyShare of their time) and the client took at least as much
// of them as the store did, or, when the store's own CPU is unknown, at
// least half of what was busy. On one machine the two sides share the
// processors, so each operation's CPU is the client's plus the store's;
// once the client's share is the larger, the rate measures the client
// more than the store.
func (c CPU) ClientMayBind() bool {
	if c.Cores == 0 || c.Machine < MachineBusyShare*float64(c.Cores) {
		return false
	}
	if c.StoreProcesses > 0 {
		return c.Client >= c.Store
	}
	return c.Client >= c.Machine/2
}

// OtherShare is the share of a machine's processors that other work
// must take during a run for the run to be reported as made on a shared
// machine (IsShared). A quarter: the kernel's network work charged to no
// process stays below it in a run of its own, other jobs (a build,
// another benchmark) do not.
const OtherShare = 0.25

// IsShared reports whether other work took at least OtherShare of the
// machine's processors during the phase, when the store's CPU was
// measured (otherwise Other holds the store's).
func (c CPU) IsShared() bool {
	return c.Cores > 0 && c.StoreProcesses > 0 && c.Other >= OtherShare*float64(c.Cores)
}

// String renders c for a line of text: "client 1.02, store 0.85 (2
// processes), other 0.09, machine 1.96 of 2 cores".
func (c CPU) String() string {
	store := "store not measured"
	switch c.StoreProcesses {
	case 0:
	case 1:
		store = fmt.Sprintf("store %.2f (1 process)", c.Store)
	default:
		store = fmt.Sprintf("store %.2f (%d processes)", c.Store, c.StoreProcesses)
	}
	return fmt.Sprintf("client %.2f, %s, other %.2f, machine %.2f of %d cores", c.Client, store, c.Other, c.Machine, c.Cores)
}

// Warnings say why the client may have been the bottleneck and that the
// machine was shared, as the flags have it; none when neither is set.
func (c CPU) Warnings() []string {
	var out []string
	for _, w := range []string{c.clientWarning(), c.sharedWarning()} {
		if w != "" {
			out = append(out, w)
		}
	}
	return out
}

func (c CPU) clientWarning() string {
	if !c.ClientBound {
		return ""
	}
	than := "the store"
	if c.StoreProcesses == 0 {
		than = "the rest of the machine"
	}
	return fmt.Sprintf("the client may be the bottleneck: the machine was at least %.0f%% busy and the client used as much CPU as %s",
		100*MachineBusyShare, than)
}

func (c CPU) sharedWarning() string {
	if !c.Shared {
		return ""
	}
	return fmt.Sprintf("the machine was shared: other work used at least a quarter of its %d cores, so the figures are not a quiet machine's", c.Cores)
}

// cpuSample is a reading of the counters CPU is made from.
type cpuSample struct {
	at time.Time
	// client is this process's CPU time (getrusage(2), RUSAGE_SELF).
	client time.Duration
	// store is the CPU time of the processes of the store's groups,
	// children they collected included, and storeProcesses counts them.
	store          time.Duration
	storeProcesses int
	// busy and total are the jiffies of all processors, from /proc/stat;
	// cores counts the processors. cores is 0 when /proc/stat could not be
	// read.
	busy, total uint64
	cores       int
}

// userHZ is the unit of /proc's CPU times: Linux's USER_HZ, which the
// kernel fixes at 100 for user space on every architecture Go builds for
// (proc(5), "clock ticks"; sysconf(_SC_CLK_TCK)).
const userHZ = 100

// sampleCPU reads the counters, with the processes of groups as the
// store's.
func sampleCPU(groups []int) cpuSample {
	s := cpuSample{at: time.Now()}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		s.client = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	if data, err := os.ReadFile("/proc/stat"); err == nil {
		s.busy, s.total, s.cores = parseProcStat(data)
	}
	if len(groups) > 0 {
		for _, p := range processes() {
			if slices.Contains(groups, p.group) {
				s.store += p.cpu
				s.storeProcesses++
			}
		}
	}
	return s
}

// cpuBetween is the CPU of the phase between two samples; nil when
// /proc/stat could not be read, or no clock tick of the kernel's passed
// between them (a phase of less than a hundredth of a second).
func cpuBetween(a, b cpuSample) *CPU {
	elapsed := b.at.Sub(a.at).Seconds()
	if elapsed <= 0 || b.cores == 0 || b.total <= a.total {
		return nil
	}
	c := &CPU{Cores: b.cores, Client: (b.client - a.client).Seconds() / elapsed,
		Machine: float64(b.busy-a.busy) / float64(b.total-a.total) * float64(b.cores)}
	if b.storeProcesses > 0 && b.store >= a.store {
		c.Store, c.StoreProcesses = (b.store-a.store).Seconds()/elapsed, b.storeProcesses
	}
	c.Other = max(0, c.Machine-c.Client-c.Store)
	c.ClientBound, c.Shared = c.ClientMayBind(), c.IsShared()
	return c
}

// parseProcStat returns the busy and total jiffies of all processors
// and their number from /proc/stat: its "cpu" line is user, nice,
// system, idle, iowait, irq, softirq, steal (guest time is inside user);
// idle and iowait are the time not busy.
func parseProcStat(data []byte) (busy, total uint64, cores int) {
	for line := range bytes.Lines(data) {
		fields := strings.Fields(string(line))
		switch {
		case len(fields) == 0 || !strings.HasPrefix(fields[0], "cpu"):
			continue
		case fields[0] != "cpu":
			cores++
			continue
		}
		for i, f := range fields[1:min(len(fields), 9)] {
			v, err := strconv.ParseUint(f, 10, 64)
			if err != nil {
				return 0, 0, 0
			}
			total += v
			if i != 3 && i != 4 {
				busy += v
			}
		}
	}
	return busy, total, cores
}

// process is what /proc/PID/stat says of a process.
type process struct {
	pid, parent, group int
	// cpu is its user and system time with that of the children it has
	// collected (utime, stime, cutime, cstime).
	cpu time.Duration
}

// parseProcessStat parses /proc/PID/stat (proc(5)). The command name, in
// parentheses, may hold spaces and parentheses: the fields that follow
// it start after its last ')'.
func parseProcessStat(data []byte) (process, bool) {
	open, end := bytes.IndexByte(data, '('), bytes.LastIndexByte(data, ')')
	if open < 0 || end < open {
		return process{}, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data[:open])))
	if err != nil {
		return process{}, false
	}
	// From field 3 (state): ppid is field 4, pgrp 5, utime to cstime 14
	// to 17.
	fields := strings.Fields(string(data[end+1:]))
	if len(fields) < 15 {
		return process{}, false
	}
	p := process{pid: pid}
	parent, errParent := strconv.Atoi(fields[1])
	group, errGroup := strconv.Atoi(fields[2])
	if errParent != nil || errGroup != nil {
		return process{}, false
	}
	p.parent, p.group = parent, group
	var ticks int64
	for _, f := range fields[11:15] {
		v, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return process{}, false
		}
		ticks += v
	}
	p.cpu = time.Duration(ticks) * time.Second / userHZ
	return p, true
}

// processes lists the processes of /proc that could be read.
func processes() []process {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []process
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		// A process may exit between the listing and the read.
		if data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
			if p, ok := parseProcessStat(data); ok {
				out = append(out, p)
			}
		}
	}
	return out
}

// childGroups returns the process groups led by children of this
// process. Package adapters and package cluster start every server as
// the leader of a group of its own (so that stopping it stops its
// children), which is how a system's servers are found: the groups that
// appear while it starts (startedGroups).
func childGroups() []int {
	self := os.Getpid()
	var groups []int
	for _, p := range processes() {
		if p.parent == self && p.group == p.pid {
			groups = append(groups, p.pid)
		}
	}
	return groups
}

// startMu keeps two systems of this process from starting at once, so
// that the groups that appear during a start are its own.
var startMu sync.Mutex

// startedGroups runs start and returns the process groups its children
// lead that were not there before (childGroups).
func startedGroups(start func() error) ([]int, error) {
	startMu.Lock()
	defer startMu.Unlock()
	before := childGroups()
	if err := start(); err != nil {
		return nil, err
	}
	var started []int
	for _, g := range childGroups() {
		if !slices.Contains(before, g) {
			started = append(started, g)
		}
	}
	return started, nil
}
