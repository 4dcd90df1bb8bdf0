package pebbledb

import (
	"errors"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/cosla/cosla/internal/core/storage"
)

// TestEmptyKeyFlush is the regression test for the reason keys carry
// keyPrefix: without it, flushing a memtable whose only key is the empty
// one, or an empty key with a value big enough to fill a data block of its
// own, panics inside Pebble's sstable writer.
func TestEmptyKeyFlush(t *testing.T) {
	big := strings.Repeat("v", 256<<10)
	tests := []struct {
		name string
		kvs  map[string]string
	}{
		{"only empty key", map[string]string{"": "v"}},
		{"empty key with big value", map[string]string{"": big, "a": "1"}},
		{"empty and other keys", map[string]string{"": "v", "\x00": "w", "a": "x"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := vfs.NewMem()
			e := openTest(t, fs)
			var b storage.Batch
			for k, v := range tc.kvs {
				b.Set([]byte(k), []byte(v))
			}
			if err := e.Apply(&b, true); err != nil {
				t.Fatalf("Apply: %v", err)
			}
			if err := e.db.Flush(); err != nil {
				t.Fatalf("Flush: %v", err)
			}
			if err := e.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			e = openTest(t, fs)
			for k, want := range tc.kvs {
				got, ok, err := e.Get([]byte(k))
				if err != nil || !ok || string(got) != want {
					t.Errorf("Get(%q) after flush and reopen = %d bytes, %v, %v; want %d bytes", k, len(got), ok, err, len(want))
				}
			}
		})
	}
}

// TestInjectedFaults checks that filesystem errors reach the caller as
// errors, not panics: at Open, and on reads of sstables by Get and Scan.
// A read error fails the call, not the engine. Write and sync errors on
// the WAL, and failed flushes, fail the engine: see failure_test.go.
func TestInjectedFaults(t *testing.T) {
	t.Run("Open", func(t *testing.T) {
		inj := errorfs.InjectorFunc(func(op errorfs.Op) error {
			if op.Kind == errorfs.OpLock {
				return errorfs.ErrInjected
			}
			return nil
		})
		e, err := Open("db", Options{FS: errorfs.Wrap(vfs.NewMem(), inj)})
		if !errors.Is(err, errorfs.ErrInjected) {
			if e != nil {
				_ = e.Close()
			}
			t.Fatalf("Open with failing lock: err = %v, want ErrInjected", err)
		}
	})

	t.Run("SSTableReads", func(t *testing.T) {
		mem := vfs.NewMem()
		e := openTest(t, mem)
		var b storage.Batch
		b.Set([]byte("k"), []byte("v"))
		if err := e.Apply(&b, true); err != nil {
			t.Fatalf("Apply: %v", err)
		}
		if err := e.db.Flush(); err != nil {
			t.Fatalf("Flush: %v", err)
		}
		if err := e.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}

		// Reopen with a fresh block cache, so that reads of the sstable's
		// data block go to the filesystem.
		failReads := &errorfs.Toggle{Injector: errorfs.InjectorFunc(func(op errorfs.Op) error {
			if op.Kind.ReadOrWrite() == errorfs.OpIsRead && strings.HasSuffix(op.Path, ".sst") {
				return errorfs.ErrInjected
			}
			return nil
		})}
		e = openTest(t, errorfs.Wrap(mem, failReads))
		failReads.On()
		if _, _, err := e.Get([]byte("k")); !errors.Is(err, errorfs.ErrInjected) {
			t.Errorf("Get with failing reads: err = %v, want ErrInjected", err)
		}
		err := e.Scan(nil, nil, func(key, _ []byte) bool {
			t.Errorf("Scan with failing reads visited %q", key)
			return true
		})
		if !errors.Is(err, errorfs.ErrInjected) {
			t.Errorf("Scan with failing reads: err = %v, want ErrInjected", err)
		}
		// Whether reads succeed again once the filesystem recovers is up to
		// Pebble: when the failure hit the opening of the sstable, its file
		// cache may hold on to the error for a while. Closing still works.
		failReads.Off()
	})
}

func openTest(t *testing.T, fs vfs.FS) *Engine {
	t.Helper()
	e, err := Open("db", Options{FS: fs})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil && !errors.Is(err, storage.ErrClosed) {
			t.Errorf("Close: %v", err)
		}
	})
	return e
}
