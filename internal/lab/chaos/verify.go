package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/cosla/cosla/internal/core/clientcore"
	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/lab/check"
	"github.com/cosla/cosla/internal/lab/driver"
	"github.com/cosla/cosla/sla"
)

const (
	// verifySessions read the keys at a site at once.
	verifySessions = 16
	// verifyRounds is how often the primary is asked again for the keys
	// whose read failed.
	verifyRounds = 3
	// examplesMax bounds the lost Puts and violations a report describes.
	examplesMax = 10
)

// version is a key's version at the primary after the campaign.
type version struct {
	found bool
	ts    hlc.Timestamp
}

func (v version) String() string {
	if !v.found {
		return "no version"
	}
	return "version " + v.ts.String()
}

// verify finds the primary, marks the Puts rolled back at a failover,
// reads every key written at the primary (those reads join the history),
// counts the acknowledged Puts missing there, waits for the secondaries
// to converge and checks the history, and a failover campaign's
// failovers.
func (r *run) verify(ctx context.Context, rep *Report) error {
	o := r.o
	keys := writtenKeys(r.history)
	workload := len(r.history)
	rep.MetByGuarantee = map[string]int{}
	for k, n := range check.Summarize(r.history).ByConsistency {
		rep.MetByGuarantee[k.String()] = n
	}
	if err := r.locatePrimary(ctx, rep); err != nil {
		return err
	}
	rolledFiles, err := r.rolledBack()
	if err != nil {
		return err
	}
	rolled := markLost(r.history, rolledFiles)

	strong, err := sla.Parse("strong unbounded 1")
	if err != nil {
		return err
	}
	final := map[string]version{}
	pending := keys
	for round := 1; round <= verifyRounds && len(pending) > 0; round++ {
		o.Progress(fmt.Sprintf("%6.1fs  reading %d keys at the primary (%s), round %d", r.loop.Now().Seconds(), len(pending), r.primary, round))
		err := r.reads(ctx, fmt.Sprintf("verify-%d", round), r.primary, pending, strong, clientcore.Primary, func(op *driver.Op) {
			r.history = append(r.history, op.CheckOp())
			if op.Err == nil && op.Primary {
				final[op.Key] = version{found: op.Found, ts: op.TS}
			}
		})
		if err != nil {
			return fmt.Errorf("chaos: read the keys at the primary: %w", err)
		}
		pending = slices.DeleteFunc(slices.Clone(pending), func(k string) bool { _, ok := final[k]; return ok })
	}
	rep.Unverified = len(pending)
	r.countLost(rep, final)
	o.Progress(fmt.Sprintf("%6.1fs  %d acknowledged Puts missing at the primary and not rolled back, %d rolled back, %d keys unread",
		r.loop.Now().Seconds(), rep.Lost, rep.RolledBack, rep.Unverified))

	if err := r.converge(ctx, rep, keys, final); err != nil {
		return err
	}

	vs := check.Check(r.history)
	rep.CheckedOps, rep.Violations = len(r.history), len(vs)
	for _, v := range vs[:min(len(vs), examplesMax)] {
		rep.ViolationExamples = append(rep.ViolationExamples, v.String())
	}
	o.Progress(fmt.Sprintf("%6.1fs  history of %d ops checked: %d violations", r.loop.Now().Seconds(), rep.CheckedOps, rep.Violations))
	if slices.Contains(o.Faults, Failover) {
		r.checkFailovers(rep, workload, finalVersions(final), rolled)
	}
	return nil
}

// countLost counts the acknowledged Puts missing at the primary after
// the campaign: lost (Report.Lost) unless a replica rolled them back at
// a failover (Report.RolledBack), which a write level that did not make
// them durable allows.
func (r *run) countLost(rep *Report, final map[string]version) {
	for _, op := range r.history {
		if op.Kind != check.Put || !op.OK {
			continue
		}
		v, ok := final[op.Key]
		switch {
		case op.Lost:
			rep.RolledBack++
			continue
		case !ok || (v.found && !v.ts.Less(op.TS)):
			continue
		}
		rep.Lost++
		if len(rep.LostExamples) < examplesMax {
			rep.LostExamples = append(rep.LostExamples, fmt.Sprintf("key %q: Put of %s by %s acknowledged at %.3fs with version %s; the primary has %s",
				op.Key, op.Value, op.Session, op.Return.Seconds(), op.TS, v))
		}
	}
}

// finalVersions is final as package check's failover rules take it: the
// zero timestamp for a key the primary holds no version of.
func finalVersions(final map[string]version) map[string]hlc.Timestamp {
	out := make(map[string]hlc.Timestamp, len(final))
	for k, v := range final {
		out[k] = v.ts
	}
	return out
}

// locatePrimary takes the primary's site from the cluster's status, once
// settled (a failover may have moved it), and the other replicas' sites
// for the secondaries, in the report too. A cluster that does not settle
// is a fault error; the checks then go on at the leased primary, if any.
func (r *run) locatePrimary(ctx context.Context, rep *Report) error {
	var primary wire.NodeID
	st, ok := awaitStatus(ctx, r.c, r.tablets, failoverWait, func(p map[int32]wire.NodeID, settled bool) bool {
		primary = p[0]
		return settled
	})
	switch {
	case ctx.Err() != nil:
		return errInterrupted
	case !ok:
		rep.FaultErrors = append(rep.FaultErrors, fmt.Sprintf("chaos: the cluster did not settle within %s after the faults (every site up, one leased primary per tablet): %s",
			failoverWait, describePrimaries(st, table)))
	}
	if primary == "" {
		return nil
	}
	r.primary = siteOf(primary)
	r.secondaries = slices.DeleteFunc(slices.Clone(r.sites), func(s string) bool { return s == r.primary })
	rep.Primary, rep.Secondaries = r.primary, r.secondaries
	return nil
}

// writtenKeys returns the keys of the Puts of h, in order of first Put.
func writtenKeys(h []check.Op) []string {
	var keys []string
	seen := map[string]bool{}
	for _, op := range h {
		if op.Kind == check.Put && !seen[op.Key] {
			seen[op.Key] = true
			keys = append(keys, op.Key)
		}
	}
	return keys
}

// converge reads every key at each secondary, from a client at its site,
// until each serves the primary's version of every key or the converge
// timeout ends.
func (r *run) converge(ctx context.Context, rep *Report, keys []string, final map[string]version) error {
	o := r.o
	eventual, err := sla.Parse("eventual unbounded 1")
	if err != nil {
		return err
	}
	// A round of reads runs to its end, each read within its request
	// timeout: a slow read is not a secondary behind. ConvergeTimeout
	// bounds the rounds begun.
	start := time.Now()
	deadline, cancel := context.WithTimeout(ctx, o.ConvergeTimeout)
	defer cancel()
	behind := map[string][]string{}
	for _, site := range r.secondaries {
		behind[site] = slices.DeleteFunc(slices.Clone(keys), func(k string) bool { _, ok := final[k]; return !ok })
	}
	left := func() int {
		n := 0
		for _, ks := range behind {
			n += len(ks)
		}
		return n
	}
	// why[site][key] is why the key was behind at the site when last
	// read: "older" (or not found), "newer" (than the primary's: a bug),
	// "elsewhere" (served by another site's node), "failed"; a key with
	// no entry was not read.
	why := map[string]map[string]string{}
	for round := 1; left() > 0 && deadline.Err() == nil; round++ {
		if round > 1 {
			// The secondaries pull every PullInterval: give them one.
			_ = driver.Sleep(deadline, min(o.PullInterval, 5*time.Second))
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		var errs []error
		for _, site := range r.secondaries {
			if len(behind[site]) == 0 {
				continue
			}
			o.Progress(fmt.Sprintf("%6.1fs  convergence round %d: reading %d keys at %s", r.loop.Now().Seconds(), round, len(behind[site]), site))
			wg.Go(func() {
				seen := map[string]string{}
				err := r.reads(ctx, fmt.Sprintf("converge-%s-%d", site, round), site, behind[site], eventual, clientcore.Closest, func(op *driver.Op) {
					want := final[op.Key]
					switch {
					case op.Err != nil:
						seen[op.Key] = "failed"
					case siteOf(wire.NodeID(op.Node)) != site:
						seen[op.Key] = "elsewhere"
					case op.Found == want.found && op.TS == want.ts:
						seen[op.Key] = ""
					case !op.Found || (want.found && op.TS.Less(want.ts)):
						seen[op.Key] = "older"
					default:
						seen[op.Key] = "newer"
					}
				})
				ks := slices.DeleteFunc(slices.Clone(behind[site]), func(k string) bool { w, ok := seen[k]; return ok && w == "" })
				mu.Lock()
				defer mu.Unlock()
				behind[site] = ks
				why[site] = seen
				if err != nil {
					errs = append(errs, fmt.Errorf("chaos: read the keys at %s: %w", site, err))
				}
			})
		}
		wg.Wait()
		if ctx.Err() != nil {
			return errInterrupted
		}
		if err := errors.Join(errs...); err != nil {
			return err
		}
	}
	rep.ConvergeS = time.Since(start).Seconds()
	rep.Converged = left() == 0
	if !rep.Converged {
		rep.Behind = map[string]map[string]int{}
		for site, ks := range behind {
			if len(ks) == 0 {
				continue
			}
			counts := map[string]int{}
			for _, k := range ks {
				w, ok := why[site][k]
				if !ok {
					w = "unread"
				}
				counts[w]++
			}
			rep.Behind[site] = counts
		}
	}
	return nil
}

// reads runs a group of Gets of keys, each once, from a client at site,
// and shows every op to see, on the caller's goroutine. Its ops are on
// the campaign's clock.
func (r *run) reads(ctx context.Context, name, site string, keys []string, agreement sla.SLA, strategy clientcore.Strategy, see func(*driver.Op)) error {
	sessions := min(verifySessions, len(keys))
	// Each Get ends within its request timeout.
	ctx, cancel := context.WithTimeout(ctx, time.Duration(len(keys)/sessions+2)*r.o.RequestTimeout+time.Minute)
	defer cancel()
	loop := driver.NewLoop(r.loop.Origin())
	g := &driver.Group{Name: name, Site: site, Sessions: sessions,
		Streams: []driver.Stream{{Mix: &driver.ReadMix{Keys: keys}}},
		Rand:    rand.New(rand.NewPCG(r.o.Seed, uint64(len(keys)))),
		Cosla:   driver.Cosla{SLA: agreement, Strategy: strategy, Client: clientcore.Options{RequestTimeout: r.o.RequestTimeout}}}
	d, err := driver.New(r.target(loop), driver.Spec{Groups: []*driver.Group{g}, Steps: len(keys),
		Recorder: &driver.Recorder{OnOp: func(_ *driver.Group, op *driver.Op) { see(op) }}})
	if err != nil {
		return err
	}
	defer d.Close()
	d.StartAt(loop, 0)
	if err := loop.Run(ctx, d.Done); err != nil {
		d.Stop()
		drain, cancel := context.WithTimeout(context.Background(), 2*r.o.RequestTimeout)
		_ = loop.Run(drain, d.Done)
		cancel()
		return err
	}
	return d.Err()
}
