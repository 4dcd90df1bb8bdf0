// Package config is the configuration service (DESIGN.md section 10): a
// state machine holding every table's layout, each tablet's epoch and
// which nodes hold a primary's lease, replicated by the members of the
// service with etcd's raft (member.go). It is a pure core: the members
// run as node handlers under the simulator and under `cosla serve` alike.
//
// Pileus section 4.2 leaves the choice of primaries to an administrator;
// the service makes it instead: when a primary's lease lapses, its leader
// moves each of the primary's tablets to the replica holding the longest
// prefix, at the next epoch.
package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/wire"
)

// Errors of a command the state refuses. Refusals are deterministic: every
// member refuses the same command at the same log index.
var (
	ErrTableExists = errors.New("cosla: config: table exists with another layout")
	ErrNoTable     = errors.New("cosla: config: no such table")
	ErrNoTablet    = errors.New("cosla: config: no such tablet")
	ErrStaleEpoch  = errors.New("cosla: config: the tablet has moved to a newer epoch")
	ErrNotReplica  = errors.New("cosla: config: the node is not one of the tablet's replicas")
	ErrBadCommand  = errors.New("cosla: config: malformed command")
	ErrIsReplica   = errors.New("cosla: config: the node is already one of the tablet's replicas")
	ErrPrimary     = errors.New("cosla: config: the primary cannot be removed from its tablet")
)

// State is what the service replicates: every table's layout, the epoch of
// each of its tablets, and the nodes holding a lease. The zero State is
// empty and ready to use.
type State struct {
	Tables map[string]*Table `json:"tables,omitempty"`
	// Leases counts, per node, the renewals applied since the node last
	// became primary of a tablet; a node with no entry has never renewed.
	// The count orders renewals; a lease's time is the leader's business
	// (lease.go), because time is not part of the replicated state.
	Leases map[wire.NodeID]uint64 `json:"leases,omitempty"`
}

// Table is one table's layout and, in the layout's tablet order, the
// epochs of its tablets, the high timestamp each epoch's primary started
// from, and how many times each tablet's replica set changed.
type Table struct {
	Layout wire.Layout `json:"layout"`
	Epochs []uint64    `json:"epochs"`
	// Starts is set by the first move of one of the table's tablets
	// (older snapshots lack it: every tablet then starts at zero).
	Starts []hlc.Timestamp `json:"starts,omitempty"`
	// Changes is set by the first OpReplicas of one of its tablets.
	Changes []uint64 `json:"changes,omitempty"`
	// Earlier holds, per tablet, the starts of its epochs before the
	// current one, from the second, the newest first, at most
	// wire.EarlierMax (EpochChange.Earlier).
	Earlier [][]wire.EpochStart `json:"earlier,omitempty"`
}

// Start is the high timestamp tablet i's primary started its epoch from:
// zero for a tablet that never moved.
func (t *Table) Start(i int) hlc.Timestamp {
	if i < len(t.Starts) {
		return t.Starts[i]
	}
	return hlc.Timestamp{}
}

// Moved reports whether tablet i's primary or replica set has changed
// since the table was created: its replicas may have missed the news.
func (t *Table) Moved(i int) bool {
	return t.Epochs[i] > 1 || (i < len(t.Changes) && t.Changes[i] > 0)
}

// Op names a command.
type Op string

// The commands.
const (
	// OpCreate adds a table (Layout) at epoch 1 for each tablet. Creating
	// a table again with the same layout is a no-op, so a retried create
	// succeeds.
	OpCreate Op = "create"
	// OpRenew records a renewal of Node's lease.
	OpRenew Op = "renew"
	// OpMove makes Node the primary of Table's tablet Tablet at epoch
	// Epoch+1, if the tablet is still at Epoch and Node one of its
	// replicas; the old primary becomes a secondary. Failover and planned
	// switchover both end in it. Start is Node's high timestamp, from
	// which it starts the epoch.
	OpMove Op = "move"
	// OpReplicas adds Add to the secondaries of Table's tablet Tablet, or
	// removes Remove from them, if the tablet is still at Epoch; the
	// primary and the epoch stay (a replica add or remove).
	OpReplicas Op = "replicas"
)

// Command is one entry of the service's log.
type Command struct {
	Op     Op            `json:"op"`
	Layout wire.Layout   `json:"layout,omitzero"`
	Table  string        `json:"table,omitempty"`
	Tablet int           `json:"tablet,omitempty"`
	Epoch  uint64        `json:"epoch,omitempty"`
	Node   wire.NodeID   `json:"node,omitempty"`
	Start  hlc.Timestamp `json:"start,omitzero"`
	Add    wire.NodeID   `json:"add,omitempty"`
	Remove wire.NodeID   `json:"remove,omitempty"`
}

// Encode is c as a log entry's data.
func (c Command) Encode() []byte {
	b, err := json.Marshal(c)
	if err != nil {
		panic(fmt.Sprintf("config: encoding %+v: %v", c, err)) // a Command always encodes
	}
	return b
}

// DecodeCommand parses a log entry's data.
func DecodeCommand(b []byte) (Command, error) {
	var c Command
	if err := json.Unmarshal(b, &c); err != nil {
		return Command{}, fmt.Errorf("%w: %v", ErrBadCommand, err)
	}
	return c, nil
}

// Apply applies c, or leaves the state as it was and returns why not.
func (s *State) Apply(c Command) error {
	switch c.Op {
	case OpCreate:
		return s.create(c.Layout)
	case OpRenew:
		if s.Leases == nil {
			s.Leases = make(map[wire.NodeID]uint64)
		}
		s.Leases[c.Node]++
		return nil
	case OpMove:
		return s.move(c)
	case OpReplicas:
		return s.replicas(c)
	}
	return fmt.Errorf("%w: op %q", ErrBadCommand, c.Op)
}

func (s *State) create(l wire.Layout) error {
	if l.Name == "" || len(l.Tablets) == 0 {
		return fmt.Errorf("%w: a table needs a name and tablets", ErrBadCommand)
	}
	if t, ok := s.Tables[l.Name]; ok {
		if t.Layout.ID == l.ID {
			return nil
		}
		return fmt.Errorf("%w: %q", ErrTableExists, l.Name)
	}
	if s.Tables == nil {
		s.Tables = make(map[string]*Table)
	}
	epochs := make([]uint64, len(l.Tablets))
	for i := range epochs {
		epochs[i] = 1
	}
	l.Tablets = slices.Clone(l.Tablets)
	s.Tables[l.Name] = &Table{Layout: l, Epochs: epochs}
	return nil
}

func (s *State) move(c Command) error {
	t, err := s.atEpoch(c)
	if err != nil {
		return err
	}
	l := t.Layout
	if !l.MoveTo(c.Tablet, c.Node) {
		return fmt.Errorf("%w: %s of %s tablet %d", ErrNotReplica, c.Node, c.Table, c.Tablet)
	}
	if l.Tablets[c.Tablet].Primary != t.Layout.Tablets[c.Tablet].Primary {
		delete(s.Leases, c.Node)
	}
	t.Layout = l
	if t.Starts == nil {
		t.Starts = make([]hlc.Timestamp, len(t.Epochs))
	}
	if t.Earlier == nil {
		t.Earlier = make([][]wire.EpochStart, len(t.Epochs))
	}
	if e := t.Epochs[c.Tablet]; e > 1 {
		prev := wire.EpochStart{Epoch: e, Start: t.Starts[c.Tablet]}
		t.Earlier[c.Tablet] = append([]wire.EpochStart{prev}, t.Earlier[c.Tablet][:min(len(t.Earlier[c.Tablet]), wire.EarlierMax-1)]...)
	}
	t.Epochs[c.Tablet]++
	t.Starts[c.Tablet] = c.Start
	return nil
}

// EarlierOf returns tablet i's EpochChange.Earlier.
func (t *Table) EarlierOf(i int) []wire.EpochStart {
	if i < len(t.Earlier) {
		return t.Earlier[i]
	}
	return nil
}

// replicas applies an OpReplicas.
func (s *State) replicas(c Command) error {
	t, err := s.atEpoch(c)
	if err != nil {
		return err
	}
	tb := t.Layout.Tablets[c.Tablet]
	secs := slices.Clone(tb.Secondaries)
	switch {
	case (c.Add == "") == (c.Remove == ""):
		return fmt.Errorf("%w: a replica change adds or removes one node", ErrBadCommand)
	case c.Add != "" && slices.Contains(tb.Replicas(), c.Add):
		return fmt.Errorf("%w: %s of %s tablet %d", ErrIsReplica, c.Add, c.Table, c.Tablet)
	case c.Add != "":
		secs = append(secs, c.Add)
	case c.Remove == tb.Primary:
		return fmt.Errorf("%w: %s of %s tablet %d", ErrPrimary, c.Remove, c.Table, c.Tablet)
	case !slices.Contains(secs, c.Remove):
		return fmt.Errorf("%w: %s of %s tablet %d", ErrNotReplica, c.Remove, c.Table, c.Tablet)
	default:
		secs = slices.DeleteFunc(secs, func(n wire.NodeID) bool { return n == c.Remove })
	}
	t.Layout.Tablets = slices.Clone(t.Layout.Tablets)
	t.Layout.Tablets[c.Tablet] = wire.Tablet{Start: tb.Start, Primary: tb.Primary, Secondaries: secs}
	if t.Changes == nil {
		t.Changes = make([]uint64, len(t.Epochs))
	}
	t.Changes[c.Tablet]++
	return nil
}

// atEpoch is the table of c's tablet, if the tablet is at c.Epoch.
func (s *State) atEpoch(c Command) (*Table, error) {
	t, err := s.tablet(c.Table, c.Tablet)
	if err != nil {
		return nil, err
	}
	if e := t.Epochs[c.Tablet]; e != c.Epoch {
		return nil, fmt.Errorf("%w: %s tablet %d is at epoch %d, not %d", ErrStaleEpoch, c.Table, c.Tablet, e, c.Epoch)
	}
	return t, nil
}

func (s *State) tablet(table string, tablet int) (*Table, error) {
	t, ok := s.Tables[table]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrNoTable, table)
	}
	if tablet < 0 || tablet >= len(t.Layout.Tablets) {
		return nil, fmt.Errorf("%w: %q has %d tablets, not %d", ErrNoTablet, table, len(t.Layout.Tablets), tablet)
	}
	return t, nil
}

// PrimaryOf lists the tablets node is primary of, as (table, tablet,
// epoch), in table name order.
func (s *State) PrimaryOf(node wire.NodeID) []TabletEpoch {
	var out []TabletEpoch
	for _, name := range slices.Sorted(maps.Keys(s.Tables)) {
		t := s.Tables[name]
		for i, tb := range t.Layout.Tablets {
			if tb.Primary == node {
				out = append(out, TabletEpoch{Table: name, Tablet: i, Epoch: t.Epochs[i]})
			}
		}
	}
	return out
}

// Primaries lists the nodes primary of at least one tablet, in name
// order.
func (s *State) Primaries() []wire.NodeID {
	var out []wire.NodeID
	for _, t := range s.Tables {
		for _, tb := range t.Layout.Tablets {
			out = append(out, tb.Primary)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// TabletEpoch names one tablet at one epoch.
type TabletEpoch struct {
	Table  string `json:"table"`
	Tablet int    `json:"tablet"`
	Epoch  uint64 `json:"epoch"`
}

// Snapshot is s as a raft snapshot's data.
func (s *State) Snapshot() []byte {
	b, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("config: encoding the state: %v", err)) // a State always encodes
	}
	return b
}

// Restore replaces s with a snapshot's state.
func (s *State) Restore(b []byte) error {
	var n State
	if len(b) > 0 {
		if err := json.Unmarshal(b, &n); err != nil {
			return fmt.Errorf("config: decoding a snapshot: %w", err)
		}
	}
	*s = n
	return nil
}

// ByID is the table whose layout has ID id, if the state holds it.
func (s *State) ByID(id uint64) (*Table, bool) {
	for _, t := range s.Tables {
		if t.Layout.ID == id {
			return t, true
		}
	}
	return nil, false
}
