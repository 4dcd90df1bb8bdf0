package config

import (
	"encoding/binary"
	"fmt"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/cosla/cosla/internal/core/storage"
)

// raftLog is a member's raft log, hard state and snapshot: durable in the
// node's engine, and mirrored in a raft.MemoryStorage that raft reads.
// Writes go to the engine first, with sync set (under a host's group
// commit: applied now, synced before the event's messages leave) unless
// they change only the commit index (mustSync), so raft never sends
// what the engine could lose.
//
// Keys, under the prefix "config/": "hs" the hard state, "snap" the
// newest snapshot, "e/" and the index as 8 big-endian bytes each entry
// after it.
type raftLog struct {
	engine storage.Engine
	mem    *raft.MemoryStorage
	// entries and syncs count the entries persisted and the synced
	// writes to the engine (the log's fsyncs), for Member.LogMetrics.
	entries, syncs int64
}

var (
	keyHardState = []byte("config/hs")
	keySnapshot  = []byte("config/snap")
	entryPrefix  = []byte("config/e/")
)

func entryKey(index uint64) []byte {
	return binary.BigEndian.AppendUint64(append([]byte(nil), entryPrefix...), index)
}

// openLog loads a member's log from engine. An engine that holds none
// starts from boot, a snapshot at index 1 naming the voters, the same at
// every member.
func openLog(engine storage.Engine, boot raftpb.Snapshot) (*raftLog, error) {
	l := &raftLog{engine: engine, mem: raft.NewMemoryStorage()}
	snap, ok, err := load[raftpb.Snapshot](engine, keySnapshot)
	if err != nil {
		return nil, err
	}
	if !ok {
		var b storage.Batch
		if err := l.putSnapshot(&b, boot); err != nil {
			return nil, err
		}
		if err := engine.Apply(&b, true); err != nil {
			return nil, fmt.Errorf("config: writing the initial snapshot: %w", err)
		}
		snap = &boot
	}
	if err := l.mem.ApplySnapshot(*snap); err != nil {
		return nil, fmt.Errorf("config: loading the snapshot: %w", err)
	}
	if err := l.loadEntries(snap.Metadata.Index); err != nil {
		return nil, err
	}
	hs, ok, err := load[raftpb.HardState](engine, keyHardState)
	if err != nil {
		return nil, err
	}
	if ok {
		if err := l.mem.SetHardState(*hs); err != nil {
			return nil, fmt.Errorf("config: loading the hard state: %w", err)
		}
	}
	return l, nil
}

// load reads and decodes the raftpb message at key, if there is one.
func load[T any, P interface {
	*T
	Unmarshal([]byte) error
}](e storage.Engine, key []byte) (*T, bool, error) {
	b, ok, err := e.Get(key)
	if err != nil || !ok {
		return nil, false, err
	}
	v := P(new(T))
	if err := v.Unmarshal(b); err != nil {
		return nil, false, fmt.Errorf("config: decoding %s: %w", key, err)
	}
	return v, true, nil
}

// save makes what a Ready asks to persist durable, then mirrors it for
// raft to read: the snapshot, the entries (replacing any suffix they
// conflict with) and the hard state.
func (l *raftLog) save(hs raftpb.HardState, ents []raftpb.Entry, snap raftpb.Snapshot) error {
	var b storage.Batch
	if !raft.IsEmptySnap(snap) {
		if err := l.putSnapshot(&b, snap); err != nil {
			return err
		}
	}
	if len(ents) > 0 {
		last, err := l.mem.LastIndex()
		if err != nil {
			return err
		}
		for i := ents[len(ents)-1].Index + 1; i <= last; i++ {
			b.Delete(entryKey(i))
		}
		for i := range ents {
			data, err := ents[i].Marshal()
			if err != nil {
				return err
			}
			b.Set(entryKey(ents[i].Index), data)
		}
	}
	if !raft.IsEmptyHardState(hs) {
		data, err := hs.Marshal()
		if err != nil {
			return err
		}
		b.Set(keyHardState, data)
	}
	if b.Len() == 0 {
		return nil
	}
	sync, err := l.mustSync(hs, len(ents), snap)
	if err != nil {
		return err
	}
	if err := l.engine.Apply(&b, sync); err != nil {
		return fmt.Errorf("config: persisting the log: %w", err)
	}
	l.entries += int64(len(ents))
	if sync {
		l.syncs++
	}
	if !raft.IsEmptySnap(snap) {
		if err := l.mem.ApplySnapshot(snap); err != nil {
			return err
		}
	}
	if err := l.mem.Append(ents); err != nil {
		return err
	}
	if !raft.IsEmptyHardState(hs) {
		return l.mem.SetHardState(hs)
	}
	return nil
}

// mustSync reports whether a write of hs, n entries and snap must be
// synced: raft needs its term, vote, entries and snapshots durable before
// it sends, not its commit index (raft.MustSync). A commit index lost in
// a crash only sets the member back to an older one; a later synced
// write (the next entry, or a compaction's snapshot, which follows the
// commit of what it covers) makes it durable with itself. So a renewal
// costs each member one fsync, not two.
func (l *raftLog) mustSync(hs raftpb.HardState, n int, snap raftpb.Snapshot) (bool, error) {
	prev, _, err := l.mem.InitialState()
	if err != nil {
		return false, err
	}
	cur := prev
	if !raft.IsEmptyHardState(hs) {
		cur = hs
	}
	return !raft.IsEmptySnap(snap) || raft.MustSync(cur, prev, n), nil
}

// compact replaces the entries up to index with a snapshot of the state
// they built (data), in the engine and in raft's mirror.
func (l *raftLog) compact(index uint64, cs raftpb.ConfState, data []byte) error {
	snap, err := l.mem.CreateSnapshot(index, &cs, data)
	if err != nil {
		return err
	}
	var b storage.Batch
	if err := l.putSnapshot(&b, snap); err != nil {
		return err
	}
	if err := l.engine.Apply(&b, true); err != nil {
		return fmt.Errorf("config: persisting a snapshot: %w", err)
	}
	l.syncs++
	return l.mem.Compact(index)
}

// putSnapshot adds to b the writes that store snap and drop the entries
// it covers.
func (l *raftLog) putSnapshot(b *storage.Batch, snap raftpb.Snapshot) error {
	data, err := snap.Marshal()
	if err != nil {
		return err
	}
	b.Set(keySnapshot, data)
	return l.engine.Scan(entryPrefix, entryKey(snap.Metadata.Index+1), func(key, _ []byte) bool {
		b.Delete(key)
		return true
	})
}

func (l *raftLog) loadEntries(after uint64) error {
	var ents []raftpb.Entry
	err := storage.Walk(l.engine, entryKey(after+1), prefixEnd(entryPrefix), func(_, value []byte) (bool, error) {
		var e raftpb.Entry
		if err := e.Unmarshal(value); err != nil {
			return false, err
		}
		ents = append(ents, e)
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("config: loading the log: %w", err)
	}
	return l.mem.Append(ents)
}

func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	end[len(end)-1]++
	return end
}
