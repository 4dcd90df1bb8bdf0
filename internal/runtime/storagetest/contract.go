// Package storagetest holds the contract tests that every storage.Engine
// must pass, so the in-memory engine and the Pebble engine are held to the
// same rules. An implementation's tests run them:
//
//	func TestContract(t *testing.T) {
//		storagetest.RunContract(t, func(t *testing.T) storage.Engine {
//			return storage.NewMem()
//		})
//	}
//
// The tests use only the storage.Engine interface. Randomized subtests log
// their seed and, when they fail, the command that reruns them with it
// (flag -storagetest.seed).
package storagetest

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/cosla/cosla/internal/core/storage"
)

var seedFlag = flag.Uint64("storagetest.seed", 0,
	"seed for the randomized storage contract subtests; 0 picks a new one each run")

// RunContract runs, as subtests of t, the checks any storage.Engine must
// pass. open returns a new, empty engine for the subtest t; it may register
// cleanups on t. RunContract closes each engine it opened when the subtest
// ends, and accepts ErrClosed from that Close.
func RunContract(t *testing.T, open func(t *testing.T) storage.Engine) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, e storage.Engine)
	}{
		{"GetMissing", testGetMissing},
		{"SetGet", testSetGet},
		{"Overwrite", testOverwrite},
		{"Delete", testDelete},
		{"EmptyValue", testEmptyValue},
		{"BatchAtomic", testBatchAtomic},
		{"BatchOrder", testBatchOrder},
		{"EmptyBatch", testEmptyBatch},
		{"ScanOrder", testScanOrder},
		{"ScanBounds", testScanBounds},
		{"ScanEmptyRange", testScanEmptyRange},
		{"ScanEarlyStop", testScanEarlyStop},
		{"ScanGetInCallback", testScanGetInCallback},
		{"ValuesCopied", testValuesCopied},
		{"LargeValue", testLargeValue},
		{"BinaryKeys", testBinaryKeys},
		{"ManyKeys", testManyKeys},
		{"RandomOps", testRandomOps},
		{"Close", testClose},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, openEngine(t, open))
		})
	}
}

// RunCrashContract runs, as subtests of t, the checks of the durability
// contract stated in package storage. open returns a new, empty engine for
// the subtest t and a crash function. Calling crash simulates the process
// dying and the storage being opened again: it returns the engine as seen
// after the restart, and the test uses only that engine from then on (crash
// is responsible for the one it replaces). crash may be called many times.
// RunCrashContract closes the last engine when the subtest ends.
func RunCrashContract(t *testing.T, open func(t *testing.T) (storage.Engine, func() storage.Engine)) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, c *crashEnv)
	}{
		{"NoWrites", testCrashNoWrites},
		{"SyncedSurvive", testCrashSyncedSurvive},
		{"UnsyncedLostOnlyAsSuffix", testCrashUnsyncedSuffix},
		{"SyncMakesEarlierDurable", testCrashSyncMakesEarlierDurable},
		{"EmptySyncMakesEarlierDurable", testCrashEmptySync},
		{"RecoveredStateDurable", testCrashRecoveredDurable},
		{"WritesAfterCrash", testCrashWritesAfter},
		{"BatchReuse", testCrashBatchReuse},
		{"Random", testCrashRandom},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, openCrash(t, open))
		})
	}
}

// ---- Engine contract ----

func testGetMissing(t *testing.T, e storage.Engine) {
	wantMissing(t, e, "absent")
	set(t, e, "a", "1")
	set(t, e, "c", "3")
	wantMissing(t, e, "b")
	wantMissing(t, e, "")
	wantMissing(t, e, "a\x00")
}

func testSetGet(t *testing.T, e storage.Engine) {
	set(t, e, "k1", "v1")
	set(t, e, "k2", "v2")
	wantValue(t, e, "k1", "v1")
	wantValue(t, e, "k2", "v2")
}

func testOverwrite(t *testing.T, e storage.Engine) {
	set(t, e, "k", "first")
	set(t, e, "k", "second, and longer")
	wantValue(t, e, "k", "second, and longer")
	set(t, e, "k", "3")
	wantValue(t, e, "k", "3")
	wantScan(t, e, nil, nil, []kv{{"k", "3"}})
}

func testDelete(t *testing.T, e storage.Engine) {
	set(t, e, "a", "1")
	set(t, e, "b", "2")
	del(t, e, "a")
	wantMissing(t, e, "a")
	wantValue(t, e, "b", "2")
	wantScan(t, e, nil, nil, []kv{{"b", "2"}})
	// Deleting a missing key is not an error and changes nothing.
	del(t, e, "never-set")
	wantScan(t, e, nil, nil, []kv{{"b", "2"}})
	// A deleted key can be set again.
	set(t, e, "a", "again")
	wantValue(t, e, "a", "again")
}

func testEmptyValue(t *testing.T, e storage.Engine) {
	var b storage.Batch
	b.Set([]byte("nil"), nil)
	b.Set([]byte("empty"), []byte{})
	mustApply(t, e, &b, false)
	wantValue(t, e, "nil", "")
	wantValue(t, e, "empty", "")
	wantScan(t, e, nil, nil, []kv{{"empty", ""}, {"nil", ""}})
}

func testBatchAtomic(t *testing.T, e storage.Engine) {
	set(t, e, "a", "old")
	set(t, e, "c", "doomed")
	var b storage.Batch
	b.Set([]byte("a"), []byte("new"))
	b.Set([]byte("b"), []byte("added"))
	b.Delete([]byte("c"))
	// Nothing of a batch is visible before Apply.
	wantValue(t, e, "a", "old")
	wantMissing(t, e, "b")
	wantValue(t, e, "c", "doomed")
	mustApply(t, e, &b, false)
	wantScan(t, e, nil, nil, []kv{{"a", "new"}, {"b", "added"}})
	// The engine does not keep the batch: reusing it changes nothing
	// until it is applied again.
	b.Reset()
	b.Set([]byte("a"), []byte("reused"))
	b.Set([]byte("z"), []byte("reused"))
	wantScan(t, e, nil, nil, []kv{{"a", "new"}, {"b", "added"}})
	mustApply(t, e, &b, true)
	wantScan(t, e, nil, nil, []kv{{"a", "reused"}, {"b", "added"}, {"z", "reused"}})
}

func testBatchOrder(t *testing.T, e storage.Engine) {
	set(t, e, "b", "before")
	var b storage.Batch
	b.Set([]byte("a"), []byte("1"))
	b.Set([]byte("a"), []byte("2")) // a later op on the same key wins
	b.Delete([]byte("b"))
	b.Set([]byte("b"), []byte("3")) // set after delete: present
	b.Set([]byte("c"), []byte("4"))
	b.Delete([]byte("c")) // delete after set: absent
	mustApply(t, e, &b, false)
	wantScan(t, e, nil, nil, []kv{{"a", "2"}, {"b", "3"}})
}

func testEmptyBatch(t *testing.T, e storage.Engine) {
	set(t, e, "k", "v")
	mustApply(t, e, &storage.Batch{}, false)
	mustApply(t, e, &storage.Batch{}, true)
	mustApply(t, e, nil, false)
	mustApply(t, e, nil, true)
	var b storage.Batch
	b.Set([]byte("x"), []byte("y"))
	b.Reset()
	mustApply(t, e, &b, true)
	wantScan(t, e, nil, nil, []kv{{"k", "v"}})
}

func testScanOrder(t *testing.T, e storage.Engine) {
	r := newRandEnv(t)
	keys := []string{"b", "a", "ab", "aa", "a\x00", "ba", "c", "bb", "0", "A", "~"}
	r.rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	for i, k := range keys {
		set(t, e, k, fmt.Sprint(i))
	}
	got := scanAll(t, e, nil, nil)
	if len(got) != len(keys) {
		r.fatalf("scan found %d keys, want %d: %v", len(got), len(keys), got)
	}
	if !slices.IsSortedFunc(got, func(a, b kv) int { return strings.Compare(a.key, b.key) }) {
		r.fatalf("scan out of order: %v", got)
	}
}

func testScanBounds(t *testing.T, e storage.Engine) {
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		set(t, e, k, strings.ToUpper(k))
	}
	tests := []struct {
		name       string
		start, end []byte
		want       string
	}{
		{"all", nil, nil, "abcde"},
		{"empty start is nil start", []byte{}, nil, "abcde"},
		{"start inclusive, end exclusive", []byte("b"), []byte("d"), "bc"},
		{"start between keys", []byte("bb"), []byte("e"), "cd"},
		{"end between keys", []byte("a"), []byte("cc"), "abc"},
		{"nil end unbounded", []byte("c"), nil, "cde"},
		{"start before all", []byte("\x00"), []byte("b"), "a"},
		{"end after all", []byte("d"), []byte("\xff"), "de"},
		{"start after all", []byte("f"), nil, ""},
		{"end before all", nil, []byte("a"), ""},
		{"single key", []byte("c"), []byte("c\x00"), "c"},
	}
	for _, tc := range tests {
		got := scanAll(t, e, tc.start, tc.end)
		var keys strings.Builder
		for _, p := range got {
			keys.WriteString(p.key)
			if p.value != strings.ToUpper(p.key) {
				t.Errorf("%s: value at %q = %q, want %q", tc.name, p.key, p.value, strings.ToUpper(p.key))
			}
		}
		if keys.String() != tc.want {
			t.Errorf("%s: Scan(%s, %s) keys = %q, want %q", tc.name, bound(tc.start), bound(tc.end), keys.String(), tc.want)
		}
	}
}

func testScanEmptyRange(t *testing.T, e storage.Engine) {
	for _, k := range []string{"", "a", "b", "c"} {
		set(t, e, k, "v")
	}
	tests := []struct {
		name       string
		start, end []byte
	}{
		{"start equals end", []byte("b"), []byte("b")},
		{"start above end", []byte("c"), []byte("a")},
		{"empty end", nil, []byte{}},
		{"empty start and end", []byte{}, []byte{}},
		{"start above end, no keys between", []byte("zz"), []byte("z")},
	}
	for _, tc := range tests {
		err := e.Scan(tc.start, tc.end, func(key, _ []byte) bool {
			t.Errorf("%s: Scan(%s, %s) visited %q", tc.name, bound(tc.start), bound(tc.end), key)
			return true
		})
		if err != nil {
			t.Fatalf("%s: Scan: %v", tc.name, err)
		}
	}
	// An empty engine scans nothing.
	for _, k := range []string{"", "a", "b", "c"} {
		del(t, e, k)
	}
	wantScan(t, e, nil, nil, nil)
}

func testScanEarlyStop(t *testing.T, e storage.Engine) {
	for _, k := range []string{"a", "b", "c", "d"} {
		set(t, e, k, k)
	}
	var visited []string
	err := e.Scan(nil, nil, func(key, _ []byte) bool {
		visited = append(visited, string(key))
		return len(visited) < 2
	})
	if err != nil {
		t.Fatalf("Scan: %v", err)
	}
	if want := []string{"a", "b"}; !slices.Equal(visited, want) {
		t.Fatalf("Scan stopping after the second key visited %q, want %q", visited, want)
	}
	visited = visited[:0]
	err = e.Scan([]byte("c"), nil, func(key, _ []byte) bool {
		visited = append(visited, string(key))
		return false
	})
	if err != nil {
		t.Fatalf("Scan: %v", err)
	}
	if want := []string{"c"}; !slices.Equal(visited, want) {
		t.Fatalf("Scan stopping at once visited %q, want %q", visited, want)
	}
}

func testScanGetInCallback(t *testing.T, e storage.Engine) {
	for _, k := range []string{"a", "b", "c"} {
		set(t, e, k, "value-"+k)
	}
	var visited []string
	err := e.Scan(nil, nil, func(key, value []byte) bool {
		k, v := string(key), string(value)
		visited = append(visited, k)
		got, ok, err := e.Get(key)
		if err != nil || !ok || string(got) != v {
			t.Errorf("Get(%q) during Scan = %q, %v, %v; want %q, true, nil", k, got, ok, err, v)
		}
		if _, ok, err := e.Get([]byte("absent")); err != nil || ok {
			t.Errorf("Get(absent) during Scan = _, %v, %v; want false, nil", ok, err)
		}
		// The slices passed to fn still hold the current pair after Get.
		if string(key) != k || string(value) != v {
			t.Errorf("Get during Scan changed the scanned pair to %q=%q, want %q=%q", key, value, k, v)
		}
		return true
	})
	if err != nil {
		t.Fatalf("Scan: %v", err)
	}
	if want := []string{"a", "b", "c"}; !slices.Equal(visited, want) {
		t.Fatalf("Scan with Get in the callback visited %q, want %q", visited, want)
	}
}

func testValuesCopied(t *testing.T, e storage.Engine) {
	key := []byte("key")
	value := []byte("value")
	var b storage.Batch
	b.Set(key, value)
	// Changing what was passed to Set, before and after Apply, changes
	// nothing stored.
	key[0], value[0] = 'X', 'X'
	mustApply(t, e, &b, false)
	key[1], value[1] = 'Y', 'Y'
	wantValue(t, e, "key", "value")
	wantMissing(t, e, string(key))

	got, ok, err := e.Get([]byte("key"))
	if err != nil || !ok {
		t.Fatalf("Get(key) = _, %v, %v; want true, nil", ok, err)
	}
	for i := range got {
		got[i] = '!'
	}
	wantValue(t, e, "key", "value")

	// A value returned earlier does not change when the key is
	// overwritten or deleted.
	before, _, err := e.Get([]byte("key"))
	if err != nil {
		t.Fatalf("Get(key): %v", err)
	}
	set(t, e, "key", "other")
	del(t, e, "key")
	if string(before) != "value" {
		t.Fatalf("value returned by Get changed to %q after an overwrite, want %q", before, "value")
	}

	// Deleting through a key slice that is changed afterwards deletes the
	// key it held at Delete.
	set(t, e, "gone", "v")
	dk := []byte("gone")
	var d storage.Batch
	d.Delete(dk)
	dk[0] = 'X'
	mustApply(t, e, &d, false)
	wantMissing(t, e, "gone")
}

func testLargeValue(t *testing.T, e storage.Engine) {
	const size = 1 << 20
	big1 := pattern(size, 1)
	big2 := pattern(size+7, 2)
	var b storage.Batch
	b.Set([]byte("big"), big1)
	b.Set([]byte("small"), []byte("s"))
	mustApply(t, e, &b, true)
	checkBig := func(want []byte) {
		t.Helper()
		got, ok, err := e.Get([]byte("big"))
		if err != nil || !ok {
			t.Fatalf("Get(big) = _, %v, %v; want true, nil", ok, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("Get(big) returned %d bytes that differ from the %d stored", len(got), len(want))
		}
		n := 0
		err = e.Scan([]byte("big"), []byte("big\x00"), func(_, value []byte) bool {
			n++
			if !bytes.Equal(value, want) {
				t.Errorf("Scan value at big: %d bytes that differ from the %d stored", len(value), len(want))
			}
			return true
		})
		if err != nil || n != 1 {
			t.Fatalf("Scan over big: %d keys, err %v; want 1, nil", n, err)
		}
	}
	checkBig(big1)
	b.Reset()
	b.Set([]byte("big"), big2)
	mustApply(t, e, &b, false)
	checkBig(big2)
	wantValue(t, e, "small", "s")
}

func testBinaryKeys(t *testing.T, e storage.Engine) {
	r := newRandEnv(t)
	keys := []string{
		"", "\x00", "\x00\x00", "\x00\xff", "\x01", "\x7f", "\x80",
		"\xfe\xff", "\xff", "\xff\x00", "\xff\xff", "\xff\xff\xff",
	}
	shuffled := slices.Clone(keys)
	r.rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	for _, k := range shuffled {
		set(t, e, k, "v"+k)
	}
	for _, k := range keys {
		wantValue(t, e, k, "v"+k)
	}
	var want []kv
	for _, k := range keys { // keys is listed in bytes.Compare order
		want = append(want, kv{k, "v" + k})
	}
	wantScan(t, e, nil, nil, want)
	wantScan(t, e, []byte("\x00"), []byte("\xff"), want[1:8])
	wantScan(t, e, []byte("\xff"), nil, want[8:])
	wantScan(t, e, []byte("\x00\x00"), []byte("\x00\xff"), want[2:3])
	wantScan(t, e, nil, []byte("\x00"), want[:1])
	del(t, e, "")
	del(t, e, "\xff\xff")
	wantMissing(t, e, "")
	wantMissing(t, e, "\xff\xff")
	wantValue(t, e, "\xff\xff\xff", "v\xff\xff\xff")
}

func testManyKeys(t *testing.T, e storage.Engine) {
	const (
		keysTotal = 10_000
		batchOps  = 100
	)
	r := newRandEnv(t)
	order := r.rng.Perm(keysTotal)
	var b storage.Batch
	for i, n := range order {
		b.Set(manyKey(n), []byte(fmt.Sprint(n)))
		if b.Len() == batchOps || i == len(order)-1 {
			mustApply(t, e, &b, (i+1)%(10*batchOps) == 0)
			b.Reset()
		}
	}
	n := 0
	err := e.Scan(nil, nil, func(key, value []byte) bool {
		if want := manyKey(n); !bytes.Equal(key, want) || string(value) != fmt.Sprint(n) {
			r.fatalf("key %d of the scan is %q=%q, want %q=%q", n, key, value, want, fmt.Sprint(n))
		}
		n++
		return true
	})
	if err != nil {
		t.Fatalf("Scan: %v", err)
	}
	if n != keysTotal {
		r.fatalf("scan found %d keys, want %d", n, keysTotal)
	}
	// A range in the middle.
	got := scanAll(t, e, manyKey(1234), manyKey(1334))
	if len(got) != 100 || got[0].key != string(manyKey(1234)) || got[99].key != string(manyKey(1333)) {
		r.fatalf("Scan(%q, %q) found %d keys from %v to %v", manyKey(1234), manyKey(1334), len(got), first(got), last(got))
	}
	for _, i := range []int{0, 1, 4999, keysTotal - 1} {
		wantValue(t, e, string(manyKey(i)), fmt.Sprint(i))
	}
}

func manyKey(i int) []byte { return fmt.Appendf(nil, "key-%05d", i) }

// testRandomOps applies random batches and compares every Get and Scan
// with a map model.
func testRandomOps(t *testing.T, e storage.Engine) {
	const steps = 3000
	r := newRandEnv(t)
	model := map[string]string{}
	for step := range steps {
		switch p := r.rng.IntN(10); {
		case p < 5:
			var b storage.Batch
			for range r.rng.IntN(5) {
				k := randomKey(r.rng)
				if r.rng.IntN(3) == 0 {
					b.Delete([]byte(k))
					delete(model, k)
					continue
				}
				v := randomValue(r.rng)
				b.Set([]byte(k), []byte(v))
				model[k] = v
			}
			if err := e.Apply(&b, r.rng.IntN(4) == 0); err != nil {
				r.fatalf("step %d: Apply: %v", step, err)
			}
		case p < 7:
			k := randomKey(r.rng)
			got, ok, err := e.Get([]byte(k))
			want, wantOK := model[k]
			if err != nil || ok != wantOK || string(got) != want {
				r.fatalf("step %d: Get(%q) = %q, %v, %v; want %q, %v, nil", step, k, got, ok, err, want, wantOK)
			}
		default:
			start, end := randomBound(r.rng), randomBound(r.rng)
			limit := 1 + r.rng.IntN(len(model)+1) // fn sees at least one pair

			var got []kv
			err := e.Scan(start, end, func(key, value []byte) bool {
				got = append(got, kv{string(key), string(value)})
				return len(got) < limit
			})
			if err != nil {
				r.fatalf("step %d: Scan: %v", step, err)
			}
			want := modelScan(model, start, end, limit)
			if !slices.Equal(got, want) {
				r.fatalf("step %d: Scan(%s, %s) stopping after %d = %q, want %q", step, bound(start), bound(end), limit, got, want)
			}
		}
	}
}

func testClose(t *testing.T, e storage.Engine) {
	set(t, e, "k", "v")
	if err := e.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, _, err := e.Get([]byte("k")); !errors.Is(err, storage.ErrClosed) {
		t.Errorf("Get after Close: err = %v, want ErrClosed", err)
	}
	err := e.Scan(nil, nil, func(key, _ []byte) bool {
		t.Errorf("Scan after Close visited %q", key)
		return true
	})
	if !errors.Is(err, storage.ErrClosed) {
		t.Errorf("Scan after Close: err = %v, want ErrClosed", err)
	}
	var b storage.Batch
	b.Set([]byte("k2"), []byte("v2"))
	for _, sync := range []bool{false, true} {
		if err := e.Apply(&b, sync); !errors.Is(err, storage.ErrClosed) {
			t.Errorf("Apply(sync=%v) after Close: err = %v, want ErrClosed", sync, err)
		}
	}
	if err := e.Close(); !errors.Is(err, storage.ErrClosed) {
		t.Errorf("second Close: err = %v, want ErrClosed", err)
	}
}

// ---- Crash contract ----

func testCrashNoWrites(t *testing.T, c *crashEnv) {
	c.crash()
	c.checkPrefix(newHistory())
	c.crash()
	c.checkPrefix(newHistory())
}

func testCrashSyncedSurvive(t *testing.T, c *crashEnv) {
	h := newHistory()
	c.apply(h, true, setOp("a", "1"), setOp("b", "1"))
	c.apply(h, true, setOp("a", "2"))
	c.apply(h, true, delOp("b"), setOp("c", "3"))
	c.crash()
	c.checkPrefix(h) // only the last state qualifies
	c.wantState(map[string]string{"a": "2", "c": "3"})
}

func testCrashUnsyncedSuffix(t *testing.T, c *crashEnv) {
	h := newHistory()
	c.apply(h, true, setOp("a", "1"))
	c.apply(h, false, setOp("b", "1"))
	c.apply(h, false, setOp("a", "2"))
	c.apply(h, false, delOp("b"), setOp("c", "3"))
	c.apply(h, false, delOp("a"))
	c.crash()
	c.checkPrefix(h)
}

func testCrashSyncMakesEarlierDurable(t *testing.T, c *crashEnv) {
	h := newHistory()
	c.apply(h, false, setOp("a", "1"))
	c.apply(h, false, setOp("b", "1"), delOp("a"))
	c.apply(h, false, setOp("a", "2"))
	c.apply(h, true, setOp("c", "1"))
	c.crash()
	c.checkPrefix(h)
	c.wantState(map[string]string{"a": "2", "b": "1", "c": "1"})
}

func testCrashEmptySync(t *testing.T, c *crashEnv) {
	h := newHistory()
	c.apply(h, false, setOp("a", "1"))
	c.apply(h, false, setOp("b", "1"))
	c.apply(h, true) // an empty batch
	c.crash()
	c.checkPrefix(h)
	c.wantState(map[string]string{"a": "1", "b": "1"})

	h = newHistoryFrom(h.last())
	c.apply(h, false, delOp("a"))
	if err := c.e.Apply(nil, true); err != nil {
		t.Fatalf("Apply(nil, sync): %v", err)
	}
	h.push(nil, true)
	c.crash()
	c.checkPrefix(h)
	c.wantState(map[string]string{"b": "1"})
}

func testCrashRecoveredDurable(t *testing.T, c *crashEnv) {
	h := newHistory()
	c.apply(h, true, setOp("a", "1"))
	c.apply(h, false, setOp("b", "1"))
	c.apply(h, false, setOp("a", "2"))
	c.crash()
	recovered := c.checkPrefix(h)
	// Whatever the restart recovered, a second crash keeps all of it.
	c.crash()
	c.checkPrefix(newHistoryFrom(recovered))
}

func testCrashWritesAfter(t *testing.T, c *crashEnv) {
	h := newHistory()
	c.apply(h, true, setOp("a", "1"))
	c.apply(h, false, setOp("b", "1"))
	c.crash()
	h = newHistoryFrom(c.checkPrefix(h))
	c.apply(h, true, setOp("c", "1"), delOp("a"))
	c.apply(h, false, setOp("d", "1"))
	c.crash()
	c.checkPrefix(h)
}

func testCrashBatchReuse(t *testing.T, c *crashEnv) {
	var b storage.Batch
	b.Set([]byte("a"), []byte("1"))
	b.Set([]byte("c"), []byte("1"))
	mustApply(t, c.e, &b, false)
	b.Reset()
	b.Set([]byte("a"), []byte("2"))
	mustApply(t, c.e, &b, false)
	// Reused but not applied: must not reach the engine.
	b.Reset()
	b.Set([]byte("z"), []byte("never applied"))
	b.Delete([]byte("c"))
	var s storage.Batch
	s.Set([]byte("s"), []byte("1"))
	mustApply(t, c.e, &s, true)
	c.crash()
	c.wantState(map[string]string{"a": "2", "c": "1", "s": "1"})
}

// testCrashRandom applies random batches, some synced, and crashes at
// random points; after each crash the engine must hold the state after some
// prefix of the batches that includes every synced one.
func testCrashRandom(t *testing.T, c *crashEnv) {
	const batchesTotal = 500
	r := newRandEnv(t)
	c.r = r
	h := newHistory()
	crashes := 0
	for n := range batchesTotal {
		if r.rng.IntN(12) == 0 {
			c.crash()
			crashes++
			h = newHistoryFrom(c.checkPrefix(h))
		}
		var ops []op
		if r.rng.IntN(20) != 0 { // sometimes an empty batch
			for j := range 1 + r.rng.IntN(4) {
				k := crashKeys[r.rng.IntN(len(crashKeys))]
				if r.rng.IntN(4) == 0 {
					ops = append(ops, delOp(k))
				} else {
					ops = append(ops, setOp(k, fmt.Sprintf("b%d.%d", n, j)))
				}
			}
		}
		c.apply(h, r.rng.IntN(4) == 0, ops...)
	}
	c.crash()
	c.checkPrefix(h)
	t.Logf("%d batches, %d crashes", batchesTotal, crashes+1)
}

var crashKeys = []string{"", "\x00", "a", "b", "c", "d", "\xff", "\xff\xff"}

// op is one write of the model.
type op struct {
	del        bool
	key, value string
}

func setOp(key, value string) op { return op{key: key, value: value} }
func delOp(key string) op        { return op{del: true, key: key} }

// history holds the states the batches applied since the last crash went
// through, for checking that a crash keeps a prefix of them.
type history struct {
	// states[i] is the state after the first i batches.
	states []map[string]string
	// synced is the index of the state the last synced batch produced:
	// a crash may not go back behind it.
	synced int
}

func newHistory() *history { return newHistoryFrom(map[string]string{}) }

// newHistoryFrom starts a history at a state that is durable, as the
// state an engine recovered after a crash is.
func newHistoryFrom(state map[string]string) *history {
	return &history{states: []map[string]string{state}}
}

func (h *history) last() map[string]string { return h.states[len(h.states)-1] }

func (h *history) push(ops []op, sync bool) {
	next := maps.Clone(h.last())
	for _, o := range ops {
		if o.del {
			delete(next, o.key)
		} else {
			next[o.key] = o.value
		}
	}
	h.states = append(h.states, next)
	if sync {
		h.synced = len(h.states) - 1
	}
}

// crashEnv is the engine of a crash subtest and the function that crashes
// it.
type crashEnv struct {
	t       *testing.T
	e       storage.Engine
	crashFn func() storage.Engine
	r       *randEnv // set by randomized subtests, for failure messages
}

func openCrash(t *testing.T, open func(t *testing.T) (storage.Engine, func() storage.Engine)) *crashEnv {
	t.Helper()
	e, crash := open(t)
	if e == nil || crash == nil {
		t.Fatal("open returned a nil engine or crash function")
	}
	c := &crashEnv{t: t, e: e, crashFn: crash}
	t.Cleanup(func() { closeEngine(t, c.e) })
	return c
}

func (c *crashEnv) fatalf(format string, args ...any) {
	c.t.Helper()
	if c.r != nil {
		c.r.fatalf(format, args...)
	}
	c.t.Fatalf(format, args...)
}

func (c *crashEnv) crash() {
	c.t.Helper()
	c.e = c.crashFn()
	if c.e == nil {
		c.fatalf("crash returned a nil engine")
	}
}

// apply applies ops as one batch and records it in h.
func (c *crashEnv) apply(h *history, sync bool, ops ...op) {
	c.t.Helper()
	var b storage.Batch
	for _, o := range ops {
		if o.del {
			b.Delete([]byte(o.key))
		} else {
			b.Set([]byte(o.key), []byte(o.value))
		}
	}
	if err := c.e.Apply(&b, sync); err != nil {
		c.fatalf("Apply(sync=%v): %v", sync, err)
	}
	h.push(ops, sync)
}

// state reads the whole engine with Scan and checks that Get agrees.
func (c *crashEnv) state() map[string]string {
	c.t.Helper()
	state := map[string]string{}
	var prev []byte
	first := true
	err := c.e.Scan(nil, nil, func(key, value []byte) bool {
		if !first && bytes.Compare(prev, key) >= 0 {
			c.t.Errorf("Scan after crash: key %q follows %q", key, prev)
		}
		first = false
		prev = append(prev[:0], key...)
		state[string(key)] = string(value)
		return true
	})
	if err != nil {
		c.fatalf("Scan after crash: %v", err)
	}
	for k, v := range state {
		got, ok, err := c.e.Get([]byte(k))
		if err != nil || !ok || string(got) != v {
			c.fatalf("after crash Get(%q) = %q, %v, %v but Scan found %q", k, got, ok, err, v)
		}
	}
	return state
}

// checkPrefix checks that the engine holds the state after some prefix of
// h's batches that includes every synced one, and returns that state.
func (c *crashEnv) checkPrefix(h *history) map[string]string {
	c.t.Helper()
	got := c.state()
	for i := len(h.states) - 1; i >= h.synced; i-- {
		if maps.Equal(got, h.states[i]) {
			return got
		}
	}
	c.fatalf("after a crash the engine holds %s,\nwhich is the state after no prefix of the %d batches applied since the last crash that includes the last synced one (batch %d);\nafter that one it was %s,\nafter all of them %s",
		formatState(got), len(h.states)-1, h.synced, formatState(h.states[h.synced]), formatState(h.last()))
	return nil
}

func (c *crashEnv) wantState(want map[string]string) {
	c.t.Helper()
	if got := c.state(); !maps.Equal(got, want) {
		c.fatalf("after crash the engine holds %s, want %s", formatState(got), formatState(want))
	}
}

func formatState(state map[string]string) string {
	keys := make([]string, 0, len(state))
	for k := range state {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var sb strings.Builder
	sb.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			sb.WriteString(", ")
		}
		fmt.Fprintf(&sb, "%q: %q", k, state[k])
	}
	sb.WriteByte('}')
	return sb.String()
}

// ---- helpers ----

// kv is a key-value pair copied out of an engine.
type kv struct{ key, value string }

func openEngine(t *testing.T, open func(t *testing.T) storage.Engine) storage.Engine {
	t.Helper()
	e := open(t)
	if e == nil {
		t.Fatal("open returned a nil engine")
	}
	t.Cleanup(func() { closeEngine(t, e) })
	return e
}

func closeEngine(t *testing.T, e storage.Engine) {
	t.Helper()
	if err := e.Close(); err != nil && !errors.Is(err, storage.ErrClosed) {
		t.Errorf("Close: %v", err)
	}
}

func mustApply(t *testing.T, e storage.Engine, b *storage.Batch, sync bool) {
	t.Helper()
	if err := e.Apply(b, sync); err != nil {
		t.Fatalf("Apply(sync=%v): %v", sync, err)
	}
}

func set(t *testing.T, e storage.Engine, key, value string) {
	t.Helper()
	var b storage.Batch
	b.Set([]byte(key), []byte(value))
	mustApply(t, e, &b, false)
}

func del(t *testing.T, e storage.Engine, key string) {
	t.Helper()
	var b storage.Batch
	b.Delete([]byte(key))
	mustApply(t, e, &b, false)
}

func wantValue(t *testing.T, e storage.Engine, key, want string) {
	t.Helper()
	got, ok, err := e.Get([]byte(key))
	if err != nil || !ok || string(got) != want {
		t.Fatalf("Get(%q) = %q, %v, %v; want %q, true, nil", key, got, ok, err, want)
	}
}

func wantMissing(t *testing.T, e storage.Engine, key string) {
	t.Helper()
	got, ok, err := e.Get([]byte(key))
	if err != nil || ok || len(got) != 0 {
		t.Fatalf("Get(%q) = %q, %v, %v; want no value, false, nil", key, got, ok, err)
	}
}

func scanAll(t *testing.T, e storage.Engine, start, end []byte) []kv {
	t.Helper()
	var got []kv
	err := e.Scan(start, end, func(key, value []byte) bool {
		got = append(got, kv{string(key), string(value)})
		return true
	})
	if err != nil {
		t.Fatalf("Scan(%s, %s): %v", bound(start), bound(end), err)
	}
	return got
}

func wantScan(t *testing.T, e storage.Engine, start, end []byte, want []kv) {
	t.Helper()
	if got := scanAll(t, e, start, end); !slices.Equal(got, want) {
		t.Fatalf("Scan(%s, %s) = %q, want %q", bound(start), bound(end), got, want)
	}
}

func modelScan(model map[string]string, start, end []byte, limit int) []kv {
	keys := make([]string, 0, len(model))
	for k := range model {
		if k >= string(start) && (end == nil || k < string(end)) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var out []kv
	for _, k := range keys {
		if len(out) == limit {
			break
		}
		out = append(out, kv{k, model[k]})
	}
	return out
}

// randomKey returns a key of up to three bytes drawn from an alphabet that
// includes 0x00 and 0xff, so that keys collide often and sort around the
// extremes.
func randomKey(rng *rand.Rand) string {
	const alphabet = "\x00\x01\x7f\xfe\xff"
	b := make([]byte, rng.IntN(4))
	for i := range b {
		b[i] = alphabet[rng.IntN(len(alphabet))]
	}
	return string(b)
}

// bound formats a scan bound, telling nil from empty.
func bound(b []byte) string {
	if b == nil {
		return "nil"
	}
	return fmt.Sprintf("%q", b)
}

// randomBound returns a nil bound a quarter of the time, else a non-nil
// key (possibly empty).
func randomBound(rng *rand.Rand) []byte {
	if rng.IntN(4) == 0 {
		return nil
	}
	return append([]byte{}, randomKey(rng)...)
}

func randomValue(rng *rand.Rand) string {
	b := make([]byte, rng.IntN(9))
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return string(b)
}

// pattern returns n bytes that differ from those of another seed.
func pattern(n int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

func first(p []kv) any {
	if len(p) == 0 {
		return nil
	}
	return p[0]
}

func last(p []kv) any {
	if len(p) == 0 {
		return nil
	}
	return p[len(p)-1]
}

// randEnv is the seeded randomness of one subtest.
type randEnv struct {
	t    *testing.T
	seed uint64
	rng  *rand.Rand
}

// newRandEnv seeds a subtest from -storagetest.seed, or from a fresh seed
// if the flag is unset, logs the seed, and on failure logs the command that
// reruns the subtest with it.
func newRandEnv(t *testing.T) *randEnv {
	t.Helper()
	seed := *seedFlag
	for seed == 0 {
		seed = rand.Uint64()
	}
	r := &randEnv{t: t, seed: seed, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	t.Logf("seed %d", seed)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("failed with seed %d; reproduce with: %s", seed, r.repro())
		}
	})
	return r
}

func (r *randEnv) fatalf(format string, args ...any) {
	r.t.Helper()
	r.t.Fatalf("%s\nseed %d; reproduce with: %s", fmt.Sprintf(format, args...), r.seed, r.repro())
}

// repro returns a go test command that reruns this subtest with its seed.
// The package is named relative to the module root when one is found.
func (r *randEnv) repro() string {
	var run []string
	for _, part := range strings.Split(r.t.Name(), "/") {
		run = append(run, "^"+regexp.QuoteMeta(part)+"$")
	}
	return fmt.Sprintf("go test %s -run '%s' -count=1 -storagetest.seed=%d",
		packageDir(), strings.Join(run, "/"), r.seed)
}

// packageDir names the directory of the test binary's package: relative to
// the module root ("./internal/core/storage", to run from there) when a go.mod is
// found above it, else as an absolute path.
func packageDir() string {
	wd, err := os.Getwd()
	if err != nil {
		return "."
	}
	for dir := wd; ; {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			rel, err := filepath.Rel(dir, wd)
			if err != nil {
				return wd
			}
			if rel == "." {
				return "."
			}
			return "./" + filepath.ToSlash(rel)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return wd
		}
		dir = parent
	}
}
