package storage_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/cosla/cosla/internal/core/storage"
	"github.com/cosla/cosla/internal/runtime/storagetest"
)

func TestMemContract(t *testing.T) {
	storagetest.RunContract(t, func(*testing.T) storage.Engine { return storage.NewMem() })
}

func TestMemCrashContract(t *testing.T) {
	storagetest.RunCrashContract(t, func(*testing.T) (storage.Engine, func() storage.Engine) {
		m := storage.NewMem()
		return m, func() storage.Engine {
			m.Crash()
			return m
		}
	})
}

// TestMemCrashLosesExactlyUnsynced checks what the contract leaves open for
// Mem: a crash loses every batch applied since the last sync, no more and
// no fewer.
func TestMemCrashLosesExactlyUnsynced(t *testing.T) {
	m := storage.NewMem()
	apply(t, m, true, "a=1", "b=1")
	apply(t, m, false, "a=2", "c=1")
	apply(t, m, false, "-b")
	wantState(t, m, "a=2", "c=1")

	m.Crash()
	wantState(t, m, "a=1", "b=1")

	// A sync makes the unsynced batches before it durable.
	apply(t, m, false, "d=1")
	apply(t, m, false, "-a")
	apply(t, m, true, "e=1")
	apply(t, m, false, "f=1", "-e")
	m.Crash()
	wantState(t, m, "b=1", "d=1", "e=1")

	// Nothing unsynced: a crash changes nothing, however often.
	m.Crash()
	m.Crash()
	wantState(t, m, "b=1", "d=1", "e=1")
}

// TestMemCrashReopens checks that Crash reopens a closed Mem and that Close
// does not sync.
func TestMemCrashReopens(t *testing.T) {
	m := storage.NewMem()
	apply(t, m, true, "a=1")
	apply(t, m, false, "b=1")
	if err := m.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, _, err := m.Get([]byte("a")); !errors.Is(err, storage.ErrClosed) {
		t.Fatalf("Get after Close: err = %v, want ErrClosed", err)
	}
	m.Crash()
	wantState(t, m, "a=1")
	apply(t, m, true, "c=1")
	wantState(t, m, "a=1", "c=1")
}

// TestMemApplyDuringScan checks that Mem lets a Scan callback apply
// batches and crash, and that the scan goes on over the state it started
// from.
func TestMemApplyDuringScan(t *testing.T) {
	m := storage.NewMem()
	apply(t, m, true, "a=1", "b=1", "c=1", "d=1")
	apply(t, m, false, "e=1")

	var visited []string
	err := m.Scan(nil, nil, func(key, value []byte) bool {
		visited = append(visited, fmt.Sprintf("%s=%s", key, value))
		switch string(key) {
		case "a":
			apply(t, m, false, "-c", "b=2", "a2=1")
			// A nested scan sees the batch just applied, and may itself
			// apply one.
			var inner []string
			err := m.Scan(nil, nil, func(key, value []byte) bool {
				inner = append(inner, fmt.Sprintf("%s=%s", key, value))
				if string(key) == "b" {
					apply(t, m, true, "-d")
				}
				return true
			})
			if err != nil {
				t.Fatalf("inner Scan: %v", err)
			}
			if want := []string{"a=1", "a2=1", "b=2", "d=1", "e=1"}; !slices.Equal(inner, want) {
				t.Errorf("inner Scan visited %q, want %q", inner, want)
			}
		case "c":
			m.Crash()
			apply(t, m, false, "z=1")
		}
		return true
	})
	if err != nil {
		t.Fatalf("Scan: %v", err)
	}
	if want := []string{"a=1", "b=1", "c=1", "d=1", "e=1"}; !slices.Equal(visited, want) {
		t.Errorf("Scan visited %q, want %q", visited, want)
	}
	// The synced "-d" made the batches before it durable; the crash lost
	// nothing else, and "z=1" came after it.
	wantState(t, m, "a=1", "a2=1", "b=2", "e=1", "z=1")
}

// TestMemScanThenApply checks that writes after a Scan that ended still
// reach the tree reads see.
func TestMemScanThenApply(t *testing.T) {
	m := storage.NewMem()
	apply(t, m, false, "a=1")
	wantState(t, m, "a=1")
	apply(t, m, false, "b=1")
	wantState(t, m, "a=1", "b=1")
	apply(t, m, true, "-a")
	wantState(t, m, "b=1")
	m.Crash()
	wantState(t, m, "b=1")
}

func BenchmarkMemApply(b *testing.B) {
	const (
		keysTotal   = 10_000
		syncEvery   = 64
		opsPerBatch = 4
	)
	value := make([]byte, 100)
	for _, bc := range []struct {
		name      string
		syncEvery int
	}{
		{"sync", 1},
		{fmt.Sprintf("sync-every-%d", syncEvery), syncEvery},
	} {
		b.Run(bc.name, func(b *testing.B) {
			m := storage.NewMem()
			var batch storage.Batch
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				batch.Reset()
				for j := range opsPerBatch {
					batch.Set(fmt.Appendf(nil, "key-%05d", (i*opsPerBatch+j)%keysTotal), value)
				}
				if err := m.Apply(&batch, i%bc.syncEvery == 0); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// apply applies one batch of ops written "key=value" (set) or "-key"
// (delete).
func apply(t *testing.T, e storage.Engine, sync bool, ops ...string) {
	t.Helper()
	var b storage.Batch
	for _, o := range ops {
		if o[0] == '-' {
			b.Delete([]byte(o[1:]))
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

func TestWalkStopsAtTheFirstError(t *testing.T) {
	e := storage.NewMem()
	var b storage.Batch
	for _, k := range []string{"a", "b", "c", "d"} {
		b.Set([]byte(k), []byte(k))
	}
	if err := e.Apply(&b, true); err != nil {
		t.Fatal(err)
	}
	bad := errors.New("cannot decode c")
	var seen []string
	err := storage.Walk(e, []byte("a"), nil, func(k, _ []byte) (bool, error) {
		seen = append(seen, string(k))
		if string(k) == "c" {
			return true, bad
		}
		return true, nil
	})
	if !errors.Is(err, bad) || strings.Join(seen, "") != "abc" {
		t.Errorf("Walk = %v after %q, want the visitor's error after abc", err, seen)
	}
	seen = nil
	err = storage.Walk(e, []byte("a"), nil, func(k, _ []byte) (bool, error) {
		seen = append(seen, string(k))
		return string(k) != "b", nil
	})
	if err != nil || strings.Join(seen, "") != "ab" {
		t.Errorf("Walk = %v after %q, want no error after ab", err, seen)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if err := storage.Walk(e, nil, nil, func(_, _ []byte) (bool, error) { return true, nil }); !errors.Is(err, storage.ErrClosed) {
		t.Errorf("Walk on a closed engine = %v, want ErrClosed", err)
	}
}
