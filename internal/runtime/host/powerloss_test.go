package host

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"hash/fnv"
	"io"
	"maps"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/replica"
	"github.com/cosla/cosla/internal/core/wire"
)

var (
	powerLossPoints = flag.Int("powerloss.points", 0,
		"crash points TestPowerLoss takes; 0 means 200 (50 with -short); the full run is 1000")
	powerLossSeed = flag.Uint64("powerloss.seed", 0,
		"seed of TestPowerLoss's workload and crashes; 0 picks a new one")
)

// The nodes of the power-loss run besides the replica under test: clients,
// a secondary of the replica's primary tablet that pulls, and the primary
// of a tablet the replica holds as a secondary, which pushes.
const (
	plSecondary = wire.NodeID("s/f")
	plPrimary   = wire.NodeID("s/p")
	plInspector = wire.NodeID("s/x") // pulls the log after a restart
	plClients   = 4
	// plInFlightMax bounds the requests waiting for a reply, so that
	// several Puts wait for the same sync (group commit).
	plInFlightMax = 12
)

// plLayout: tablet 0 (keys below "n") has the replica as primary and the
// fake secondary s/f; tablet 1 has the fake primary s/p and the replica as
// secondary. Push mode, so the replica pushes every Put to s/f and applies
// what s/p pushes; the interval is a day, so that no pull timer fires
// during the run.
var plLayout = wire.Layout{
	Name: "powerloss", ID: 7,
	Tablets: []wire.Tablet{
		{Start: "", Primary: storeNodeID, Secondaries: []wire.NodeID{plSecondary}},
		{Start: "n", Primary: plPrimary, Secondaries: []wire.NodeID{storeNodeID}},
	},
	Replication: wire.Replication{Mode: wire.ModePush, Interval: 24 * time.Hour},
}

var (
	plPrimaryTablet   = wire.TabletRef{Table: plLayout.ID, Tablet: 0}
	plSecondaryTablet = wire.TabletRef{Table: plLayout.ID, Tablet: 1}
)

// plFactKind says what a released message told the world.
type plFactKind uint8

const (
	// plVersion: a version of a key at a timestamp was revealed: a Put's
	// acknowledgement, a Get's reply, a pull reply's or a push's entry.
	// The restarted replica must hold that version of the key or a newer
	// one.
	plVersion plFactKind = iota + 1
	// plHigh: the replica, as secondary of tablet 1, reported a high
	// timestamp (PushAck, a Get's reply): it must hold at least that.
	plHigh
)

// plFact is what one released message revealed.
type plFact struct {
	kind   plFactKind
	tablet wire.TabletRef
	key    string
	ts     hlc.Timestamp
	value  []byte
	// put is the request ID of an acknowledged Put, else 0.
	put uint64
}

// plOp is a request the driver sent: a Put's key and value, or a Get's
// key.
type plOp struct {
	tablet wire.TabletRef
	key    string
	value  []byte
}

// plRun is the state of one power-loss run that crash points share.
type plRun struct {
	seed uint64
	// ops is indexed by request ID and allocated in full at the start:
	// the driver fills entry i before sending request i, and the node's
	// goroutines and the checkers read it after.
	ops []plOp
	// pushed are the entries the fake primary pushed, in order,
	// allocated in full like ops.
	pushed []wire.Entry

	mu    sync.Mutex
	facts []plFact // what released messages revealed; append-only
}

// plPoint is one crash point: what a power failure at that moment left
// on the disk, and what the world had been told by then.
type plPoint struct {
	index     int
	fs        *vfs.MemFS
	keptPct   int
	facts     []plFact
	issued    uint64        // requests sent: IDs below it are in ops
	pushed    int           // entries pushed: a prefix of run.pushed
	sinceSent hlc.Timestamp // the largest Since the secondary had sent
	atSync    bool          // taken just before a WAL sync
}

// plResult is what checking one crash point found.
type plResult struct {
	point        int
	refused      error // the restart refused: Pebble or the replica would not open
	failures     []string
	acked        int    // acknowledged Puts checked
	facts        int    // facts checked, the acknowledged Puts included
	state        uint64 // hash of the recovered versions and high timestamps
	secondCrash  bool
	versionsHeld int
}

// TestPowerLoss runs a replica node on Pebble over a crashable in-memory
// filesystem, the way `cosla serve` runs it (host group commit, Pebble
// syncing on its own goroutine), under a load of Puts and Gets from four
// clients, pulls from a secondary and pushes from a primary. At each of
// its crash points it clones the filesystem as a power failure at that
// moment would leave it: what was synced, plus a random share of what was
// not (none, all, or a random percentage of the unsynced blocks and
// directory entries). The driver takes crash points between its requests;
// the filesystem takes some just before a sync of the WAL, when the node
// holds replies that only that sync may release.
//
// Each clone is opened again and a replica recovered on it, which must
// succeed, and must hold everything a released message revealed: every
// acknowledged Put with its value and timestamp (or a newer version of
// its key), every version a Get, pull or push carried, every high
// timestamp it reported as a secondary. The recovered state must be
// consistent: only versions of Puts that were sent, the tablet's
// last-update timestamp that of its newest version, the primary's update
// log holding every acknowledged Put the secondary had not confirmed, a
// secondary's versions a prefix of what was pushed. A new Put after the
// restart must take a later timestamp; every fourth point also crashes
// the restarted node and checks it again.
//
// The seed fixes the workload, the crash points and the choice of
// unsynced data each clone keeps; the interleaving of the node's
// goroutines with the driver's does not repeat exactly, so a seed
// reproduces the run, not every byte of every clone.
func TestPowerLoss(t *testing.T) {
	points := *powerLossPoints
	if points == 0 {
		// About a second and a half; -powerloss.points=1000, the full
		// run, takes some ten seconds.
		points = 200
		if testing.Short() {
			points = 50
		}
	}
	seed := *powerLossSeed
	for seed == 0 {
		seed = rand.Uint64()
	}
	repro := fmt.Sprintf("go test ./internal/runtime/host -run '^TestPowerLoss$' -count=1 -powerloss.seed=%d -powerloss.points=%d", seed, points)
	t.Logf("seed %d, %d crash points; reproduce with: %s", seed, points, repro)

	run := &plRun{seed: seed,
		ops:    make([]plOp, points*plStepsPerPointMax+64),
		pushed: make([]wire.Entry, points*plStepsPerPointMax+64),
	}
	// Checkers run beside the load, one per core, on clones handed over
	// a short queue.
	work := make(chan plPoint, 2)
	results := make(chan plResult, points)
	var wg sync.WaitGroup
	for range max(1, min(runtime.GOMAXPROCS(0)-1, 8)) {
		wg.Go(func() {
			for p := range work {
				results <- run.check(p)
			}
		})
	}
	tk := &plTaker{run: run, work: work, budget: points, rng: rand.New(rand.NewPCG(seed, 1))}
	tk.mem = newCloneGuardFS(vfs.NewCrashableMem())
	tk.mem.beforeWALSync = tk.beforeSync
	notes := make(chan wire.Msg, 1<<16)
	s, err := startStoreNode(tk.mem, replica.Options{}, nil, func(_, to wire.NodeID, m wire.Msg) { run.released(to, m, notes) })
	if err != nil {
		t.Fatal(err)
	}
	run.drive(t, s, tk, rand.New(rand.NewPCG(seed, 0)), notes)
	taken, atSync := tk.stop()
	nodeErr := s.n.Err()
	_ = s.stop()
	close(work)
	wg.Wait()
	close(results)
	if nodeErr != nil {
		t.Fatalf("the node failed during the run: %v", nodeErr)
	}

	var (
		acked, facts, refused, failed, lost, second, held int
		states                                            = map[uint64]bool{}
		reasons                                           = map[string]int{}
	)
	for r := range results {
		acked += r.acked
		facts += r.facts
		held += r.versionsHeld
		for _, f := range r.failures {
			if strings.Contains(f, "LOST") {
				lost++
			}
		}
		states[r.state] = true
		if r.secondCrash {
			second++
		}
		if r.refused != nil {
			refused++
			reasons[r.refused.Error()]++
			t.Errorf("crash point %d: the restart refused: %v", r.point, r.refused)
		}
		if len(r.failures) > 0 {
			failed++
			if failed <= 5 {
				t.Errorf("crash point %d:\n  %s", r.point, joinLines(r.failures))
			}
		}
	}
	t.Logf("%d crash points (%d just before a WAL sync; %d distinct recovered states), %d restarts (%d after a second crash); "+
		"%d Puts acknowledged in the run; checked in all: %d acknowledged Puts, %d facts, %d versions held; "+
		"%d acknowledged or revealed writes lost, %d points with a failed check, %d restarts refused %v",
		taken, atSync, len(states), taken+second, second, run.ackedTotal(), acked, facts, held, lost, failed, refused, reasons)
	if taken != points {
		t.Errorf("took %d crash points, want %d", taken, points)
	}
	if t.Failed() {
		t.Logf("reproduce with: %s", repro)
	}
}

// ackedTotal returns the number of Puts acknowledged in the run.
func (r *plRun) ackedTotal() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, f := range r.facts {
		if f.put != 0 {
			n++
		}
	}
	return n
}

func joinLines(lines []string) string {
	if len(lines) > 10 {
		lines = append(lines[:10:10], fmt.Sprintf("... and %d more", len(lines)-10))
	}
	var b bytes.Buffer
	for i, l := range lines {
		if i > 0 {
			b.WriteString("\n  ")
		}
		b.WriteString(l)
	}
	return b.String()
}

// released records what a message the node released revealed, then hands
// the driver the replies it waits for. It runs on the node's goroutines,
// after the sync that the message waited for.
func (r *plRun) released(to wire.NodeID, m wire.Msg, notes chan<- wire.Msg) {
	r.mu.Lock()
	switch m := m.(type) {
	case *wire.PutReply:
		if m.Code == wire.OK {
			op := r.ops[m.Req]
			r.facts = append(r.facts, plFact{kind: plVersion, tablet: op.tablet, key: op.key, ts: m.TS, value: op.value, put: m.Req})
		}
	case *wire.GetReply:
		op := r.ops[m.Req]
		if m.Code == wire.OK && m.Found {
			r.facts = append(r.facts, plFact{kind: plVersion, tablet: op.tablet, key: op.key, ts: m.VersionTS, value: m.Value})
		}
		if m.Code == wire.OK && !m.Primary {
			r.facts = append(r.facts, plFact{kind: plHigh, tablet: op.tablet, ts: m.HighTS})
		}
	case *wire.PullReply:
		for _, e := range m.Entries {
			r.facts = append(r.facts, plFact{kind: plVersion, tablet: m.Tablet, key: e.Key, ts: e.TS, value: e.Value})
		}
	case *wire.Push:
		r.facts = append(r.facts, plFact{kind: plVersion, tablet: m.Tablet, key: m.Entry.Key, ts: m.Entry.TS, value: m.Entry.Value})
	case *wire.PushAck:
		r.facts = append(r.facts, plFact{kind: plHigh, tablet: m.Tablet, ts: m.High})
	}
	r.mu.Unlock()
	switch m.(type) {
	case *wire.PutReply, *wire.GetReply, *wire.CreateTableReply:
		notes <- m
	case *wire.PullReply:
		if to == plSecondary {
			notes <- m
		}
	}
}

// plTaker takes crash points, for the driver between its requests and
// for the filesystem just before a WAL sync, until it has taken the
// budget.
type plTaker struct {
	run    *plRun
	mem    cloneGuardFS
	work   chan<- plPoint
	budget int

	mu      sync.Mutex
	rng     *rand.Rand // whether a sync is a crash point, and what it keeps
	taken   int
	atSync  int  // points taken just before a WAL sync
	started bool // the table is created: the run is on
	done    bool // budget reached, or the run is over
	// What the driver has sent so far (it updates them before sending).
	issued    uint64        // requests: IDs below it are in run.ops
	pushed    int           // entries pushed: a prefix of run.pushed
	sinceSent hlc.Timestamp // the largest Since the secondary sent
}

// take takes a crash point now: it clones the filesystem as a power
// failure would leave it, with a snapshot of what had been revealed, and
// hands it to the checkers. tk.mu is held.
func (tk *plTaker) takeLocked(atSync bool) {
	p := plPoint{index: tk.taken, issued: tk.issued, pushed: tk.pushed, sinceSent: tk.sinceSent, atSync: atSync}
	switch x := tk.rng.IntN(6); {
	case x < 2 || atSync && x < 4:
		p.keptPct = 0
	case x < 3 && !atSync:
		p.keptPct = 100
	default:
		p.keptPct = 1 + tk.rng.IntN(99)
	}
	cfg := vfs.CrashCloneCfg{UnsyncedDataPercent: p.keptPct, RNG: rand.New(rand.NewPCG(tk.run.seed, uint64(tk.taken)+1))}
	// Hold run.mu: every fact recorded before the clone was released
	// after its sync, so the clone must hold what it reveals.
	tk.run.mu.Lock()
	p.facts = tk.run.facts[:len(tk.run.facts):len(tk.run.facts)]
	p.fs = tk.mem.crashClone(cfg)
	tk.run.mu.Unlock()
	tk.work <- p
	tk.taken++
	if atSync {
		tk.atSync++
	}
	if tk.taken == tk.budget {
		tk.done = true
	}
}

// beforeSync is the WAL's sync hook: now and then a power failure just
// before the disk syncs what the node is about to acknowledge.
func (tk *plTaker) beforeSync() {
	tk.mu.Lock()
	defer tk.mu.Unlock()
	if tk.started && !tk.done && tk.rng.IntN(syncsPerPoint) == 0 {
		tk.takeLocked(true)
	}
}

// step is the driver's chance of a crash point after a request; it
// reports whether the budget is spent.
func (tk *plTaker) step(force bool) bool {
	tk.mu.Lock()
	defer tk.mu.Unlock()
	if !tk.done && (force || tk.rng.IntN(stepsPerPoint) == 0) {
		tk.takeLocked(false)
	}
	return tk.done
}

// sent records what the driver is about to send.
func (tk *plTaker) sent(issued uint64, pushed int, sinceSent hlc.Timestamp) {
	tk.mu.Lock()
	defer tk.mu.Unlock()
	tk.issued, tk.pushed, tk.sinceSent = issued, pushed, sinceSent
}

// stop ends the run: no more crash points.
func (tk *plTaker) stop() (taken, atSync int) {
	tk.mu.Lock()
	defer tk.mu.Unlock()
	tk.done = true
	return tk.taken, tk.atSync
}

const (
	// stepsPerPoint is the mean number of requests between the driver's
	// crash points, syncsPerPoint that of WAL syncs between the
	// filesystem's.
	stepsPerPoint = 4
	syncsPerPoint = 4
	// plStepsPerPointMax bounds the requests of a run; past it the driver
	// takes a point at every step.
	plStepsPerPointMax = 8
)

// drive runs the load until the taker has its crash points.
func (r *plRun) drive(t *testing.T, s *storeNode, tk *plTaker, rng *rand.Rand, notes <-chan wire.Msg) {
	t.Helper()
	s.n.Deliver("c/0", &wire.CreateTableRequest{Req: 1, Layout: plLayout})
	if m := (<-notes).(*wire.CreateTableReply); m.Code != wire.OK {
		t.Fatalf("CreateTable: %v", m.Code)
	}
	tk.mu.Lock()
	tk.started = true
	tk.mu.Unlock()
	var (
		next      = uint64(1) // last request ID used
		pushed    int
		inFlight  int
		pulling   bool
		since     hlc.Timestamp // the fake secondary's high: what it confirmed
		sinceSent hlc.Timestamp // the largest Since it sent
		pushTS    = hlc.Timestamp{WallNanos: 1_000_000_000}
		prevPush  hlc.Timestamp
	)
	note := func(m wire.Msg) {
		inFlight--
		if pr, ok := m.(*wire.PullReply); ok {
			pulling = false
			if pr.Code == wire.OK {
				since = pr.High
			}
		}
	}
	value := func(id uint64) []byte {
		size := 1 + rng.IntN(300)
		if rng.IntN(20) == 0 {
			// Now and then a value that spans WAL blocks (32 KiB).
			size = 4<<10 + rng.IntN(40<<10)
		}
		v := strconv.AppendUint(nil, id, 10)
		v = append(v, ':')
		prefix := len(v)
		for len(v) < size {
			v = binary.LittleEndian.AppendUint64(v, rng.Uint64())
		}
		return v[:max(size, prefix)]
	}
	for {
		for drained := false; !drained; {
			select {
			case m := <-notes:
				note(m)
			default:
				drained = true
			}
		}
		if inFlight >= plInFlightMax {
			note(<-notes)
		}
		full := next+1 >= uint64(len(r.ops)) || pushed == len(r.pushed)
		client := wire.NodeID(fmt.Sprintf("c/%d", rng.IntN(plClients)))
		switch x := rng.IntN(100); {
		case full:
		case x < 55:
			next++
			op := plOp{tablet: plPrimaryTablet, key: fmt.Sprintf("k%02d", rng.IntN(40))}
			op.value = value(next)
			r.ops[next] = op
			inFlight++
			tk.sent(next+1, pushed, sinceSent)
			s.n.Deliver(client, &wire.PutRequest{Req: next, Tablet: op.tablet, Key: op.key, Value: op.value})
		case x < 70:
			next++
			op := plOp{tablet: plPrimaryTablet, key: fmt.Sprintf("k%02d", rng.IntN(40))}
			if rng.IntN(3) == 0 {
				op = plOp{tablet: plSecondaryTablet, key: fmt.Sprintf("p%02d", rng.IntN(20))}
			}
			r.ops[next] = op
			inFlight++
			tk.sent(next+1, pushed, sinceSent)
			s.n.Deliver(client, &wire.GetRequest{Req: next, Tablet: op.tablet, Key: op.key})
		case x < 76:
			if pulling {
				continue
			}
			// The secondary confirms what it holds, so the primary may
			// truncate its log up to it.
			pulling = true
			inFlight++
			sinceSent = hlc.Max(sinceSent, since)
			tk.sent(next+1, pushed, sinceSent)
			s.n.Deliver(plSecondary, &wire.PullRequest{Tablet: plPrimaryTablet, Since: since})
		default:
			pushTS.WallNanos += 1 + rng.Int64N(1000)
			e := wire.Entry{TS: pushTS, Key: fmt.Sprintf("p%02d", rng.IntN(20)), Value: value(uint64(pushed))}
			r.pushed[pushed] = e
			pushed++
			tk.sent(next+1, pushed, sinceSent)
			s.n.Deliver(plPrimary, &wire.Push{Tablet: plSecondaryTablet, Prev: prevPush, Entry: e, Ack: rng.IntN(2) == 0})
			prevPush = pushTS
		}
		if tk.step(full) {
			break
		}
	}
	for inFlight > 0 {
		note(<-notes)
	}
}

// check restarts a replica on a crash point's clone and checks what it
// recovered.
func (r *plRun) check(p plPoint) plResult {
	res := plResult{point: p.index}
	fail := func(format string, args ...any) {
		res.failures = append(res.failures, fmt.Sprintf(format, args...))
	}
	replies := make(chan wire.Msg, 16)
	send := func(_, _ wire.NodeID, m wire.Msg) {
		switch m.(type) {
		case *wire.PutReply, *wire.PullReply:
			replies <- m
		}
	}
	fs := newCloneGuardFS(p.fs)
	s, err := startStoreNode(fs, replica.Options{PullBatchMax: 1 << 20}, nil, send)
	if err != nil {
		res.refused = err
		return res
	}
	defer func() {
		if err := s.stop(); err != nil {
			fail("close after the restart: %v", err)
		}
	}()
	st := r.recovered(s, p, fail)
	res.state, res.versionsHeld = st.hash(), len(st.primary)+len(st.secondary)
	for _, f := range p.facts {
		res.facts++
		if f.put != 0 {
			res.acked++
		}
	}

	// The primary's update log: every acknowledged Put the secondary had
	// not confirmed is in it, and it holds nothing else.
	reply := func() wire.Msg {
		select {
		case m := <-replies:
			return m
		case <-s.n.done:
			fail("the restarted node stopped: %v", s.n.Err())
			return nil
		}
	}
	s.n.Deliver(plInspector, &wire.PullRequest{Tablet: plPrimaryTablet, Since: p.sinceSent})
	pull, _ := reply().(*wire.PullReply)
	if pull == nil {
		return res
	}
	r.checkLog(p, st, pull, fail)

	// A Put after the restart is ordered after everything revealed.
	newest := pull.High
	for _, f := range p.facts {
		newest = hlc.Max(newest, f.ts)
	}
	const checkReq = 1 << 62
	checkValue := []byte("after the restart")
	s.n.Deliver("c/check", &wire.PutRequest{Req: checkReq, Tablet: plPrimaryTablet, Key: "m-check", Value: checkValue})
	put, _ := reply().(*wire.PutReply)
	if put == nil {
		return res
	}
	if put.Code != wire.OK || !newest.Less(put.TS) {
		fail("a Put after the restart: %v at %s, want OK after %s", put.Code, put.TS, newest)
		return res
	}

	if p.index%4 != 0 {
		return res
	}
	// Crash the restarted node too, losing everything unsynced: what it
	// recovered, and the Put it acknowledged since, must stay.
	res.secondCrash = true
	again := fs.crashClone(vfs.CrashCloneCfg{})
	s2, err := startStoreNode(again, replica.Options{}, nil, func(wire.NodeID, wire.NodeID, wire.Msg) {})
	if err != nil {
		res.refused = fmt.Errorf("second restart: %w", err)
		return res
	}
	defer func() { _ = s2.stop() }()
	p.facts = append(p.facts[:len(p.facts):len(p.facts)],
		plFact{kind: plVersion, tablet: plPrimaryTablet, key: "m-check", ts: put.TS, value: checkValue, put: checkReq})
	r.recovered(s2, p, func(format string, args ...any) { fail("after a second crash: "+format, args...) })
	return res
}

// plState is what a restarted replica holds.
type plState struct {
	primary, secondary map[string]wire.Entry
	// lastPrimary is tablet 0's last update; high and lastSecondary are
	// tablet 1's high timestamp and last update.
	lastPrimary, high, lastSecondary hlc.Timestamp
}

func (st plState) hash() uint64 {
	h := fnv.New64a()
	for _, m := range []map[string]wire.Entry{st.primary, st.secondary} {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			e := m[k]
			fmt.Fprintf(h, "%s@%s=%x;", k, e.TS, e.Value)
		}
	}
	fmt.Fprintf(h, "%s", st.high)
	return h.Sum64()
}

// recovered reads a restarted replica's versions and metadata and checks
// them against what was revealed before the crash and what was sent.
func (r *plRun) recovered(s *storeNode, p plPoint, fail func(string, ...any)) plState {
	var st plState
	held, m, err := s.versions(plPrimaryTablet, plSecondaryTablet)
	if err != nil {
		fail("reading the restarted node: %v", err)
		return st
	}
	st.primary, st.secondary = held[0], held[1]
	if m.StorageErrors != 0 {
		fail("%d storage errors reading the recovered store, the last: %s", m.StorageErrors, m.LastStorageError)
	}
	if len(m.Tablets) != 2 {
		fail("recovered %d tablets, want 2: %+v", len(m.Tablets), m.Tablets)
		return st
	}
	st.lastPrimary = m.Tablets[0].LastUpdate
	st.high, st.lastSecondary = m.Tablets[1].High, m.Tablets[1].LastUpdate

	// Nothing revealed is lost.
	for _, f := range p.facts {
		switch f.kind {
		case plVersion:
			held := st.primary
			if f.tablet == plSecondaryTablet {
				held = st.secondary
			}
			v, ok := held[f.key]
			what := "revealed version"
			if f.put != 0 {
				what = fmt.Sprintf("acknowledged Put %d", f.put)
			}
			switch {
			case !ok || v.TS.Less(f.ts):
				fail("LOST: %s of %q at %s; the replica holds %s", what, f.key, f.ts, describe(v, ok))
			case v.TS == f.ts && !bytes.Equal(v.Value, f.value):
				fail("%s of %q at %s: value %.40q, want %.40q", what, f.key, f.ts, v.Value, f.value)
			}
		case plHigh:
			if st.high.Less(f.ts) {
				fail("LOST: tablet 1 reported high %s, recovered high %s", f.ts, st.high)
			}
		}
	}

	// Tablet 0 holds only versions of Puts that were sent, each at the
	// timestamp its acknowledgement gave, if it was acknowledged.
	ackedTS := map[uint64]hlc.Timestamp{}
	for _, f := range p.facts {
		if f.put != 0 {
			ackedTS[f.put] = f.ts
		}
	}
	var newest hlc.Timestamp
	for k, v := range st.primary {
		newest = hlc.Max(newest, v.TS)
		if k == "m-check" {
			if !bytes.Equal(v.Value, []byte("after the restart")) {
				fail("corrupt: %q holds %.40q", k, v.Value)
			}
			continue
		}
		id, ok := putID(v.Value)
		if !ok || id >= p.issued || r.ops[id].key != k || !bytes.Equal(r.ops[id].value, v.Value) {
			fail("corrupt: %q holds %.40q at %s, not the value of a Put of it", k, v.Value, v.TS)
			continue
		}
		if ts, ok := ackedTS[id]; ok && ts != v.TS {
			fail("Put %d of %q was acknowledged at %s, recovered at %s", id, k, ts, v.TS)
		}
	}
	if st.lastPrimary != newest {
		fail("tablet 0's last update %s is not its newest version's timestamp %s", st.lastPrimary, newest)
	}

	// Tablet 1 holds the pushed versions up to its high timestamp: a
	// prefix of what the primary pushed, and its last update the newest
	// of them.
	want := map[string]wire.Entry{}
	for _, e := range r.pushed[:p.pushed] {
		if st.high.Less(e.TS) {
			break
		}
		want[e.Key] = e
	}
	var last hlc.Timestamp
	for k, e := range want {
		last = hlc.Max(last, e.TS)
		v, ok := st.secondary[k]
		if !ok || v.TS != e.TS || !bytes.Equal(v.Value, e.Value) {
			fail("tablet 1 at high %s lacks the push of %q at %s; holds %s", st.high, k, e.TS, describe(v, ok))
		}
	}
	if len(st.secondary) != len(want) {
		fail("tablet 1 holds %d keys, the pushes up to its high %s %d", len(st.secondary), st.high, len(want))
	}
	if st.lastSecondary != last || (!st.high.IsZero() && !slices.ContainsFunc(r.pushed[:p.pushed], func(e wire.Entry) bool { return e.TS == st.high })) {
		fail("tablet 1: last update %s, high %s; want the newest push up to a pushed timestamp, %s", st.lastSecondary, st.high, last)
	}
	return st
}

// checkLog checks the primary's update log, as a pull from Since returned
// it.
func (r *plRun) checkLog(p plPoint, st plState, pull *wire.PullReply, fail func(string, ...any)) {
	if pull.Code != wire.OK || pull.Snapshot || pull.More {
		fail("pull of the log after %s: code %v snapshot %t more %t; the log was truncated past what the secondary confirmed",
			p.sinceSent, pull.Code, pull.Snapshot, pull.More)
		return
	}
	inLog := map[hlc.Timestamp]wire.Entry{}
	prev := p.sinceSent
	for _, e := range pull.Entries {
		if !prev.Less(e.TS) {
			fail("log out of order: %s after %s", e.TS, prev)
		}
		prev = e.TS
		inLog[e.TS] = e
		id, ok := putID(e.Value)
		if !ok || id >= p.issued || r.ops[id].key != e.Key || !bytes.Equal(r.ops[id].value, e.Value) {
			fail("corrupt log record %q at %s: %.40q", e.Key, e.TS, e.Value)
		}
		if v, ok := st.primary[e.Key]; !ok || v.TS.Less(e.TS) {
			fail("log record %q at %s is newer than the key's version %s", e.Key, e.TS, describe(v, ok))
		}
	}
	for _, f := range p.facts {
		if f.put == 0 || !p.sinceSent.Less(f.ts) {
			continue
		}
		if e, ok := inLog[f.ts]; !ok || e.Key != f.key || !bytes.Equal(e.Value, f.value) {
			fail("LOST from the log: acknowledged Put %d of %q at %s", f.put, f.key, f.ts)
		}
	}
}

// putID reads the request ID a value starts with.
func putID(v []byte) (uint64, bool) {
	i := bytes.IndexByte(v, ':')
	if i <= 0 {
		return 0, false
	}
	id, err := strconv.ParseUint(string(v[:i]), 10, 64)
	return id, err == nil
}

func describe(v wire.Entry, ok bool) string {
	if !ok {
		return "nothing"
	}
	return fmt.Sprintf("%.40q at %s", v.Value, v.TS)
}

// cloneGuardFS is a crashable MemFS that can be cloned while Pebble uses
// it. It works around a deadlock in Pebble v2.1.7's MemFS: ReuseForWrite
// (Pebble recycling a WAL file) read-locks the filesystem's clone mutex
// and then, through Rename, read-locks it again; a CrashClone that asks
// for the write lock in between holds back the second read lock, and the
// two wait for each other for ever. Lock does the same through Create.
// Here those two hold a lock of the wrapper's that crashClone takes
// first.
//
// beforeWALSync, if set, is called before every sync of a WAL file.
type cloneGuardFS struct {
	*vfs.MemFS
	mu            *sync.RWMutex
	beforeWALSync func()
}

func newCloneGuardFS(mem *vfs.MemFS) cloneGuardFS {
	return cloneGuardFS{MemFS: mem, mu: &sync.RWMutex{}}
}

func (fs cloneGuardFS) hook(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil || fs.beforeWALSync == nil || !strings.HasSuffix(name, ".log") {
		return f, err
	}
	return syncHookFile{File: f, before: fs.beforeWALSync}, nil
}

func (fs cloneGuardFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.MemFS.Create(name, category)
	return fs.hook(name, f, err)
}

func (fs cloneGuardFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	fs.mu.RLock()
	defer fs.mu.RUnlock()
	f, err := fs.MemFS.ReuseForWrite(oldname, newname, category)
	return fs.hook(newname, f, err)
}

func (fs cloneGuardFS) Lock(name string) (io.Closer, error) {
	fs.mu.RLock()
	defer fs.mu.RUnlock()
	return fs.MemFS.Lock(name)
}

func (fs cloneGuardFS) crashClone(cfg vfs.CrashCloneCfg) *vfs.MemFS {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.MemFS.CrashClone(cfg)
}

// syncHookFile calls before ahead of every sync.
type syncHookFile struct {
	vfs.File
	before func()
}

func (f syncHookFile) Sync() error { f.before(); return f.File.Sync() }

func (f syncHookFile) SyncData() error { f.before(); return f.File.SyncData() }

func (f syncHookFile) SyncTo(length int64) (bool, error) { f.before(); return f.File.SyncTo(length) }
