// Package node defines the contract between cosla's deterministic protocol
// cores (storage replicas, clients) and the runtimes that host them (the
// simulator and the server).
//
// A protocol core is a state machine. The runtime hands it one event at a
// time and the core acts on the world only through its Env. The runtime's
// duties, in order:
//
//  1. Construct the handler and call Start with an Env before any other
//     call. Start recovers durable state from Env.Engine().
//  2. Deliver every message addressed to the node with Receive and every
//     timer the node set with Fire, one call at a time, never concurrently.
//  3. On a crash, discard the handler (its volatile state is lost), keep
//     the engine minus its unsynced writes, and go back to step 1 with a
//     fresh handler. Timers set before the crash never fire.
//
// A handler must not start goroutines, read the wall clock, sleep, use
// global random numbers or do I/O other than through Env.
//
// The options idiom (STYLE.md habit 5, after pebble's Options). A core is
// configured by one options struct whose field comments state its
// defaults, with two methods:
//
//	func (o Options) EnsureDefaults() Options // a copy, every unset (zero) field given its default
//	func (o Options) Validate() error         // the first invalid field, named
//
// EnsureDefaults takes and returns a value, so the caller's struct is
// never changed under it; the constructor calls it and Start calls
// Validate (replica.Options is the model). No other way of defaulting:
// no setDefaults, no defaults filled in inline in a constructor.
package node

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/cosla/cosla/internal/core/storage"
	"github.com/cosla/cosla/internal/core/wire"
)

// Env is the world as a handler sees it.
type Env interface {
	// ID is the node's own identity.
	ID() wire.NodeID
	// Now is a monotonic clock for measuring intervals and setting timers.
	// It does not drift with clock skew.
	Now() time.Time
	// WallNanos is the node's physical clock in nanoseconds since the Unix
	// epoch, as read by its hybrid logical clock. It may be skewed.
	WallNanos() int64
	// Send queues m for delivery to the node to. Delivery is not
	// guaranteed; messages may be delayed, reordered or lost.
	Send(to wire.NodeID, m wire.Msg)
	// After arranges for Fire(timer) to be called once, d from now.
	After(d time.Duration, timer any)
	// Rand is the node's seeded random source.
	Rand() *rand.Rand
	// Engine is the node's durable storage.
	Engine() storage.Engine
	// Logger is the node's logger.
	Logger() *slog.Logger
}

// Handler is a protocol core.
type Handler interface {
	Start(env Env) error
	Receive(from wire.NodeID, m wire.Msg)
	Fire(timer any)
}

// Urgency is implemented by a handler some of whose messages should not
// wait behind the others: a causal table's storage node serves the
// messages that carry writes towards stability (propagations, dependency
// checks, acknowledgements) before the reads queued with them, so that
// a write's time to stability does not grow with the read load
// (causal.Urgent says why). A runtime that queues a node's messages
// (the simulator for a node serving one message at a time, the server's
// mailbox) serves the urgent ones first, each class in arrival order;
// timers are not held behind messages. Urgent must depend on the
// message alone: runtimes call it outside the node's events, from other
// goroutines.
type Urgency interface {
	Urgent(m wire.Msg) bool
}

// RoutedTimer is a timer that a core hosted inside another set, tagged
// with the route back to it. A host that runs several cores behind its
// own Env (causal.Beside, a causal Node's cores per table, a client's
// causal tables) starts each with RouteTimers, and its Fire hands a
// RoutedTimer's Timer to the core its Route names.
type RoutedTimer struct {
	Route uint64
	Timer any
}

// String shows the route and the core's own timer, so that a trace of
// it reads the same in every run.
func (t RoutedTimer) String() string { return fmt.Sprintf("{%d %v}", t.Route, t.Timer) }

// RouteTimers returns env with an After that tags every timer with route
// (RoutedTimer).
func RouteTimers(env Env, route uint64) Env { return routedEnv{Env: env, route: route} }

type routedEnv struct {
	Env
	route uint64
}

func (e routedEnv) After(d time.Duration, timer any) {
	e.Env.After(d, RoutedTimer{Route: e.route, Timer: timer})
}
