//go:build unix

package adapters

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Limits of the harness. Every wait is bounded (TigerBeetle: "put a limit
// on everything").
const (
	// startTimeout bounds a server's start, from spawn to ready.
	startTimeout = 60 * time.Second
	// stopTimeout bounds a server's clean shutdown; after it the harness
	// kills the process group.
	stopTimeout = 10 * time.Second
	// pollInterval is the pause between readiness probes.
	pollInterval = 20 * time.Millisecond
	// probeTimeout bounds one readiness probe.
	probeTimeout = time.Second
	// startAttempts bounds the starts retried because a port picked as
	// free was taken before the server bound it.
	startAttempts = 3
	// logTailBytes is how much of a server's log an error quotes.
	logTailBytes = 2048
)

// binary is a server executable and the Debian package that ships it.
type binary struct {
	name  string   // looked up on PATH
	paths []string // Debian locations tried after PATH; may hold globs
	pkg   string   // Debian package to install
}

// find returns the path of b, or an error wrapping ErrNotInstalled.
func (b binary) find() (string, error) {
	if p, err := exec.LookPath(b.name); err == nil {
		return p, nil
	}
	for _, pattern := range b.paths {
		matches, _ := filepath.Glob(pattern)
		// Globs sort lexically; the last match is the newest major
		// version of PostgreSQL for the versions Debian ships (10-99).
		for i := len(matches) - 1; i >= 0; i-- {
			if st, err := os.Stat(matches[i]); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
				return matches[i], nil
			}
		}
	}
	return "", fmt.Errorf("%w: %s not found on PATH or at %s; install the Debian package %s (apt-get install -y %s)",
		ErrNotInstalled, b.name, strings.Join(b.paths, ", "), b.pkg, b.pkg)
}

// freePorts returns n distinct TCP ports on 127.0.0.1 that were free a
// moment ago. Another process may take one before the server binds it;
// the harness then retries (startAttempts).
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("adapters: finding a free port: %w", err)
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func loopback(port int) string { return fmt.Sprintf("127.0.0.1:%d", port) }

// errExited is wrapped by the error of a readiness wait whose server
// exited first.
var errExited = errors.New("adapters: server exited during start")

// proc is one server process, the leader of its own process group.
type proc struct {
	name    string // label for errors, e.g. "redis primary"
	cmd     *exec.Cmd
	logPath string
	// stopSignal asks the server to shut down cleanly: SIGTERM, or SIGINT
	// for PostgreSQL's fast shutdown.
	stopSignal syscall.Signal

	done    chan struct{} // closed when the process has exited
	waitErr error         // set before done is closed

	stopOnce sync.Once
	stopErr  error
}

// spawn starts a server process with its stdout and stderr appended to
// logPath. cred, if not nil, runs it as another user.
func spawn(name, logPath string, stopSignal syscall.Signal, cred *syscall.Credential, path string, args ...string) (*proc, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("adapters: %s log: %w", name, err)
	}
	defer logFile.Close() // the child has its own descriptor
	// Not exec.CommandContext: the server must outlive the start's ctx.
	cmd := exec.Command(path, args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = sysProcAttr(cred)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("adapters: starting %s (%s): %w", name, path, err)
	}
	p := &proc{name: name, cmd: cmd, logPath: logPath, stopSignal: stopSignal, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has exited.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop asks the server to shut down, waits up to stopTimeout, then kills
// its process group, and always kills stragglers of the group (children
// of a server that outlived it). Safe to call more than once.
func (p *proc) stop() error {
	p.stopOnce.Do(func() {
		pid := p.cmd.Process.Pid
		if !p.exited() {
			_ = syscall.Kill(pid, p.stopSignal)
			select {
			case <-p.done:
			case <-time.After(stopTimeout):
				p.stopErr = fmt.Errorf("adapters: %s (pid %d) did not stop within %v; killed it", p.name, pid, stopTimeout)
			}
		}
		// The process group is the server's pid (Setpgid).
		if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) && p.stopErr == nil {
			p.stopErr = fmt.Errorf("adapters: killing %s process group %d: %w", p.name, pid, err)
		}
		<-p.done
	})
	return p.stopErr
}

// logTail returns the end of the server's log, for error messages.
func (p *proc) logTail() string { return fileTail(p.logPath) }

func fileTail(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > logTailBytes {
		_, _ = f.Seek(st.Size()-logTailBytes, io.SeekStart)
	}
	b, _ := io.ReadAll(io.LimitReader(f, logTailBytes))
	return string(bytes.TrimSpace(b))
}

// startRetrying runs start with attempt 1, 2, ... until it succeeds, fails
// for a reason other than a port taken meanwhile (portTaken), or has run
// startAttempts times.
func startRetrying[S any](start func(attempt int) (S, error)) (S, error) {
	for attempt := 1; ; attempt++ {
		s, err := start(attempt)
		if err == nil || attempt == startAttempts || !portTaken(err) {
			return s, err
		}
	}
}

// portTaken reports whether a failed start failed because a port it was
// given was taken, so that a retry on fresh ports may succeed.
func portTaken(err error) bool {
	if err == nil {
		return false
	}
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "address already in use") || strings.Contains(msg, "could not create any tcp/ip sockets")
}

// waitReady polls probe every pollInterval until it returns nil, the
// process in procs exits, or startTimeout (or ctx) expires. Each probe
// gets its own probeTimeout.
func waitReady(ctx context.Context, what string, procs []*proc, probe func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	var last error
	for {
		for _, p := range procs {
			if p.exited() {
				return fmt.Errorf("%w: %s: %v; log %s:\n%s", errExited, p.name, p.waitErr, p.logPath, p.logTail())
			}
		}
		pctx, pcancel := context.WithTimeout(ctx, probeTimeout)
		last = probe(pctx)
		pcancel()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			var logs strings.Builder
			for _, p := range procs {
				fmt.Fprintf(&logs, "\nlog %s:\n%s", p.logPath, p.logTail())
			}
			return fmt.Errorf("adapters: %s not ready: %w (last probe: %v)%s", what, ctx.Err(), last, logs.String())
		case <-ticker.C:
		}
	}
}

// started is what a Store started for itself, none for one connected to
// servers the caller runs: its server processes, and its Close, which
// runs once.
type started struct {
	procs []*proc
	once  sync.Once
	err   error
}

// closeOnce runs release the first time only and returns its error
// every time.
func (s *started) closeOnce(release func() error) error {
	s.once.Do(func() { s.err = release() })
	return s.err
}

// stopAll stops procs concurrently and joins their errors.
func stopAll(procs []*proc) error {
	errs := make([]error, len(procs))
	var wg sync.WaitGroup
	for i, p := range procs {
		if p == nil {
			continue
		}
		wg.Go(func() { errs[i] = p.stop() })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// runOnce runs a command to completion (initdb, pg_basebackup), bounded by
// ctx and startTimeout, with its output appended to logPath.
func runOnce(ctx context.Context, name, logPath string, cred *syscall.Credential, path string, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("adapters: %s log: %w", name, err)
	}
	defer logFile.Close()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = sysProcAttr(cred)
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("adapters: %s: %w; log %s:\n%s", name, err, logPath, fileTail(logPath))
	}
	return nil
}

const (
	sigterm = syscall.SIGTERM
	sigint  = syscall.SIGINT
)

func mkdirAll(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("adapters: %w", err)
	}
	return nil
}
