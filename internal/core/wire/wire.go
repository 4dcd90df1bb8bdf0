// Package wire defines the messages that cosla nodes and clients exchange
// and the table layouts they share.
//
// Messages are plain values. Protocol code builds them and hands them to its
// environment; a message must not be modified once sent, because the
// simulator delivers the same value to the receiver.
package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/keyfmt"
)

// NodeID names a node (a storage node or a client) uniquely in a cluster.
// By convention it is "<site>/<name>", e.g. "england/r1".
type NodeID string

// Msg is implemented by every message type in this package. A message is
// defined once, as a struct whose field tags number its fields in the
// protobuf encoding and whose doc comment names its field of the
// envelope (//wire:envelope); `go generate ./internal/core/wire/wirepb`
// derives from it the schema (wirepb/wire.proto), the conversions to and
// from the protobuf types, the methods below (msg_gen.go) and, from the
// order of its fields and their trace tags, its trace line (String,
// trace_gen.go). See wirepb/wiregen for the tags.
type Msg interface {
	// envelopeField is the number of the envelope's field that carries
	// the message.
	envelopeField() int
	// size is the size of the message's own encoding.
	size() int
}

// Code is the outcome of a request as reported by the node that served it.
type Code uint8

// Request outcomes.
const (
	OK Code = iota
	// NoTable: the node holds no table with that name or ID.
	NoTable
	// NotPrimary: a Put reached a node that is not the tablet's primary.
	NotPrimary
	// WrongTablet: the key lies outside the addressed tablet.
	WrongTablet
	// TableExists: CreateTable named an existing table with a different
	// layout.
	TableExists
	// TooLarge: the key or value exceeds the node's limits.
	TooLarge
	// StorageFailed: the node could not read or durably write its storage.
	StorageFailed
	// Invalid: the request is malformed (for example an invalid layout).
	Invalid
	// QuorumTimeout: a Put's write level was not reached before its wait
	// ran out. The version is durable at the primary, which reports in
	// PutReply.Acks how many replicas held it when it answered.
	QuorumTimeout
	// Overloaded: the node's mailbox was full, or held as many requests
	// of this client as it takes; nothing was done. Try again later.
	Overloaded
	// Unavailable: no replica that may serve the request (a causal
	// read's ring, or any ring) answered in time.
	Unavailable
	// Aborted: a causal get-transaction found no snapshot within its
	// rounds (Karma 4.5: abort after a timeout); try again.
	Aborted
	// Behind: a secondary asked by a Repair to catch up to a timestamp
	// did not reach it within its wait: the primary had not ordered it,
	// or could not be reached. Or a replica was asked for a version while
	// it lacks versions it once held (a rollback wiped it, or a snapshot
	// replaces its data): it reads again once it has caught up.
	Behind
	// Unencodable: the request could not be encoded for the network (an
	// identifier that is not valid UTF-8), so it was never sent. Nodes do
	// not send it: the sender's transport refuses the request with it.
	Unencodable
	// NotLeader: a configuration member that is not the service's
	// leader was asked what only the leader does (LeaseGrant.Leader
	// names the leader when the member knows it).
	NotLeader
	// NoLease: the tablet's primary holds no valid lease (it awaits a
	// renewal, or a failover is under way); nothing was done. Try again.
	NoLease
)

var codeNames = [...]string{
	OK:            "ok",
	NoTable:       "no such table",
	NotPrimary:    "not the primary",
	WrongTablet:   "key outside tablet",
	TableExists:   "table exists with another layout",
	TooLarge:      "key or value too large",
	StorageFailed: "storage failed",
	Invalid:       "invalid request",
	QuorumTimeout: "write level not reached in time",
	Overloaded:    "node overloaded",
	Unavailable:   "no replica answered in time",
	Aborted:       "no snapshot found; try again",
	Behind:        "replica behind the timestamp",
	Unencodable:   "not encodable for the network; not sent",
	NotLeader:     "not the configuration leader",
	NoLease:       "the primary holds no lease; try again",
}

func (c Code) String() string {
	if int(c) < len(codeNames) {
		return codeNames[c]
	}
	return fmt.Sprintf("code(%d)", uint8(c))
}

// ReplicationMode says how versions travel from a tablet's primary to its
// secondaries.
type ReplicationMode uint8

// Replication modes. In both, versions are applied in timestamp order
// (Pileus 4.2) and a periodic pull runs every Interval: it repairs gaps and,
// when the primary has nothing new, carries the primary's current time so
// that idle secondaries advance their high timestamps (Pileus 4.3).
const (
	// ModePull: secondaries fetch new versions every Interval (Pileus 4.2).
	ModePull ReplicationMode = iota + 1
	// ModePush: the primary also streams each Put to the secondaries at
	// once.
	ModePush
)

func (m ReplicationMode) String() string {
	switch m {
	case ModePull:
		return "pull"
	case ModePush:
		return "push"
	}
	return fmt.Sprintf("mode(%d)", uint8(m))
}

// Replication is a table's replication configuration.
type Replication struct {
	Mode     ReplicationMode `wire:"4"`
	Interval time.Duration   `wire:"5"`
}

// Level is a read or write level, CPQ's consistency level (CPQ 1): how
// many of a tablet's replicas an operation involves. A positive Level is a
// count; Quorum and All stand for a count that depends on the tablet's
// number of replicas N. The zero Level is unset, which means One.
type Level int32

// Named levels (CPQ 3.1.2: ONE, QUORUM, ALL).
const (
	One    Level = 1
	Quorum Level = -1 // a majority: N/2+1
	All    Level = -2 // every replica
)

// Count resolves the level for a tablet of n replicas. It does not check
// that the count is at most n; Check does.
func (l Level) Count(n int) int {
	switch {
	case l == Quorum:
		return n/2 + 1
	case l == All:
		return n
	case l <= 0:
		return 1
	}
	return int(l)
}

// Check reports whether the level is valid for tablets of n replicas.
func (l Level) Check(n int) error {
	if l < All || l.Count(n) > n {
		return fmt.Errorf("level %s is more than the tablet's %d replicas", l, n)
	}
	return nil
}

func (l Level) String() string {
	switch l {
	case 0:
		return "unset"
	case One:
		return "one"
	case Quorum:
		return "quorum"
	case All:
		return "all"
	}
	if l < 0 {
		return fmt.Sprintf("level(%d)", int32(l))
	}
	return fmt.Sprintf("%d", int32(l))
}

// ParseLevel reads "one", "quorum", "all" or a positive count.
func ParseLevel(s string) (Level, error) {
	switch strings.ToLower(s) {
	case "one":
		return One, nil
	case "quorum":
		return Quorum, nil
	case "all":
		return All, nil
	}
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("unknown level %q (want one, quorum, all or a positive number of replicas)", s)
	}
	return Level(n), nil
}

// Partition says how a table's keys map to its tablets. Either way every
// key has a position, and tablets split the positions into ranges: tablet i
// holds the keys whose position lies in [Tablets[i].Start,
// Tablets[i+1].Start), the last tablet everything from its Start on.
type Partition uint8

// Partitions.
const (
	// ByRange: a key's position is the key itself, so tablets are key
	// ranges (Pileus 3: a table is split by key range into tablets).
	ByRange Partition = iota
	// ByHash: a key's position is HashPosition(key), the 16 lower-case hex
	// digits of the key's FNV-1a 64-bit hash. Tablets are ranges of those,
	// so keys are spread over tablets by hash rather than by order (but
	// see HashPosition on keys that differ only at the end); HashStarts
	// gives equal shares of the hash space. Beyond the paper.
	ByHash
)

func (p Partition) String() string {
	switch p {
	case ByRange:
		return "range"
	case ByHash:
		return "hash"
	}
	return fmt.Sprintf("partition(%d)", uint8(p))
}

// ParsePartition reads "range" or "hash".
func ParsePartition(s string) (Partition, error) {
	switch s {
	case "range":
		return ByRange, nil
	case "hash":
		return ByHash, nil
	}
	return 0, fmt.Errorf("%w: unknown partition %q (want range or hash)", ErrBadLayout, s)
}

// hashDigits is the length of a position under ByHash.
const hashDigits = 16

// HashPosition returns key's position under ByHash: the 16 lower-case hex
// digits of the FNV-1a 64-bit hash of key, mixed by MurmurHash3's 64-bit
// finalizer. It does not allocate; compare string(p[:]) with tablet
// starts.
//
// FNV-1a alone carries a key's last bytes into the high bits of the hash
// weakly, so keys that differ only at the end (user000001, user000002,
// ...) would land on a few tablets; the finalizer (Appleby's fmix64) lets
// every input bit reach every output bit. A stored table's tablets are
// placed by this function: changing it moves keys between tablets.
func HashPosition(key string) [hashDigits]byte {
	// FNV-1a, 64 bits (the constants of hash/fnv), written out because
	// hash/fnv allocates its state and hashes bytes, not strings.
	const (
		offset64 = 14695981039346656037
		prime64  = 1099511628211
	)
	h := uint64(offset64)
	for i := 0; i < len(key); i++ {
		h ^= uint64(key[i])
		h *= prime64
	}
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb93fe53ec64d
	h ^= h >> 33
	const hex = "0123456789abcdef"
	var p [hashDigits]byte
	for i := hashDigits - 1; i >= 0; i-- {
		p[i] = hex[h&0xf]
		h >>= 4
	}
	return p
}

// HashStarts returns the n-1 split points that give n tablets of a
// ByHash table equal shares of the hash space: tablet 0 starts at "" and
// tablet i at HashStarts(n)[i-1]. n below 2 gives none.
func HashStarts(n int) []string {
	if n < 2 {
		return nil
	}
	starts := make([]string, n-1)
	for i := range starts {
		// floor((i+1) * 2^64 / n); the quotient fits as i+1 < n.
		q, _ := bits.Div64(uint64(i+1), 0, uint64(n))
		starts[i] = fmt.Sprintf("%0*x", hashDigits, q)
	}
	return starts
}

// IsHashPosition reports whether s is a position under ByHash, as every
// tablet Start of a ByHash table but the first must be: exactly 16
// lower-case hex digits.
func IsHashPosition(s string) bool {
	if len(s) != hashDigits {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Tablet is one range of a table's key positions (see Partition) and where
// it is stored. The range runs from Start (inclusive) to the next tablet's
// Start (exclusive).
type Tablet struct {
	Start       string   `wire:"1"`
	Primary     NodeID   `wire:"2"`
	Secondaries []NodeID `wire:"3"`
}

// tabletJSON is a Tablet as JSON (storage nodes keep layouts in their
// catalog as JSON): Start, a key that may be any bytes, as keyfmt.JSON,
// first, as before; the rest as Tablet's.
type tabletJSON struct {
	Start keyfmt.JSON
	tabletFields
}

type tabletFields Tablet

// MarshalJSON implements json.Marshaler.
func (t Tablet) MarshalJSON() ([]byte, error) {
	return json.Marshal(tabletJSON{keyfmt.JSON(t.Start), tabletFields(t)})
}

// UnmarshalJSON implements json.Unmarshaler.
func (t *Tablet) UnmarshalJSON(b []byte) error {
	var v tabletJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*t = Tablet(v.tabletFields)
	t.Start = string(v.Start)
	return nil
}

// Replicas returns the primary followed by the secondaries.
func (t Tablet) Replicas() []NodeID {
	return append([]NodeID{t.Primary}, t.Secondaries...)
}

// Layout is a table's configuration: its tablets and replication, or for
// a causal table its rings, coordinators and caches (Causal).
type Layout struct {
	Name string `wire:"1,utf8"`
	// ID distinguishes this incarnation of the table from a deleted one of
	// the same name.
	ID uint64 `wire:"2"`
	// Partition says how keys map to tablets. Default ByRange.
	Partition   Partition   `wire:"6"`
	Tablets     []Tablet    `wire:"3"`
	Replication Replication `wire:"inline"`
	// WriteLevel is the least write level of every Put to the table: the
	// primary raises a Put's level to it. A client that knows it may
	// read r replicas of a tablet of N with r + WriteLevel > N as a
	// strong read (DESIGN.md section 4). Unset means One.
	WriteLevel Level `json:",omitempty" wire:"7"`
	// Causal is set for a causal table, whose Tablets, Partition,
	// Replication and WriteLevel are then unused and empty or zero. Left
	// out of a table of tablets' JSON, so that stored layouts keep their
	// bytes.
	Causal *CausalLayout `json:",omitempty" wire:"8"`
}

// CausalLayout places a causal table (Karma, DESIGN.md section 5): its rings,
// each a complete replica spread by consistent hashing over its storage
// nodes, and the coordinators and caches of its sites. A node's site is
// the part of its NodeID before "/".
type CausalLayout struct {
	// Rings are the rings in a fixed order: a ring's index names it in
	// messages. At most MaxRings.
	Rings        []Ring   `wire:"1"`
	Coordinators []NodeID `wire:"2"` // one per site that serves clients
	Caches       []NodeID `wire:"3"` // at most one per site; none: no caches (Karma-NC, COPS)
	Points       int32    `wire:"4"` // points per node on a ring's circle; 0 means 256
	// Static binds every read to the ring holding the reader's site
	// (COPS-PR; with one ring per site, COPS-Ideal) instead of letting it
	// go to any ring (Karma). Every coordinator's site must be in a ring.
	Static bool `wire:"5"`
}

// Ring is one ring of a causal table: a complete replica, spread by
// consistent hashing over Nodes.
type Ring struct {
	Name  string   `wire:"1,utf8"`
	Nodes []NodeID `wire:"2"`
}

// MaxRings is the most rings a causal table may have.
const MaxRings = 64

// siteOf returns the site of a node named "<site>/<name>": the part before
// the first "/", or the whole ID if it has none.
func siteOf(id NodeID) string {
	site, _, _ := strings.Cut(string(id), "/")
	return site
}

// ErrBadLayout is wrapped by every layout validation error.
var ErrBadLayout = errors.New("cosla: invalid table layout")

// CheckIdentifier says what is wrong with an identifier that is not valid
// UTF-8, or returns nil. Node IDs and table and ring names travel as
// protobuf strings (wirepb), which must be valid UTF-8; keys and values
// may be any bytes.
func CheckIdentifier(what, s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("%s %q is not valid UTF-8 (names and node IDs must be; keys may be any bytes)", what, s)
	}
	return nil
}

// checkIdentifiers checks that the layout's name and every node and ring
// it names are valid UTF-8 (CheckIdentifier).
func (l *Layout) checkIdentifiers() error {
	ids := []NodeID{}
	for _, t := range l.Tablets {
		ids = append(append(ids, t.Primary), t.Secondaries...)
	}
	names := []string{l.Name}
	if c := l.Causal; c != nil {
		ids = append(append(ids, c.Coordinators...), c.Caches...)
		for _, r := range c.Rings {
			names = append(names, r.Name)
			ids = append(ids, r.Nodes...)
		}
	}
	for _, n := range names {
		if err := CheckIdentifier("name", n); err != nil {
			return err
		}
	}
	for _, id := range ids {
		if err := CheckIdentifier("node", string(id)); err != nil {
			return err
		}
	}
	return nil
}

// Validate checks that the layout is usable.
func (l *Layout) Validate() error {
	if l.Name == "" {
		return fmt.Errorf("%w: empty table name", ErrBadLayout)
	}
	if err := l.checkIdentifiers(); err != nil {
		return fmt.Errorf("%w: table %q: %w", ErrBadLayout, l.Name, err)
	}
	if l.ID == 0 {
		return fmt.Errorf("%w: table %q: zero ID", ErrBadLayout, l.Name)
	}
	if l.Causal != nil {
		return l.validateCausal()
	}
	if len(l.Tablets) == 0 {
		return fmt.Errorf("%w: table %q: no tablets", ErrBadLayout, l.Name)
	}
	switch l.Partition {
	case ByRange, ByHash:
	default:
		return fmt.Errorf("%w: table %q: unknown partition %d", ErrBadLayout, l.Name, l.Partition)
	}
	if l.Tablets[0].Start != "" {
		return fmt.Errorf("%w: table %q: the first tablet must start at the empty key", ErrBadLayout, l.Name)
	}
	for i, t := range l.Tablets {
		if i > 0 && l.Partition == ByHash && !IsHashPosition(t.Start) {
			return fmt.Errorf("%w: table %q: partitioned by hash, but tablet %d starts at %q, not at 16 lower-case hex digits",
				ErrBadLayout, l.Name, i, t.Start)
		}
		if i > 0 && t.Start <= l.Tablets[i-1].Start {
			return fmt.Errorf("%w: table %q: tablet %d starts at %q, not after tablet %d's %q",
				ErrBadLayout, l.Name, i, t.Start, i-1, l.Tablets[i-1].Start)
		}
		if t.Primary == "" {
			return fmt.Errorf("%w: table %q: tablet %d has no primary", ErrBadLayout, l.Name, i)
		}
		seen := map[NodeID]bool{t.Primary: true}
		for _, s := range t.Secondaries {
			if seen[s] {
				return fmt.Errorf("%w: table %q: tablet %d lists node %q twice", ErrBadLayout, l.Name, i, s)
			}
			seen[s] = true
		}
	}
	switch l.Replication.Mode {
	case ModePull, ModePush:
	default:
		return fmt.Errorf("%w: table %q: unknown replication mode %d", ErrBadLayout, l.Name, l.Replication.Mode)
	}
	for i, t := range l.Tablets {
		if err := l.WriteLevel.Check(1 + len(t.Secondaries)); err != nil {
			return fmt.Errorf("%w: table %q: tablet %d: write %w", ErrBadLayout, l.Name, i, err)
		}
	}
	if l.Replication.Interval <= 0 {
		return fmt.Errorf("%w: table %q: replication interval must be positive, got %s", ErrBadLayout, l.Name, l.Replication.Interval)
	}
	return nil
}

// validateCausal checks a causal table's layout: its rings, coordinators
// and caches. Its tablets must be empty; its partition, replication and
// write level are not used.
func (l *Layout) validateCausal() error {
	c := l.Causal
	if len(l.Tablets) != 0 {
		return fmt.Errorf("%w: table %q: causal, but lists tablets", ErrBadLayout, l.Name)
	}
	if len(c.Rings) == 0 {
		return fmt.Errorf("%w: table %q: causal, but has no rings", ErrBadLayout, l.Name)
	}
	if len(c.Rings) > MaxRings {
		return fmt.Errorf("%w: table %q: %d rings, at most %d", ErrBadLayout, l.Name, len(c.Rings), MaxRings)
	}
	if c.Points < 0 {
		return fmt.Errorf("%w: table %q: negative points per node %d", ErrBadLayout, l.Name, c.Points)
	}
	ringOf := map[NodeID]int{}
	for i, r := range c.Rings {
		if len(r.Nodes) == 0 {
			return fmt.Errorf("%w: table %q: ring %d (%s) has no nodes", ErrBadLayout, l.Name, i, r.Name)
		}
		for _, n := range r.Nodes {
			if n == "" {
				return fmt.Errorf("%w: table %q: ring %d (%s) lists an empty node", ErrBadLayout, l.Name, i, r.Name)
			}
			if j, ok := ringOf[n]; ok {
				if j == i {
					return fmt.Errorf("%w: table %q: ring %d (%s) lists node %q twice", ErrBadLayout, l.Name, i, r.Name, n)
				}
				return fmt.Errorf("%w: table %q: node %q is in ring %d (%s) and ring %d (%s)",
					ErrBadLayout, l.Name, n, j, c.Rings[j].Name, i, r.Name)
			}
			ringOf[n] = i
		}
	}
	if len(c.Coordinators) == 0 {
		return fmt.Errorf("%w: table %q: causal, but has no coordinators", ErrBadLayout, l.Name)
	}
	if err := oneASite(c.Coordinators); err != "" {
		return fmt.Errorf("%w: table %q: coordinators: %s", ErrBadLayout, l.Name, err)
	}
	if err := oneASite(c.Caches); err != "" {
		return fmt.Errorf("%w: table %q: caches: %s", ErrBadLayout, l.Name, err)
	}
	if c.Static {
		ringed := map[string]bool{}
		for n := range ringOf {
			ringed[siteOf(n)] = true
		}
		for _, cc := range c.Coordinators {
			if !ringed[siteOf(cc)] {
				return fmt.Errorf("%w: table %q: static, but coordinator %q's site has no storage node in a ring to bind its reads to", ErrBadLayout, l.Name, cc)
			}
		}
	}
	return nil
}

// oneASite checks that nodes are named, distinct and at distinct sites,
// and says what is wrong if not.
func oneASite(nodes []NodeID) string {
	at := map[string]NodeID{}
	for i, n := range nodes {
		if n == "" {
			return fmt.Sprintf("node %d is empty", i)
		}
		prev, ok := at[siteOf(n)]
		switch {
		case ok && prev == n:
			return fmt.Sprintf("node %q is listed twice", n)
		case ok:
			return fmt.Sprintf("nodes %q and %q are at the same site %q", prev, n, siteOf(n))
		}
		at[siteOf(n)] = n
	}
	return ""
}

// Position returns key's position (see Partition): the key itself under
// ByRange, its HashPosition under ByHash. It allocates under ByHash;
// TabletFor does not.
func (l *Layout) Position(key string) string {
	if l.Partition == ByHash {
		p := HashPosition(key)
		return string(p[:])
	}
	return key
}

// TabletFor returns the index of the tablet holding key. It does not
// allocate.
func (l *Layout) TabletFor(key string) int {
	if l.Partition == ByHash {
		p := HashPosition(key)
		return tabletAt(l.Tablets, string(p[:]))
	}
	return tabletAt(l.Tablets, key)
}

// tabletAt returns the index of the last tablet starting at or before pos.
func tabletAt(tablets []Tablet, pos string) int {
	lo, hi := 0, len(tablets) // the answer's successor is in [lo, hi]
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if tablets[mid].Start > pos {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo - 1
}

// MoveTo makes to the primary of tablet i, if it is one of the tablet's
// replicas, and reports whether it is: the old primary takes to's place
// among the secondaries, so the replica set keeps its order otherwise.
// Tablets is copied before it changes, so a layout sharing it with
// another is not changed under that one.
func (l *Layout) MoveTo(i int, to NodeID) bool {
	tb := l.Tablets[i]
	if tb.Primary == to {
		return true
	}
	j := slices.Index(tb.Secondaries, to)
	if j < 0 {
		return false
	}
	secs := slices.Clone(tb.Secondaries)
	secs[j] = tb.Primary
	l.Tablets = slices.Clone(l.Tablets)
	l.Tablets[i] = Tablet{Start: tb.Start, Primary: to, Secondaries: secs}
	return true
}

// Equal reports whether two layouts are identical.
func (l *Layout) Equal(o *Layout) bool {
	if l.Name != o.Name || l.ID != o.ID || l.Partition != o.Partition || l.Replication != o.Replication ||
		l.WriteLevel != o.WriteLevel || len(l.Tablets) != len(o.Tablets) {
		return false
	}
	for i, t := range l.Tablets {
		u := o.Tablets[i]
		if t.Start != u.Start || t.Primary != u.Primary || len(t.Secondaries) != len(u.Secondaries) {
			return false
		}
		for j := range t.Secondaries {
			if t.Secondaries[j] != u.Secondaries[j] {
				return false
			}
		}
	}
	return l.Causal.Equal(o.Causal)
}

// Equal reports whether two causal layouts are identical; nil, a table of
// tablets, equals only nil. An empty list equals a nil one.
func (c *CausalLayout) Equal(o *CausalLayout) bool {
	if c == nil || o == nil {
		return c == o
	}
	return c.Points == o.Points && c.Static == o.Static && slices.Equal(c.Coordinators, o.Coordinators) && slices.Equal(c.Caches, o.Caches) &&
		slices.EqualFunc(c.Rings, o.Rings, func(r, s Ring) bool { return r.Name == s.Name && slices.Equal(r.Nodes, s.Nodes) })
}

// TabletRef addresses one tablet of one table incarnation.
type TabletRef struct {
	Table  uint64 `wire:"1"` // Layout.ID
	Tablet int32  `wire:"2"` // index into Layout.Tablets
}

// Entry is one version of one key, as replicated from a primary.
type Entry struct {
	Key   string        `wire:"2"`
	Value []byte        `wire:"3"`
	TS    hlc.Timestamp `wire:"1"`
	// Origin and Seq name a staged write (dConssandra 3): the replica
	// that received it and its number there. They travel with the
	// version so that every replica holds the primary's exactly-once
	// record of each receiver's writes, and a new primary goes on from
	// it after a failover (DESIGN.md section 10).
	Origin NodeID `wire:"4" trace:",omitzero"`
	Seq    uint64 `wire:"5" trace:",omitzero"`
}

// CreateTableRequest asks a storage node to create its replicas of the
// table's tablets. It is idempotent for an identical layout.
//
//wire:envelope 10
type CreateTableRequest struct {
	Req    uint64 `wire:"1"`
	Layout Layout `wire:"2"`
}

// CreateTableReply answers CreateTableRequest.
//
//wire:envelope 11
type CreateTableReply struct {
	Req  uint64 `wire:"1"`
	Code Code   `wire:"2" trace:"err,omitzero"`
}

// DeleteTableRequest asks a storage node to drop its replicas of a table.
// Deleting a table the node does not hold succeeds.
//
//wire:envelope 12
type DeleteTableRequest struct {
	Req  uint64 `wire:"1"`
	Name string `wire:"2,utf8" trace:"table"`
}

// DeleteTableReply answers DeleteTableRequest.
//
//wire:envelope 13
type DeleteTableReply struct {
	Req  uint64 `wire:"1"`
	Code Code   `wire:"2" trace:"err,omitzero"`
}

// TableInfoRequest asks a storage node for a table's layout.
//
//wire:envelope 14
type TableInfoRequest struct {
	Req  uint64 `wire:"1"`
	Name string `wire:"2,utf8" trace:"table"`
}

// TableInfoReply answers TableInfoRequest; Layout is set when Code is OK.
//
//wire:envelope 15
type TableInfoReply struct {
	Req    uint64 `wire:"1"`
	Code   Code   `wire:"2"`
	Layout Layout `wire:"3"`
}

// PutRequest writes a new version of Key at the tablet's primary. The
// primary gives it a timestamp greater than MinTS, the largest timestamp the
// writing session has seen, so causality crosses tablets (Pileus 4.4).
//
// W is the write level as a count (CPQ): the primary answers once W
// replicas, itself included, have applied the version, pushing it to
// every secondary at once. W of 0 or 1 answers once the primary holds it.
// Wait bounds how long the primary waits for the others; past it the
// reply is QuorumTimeout.
//
// Bound, when not NoBound, makes the Put a staged write (dConssandra,
// DESIGN.md section 4): any replica of the tablet may take it. It makes
// the write durable in its staging space (reception), forwards it to the
// primary (transmission), which orders it (coordination) and pushes it
// (execution), and answers with the stage reached once the stages its
// planner chose are done, or once Budget has passed since the request
// arrived: the bound less the client's round-trip estimate, so that the
// answer reaches the client by the bound. W and Wait are not used with a
// bound.
//
// Test, when set, makes the Put a ReadTestWrite (dConssandra 2): the
// primary writes only if Test.Key's value, at the write's place in the
// tablet's order, is Test.Value (Test.Found false: if Test.Key has no
// value). Test.Key lies in the same tablet as Key.
//
//wire:envelope 16
type PutRequest struct {
	Req    uint64        `wire:"1"`
	Tablet TabletRef     `wire:"2"`
	Key    string        `wire:"3"`
	Value  []byte        `wire:"4"`
	MinTS  hlc.Timestamp `wire:"5" trace:"min"`
	W      int32         `wire:"6" trace:",if=m.W > 1"`
	Wait   time.Duration `wire:"7" trace:",if=m.W > 1"`
	Bound  Bound         `wire:"8" trace:",omitzero"`
	Budget time.Duration `wire:"9" trace:",omitzero"`
	Test   *Test         `wire:"10"`
	// Epoch is the tablet's epoch as the client knows it (0: unknown). A
	// node that knows a newer one answers NotPrimary with it; one that
	// learns of a newer one from it stops taking Puts (it was deposed).
	Epoch uint64 `wire:"11" trace:",omitzero"`
}

// Test is the test of a ReadTestWrite.
type Test struct {
	Key   string `wire:"1"`
	Found bool   `wire:"2"`
	Value []byte `wire:"3"`
}

// Bound is how long an operation may take (dConssandra 2): NoBound (the
// Pileus and CPQ paths), Immediate (reception only), Unbounded (a write
// is coordinated and applied at every replica before the answer; a read
// sees every write coordinated before it), or a positive duration.
type Bound int64

// The bounds that are not durations.
const (
	NoBound   Bound = 0
	Immediate Bound = -1
	Unbounded Bound = math.MaxInt64
)

// Duration returns a positive bound as a duration.
func (b Bound) Duration() time.Duration { return time.Duration(b) }

func (b Bound) String() string {
	switch b {
	case NoBound:
		return "none"
	case Immediate:
		return "immediate"
	case Unbounded:
		return "unbounded"
	}
	return time.Duration(b).String()
}

// ParseBound reads a bound as String writes it, in any case: immediate,
// unbounded or a positive duration; "" is NoBound. A zero duration is
// refused: dConssandra's 0 ms (as soon as possible) is Immediate.
func ParseBound(s string) (Bound, error) {
	switch strings.ToLower(s) {
	case "":
		return NoBound, nil
	case "immediate":
		return Immediate, nil
	case "unbounded":
		return Unbounded, nil
	}
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		return 0, errors.New("want immediate, unbounded or a duration such as 50ms")
	case d == 0:
		return 0, errors.New("a zero bound is refused; for an answer without waiting give immediate")
	case d < 0:
		return 0, errors.New("a bound must be positive; give immediate, unbounded or a duration such as 50ms")
	}
	return Bound(d), nil
}

// Valid reports whether b is one of the bounds above.
func (b Bound) Valid() bool { return b >= Immediate }

// Stage is how far a staged write got (dConssandra 3, DESIGN.md section
// 4), each stage implying the ones before it.
type Stage uint8

// The stages of a write.
const (
	// Received: durable in the receiving replica's staging space.
	Received Stage = 1 + iota
	// Transmitted: forwarded to the primary, not yet ordered.
	Transmitted
	// Coordinated: ordered by the primary, which holds it durably: the
	// write has its timestamp.
	Coordinated
	// Executed: applied at every replica.
	Executed
)

var stageNames = [...]string{Received: "received", Transmitted: "transmitted", Coordinated: "coordinated", Executed: "executed"}

func (s Stage) String() string {
	if s > 0 && int(s) < len(stageNames) {
		return stageNames[s]
	}
	return fmt.Sprintf("stage(%d)", uint8(s))
}

// Outcome is what a ReadTestWrite's test found.
type Outcome uint8

// Test outcomes.
const (
	// NotEvaluated: the primary had not ordered the write when the
	// answer was sent.
	NotEvaluated Outcome = iota
	// Held: the test held and the value was written.
	Held
	// Failed: the test failed and nothing was written.
	Failed
)

func (o Outcome) String() string {
	if o > Failed {
		return fmt.Sprintf("outcome(%d)", uint8(o))
	}
	return [...]string{"not evaluated", "held", "failed"}[o]
}

// PutReply answers PutRequest. TS is the version's update timestamp; the
// version is durable at the primary when the reply is sent (also with
// QuorumTimeout). Acks is the number of replicas, the primary included,
// known to hold the version when the primary answered.
//
// A staged write's reply (PutRequest.Bound) also says how far it got:
// Stage, and WriteID, the receiving node's number for the write within
// the tablet, which a later Resolved ties to its timestamp. TS is set
// from Coordinated on; Holders lists the replicas known to have applied
// it, and Tested is a ReadTestWrite's outcome.
//
//wire:envelope 17
type PutReply struct {
	Req     uint64        `wire:"1"`
	TS      hlc.Timestamp `wire:"3"`
	Acks    int32         `wire:"4" trace:",if=m.Acks > 1 || m.Code == QuorumTimeout"`
	Stage   Stage         `wire:"5" trace:",omitzero"`
	WriteID uint64        `wire:"6" trace:"write,omitzero"`
	Holders []NodeID      `wire:"7" trace:",omitzero"`
	Tested  Outcome       `wire:"8" trace:",omitzero"`
	// With Code NotPrimary: the tablet's epoch and primary as the node
	// knows them (Primary empty: the node does not know who is primary
	// now), so the client updates its layout and retries there.
	Epoch   uint64 `wire:"9" trace:",omitzero"`
	Primary NodeID `wire:"10" trace:",omitzero"`
	Code    Code   `wire:"2" trace:"err,omitzero"`
}

// GetRequest reads the replica's version of Key.
//
// Bound, when not NoBound, makes the Get a bounded read (dConssandra 2):
// within Budget the node first brings in writes it lacks (acquisition:
// a secondary pulls from the primary; staged writes are waited for
// until the primary has ordered them), then reads. Unbounded reads every
// write the primary ordered before the Get arrived.
//
//wire:envelope 18
type GetRequest struct {
	Req    uint64        `wire:"1"`
	Tablet TabletRef     `wire:"2"`
	Key    string        `wire:"3"`
	Bound  Bound         `wire:"4" trace:",omitzero"`
	Budget time.Duration `wire:"5" trace:",omitzero"`
}

// GetReply answers GetRequest with the stored version (Found is false if the
// key has none) and the replica's high timestamp: the replica holds every
// version of the tablet with a timestamp at or below HighTS (Pileus 4.3).
//
// A bounded read also reports Applied, the writes it brought in within
// its budget, and Pending, those it knew of and could not (at least one
// when the count is unknown). Null is the paper's NULL: writes of the
// key were pending and the budget did not allow even one; no version is
// returned.
//
//wire:envelope 19
type GetReply struct {
	Req       uint64        `wire:"1"`
	Found     bool          `wire:"3" trace:"not-found,flag,if=!m.Found && m.Code == OK && !m.Null"`
	Value     []byte        `wire:"4" trace:",if=m.Found"`
	VersionTS hlc.Timestamp `wire:"5" trace:"version,if=m.Found"`
	HighTS    hlc.Timestamp `wire:"6" trace:"high"`
	Primary   bool          `wire:"7" trace:",flag"`
	Applied   int32         `wire:"8" trace:",if=m.Applied != 0 || m.Pending != 0"`
	Pending   int32         `wire:"9" trace:",if=m.Applied != 0 || m.Pending != 0"`
	Null      bool          `wire:"10" trace:",flag"`
	Code      Code          `wire:"2" trace:"err,omitzero"`
}

// ProbeRequest asks a replica for its high timestamp (Pileus 4.5).
//
//wire:envelope 20
type ProbeRequest struct {
	Req    uint64    `wire:"1"`
	Tablet TabletRef `wire:"2"`
}

// ProbeReply answers ProbeRequest.
//
//wire:envelope 21
type ProbeReply struct {
	Req     uint64        `wire:"1"`
	HighTS  hlc.Timestamp `wire:"3" trace:"high"`
	Primary bool          `wire:"4" trace:",flag"`
	Code    Code          `wire:"2" trace:"err,omitzero"`
}

// PullRequest asks a primary for the versions after Since.
//
// A secondary receiving a snapshot (see PullReply) asks for its next
// chunk with InSnapshot set: SnapshotHigh is the snapshot's high
// timestamp, from its first chunk, and SnapshotAfter the last key the
// secondary has applied; the primary goes on with the keys after it.
//
//wire:envelope 22
type PullRequest struct {
	Tablet        TabletRef     `wire:"1"`
	Since         hlc.Timestamp `wire:"2"`
	InSnapshot    bool          `wire:"3" trace:"-"`
	SnapshotHigh  hlc.Timestamp `wire:"4,omitzero" trace:"snapshot,if=m.InSnapshot"`
	SnapshotAfter string        `wire:"5" trace:"after,if=m.InSnapshot"`
	Epoch         uint64        `wire:"6" trace:",omitzero"`
}

// PullReply carries, in timestamp order, every version of the tablet with a
// timestamp in (Since, High]. When it carries everything the primary has,
// High is the primary's current time (Pileus 4.3) and More is false;
// otherwise High is the timestamp of the last entry and More is true.
//
// When the primary has already discarded log entries after Since (the
// secondary lost its storage), it sends a Snapshot instead, in chunks that
// each stay within the batch limits of an ordinary reply. A snapshot has
// a high timestamp S, the primary's time when it started, which every
// chunk carries as High. A chunk holds, in key order, the latest version
// of each key after SnapshotAfter (of every key from the first, on the
// first chunk, which has InSnapshot unset) up to SnapshotLast, read when
// the chunk was served: at or above its latest version as of S, perhaps
// newer. More says that keys remain. The first chunk replaces the
// secondary's copy of the tablet; once it has applied the last one it
// holds every version up to S and takes S as its high timestamp.
// Since, InSnapshot and SnapshotAfter repeat the request's, so that the
// secondary can tell a chunk that continues its snapshot, or starts one
// from its current high timestamp, from a stale one.
//
//wire:envelope 23
type PullReply struct {
	Tablet   TabletRef     `wire:"1"`
	Code     Code          `wire:"2"`
	Since    hlc.Timestamp `wire:"3"`
	High     hlc.Timestamp `wire:"4"`
	Entries  []Entry       `wire:"5"`
	More     bool          `wire:"6"`
	Snapshot bool          `wire:"7"`
	// Snapshot chunks only.
	InSnapshot    bool   `wire:"8"`
	SnapshotAfter string `wire:"9"`
	SnapshotLast  string `wire:"10"`
	// Epoch is the tablet's epoch at the primary; a secondary ignores a
	// reply of an epoch older than its own.
	Epoch uint64 `wire:"11"`
	// Records, on a snapshot's last chunk of a governed tablet, are the
	// exactly-once records of the staged writes ordered up to High, which
	// the chunks' versions do not carry (Entry.Origin): the secondary
	// keeps them, so that as a new primary it answers a write forwarded
	// again from them rather than ordering it twice (DESIGN.md section
	// 10).
	Records []Record `wire:"12"`
}

// Record is what a primary made of one receiver's staged write: its
// timestamp (zero if it wrote nothing), a ReadTestWrite's outcome, and
// the code it answered with.
type Record struct {
	Origin NodeID        `wire:"1"`
	Seq    uint64        `wire:"2"`
	TS     hlc.Timestamp `wire:"3"`
	Tested Outcome       `wire:"4"`
	Code   Code          `wire:"5"`
}

// Push streams one new version from a primary to a secondary. Prev is the
// timestamp of the tablet's previous version, so the secondary can tell a
// gap (a lost Push) from the next version in order. Ack asks the
// secondary to answer with a PushAck once it holds the version durably,
// because a Put with a write level above one waits for it.
//
//wire:envelope 24
type Push struct {
	Tablet TabletRef     `wire:"1"`
	Prev   hlc.Timestamp `wire:"2"`
	Entry  Entry         `wire:"3" trace:",flat"`
	Ack    bool          `wire:"4" trace:",flag"`
	Epoch  uint64        `wire:"5" trace:",omitzero"`
}

// PushAck tells a primary that a secondary holds, durably, every version
// of the tablet up to High: it answers a Push (or the pull that filled a
// gap a Push revealed), so that the primary can count the replicas that
// hold a Put with a write level above one (CPQ).
//
//wire:envelope 25
type PushAck struct {
	Tablet TabletRef     `wire:"1"`
	High   hlc.Timestamp `wire:"2"`
	Epoch  uint64        `wire:"3" trace:",omitzero"`
}

// Forward carries a staged write from the replica that received it to
// the tablet's primary (transmission, dConssandra 3). Seq is the
// receiver's number for the write in the tablet; a receiver forwards its
// writes in Seq order, and the primary orders each exactly once, in that
// order. W asks the primary to send a second ForwardAck once W replicas
// hold the write, or once Wait has passed. Acked is the receiver's
// acknowledged prefix: a primary whose record of the receiver is below
// it (the writes between were acknowledged by a primary of an earlier
// epoch and rolled back, or it caught up by snapshot) takes the writes up
// to Acked as settled and orders Acked+1 next.
//
//wire:envelope 27
type Forward struct {
	Tablet TabletRef     `wire:"1"`
	Seq    uint64        `wire:"2"`
	Key    string        `wire:"3"`
	Value  []byte        `wire:"4"`
	MinTS  hlc.Timestamp `wire:"5" trace:"min"`
	W      int32         `wire:"6" trace:",if=m.W > 1"`
	Wait   time.Duration `wire:"7" trace:",if=m.W > 1"`
	Test   *Test         `wire:"8"`
	Epoch  uint64        `wire:"9" trace:",omitzero"`
	Acked  uint64        `wire:"10" trace:",omitzero"`
}

// ForwardAck tells a receiver that the primary has ordered its writes up
// to Seq: TS is Seq's timestamp (an earlier write's is below it). Acks
// and Holders count and name the replicas holding Seq when it was sent.
// Code is not OK if the primary refused Seq; Tested is a ReadTestWrite's
// outcome.
//
//wire:envelope 28
type ForwardAck struct {
	Tablet  TabletRef     `wire:"1"`
	Seq     uint64        `wire:"2"`
	TS      hlc.Timestamp `wire:"4"`
	Acks    int32         `wire:"5" trace:",omitzero"`
	Holders []NodeID      `wire:"6" trace:",omitzero"`
	Tested  Outcome       `wire:"7" trace:",omitzero"`
	// With Code NotPrimary, as in PutReply: the receiver forwards again
	// to Primary.
	Epoch   uint64 `wire:"8" trace:",omitzero"`
	Primary NodeID `wire:"9" trace:",omitzero"`
	Code    Code   `wire:"3" trace:"err,omitzero"`
}

// Resolved tells the client that wrote a staged write, after its reply,
// the timestamp the primary gave it (TS; the write was refused if Code
// is not OK). WriteID is PutReply.WriteID at the node that sends it.
//
//wire:envelope 29
type Resolved struct {
	Tablet  TabletRef     `wire:"1"`
	WriteID uint64        `wire:"2" trace:"write"`
	TS      hlc.Timestamp `wire:"4"`
	Code    Code          `wire:"3" trace:"err,omitzero"`
}

// Repair is read repair (CPQ; Cassandra's blocking read repair, ABD's
// write-back): a client that read several replicas asks one that
// answered with an older version to catch up to TS, the newest version's
// timestamp. It carries no data: a secondary that has not reached TS
// pulls from the primary, so it only ever holds versions the primary
// ordered, still a prefix of the tablet's history. It answers with a
// RepairReply once its high timestamp is at or above TS, or Behind when
// it cannot get there within its wait (a TS the primary has not ordered,
// or a primary it cannot reach).
//
//wire:envelope 26
type Repair struct {
	Req    uint64        `wire:"3"`
	Tablet TabletRef     `wire:"1"`
	TS     hlc.Timestamp `wire:"4"`
}

// RepairReply answers Repair: Code is OK when the replica holds every
// version up to the Repair's TS durably; High is its high timestamp
// (for the primary, its clock).
//
//wire:envelope 46
type RepairReply struct {
	Req  uint64        `wire:"1"`
	High hlc.Timestamp `wire:"3"`
	Code Code          `wire:"2" trace:"err,omitzero"`
}

// FromClient reports whether clients send m: the requests of the client
// protocol, with the read repair a quorum Get sends (CPQ), the causal puts,
// gets and get-transactions a client sends its coordinator (Karma), and
// the utility reports it sends the configuration service (Pileus 6.2).
// Everything else (replication, the protocol among a causal table's
// coordinators, middle men and caches, and replies) only storage nodes
// send, and a node refuses it from a peer holding a client certificate.
func FromClient(m Msg) bool {
	switch m.(type) {
	case *CreateTableRequest, *DeleteTableRequest, *TableInfoRequest, *PutRequest, *GetRequest, *ProbeRequest, *Repair,
		*CausalPut, *CausalGet, *CausalGetTx, *UtilityReport, *Reconfigure:
		return true
	}
	return false
}

// Refusal returns the reply that refuses the client request m with code,
// or nil if m is not a request a client sends (wire.FromClient). A
// refused causal put or read carries no version, and the table its
// request named.
func Refusal(m Msg, code Code) Msg {
	switch m := m.(type) {
	case *CreateTableRequest:
		return &CreateTableReply{Req: m.Req, Code: code}
	case *DeleteTableRequest:
		return &DeleteTableReply{Req: m.Req, Code: code}
	case *TableInfoRequest:
		return &TableInfoReply{Req: m.Req, Code: code}
	case *PutRequest:
		return &PutReply{Req: m.Req, Code: code}
	case *GetRequest:
		return &GetReply{Req: m.Req, Code: code}
	case *ProbeRequest:
		return &ProbeReply{Req: m.Req, Code: code}
	case *Repair:
		return &RepairReply{Req: m.Req, Code: code}
	case *Reconfigure:
		return &ReconfigureReply{Req: m.Req, Code: code}
	case *CausalPut:
		return &CausalPutReply{Req: m.Req, Table: m.Table, Code: code}
	case *CausalGet:
		return &CausalGetReply{Req: m.Req, Table: m.Table, Code: code, Ring: NoRing}
	case *CausalGetTx:
		return &CausalGetTxReply{Req: m.Req, Table: m.Table, Code: code, Ring: NoRing}
	}
	return nil
}
