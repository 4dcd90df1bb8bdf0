package causal

import (
	"errors"
	"fmt"
	"testing"

	"github.com/cosla/cosla/internal/core/wire"
)

// TestBadLayoutIsWireBadLayout: a causal layout error is a table layout
// error too, so that one test (cosla.ErrBadLayout, the CLI's exit code 2)
// finds both, and still its own.
func TestBadLayoutIsWireBadLayout(t *testing.T) {
	err := fmt.Errorf("%w: table %q: no rings", ErrBadLayout, "k")
	if !errors.Is(err, wire.ErrBadLayout) || !errors.Is(err, ErrBadLayout) {
		t.Errorf("%v: errors.Is wire.ErrBadLayout %t, causal.ErrBadLayout %t; want both", err,
			errors.Is(err, wire.ErrBadLayout), errors.Is(err, ErrBadLayout))
	}
	if errors.Is(wire.ErrBadLayout, ErrBadLayout) {
		t.Error("wire.ErrBadLayout matches causal.ErrBadLayout")
	}
}
