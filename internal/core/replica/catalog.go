package replica

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/cosla/cosla/internal/core/storage"
	"github.com/cosla/cosla/internal/core/wire"
)

// createTable records the layout durably and starts serving the tablets it
// places on this node. Creating an identical table again succeeds, so a
// client may retry.
func (n *Node) createTable(l wire.Layout) wire.Code {
	if l.Causal != nil {
		// A causal table's replicas are causal.Stores (causal.Beside
		// hosts one beside this node).
		n.env.Logger().Warn("replica: rejected a causal table's layout", "table", l.Name)
		return wire.Invalid
	}
	if err := l.Validate(); err != nil {
		n.env.Logger().Warn("replica: rejected table layout", "err", err)
		return wire.Invalid
	}
	if t, ok := n.tables[l.Name]; ok {
		if t.layout.Equal(&l) {
			return wire.OK
		}
		return wire.TableExists
	}
	if _, ok := n.byID[l.ID]; ok {
		return wire.TableExists
	}
	enc, err := json.Marshal(l)
	if err != nil {
		n.storageError(err)
		return wire.StorageFailed
	}
	var b storage.Batch
	b.Set(catalogKey(l.Name), enc)
	if err := n.env.Engine().Apply(&b, true); err != nil {
		n.storageError(err)
		return wire.StorageFailed
	}
	n.addTable(l)
	n.renewNow()
	return wire.OK
}

// decodeCatalogEntry reads the layout stored under catalogKey(name): one
// that createTable could have written, valid and of that name. Anything
// else is corrupt: a layout that does not validate breaks what the node
// assumes of it (a replication interval of zero panics drawing the first
// pull's phase), and a table stored under another name's key could never
// be deleted.
func decodeCatalogEntry(name string, v []byte) (wire.Layout, error) {
	var l wire.Layout
	if err := json.Unmarshal(v, &l); err != nil {
		return l, fmt.Errorf("%w: catalog entry %q: %v", errCorrupt, name, err)
	}
	if l.Name != name {
		return l, fmt.Errorf("%w: catalog entry %q holds table %q", errCorrupt, name, l.Name)
	}
	if err := l.Validate(); err != nil {
		return l, fmt.Errorf("%w: catalog entry %q: %w", errCorrupt, name, err)
	}
	return l, nil
}

// deleteTable drops the table and every version, log record and metadata
// of its tablets. Deleting a table this node does not hold succeeds.
func (n *Node) deleteTable(name string) wire.Code {
	t, ok := n.tables[name]
	if !ok {
		return wire.OK
	}
	var b storage.Batch
	b.Delete(catalogKey(name))
	for _, space := range tabletSpaces {
		start, end := tableSpan(space, t.layout.ID)
		if err := n.deleteRange(&b, start, end); err != nil {
			n.storageError(err)
			return wire.StorageFailed
		}
	}
	if err := n.env.Engine().Apply(&b, true); err != nil {
		n.storageError(err)
		return wire.StorageFailed
	}
	delete(n.tables, name)
	delete(n.byID, t.layout.ID)
	return wire.OK
}

// tabletSpaces are the spaces that hold a tablet replica's state. Its
// rollback records (spaceBack) outlive it: they are all that is left of
// the writes a rollback dropped.
var tabletSpaces = []byte{spaceData, spaceLog, spaceMeta, spaceStage, spaceOrigin, spaceResult, spaceTagged}

// deleteRange adds to b the deletion of every key in [start, end).
func (n *Node) deleteRange(b *storage.Batch, start, end []byte) error {
	return n.env.Engine().Scan(start, end, func(k, _ []byte) bool {
		b.Delete(k)
		return true
	})
}

func sortTabletStatus(s []TabletStatus) {
	slices.SortFunc(s, func(a, b TabletStatus) int {
		switch {
		case a.Ref.Table != b.Ref.Table:
			if a.Ref.Table < b.Ref.Table {
				return -1
			}
			return 1
		default:
			return int(a.Ref.Tablet - b.Ref.Tablet)
		}
	})
}
