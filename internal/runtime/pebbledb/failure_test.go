package pebbledb

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/cosla/cosla/internal/core/storage"
)

// These tests fail the disk under an engine: a WAL sync that returns EIO,
// WAL writes that return ENOSPC, a flush that cannot write its sstable.
// Pebble treats the first two as fatal and panics; before the engine
// caught that, one failed fsync ended the process and every node in it.
// Each test checks that the engine fails for good with an error naming
// the cause, and that a restart on what the disk kept (a crash clone of
// the filesystem) holds every batch whose synced Apply succeeded.

// isWAL reports whether op touches a write-ahead log file.
func isWAL(op errorfs.Op) bool { return strings.HasSuffix(op.Path, ".log") }

func isSync(op errorfs.Op) bool {
	return op.Kind == errorfs.OpFileSync || op.Kind == errorfs.OpFileSyncData || op.Kind == errorfs.OpFileSyncTo
}

func isWrite(op errorfs.Op) bool {
	return op.Kind == errorfs.OpFileWrite || op.Kind == errorfs.OpFileWriteAt || op.Kind == errorfs.OpFilePreallocate
}

// faultyStore is an engine on a crashable in-memory filesystem whose
// operations fail, once the toggle is on, as inject says.
type faultyStore struct {
	mem    *vfs.MemFS
	faults *errorfs.Toggle
	e      *Engine
}

func openFaulty(t *testing.T, opts Options, inject func(errorfs.Op) error) *faultyStore {
	t.Helper()
	s := &faultyStore{mem: vfs.NewCrashableMem(), faults: &errorfs.Toggle{Injector: errorfs.InjectorFunc(inject)}}
	opts.FS = errorfs.Wrap(s.mem, s.faults)
	e, err := Open("db", opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	s.e = e
	t.Cleanup(func() { _ = e.Close() })
	return s
}

// restart closes the failed engine, which must report its failure, and
// opens the store again on what a crash would leave of the filesystem:
// with keptPercent 0 only what was synced, with 100 everything written.
func (s *faultyStore) restart(t *testing.T, keptPercent int) *Engine {
	t.Helper()
	// At 0 or 100 percent the clone has no choices to make; the source
	// is there because CrashClone wants one above 0.
	crashed := s.mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: keptPercent, RNG: rand.New(rand.NewPCG(1, 1))})
	if err := s.e.Close(); !errors.Is(err, ErrFailed) && !errors.Is(err, storage.ErrClosed) {
		t.Errorf("Close of the failed engine: %v, want its failure", err)
	}
	e, err := Open("db", Options{FS: crashed})
	if err != nil {
		t.Fatalf("restart: %v", err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e
}

// wantFailed checks that err, and every later operation of e, reports the
// engine's failure with its cause.
func wantFailed(t *testing.T, e *Engine, err error, cause error) {
	t.Helper()
	if !errors.Is(err, ErrFailed) || !errors.Is(err, cause) {
		t.Fatalf("err = %v, want ErrFailed wrapping %v", err, cause)
	}
	if !errors.Is(e.Err(), cause) {
		t.Fatalf("Err() = %v, want it to wrap %v", e.Err(), cause)
	}
	var b storage.Batch
	b.Set([]byte("after"), []byte("x"))
	for name, err := range map[string]error{
		"Apply":        e.Apply(&b, false),
		"synced Apply": e.Apply(&b, true),
		"Sync":         e.Sync(),
		"Scan":         e.Scan(nil, nil, func(_, _ []byte) bool { return true }),
	} {
		if !errors.Is(err, ErrFailed) {
			t.Errorf("%s on a failed engine: %v, want ErrFailed", name, err)
		}
	}
	if _, _, err := e.Get([]byte("after")); !errors.Is(err, ErrFailed) {
		t.Errorf("Get on a failed engine: %v, want ErrFailed", err)
	}
}

// setSynced writes k0..k(n-1) with values v0..v(n-1), each synced.
func setSynced(t *testing.T, e *Engine, n int) {
	t.Helper()
	for i := range n {
		if err := set(t, e, true, fmt.Sprintf("k%d", i), fmt.Sprintf("v%d", i)); err != nil {
			t.Fatal(err)
		}
	}
}

func set(t *testing.T, e *Engine, sync bool, key, value string) error {
	t.Helper()
	var b storage.Batch
	b.Set([]byte(key), []byte(value))
	return e.Apply(&b, sync)
}

// wantSynced checks that the restarted engine holds keys k0..k(n-1), each
// with value v<i>.
func wantSynced(t *testing.T, e *Engine, n int) {
	t.Helper()
	for i := range n {
		k, want := fmt.Sprintf("k%d", i), fmt.Sprintf("v%d", i)
		got, ok, err := e.Get([]byte(k))
		if err != nil || !ok || string(got) != want {
			t.Fatalf("after restart Get(%s) = %q, %v, %v; the synced Apply that wrote %q was lost", k, got, ok, err, want)
		}
	}
}

func TestSyncEIO(t *testing.T) {
	for _, kept := range []int{0, 100} {
		t.Run(fmt.Sprintf("kept-%d%%", kept), func(t *testing.T) {
			s := openFaulty(t, Options{}, func(op errorfs.Op) error {
				if isWAL(op) && isSync(op) {
					return syscall.EIO
				}
				return nil
			})
			const synced = 10
			setSynced(t, s.e, synced)
			s.faults.On()
			err := set(t, s.e, true, "lost", "x")
			wantFailed(t, s.e, err, syscall.EIO)
			wantSynced(t, s.restart(t, kept), synced)
		})
	}
}

// TestWALWriteENOSPC fills the disk under the WAL while two goroutines
// apply batches. The engine fails when Pebble's WAL writer first meets the
// error, before any commit sees it; both goroutines then get the failure,
// and neither hangs in Pebble's commit pipeline.
func TestWALWriteENOSPC(t *testing.T) {
	s := openFaulty(t, Options{}, func(op errorfs.Op) error {
		if isWAL(op) && isWrite(op) {
			return syscall.ENOSPC
		}
		return nil
	})
	const synced = 10
	setSynced(t, s.e, synced)
	s.faults.On()
	// 64 KiB of unsynced batches fill two 32 KiB WAL blocks, which
	// Pebble's WAL writer writes out on its own goroutine: the first write
	// fails the engine, with no further commit.
	value := strings.Repeat("v", 1<<10)
	for i := range 64 {
		if err := set(t, s.e, false, fmt.Sprintf("u%d", i), value); err != nil {
			break // the WAL writer has already failed
		}
	}
	for s.e.Err() == nil {
		runtime.Gosched()
	}
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for w := range errs {
		wg.Go(func() { errs[w] = set(t, s.e, w == 0, fmt.Sprintf("w%d", w), value) })
	}
	wg.Wait()
	for _, err := range errs {
		wantFailed(t, s.e, err, syscall.ENOSPC)
	}
	wantSynced(t, s.restart(t, 0), synced)
}

// TestCommitPanic: a panic inside Pebble's commit fails the engine instead
// of ending the process, and Close, which would wait for the commit
// pipeline's mutex that such a panic can leave locked, leaves the store
// open instead of hanging. Committing a batch twice is the panic at hand (Pebble panics before taking its locks, so the test can leave the store open).
func TestCommitPanic(t *testing.T) {
	e := openTest(t, vfs.NewMem())
	pb := e.db.NewBatch()
	if err := pb.Set([]byte("k"), []byte("v"), nil); err != nil {
		t.Fatal(err)
	}
	if err := e.commit(pb, false); err != nil {
		t.Fatal(err)
	}
	err := e.commit(pb, false)
	if !errors.Is(err, ErrFailed) || !strings.Contains(err.Error(), "pebble panicked") {
		t.Fatalf("commit of a batch already applied: %v, want ErrFailed naming Pebble's panic", err)
	}
	wantFailed(t, e, e.Err(), ErrFailed)
	if err := e.Close(); !errors.Is(err, ErrFailed) || !strings.Contains(err.Error(), "left open") {
		t.Fatalf("Close after a panic in commit: %v, want the failure, store left open", err)
	}
}

// TestFlushENOSPC fills the disk under the sstables while the WAL still
// has room: Pebble's flush fails in the background and would be retried
// without end while writes stall; the engine fails instead.
func TestFlushENOSPC(t *testing.T) {
	s := openFaulty(t, Options{}, func(op errorfs.Op) error {
		if strings.HasSuffix(op.Path, ".sst") && (isWrite(op) || op.Kind == errorfs.OpCreate) {
			return syscall.ENOSPC
		}
		return nil
	})
	const synced = 10
	setSynced(t, s.e, synced)
	s.faults.On()
	if _, err := s.e.db.AsyncFlush(); err != nil {
		t.Fatal(err)
	}
	// The flush fails on one of Pebble's goroutines; wait for it to report
	// it. A failing flush is retried at once, so this does not wait long.
	for s.e.Err() == nil {
		runtime.Gosched()
	}
	select {
	case <-s.e.Failed():
	default:
		t.Fatal("Failed() not closed on a failed engine")
	}
	wantFailed(t, s.e, set(t, s.e, false, "after-flush", "x"), syscall.ENOSPC)
	// Pebble retries the flush at once, but the retry cannot create its
	// sstable until the engine is closed: it does not spin.
	for range 10_000 {
		runtime.Gosched()
	}
	if n := s.e.backgroundErrors.Load(); n > 1 {
		t.Errorf("%d failed flushes; the first should have been the last before Close", n)
	}
	wantSynced(t, s.restart(t, 0), synced)
}

func isManifest(op errorfs.Op) bool { return strings.Contains(op.Path, "MANIFEST") }

// TestManifestWriteFails fails the writes of the MANIFEST, which Pebble
// writes at the end of every flush and deems fatal to fail: its logger's
// Fatalf, on the flush's goroutine, where nothing can recover a panic.
// Before the engine caught that, the process ended. The engine fails
// instead, and Close leaves the store open rather than wait for the flush
// that Fatalf ended; a restart recovers what was synced.
func TestManifestWriteFails(t *testing.T) {
	s := openFaulty(t, Options{}, func(op errorfs.Op) error {
		if isManifest(op) && isWrite(op) {
			return syscall.ENOSPC
		}
		return nil
	})
	const synced = 10
	setSynced(t, s.e, synced)
	s.faults.On()
	if _, err := s.e.db.AsyncFlush(); err != nil {
		t.Fatal(err)
	}
	<-s.e.Failed()
	wantFailed(t, s.e, s.e.Err(), syscall.ENOSPC)
	if !strings.Contains(s.e.Err().Error(), "MANIFEST") {
		t.Errorf("Err() = %v, want it to name the MANIFEST", s.e.Err())
	}
	if err := s.e.Close(); !errors.Is(err, ErrFailed) || !strings.Contains(err.Error(), "left open") {
		t.Fatalf("Close after a fatal error: %v, want the failure, store left open", err)
	}
	crashed := s.mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	e, err := Open("db", Options{FS: crashed})
	if err != nil {
		t.Fatalf("restart: %v", err)
	}
	t.Cleanup(func() { _ = e.Close() })
	wantSynced(t, e, synced)
}

// TestOpenManifestFails: a new store whose MANIFEST cannot be written (a
// disk full at the first start) makes Pebble call Fatalf inside Open:
// Open returns the error instead of ending the process.
func TestOpenManifestFails(t *testing.T) {
	fs := errorfs.Wrap(vfs.NewMem(), errorfs.InjectorFunc(func(op errorfs.Op) error {
		if isManifest(op) && isWrite(op) {
			return syscall.ENOSPC
		}
		return nil
	}))
	e, err := Open("db", Options{FS: fs})
	if !errors.Is(err, syscall.ENOSPC) || !errors.Is(err, ErrFailed) {
		if e != nil {
			_ = e.Close()
		}
		t.Fatalf("Open with a MANIFEST that cannot be written: %v, want ErrFailed wrapping ENOSPC", err)
	}
}

// TestFatalf: Pebble's Fatalf fails the engine on any goroutine. Inside
// an engine call (here Scan, whose callback runs inside it) it ends the
// call, which returns the failure; on a goroutine of its own it ends the
// goroutine, and the process goes on.
func TestFatalf(t *testing.T) {
	noFaults := func(errorfs.Op) error { return nil }
	t.Run("in an engine call", func(t *testing.T) {
		e := openFaulty(t, Options{}, noFaults).e
		setSynced(t, e, 1)
		err := e.Scan(nil, nil, func(_, _ []byte) bool {
			pebbleLogger{logger: e.logger, e: e}.Fatalf("injected: %v", syscall.EIO)
			t.Error("Fatalf returned")
			return true
		})
		wantFailed(t, e, err, syscall.EIO)
	})
	t.Run("on Pebble's goroutine", func(t *testing.T) {
		e := openFaulty(t, Options{}, noFaults).e
		ended := make(chan struct{})
		go func() {
			defer close(ended)
			pebbleLogger{logger: e.logger, e: e}.Fatalf("injected: %v", syscall.EIO)
			t.Error("Fatalf returned")
		}()
		<-ended
		wantFailed(t, e, e.Err(), syscall.EIO)
	})
}

// TestCompactionENOSPC fills the disk under a compaction while flushes
// still fit: Pebble would retry the compaction without end while flushes
// pile up in level 0 until writes stall for good; the engine fails
// instead.
func TestCompactionENOSPC(t *testing.T) {
	s := openFaulty(t, Options{}, func(op errorfs.Op) error {
		if strings.HasSuffix(op.Path, ".sst") && (isWrite(op) || op.Kind == errorfs.OpCreate) {
			return syscall.ENOSPC
		}
		return nil
	})
	const synced = 10
	// Three flushes leave three sstables in level 0 for Compact to
	// merge; no memtable holds anything for it to flush first.
	for range 3 {
		setSynced(t, s.e, synced)
		if err := s.e.db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	s.faults.On()
	// The compaction fails the engine. Compact may not return until
	// Close: if Pebble compacted on its own first and failed the engine,
	// guardFS holds back the files Compact's compaction creates.
	go func() { _ = s.e.db.Compact(context.Background(), []byte{keyPrefix}, []byte{keyPrefix + 1}, true) }()
	<-s.e.Failed() // an engine that never fails hangs here (the -timeout reports it)
	wantFailed(t, s.e, s.e.Err(), syscall.ENOSPC)
	if !strings.Contains(s.e.Err().Error(), "compaction") {
		t.Errorf("Err() = %v, want it to name the compaction", s.e.Err())
	}
	wantSynced(t, s.restart(t, 0), synced)
}
