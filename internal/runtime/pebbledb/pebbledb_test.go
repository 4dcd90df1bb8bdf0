package pebbledb_test

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/cosla/cosla/internal/core/storage"
	"github.com/cosla/cosla/internal/runtime/pebbledb"
	"github.com/cosla/cosla/internal/runtime/storagetest"
)

var crashSeedFlag = flag.Uint64("pebbledb.crashseed", 0,
	"seed for the choice of unsynced blocks a simulated crash keeps; 0 picks a new one each run")

func TestContract(t *testing.T) {
	storagetest.RunContract(t, func(t *testing.T) storage.Engine {
		return mustOpen(t, t.TempDir(), pebbledb.Options{})
	})
}

// TestCrashContract runs the crash contract on Pebble's crashable
// in-memory filesystem. A crash clones the filesystem as a power failure
// would leave it: with keptPercent 0 the clone holds exactly what was
// synced; above 0 it also keeps that share of the unsynced 4 KiB blocks and
// directory entries, chosen at random, so the WAL may end torn or with
// holes.
func TestCrashContract(t *testing.T) {
	for _, keptPercent := range []int{0, 50, 100} {
		t.Run(fmt.Sprintf("kept-%d%%", keptPercent), func(t *testing.T) {
			storagetest.RunCrashContract(t, func(t *testing.T) (storage.Engine, func() storage.Engine) {
				cfg := vfs.CrashCloneCfg{UnsyncedDataPercent: keptPercent}
				if keptPercent > 0 {
					cfg.RNG = crashRand(t)
				}
				return openCrashable(t, cfg)
			})
		})
	}
}

// openCrashable opens an engine on a new crashable in-memory filesystem and
// returns it with a function that crashes and reopens it.
func openCrashable(t *testing.T, cfg vfs.CrashCloneCfg) (storage.Engine, func() storage.Engine) {
	const dir = "db"
	fs := vfs.NewCrashableMem()
	e := mustOpen(t, dir, pebbledb.Options{FS: fs})
	crash := func() storage.Engine {
		t.Helper()
		// Clone first: Pebble's Close syncs the WAL, and what it writes
		// must not reach the crashed filesystem.
		crashed := fs.CrashClone(cfg)
		if err := e.Close(); err != nil && !errors.Is(err, storage.ErrClosed) {
			t.Fatalf("Close before crash: %v", err)
		}
		fs = crashed
		e = mustOpen(t, dir, pebbledb.Options{FS: fs})
		return e
	}
	return e, crash
}

// crashRand returns the random source of a subtest's crash clones, seeded
// from -pebbledb.crashseed or afresh, and logs how to rerun with its seed.
func crashRand(t *testing.T) *rand.Rand {
	seed := *crashSeedFlag
	for seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("crash seed %d", seed)
	t.Cleanup(func() {
		if t.Failed() {
			var run []string
			for _, part := range strings.Split(t.Name(), "/") {
				run = append(run, "^"+part+"$")
			}
			t.Logf("failed with crash seed %d; reproduce with: go test ./internal/core/storage/pebbledb -run '%s' -count=1 -pebbledb.crashseed=%d (add -storagetest.seed from the log for a random subtest)",
				seed, strings.Join(run, "/"), seed)
		}
	})
	return rand.New(rand.NewPCG(seed, seed))
}

// TestReopen checks on a real directory that a closed engine, opened
// again, holds what was synced before Close, and that the store's lock
// keeps a second engine out while one is open.
func TestReopen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	e := mustOpen(t, dir, pebbledb.Options{})
	apply(t, e, false, "a=1", "b=1")
	apply(t, e, true, "c=1", "-a")
	apply(t, e, false, "d=1")

	if second, err := pebbledb.Open(dir, pebbledb.Options{}); err == nil {
		_ = second.Close()
		t.Fatalf("second Open of a store in use succeeded, want an error")
	}
	if err := e.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	e = mustOpen(t, dir, pebbledb.Options{})
	// Close does not promise to keep "d=1"; Pebble's Close syncs the WAL,
	// so it is there, but the test asserts only on what was synced.
	wantValue(t, e, "b", "1")
	wantValue(t, e, "c", "1")
	if _, ok, err := e.Get([]byte("a")); err != nil || ok {
		t.Fatalf("Get(a) after reopen = _, %v, %v; want false, nil", ok, err)
	}
	apply(t, e, true, "e=1")
	wantValue(t, e, "e", "1")
}

// TestApplyDuringScan checks what Engine allows beyond the contract: fn in
// Scan may apply a batch, and the scan goes on over the state it began
// with.
func TestApplyDuringScan(t *testing.T) {
	e := mustOpen(t, t.TempDir(), pebbledb.Options{})
	apply(t, e, false, "a=1", "b=1", "c=1")
	var visited []string
	err := e.Scan(nil, nil, func(key, value []byte) bool {
		visited = append(visited, fmt.Sprintf("%s=%s", key, value))
		if string(key) == "a" {
			apply(t, e, true, "-b", "c=2", "d=1")
		}
		return true
	})
	if err != nil {
		t.Fatalf("Scan: %v", err)
	}
	if want := []string{"a=1", "b=1", "c=1"}; !slices.Equal(visited, want) {
		t.Errorf("Scan visited %q, want %q", visited, want)
	}
	wantState(t, e, "a=1", "c=2", "d=1")
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name      string
		opts      pebbledb.Options
		wantField string // "" for valid options
	}{
		{"zero", pebbledb.Options{}, ""},
		{"explicit", pebbledb.Options{CacheSizeBytes: 1 << 20, MemTableSizeBytes: 1 << 20}, ""},
		{"negative cache", pebbledb.Options{CacheSizeBytes: -1}, "CacheSizeBytes"},
		{"tiny memtable", pebbledb.Options{MemTableSizeBytes: 1024}, "MemTableSizeBytes"},
		{"negative memtable", pebbledb.Options{MemTableSizeBytes: -1}, "MemTableSizeBytes"},
		{"huge memtable", pebbledb.Options{MemTableSizeBytes: 4 << 30}, "MemTableSizeBytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.opts.Validate()
			if tc.wantField == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, pebbledb.ErrInvalidOptions) || !strings.Contains(err.Error(), tc.wantField) {
				t.Fatalf("Validate() = %v, want ErrInvalidOptions naming %s", err, tc.wantField)
			}
			// Open refuses the options without touching the filesystem.
			if e, err := pebbledb.Open("db", pebbledb.Options{FS: vfs.NewMem(), CacheSizeBytes: tc.opts.CacheSizeBytes, MemTableSizeBytes: tc.opts.MemTableSizeBytes}); !errors.Is(err, pebbledb.ErrInvalidOptions) {
				if e != nil {
					_ = e.Close()
				}
				t.Fatalf("Open = %v, want ErrInvalidOptions", err)
			}
		})
	}
	var o pebbledb.Options
	o = o.EnsureDefaults()
	if o.FS == nil || o.Logger == nil || o.CacheSizeBytes != pebbledb.DefaultCacheSizeBytes || o.MemTableSizeBytes != pebbledb.DefaultMemTableSizeBytes {
		t.Errorf("EnsureDefaults left %s", o)
	}
}

func BenchmarkApplySync(b *testing.B)   { benchmarkApply(b, true) }
func BenchmarkApplyNoSync(b *testing.B) { benchmarkApply(b, false) }

// benchmarkApply applies small batches (4 sets of 100-byte values) to an
// engine in a real temporary directory, so a synced batch pays for an
// fsync of the WAL.
func benchmarkApply(b *testing.B, sync bool) {
	const (
		keysTotal   = 10_000
		opsPerBatch = 4
	)
	e, err := pebbledb.Open(b.TempDir(), pebbledb.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = e.Close() })
	value := make([]byte, 100)
	keys := make([][]byte, keysTotal)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key-%05d", i)
	}
	var batch storage.Batch
	b.ReportAllocs()
	b.SetBytes(opsPerBatch * int64(len(keys[0])+len(value)))
	i := 0
	for b.Loop() {
		batch.Reset()
		for j := range opsPerBatch {
			batch.Set(keys[(i*opsPerBatch+j)%keysTotal], value)
		}
		if err := e.Apply(&batch, sync); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

func mustOpen(t *testing.T, dir string, opts pebbledb.Options) *pebbledb.Engine {
	t.Helper()
	e, err := pebbledb.Open(dir, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil && !errors.Is(err, storage.ErrClosed) {
			t.Errorf("Close: %v", err)
		}
	})
	return e
}

// apply applies one batch of ops written "key=value" (set) or "-key"
// (delete).
func apply(t *testing.T, e storage.Engine, sync bool, ops ...string) {
	t.Helper()
	var b storage.Batch
	for _, o := range ops {
		if k, ok := strings.CutPrefix(o, "-"); ok {
			b.Delete([]byte(k))
			continue
		}
		k, v, ok := strings.Cut(o, "=")
		if !ok {
			t.Fatalf("bad op %q", o)
		}
		b.Set([]byte(k), []byte(v))
	}
	if err := e.Apply(&b, sync); err != nil {
		t.Fatalf("Apply(%q, sync=%v): %v", ops, sync, err)
	}
}

func wantValue(t *testing.T, e storage.Engine, key, want string) {
	t.Helper()
	got, ok, err := e.Get([]byte(key))
	if err != nil || !ok || string(got) != want {
		t.Fatalf("Get(%q) = %q, %v, %v; want %q, true, nil", key, got, ok, err, want)
	}
}

// wantState checks the whole engine, as "key=value" pairs in key order.
func wantState(t *testing.T, e storage.Engine, want ...string) {
	t.Helper()
	var got []string
	err := e.Scan(nil, nil, func(key, value []byte) bool {
		got = append(got, fmt.Sprintf("%s=%s", key, value))
		return true
	})
	if err != nil {
		t.Fatalf("Scan: %v", err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("engine holds %q, want %q", got, want)
	}
}
