// Package storage defines the ordered key-value engine a node keeps its
// durable state in, and an in-memory implementation of it.
//
// Protocol code calls the engine synchronously from inside its event
// handlers. A write batch is applied atomically. A batch applied with sync
// set is durable when Apply returns, and so is every batch applied before
// it; batches applied without sync may be lost in a crash, but only as a
// suffix: after a crash the engine holds exactly the batches up to some
// point at or after the last synced one. What an engine recovers when it is
// opened after a crash is itself durable: a second crash cannot take the
// engine back behind it.
//
// Keys are arbitrary byte strings, the empty one included, ordered by
// bytes.Compare.
package storage

import "errors"

// Engine is an ordered key-value store. After Close, every method returns
// an error that errors.Is reports as ErrClosed.
//
// storagetest.RunContract and storagetest.RunCrashContract check an
// implementation against this contract.
type Engine interface {
	// Get returns a copy of the value stored at key, and whether there is
	// one. It does not keep key after it returns: callers reuse the
	// buffer (the replica's read path builds every key in one).
	Get(key []byte) (value []byte, ok bool, err error)
	// Scan calls fn for each key in [start, end) in ascending order until
	// fn returns false. A nil end means no upper bound; a non-nil end that
	// is not above start (an empty one, say) selects nothing. The slices
	// passed to fn are valid only during the call and fn must not modify
	// them. fn may call Get; it must not call Apply or Close unless the
	// implementation says it may.
	Scan(start, end []byte, fn func(key, value []byte) bool) error
	// Apply applies the batch atomically; with sync it and every batch
	// applied before it are durable on return. A nil or empty batch
	// changes nothing, but with sync it still makes earlier batches
	// durable. Apply does not keep b: the caller may Reset and reuse it
	// once Apply returns.
	Apply(b *Batch, sync bool) error
	// Close releases the engine; it must not be used afterwards. Close does
	// not sync: batches applied without sync may be lost.
	Close() error
}

// Walk calls fn for each key in [start, end) in ascending order, as Scan
// does, until fn returns false or an error. It returns the engine's error,
// else fn's: a scan that decodes what it reads stops at the first value it
// cannot decode and says why.
func Walk(e Engine, start, end []byte, fn func(key, value []byte) (more bool, err error)) error {
	var fnErr error
	err := e.Scan(start, end, func(key, value []byte) bool {
		var more bool
		more, fnErr = fn(key, value)
		return more && fnErr == nil
	})
	if err != nil {
		return err
	}
	return fnErr
}

// Syncer is implemented by an engine that can be synced from another
// goroutine while its owner goes on calling Get, Scan and Apply. Sync
// makes every batch applied before the call durable, as an empty synced
// Apply does. The host runtime syncs such an engine off the node's
// goroutine (group commit).
type Syncer interface {
	Sync() error
}

// ErrClosed is returned by operations on a closed engine.
var ErrClosed = errors.New("cosla: storage engine closed")

// OpKind says what a batch operation does.
type OpKind uint8

// Batch operation kinds.
const (
	OpSet OpKind = iota + 1
	OpDelete
)

// Op is one operation of a batch.
type Op struct {
	Kind  OpKind
	Key   []byte
	Value []byte
}

// Batch is an ordered list of writes applied atomically. The zero Batch is
// empty and ready to use. Set and Delete copy their arguments.
type Batch struct {
	ops []Op
}

// Set records a write of value at key.
func (b *Batch) Set(key, value []byte) {
	b.ops = append(b.ops, Op{Kind: OpSet, Key: clone(key), Value: clone(value)})
}

// Delete records the removal of key.
func (b *Batch) Delete(key []byte) {
	b.ops = append(b.ops, Op{Kind: OpDelete, Key: clone(key)})
}

// Ops returns the batch's operations in order. The caller must not modify
// them.
func (b *Batch) Ops() []Op { return b.ops }

// Len returns the number of operations in the batch.
func (b *Batch) Len() int { return len(b.ops) }

// Reset empties the batch for reuse.
func (b *Batch) Reset() {
	// Drop the old keys and values so a reused batch does not keep them
	// reachable.
	clear(b.ops)
	b.ops = b.ops[:0]
}

func clone(p []byte) []byte {
	if p == nil {
		return []byte{}
	}
	return append([]byte(nil), p...)
}
