package cluster

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// proc is a site process the supervisor started. Its watcher reaps it
// and closes done when it has exited.
type proc struct {
	cmd     *exec.Cmd
	done    chan struct{}
	started time.Time
}

// Restart backoff: a site process that dies is started again after
// restartBase, doubled for each death in a row up to restartMax; a process
// that ran for stableRun before it died starts the count again.
const (
	restartBase = time.Second
	restartMax  = 30 * time.Second
	stableRun   = time.Minute
)

// watch reaps p, the process of site, and restarts it when it died on its
// own: a process Crash or Close stopped is no longer c.procs[site] by then.
func (c *Cluster) watch(site *SiteInfo, p *proc) {
	err := p.cmd.Wait()
	close(p.done)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.procs[site.Name] != p {
		return
	}
	delete(c.procs, site.Name)
	site.PID = 0
	site.Restarts++
	site.LastExit = fmt.Sprintf("%v at %s", err, time.Now().UTC().Format(time.RFC3339))
	if time.Since(p.started) >= stableRun {
		c.deaths[site.Name] = 0
	}
	delay := min(restartBase<<c.deaths[site.Name], restartMax)
	c.deaths[site.Name]++
	c.opts.Logger.Warn("cluster: site process exited; restarting it", "site", site.Name, "pid", p.cmd.Process.Pid,
		"exit", err, "restart_in", delay, "restarts", site.Restarts)
	time.AfterFunc(delay, func() { c.respawn(site) })
}

// respawn starts site's process again after it died, unless the cluster
// closed or the site was restarted meanwhile.
func (c *Cluster) respawn(site *SiteInfo) {
	c.mu.Lock()
	skip := c.closed || c.procs[site.Name] != nil
	c.mu.Unlock()
	if skip {
		return
	}
	if err := c.spawn(site); err != nil {
		c.opts.Logger.Error("cluster: restarting a site failed", "site", site.Name, "err", err)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := writeInfo(&c.info); err != nil {
		c.opts.Logger.Error("cluster: recording the restarted site's pid", "site", site.Name, "err", err)
	}
}

// stop ends p: SIGTERM, then SIGKILL after 10s, and waits for the watcher
// to reap it.
func (p *proc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// StopOrphans stops the site processes a dead supervisor left in dir,
// which still hold their data directories, says so, and waits until they
// have exited; a cluster whose supervisor runs is left alone.
func StopOrphans(ctx context.Context, dir string, say func(string)) error {
	in, err := ReadInfo(dir)
	if err != nil {
		return nil // no description: nothing was left running
	}
	if in.PID > 0 && alive(in.PID) {
		return nil
	}
	pids := killSites(in)
	if len(pids) == 0 {
		return nil
	}
	say(fmt.Sprintf("the supervisor of the cluster in %s (pid %d) had died; stopping the %d site processes it left running (pids %v)", dir, in.PID, len(pids), pids))
	for _, pid := range pids {
		if err := waitGone(ctx, pid); err != nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			if err := waitGone(ctx, pid); err != nil {
				return fmt.Errorf("cosla: site process %d, left by a dead supervisor, does not stop: %w", pid, err)
			}
		}
	}
	return nil
}

// siteProcess reports whether pid is still a cosla serve process of dir,
// not one that reused the number.
func siteProcess(dir string, pid int) bool {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return err == nil && bytes.Contains(cmdline, []byte("serve")) && bytes.Contains(cmdline, []byte(filepath.Clean(dir)))
}

// alive reports whether process pid runs: it exists and is not a zombie
// (dead, waiting to be reaped, as a killed supervisor's sites stay where
// nothing reaps orphans, in a container say).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		// Reaped since the signal, or no /proc: ask again.
		return syscall.Kill(pid, 0) == nil
	}
	// The state follows the command's name, in parentheses that the
	// name itself may contain.
	_, rest, _ := bytes.Cut(stat[bytes.LastIndexByte(stat, ')')+1:], []byte(" "))
	return len(rest) == 0 || rest[0] != 'Z'
}

// waitGone waits until process pid has exited, for at most 10s or the
// context's time.
func waitGone(ctx context.Context, pid int) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for alive(pid) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}
