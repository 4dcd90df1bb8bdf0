package pebbledb_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/cosla/cosla/internal/core/storage"
	"github.com/cosla/cosla/internal/runtime/pebbledb"
)

// BenchmarkGet reads one of 10,000 keys with 256-byte values from an
// engine in a real temporary directory. A small memtable flushed the keys
// to sstables, and the engine was reopened, so reads go through the block
// cache (warm after the first pass) to files in the page cache, as a
// server's reads of a working set that fits in memory do.
func BenchmarkGet(b *testing.B) {
	const (
		keysTotal  = 10_000
		valueBytes = 256
	)
	dir := b.TempDir()
	opts := pebbledb.Options{MemTableSizeBytes: 64 << 10}
	e, err := pebbledb.Open(dir, opts)
	if err != nil {
		b.Fatal(err)
	}
	keys := make([][]byte, keysTotal)
	value := make([]byte, valueBytes)
	var batch storage.Batch
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "user%06d", i)
		batch.Reset()
		batch.Set(keys[i], value)
		if err := e.Apply(&batch, false); err != nil {
			b.Fatal(err)
		}
	}
	if err := e.Apply(nil, true); err != nil {
		b.Fatal(err)
	}
	if err := e.Close(); err != nil {
		b.Fatal(err)
	}
	if e, err = pebbledb.Open(dir, opts); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = e.Close() })
	rng := rand.New(rand.NewPCG(1, 2))
	b.ReportAllocs()
	b.SetBytes(valueBytes)
	for b.Loop() {
		v, ok, err := e.Get(keys[rng.IntN(keysTotal)])
		if err != nil || !ok || len(v) != valueBytes {
			b.Fatalf("Get = %d bytes, %v, %v", len(v), ok, err)
		}
	}
}
