package nettest

import (
	"errors"
	"net"
	"syscall"
	"testing"
)

// TestRefusedAddr: a connection to the address is refused, and no
// listener can take its port while the test runs.
func TestRefusedAddr(t *testing.T) {
	addr := RefusedAddr(t)
	if c, err := net.Dial("tcp", addr); !errors.Is(err, syscall.ECONNREFUSED) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("dial %s: %v, want ECONNREFUSED", addr, err)
	}
	if l, err := net.Listen("tcp", addr); err == nil {
		l.Close()
		t.Fatalf("a listener took %s", addr)
	}
}
