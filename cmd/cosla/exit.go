package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/cosla/cosla"
	"github.com/cosla/cosla/internal/lab/adapters"
	"github.com/cosla/cosla/internal/lab/bench"
	"github.com/cosla/cosla/internal/lab/chaos"
	"github.com/cosla/cosla/internal/lab/driver"
	"github.com/cosla/cosla/internal/lab/experiment"
	"github.com/cosla/cosla/internal/lab/measure"
	mrun "github.com/cosla/cosla/internal/lab/measure/run"
	"github.com/cosla/cosla/internal/lab/report"
	"github.com/cosla/cosla/internal/lab/workload"
	"github.com/cosla/cosla/internal/runtime/certs"
	"github.com/cosla/cosla/internal/runtime/clientfile"
	"github.com/cosla/cosla/internal/runtime/cluster"
	"github.com/cosla/cosla/internal/runtime/server"
	"github.com/cosla/cosla/internal/runtime/sim"
	"github.com/cosla/cosla/internal/runtime/topology"
	"github.com/cosla/cosla/internal/runtime/wan"
	"github.com/cosla/cosla/sla"
)

// The exit codes of every command (README, "Exit codes"). exitCode is the
// one place that decides them.
const (
	// exitDone: the command did what it was asked.
	exitDone = 0
	// exitFailed: the store or the network failed (a node did not answer,
	// no cluster runs in the directory, a process did not start).
	exitFailed = 1
	// exitUsage: bad input of any kind, found before anything is sent: the
	// command line, an SLA, key, value, bound, level, scenario, config,
	// file or table name.
	exitUsage = 2
	// exitUnmet: the store answered, but not as asked: a Get met no
	// subSLA of its SLA, a bounded Get could apply no pending write
	// (null), or the test of a read-test-write failed or was not
	// evaluated within its bound.
	exitUnmet = 3
)

// badInput are the errors of input the command was given, wherever they
// are found: they exit exitUsage. A file named on the command line that
// does not exist is one too.
var badInput = []error{
	cosla.ErrInvalid, cosla.ErrTooLarge, cosla.ErrNoTable, cosla.ErrTableExists,
	sla.ErrInvalid, topology.ErrInvalid, clientfile.ErrInvalid, experiment.ErrInvalid,
	workload.ErrInvalid, bench.ErrInvalid, chaos.ErrInvalid, server.ErrInvalidOptions,
	cosla.ErrBadLayout, driver.ErrInvalid, wan.ErrInvalid, sim.ErrConfig,
	measure.ErrInvalidConfig, measure.ErrMalformed, mrun.ErrInvalidWorkload,
	report.ErrMalformed, report.ErrNoRuns, adapters.ErrBadOption, adapters.ErrUnknownStore,
	cluster.ErrBadPlan, cluster.ErrBadPorts, certs.ErrBadClientName, certs.ErrNoAuthority, fs.ErrNotExist,
}

// unmet are the errors of an answer that does not meet what was asked;
// testFailedError is one too.
var unmet = []error{cosla.ErrSLAUnmet, cosla.ErrNull}

// exitCode maps a command's error to its exit code.
func exitCode(err error) int {
	isAny := func(targets []error) bool {
		for _, t := range targets {
			if errors.Is(err, t) {
				return true
			}
		}
		return false
	}
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return exitDone
	case errors.As(err, new(usageError)), isAny(badInput):
		return exitUsage
	case isAny(unmet), errors.As(err, new(testFailedError)):
		return exitUnmet
	}
	return exitFailed
}

// reportError prints a command's error on stderr, once, after the command's
// name, and returns its exit code. The message leaves out a leading
// "cosla: " (the sentinels' package prefix): the line starts with the
// command's name already.
func reportError(stderr io.Writer, path string, err error) int {
	code := exitCode(err)
	if code != exitDone {
		fmt.Fprintf(stderr, "%s: %s\n", strings.TrimSpace("cosla "+path), strings.TrimPrefix(err.Error(), "cosla: "))
	}
	return code
}

// usageError marks an error in the command line rather than in the work.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// testFailedError is the outcome of a read-test-write whose test failed,
// or was not evaluated within the bound, or of a fault campaign whose
// claims did not hold (cosla chaos --faults karma).
type testFailedError struct{ err error }

func (e testFailedError) Error() string { return e.err.Error() }
func (e testFailedError) Unwrap() error { return e.err }
