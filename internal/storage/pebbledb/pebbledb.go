// Package pebbledb implements storage.Engine on Pebble, the LSM key-value
// store of CockroachDB, for nodes that keep their state on disk.
//
// It is a package of its own, and not part of internal/storage, so that
// importing the Engine interface and the in-memory engine does not link
// Pebble. The deterministic simulator runs every node in one thread and
// must not link Pebble: opening a Pebble store starts goroutines (commit
// pipeline, flushes, compactions, file deletion) that run on the wall clock
// and outside the simulator's schedule. Only the real node binary and its
// tests import this package; internal/lint forbids Pebble in the protocol
// cores.
//
// Durability maps onto Pebble's write-ahead log. Every batch goes to the
// WAL; a synced Apply commits with pebble.Sync, which syncs the WAL up to
// and including its batch, and so every batch committed before it. An
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
package pebbledb

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"

	"github.com/cosla/cosla/internal/invariants"
	"github.com/cosla/cosla/internal/storage"
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
type Engine struct {
	db     *pebble.DB
	noSync bool // Options.UnsafeNoSync
	closed atomic.Bool
}

var _ storage.Syncer = (*Engine)(nil)

var _ storage.Engine = (*Engine)(nil)

// Open opens the Pebble store in dir, creating it if it does not exist, and
// recovers the batches its WAL holds. It logs the effective options.
func Open(dir string, opts Options) (*Engine, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts.Logger.Info("pebbledb: opening", "dir", dir, "options", opts.String())
	cache := pebble.NewCache(opts.CacheSizeBytes)
	// The store takes its own reference to the cache; ours goes when Open
	// returns.
	defer cache.Unref()
	popts := &pebble.Options{
		FS:           opts.FS,
		Cache:        cache,
		MemTableSize: uint64(opts.MemTableSizeBytes),
		Logger:       slogLogger{opts.Logger},
		// Pin the on-disk format instead of taking Pebble's oldest
		// supported one, so that a new store gets the current format and an
		// upgrade of Pebble does not change it silently. Raising it later
		// is a one-way step (DB.RatchetFormatMajorVersion).
		FormatMajorVersion: pebble.FormatValueSeparation,
	}
	db, err := pebble.Open(dir, popts)
	if err != nil {
		return nil, fmt.Errorf("cosla: pebbledb: open %s: %w", dir, err)
	}
	return &Engine{db: db, noSync: opts.UnsafeNoSync}, nil
}

// Get implements storage.Engine.
func (e *Engine) Get(key []byte) ([]byte, bool, error) {
	if e.closed.Load() {
		return nil, false, storage.ErrClosed
	}
	v, closer, err := e.db.Get(prefixed(key))
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

// Scan implements storage.Engine. The key and value passed to fn point into
// Pebble's buffers and block cache; built with the invariants tag, Scan
// passes copies instead and overwrites them once fn returns, so that a
// caller keeping or modifying them is caught.
func (e *Engine) Scan(start, end []byte, fn func(key, value []byte) bool) (err error) {
	if e.closed.Load() {
		return storage.ErrClosed
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
	var ops []storage.Op
	if b != nil {
		ops = b.Ops()
	}
	sync = sync && !e.noSync
	if len(ops) == 0 && !sync {
		return nil
	}
	wo := pebble.NoSync
	if sync {
		wo = pebble.Sync
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
	if err := e.db.Apply(pb, wo); err != nil {
		// Pebble does not reuse a batch whose commit failed; leave it to
		// the garbage collector.
		return fmt.Errorf("cosla: pebbledb: apply: %w", err)
	}
	return pb.Close()
}

// Sync implements storage.Syncer. It may be called concurrently with Get,
// Scan and Apply.
func (e *Engine) Sync() error { return e.Apply(nil, true) }

// Close implements storage.Engine.
func (e *Engine) Close() error {
	if !e.closed.CompareAndSwap(false, true) {
		return storage.ErrClosed
	}
	if err := e.db.Close(); err != nil {
		return fmt.Errorf("cosla: pebbledb: close: %w", err)
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

// slogLogger passes Pebble's log lines to a *slog.Logger.
type slogLogger struct {
	logger *slog.Logger
}

var _ pebble.Logger = slogLogger{}

func (l slogLogger) Infof(format string, args ...any) {
	l.logger.Info(fmt.Sprintf(format, args...), "component", "pebble")
}

func (l slogLogger) Errorf(format string, args ...any) {
	l.logger.Error(fmt.Sprintf(format, args...), "component", "pebble")
}

// Fatalf logs and panics. Pebble calls it on failures it cannot recover
// from, a failed WAL write or sync among them, and expects it not to
// return; its default logger exits the process. A panic lets a test or the
// node's supervisor see what happened.
func (l slogLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	l.logger.Error(msg, "component", "pebble", "fatal", true)
	panic("cosla: pebbledb: fatal pebble error: " + msg)
}
