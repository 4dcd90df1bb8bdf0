package hostclient

import (
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/cosla/cosla/internal/core/clientcore"
)

// WritePrometheus writes a client core's metrics in the Prometheus text exposition
// format. SLA outcomes, round-trip and staleness estimates are the
// client's to report: a storage node never sees the SLA of the Gets it
// serves. Replicas that have not answered yet are left out of the
// staleness and high timestamp gauges, and an SLA with no Gets in the
// window out of the ratios.
func WritePrometheus(w io.Writer, m clientcore.Metrics) {
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
