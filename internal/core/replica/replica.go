// Package replica is the storage node of Pileus (Terry et al. SOSP'13,
// sections 4.1-4.3) as a deterministic state machine.
//
// A Node holds replicas of tablets: ranges of a table's keys, or of their
// hashes (wire.Partition). For each tablet one node is the primary. The
// primary orders every Put with a hybrid logical clock timestamp, logs and
// applies it durably, and only then acknowledges it. Secondaries receive
// versions in timestamp order, by a periodic pull and optionally an
// immediate push, so each holds a prefix of the tablet's history described
// by one high timestamp (4.3). A Get returns the node's version of a key
// along with the version's timestamp, the node's high timestamp and whether
// it is the primary; the node knows nothing of consistency guarantees or
// SLAs, which are the client's business (4.1).
//
// A node given the configuration service's members (Options.Config) is
// governed (DESIGN.md section 10): a primary orders writes only under a
// lease the service grants (lease.go), every replication message carries
// the tablet's epoch (epoch.go), and the service moves a tablet's primary
// by telling its replicas a new epoch, above whose start a replica rolls
// back what it holds (rollback.go); staged writes keep their exactly-once
// record across the move (tagged.go). A node without members behaves as
// Pileus's, with no leases and every tablet at epoch 0.
//
// Node implements node.Handler; see package node for the runtime's duties.
package replica

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/cosla/cosla/internal/core/config"
	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/node"
	"github.com/cosla/cosla/internal/core/storage"
	"github.com/cosla/cosla/internal/core/wire"
)

// Options configures a Node. The zero value is usable: EnsureDefaults fills
// in every unset field.
type Options struct {
	// MaxKeyBytes is the largest key a Put may write. Default 4 KiB.
	MaxKeyBytes int
	// MaxValueBytes is the largest value a Put may write. Default 1 MiB.
	MaxValueBytes int
	// PullBatchMax is the most versions one pull reply carries, and
	// PullBatchBytes the most bytes of keys and values beyond its first
	// version; a secondary that is further behind pulls again at once.
	// Defaults 1000 and 4 MiB.
	PullBatchMax, PullBatchBytes int
	// RepairWait is the longest a secondary keeps a read repair
	// (wire.Repair) waiting for the pull that brings it up to the
	// repair's timestamp before it answers Behind; a pull takes one
	// round trip to the primary. Default 2s.
	RepairWait time.Duration
	// RepairsWaitingMax is the most read repairs waiting per tablet;
	// one more is answered Overloaded at once. Default 1024.
	RepairsWaitingMax int
	// Config lists the configuration service's members (DESIGN.md
	// section 10), sorted. Empty (the default): no service governs the
	// node; its tablets stay at epoch 0, it holds no leases and sends
	// none of the service's messages.
	Config []wire.NodeID
	// Lease sets the primaries' leases of a governed node; each field
	// defaults as config.LeaseOptions says.
	Lease config.LeaseOptions
	// Rollback, if set, is called with each version a rollback drops
	// (rollback.go), after the rollback is durable.
	Rollback func(RolledBack)
}

// MessageBytesMax is the size of the largest message a node with these
// options sends or takes: a pull reply of PullBatchBytes with a largest
// version beyond it, and room for the rest of the reply. The transport
// refuses anything larger. Call it on options with defaults.
func (o Options) MessageBytesMax() int {
	const overhead = 64 << 10 // timestamps, tags and the envelope's names
	return o.PullBatchBytes + o.MaxKeyBytes + o.MaxValueBytes + overhead
}

// EnsureDefaults returns a copy of o with unset fields given their defaults.
func (o Options) EnsureDefaults() Options {
	o.MaxKeyBytes = cmp.Or(o.MaxKeyBytes, 4<<10)
	o.MaxValueBytes = cmp.Or(o.MaxValueBytes, 1<<20)
	o.PullBatchMax = cmp.Or(o.PullBatchMax, 1000)
	o.PullBatchBytes = cmp.Or(o.PullBatchBytes, 4<<20)
	o.RepairWait = cmp.Or(o.RepairWait, 2*time.Second)
	o.RepairsWaitingMax = cmp.Or(o.RepairsWaitingMax, 1024)
	o.Lease = o.Lease.EnsureDefaults()
	return o
}

// Validate reports the first invalid field.
func (o Options) Validate() error {
	for _, f := range []struct {
		name     string
		negative bool
		value    any
	}{
		{"MaxKeyBytes", o.MaxKeyBytes < 0, o.MaxKeyBytes},
		{"MaxValueBytes", o.MaxValueBytes < 0, o.MaxValueBytes},
		{"PullBatchMax", o.PullBatchMax < 0, o.PullBatchMax},
		{"PullBatchBytes", o.PullBatchBytes < 0, o.PullBatchBytes},
		{"RepairWait", o.RepairWait < 0, o.RepairWait},
		{"RepairsWaitingMax", o.RepairsWaitingMax < 0, o.RepairsWaitingMax},
	} {
		if f.negative {
			return fmt.Errorf("replica: Options.%s must be positive, got %v", f.name, f.value)
		}
	}
	if !slices.IsSorted(o.Config) || len(slices.Compact(slices.Clone(o.Config))) != len(o.Config) {
		return fmt.Errorf("replica: Options.Config must be sorted and without repeats, got %v", o.Config)
	}
	if err := o.Lease.EnsureDefaults().Validate(); err != nil {
		return fmt.Errorf("replica: Options.Lease: %w", err)
	}
	return nil
}

// Metrics is a snapshot of a node's counters since it started, and of its
// tablets.
type Metrics struct {
	// Requests served.
	Puts, Gets, Probes, PullsServed int64
	// PutsRejected counts Puts answered with an error code.
	PutsRejected int64
	// Replication traffic: versions sent by a primary in pull replies and
	// pushes, and versions applied by a secondary.
	EntriesSent, EntriesApplied int64
	PushesSent, PushesIgnored   int64
	GapsDetected                int64 // pushes that arrived out of order
	PullRepliesDiscarded        int64 // stale or duplicate pull replies
	// Snapshots (wire.PullReply) a primary started and a secondary
	// completed, and their chunks sent and applied.
	SnapshotsSent, SnapshotsApplied           int64
	SnapshotChunksSent, SnapshotChunksApplied int64
	LogEntriesTruncated                       int64
	// Requests that named a table or tablet this node does not hold, or a
	// key outside the addressed tablet.
	RequestsForNoTable, RequestsForWrongTablet int64
	// Write levels (CPQ): Puts that waited for more than the primary,
	// those whose wait ran out, and the acknowledgements behind them.
	// DuplicatePuts counts Put requests received twice and applied once.
	LevelPuts, LevelTimeouts       int64
	DuplicatePuts                  int64
	PushAcksSent, PushAcksReceived int64
	// Read repairs (repair.go) answered OK, the replica holding their
	// timestamp, at once or after a pull; and refused: Behind (the
	// timestamp not reached within RepairWait), Overloaded, or for a
	// tablet the node does not hold.
	RepairsAcked, RepairsRefused int64
	// Staged writes and bounded reads (dConssandra): Puts and Gets with
	// a bound; staged writes forwarded, sent again after forwardResend,
	// and acknowledged, at a receiver; forwarded writes ordered,
	// delivered again, and dropped for arriving out of order, at a
	// primary, and gaps in a receiver's numbering taken as settled
	// (Forward.Acked, after a failover); bounded operations answered by
	// their deadline timer; reads answered with the paper's NULL;
	// planner decisions.
	StagedPuts, BoundedGets            int64
	ForwardsSent, ForwardResends       int64
	ForwardAcksReceived                int64
	ForwardsOrdered, DuplicateForwards int64
	ForwardsOutOfOrder, ForwardGaps    int64
	Deadlines, NullReads, Decisions    int64
	StorageErrors                      int64
	LastStorageError                   string
	// Configuration service (epoch.go, lease.go, rollback.go):
	// replication messages dropped for another epoch than the
	// tablet's; Puts and Forwards refused for want of a lease (or
	// under a fence); lease renewals sent and grants applied; epoch
	// changes adopted; fences lifted for a transition its leader
	// dropped; versions rolled back, and rollbacks that had to wipe the
	// tablet and catch up by snapshot.
	EpochsRefused, NoLease       int64
	LeaseRenewsSent, LeaseGrants int64
	EpochChanges, FencesLifted   int64
	RolledBack, RollbackWipes    int64
	Tablets                      []TabletStatus
	// Links are the smoothed round trips to the peers the node replicates
	// with, sorted by peer (see LinkStatus): a secondary's to its
	// primaries, a primary's to the secondaries that acknowledge pushes.
	Links []LinkStatus
	// Costs are the learned costs of the planned steps (dConssandra
	// 5-B), per primary and step, sorted.
	Costs []StepCost
}

// StepCost is a node's learned cost of one step toward one primary:
// Fixed + PerWrite*x for x writes, from Samples timings; the planner
// uses it once Warm (dcon.WarmSamples).
type StepCost struct {
	Primary         wire.NodeID
	Step            string
	Fixed, PerWrite time.Duration
	Samples         int
	Warm            bool
}

// TabletStatus describes one tablet replica.
type TabletStatus struct {
	Table   string
	Ref     wire.TabletRef
	Primary bool
	// High is the replica's high timestamp: it holds every version at or
	// below it. For a primary, the timestamp of its latest version.
	High hlc.Timestamp
	// LastUpdate is the timestamp of the latest version the replica holds.
	LastUpdate hlc.Timestamp
	// Epoch is the tablet's epoch at the replica (0: ungoverned).
	Epoch uint64
	// Leased reports, of a primary, that it may order Puts now: it is
	// ungoverned, or holds its lease and is not fenced.
	Leased bool
	// CatchingUp reports, of a secondary, that it lacks versions it held
	// (a rollback wiped it, or a snapshot replaces its data): it answers
	// no Get and no failover's HighRequest until it has caught up.
	CatchingUp bool
}

// Node is a storage node.
type Node struct {
	opts    Options
	env     node.Env
	clock   *hlc.Clock
	tables  map[string]*table
	byID    map[uint64]*table
	metrics Metrics
	// links holds the round trip to each replication peer (volatile,
	// rtt.go).
	links links
	// lastWait numbers the Puts waiting for their write level.
	lastWait uint64
	// recentPuts are the Puts received lately, to drop a duplicate.
	recentPuts recentPuts
	// plan is the dCON planner's state (stage.go).
	plan planner
	// lease is the renewal of this node's leases (lease.go).
	lease leaseState
	// getKey is where get builds the storage key it reads, so that a
	// Get allocates no key: an engine reads the key of its Get only
	// during the call (Mem, pebbledb and the simulator's wrapper do).
	getKey []byte
}

type table struct {
	layout  wire.Layout
	tablets map[int32]*tablet // only the tablets this node holds
}

type tablet struct {
	ref wire.TabletRef
	// The tablet holds the keys whose position under partition (the
	// key, or its hash) lies in [start, end); end "" means unbounded.
	partition   wire.Partition
	start, end  string
	primary     wire.NodeID
	secondaries []wire.NodeID
	isPrimary   bool
	mode        wire.ReplicationMode
	interval    time.Duration
	writeLevel  wire.Level

	// high is the high timestamp (Pileus 4.3). At a primary it is not
	// used: the primary holds everything up to its current time.
	high hlc.Timestamp
	// lastUpdate is the timestamp of the latest version held.
	lastUpdate hlc.Timestamp
	// recover is nonzero while the tablet lacks versions it once held
	// (durable): a rollback wiped it, or a snapshot replaces its data.
	// Until its high timestamp reaches recover it answers Gets Behind: a
	// write level may have counted it for a version it no longer holds
	// (TestRandomized seeds 641 and 696 read none such at level 1 of 4).
	recover hlc.Timestamp

	// Primary only. truncated is the log truncation point: versions at or
	// below it are no longer in the log. acked is each secondary's last
	// reported high timestamp (volatile: after a restart the primary keeps
	// its log until every secondary has pulled again).
	truncated hlc.Timestamp
	acked     map[wire.NodeID]hlc.Timestamp
	// Primary only, volatile: the high timestamp of the snapshot each
	// secondary is being sent, until it pulls from the log again.
	snapshots map[wire.NodeID]hlc.Timestamp
	// waits are the Puts waiting for their write level, in timestamp
	// order (volatile: a restarted primary has forgotten them, and their
	// clients time out).
	waits []*putWait

	// Secondary only: the periodic pull's timer is set (volatile).
	pullTimerSet bool
	// Secondary only: a pull is outstanding; ackPull: a Push that asked
	// for an acknowledgement revealed a gap, or a read repair waits, so
	// the pull that fills it is acknowledged with a PushAck.
	pulling, ackPull bool
	// Secondary only, volatile: the pull being timed (rtt.go), its Since
	// and when it was sent, and whether it was sent again unanswered.
	pullTimed, pullResent bool
	pullSince             hlc.Timestamp
	pullSent              time.Time
	// Primary only, volatile: the pushes with Ack set that each secondary
	// has not acknowledged yet, oldest first, timed (rtt.go).
	pushTimed map[wire.NodeID][]timedPush
	// ahead is the largest timestamp of a version a snapshot chunk
	// brought above the snapshot's high timestamp (durable). Versions at
	// or below it are applied only over an older version of their key.
	ahead hlc.Timestamp
	// Secondary only: the snapshot being received, or nil (volatile).
	snap *snapshotProgress
	// Secondary only, volatile: the read repairs waiting for a pull
	// (repair.go), in arrival order; repairTimer: a timer is set for the
	// first; pulledAt: when the last pull was sent.
	repairs     []*repairWait
	repairTimer bool
	pulledAt    time.Time

	// Receiver of staged writes (stage.go), any replica but the
	// primary: the writes not yet ordered, in sequence order (durable);
	// the last sequence number given; what the primary has acknowledged
	// (durable); whether the resend timer is set; the Puts and Gets
	// waiting (volatile). A primary numbers the staged writes it orders
	// itself on from stagedLast and advances forwarded over them: one
	// numbering across a failover (tagged.go).
	staged       []*stagedWrite
	stagedLast   uint64
	forwarded    origin
	forwardTimer bool
	boundedPuts  []*boundedPut
	boundedReads []*boundedRead
	// Primary only: what it has ordered of each receiver (durable,
	// cached here).
	origins map[wire.NodeID]origin
	// epoch numbers the tablet's primaries (durable, with epochStart,
	// the new primary's high timestamp when the epoch began): 0 for a
	// node no configuration service governs (DESIGN.md section 10).
	epoch      uint64
	epochStart hlc.Timestamp
	// fence is the epoch of the latest HighRequest (volatile; 0: none):
	// the replica takes no version of its epoch above fenceLimit, and a
	// primary no Put; fenceAsked is when it was asked (zero if a
	// client's epoch set the fence). highWaits are the HighRequests
	// waiting for their Until.
	fence      uint64
	fenceLimit hlc.Timestamp
	fenceAsked time.Time
	// term is the latest raft term of the configuration leaders the
	// replica heard from about the tablet, by HighRequest or EpochChange
	// (volatile, as fences are): a HighRequest of an earlier term comes
	// from a leader a later one has superseded, and would fence the
	// tablet for a transition that can no longer commit (TestRandomized
	// seed 632).
	term      uint64
	highWaits []highWait
	// Primary only, volatile: when the request of the renewal that
	// granted the lease was sent (zero: no lease).
	leaseAsked time.Time

	// Secondary only, volatile: known is the largest update timestamp
	// heard of (from pushes, also those not applied); applied counts the
	// versions applied; pullsSent numbers the pulls sent, pullsDone is
	// the number of the last one whose reply left nothing more to pull,
	// and pullAgain asks for one more pull after the outstanding one.
	known                hlc.Timestamp
	applied              int64
	pullsSent, pullsDone uint64
	pullAgain            bool
}

// pullTimer fires a secondary's periodic pull.
type pullTimer struct{ ref wire.TabletRef }

// New returns a node with the given options; Start validates them.
func New(opts Options) *Node {
	return &Node{opts: opts.EnsureDefaults()}
}

// Start validates the options, recovers the node's tables, versions and
// high timestamps from storage and schedules replication.
func (n *Node) Start(env node.Env) error {
	if err := n.opts.Validate(); err != nil {
		return err
	}
	n.env = env
	n.clock = hlc.NewClock(env.WallNanos)
	n.tables = map[string]*table{}
	n.byID = map[uint64]*table{}
	n.recentPuts = newRecentPuts()
	n.links = links{}
	n.plan = newPlanner(env.Now())
	eng := env.Engine()
	if v, ok, err := eng.Get(revealedKey); err != nil {
		return fmt.Errorf("replica: read revealed timestamp: %w", err)
	} else if ok {
		revealed, err := decodeTS(v)
		if err != nil {
			return err
		}
		n.clock.Update(revealed)
	}
	var layouts []wire.Layout
	ids := map[uint64]bool{}
	err := storage.Walk(eng, []byte{spaceCatalog}, []byte{spaceCatalog + 1}, func(k, v []byte) (bool, error) {
		l, err := decodeCatalogEntry(string(k[1:]), v)
		if err == nil && ids[l.ID] {
			err = fmt.Errorf("%w: catalog entry %q: table ID %d is taken", errCorrupt, l.Name, l.ID)
		}
		ids[l.ID] = true
		layouts = append(layouts, l)
		return true, err
	})
	if err != nil {
		return fmt.Errorf("replica: read catalog: %w", err)
	}
	for _, l := range layouts {
		t := n.addTable(l)
		// In index order: loading sets timers, whose order must not
		// depend on a map's.
		for _, i := range slices.Sorted(maps.Keys(t.tablets)) {
			tb := t.tablets[i]
			if err := n.loadTabletMeta(tb); err != nil {
				return err
			}
			// A primary too: its numbering goes on, and it orders the
			// writes it staged as a secondary before its promotion.
			if err := n.loadStaged(tb); err != nil {
				return err
			}
			n.clock.Update(tb.lastUpdate)
		}
	}
	if last := n.clock.Last(); last.WallNanos > math.MaxInt64-int64(maxClockLead) {
		// The clock could not go on from there (hlc.Clock.Now would
		// wrap): no real clock stamped it.
		return fmt.Errorf("%w: a stored timestamp, %s, is at the end of time", errCorrupt, last)
	}
	if n.governed() {
		// A restarted primary holds no lease: it asks at once.
		n.startLeases()
		n.lease.timer = true
		n.env.After(0, renewTimer{})
	}
	return nil
}

func (n *Node) loadTabletMeta(tb *tablet) error {
	eng := n.env.Engine()
	for _, m := range []struct {
		which byte
		dst   *hlc.Timestamp
	}{{metaHigh, &tb.high}, {metaLast, &tb.lastUpdate}, {metaTruncated, &tb.truncated}, {metaAhead, &tb.ahead}, {metaRecover, &tb.recover}} {
		v, ok, err := eng.Get(metaKey(tb.ref, m.which))
		if err != nil {
			return fmt.Errorf("replica: read tablet %s metadata: %w", tb.ref, err)
		}
		if ok {
			if *m.dst, err = decodeTS(v); err != nil {
				return err
			}
		}
	}
	v, ok, err := eng.Get(metaKey(tb.ref, metaEpoch))
	if err == nil && ok {
		tb.epoch, tb.epochStart, err = decodeEpoch(v)
	}
	if err != nil {
		return fmt.Errorf("replica: read tablet %s epoch: %w", tb.ref, err)
	}
	return nil
}

// addTable installs a layout in memory and schedules the pulls of the
// tablets this node holds as a secondary.
func (n *Node) addTable(l wire.Layout) *table {
	t := &table{layout: l, tablets: map[int32]*tablet{}}
	for i := range l.Tablets {
		if tb := n.newTablet(&l, i); tb != nil {
			t.tablets[int32(i)] = tb
		}
	}
	n.tables[l.Name] = t
	n.byID[l.ID] = t
	return t
}

// newTablet returns the replica of l's tablet i, or nil if this node
// holds none.
func (n *Node) newTablet(l *wire.Layout, i int) *tablet {
	tb := &tablet{
		ref:        wire.TabletRef{Table: l.ID, Tablet: int32(i)},
		partition:  l.Partition,
		start:      l.Tablets[i].Start,
		mode:       l.Replication.Mode,
		interval:   l.Replication.Interval,
		writeLevel: l.WriteLevel,
	}
	if n.governed() {
		tb.epoch = 1 // until an epoch change is stored
	}
	if i+1 < len(l.Tablets) {
		tb.end = l.Tablets[i+1].Start
	}
	if !slices.Contains(l.Tablets[i].Replicas(), n.env.ID()) {
		return nil
	}
	n.setRole(tb, l.Tablets[i])
	return tb
}

// setRole makes the tablet's replica primary or secondary as spec says,
// with the state of that role.
func (n *Node) setRole(tb *tablet, spec wire.Tablet) {
	tb.primary, tb.secondaries, tb.isPrimary = spec.Primary, spec.Secondaries, spec.Primary == n.env.ID()
	if !tb.isPrimary {
		tb.acked, tb.snapshots, tb.pushTimed, tb.origins = nil, nil, nil, nil
		if !tb.pullTimerSet {
			// A random phase keeps the secondaries of many tablets from
			// pulling in lockstep.
			tb.pullTimerSet = true
			n.env.After(time.Duration(n.env.Rand().Int64N(int64(tb.interval))), pullTimer{tb.ref})
		}
		return
	}
	if tb.acked == nil {
		tb.acked = map[wire.NodeID]hlc.Timestamp{}
		tb.snapshots = map[wire.NodeID]hlc.Timestamp{}
		tb.pushTimed = map[wire.NodeID][]timedPush{}
		tb.origins = map[wire.NodeID]origin{}
	}
}

// Metrics returns a snapshot of the node's counters and tablets.
func (n *Node) Metrics() Metrics {
	m := n.metrics
	m.Tablets = nil
	for _, t := range n.tables {
		for _, tb := range t.tablets {
			st := TabletStatus{Table: t.layout.Name, Ref: tb.ref, Primary: tb.isPrimary, High: tb.high, LastUpdate: tb.lastUpdate, Epoch: tb.epoch,
				Leased: tb.isPrimary && n.leased(tb), CatchingUp: !tb.recover.IsZero()}
			if tb.isPrimary {
				st.High = tb.lastUpdate
			}
			m.Tablets = append(m.Tablets, st)
		}
	}
	sortTabletStatus(m.Tablets)
	m.Links = n.links.status()
	m.Costs = n.plan.status()
	return m
}

// Receive handles one message.
func (n *Node) Receive(from wire.NodeID, m wire.Msg) {
	switch m := m.(type) {
	case *wire.CreateTableRequest:
		n.env.Send(from, &wire.CreateTableReply{Req: m.Req, Code: n.createTable(m.Layout)})
	case *wire.DeleteTableRequest:
		n.env.Send(from, &wire.DeleteTableReply{Req: m.Req, Code: n.deleteTable(m.Name)})
	case *wire.TableInfoRequest:
		reply := &wire.TableInfoReply{Req: m.Req, Code: wire.NoTable}
		if t, ok := n.tables[m.Name]; ok {
			reply.Code, reply.Layout = wire.OK, t.layout
		}
		n.env.Send(from, reply)
	case *wire.PutRequest:
		if reply := n.put(from, m); reply != nil {
			n.env.Send(from, reply)
		}
	case *wire.GetRequest:
		n.serveGet(from, m)
	case *wire.ProbeRequest:
		n.env.Send(from, n.probe(m))
	case *wire.PullRequest:
		if reply := n.servePull(from, m); reply != nil {
			n.env.Send(from, reply)
		}
	case *wire.PullReply:
		n.applyPull(from, m)
	case *wire.Push:
		n.applyPush(m)
	case *wire.PushAck:
		n.pushAcked(from, m)
	case *wire.Repair:
		n.repair(from, m)
	case *wire.Forward:
		n.forwarded(from, m)
	case *wire.ForwardAck:
		n.forwardAcked(from, m)
	case *wire.LeaseGrant:
		n.leaseGranted(from, m)
	case *wire.HighRequest:
		n.highRequested(from, m)
	case *wire.EpochChange:
		n.epochChanged(from, m)
	default:
		n.env.Logger().Warn("replica: unexpected message", "from", from, "type", fmt.Sprintf("%T", m))
	}
}

// Fire handles a timer.
func (n *Node) Fire(timer any) {
	switch t := timer.(type) {
	case pullTimer:
		tb := n.tablet(t.ref)
		if tb == nil || tb.isPrimary {
			if tb != nil {
				tb.pullTimerSet = false
			}
			return // the table was deleted, or the replica became primary
		}
		if !n.waitingForChunk(tb) {
			n.requestPull(tb)
		}
		n.env.After(tb.interval, t)
	case waitTimer:
		n.waitExpired(t)
	case deadlineTimer:
		n.deadlineFired(t)
	case forwardTimer:
		n.forwardTimerFired(t)
	case repairTimer:
		n.repairTimerFired(t)
	case renewTimer:
		n.renewTimerFired()
	case highTimer:
		if tb := n.tablet(t.ref); tb != nil {
			n.advanceHighWaits(tb, true)
		}
	default:
		n.env.Logger().Warn("replica: unexpected timer", "type", fmt.Sprintf("%T", timer))
	}
}

func (n *Node) tablet(ref wire.TabletRef) *tablet {
	t, ok := n.byID[ref.Table]
	if !ok {
		return nil
	}
	return t.tablets[ref.Tablet]
}

// reveal returns the primary's current time for a secondary to adopt as
// its high timestamp (Pileus 4.3). That promises that no later Put gets a
// smaller timestamp, so the time is made durable first: after a restart the
// clock starts above it even if the physical clock has gone back. Only
// secondaries rely on this promise; a Get or probe at the primary reports
// the clock unpersisted, because clients treat a primary as holding every
// version whatever its high timestamp says.
func (n *Node) reveal() (hlc.Timestamp, error) {
	ts := n.clock.Now()
	var b storage.Batch
	b.Set(revealedKey, appendTS(nil, ts))
	if err := n.env.Engine().Apply(&b, true); err != nil {
		n.storageError(err)
		return hlc.Timestamp{}, err
	}
	return ts, nil
}

func (n *Node) storageError(err error) {
	n.metrics.StorageErrors++
	n.metrics.LastStorageError = err.Error()
	n.env.Logger().Error("replica: storage failed", "err", err)
}

// Versions returns every version the node holds of a tablet, in key order,
// or nil if it holds no such tablet. It is meant for inspection by tools
// and tests; it reads the whole tablet.
func (n *Node) Versions(ref wire.TabletRef) []wire.Entry {
	if n.tablet(ref) == nil {
		return nil
	}
	var out []wire.Entry
	prefix := tabletPrefix(spaceData, ref)
	err := storage.Walk(n.env.Engine(), prefix, prefixEnd(prefix), func(k, v []byte) (bool, error) {
		ts, value, err := decodeVersion(v)
		if err != nil {
			return false, err
		}
		out = append(out, wire.Entry{TS: ts, Key: string(k[prefixLen:]), Value: append([]byte(nil), value...)})
		return true, nil
	})
	if err != nil {
		n.storageError(err)
	}
	return out
}
