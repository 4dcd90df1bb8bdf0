package cosla_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/cosla/cosla"
	"github.com/cosla/cosla/sla"
)

// TestMetricsPrometheus writes a hand-filled snapshot and checks the
// client's gauges of staleness, RTT and SLA shares: replicas not heard
// from and SLAs with no Get in the window are left out.
func TestMetricsPrometheus(t *testing.T) {
	cart, err := sla.Parse("read-my-writes 300ms 1; eventual 300ms 0.5")
	if err != nil {
		t.Fatal(err)
	}
	strong, _ := sla.Parse("strong 1s 1")
	high := cosla.Timestamp{WallNanos: int64(1000 * time.Second)}
	m := cosla.Metrics{
		Puts: 3, PutErrors: 1, Gets: 5, Unmet: 1, Met: map[string]int64{"read-my-writes 300ms 1": 3, "eventual 300ms 0.5": 1},
		SLAWindow: time.Minute,
		SLAs: []cosla.SLAStats{
			{SLA: cart, Total: cosla.Outcomes{Gets: 5, Met: []int64{3, 1}, Unmet: 1}, Window: cosla.Outcomes{Gets: 4, Met: []int64{2, 1}, Unmet: 1}},
			{SLA: strong, Total: cosla.Outcomes{Gets: 1, Met: []int64{1}}, Window: cosla.Outcomes{Met: []int64{0}}},
		},
		RTT: []cosla.RTTEstimate{{Node: "england/r1", Mean: 150 * time.Millisecond, Samples: 12}},
		Replicas: []cosla.ReplicaEstimate{
			{Node: "england/r1", Table: "t", Primary: true, HighTS: high},
			{Node: "us/r1", Table: "t", HighTS: high, Staleness: 2500 * time.Millisecond, Age: 4 * time.Second},
			{Node: "india/r1", Table: "t"},
		},
		Probes: 7,
	}
	var b strings.Builder
	m.WritePrometheus(&b)
	out := b.String()
	for _, want := range []string{
		`cosla_client_puts_total{outcome="ok"} 2`,
		`cosla_client_gets_total{sub_sla="none"} 1`,
		`cosla_client_sla_window_seconds 60`,
		`cosla_client_sla_window_gets{sla="read-my-writes 300ms 1; eventual 300ms 0.5"} 4`,
		`cosla_client_sla_window_gets{sla="strong 1s 1"} 0`,
		`cosla_client_sla_met_ratio{sla="read-my-writes 300ms 1; eventual 300ms 0.5",rank="1",sub_sla="read-my-writes 300ms 1"} 0.5`,
		`cosla_client_sla_met_ratio{sla="read-my-writes 300ms 1; eventual 300ms 0.5",rank="2",sub_sla="eventual 300ms 0.5"} 0.25`,
		`cosla_client_sla_unmet_ratio{sla="read-my-writes 300ms 1; eventual 300ms 0.5"} 0.25`,
		`cosla_client_rtt_seconds{node="england/r1"} 0.150000`,
		`cosla_client_rtt_samples{node="england/r1"} 12`,
		`cosla_client_replica_staleness_seconds{node="england/r1",table="t",tablet="0",primary="true"} 0.000000`,
		`cosla_client_replica_staleness_seconds{node="us/r1",table="t",tablet="0",primary="false"} 2.500000`,
		`cosla_client_replica_report_age_seconds{node="us/r1",table="t",tablet="0",primary="false"} 4.000000`,
		`cosla_client_replica_high_timestamp_seconds{node="us/r1",table="t",tablet="0",primary="false"} 1000.000000`,
		`cosla_client_probes_total 7`,
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("metrics lack %s", want)
		}
	}
	for _, absent := range []string{`node="india/r1"`, `cosla_client_sla_met_ratio{sla="strong 1s 1"`, `cosla_client_sla_unmet_ratio{sla="strong 1s 1"`} {
		if strings.Contains(out, absent) {
			t.Errorf("metrics hold %s", absent)
		}
	}
	if t.Failed() {
		t.Logf("metrics:\n%s", out)
	}
}

// TestMetricsStaleness reads from a two-site cluster: the monitor knows
// both replicas, the primary with no staleness, and every Get under the
// session's SLA counts in the window; a Get's result and its JSON carry
// the read's staleness.
func TestMetricsStaleness(t *testing.T) {
	n := testCluster(t, "england", "us")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, s := pushTable(ctx, t, n)
	if _, err := c.Put(ctx, s, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	_, res, err := c.Get(ctx, s, "k")
	if err != nil || !res.Primary || res.Staleness != 0 {
		t.Fatalf("strong Get: %+v, %v; want the primary's answer with no staleness", res, err)
	}
	// Read a random replica until the U.S. secondary answers with the
	// push applied: before, its high timestamp is zero and its staleness
	// unknown. (Both sites are on loopback: neither is the closer.)
	eventual := sla.SLA{{Consistency: sla.EventualConsistency, Latency: 10 * time.Second, Utility: 1}}
	const getsMax = 100_000
	gets := 1
	for ; res.HighTS.IsZero() || res.Primary; gets++ {
		if gets > getsMax {
			t.Fatalf("%d Gets and no answer from the U.S. secondary holding the Put; the last: %+v", getsMax, res)
		}
		if _, res, err = c.Get(ctx, s, "k", cosla.WithSLA(eventual), cosla.WithGetStrategy(cosla.Random)); err != nil {
			t.Fatal(err)
		}
	}
	js, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var decoded map[string]any
	if err := json.Unmarshal(js, &decoded); err != nil {
		t.Fatal(err)
	}
	if ns, ok := decoded["staleness_ns"].(float64); !ok || time.Duration(ns) != res.Staleness {
		t.Fatalf("JSON %s: staleness_ns %v, want %v", js, decoded["staleness_ns"], res.Staleness)
	}

	m, err := c.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Replicas) != 2 || m.Replicas[0].Node != "england/r1" || !m.Replicas[0].Primary || m.Replicas[0].Staleness != 0 ||
		m.Replicas[1].Node != "us/r1" || m.Replicas[1].HighTS.IsZero() {
		t.Fatalf("replicas %+v; want england/r1, the primary, with no staleness, then us/r1 heard from", m.Replicas)
	}
	if len(m.SLAs) != 2 || m.SLAs[0].Window.Gets != 1 || m.SLAs[0].Window.Share(0) != 1 ||
		m.SLAs[1].SLA.String() != eventual.String() || m.SLAs[1].Window.Gets != int64(gets-1) {
		t.Fatalf("SLAs %+v; want the session's with one Get that met it, then the eventual one with %d", m.SLAs, gets-1)
	}
	if m.Puts != 1 || m.Gets != int64(gets) || m.SLAWindow != time.Minute {
		t.Fatalf("Puts %d, Gets %d, SLAWindow %s; want 1, %d, 1m", m.Puts, m.Gets, m.SLAWindow, gets)
	}
}
