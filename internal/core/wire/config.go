package wire

import "github.com/cosla/cosla/internal/core/hlc"

// This file holds the messages of the configuration service (DESIGN.md
// section 10): among its members (raft), between a primary and the
// service's leader (leases), between the leader and a tablet's replicas
// (failover and switchover), and from clients to the leader (utility
// reports for reconfiguration).
//
// A tablet's epoch numbers its primaries: the service moves a tablet to a
// new primary only at the next epoch, and a replica refuses replication
// of an epoch older than its own. Epoch 0 means a tablet no service
// governs (a node started without configuration members).

// TabletEpoch names a tablet at an epoch.
type TabletEpoch struct {
	Tablet TabletRef `wire:"1"`
	Epoch  uint64    `wire:"2"`
}

// ConfigRaft carries one raft message (raftpb.Message, marshalled)
// between two members of the configuration service.
//
//wire:envelope 47
type ConfigRaft struct {
	Data []byte `wire:"1"`
}

// LeaseRenew asks the service's leader to renew the sender's lease as
// the primary of Tablets, at the epochs it names. Seq numbers the
// sender's requests: the primary counts the lease a LeaseGrant of Seq
// renews from when it sent Seq. Layouts are tables the sender is primary
// in that the service did not list in its last grant (a table created
// since): the leader records them before it renews.
//
//wire:envelope 48
type LeaseRenew struct {
	Seq     uint64        `wire:"1"`
	Tablets []TabletEpoch `wire:"2"`
	Layouts []Layout      `wire:"3" trace:"-"`
}

// LeaseGrant answers LeaseRenew. With Code OK, the renewal of Seq
// committed: the receiver holds the lease for Tablets, the tablets the
// service has it primary of, at their epochs (a tablet it asked for and
// is not listed has moved away, or its table is not yet recorded). With
// NotLeader, Leader names the member the sender believes leads, if any.
//
//wire:envelope 49
type LeaseGrant struct {
	Seq     uint64        `wire:"1"`
	Tablets []TabletEpoch `wire:"4"`
	Leader  NodeID        `wire:"3" trace:",omitzero"`
	Code    Code          `wire:"2" trace:"err,omitzero"`
}

// HighRequest asks a replica of Tablet for its high timestamp ahead of a
// move of the tablet to Epoch. From then on the replica takes no version
// of an older epoch above Until (above its high timestamp, if Until is
// zero), so that the high it reports stays true; a primary stops
// accepting Puts. With Until set (a switchover's target), the replica
// answers once it holds every version up to Until, pulling from the
// primary, or when its repair wait runs out.
//
//wire:envelope 50
type HighRequest struct {
	Tablet TabletRef     `wire:"1"`
	Epoch  uint64        `wire:"2"`
	Until  hlc.Timestamp `wire:"3" trace:",omitzero"`
	// Term is the asking leader's raft term: an EpochChange of a later
	// term at the tablet's own epoch lifts the fence (the transition
	// was given up with its leader).
	Term uint64 `wire:"4" trace:",omitzero"`
}

// HighReply answers HighRequest with the replica's high timestamp.
// Code is NoTable if the replica does not hold the tablet, and Invalid
// if it already knows an epoch at or after the one asked for.
//
//wire:envelope 51
type HighReply struct {
	Tablet TabletRef     `wire:"1"`
	Epoch  uint64        `wire:"2"`
	High   hlc.Timestamp `wire:"3"`
	Code   Code          `wire:"4" trace:"err,omitzero"`
}

// EpochChange tells a replica of Layout's tablet Tablet that the tablet
// is at Epoch, with the primary Layout names. Start is the new primary's
// high timestamp when it took over: every replica holds a prefix of the
// log up to Start, and a replica holding versions of an older epoch
// above it rolls them back (they were acknowledged by too few replicas
// to survive). The new primary counts its first lease from when it
// received the HighRequest of Epoch. The replica answers EpochAck.
//
// Earlier are the starts of the epochs before Epoch (from the second,
// the newest first, at most EarlierMax): a replica that missed some
// epochs rolls back above the start of the first epoch after its own,
// which may lie below Start.
//
//wire:envelope 52
type EpochChange struct {
	Layout  Layout        `wire:"1" trace:"-"`
	Tablet  int32         `wire:"2"`
	Epoch   uint64        `wire:"3"`
	Start   hlc.Timestamp `wire:"4"`
	Earlier []EpochStart  `wire:"5" trace:"-"`
	// Term is the sending leader's raft term. A leader that has applied
	// an entry of its own term tells every replica of every tablet its
	// epoch: one at that epoch, fenced by a HighRequest of an earlier
	// term, lifts the fence, since no move of that transition can
	// commit any more.
	Term uint64 `wire:"6" trace:",omitzero"`
}

// EpochStart is the start of one of a tablet's epochs (EpochChange).
type EpochStart struct {
	Epoch uint64        `wire:"1"`
	Start hlc.Timestamp `wire:"2"`
}

// EarlierMax bounds EpochChange.Earlier. A replica further behind has no
// start to roll back to: it rolls back every version it holds.
const EarlierMax = 16

// EpochAck tells the leader that a replica knows the tablet's Epoch.
//
//wire:envelope 53
type EpochAck struct {
	Tablet TabletRef `wire:"1"`
	Epoch  uint64    `wire:"2"`
}

// SiteUtility is the utility, summed over a report's operations, they
// would have received with the tablet's primary at Site, in millionths.
type SiteUtility struct {
	Site  string `wire:"1,utf8"`
	Micro uint64 `wire:"2"`
}

// UtilityReport is a client's account of its operations on one tablet
// since its last report (Pileus 6.2 reconfiguration): how many, and the
// utility they would have received with the primary at each site. Its
// size is bounded by the number of sites.
//
//wire:envelope 54
type UtilityReport struct {
	Tablet TabletRef     `wire:"1"`
	Ops    uint64        `wire:"2"`
	Sites  []SiteUtility `wire:"3"`
}

// Reconfigure asks the configuration service's leader to change one
// tablet of Table: to move its primary to Primary by planned switchover
// (no acknowledged write is lost, at any level), or to add the node Add
// to its secondaries or remove Remove from them. One of the three is
// set. An operator's client sends it (`cosla cluster failover`,
// `cosla cluster replica`).
//
//wire:envelope 55
type Reconfigure struct {
	Req     uint64 `wire:"1"`
	Table   string `wire:"2,utf8"`
	Tablet  int32  `wire:"3"`
	Primary NodeID `wire:"4" trace:",omitzero"`
	Add     NodeID `wire:"5" trace:",omitzero"`
	Remove  NodeID `wire:"6" trace:",omitzero"`
}

// ReconfigureReply answers Reconfigure once the change has committed
// (Code OK, Epoch the tablet's epoch after it, Layout the table's
// layout), or refuses it: NotLeader (Leader names the leader if the
// member knows it), NoTable, Invalid (a node that is not a replica, the
// primary removed, a change already under way), Unavailable (too few
// replicas answered).
//
//wire:envelope 56
type ReconfigureReply struct {
	Req    uint64 `wire:"1"`
	Epoch  uint64 `wire:"3" trace:",omitzero"`
	Layout Layout `wire:"4" trace:"-"`
	Leader NodeID `wire:"5" trace:",omitzero"`
	Code   Code   `wire:"2" trace:"err,omitzero"`
}
