// Package pebbledb implements storage.Engine on Pebble, the LSM key-value
// store of CockroachDB, for nodes that keep their state on disk.
//
// It is a package of its own, and not part of internal/core/storage, so that
// importing the Engine interface and the in-memory engine does not link
// Pebble. The deterministic simulator runs every node in one thread and
// must not link Pebble: opening a Pebble store starts goroutines (commit
// pipeline, flushes, compactions, file deletion) that run on the wall clock
// and outside the simulator's schedule. Only the real node binary and its
// tests import this package; internal/lint forbids Pebble in the protocol
// cores.
//
// Durability maps onto Pebble's write-ahead log. Every batch goes to the
// WAL; a synced Apply commits with pebble.Sync and waits for the sync of
// the WAL up to and including its batch, and so every batch committed
// before it. An
// empty synced Apply writes a LogData record with pebble.Sync, because
// Pebble skips empty batches without touching the WAL. After a crash Pebble
// replays the WAL up to its first torn or missing record, which is a
// prefix of the applied batches that includes every synced one.
//
// Every key is stored behind a one-byte prefix, keyPrefix, so that Pebble
// never sees the empty key, which storage allows: Pebble v2.1.7 panics in a
// background flush (colblk.PrefixBytesBuilder.Finish, "unreachable") when it
// writes a columnar sstable data block whose only key is empty (see
// TestEmptyKeyFlush). The prefix also leaves the other first bytes free
// for the engine's own metadata, should it need any.
//
// A disk that fails a write or sync of the WAL, a flush or a compaction
// (EIO, ENOSPC), fails the engine for good, where Pebble would panic or
// retry without end; so does an error that Pebble deems fatal (a failed
// write of its MANIFEST), where Pebble would end the process: see
// Engine.Err, guardFS and pebbleLogger.Fatalf.
package pebbledb

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/cockroachdb/pebble/v2"

	"github.com/cosla/cosla/internal/core/invariants"
	"github.com/cosla/cosla/internal/core/storage"
)

// keyPrefix is the first byte of every key the engine stores in Pebble;
// the storage key follows it. See the package comment.
const keyPrefix = 'u'

// Engine is a storage.Engine kept in a Pebble store.
//
// Get, Scan and Apply may be called concurrently. Close must not be called
// concurrently with the other methods, nor from fn in Scan.
//
// Beyond the storage.Engine contract, fn in Scan may call Apply: the scan
// goes on over the state as it was when Scan was called, since a Pebble
// iterator reads at the sequence number it was created at.
//
// Close does not sync, as the contract says, but Pebble's Close writes out
// the WAL's buffered tail and syncs it, so after a clean Close nothing is
// lost in practice; only a crash loses unsynced batches.
//
// An engine fails, and Err reports why, when a write or sync of its WAL
// fails, the disk fails a flush or a compaction, or Pebble meets an error
// it deems fatal (see Err). From then on every Get, Scan, Apply and Sync
// returns that error, which wraps ErrFailed. A call already inside Pebble
// when the engine fails may never return (a write in a stall waiting for
// a flush that cannot succeed): its caller should give up on it rather
// than wait (host.Node.Stop does).
type Engine struct {
	db     *pebble.DB
	noSync bool // Options.UnsafeNoSync
	logger *slog.Logger
	closed atomic.Bool

	// commitMu lets one goroutine at a time into Pebble's commit
	// pipeline. Pebble panics on a failed WAL write with the pipeline's
	// mutex held; a second committer inside would then wait on it forever,
	// where with commitMu it waits for the first to fail the engine and
	// then returns the failure. A synced Apply holds commitMu only to
	// enqueue its batch, not for the fsync, so Sync on the host's syncer
	// goroutine does not hold up the node's unsynced Applies.
	commitMu sync.Mutex
	fail     failure
	// closing is closed when Close releases the store: a failed engine's
	// guardFS holds back file creation until then.
	closing chan struct{}

	backgroundErrors atomic.Int64
}

// backgroundErrorsLogged is how many of Pebble's background errors an
// engine logs; our choice.
const backgroundErrorsLogged = 10

// ErrFailed is wrapped by every error of an engine that has failed: its
// disk failed a write, a sync, a flush or a compaction, or Pebble met an
// error it deems fatal. The engine refuses every
// operation from then on; opening the store again (a restart) recovers
// what the disk kept, and every batch whose synced Apply succeeded is in
// it.
var ErrFailed = errors.New("cosla: pebbledb: store failed; restart to recover what was synced")

// failure is an engine's sticky error.
type failure struct {
	err  atomic.Pointer[error]
	done chan struct{} // closed when err is set
	// wedged: Pebble panicked inside its commit pipeline and may hold
	// its locks, or ended one of its goroutines in Fatalf, so Close must
	// not call into it.
	wedged atomic.Bool
}

// get returns the failure, or nil. set publishes err before it closes
// done; a reader that sees err waits for the close, which follows at
// once, so that whoever sees Err also finds Failed closed.
func (f *failure) get() error {
	if p := f.err.Load(); p != nil {
		<-f.done
		return *p
	}
	return nil
}

// set records cause as the failure unless there is one already, and
// returns the failure. It reports whether cause was the first.
func (f *failure) set(cause error) (error, bool) {
	err := fmt.Errorf("%w: %w", ErrFailed, cause)
	if f.err.CompareAndSwap(nil, &err) {
		close(f.done)
		return err, true
	}
	return f.get(), false
}

var _ storage.Syncer = (*Engine)(nil)

var _ storage.Engine = (*Engine)(nil)

// Open opens the Pebble store in dir, creating it if it does not exist, and
// recovers the batches its WAL holds. It logs the effective options.
func Open(dir string, opts Options) (_ *Engine, err error) {
	opts = opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts.Logger.Info("pebbledb: opening", "dir", dir, "options", opts.String())
	e := &Engine{noSync: opts.UnsafeNoSync, logger: opts.Logger, fail: failure{done: make(chan struct{})}, closing: make(chan struct{})}
	cache := pebble.NewCache(opts.CacheSizeBytes)
	// The store takes its own reference to the cache; ours goes when Open
	// returns.
	defer cache.Unref()
	popts := &pebble.Options{
		FS: guardFS{FS: opts.FS, fail: func(err error) { e.failed(err) },
			failed: e.fail.done, closing: e.closing, failure: e.Err},
		Cache:         cache,
		MemTableSize:  uint64(opts.MemTableSizeBytes),
		Logger:        pebbleLogger{logger: opts.Logger, e: e},
		EventListener: e.eventListener(),
		// Pin the on-disk format instead of taking Pebble's oldest
		// supported one, so that a new store gets the current format and an
		// upgrade of Pebble does not change it silently. Raising it later
		// is a one-way step (DB.RatchetFormatMajorVersion).
		FormatMajorVersion: pebble.FormatValueSeparation,
	}
	// A MANIFEST that cannot be written (a full disk at the first start)
	// makes Pebble call Fatalf on this goroutine: the error is Open's.
	defer func() {
		if err != nil {
			err = fmt.Errorf("cosla: pebbledb: open %s: %w", dir, err)
		}
	}()
	defer recoverFatal(&err)
	db, err := pebble.Open(dir, popts)
	if err != nil {
		return nil, err
	}
	e.db = db
	// A flush that failed while Open replayed the WAL failed the engine.
	// (Pebble reports it in the EventListener, not always as Open's error.)
	if err := e.Err(); err != nil {
		if !e.fail.wedged.Load() {
			close(e.closing)
			_ = db.Close()
		}
		return nil, err
	}
	return e, nil
}

// eventListener returns the callbacks by which Pebble tells the engine
// about its background work.
func (e *Engine) eventListener() *pebble.EventListener {
	return &pebble.EventListener{
		// A flush or a compaction that the filesystem failed (ENOSPC, EIO)
		// has met a full or failing disk. Pebble would retry it, at once
		// and without end: a flush while writes pile up in memtables until
		// they stall, a compaction while flushes pile up in level 0 until
		// writes stall; either way the node hangs with nothing said. The
		// engine fails instead, so that the node stops and reports why.
		// Other background errors (table statistics, say) Pebble logs and
		// retries.
		FlushEnd: func(info pebble.FlushInfo) { e.failOnDisk("flush", info.Err) },
		CompactionEnd: func(info pebble.CompactionInfo) {
			e.failOnDisk("compaction", info.Err)
		},
		// Pebble's default listener logs every background error; a
		// failed flush it retries at once, each time, and would fill
		// the log (on the disk that is full).
		BackgroundError: func(err error) {
			if n := e.backgroundErrors.Add(1); n <= backgroundErrorsLogged {
				// err.Error(): slog would format Pebble's errors with
				// %+v, stack traces and all.
				e.logger.Error("pebble: background error", "err", err.Error(), "count", n, "logged_max", backgroundErrorsLogged)
			}
		},
		// A write stall holds every write until a flush or compaction
		// catches up, however long that takes: the log says when one
		// begins and ends.
		WriteStallBegin: func(info pebble.WriteStallBeginInfo) {
			e.logger.Info("pebbledb: writes stall until a flush or compaction catches up", "reason", info.Reason)
		},
		WriteStallEnd: func() { e.logger.Info("pebbledb: writes resume") },
	}
}

// failOnDisk fails the engine if err, the error of a background job, is
// the filesystem's.
func (e *Engine) failOnDisk(job string, err error) {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		e.failed(fmt.Errorf("%s: %w", job, err))
	}
}

// Err returns the error that failed the engine, which wraps ErrFailed, or
// nil. The engine fails for good when Pebble reports that a write or sync
// of its WAL failed (it would panic; the engine turns the panic into this
// error), when a synced Apply's WAL sync fails, when the filesystem
// fails a flush or a compaction, and when Pebble calls its logger's
// Fatalf (a write of its MANIFEST failed, say). A failed sync may have lost any write not yet synced,
// and Pebble's own state after one is undefined, so no later operation
// may succeed: after a failed fsync a retried one can report success
// for data the disk dropped.
func (e *Engine) Err() error { return e.fail.get() }

// Failed returns a channel that is closed when the engine fails, so that
// its owner can stop at once rather than at its next operation.
func (e *Engine) Failed() <-chan struct{} { return e.fail.done }

// failed records cause as the engine's failure, logging the first one, and
// returns the failure.
func (e *Engine) failed(cause error) error {
	err, first := e.fail.set(cause)
	if first {
		e.logger.Error("pebbledb: the store failed and refuses every operation from now on; restart to recover what was synced", "err", err)
	}
	return err
}

// Get implements storage.Engine.
func (e *Engine) Get(key []byte) (_ []byte, _ bool, err error) {
	defer recoverFatal(&err)
	if e.closed.Load() {
		return nil, false, storage.ErrClosed
	}
	// A failed engine's memtables may hold writes the disk never got;
	// reading them would reveal what a restart will not have.
	if err := e.Err(); err != nil {
		return nil, false, err
	}
	// The prefixed key is built in a pooled buffer: Pebble reads it only
	// until closer is closed, and it would otherwise be an allocation
	// per Get.
	buf := keyBuffers.Get().(*[]byte)
	defer keyBuffers.Put(buf)
	*buf = append(append((*buf)[:0], keyPrefix), key...)
	v, closer, err := e.db.Get(*buf)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("cosla: pebbledb: get: %w", err)
	}
	// v is Pebble's until closer is closed.
	value := make([]byte, len(v))
	copy(value, v)
	if err := closer.Close(); err != nil {
		return nil, false, fmt.Errorf("cosla: pebbledb: get: %w", err)
	}
	return value, true, nil
}

// keyBuffers holds the buffers Get builds prefixed keys in.
var keyBuffers = sync.Pool{New: func() any { return new([]byte) }}

// Scan implements storage.Engine. The key and value passed to fn point into
// Pebble's buffers and block cache; built with the invariants tag, Scan
// passes copies instead and overwrites them once fn returns, so that a
// caller keeping or modifying them is caught.
func (e *Engine) Scan(start, end []byte, fn func(key, value []byte) bool) (err error) {
	defer recoverFatal(&err)
	if e.closed.Load() {
		return storage.ErrClosed
	}
	if err := e.Err(); err != nil {
		return err
	}
	if end != nil && bytes.Compare(start, end) >= 0 {
		return nil
	}
	// Bound the iterator to the prefixed keyspace: an unbounded end stops
	// before the next prefix byte.
	upper := []byte{keyPrefix + 1}
	if end != nil {
		upper = prefixed(end)
	}
	iter, err := e.db.NewIter(&pebble.IterOptions{LowerBound: prefixed(start), UpperBound: upper})
	if err != nil {
		return fmt.Errorf("cosla: pebbledb: scan: %w", err)
	}
	defer func() {
		if cerr := iter.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("cosla: pebbledb: scan: %w", cerr)
		}
	}()
	var keyCopy, valueCopy []byte
	for valid := iter.First(); valid; valid = iter.Next() {
		key := iter.Key()
		if invariants.Enabled {
			invariants.Check(len(key) > 0 && key[0] == keyPrefix, "pebbledb: scan met unprefixed key %q", key)
		}
		key = key[1:]
		value, err := iter.ValueAndErr()
		if err != nil {
			return fmt.Errorf("cosla: pebbledb: scan: %w", err)
		}
		if !invariants.Enabled {
			if !fn(key, value) {
				return nil
			}
			continue
		}
		keyCopy = append(keyCopy[:0], key...)
		valueCopy = append(valueCopy[:0], value...)
		more := fn(keyCopy, valueCopy)
		scribble(keyCopy)
		scribble(valueCopy)
		if !more {
			return nil
		}
	}
	// Iterator.Close reports the iterator's error too; the deferred call
	// returns it.
	return nil
}

// Apply implements storage.Engine.
func (e *Engine) Apply(b *storage.Batch, sync bool) error {
	if e.closed.Load() {
		return storage.ErrClosed
	}
	if err := e.Err(); err != nil {
		return err
	}
	var ops []storage.Op
	if b != nil {
		ops = b.Ops()
	}
	sync = sync && !e.noSync
	if len(ops) == 0 && !sync {
		return nil
	}
	pb := e.db.NewBatch()
	for _, op := range ops {
		// Deferred ops let the prefixed key be written straight into the
		// batch instead of being built in a buffer of its own.
		var d *pebble.DeferredBatchOp
		switch op.Kind {
		case storage.OpSet:
			d = pb.SetDeferred(1+len(op.Key), len(op.Value))
			copy(d.Value, op.Value)
		case storage.OpDelete:
			d = pb.DeleteDeferred(1 + len(op.Key))
		default:
			_ = pb.Close()
			return fmt.Errorf("cosla: pebbledb: apply: unknown op kind %d", op.Kind)
		}
		d.Key[0] = keyPrefix
		copy(d.Key[1:], op.Key)
		if err := d.Finish(); err != nil {
			_ = pb.Close()
			return fmt.Errorf("cosla: pebbledb: apply: %w", err)
		}
	}
	if len(ops) == 0 {
		// Pebble commits an empty batch without writing the WAL, so it
		// would not sync. A LogData record reaches the WAL but no memtable,
		// and committing it with Sync syncs the WAL through it: every
		// batch applied before is durable.
		if err := pb.LogData(nil, nil); err != nil {
			_ = pb.Close()
			return fmt.Errorf("cosla: pebbledb: apply: %w", err)
		}
	}
	if invariants.Enabled {
		invariants.Check(pb.Count() == uint32(len(ops)),
			"pebbledb: pebble batch holds %d ops, storage batch %d", pb.Count(), len(ops))
	}
	if err := e.commit(pb, sync); err != nil {
		// Pebble does not reuse a batch whose commit failed; leave it to
		// the garbage collector.
		return err
	}
	if sync {
		// The batch is in the WAL and the memtable; wait for the WAL's
		// sync outside commitMu. Pebble's sync errors come back here, not
		// as a panic.
		if err := pb.SyncWait(); err != nil {
			return e.failed(fmt.Errorf("sync: %w", err))
		}
	}
	return pb.Close()
}

// commit hands pb to Pebble's commit pipeline; with sync, it returns once
// pb is queued for the WAL's sync, which pb.SyncWait then waits for.
//
// Pebble treats a failed WAL write as fatal: it panics inside the
// pipeline (commitWrite), or calls Logger.Fatalf, which panics too on
// this goroutine (pebbleLogger.Fatalf). commit turns both into the
// engine's failure instead of letting them end the process, and every
// node with it.
func (e *Engine) commit(pb *pebble.Batch, sync bool) (err error) {
	e.commitMu.Lock()
	defer e.commitMu.Unlock()
	// Another committer may have failed the engine while this one waited.
	if err := e.Err(); err != nil {
		return err
	}
	defer func() {
		r := recover()
		if p, ok := r.(fatalPanic); ok {
			err = p.err // Fatalf failed the engine, and wedged it
			return
		}
		if r != nil {
			e.fail.wedged.Store(true)
			e.logger.Error("pebbledb: pebble panicked in commit", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			cause, ok := r.(error)
			if !ok {
				cause = fmt.Errorf("%v", r)
			}
			err = e.failed(fmt.Errorf("commit: pebble panicked: %w", cause))
		}
	}()
	if sync {
		err = e.db.ApplyNoSyncWait(pb, pebble.Sync)
	} else {
		err = e.db.Apply(pb, pebble.NoSync)
	}
	if err != nil {
		// Pebble returns an error, rather than panicking, only for a batch
		// it refuses before committing it: the store is intact.
		return fmt.Errorf("cosla: pebbledb: apply: %w", err)
	}
	return nil
}

// Sync implements storage.Syncer. It may be called concurrently with Get,
// Scan and Apply.
func (e *Engine) Sync() error { return e.Apply(nil, true) }

// Close implements storage.Engine. Closing a failed engine returns its
// failure. Pebble's Close takes its commit pipeline's locks and waits for
// the flushes and compactions under way, which a failed engine may never
// get back: Pebble panicked holding the locks, a commit waits in a write
// stall for a flush that fails, or Pebble ended a flush in Fatalf (see
// pebbleLogger.Fatalf). Close then leaves the store open (its goroutines
// and file lock go with the process) rather than hang.
func (e *Engine) Close() (err error) {
	defer recoverFatal(&err)
	if !e.closed.CompareAndSwap(false, true) {
		return storage.ErrClosed
	}
	failure := e.Err()
	if failure != nil {
		if e.fail.wedged.Load() || !e.commitMu.TryLock() {
			return fmt.Errorf("cosla: pebbledb: close: left open: %w", failure)
		}
		defer e.commitMu.Unlock()
	}
	close(e.closing)
	if err := e.db.Close(); err != nil {
		return fmt.Errorf("cosla: pebbledb: close: %w", errors.Join(err, failure))
	}
	if failure != nil {
		return fmt.Errorf("cosla: pebbledb: close: %w", failure)
	}
	return nil
}

// prefixed returns key behind keyPrefix, in a new slice.
func prefixed(key []byte) []byte {
	p := make([]byte, 1+len(key))
	p[0] = keyPrefix
	copy(p[1:], key)
	return p
}

// scribble overwrites p, so that a caller that kept a slice it was lent
// sees garbage rather than plausible data.
func scribble(p []byte) {
	for i := range p {
		p[i] = 0xa5
	}
}
