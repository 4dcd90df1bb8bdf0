package wan

import (
	"errors"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

func newTestNet(t *testing.T, opts Options) *Net {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	n, err := NewNet(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return n
}

func addLink(t *testing.T, n *Net, k Key, target string) *Link {
	t.Helper()
	l, err := n.Add(k, target)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestNetSet(t *testing.T) {
	echo := startEcho(t)
	base := Settings{Latency: time.Millisecond, Jitter: time.Microsecond}
	n := newTestNet(t, Options{Latency: base.Latency, Jitter: base.Jitter})
	ab := addLink(t, n, Key{From: "us", To: "england", Target: "r1"}, echo.addr())
	ba := addLink(t, n, Key{From: "england", To: "us", Target: "r2"}, echo.addr())
	ac := addLink(t, n, Key{From: "us", To: "india", Target: "r3"}, echo.addr())

	if _, err := n.Add(ab.Key(), echo.addr()); !errors.Is(err, ErrExists) {
		t.Fatalf("Add of an existing key = %v, want ErrExists", err)
	}
	if err := n.Set("us", "england", Settings{Latency: -1}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Set with negative latency = %v, want ErrInvalid", err)
	}

	usEngland := Settings{Latency: 73 * time.Millisecond, Jitter: 600 * time.Microsecond}
	if err := n.Set("england", "us", usEngland); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		l    *Link
		want Settings
	}{{ab, usEngland}, {ba, usEngland}, {ac, base}} {
		if got := tc.l.Stats().Settings; got != tc.want {
			t.Errorf("%s: settings %v, want %v", tc.l.Key(), got, tc.want)
		}
	}
	// A link added later between the same sites starts with their settings.
	late := addLink(t, n, Key{From: "us", To: "england", Target: "r4"}, echo.addr())
	if got := late.Settings(); got != usEngland {
		t.Errorf("%s added after Set: settings %v, want %v", late.Key(), got, usEngland)
	}
	if n.Link(late.Key()) != late || n.Link(Key{From: "nowhere"}) != nil {
		t.Errorf("Link lookup returned the wrong link")
	}

	// Partition us-england: both directions go down, us-india stays up.
	if err := n.Set("us", "england", Settings{Latency: usEngland.Latency, Down: true}); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, st := range n.Stats() {
		keys = append(keys, st.Key.String())
		if want := st.Key.To != "india"; st.Settings.Down != want {
			t.Errorf("%s: down=%t, want %t", st.Key, st.Settings.Down, want)
		}
	}
	if !slices.IsSorted(keys) || len(keys) != 4 {
		t.Errorf("Stats keys %v, want 4 in order", keys)
	}
	if err := roundTrip(ac.Addr(), []byte("still up")); err != nil {
		t.Errorf("us->india during a us-england partition: %v", err)
	}
}

func TestNetClosed(t *testing.T) {
	echo := startEcho(t)
	n := newTestNet(t, Options{})
	addLink(t, n, Key{From: "a", To: "b", Target: "x"}, echo.addr())
	for range 2 {
		if err := n.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := n.Add(Key{From: "a", To: "b", Target: "y"}, echo.addr()); !errors.Is(err, ErrClosed) {
		t.Errorf("Add after Close = %v, want ErrClosed", err)
	}
	if err := n.Set("a", "b", Settings{}); !errors.Is(err, ErrClosed) {
		t.Errorf("Set after Close = %v, want ErrClosed", err)
	}
	if st := n.Stats(); len(st) != 0 {
		t.Errorf("Stats after Close has %d links", len(st))
	}
}

// TestCloseLeavesNoGoroutines closes a Net while connections are open, some
// with bytes parked for an hour, and checks that every goroutine the
// package started has exited.
func TestCloseLeavesNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	echo := startEcho(t)
	n, err := NewNet(Options{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	fast := addLink(t, n, Key{From: "a", To: "b", Target: "x"}, echo.addr())
	slow := addLink(t, n, Key{From: "b", To: "a", Target: "x"}, echo.addr())
	if err := slow.SetLatency(time.Hour, time.Minute); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		echoOnce(t, dial(t, fast.Addr()), "open")
		c := dial(t, slow.Addr())
		if _, err := c.Write([]byte("parked")); err != nil {
			t.Fatal(err)
		}
	}
	if err := roundTrip(fast.Addr(), []byte("finished")); err != nil {
		t.Fatal(err)
	}
	// Only the parked connections' bytes must be in the slow link's queue
	// before Close; wait until its reader has stamped them.
	waitFor(t, "slow link connections open", func() bool { return slow.Stats().ConnsOpen == 3 })

	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	// Close waited for the package's goroutines; poll only because a
	// goroutine that has signalled its WaitGroup may not have returned yet.
	var leaked []string
	waitFor(t, "no package goroutines left", func() bool {
		leaked = leakedGoroutines()
		return len(leaked) == 0
	})
	if len(leaked) > 0 {
		t.Fatalf("%d goroutines left after Net.Close:\n%s", len(leaked), strings.Join(leaked, "\n\n"))
	}
	echo.stop()
	waitFor(t, "goroutine count back to its start", func() bool { return runtime.NumGoroutine() <= before })
}
