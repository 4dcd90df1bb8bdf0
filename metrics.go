package cosla

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/cosla/cosla/internal/core/clientcore"
)

// Metrics is a snapshot of a client: what its operations delivered and
// what its monitor knows of the replicas (Pileus 4.5). Client.Metrics
// returns it; WritePrometheus exports it.
//
// Its fields are those of the client core's snapshot (internal
// clientcore.Metrics), in order, so that one converts to the other: the
// client of cosla bench exports its metrics through this type too.
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
type RTTEstimate = clientcore.RTTEstimate

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
type ReplicaEstimate = clientcore.ReplicaEstimate

// SLAStats is what the Gets under one SLA delivered: Total since the
// client started, Window over the last Metrics.SLAWindow. The window moves
// a twelfth of its length at a time (5 s of the default minute), so it
// counts the Gets of between 11/12 of SLAWindow and all of it.
type SLAStats = clientcore.SLAStats

// Outcomes counts Gets under one SLA: Met[i] those that met subSLA i, the
// best they met (Pileus 4.6.2), and Unmet those that met none, failed and
// timed-out Gets included. Share(i) and MetShare() are the fractions of
// Gets that met subSLA i and that met any.
type Outcomes = clientcore.Outcomes

// Metrics returns a snapshot of the client's counters, SLA outcomes and
// replica estimates, as of now.
func (c *Client) Metrics() (Metrics, error) {
	m, err := call(context.Background(), c, func(core *clientcore.Client, ch chan<- clientcore.Metrics) {
		ch <- core.Metrics()
	})
	if err != nil {
		return Metrics{}, err
	}
	return Metrics(m), nil
}

// WritePrometheus writes the metrics in the Prometheus text exposition
// format. SLA outcomes, round-trip and staleness estimates are the
// client's to report: a storage node never sees the SLA of the Gets it
// serves. Replicas that have not answered yet are left out of the
// staleness and high timestamp gauges, and an SLA with no Gets in the
// window out of the ratios.
func (m Metrics) WritePrometheus(w io.Writer) {
	fmt.Fprintf(w, "# HELP cosla_client_puts_total Puts issued, and those that failed.\n# TYPE cosla_client_puts_total counter\n")
	fmt.Fprintf(w, "cosla_client_puts_total{outcome=\"ok\"} %d\ncosla_client_puts_total{outcome=\"error\"} %d\n", m.Puts-m.PutErrors, m.PutErrors)
	fmt.Fprintf(w, "# HELP cosla_client_pending_writes Bounded Puts answered before their primary ordered them, not yet given a timestamp.\n# TYPE cosla_client_pending_writes gauge\ncosla_client_pending_writes %d\n", m.Pending)
	fmt.Fprintf(w, "# HELP cosla_client_refused_writes_total Bounded Puts answered before their primary ordered them, which it then refused.\n# TYPE cosla_client_refused_writes_total counter\ncosla_client_refused_writes_total %d\n", m.Refused)
	fmt.Fprintf(w, "# HELP cosla_client_gets_total Gets by the subSLA they met.\n# TYPE cosla_client_gets_total counter\n")
	for _, sub := range slices.Sorted(maps.Keys(m.Met)) {
		fmt.Fprintf(w, "cosla_client_gets_total{sub_sla=%q} %d\n", sub, m.Met[sub])
	}
	fmt.Fprintf(w, "cosla_client_gets_total{sub_sla=\"none\"} %d\n", m.Unmet)

	fmt.Fprintf(w, "# HELP cosla_client_sla_window_seconds How far back the SLA ratios reach.\n# TYPE cosla_client_sla_window_seconds gauge\ncosla_client_sla_window_seconds %g\n", m.SLAWindow.Seconds())
	fmt.Fprintf(w, "# HELP cosla_client_sla_window_gets Gets under the SLA in the window.\n# TYPE cosla_client_sla_window_gets gauge\n")
	for _, s := range m.SLAs {
		fmt.Fprintf(w, "cosla_client_sla_window_gets{sla=%q} %d\n", s.SLA.String(), s.Window.Gets)
	}
	fmt.Fprintf(w, "# HELP cosla_client_sla_met_ratio Share of the window's Gets under the SLA that met the subSLA (as the best they met).\n# TYPE cosla_client_sla_met_ratio gauge\n")
	for _, s := range m.SLAs {
		if s.Window.Gets == 0 {
			continue
		}
		for i, sub := range s.SLA {
			fmt.Fprintf(w, "cosla_client_sla_met_ratio{sla=%q,rank=\"%d\",sub_sla=%q} %g\n", s.SLA.String(), i+1, sub.String(), s.Window.Share(i))
		}
	}
	fmt.Fprintf(w, "# HELP cosla_client_sla_unmet_ratio Share of the window's Gets under the SLA that met no subSLA.\n# TYPE cosla_client_sla_unmet_ratio gauge\n")
	for _, s := range m.SLAs {
		if s.Window.Gets > 0 {
			fmt.Fprintf(w, "cosla_client_sla_unmet_ratio{sla=%q} %g\n", s.SLA.String(), 1-s.Window.MetShare())
		}
	}

	fmt.Fprintf(w, "# HELP cosla_client_rtt_seconds The monitor's mean round trip per node (Pileus 4.5).\n# TYPE cosla_client_rtt_seconds gauge\n")
	for _, r := range m.RTT {
		fmt.Fprintf(w, "cosla_client_rtt_seconds{node=%q} %.6f\n", r.Node, r.Mean.Seconds())
	}
	fmt.Fprintf(w, "# HELP cosla_client_rtt_samples Round trips in the monitor's window per node.\n# TYPE cosla_client_rtt_samples gauge\n")
	for _, r := range m.RTT {
		fmt.Fprintf(w, "cosla_client_rtt_samples{node=%q} %d\n", r.Node, r.Samples)
	}
	fmt.Fprintf(w, "# HELP cosla_client_replica_staleness_seconds How far the client estimates the replica trailed its tablet's primary when it last reported its high timestamp (Pileus 4.3-4.5).\n# TYPE cosla_client_replica_staleness_seconds gauge\n")
	for _, r := range m.Replicas {
		if !r.HighTS.IsZero() {
			fmt.Fprintf(w, "cosla_client_replica_staleness_seconds{node=%q,table=%q,tablet=\"%d\",primary=\"%t\"} %.6f\n", r.Node, r.Table, r.Tablet, r.Primary, r.Staleness.Seconds())
		}
	}
	fmt.Fprintf(w, "# HELP cosla_client_replica_report_age_seconds How long ago the replica last reported its high timestamp to the client; staleness plus age bounds its staleness now.\n# TYPE cosla_client_replica_report_age_seconds gauge\n")
	for _, r := range m.Replicas {
		if !r.HighTS.IsZero() {
			fmt.Fprintf(w, "cosla_client_replica_report_age_seconds{node=%q,table=%q,tablet=\"%d\",primary=\"%t\"} %.6f\n", r.Node, r.Table, r.Tablet, r.Primary, r.Age.Seconds())
		}
	}
	fmt.Fprintf(w, "# HELP cosla_client_replica_high_timestamp_seconds The largest high timestamp the replica has reported to the client.\n# TYPE cosla_client_replica_high_timestamp_seconds gauge\n")
	for _, r := range m.Replicas {
		if !r.HighTS.IsZero() {
			fmt.Fprintf(w, "cosla_client_replica_high_timestamp_seconds{node=%q,table=%q,tablet=\"%d\",primary=\"%t\"} %.6f\n", r.Node, r.Table, r.Tablet, r.Primary, float64(r.HighTS.WallNanos)/1e9)
		}
	}
	fmt.Fprintf(w, "# HELP cosla_client_probes_total Probes the monitor sent (Pileus 4.5).\n# TYPE cosla_client_probes_total counter\ncosla_client_probes_total %d\n", m.Probes)
}
