package pebbledb

import (
	"fmt"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// guardFS is the filesystem an engine gives Pebble: it passes every
// operation to the one Options.FS names, and does two things besides.
//
// It fails the engine as soon as a write or sync of a WAL file returns an
// error, before Pebble sees the error, so that no later commit enters
// Pebble. Pebble's WAL writer keeps the error and hands it to the next
// commit that fills a block, which panics holding the commit pipeline's
// mutex, or to the next rotation of the WAL (when a memtable fills), which
// panics while unwinding a mutex it has already unlocked: a fatal runtime
// error that no recover stops, and the process ends. Pebble reports the
// error to a synced commit too, but between the failed write and that
// report the node may commit unsynced batches, and any of them could
// rotate the WAL. With the engine failed first, only a commit already
// inside Pebble when the disk fails can meet those panics.
//
// Once the engine has failed, creating a file waits until the engine is
// closed and then fails. Pebble retries a failed flush at once and
// without end, each time creating a new sstable, and would spin a core
// (and, with its default listener, fill the log) until the process ends;
// a compaction would write to a disk that is failing; a WAL rotation by a
// commit already inside Pebble would panic on the error. Nothing a failed
// engine creates could be used anyway.
type guardFS struct {
	vfs.FS
	fail    func(error)
	failed  <-chan struct{} // closed when the engine fails
	closing <-chan struct{} // closed when Close releases the store
	failure func() error
}

var _ vfs.FS = guardFS{}

// gate waits, on a failed engine, for Close, and returns the failure.
func (fs guardFS) gate() error {
	select {
	case <-fs.failed:
	default:
		return nil
	}
	<-fs.closing
	return fs.failure()
}

func (fs guardFS) watch(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil || !strings.HasSuffix(name, ".log") {
		return f, err
	}
	return &walFile{File: f, name: fs.PathBase(name), fail: fs.fail}, nil
}

// Create implements vfs.FS.
func (fs guardFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	if err := fs.gate(); err != nil {
		return nil, err
	}
	f, err := fs.FS.Create(name, category)
	return fs.watch(name, f, err)
}

// ReuseForWrite implements vfs.FS: Pebble recycles old WAL files.
func (fs guardFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	if err := fs.gate(); err != nil {
		return nil, err
	}
	f, err := fs.FS.ReuseForWrite(oldname, newname, category)
	return fs.watch(newname, f, err)
}

// OpenReadWrite implements vfs.FS.
func (fs guardFS) OpenReadWrite(name string, category vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.OpenReadWrite(name, category, opts...)
	return fs.watch(name, f, err)
}

// Unwrap implements vfs.FS.
func (fs guardFS) Unwrap() vfs.FS { return fs.FS }

// walFile is a WAL file of a guardFS. Preallocate is not watched: Pebble
// ignores its errors (a filesystem may not support it).
type walFile struct {
	vfs.File
	name string
	fail func(error)
}

func (f *walFile) check(op string, err error) error {
	if err != nil {
		f.fail(fmt.Errorf("WAL %s %s: %w", f.name, op, err))
	}
	return err
}

func (f *walFile) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	return n, f.check("write", err)
}

func (f *walFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.File.WriteAt(p, off)
	return n, f.check("write", err)
}

func (f *walFile) Sync() error { return f.check("sync", f.File.Sync()) }

func (f *walFile) SyncData() error { return f.check("sync", f.File.SyncData()) }

func (f *walFile) SyncTo(length int64) (bool, error) {
	full, err := f.File.SyncTo(length)
	return full, f.check("sync", err)
}
