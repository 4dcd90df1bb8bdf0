package pebbledb

import (
	"fmt"
	"log/slog"
	"reflect"
	"runtime"

	"github.com/cockroachdb/pebble/v2"
)

// pebbleLogger passes Pebble's log lines to a *slog.Logger, and the
// errors it cannot go on from to the engine (Fatalf).
type pebbleLogger struct {
	logger *slog.Logger
	e      *Engine
}

var _ pebble.Logger = pebbleLogger{}

func (l pebbleLogger) Infof(format string, args ...any) {
	l.logger.Info(fmt.Sprintf(format, args...), "component", "pebble")
}

func (l pebbleLogger) Errorf(format string, args ...any) {
	l.logger.Error(fmt.Sprintf(format, args...), "component", "pebble")
}

// Fatalf is how Pebble reports an error it cannot go on from: a failed
// write or sync of its MANIFEST (at the end of every flush and
// compaction, and at Open), a failed commit, corruption found on disk.
// Pebble expects Fatalf not to return; its default logger exits the
// process, and every node in it. Here the error fails the engine, and the
// goroutine that met it ends:
//
//   - inside one of the engine's calls into Pebble (Open, Get, Scan,
//     commit, Close), by a panic that the call recovers and returns as
//     its error;
//   - on one of Pebble's own goroutines (a flush, a compaction), by
//     runtime.Goexit, which nothing can stop. It runs the goroutine's
//     deferred calls, so Pebble's mutexes are unlocked for the calls in
//     progress, and does nothing more of its work.
//
// Either way Pebble's state is undefined: a flush that ended so never
// reports that it did, and a write waiting for it waits for good. The
// engine is wedged: Close leaves the store open, to the process's exit,
// rather than wait, and the node's Stop leaves such a write behind
// (host.ErrStorageStuck).
func (l pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	l.logger.Error(msg, "component", "pebble", "fatal", true)
	// Wedged before failed: whoever sees the failure must see that Close
	// may not call into Pebble.
	l.e.fail.wedged.Store(true)
	err := l.e.failed(&fatalError{msg: msg, cause: errorArg(args)})
	if inEngineCall() {
		panic(fatalPanic{err})
	}
	runtime.Goexit()
}

// fatalError is an error Pebble reported through Fatalf: its message,
// wrapping the error among its arguments (a failed write's), if any.
type fatalError struct {
	msg   string
	cause error
}

func (e *fatalError) Error() string { return "pebble fatal error: " + e.msg }
func (e *fatalError) Unwrap() error { return e.cause }

func errorArg(args []any) error {
	for _, a := range args {
		if err, ok := a.(error); ok {
			return err
		}
	}
	return nil
}

// fatalPanic is the panic with which Fatalf ends an engine call into
// Pebble; err is the engine's failure.
type fatalPanic struct{ err error }

// recoverFatal, deferred by an engine call into Pebble, returns Fatalf's
// panic as the call's error. Any other panic goes on: in Scan it may be
// the caller's own.
func recoverFatal(err *error) {
	if r := recover(); r != nil {
		p, ok := r.(fatalPanic)
		if !ok {
			panic(r)
		}
		*err = p.err
	}
}

// fatalRecoverers names the functions of this package that call into
// Pebble and recover Fatalf's panic, as runtime frames name them.
var fatalRecoverers = funcNames(Open, (*Engine).Get, (*Engine).Scan, (*Engine).commit, (*Engine).Close)

func funcNames(fns ...any) map[string]bool {
	names := make(map[string]bool, len(fns))
	for _, fn := range fns {
		names[runtime.FuncForPC(reflect.ValueOf(fn).Pointer()).Name()] = true
	}
	return names
}

// inEngineCall reports whether the calling goroutine is inside one of the
// fatalRecoverers, which would recover a panic.
func inEngineCall() bool {
	pcs := make([]uintptr, 64)
	for {
		n := runtime.Callers(1, pcs)
		if n == len(pcs) {
			pcs = make([]uintptr, 2*len(pcs))
			continue
		}
		frames := runtime.CallersFrames(pcs[:n])
		for {
			f, more := frames.Next()
			if fatalRecoverers[f.Function] {
				return true
			}
			if !more {
				return false
			}
		}
	}
}
