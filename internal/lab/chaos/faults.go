package chaos

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/cosla/cosla/internal/lab/driver"
	"github.com/cosla/cosla/internal/runtime/cluster"
	"github.com/cosla/cosla/internal/runtime/wan"
)

// restartTimeout bounds the restart of a killed site (cluster.Restart
// waits at most 30 s for it to answer).
const restartTimeout = time.Minute

// injector makes the faults, one at a time, on its own goroutine, and
// heals each before the next.
type injector struct {
	c       *cluster.Cluster
	o       Options
	rng     *rand.Rand
	now     func() time.Duration // the run's clock
	tablets int                  // the table's

	mu sync.Mutex
	// primary and secondaries are the sites of the table's replicas, the
	// primary's as the last failover left it.
	primary     string
	secondaries []string
	events      []Event
	counts      map[Fault]int
	failovers   int    // failover faults that moved the primary
	current     string // the fault under way, for progress lines
	err         error  // the first fault that could not be made or healed
}

func newInjector(c *cluster.Cluster, o Options, rng *rand.Rand, now func() time.Duration, primary string, secondaries []string, tablets int) *injector {
	return &injector{c: c, o: o, rng: rng, now: now, primary: primary, secondaries: secondaries, tablets: tablets, counts: map[Fault]int{}}
}

// done reports whether the fault targets are met: every kind asked for
// made at least twice (the primary's site, then a secondary's, for the
// kinds other than Failover; Karma's once, each at a site drawn), and the
// kills and failovers asked for made.
func (in *injector) done() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, f := range in.o.Faults {
		if in.counts[f] < 2 && (in.counts[f] < 1 || !slices.Contains(KarmaFaults, f)) {
			return false
		}
	}
	return in.counts[Kill] >= in.o.Kills && in.failovers >= in.o.Failovers
}

// run makes faults until enough() (the fault targets and the caller's)
// or ctx ends. Every fault is healed before run returns.
func (in *injector) run(ctx context.Context, enough func() bool) {
	for i := 0; ; i++ {
		if !in.wait(ctx, in.draw(in.o.Gap), enough) {
			return
		}
		kind := in.o.Faults[i%len(in.o.Faults)]
		if err := in.inject(ctx, kind); err != nil {
			in.mu.Lock()
			in.err = err
			in.mu.Unlock()
			in.o.Progress(fmt.Sprintf("%6.1fs  fault failed, campaign stopped: %v", in.now().Seconds(), err))
			return
		}
	}
}

// wait waits d, looking at enough every 100 ms; it reports false if the
// campaign should end instead: ctx ended or enough().
func (in *injector) wait(ctx context.Context, d time.Duration, enough func() bool) bool {
	const poll = 100 * time.Millisecond
	for end := time.Now().Add(d); ; {
		if enough() || ctx.Err() != nil {
			return false
		}
		left := time.Until(end)
		if left <= 0 {
			return true
		}
		if driver.Sleep(ctx, min(left, poll)) != nil {
			return false
		}
	}
}

// draw returns a time uniform in [mean/2, 3*mean/2).
func (in *injector) draw(mean time.Duration) time.Duration {
	if mean <= 0 {
		return 0
	}
	return mean/2 + time.Duration(in.rng.Int64N(int64(mean)))
}

// target picks the site the next fault of kind strikes: the primary's
// for the first, a secondary's for the second, then the primary's with
// probability 1/2.
func (in *injector) target(kind Fault) (site, role string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	n := in.counts[kind]
	primary := n == 0 || (n > 1 && in.rng.IntN(2) == 0) || len(in.secondaries) == 0
	if primary {
		return in.primary, "primary"
	}
	return in.secondaries[in.rng.IntN(len(in.secondaries))], "secondary"
}

// setCurrent names the fault under way, for the progress lines.
func (in *injector) setCurrent(fault string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.current = fault
}

// inject makes one fault of kind and heals it.
func (in *injector) inject(ctx context.Context, kind Fault) error {
	e := Event{Kind: kind, Name: kind.String()}
	var err error
	switch {
	case kind == Failover:
		err = in.failover(ctx, &e)
	case slices.Contains(KarmaFaults, kind):
		err = in.azFault(ctx, kind, &e)
	default:
		e.Site, e.Role = in.target(kind)
		e.StartS = in.now().Seconds()
		in.setCurrent(e.String())
		err = in.hold(ctx, kind, e.Site)
	}
	e.EndS = in.now().Seconds()
	in.mu.Lock()
	in.events = append(in.events, e)
	in.counts[kind]++
	in.current = ""
	n := in.counts[kind]
	in.mu.Unlock()
	if err != nil {
		return fmt.Errorf("%s: %w", e, err)
	}
	in.o.Progress(fmt.Sprintf("%6.1fs  %s #%d: %s, healed after %.1fs", e.StartS, kind, n, e, e.EndS-e.StartS))
	return nil
}

// hold makes a fault of kind at site that lasts a drawn hold, and heals
// it.
func (in *injector) hold(ctx context.Context, kind Fault, site string) error {
	switch kind {
	case Kill:
		// Down for [0, Hold): some restarts come at once.
		return in.kill(site, in.draw(in.o.Hold)-in.o.Hold/2)
	case Partition:
		return in.partition(ctx, site, in.draw(in.o.Hold))
	case Pause:
		return in.pause(ctx, site, in.draw(in.o.Hold))
	}
	return fmt.Errorf("chaos: unknown fault %s", kind)
}

// kill SIGKILLs the site's process and restarts it after down.
func (in *injector) kill(site string, down time.Duration) error {
	if err := in.c.Crash(site); err != nil {
		return err
	}
	// Not cut short by the campaign's end: the site must come back.
	time.Sleep(down)
	ctx, cancel := context.WithTimeout(context.Background(), restartTimeout)
	defer cancel()
	return in.c.Restart(ctx, site)
}

// partition cuts every link between the site and the others for hold,
// then heals them, giving each its topology's settings back.
func (in *injector) partition(ctx context.Context, site string, hold time.Duration) error {
	err := in.cut(site, true)
	_ = driver.Sleep(ctx, hold)
	return errors.Join(err, in.cut(site, false))
}

// cut takes every link between the site and the others down, or gives
// each its topology's settings back.
func (in *injector) cut(site string, down bool) error {
	var errs []error
	for _, s := range in.o.Topology.Sites {
		if s.Name == site {
			continue
		}
		st := in.settings(site, s.Name)
		st.Down = down
		errs = append(errs, in.c.SetLink(site, s.Name, st))
	}
	return errors.Join(errs...)
}

// settings returns the topology's settings of the link between two
// sites, as the cluster gave them at start.
func (in *injector) settings(a, b string) wan.Settings {
	l, _ := in.o.Topology.Link(a, b)
	return wan.Settings{Latency: l.RTT / 2, Jitter: l.Jitter}
}

// pause stops the site's process with SIGSTOP for hold, then resumes it.
func (in *injector) pause(ctx context.Context, site string, hold time.Duration) error {
	if err := in.signal(site, syscall.SIGSTOP); err != nil {
		return err
	}
	_ = driver.Sleep(ctx, hold)
	return in.signal(site, syscall.SIGCONT)
}

// signal sends sig to the site's process.
func (in *injector) signal(site string, sig syscall.Signal) error {
	info := in.c.Info()
	i := slices.IndexFunc(info.Sites, func(s cluster.SiteInfo) bool { return s.Name == site })
	if i < 0 || info.Sites[i].PID <= 0 {
		return fmt.Errorf("chaos: no process for site %q", site)
	}
	pid := info.Sites[i].PID
	if err := syscall.Kill(pid, sig); err != nil {
		return fmt.Errorf("kill -%d %d: %w", int(sig), pid, err)
	}
	return nil
}

// snapshot returns the faults made so far, their counts, the one under
// way and the first error.
func (in *injector) snapshot() (events []Event, counts map[Fault]int, current string, err error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	return slices.Clone(in.events), maps.Clone(in.counts), in.current, in.err
}
