package host

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/cosla/cosla/internal/core/node"
	"github.com/cosla/cosla/internal/core/replica"
	"github.com/cosla/cosla/internal/core/storage"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/runtime/pebbledb"
)

// These tests fail the disk under a replica node on Pebble, at chosen
// points of a run of Puts: a WAL sync that returns EIO, WAL writes that
// return ENOSPC, a full disk. The node must stop acknowledging, report the
// error (Err, its log), and a restart on what the disk kept, with the
// fault gone, must hold every Put it acknowledged.
//
// A flush that cannot write its sstable (a disk full for sstables while
// Pebble reuses its WAL files) fails the engine too (pebbledb's
// TestFlushENOSPC), and the node stops when its engine says so
// (TestEngineFailureStopsNode). A node writing while that flush runs may
// wait in Pebble's write stall for it, and so for good: Stop leaves that
// write behind (TestDiskFullStalledWrite).

const storeNodeID = wire.NodeID("s/r1")

// storeNode is a replica node on a Pebble store.
type storeNode struct {
	eng *pebbledb.Engine
	rep *replica.Node
	n   *Node
}

// startStoreNode opens the store in fs and starts a replica node on it.
// A store that does not open, or a replica that does not recover from it,
// is an error: a restart that refuses. The caller stops the node and
// closes the engine (stop).
func startStoreNode(fs vfs.FS, opts replica.Options, logger *slog.Logger, send func(from, to wire.NodeID, m wire.Msg)) (*storeNode, error) {
	eng, err := pebbledb.Open("db", pebbledb.Options{FS: fs, MemTableSizeBytes: 64 << 10, Logger: logger})
	if err != nil {
		return nil, err
	}
	rep := replica.New(opts)
	n, err := StartNode(NodeOptions{ID: storeNodeID, Handler: rep, Engine: eng, Send: send, Logger: logger, Seed: 1})
	if err != nil {
		_ = eng.Close()
		return nil, err
	}
	return &storeNode{eng: eng, rep: rep, n: n}, nil
}

// stop stops the node and closes its engine, returning Close's error,
// or, if Stop left a storage call behind, the node's error.
func (s *storeNode) stop() error {
	s.n.Stop()
	if err := s.n.Err(); errors.Is(err, ErrStorageStuck) {
		return err
	}
	return s.eng.Close()
}

// versions returns every version the node holds of a tablet, by key,
// and its metrics.
func (s *storeNode) versions(refs ...wire.TabletRef) ([]map[string]wire.Entry, replica.Metrics, error) {
	var entries [][]wire.Entry
	var m replica.Metrics
	err := s.n.Do(func(node.Handler) {
		for _, ref := range refs {
			entries = append(entries, s.rep.Versions(ref))
		}
		m = s.rep.Metrics()
	})
	if err != nil {
		return nil, m, err
	}
	out := make([]map[string]wire.Entry, len(refs))
	for i := range refs {
		out[i] = make(map[string]wire.Entry, len(entries[i]))
		for _, e := range entries[i] {
			out[i][e.Key] = e
		}
	}
	return out, m, nil
}

// syncBuffer is a log destination the node's goroutines may share.
type syncBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	written chan struct{} // signalled after each Write
}

func newSyncBuffer() *syncBuffer { return &syncBuffer{written: make(chan struct{}, 1)} }

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case s.written <- struct{}{}:
	default:
	}
	return s.b.Write(p)
}

// waitFor waits until the log holds text. It waits on the log's writes,
// not on a clock: if text never comes, the test binary's -timeout ends
// the run with every goroutine's stack.
func (s *syncBuffer) waitFor(t *testing.T, text string) {
	t.Helper()
	for !strings.Contains(s.String(), text) {
		<-s.written
	}
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var faultLayout = wire.Layout{
	Name: "t", ID: 1,
	Tablets:     []wire.Tablet{{Start: "", Primary: storeNodeID}},
	Replication: wire.Replication{Mode: wire.ModePull, Interval: time.Minute},
}

var faultTablet = wire.TabletRef{Table: faultLayout.ID}

func isWALOp(op errorfs.Op) bool { return strings.HasSuffix(op.Path, ".log") }

func isSyncOp(op errorfs.Op) bool {
	return op.Kind == errorfs.OpFileSync || op.Kind == errorfs.OpFileSyncData || op.Kind == errorfs.OpFileSyncTo
}

func isWriteOp(op errorfs.Op) bool {
	return op.Kind == errorfs.OpFileWrite || op.Kind == errorfs.OpFileWriteAt
}

// diskFaults are the faults the tests inject, each with the error the node
// must report.
var diskFaults = []struct {
	name   string
	cause  error
	inject func(errorfs.Op) error
}{
	{"sync EIO", syscall.EIO, func(op errorfs.Op) error {
		if isWALOp(op) && isSyncOp(op) {
			return syscall.EIO
		}
		return nil
	}},
	{"WAL write ENOSPC", syscall.ENOSPC, func(op errorfs.Op) error {
		if isWALOp(op) && isWriteOp(op) {
			return syscall.ENOSPC
		}
		return nil
	}},
	{"disk full", syscall.ENOSPC, diskFull},
}

// diskFull fails every allocation, as a full disk does: new files,
// writes, and syncs of data written before (delayed allocation reports
// ENOSPC at fsync).
func diskFull(op errorfs.Op) error {
	switch {
	case op.Kind == errorfs.OpCreate, op.Kind == errorfs.OpReuseForWrite, op.Kind == errorfs.OpLink,
		op.Kind == errorfs.OpMkdirAll, isWriteOp(op), isSyncOp(op):
		return syscall.ENOSPC
	}
	return nil
}

// faultRun drives a replica node on a store whose disk fails when the
// test says.
type faultRun struct {
	t       *testing.T
	mem     cloneGuardFS
	faults  *errorfs.Toggle
	log     *syncBuffer
	s       *storeNode
	replies chan wire.Msg

	nextReq uint64
	// acked are the Puts acknowledged, by request ID, with the key, value
	// and timestamp the reply gave.
	acked map[uint64]wire.Entry
	sent  map[uint64]wire.Entry // every Put sent, by request ID
}

func newFaultRun(t *testing.T, inject func(errorfs.Op) error) *faultRun {
	t.Helper()
	r := &faultRun{
		t: t, mem: newCloneGuardFS(vfs.NewCrashableMem()), log: newSyncBuffer(),
		faults:  &errorfs.Toggle{Injector: errorfs.InjectorFunc(inject)},
		replies: make(chan wire.Msg, 1024),
		acked:   map[uint64]wire.Entry{}, sent: map[uint64]wire.Entry{},
	}
	s, err := startStoreNode(errorfs.Wrap(r.mem, r.faults), replica.Options{},
		slog.New(slog.NewTextHandler(r.log, nil)),
		func(_, _ wire.NodeID, m wire.Msg) { r.replies <- m })
	if err != nil {
		t.Fatal(err)
	}
	r.s = s
	t.Cleanup(func() { _ = s.stop() })
	s.n.Deliver("c/1", &wire.CreateTableRequest{Req: 1, Layout: faultLayout})
	if m := <-r.replies; m.(*wire.CreateTableReply).Code != wire.OK {
		t.Fatalf("CreateTable: %v", m.(*wire.CreateTableReply).Code)
	}
	return r
}

// put sends a Put of a value of size bytes.
func (r *faultRun) put(from wire.NodeID, size int) {
	r.nextReq++
	req := r.nextReq
	key := fmt.Sprintf("k%03d", req%50)
	value := fmt.Appendf(nil, "%d:", req)
	value = append(value, bytes.Repeat([]byte{byte(req)}, max(0, size-len(value)))...)
	r.sent[req] = wire.Entry{Key: key, Value: value}
	r.s.n.Deliver(from, &wire.PutRequest{Req: req, Tablet: faultTablet, Key: key, Value: value})
}

// reply records a reply; it reports whether it was a Put's, acknowledged.
func (r *faultRun) reply(m wire.Msg) bool {
	pr, ok := m.(*wire.PutReply)
	if !ok || pr.Code != wire.OK {
		return false
	}
	e := r.sent[pr.Req]
	e.TS = pr.TS
	r.acked[pr.Req] = e
	return true
}

// stopped waits for the node to stop, collecting the replies released
// before it did; it fails the test if a reply other than a Put's
// acknowledgement is released, or if more than allowed are.
func (r *faultRun) stopped(allowed int) {
	r.t.Helper()
	for {
		m, stopped := r.next()
		if stopped {
			return
		}
		if !r.reply(m) {
			r.t.Fatalf("released %T %+v after the fault; a reply that waited for a failed sync went out", m, m)
		}
		if allowed--; allowed < 0 {
			r.t.Fatalf("acknowledged Put %d after the fault", m.(*wire.PutReply).Req)
		}
	}
}

// checkReported checks that the node stopped with cause in Err and in its
// log, and that it acknowledges nothing more.
func (r *faultRun) checkReported(cause error) {
	r.t.Helper()
	err := r.s.n.Err()
	if !errors.Is(err, cause) || !errors.Is(err, pebbledb.ErrFailed) {
		r.t.Fatalf("Node.Err() = %v, want pebbledb.ErrFailed wrapping %v", err, cause)
	}
	if log := r.log.String(); !strings.Contains(log, "the node stops") || !strings.Contains(log, cause.Error()) {
		r.t.Fatalf("the node's log does not report the failure (%v):\n%s", cause, log)
	}
	if err := r.s.n.Do(func(node.Handler) {}); !errors.Is(err, ErrStopped) {
		r.t.Fatalf("Do on the failed node: %v, want ErrStopped", err)
	}
	if r.s.n.Deliver("c/1", &wire.GetRequest{Req: 1 << 40, Tablet: faultTablet, Key: "k000"}) {
		r.t.Fatal("the failed node accepted a message")
	}
	select {
	case m := <-r.replies:
		r.t.Fatalf("the failed node released %T %+v", m, m)
	default:
	}
}

// restart stops the failed node and starts one on what a crash leaves of
// its disk, without the fault: with keptPercent 0 what was synced (power
// loss), with 100 everything written (the process restarted). Every
// acknowledged Put must be there with its value and timestamp.
func (r *faultRun) restart(keptPercent int) {
	r.t.Helper()
	crashed := r.mem.crashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: keptPercent, RNG: rand.New(rand.NewPCG(1, uint64(keptPercent)))})
	s, err := startStoreNode(crashed, replica.Options{}, nil, func(wire.NodeID, wire.NodeID, wire.Msg) {})
	if err != nil {
		r.t.Fatalf("restart refused: %v", err)
	}
	defer func() {
		if err := s.stop(); err != nil {
			r.t.Errorf("close after restart: %v", err)
		}
	}()
	held, _, err := s.versions(faultTablet)
	if err != nil {
		r.t.Fatal(err)
	}
	got := held[0]
	for req, want := range r.acked {
		v, ok := got[want.Key]
		switch {
		case !ok || v.TS.Less(want.TS):
			r.t.Fatalf("restart (%d%% unsynced kept) lost acknowledged Put %d of %s at %s: holds %+v", keptPercent, req, want.Key, want.TS, v)
		case v.TS == want.TS && !bytes.Equal(v.Value, want.Value):
			r.t.Fatalf("restart (%d%% unsynced kept): Put %d of %s at %s has value %q, want %q", keptPercent, req, want.Key, want.TS, v.Value, want.Value)
		}
	}
}

// TestDiskFaultSequential: Puts one at a time; after ackedBefore of them
// the disk fails. The next Put and a Get behind it must never be
// answered: both wait for a sync that fails.
func TestDiskFaultSequential(t *testing.T) {
	for _, f := range diskFaults {
		for _, ackedBefore := range []int{0, 1, 9, 40} {
			t.Run(fmt.Sprintf("%s/after-%d", f.name, ackedBefore), func(t *testing.T) {
				r := newFaultRun(t, f.inject)
				const size = 100
				for range ackedBefore {
					r.put("c/1", size)
					if !r.reply(<-r.replies) {
						t.Fatal("Put before the fault not acknowledged")
					}
				}
				r.faults.On()
				r.put("c/1", size)
				r.s.n.Deliver("c/2", &wire.GetRequest{Req: 1 << 30, Tablet: faultTablet, Key: r.sent[r.nextReq].Key})
				r.stopped(0)
				r.checkReported(f.cause)
				r.restart(0)
				r.restart(100)
			})
		}
	}
}

// next returns the next reply, or reports that the node stopped first.
func (r *faultRun) next() (wire.Msg, bool) {
	select {
	case m := <-r.replies:
		return m, false
	case <-r.s.n.halted:
		select {
		case m := <-r.replies:
			return m, false
		default:
			return nil, true
		}
	}
}

// TestDiskFaultUnderLoad: eight clients keep a Put each in flight, so the
// fault hits while groups of Puts wait for their sync. Which of the Puts
// in flight are acknowledged depends on the timing; every one that is
// must survive.
func TestDiskFaultUnderLoad(t *testing.T) {
	for _, f := range diskFaults {
		t.Run(f.name, func(t *testing.T) {
			r := newFaultRun(t, f.inject)
			r.underLoad(50)
			r.checkReported(f.cause)
			r.restart(0)
			r.restart(100)
		})
	}
}

// underLoad has eight clients keep a Put of 100 bytes each in flight
// until the node stops; the fault comes on after faultAfter Puts. It
// fails the test if a Put that failed is answered, or if the node goes
// on acknowledging 5000 Puts in.
func (r *faultRun) underLoad(faultAfter int) {
	r.t.Helper()
	const clients = 8
	const size = 100
	owner := map[uint64]wire.NodeID{}
	send := func(c wire.NodeID) {
		r.put(c, size)
		owner[r.nextReq] = c
	}
	for c := range clients {
		send(wire.NodeID(fmt.Sprintf("c/%d", c)))
	}
	for puts := clients; ; puts++ {
		if puts == faultAfter {
			r.faults.On()
		}
		if puts == 5000 {
			r.t.Fatal("the node still acknowledges 5000 Puts in")
		}
		m, stopped := r.next()
		if stopped {
			break
		}
		if !r.reply(m) {
			if pr, ok := m.(*wire.PutReply); !ok || pr.Code != wire.StorageFailed {
				r.t.Fatalf("released %T %+v", m, m)
			}
			r.t.Fatalf("released %+v: a Put whose write failed was answered before a sync", m)
		}
		send(owner[m.(*wire.PutReply).Req])
	}
	if len(r.acked) < faultAfter-clients {
		r.t.Fatalf("only %d Puts acknowledged before the fault", len(r.acked))
	}
	r.t.Logf("%d Puts acknowledged", len(r.acked))
}

// stopWithin stops the node. A Stop that waits for a storage call that
// never returns hangs here, and the test binary's -timeout reports it
// with every goroutine's stack (no clock in the test).
func (r *faultRun) stopWithin() {
	r.t.Helper()
	r.s.n.Stop()
}

// TestManifestWriteFault: under load the disk fails a write of Pebble's
// MANIFEST, which Pebble makes at the end of each flush on a goroutine of
// its own and deems fatal. Before the engine caught Pebble's Fatalf
// there, the process ended with every node in it. The node stops and
// reports it instead, Stop returns, and a restart holds every
// acknowledged Put.
func TestManifestWriteFault(t *testing.T) {
	r := newFaultRun(t, func(op errorfs.Op) error {
		if strings.Contains(op.Path, "MANIFEST") && isWriteOp(op) {
			return syscall.ENOSPC
		}
		return nil
	})
	r.underLoad(50)
	r.checkReported(syscall.ENOSPC)
	if err := r.s.n.Err(); !strings.Contains(err.Error(), "MANIFEST") {
		t.Fatalf("Node.Err() = %v, want it to name the MANIFEST", err)
	}
	r.stopWithin()
	r.restart(0)
	r.restart(100)
}

// TestDiskFullStalledWrite fills the disk under a stream of synced Puts
// while the node waits in Pebble's write stall: a flush is under way
// (the test holds it where it creates its sstable), the next memtable
// has filled, and the write that needs room waits for the flush. The
// flush then fails with ENOSPC, as does every later write of the disk,
// and the node fails; but the stalled write waits for a flush that can
// never succeed, and before Stop gave up on it, Stop (and so the server's
// Close, and the process) waited for it for ever.
func TestDiskFullStalledWrite(t *testing.T) {
	flushing, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	var full atomic.Bool
	r := newFaultRun(t, func(op errorfs.Op) error {
		switch {
		case full.Load():
			return diskFull(op)
		case op.Kind == errorfs.OpCreate && strings.HasSuffix(op.Path, ".sst"):
			once.Do(func() { close(flushing) })
			<-release
			return diskFull(op)
		}
		return nil
	})
	r.faults.On()
	// 2 MiB of Puts in memtables of 64 KiB: the first flush holds them
	// back well before the end.
	for i := range 256 {
		r.put(wire.NodeID(fmt.Sprintf("c/%d", i%8)), 8<<10)
	}
	<-flushing
	r.log.waitFor(t, "writes stall")
	full.Store(true)
	close(release)
	<-r.s.n.halted
	r.stopWithin()
	for _, cause := range []error{syscall.ENOSPC, pebbledb.ErrFailed, ErrStorageStuck} {
		if err := r.s.n.Err(); !errors.Is(err, cause) {
			t.Errorf("Node.Err() = %v, want it to wrap %v", err, cause)
		}
	}
	r.log.waitFor(t, "its storage is left open")
	r.stopped(len(r.sent))
	r.checkReported(syscall.ENOSPC)
	r.restart(0)
	r.restart(100)
}

// TestStorageErrorWaitsForSync: an event whose engine call failed waits
// for a sync before its reply goes out, as an event with synced writes
// does; if the engine is sound the sync succeeds and the node goes on.
func TestStorageErrorWaitsForSync(t *testing.T) {
	gated := &gatedEngine{mem: storage.NewMem(), syncs: make(chan chan error)}
	eng := failingGets{gated}
	out := make(chan sent, 4)
	n, err := StartNode(NodeOptions{ID: "s/n", Handler: &reader{}, Engine: eng,
		Send: func(_, to wire.NodeID, m wire.Msg) { out <- sent{to, m.(*wire.GetReply).Req} }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Stop)
	n.Deliver("c/1", &wire.GetRequest{Req: 1, Key: "fail"})
	answer := <-gated.syncs
	barrier(t, n)
	expectNone(t, out, "the failed read's sync under way")
	answer <- nil
	expect(t, out, 1)
	// A read that succeeds, with no sync outstanding, answers at once.
	n.Deliver("c/1", &wire.GetRequest{Req: 2, Key: "ok"})
	expect(t, out, 2)
	if n.Err() != nil {
		t.Fatalf("Err = %v after a failed read and a good sync", n.Err())
	}
}

// reader answers a GetRequest after reading its key, whatever the read
// returns.
type reader struct{ env node.Env }

func (r *reader) Start(env node.Env) error { r.env = env; return nil }
func (r *reader) Fire(any)                 {}

func (r *reader) Receive(from wire.NodeID, m wire.Msg) {
	if g, ok := m.(*wire.GetRequest); ok {
		_, _, _ = r.env.Engine().Get([]byte(g.Key))
		r.env.Send(from, &wire.GetReply{Req: g.Req})
	}
}

// failingGets is a gatedEngine whose Get of the key "fail" fails.
type failingGets struct{ *gatedEngine }

func (f failingGets) Get(key []byte) ([]byte, bool, error) {
	if string(key) == "fail" {
		return nil, false, errors.New("injected read error")
	}
	return f.gatedEngine.Get(key)
}

// failingEngine is a gatedEngine that can fail as a whole, as pebbledb's
// does when its disk fails a flush.
type failingEngine struct {
	*gatedEngine
	failed chan struct{}
	err    error
}

func (f *failingEngine) Failed() <-chan struct{} { return f.failed }
func (f *failingEngine) Err() error              { return f.err }

// TestEngineFailureStopsNode: an engine that says it failed stops the
// node at once, idle or not, with the engine's error.
func TestEngineFailureStopsNode(t *testing.T) {
	eng := &failingEngine{
		gatedEngine: &gatedEngine{mem: storage.NewMem(), syncs: make(chan chan error)},
		failed:      make(chan struct{}),
		err:         errors.New("flush: no space left on device"),
	}
	n, out := startWriter(t, eng)
	put(n, 1)
	(<-eng.syncs) <- nil
	expect(t, out, 1)
	// The node is idle; the engine fails in the background.
	close(eng.failed)
	<-n.done
	if n.Err() != eng.err {
		t.Fatalf("Err = %v, want the engine's failure", n.Err())
	}
	if n.Deliver("c/1", &wire.GetRequest{Req: 2}) {
		t.Fatal("a node whose engine failed accepted a message")
	}
	expectNone(t, out, "after the engine failed")
}

// TestStopTimeout: a disk that hangs holds a sync for good, and the
// engine never says it failed. Stop waits for the sync for StopTimeout,
// then returns without it and reports it; before, it waited for ever.
func TestStopTimeout(t *testing.T) {
	eng := &gatedEngine{mem: storage.NewMem(), syncs: make(chan chan error)}
	n, err := StartNode(NodeOptions{ID: "s/n", Handler: &writer{}, Engine: eng, StopTimeout: time.Millisecond,
		Send: func(wire.NodeID, wire.NodeID, wire.Msg) {}})
	if err != nil {
		t.Fatal(err)
	}
	put(n, 1)
	hung := <-eng.syncs // never answered until the end
	defer func() { hung <- nil }()
	// A Stop that waits for the sync hangs here (the -timeout reports it).
	n.Stop()
	if err := n.Err(); !errors.Is(err, ErrStorageStuck) || !strings.Contains(err.Error(), "had not returned") {
		t.Fatalf("Err = %v, want ErrStorageStuck saying the call had not returned", err)
	}
}

// TestDoWhenNodeFails: a Do queued behind an event held in the engine
// returns ErrStopped when the engine fails, instead of waiting for that
// event (the server's /status asks every node through Do).
func TestDoWhenNodeFails(t *testing.T) {
	eng := &failingEngine{
		gatedEngine: &gatedEngine{mem: storage.NewMem(), syncs: make(chan chan error)},
		failed:      make(chan struct{}),
		err:         errors.New("flush: no space left on device"),
	}
	n, _ := startWriter(t, eng)
	held, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	if err := n.Post(func(node.Handler) { close(held); <-release }); err != nil {
		t.Fatal(err)
	}
	<-held
	done := make(chan error)
	go func() { done <- n.Do(func(node.Handler) { t.Error("Do ran on a failed node") }) }()
	for queued := 0; queued == 0; runtime.Gosched() {
		n.mu.Lock()
		queued = len(n.events)
		n.mu.Unlock()
	}
	close(eng.failed)
	// A Do that waits for the held event hangs here (the -timeout
	// reports it).
	if err := <-done; !errors.Is(err, ErrStopped) {
		t.Fatalf("Do on a failed node: %v, want ErrStopped", err)
	}
}
