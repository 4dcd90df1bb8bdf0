package clientcore

import (
	"maps"
	"slices"
	"time"

	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/sla"
)

// Metrics is a snapshot of a client: what its operations delivered and
// what its monitor knows of the replicas (Pileus 4.5). It is plain data
// (STYLE.md habit 8): the exporters, such as the public package's
// Prometheus writer, live at the edge. The public cosla.Metrics has the
// same fields, so that one converts to the other: change both together.
type Metrics struct {
	// Puts counts the Puts the client carried out, PutErrors those that
	// failed (a missed write level included). A Put refused at once (a
	// value too large, an ended session) is not counted.
	Puts, PutErrors int64
	// Pending counts the sessions' bounded Puts answered before the
	// primary ordered them and not yet resolved to a timestamp
	// (bounded.go); Refused those the primary later refused.
	Pending, Refused int64
	// Gets counts the Gets the client carried out. Met counts them by the
	// subSLA they met, keyed by its text form ("read-my-writes 300ms 1");
	// Unmet counts those that met none, failed and timed-out Gets
	// included. A Get refused at once is not counted.
	Gets  int64
	Met   map[string]int64
	Unmet int64
	// SLAs holds, per SLA the client's Gets asked for, in the order first
	// asked, what they delivered since the client started and over the
	// last SLAWindow. Only the first maxSLAStats SLAs are kept.
	SLAs      []SLAStats
	SLAWindow time.Duration
	// RTT is the monitor's round-trip estimate per node, in node order.
	RTT []RTTEstimate
	// Replicas is the monitor's view of each replica of each open table,
	// by table, tablet and then primary first.
	Replicas []ReplicaEstimate
	// Probes counts the monitor's probes sent (Pileus 4.5).
	Probes uint64
}

// Outcomes counts Gets under one SLA by the subSLA they met.
type Outcomes struct {
	Gets int64
	// Met[i] counts the Gets that met subSLA i: the best subSLA each met,
	// as the client judged it on the reply (Pileus 4.6.2). Unmet counts
	// the Gets that met none, failed and timed-out Gets included. So
	// Unmet and the Met counts add up to Gets.
	Met   []int64
	Unmet int64
}

// Share returns the fraction of the Gets that met subSLA i (as their
// best), or 0 when there were none.
func (o Outcomes) Share(i int) float64 {
	if o.Gets == 0 || i < 0 || i >= len(o.Met) {
		return 0
	}
	return float64(o.Met[i]) / float64(o.Gets)
}

// MetShare returns the fraction of the Gets that met some subSLA, or 0
// when there were none.
func (o Outcomes) MetShare() float64 {
	if o.Gets == 0 {
		return 0
	}
	return float64(o.Gets-o.Unmet) / float64(o.Gets)
}

func (o *Outcomes) add(met int) {
	o.Gets++
	if met < 0 || met >= len(o.Met) {
		o.Unmet++
		return
	}
	o.Met[met]++
}

func (o *Outcomes) merge(p *Outcomes) {
	o.Gets += p.Gets
	o.Unmet += p.Unmet
	for i := range p.Met {
		o.Met[i] += p.Met[i]
	}
}

func newOutcomes(subSLAs int) Outcomes { return Outcomes{Met: make([]int64, subSLAs)} }

// SLAStats is what the Gets under one SLA delivered: Total since the
// client started, Window over the last Options.SLAWindow (to within one
// bucket: see slaWindowBuckets).
type SLAStats struct {
	SLA           sla.SLA
	Total, Window Outcomes
}

// slaWindowBuckets is the number of buckets Options.SLAWindow is cut
// into. The window moves a bucket at a time, so Window counts the Gets of
// the last SLAWindow less the part of the oldest bucket that has passed:
// between 11/12 of SLAWindow and all of it. Our choice: a twelfth (5 s of
// the default minute) is finer than a Prometheus scrape interval, and
// twelve buckets per SLA cost little.
const slaWindowBuckets = 12

// maxSLAStats bounds the SLAs whose outcomes a client keeps apart ("put a
// limit on everything"). Gets under further SLAs still count in
// Metrics.Gets, Met and Unmet. Our choice: an application has a handful
// of SLAs; one that builds an SLA per request should not grow the client
// without bound.
const maxSLAStats = 64

// slaRecord is what the client keeps of one SLA's Gets.
type slaRecord struct {
	agreement sla.SLA
	// subKeys are the subSLAs' text forms, the keys of Metrics.Met, made
	// once rather than at every Get.
	subKeys []string
	total   Outcomes
	buckets [slaWindowBuckets]slaBucket
}

// slaBucket counts the Gets of one stretch of SLAWindow/slaWindowBuckets:
// the stretch number seq-1 since the client started (0: never used).
type slaBucket struct {
	seq      int64
	outcomes Outcomes
}

// counters are what a client counts of its operations for Metrics:
// Puts and Gets carried out, Gets by the subSLA met (its text form), and
// per SLA (slas, in the order first seen), the SLA window's buckets
// counted from started.
type counters struct {
	started                      time.Time
	window                       time.Duration
	puts, putErrors, gets, unmet int64
	met                          map[string]int64
	slas                         []*slaRecord
}

// newCounters returns counters that start at started, with a window of
// window (Options.SLAWindow).
func newCounters(started time.Time, window time.Duration) counters {
	return counters{started: started, window: window}
}

// bucketSeq numbers the window bucket that now falls in.
func (k *counters) bucketSeq(now time.Time) int64 {
	width := k.window / slaWindowBuckets
	return int64(now.Sub(k.started)/max(width, 1)) + 1
}

// put counts a Put that ended with err.
func (k *counters) put(err error) {
	k.puts++
	if err != nil {
		k.putErrors++
	}
}

// get counts a Get under agreement that met subSLA met (-1 for none),
// ended at now.
func (k *counters) get(agreement sla.SLA, met int, now time.Time) {
	r := k.slaRecord(agreement)
	k.gets++
	switch {
	case met < 0 || met >= len(agreement):
		k.unmet++
	case r != nil:
		k.count(r.subKeys[met])
	default:
		k.count(agreement[met].String())
	}
	if r == nil {
		return
	}
	r.total.add(met)
	seq := k.bucketSeq(now)
	b := &r.buckets[seq%slaWindowBuckets]
	if b.seq != seq {
		*b = slaBucket{seq: seq, outcomes: newOutcomes(len(agreement))}
	}
	b.outcomes.add(met)
}

func (k *counters) count(subSLA string) {
	if k.met == nil {
		k.met = map[string]int64{}
	}
	k.met[subSLA]++
}

// slaRecord returns the record of agreement, made on its first Get, or
// nil once maxSLAStats SLAs have records. An application has a handful
// of SLAs: a scan finds one faster than its text form is made.
func (k *counters) slaRecord(agreement sla.SLA) *slaRecord {
	for _, r := range k.slas {
		if slices.Equal(r.agreement, agreement) {
			return r
		}
	}
	if len(k.slas) >= maxSLAStats {
		return nil
	}
	r := &slaRecord{agreement: slices.Clone(agreement), total: newOutcomes(len(agreement))}
	for _, sub := range agreement {
		r.subKeys = append(r.subKeys, sub.String())
	}
	k.slas = append(k.slas, r)
	return r
}

// slaStats returns the SLAs' outcomes, the window's as of now.
func (k *counters) slaStats(now time.Time) []SLAStats {
	seq := k.bucketSeq(now)
	out := make([]SLAStats, 0, len(k.slas))
	for _, r := range k.slas {
		st := SLAStats{SLA: append(sla.SLA(nil), r.agreement...), Total: newOutcomes(len(r.agreement)), Window: newOutcomes(len(r.agreement))}
		st.Total.merge(&r.total)
		for i := range r.buckets {
			if b := &r.buckets[i]; b.seq > 0 && b.seq > seq-slaWindowBuckets && b.seq <= seq {
				st.Window.merge(&b.outcomes)
			}
		}
		out = append(out, st)
	}
	return out
}

// ReplicaEstimate is the monitor's view of one replica: one tablet on one
// node (Pileus 4.5).
type ReplicaEstimate struct {
	Node    string
	Table   string
	Tablet  int
	Primary bool
	// HighTS is the largest high timestamp the node has reported for the
	// tablet, zero until it has reported one (Pileus 4.3: the replica
	// holds every update of the tablet up to it).
	HighTS hlc.Timestamp
	// Staleness is how far the replica trailed the tablet's primary when
	// it last reported its high timestamp, as the client estimates it
	// (see staleness): zero for the primary, and zero while HighTS is.
	// Age is how long ago that report came. The replica trails the
	// primary now by at most Staleness + Age, given synchronized clocks:
	// that is what bounded-staleness selection goes by (Pileus 4.4-4.5).
	Staleness, Age time.Duration
}

// staleness estimates how far a replica of tv whose high timestamp is
// high trails the tablet's primary, at the client's clock nowWall: when
// the replica reports high, in a probe's or a Get's reply (Pileus 4.5).
//
// A primary is current by definition: it orders every Put, and the high
// timestamp it reports is its clock (Pileus 4.3), so its staleness is
// zero. For a secondary it is ref - high, where ref stands for the
// primary's high timestamp: the client's clock or, if larger, the
// largest high timestamp the client has seen from any replica of the
// tablet (each holds a prefix of the primary's updates, Pileus 4.3, so
// none is ahead of the primary; a primary whose clock leads the client's
// raises ref). It is never negative.
//
// With clocks in step, as bounded staleness assumes (Pileus 4.4), it is
// the replica's replication lag when it answered, plus the half round
// trip the answer took. A secondary learns the primary's time from its
// pulls when the tablet takes no Puts (Pileus 4.3), so the secondaries
// of an idle tablet look as stale as the time since their last pull.
func staleness(tv *tabletView, high hlc.Timestamp, primary bool, nowWall int64) time.Duration {
	if primary || high.IsZero() {
		return 0
	}
	ref := nowWall
	for _, r := range tv.replicas {
		ref = max(ref, r.high.WallNanos)
	}
	return time.Duration(max(ref-high.WallNanos, 0))
}

// Metrics returns a snapshot of the client's counters and of its
// monitor, with the SLA window and the replicas' ages as of the client's
// clock.
func (c *Client) Metrics() Metrics {
	now := c.env.Now()
	k := &c.counters
	m := Metrics{Puts: k.puts, PutErrors: k.putErrors, Pending: int64(len(c.staged)), Refused: c.refusedWrites, Gets: k.gets, Unmet: k.unmet,
		SLAs: k.slaStats(now), SLAWindow: k.window, RTT: c.RTTEstimates(), Probes: c.probesSent}
	m.Met = maps.Clone(k.met)
	for _, name := range slices.Sorted(maps.Keys(c.tables)) {
		t := c.tables[name]
		for i := range t.tablets {
			tv := &t.tablets[i]
			for _, r := range tv.replicas {
				e := ReplicaEstimate{Node: string(r.id), Table: name, Tablet: int(tv.ref.Tablet), Primary: r.primary, HighTS: r.high}
				if !r.heard.IsZero() {
					e.Staleness, e.Age = r.lag, now.Sub(r.heard)
				}
				m.Replicas = append(m.Replicas, e)
			}
		}
	}
	return m
}
