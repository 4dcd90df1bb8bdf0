package adapters

import "syscall"

// sysProcAttr puts a server in its own process group, so that stop can
// kill it with its children, and has the kernel kill it if the process
// that started it dies first (Pdeathsig), so that a crashed test or
// benchmark leaves no server behind. Go sets Pdeathsig after switching
// to cred, so the switch does not clear it.
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: cred}
}
