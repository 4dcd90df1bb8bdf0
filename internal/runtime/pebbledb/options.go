package pebbledb

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Defaults of Options.
const (
	// DefaultCacheSizeBytes is Pebble's own default block cache size.
	DefaultCacheSizeBytes = 8 << 20
	// DefaultMemTableSizeBytes is Pebble's own default memtable size.
	DefaultMemTableSizeBytes = 4 << 20

	// memTableSizeBytesMin keeps a memtable larger than the small batches the
	// protocol writes, so that most of them take the ordinary commit path
	// instead of becoming flushable batches of their own.
	memTableSizeBytesMin = 64 << 10
	// memTableSizeBytesMax is Pebble's limit: a memtable must be smaller
	// than 4 GiB.
	memTableSizeBytesMax = 4<<30 - 1
)

// ErrInvalidOptions is wrapped by the errors Validate and Open return for
// options that cannot work.
var ErrInvalidOptions = errors.New("cosla: invalid pebbledb options")

// Options configures an Engine. The zero Options is valid: Open fills every
// zero field with the default its comment states.
type Options struct {
	// FS is the filesystem the engine keeps its files in. Default:
	// vfs.Default, the operating system's. Tests pass an in-memory one
	// (vfs.NewMem, vfs.NewCrashableMem) or wrap one to inject faults
	// (vfs/errorfs).
	FS vfs.FS
	// Logger receives Pebble's log lines and, at Open, the effective
	// options. Default: a logger that discards everything.
	Logger *slog.Logger
	// CacheSizeBytes is the size of the block cache, which holds
	// uncompressed blocks of the sstables. Default:
	// DefaultCacheSizeBytes. Must not be negative.
	CacheSizeBytes int64
	// MemTableSizeBytes is the size of one memtable: how many bytes of
	// writes Pebble buffers in memory (and in the WAL) before it flushes
	// them to an sstable. Default: DefaultMemTableSizeBytes. Must be at
	// least 64 KiB and below 4 GiB.
	MemTableSizeBytes int64
	// UnsafeNoSync makes every Apply unsynced, Sync included: a crash may
	// lose batches that a synced Apply reported durable. It exists to
	// measure what durability costs (`cosla serve --unsafe-no-fsync`), as
	// etcd's --unsafe-no-fsync does; never for data that matters.
	UnsafeNoSync bool

	// Forbid positional literals, so that fields can be added.
	_ struct{}
}

// EnsureDefaults returns a copy of o with every zero field given its
// default (the options idiom of package node).
func (o Options) EnsureDefaults() Options {
	if o.FS == nil {
		o.FS = vfs.Default
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	o.CacheSizeBytes = cmp.Or(o.CacheSizeBytes, DefaultCacheSizeBytes)
	o.MemTableSizeBytes = cmp.Or(o.MemTableSizeBytes, DefaultMemTableSizeBytes)
	return o
}

// Validate reports the first field of o, defaults applied, that cannot
// work, naming it. The error wraps ErrInvalidOptions.
func (o Options) Validate() error {
	o = o.EnsureDefaults()
	switch {
	case o.CacheSizeBytes < 0:
		return fmt.Errorf("%w: CacheSizeBytes is %d, must not be negative", ErrInvalidOptions, o.CacheSizeBytes)
	case o.MemTableSizeBytes < memTableSizeBytesMin:
		return fmt.Errorf("%w: MemTableSizeBytes is %d, must be at least %d", ErrInvalidOptions, o.MemTableSizeBytes, memTableSizeBytesMin)
	case o.MemTableSizeBytes > memTableSizeBytesMax:
		return fmt.Errorf("%w: MemTableSizeBytes is %d, must be below 4 GiB", ErrInvalidOptions, o.MemTableSizeBytes)
	}
	return nil
}

// String formats o for the log line Open writes.
func (o Options) String() string {
	logger := "set"
	if o.Logger == nil {
		logger = "nil"
	}
	return fmt.Sprintf("FS=%T Logger=%s CacheSizeBytes=%d MemTableSizeBytes=%d UnsafeNoSync=%t",
		o.FS, logger, o.CacheSizeBytes, o.MemTableSizeBytes, o.UnsafeNoSync)
}
