package cosla

import (
	"context"
	"io"
	"time"

	"github.com/cosla/cosla/internal/core/clientcore"
	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/runtime/hostclient"
	"github.com/cosla/cosla/sla"
)

// Metrics is a snapshot of a client: what its operations delivered and
// what its monitor knows of the replicas (Pileus 4.5). Client.Metrics
// returns it; WritePrometheus exports it.
type Metrics struct {
	// Puts counts the Puts the client carried out, PutErrors those that
	// failed (a missed write level included). A call refused before
	// anything was sent (a bad argument, an ended session, a closed
	// client) is not counted.
	Puts, PutErrors int64
	// Pending counts the sessions' bounded Puts (WithBound) answered
	// before the primary ordered them and not yet resolved to a
	// timestamp; Refused those the primary later refused.
	Pending, Refused int64
	// Gets counts the Gets the client carried out. Met counts them by the
	// subSLA they met, keyed by its text form ("read-my-writes 300ms 1");
	// Unmet counts those that met none, failed and timed-out Gets
	// included.
	Gets  int64
	Met   map[string]int64
	Unmet int64
	// SLAs holds, per SLA the Gets asked for (a session's, or WithSLA's),
	// in the order first asked, what they delivered since the client
	// started and over the last SLAWindow (Config.SLAWindow). Only the
	// first 64 SLAs are kept apart; Gets under more still count in Gets,
	// Met and Unmet.
	SLAs      []SLAStats
	SLAWindow time.Duration
	// RTT is the monitor's round-trip estimate per node, in node order.
	RTT []RTTEstimate
	// Replicas is the monitor's view of each replica of each open table,
	// by table, tablet and then primary first: its high timestamp and
	// estimated staleness.
	Replicas []ReplicaEstimate
	// Probes counts the monitor's probes sent (Pileus 4.5).
	Probes uint64
}

// RTTEstimate is the monitor's view of one node's round trip: the Mean of
// the Samples in its window (Config.RTTWindow).
type RTTEstimate struct {
	Node    string
	Mean    time.Duration
	Samples int
}

// ReplicaEstimate is the monitor's view of one replica, a tablet (Table,
// Tablet) on a node: the largest high timestamp the node has reported
// for it (HighTS, zero until it reports one), how far the client
// estimates the replica trailed the tablet's primary when it last
// reported (Staleness) and how long ago that was (Age).
//
// Staleness is zero for the primary, which is current by definition
// (Pileus 4.3). For a secondary it is the client's clock at the report
// (or, if larger, the largest high timestamp the client had seen of the
// tablet, so a primary whose clock leads the client's counts) less
// HighTS, and never negative: with clocks in step, as bounded staleness
// assumes (Pileus 4.4), the replica's replication lag plus the half
// round trip its answer took. The client hears from a replica with every
// Get it sends there, and probes one it has not heard from for
// Config.ProbeInterval (Pileus 4.5), so Age stays within about twice
// that (longer under AdaptiveProbing).
// Staleness + Age bounds how far the replica trails now: what the client
// goes by when it picks a replica for a bounded-staleness subSLA. The
// secondaries of a tablet that takes no Puts learn the primary's time at
// their pulls only (Pileus 4.3), so they look as stale as the time since
// their last pull.
type ReplicaEstimate struct {
	Node    string
	Table   string
	Tablet  int
	Primary bool
	HighTS  Timestamp
	// Staleness and Age: see above.
	Staleness, Age time.Duration
}

// SLAStats is what the Gets under one SLA delivered: Total since the
// client started, Window over the last Metrics.SLAWindow. The window moves
// a twelfth of its length at a time (5 s of the default minute), so it
// counts the Gets of between 11/12 of SLAWindow and all of it.
type SLAStats struct {
	SLA           sla.SLA
	Total, Window Outcomes
}

// Outcomes counts Gets under one SLA: Met[i] those that met subSLA i, the
// best they met (Pileus 4.6.2), and Unmet those that met none, failed and
// timed-out Gets included. Share(i) and MetShare() are the fractions of
// Gets that met subSLA i and that met any.
type Outcomes struct {
	Gets  int64
	Met   []int64
	Unmet int64
}

// Share returns the fraction of the Gets that met subSLA i (as their
// best), or 0 when there were none.
func (o Outcomes) Share(i int) float64 { return clientcore.Outcomes(o).Share(i) }

// MetShare returns the fraction of the Gets that met some subSLA, or 0
// when there were none.
func (o Outcomes) MetShare() float64 { return clientcore.Outcomes(o).MetShare() }

// Metrics returns a snapshot of the client's counters, SLA outcomes and
// replica estimates, as of now.
func (c *Client) Metrics() (Metrics, error) {
	m, err := call(context.Background(), c, func(core *clientcore.Client, ch chan<- clientcore.Metrics) {
		ch <- core.Metrics()
	})
	if err != nil {
		return Metrics{}, err
	}
	return metricsOf(m), nil
}

// metricsOf is the core's snapshot in this package's words, and core
// the other way: WritePrometheus is the client shell's exporter.
func metricsOf(m clientcore.Metrics) Metrics {
	out := Metrics{Puts: m.Puts, PutErrors: m.PutErrors, Pending: m.Pending, Refused: m.Refused, Gets: m.Gets, Met: m.Met, Unmet: m.Unmet,
		SLAWindow: m.SLAWindow, Probes: m.Probes}
	for _, s := range m.SLAs {
		out.SLAs = append(out.SLAs, SLAStats{SLA: s.SLA, Total: Outcomes(s.Total), Window: Outcomes(s.Window)})
	}
	for _, r := range m.RTT {
		out.RTT = append(out.RTT, RTTEstimate(r))
	}
	for _, r := range m.Replicas {
		out.Replicas = append(out.Replicas, ReplicaEstimate{Node: r.Node, Table: r.Table, Tablet: r.Tablet, Primary: r.Primary,
			HighTS: Timestamp(r.HighTS), Staleness: r.Staleness, Age: r.Age})
	}
	return out
}

func (m Metrics) core() clientcore.Metrics {
	out := clientcore.Metrics{Puts: m.Puts, PutErrors: m.PutErrors, Pending: m.Pending, Refused: m.Refused, Gets: m.Gets, Met: m.Met, Unmet: m.Unmet,
		SLAWindow: m.SLAWindow, Probes: m.Probes}
	for _, s := range m.SLAs {
		out.SLAs = append(out.SLAs, clientcore.SLAStats{SLA: s.SLA, Total: clientcore.Outcomes(s.Total), Window: clientcore.Outcomes(s.Window)})
	}
	for _, r := range m.RTT {
		out.RTT = append(out.RTT, clientcore.RTTEstimate(r))
	}
	for _, r := range m.Replicas {
		out.Replicas = append(out.Replicas, clientcore.ReplicaEstimate{Node: r.Node, Table: r.Table, Tablet: r.Tablet, Primary: r.Primary,
			HighTS: hlc.Timestamp(r.HighTS), Staleness: r.Staleness, Age: r.Age})
	}
	return out
}

// WritePrometheus writes the metrics in the Prometheus text exposition
// format. SLA outcomes, round-trip and staleness estimates are the
// client's to report: a storage node never sees the SLA of the Gets it
// serves. Replicas that have not answered yet are left out of the
// staleness and high timestamp gauges, and an SLA with no Gets in the
// window out of the ratios.
func (m Metrics) WritePrometheus(w io.Writer) { hostclient.WritePrometheus(w, m.core()) }
