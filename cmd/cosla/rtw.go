package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/cosla/cosla"
	"github.com/cosla/cosla/keyfmt"
)

func runRTW(args []string, stdout, stderr io.Writer) error {
	var expectAbsent bool
	return runOneOp(opCommand{
		name: "rtw",
		operands: func() string {
			if expectAbsent {
				return "TESTKEY WRITEKEY VALUE"
			}
			return "TESTKEY EXPECT WRITEKEY VALUE"
		},
		doc: "Read-test-write (dConssandra 2): writes VALUE to WRITEKEY only if TESTKEY's value is EXPECT\n" +
			"(with --expect-absent and no EXPECT: only if TESTKEY has no value) when the tablet's primary\n" +
			"orders the write. Both keys must lie in one tablet. Without --bound it goes to the primary;\n" +
			"with it, the nearest replica takes it as a staged write, and the bound may run out before\n" +
			"the primary evaluates the test. Prints whether the test held, failed or was not evaluated;\n" +
			"exits 0 when it held and 3 when it failed or was not evaluated within the bound.",
		boundDoc: "staged write: the nearest replica answers within `B` with the stage reached and, once the primary has ordered it, the test's outcome: immediate, unbounded or a duration such as 50ms (default: at the primary)",
		flags: func(fs *flag.FlagSet) {
			fs.BoolVar(&expectAbsent, "expect-absent", false, "the test is that TESTKEY has no value (give no EXPECT)")
		},
		op: func(ctx context.Context, cs *clientSession, f *clientFlags, bound cosla.Bound, operands []string) error {
			testKey, rest := operands[0], operands[1:]
			var expect []byte // nil: TESTKEY must have no value
			if !expectAbsent {
				expect, rest = []byte(rest[0]), rest[1:]
			}
			return cs.rtw(ctx, stdout, f.jsonOut, testKey, expect, rest[0], rest[1], bound)
		},
	}, args, stderr)
}

// rtw runs one ReadTestWrite and prints its outcome. It returns an error
// unless the test held: the write was then not made, or not yet known
// to be.
func (cs *clientSession) rtw(ctx context.Context, w io.Writer, jsonOut bool, testKey string, expect []byte, writeKey, value string, bound cosla.Bound) error {
	start := time.Now()
	var opts []cosla.PutOption
	if bound != 0 {
		opts = append(opts, cosla.WithBound(bound))
	}
	wr, err := cs.client.ReadTestWrite(ctx, cs.session, testKey, expect, writeKey, []byte(value), opts...)
	if err != nil {
		return fmt.Errorf("rtw %s: %w", keyfmt.Quote(writeKey), err)
	}
	latency := time.Since(start)
	// The keys as text output shows them (escaped, cut when long); the
	// JSON output has them whole.
	shownTest, shownWrite := keyfmt.Text(testKey), keyfmt.Text(writeKey)
	test := shownTest + " absent"
	if expect != nil {
		test = shownTest + " = " + strconv.Quote(string(expect))
	}
	outcome := rtwOutcome(wr, bound, test, shownWrite)
	if jsonOut {
		out := map[string]any{"op": "rtw", "test_key": keyfmt.JSON(testKey), "key": keyfmt.JSON(writeKey), "site": cs.site,
			"test": wr.Tested.String(), "latency_ns": latency}
		if expect == nil {
			out["expect_absent"] = true
		} else {
			out["expect"] = keyfmt.JSON(expect)
		}
		addWriteFields(out, wr, bound)
		if encErr := json.NewEncoder(w).Encode(out); encErr != nil {
			return encErr
		}
		return outcome
	}
	printRTW(w, wr, bound, test, shownWrite, value)
	if bound == 0 {
		// At the primary, which evaluated the test and ordered the write.
		version := "nothing written"
		if !wr.TS.IsZero() {
			version = "version " + wr.TS.String()
		}
		fmt.Fprintf(w, "  at %s, %s (%.1f ms from %s)\n", wr.Node, version, milliseconds(latency), cs.site)
		return outcome
	}
	fmt.Fprintf(w, "  %s (bound %s, %.1f ms from %s)\n", stagedText(wr), bound, milliseconds(latency), cs.site)
	printHolders(w, wr)
	return outcome
}

// rtwOutcome is the error of a read-test-write whose test did not hold,
// nil when it held; test and shownWrite say the test and the key written.
func rtwOutcome(wr cosla.WriteResult, bound cosla.Bound, test, shownWrite string) error {
	switch {
	case wr.Tested == cosla.Held:
		return nil
	case wr.Tested == cosla.Failed:
		return testFailedError{fmt.Errorf("test %s failed: %s not written", test, shownWrite)}
	case bound != 0:
		return testFailedError{fmt.Errorf("test %s not evaluated within bound %s: the primary writes %s only if it holds when it orders the write", test, bound, shownWrite)}
	}
	// The primary evaluates the test of a write without a bound before
	// it answers; no outcome means it did not see the test at all.
	return fmt.Errorf("test %s: the primary %s answered without an outcome; %s may have been written regardless of the test", test, wr.Node, shownWrite)
}

// printRTW prints a read-test-write's outcome.
func printRTW(w io.Writer, wr cosla.WriteResult, bound cosla.Bound, test, shownWrite, value string) {
	switch wr.Tested {
	case cosla.Held:
		fmt.Fprintf(w, "test %s: held; wrote %s = %s\n", test, shownWrite, strconv.Quote(value))
	case cosla.Failed:
		fmt.Fprintf(w, "test %s: failed; %s not written\n", test, shownWrite)
	case cosla.NotEvaluated:
		if bound == 0 {
			fmt.Fprintf(w, "test %s: no outcome from the primary\n", test)
			break
		}
		fmt.Fprintf(w, "test %s: not evaluated within the bound; the primary writes %s only if the test holds when it orders the write\n", test, shownWrite)
	}
}
