//go:build unix && !linux

package adapters

import "syscall"

// sysProcAttr puts a server in its own process group, so that stop can
// kill it with its children. Without Linux's Pdeathsig, a server whose
// starter crashed outlives it.
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Credential: cred}
}
