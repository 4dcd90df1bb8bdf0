package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestStopOrphans stands in a process named like a site's serve process
// for one a dead supervisor left behind.
func TestStopOrphans(t *testing.T) {
	dir := t.TempDir()
	orphan := exec.Command("bash", "-c", `exec -a "cosla serve --config $0/a/serve.yaml" sleep 60`, dir)
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
	// Until bash has exec'd, the child's command line is not the site's.
	for {
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", orphan.Process.Pid))
		if strings.HasPrefix(string(cmdline), "cosla serve") {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the stand-in orphan never took its name: %q", cmdline)
		case <-time.After(time.Millisecond):
		}
	}

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
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for alive(p.Process.Pid) {
		select {
		case <-ctx.Done():
			t.Fatal("an exited, unreaped process is still alive")
		default:
		}
	}
	if err := p.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the zombie no longer answers signal 0 (%v): the test proves nothing", err)
	}
}
