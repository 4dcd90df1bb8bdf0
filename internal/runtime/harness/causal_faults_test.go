package harness_test

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cosla/cosla/internal/core/causal"
	"github.com/cosla/cosla/internal/core/clientcore"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/lab/check"
	"github.com/cosla/cosla/internal/runtime/harness"
	"github.com/cosla/cosla/internal/runtime/site"
	"github.com/cosla/cosla/internal/runtime/topology"
)

var faultSeedsFlag = flag.Int("fault-seeds", 40, "TestCausalFaults: number of seeds to run")

// faultRegressions are worlds that failed before a fix, run beside the
// first -fault-seeds: 15, a get-transaction bound to a ring with a
// failed AZ-B that failed at its deadline although its restriction had
// lifted (tx.go); 191, a cache cut off from its site's storage that
// served a version older than the causal past of a stable one (store.go);
// 3 and 106, intra-ring partitions under which a session bound to the
// split ring by a write from across it stayed bound, its reads of the
// keys across it failing until the heal (7.9 and 10.7 s), because its
// coordinator could learn the write stable only from the writer's
// (stability.go); with the ring-tagged cache, 3 again and 29, sessions
// bound to a ring by their own coordinator's write, which that ring had
// processed (3: read from a cache filled there) but whose acknowledgment
// the fault cut off, their reads of the keys on the node across it
// failing until the heal (rebind.go).
var faultRegressions = []uint64{3, 15, 29, 106, 191}

// azFault is one of the faults Karma 4.4's claims say clients stay
// available under, in availability zones (site.Zone: AZ-F is a site's
// coordinator, cache and clients, AZ-B its storage nodes).
type azFault uint8

const (
	// backFailures: any number of AZ-Bs of one ring fail (Claim 1).
	backFailures azFault = iota
	// frontFailures: any number of AZ-Fs of one ring fail (Claim 1);
	// their clients are excused.
	frontFailures
	// intraRing: the AZs of one ring are split in two sides that cannot
	// reach each other (Claim 2, case 1).
	intraRing
	// interRing: one AZ of one ring and one AZ of another cannot reach
	// each other (Claim 2, case 2).
	interRing
	azFaults
)

func (f azFault) String() string {
	return [...]string{"AZ-B failures", "AZ-F failures", "intra-ring partition", "inter-ring partition"}[f]
}

// The timing of a fault world. The sessions run for faultActive; the
// fault strikes between faultStartMin and faultStartMin+1s and is healed
// faultHold after it began; then the world goes quiet for faultQuiet so
// that every ring and cache converges before the check.
const (
	faultActive   = 24 * time.Second
	faultStartMin = 3 * time.Second
	faultHold     = 14 * time.Second
	faultQuiet    = 60 * time.Second
)

// The protocol's timeouts in a fault world, as in TestRandomizedCausal.
const (
	faultRequestTimeout = 3 * time.Second
	faultReadTimeout    = 500 * time.Millisecond
	faultCacheTimeout   = 400 * time.Millisecond
	faultThinkMax       = 300 * time.Millisecond
)

// faultWaitBound is the longest a session of a client that Karma 4.4
// says stays available may wait for an answer: from its first call after
// its last success to its next success. A read that finds its nearest
// ring's node dead tries its site's cache first, which gives up on its
// own fill after faultCacheTimeout, then waits faultReadTimeout for
// each ring (three at most in these worlds) until one answers, and the
// round trips of these worlds are below 200 ms: about 2.5 s. A read bound
// to a ring whose node is dead or cut off waits for its restriction to
// lift: the restricting write completes in the other rings within a round
// trip or two, its coordinator answers the watch (or, out of reach, the
// key's stores do, asked a faultReadTimeout later), and the read is
// released at its next check, every faultReadTimeout. Either way an available
// client's wait stays below its request timeout, and no operation of it
// fails: a failed one makes the session wait at least that long.
const faultWaitBound = faultRequestTimeout

// TestCausalFaults checks Karma 4.4's fault-tolerance claims in random
// worlds of two or three rings (Karma and Karma-NC): while sessions put,
// get and read transactions, one fault of the claims strikes (any number
// of AZ-B or of AZ-F failures in one ring, a partition within one ring,
// a partition between an AZ of one ring and an AZ of another), lasts
// faultHold, and heals. Then the history must pass the multi-writer
// causal check (as in TestRandomizedCausal), and every session the
// claims say stays available, all but those of a failed AZ-F's clients,
// must have waited less than faultWaitBound for every answer (see wait);
// the excused sessions must be answered again once healed: no wait of
// theirs may end later than a request timeout (an op called just before
// the heal) and faultWaitBound after it.
//
// Each world prints its seed and each session's longest wait; -seed N
// runs one, -fault-seeds N runs N (seeds 1 to N, and faultRegressions),
// and -simtrace FILE writes a world's simulator trace (with -seed, that
// world's).
func TestCausalFaults(t *testing.T) {
	seeds := make([]uint64, 0, *faultSeedsFlag)
	if *seedFlag != 0 {
		seeds = append(seeds, *seedFlag)
	} else {
		for i := range *faultSeedsFlag {
			seeds = append(seeds, uint64(i+1))
		}
		for _, seed := range faultRegressions {
			if seed > uint64(*faultSeedsFlag) {
				seeds = append(seeds, seed)
			}
		}
	}
	var worst [azFaults]sessionWait
	var worlds [azFaults]int
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			f, w := runCausalFault(t, seed)
			worlds[f]++
			if w.wait > worst[f].wait {
				worst[f] = w
			}
		})
	}
	for f := range azFault(azFaults) {
		t.Logf("%s: %d worlds; longest wait of a session the claims keep available %s (%s)", f, worlds[f], worst[f].wait, worst[f].where)
	}
}

func reproduceFault(seed uint64) string {
	return fmt.Sprintf("go test ./internal/runtime/harness -run 'TestCausalFaults' -seed %d -v", seed)
}

// sessionWait is a session's longest wait for an answer, and where it
// happened.
type sessionWait struct {
	wait  time.Duration
	where string
}

// faultSession is one session of a fault world: its client's site and
// its operations in order.
type faultSession struct {
	name string
	site string
	ops  []faultOp
}

type faultOp struct {
	call, ret time.Duration
	ok        bool
	what      string // the op, and its error if it failed
}

// wait is how long a session waited for an answer: from the call of its
// first operation after a success (or after the start) to the return of
// its next success, or of its last operation if none succeeded after it.
// A failed operation, and the think time after it, count in the wait; a
// session never unanswered waits the latency of its slowest operation.
type wait struct {
	from, length time.Duration
}

// waits returns a session's waits, in order.
func waits(ops []faultOp) []wait {
	var out []wait
	cur := wait{from: -1}
	for _, op := range ops {
		if cur.from < 0 {
			cur.from = op.call
		}
		cur.length = op.ret - cur.from
		if op.ok {
			out = append(out, cur)
			cur = wait{from: -1}
		}
	}
	if cur.from >= 0 {
		out = append(out, cur)
	}
	return out
}

// zoneNodes returns the nodes of a site's zone (site.ZoneNodes), and for
// AZ-F its clients too.
func zoneNodes(w *harness.CausalWorld, siteName string, z site.Zone) []wire.NodeID {
	i := slices.IndexFunc(w.Topology.Sites, func(s topology.Site) bool { return s.Name == siteName })
	st := w.Topology.Sites[i]
	opts := site.Options{}
	opts.Config.Member.Voters = site.Voters(w.Topology.ConfigSites())
	out := site.ZoneNodes(st.Name, st.Replicas, opts, z)
	if z == site.Front {
		for _, c := range st.Clients {
			out = append(out, topology.NodeID(st.Name, c))
		}
	}
	return out
}

// zone is one availability zone of one site.
type zone struct {
	site string
	z    site.Zone
}

func (z zone) String() string { return z.site + "/" + z.z.String() }

// plannedFault is a fault drawn for a world: what it does, and the
// sites whose clients it excuses.
type plannedFault struct {
	kind    azFault
	what    string
	excused map[string]bool
	strike  func() error
	heal    func() error
}

// drawFault draws a fault of kind in the world's rings.
func drawFault(w *harness.CausalWorld, r *rand.Rand, kind azFault, rings [][]string) plannedFault {
	s := w.Sim
	ring := r.IntN(len(rings))
	p := plannedFault{kind: kind, excused: map[string]bool{}}
	switch kind {
	case backFailures, frontFailures:
		z := site.Back
		if kind == frontFailures {
			z = site.Front
		}
		sites := slices.Clone(rings[ring])
		r.Shuffle(len(sites), func(i, j int) { sites[i], sites[j] = sites[j], sites[i] })
		sites = sites[:1+r.IntN(len(sites))]
		var nodes []wire.NodeID
		for _, name := range sites {
			for _, id := range zoneNodes(w, name, z) {
				// A failed AZ-F's clients stay up, unanswered: they
				// are the ones the claim excuses.
				if !slices.Contains(w.Clients, id) {
					nodes = append(nodes, id)
				}
			}
			if z == site.Front {
				p.excused[name] = true
			}
		}
		p.what = fmt.Sprintf("%s of %v in ring %d %v", z, sites, ring, rings[ring])
		p.strike = func() error {
			var errs []error
			for _, id := range nodes {
				errs = append(errs, s.Crash(id))
			}
			return errors.Join(errs...)
		}
		p.heal = func() error {
			var errs []error
			for _, id := range nodes {
				errs = append(errs, s.Restart(id))
			}
			return errors.Join(errs...)
		}
	case intraRing:
		var zones []zone
		for _, name := range rings[ring] {
			zones = append(zones, zone{name, site.Front}, zone{name, site.Back})
		}
		// Two non-empty sides: zones[0] on one, a random other on the
		// other, the rest drawn.
		side := make([]bool, len(zones))
		side[1+r.IntN(len(zones)-1)] = true
		for i := 1; i < len(zones); i++ {
			if !side[i] {
				side[i] = r.IntN(2) == 0
			}
		}
		var a, b []zone
		for i, z := range zones {
			if side[i] {
				b = append(b, z)
			} else {
				a = append(a, z)
			}
		}
		p.what = fmt.Sprintf("ring %d %v split into %v and %v", ring, rings[ring], a, b)
		p.strike, p.heal = cutZones(w, a, b)
	case interRing:
		other := (ring + 1 + r.IntN(len(rings)-1)) % len(rings)
		za := zone{rings[ring][r.IntN(len(rings[ring]))], site.Zone(r.IntN(2))}
		zb := zone{rings[other][r.IntN(len(rings[other]))], site.Zone(r.IntN(2))}
		p.what = fmt.Sprintf("%s (ring %d) cut from %s (ring %d)", za, ring, zb, other)
		p.strike, p.heal = cutZones(w, []zone{za}, []zone{zb})
	}
	return p
}

// cutZones returns functions that cut and heal every node of the zones
// a from every node of the zones b.
func cutZones(w *harness.CausalWorld, a, b []zone) (cut, heal func() error) {
	var pairs [][2]wire.NodeID
	for _, za := range a {
		for _, zb := range b {
			for _, x := range zoneNodes(w, za.site, za.z) {
				for _, y := range zoneNodes(w, zb.site, zb.z) {
					pairs = append(pairs, [2]wire.NodeID{x, y})
				}
			}
		}
	}
	each := func(f func(x, y wire.NodeID) error) func() error {
		return func() error {
			var errs []error
			for _, p := range pairs {
				errs = append(errs, f(p[0], p[1]))
			}
			return errors.Join(errs...)
		}
	}
	return each(w.Sim.PartitionNodes), each(w.Sim.HealNodes)
}

// runCausalFault runs one fault world and returns its fault's kind and
// the longest wait of a session the claims say stays available.
func runCausalFault(t *testing.T, seed uint64) (azFault, sessionWait) {
	r := rand.New(rand.NewPCG(seed, 0xfa017))
	topo, rings, _ := randomCausalWorld(r)
	strategy := []causal.Strategy{causal.Karma, causal.KarmaNC}[r.IntN(2)]
	kind := azFault(r.IntN(int(azFaults)))
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d: %s\nreproduce: %s", seed, fmt.Sprintf(format, args...), reproduceFault(seed))
	}
	var trace func(string)
	if *traceFlag != "" {
		f, err := os.Create(*traceFlag)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		trace = func(line string) { fmt.Fprintln(f, line) }
	}
	w, err := harness.NewCausal(harness.CausalOptions{
		Seed: seed, Topology: topo, Rings: rings, Strategy: strategy, Trace: trace,
		Client: clientcore.Options{RequestTimeout: faultRequestTimeout, NotifyEvery: time.Duration(r.IntN(2)) * 700 * time.Millisecond},
		Causal: site.CausalOptions{
			Coordinator: causal.CoordinatorOptions{ReadTimeout: faultReadTimeout, Resend: 400 * time.Millisecond, RandomRings: r.IntN(4) == 0},
			Store:       causal.StoreOptions{Resend: 400 * time.Millisecond},
			Cache:       causal.CacheOptions{ReadTimeout: faultCacheTimeout, Capacity: 1 + r.IntN(8)},
		},
	})
	if err != nil {
		fail("%v", err)
	}
	p := drawFault(w, r, kind, rings)
	t.Logf("seed %d: %s, rings %v, %d sites; %s", seed, strategy, rings, len(topo.Sites), p.what)

	var history []check.MultiOp
	var sessions []*faultSession
	keys := []string{"a", "b", "c", "d", "e"}[:3+r.IntN(3)]
	putPct := []int{10, 25, 40}[r.IntN(3)]
	nextValue := 0
	start := w.Sim.Now()
	for _, id := range w.Clients {
		for range 1 + r.IntN(2) {
			c, s, err := w.Session(id)
			if err != nil {
				fail("%v", err)
			}
			fs := &faultSession{name: fmt.Sprintf("%s#%d", id, s.Causal().ID()), site: causal.Site(id)}
			sessions = append(sessions, fs)
			var step func()
			step = func() {
				call := w.Sim.Now()
				if call >= start+faultActive {
					return
				}
				idx := len(history)
				// end records the op's outcome and schedules the next.
				end := func(ok bool, err error) {
					op := &history[idx]
					op.Return = w.Sim.Now()
					what := fmt.Sprintf("%s %s", op.Kind, op.Key)
					if err != nil {
						what += ": " + err.Error()
					}
					fs.ops = append(fs.ops, faultOp{call: call, ret: w.Sim.Now(), ok: ok, what: what})
					w.Sim.After(time.Duration(r.Int64N(int64(faultThinkMax))), step)
				}
				var err error
				switch p := r.IntN(100); {
				case p < putPct:
					nextValue++
					v := fmt.Sprintf("v%d", nextValue)
					key := keys[r.IntN(len(keys))]
					history = append(history, check.MultiOp{Session: fs.name, Kind: check.Put, Key: key, Value: v, Call: call})
					err = c.Put(s, key, []byte(v), clientcore.PutOptions{}, func(res clientcore.PutResult, err error) {
						if err == nil {
							history[idx].OK, history[idx].Version = true, multiVersion(wire.Version{TS: res.TS, Origin: res.Node})
						}
						end(err == nil, err)
					})
				case p < putPct+(100-putPct)*4/5:
					key := keys[r.IntN(len(keys))]
					history = append(history, check.MultiOp{Session: fs.name, Kind: check.Get, Key: key, Call: call})
					err = c.Get(s, key, clientcore.GetOptions{}, func(res clientcore.GetResult, err error) {
						if err == nil {
							op := &history[idx]
							op.OK, op.Found, op.Value, op.Version = true, res.Found, string(res.Value), multiVersion(res.Causal.Version)
							op.FromBuffer = res.Causal.Source == wire.FromBuffer
						}
						end(err == nil, err)
					})
				default:
					ks := slices.Clone(keys)
					r.Shuffle(len(ks), func(i, j int) { ks[i], ks[j] = ks[j], ks[i] })
					ks = ks[:2+r.IntN(len(ks)-1)]
					history = append(history, check.MultiOp{Session: fs.name, Kind: check.Tx, Call: call})
					err = c.GetTx(s, ks, func(res clientcore.TxResult, err error) {
						if err == nil {
							op := &history[idx]
							op.OK = true
							for _, it := range res.Items {
								op.Items = append(op.Items, check.TxItem{Key: it.Key, Value: string(it.Value), Found: it.Found, Version: multiVersion(it.Version)})
							}
						}
						// A get-transaction that found no snapshot in
						// time was answered: try again, it says.
						end(err == nil || errors.Is(err, clientcore.ErrAborted), err)
					})
				}
				if err != nil {
					fail("%v", err)
				}
			}
			w.Sim.At(start+time.Duration(r.IntN(500))*time.Millisecond, step)
		}
	}
	strikeAt := start + faultStartMin + time.Duration(r.IntN(1000))*time.Millisecond
	var faultErr error
	w.Sim.At(strikeAt, func() { faultErr = errors.Join(faultErr, p.strike()) })
	w.Sim.At(strikeAt+faultHold, func() { faultErr = errors.Join(faultErr, p.heal()) })
	if err := w.Sim.Run(start + faultActive + faultQuiet); err != nil {
		fail("%v", err)
	}
	if faultErr != nil {
		fail("fault: %v", faultErr)
	}
	for i, op := range history {
		if op.Return == 0 {
			fail("op %d (%s %s) never returned", i, op.Kind, op.Key)
		}
	}
	finals, problems := causalFinalStates(w)
	if len(problems) > 0 {
		fail("%s", strings.Join(problems, "\n"))
	}
	if vs := check.CheckMulti(history, finals); len(vs) > 0 {
		var b strings.Builder
		for _, v := range vs[:min(len(vs), 20)] {
			fmt.Fprintf(&b, "  %s\n", v)
		}
		fail("%d violations in a history of %d operations:\n%s", len(vs), len(history), b.String())
	}
	return kind, checkAvailable(t, seed, p, sessions, start, strikeAt)
}

// checkAvailable logs each session's longest wait and fails the test if
// a session the claims say stays available waited faultWaitBound or more
// for an answer, or if an excused one was not answered again once
// healed. It returns the longest wait of a session the claims keep
// available.
func checkAvailable(t *testing.T, seed uint64, p plannedFault, sessions []*faultSession, start, strikeAt time.Duration) sessionWait {
	t.Helper()
	healAt := strikeAt + faultHold
	var worst sessionWait
	var slow []string
	for _, fs := range sessions {
		var longest wait
		failed := 0
		for _, op := range fs.ops {
			if !op.ok {
				failed++
			}
		}
		excused := p.excused[fs.site]
		for _, w := range waits(fs.ops) {
			if w.length > longest.length {
				longest = w
			}
			if w.length < faultWaitBound {
				continue
			}
			line := fmt.Sprintf("%s waited %s from %s after the fault struck", fs.name, w.length, w.from-strikeAt)
			for _, op := range fs.ops {
				if op.call >= w.from && op.call < w.from+w.length {
					line += fmt.Sprintf("\n    %s+%s %s", op.call-strikeAt, op.ret-op.call, op.what)
				}
			}
			// An op called just before the heal may still time out a
			// request timeout after it; the next must be answered in time.
			recovered := w.from+w.length < healAt+faultRequestTimeout+faultWaitBound
			if !excused || !recovered {
				slow = append(slow, line)
			}
		}
		note := ""
		if excused {
			note = " (excused until the heal: its AZ-F failed)"
		}
		t.Logf("%s: %d ops, %d failed, longest wait %s from %s after the fault struck%s",
			fs.name, len(fs.ops), failed, longest.length, longest.from-strikeAt, note)
		if len(fs.ops) == 0 {
			slow = append(slow, fs.name+": no operation returned")
		}
		if !excused && longest.length > worst.wait {
			worst = sessionWait{longest.length, fmt.Sprintf("%s, from %s after the fault struck", fs.name, longest.from-strikeAt)}
		}
	}
	if len(slow) > 0 {
		t.Fatalf("seed %d: under %s (%s, struck %s after the sessions began, healed %s later), sessions waited %s or more for an answer:\n  %s\nreproduce: %s",
			seed, p.kind, p.what, strikeAt-start, faultHold, faultWaitBound, strings.Join(slow, "\n  "), reproduceFault(seed))
	}
	return worst
}
