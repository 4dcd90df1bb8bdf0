package storage

import (
	"bytes"

	"github.com/google/btree"

	"github.com/cosla/cosla/internal/core/invariants"
)

// memDegree is the B-tree degree of Mem's trees. Small nodes keep cheap the
// copy-on-write copies a write pays for after Crash or a Scan shared a tree.
const memDegree = 16

// entry is one key-value pair in a Mem tree. Its slices are never modified
// once stored, so the current and durable trees can share them.
type entry struct {
	key, value []byte
}

func entryLess(a, b entry) bool { return bytes.Compare(a.key, b.key) < 0 }

// Mem is an in-memory Engine that models crashes for the deterministic
// simulator.
//
// It keeps two trees: current, which reads see, and durable, which is what
// survives a crash. Apply without sync changes current and queues the
// batch's operations; Apply with sync changes current and then moves the
// queued operations and the batch's own into durable. Crash throws the queue
// away and makes current a copy of durable, so a crash loses exactly the
// batches applied since the last sync.
//
// Mem is not safe for concurrent use: the node that owns it serializes its
// calls, as the simulator does.
//
// Beyond the Engine contract, fn passed to Scan may call Apply and Crash:
// the scan goes on over the state as it was when Scan was called.
type Mem struct {
	current *btree.BTreeG[entry]
	durable *btree.BTreeG[entry]
	// unsynced holds, in order, the operations of the batches applied
	// without sync since the last sync. It copies the Op values, not the
	// batches, because a caller may reuse a batch once Apply returns. It
	// has no limit of its own: it is as long as the caller lets it grow
	// between syncs.
	unsynced []Op
	// scanned is set while a Scan iterates over current; the next write
	// then detaches current first, so the iteration never sees a change.
	scanned bool
	closed  bool
}

var _ Engine = (*Mem)(nil)

// NewMem returns an empty, open Mem.
func NewMem() *Mem {
	return &Mem{
		current: btree.NewG(memDegree, entryLess),
		durable: btree.NewG(memDegree, entryLess),
	}
}

// Get implements Engine.
func (m *Mem) Get(key []byte) ([]byte, bool, error) {
	if m.closed {
		return nil, false, ErrClosed
	}
	e, ok := m.current.Get(entry{key: key})
	if !ok {
		return nil, false, nil
	}
	value := make([]byte, len(e.value))
	copy(value, e.value)
	return value, true, nil
}

// Scan implements Engine. The key and value passed to fn live in buffers
// that the next call overwrites, so a caller that keeps them by mistake
// sees them change instead of silently aliasing stored data.
func (m *Mem) Scan(start, end []byte, fn func(key, value []byte) bool) error {
	if m.closed {
		return ErrClosed
	}
	if end != nil && bytes.Compare(start, end) >= 0 {
		return nil
	}
	tree := m.current
	wasScanned := m.scanned
	m.scanned = true
	defer func() {
		// Unless a write detached current meanwhile, an enclosing Scan
		// may still be iterating over it.
		if m.current == tree {
			m.scanned = wasScanned
		}
	}()
	var keyBuf, valueBuf []byte
	iter := func(e entry) bool {
		keyBuf = append(keyBuf[:0], e.key...)
		valueBuf = append(valueBuf[:0], e.value...)
		return fn(keyBuf, valueBuf)
	}
	if end == nil {
		tree.AscendGreaterOrEqual(entry{key: start}, iter)
	} else {
		tree.AscendRange(entry{key: start}, entry{key: end}, iter)
	}
	return nil
}

// Apply implements Engine.
func (m *Mem) Apply(b *Batch, sync bool) error {
	if m.closed {
		return ErrClosed
	}
	var ops []Op
	if b != nil {
		ops = b.ops
	}
	if m.scanned && len(ops) > 0 {
		// Clone is copy-on-write: the tree a Scan iterates over keeps its
		// nodes, and current copies the ones it changes.
		m.current = m.current.Clone()
		m.scanned = false
	}
	applyOps(m.current, ops)
	if !sync {
		m.unsynced = append(m.unsynced, ops...)
		return nil
	}
	applyOps(m.durable, m.unsynced)
	applyOps(m.durable, ops)
	clear(m.unsynced)
	m.unsynced = m.unsynced[:0]
	if invariants.Enabled {
		m.checkSynced()
	}
	return nil
}

// Close implements Engine. It keeps the stored state, unsynced batches
// included, so that Crash can reopen the engine.
func (m *Mem) Close() error {
	if m.closed {
		return ErrClosed
	}
	m.closed = true
	return nil
}

// Crash models the process dying and the node opening its storage again:
// the batches applied without sync since the last sync are lost, and reads
// see the durable state. Crash leaves the engine open, also when it was
// closed, since a restarted node opens its storage before using it; the
// simulator keeps the same Mem across a crash as it keeps a disk.
func (m *Mem) Crash() {
	m.current = m.durable.Clone()
	clear(m.unsynced)
	m.unsynced = m.unsynced[:0]
	m.scanned = false
	m.closed = false
}

func applyOps(t *btree.BTreeG[entry], ops []Op) {
	for _, op := range ops {
		switch op.Kind {
		case OpSet:
			t.ReplaceOrInsert(entry{key: op.Key, value: op.Value})
		case OpDelete:
			t.Delete(entry{key: op.Key})
		default:
			// Batch.Set and Batch.Delete are the only ways to add an op.
			panic("storage: unknown batch op kind")
		}
	}
}

// checkSynced asserts that, with nothing left unsynced, current and
// durable hold the same entries.
func (m *Mem) checkSynced() {
	if m.current.Len() != m.durable.Len() {
		panic("storage: mem invariant: current and durable differ in length after sync")
	}
	// Comparing contents costs a pass over the store at every sync; do it
	// only for small stores, which the storage tests use.
	if m.current.Len() > 256 {
		return
	}
	var durable []entry
	m.durable.Ascend(func(e entry) bool {
		durable = append(durable, e)
		return true
	})
	i := 0
	m.current.Ascend(func(e entry) bool {
		d := durable[i]
		if !bytes.Equal(e.key, d.key) || !bytes.Equal(e.value, d.value) {
			panic("storage: mem invariant: current and durable differ after sync")
		}
		i++
		return true
	})
}
