package cluster

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestStopOrphans stands in a process named like a site's serve process
// for one a dead supervisor left behind.
func TestStopOrphans(t *testing.T) {
	dir := t.TempDir()
	// sleep under a site process's name: Start returns once it runs
	// under it.
	orphan := exec.Command("sleep", "60")
	orphan.Args[0] = "cosla serve --config " + dir + "/a/serve.yaml"
	if err := orphan.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = orphan.Wait() }() // as init reaps a real orphan
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// A cluster whose supervisor is alive is left alone.
	in := Info{Dir: dir, PID: os.Getpid(), Sites: []SiteInfo{{Name: "a", PID: orphan.Process.Pid}}}
	if err := writeInfo(&in); err != nil {
		t.Fatal(err)
	}
	var said []string
	say := func(s string) { said = append(said, s) }
	if err := StopOrphans(ctx, dir, say); err != nil || len(said) != 0 {
		t.Fatalf("with a live supervisor: %v, said %q; want nothing done", err, said)
	}

	in.PID = dead.Process.Pid
	if err := writeInfo(&in); err != nil {
		t.Fatal(err)
	}
	if err := StopOrphans(ctx, dir, say); err != nil {
		t.Fatal(err)
	}
	if alive(orphan.Process.Pid) {
		t.Fatalf("StopOrphans returned while the orphan still ran; said %q", said)
	}
	if len(said) != 1 || !strings.Contains(said[0], "had died") {
		t.Errorf("said %q, want one line naming the dead supervisor", said)
	}
	if _, err := os.Stat(filepath.Join(dir, InfoFile)); !os.IsNotExist(err) {
		t.Errorf("the dead cluster's description is still there: %v", err)
	}
}

// TestAliveSaysNoToAZombie: a process that exited but was not reaped
// still answers signal 0, yet runs no longer.
func TestAliveSaysNoToAZombie(t *testing.T) {
	p := exec.Command("true")
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer p.Wait()
	// Wait for its exit without reaping it: it stays a zombie.
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, p.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
		t.Fatal(err)
	}
	if alive(p.Process.Pid) {
		t.Fatal("an exited, unreaped process is still alive")
	}
	if err := p.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the zombie no longer answers signal 0 (%v): the test proves nothing", err)
	}
}
