package clientcore

import (
	"errors"
	"strings"
	"testing"

	"github.com/cosla/cosla/internal/core/wire"
)

// TestCodeErrorUnencodable: a request the transport could not encode,
// and refused locally, fails as bad input, saying it was not sent.
func TestCodeErrorUnencodable(t *testing.T) {
	err := codeError(wire.Unencodable)
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "not sent") {
		t.Fatalf("codeError(Unencodable) = %v, want ErrInvalid saying it was not sent", err)
	}
}

// TestCodeErrorBehind: a replica catching up after a failover refuses a
// Get; that is the store's state, not the caller's bad input.
func TestCodeErrorBehind(t *testing.T) {
	if err := codeError(wire.Behind); !errors.Is(err, ErrCatchingUp) || errors.Is(err, ErrInvalid) {
		t.Fatalf("codeError(Behind) = %v, want ErrCatchingUp and not ErrInvalid", err)
	}
}
