// Package nettest gives tests network addresses they can rely on while
// other tests, in this process or in others (go test runs packages in
// parallel), open and close ports of their own.
package nettest

import (
	"net"
	"strconv"
	"syscall"
	"testing"
)

// RefusedAddr returns a loopback TCP address that refuses every
// connection until the test ends. A socket bound to its port, and never
// listening, holds the port for the test: without SO_REUSEADDR, no other
// socket can bind it, so no listener can take it. (The address of a
// listener closed before use holds nothing: another test's listener may
// take the port, and a connection to it then hangs or is answered.)
func RefusedAddr(tb testing.TB) string {
	tb.Helper()
	syscall.ForkLock.RLock()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err == nil {
		syscall.CloseOnExec(fd)
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		tb.Fatalf("nettest: socket: %v", err)
	}
	tb.Cleanup(func() { _ = syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		tb.Fatalf("nettest: bind: %v", err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		tb.Fatalf("nettest: getsockname: %v", err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(sa.(*syscall.SockaddrInet4).Port))
}
