package node_test

import (
	"testing"
	"time"

	"github.com/cosla/cosla/internal/core/node"
)

// afterEnv records the timers set through it.
type afterEnv struct {
	node.Env
	timers []any
}

func (e *afterEnv) After(_ time.Duration, timer any) { e.timers = append(e.timers, timer) }

// TestRouteTimers checks that a routed Env tags each timer with its route,
// nested routes included (a host hosted inside another), and that the
// tag prints the core's own timer.
func TestRouteTimers(t *testing.T) {
	base := &afterEnv{}
	inner := node.RouteTimers(node.RouteTimers(base, 1), 7)
	inner.After(time.Second, "retry")
	want := node.RoutedTimer{Route: 1, Timer: node.RoutedTimer{Route: 7, Timer: "retry"}}
	if len(base.timers) != 1 || base.timers[0] != want {
		t.Fatalf("timers = %v, want [%v]", base.timers, want)
	}
	if got := want.String(); got != "{1 {7 retry}}" {
		t.Errorf("String() = %q, want %q", got, "{1 {7 retry}}")
	}
}
