package server

import (
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cosla/cosla"
	"github.com/cosla/cosla/internal/core/causal"
	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/replica"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/sla"
)

// dashboardFile is the Grafana dashboard of the repository.
const dashboardFile = "../../../dashboards/cosla.json"

// TestDashboardMetrics checks that every metric the Grafana dashboard
// queries is one cosla exports: a storage node's /metrics
// (WritePrometheus, writeNodeFailed) or a client's
// (cosla.Metrics.WritePrometheus, which cosla bench --metrics-listen
// serves). A name in a query that is no cosla metric at all fails too.
func TestDashboardMetrics(t *testing.T) {
	data, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	queries, err := dashboardQueries(data)
	if err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	if len(queries) == 0 {
		t.Fatalf("%s holds no queries", dashboardFile)
	}
	exported := exportedMetrics(t)
	used := map[string]bool{}
	for _, q := range queries {
		names, err := queryMetrics(q.query)
		if err != nil {
			t.Errorf("%s: panel %q: %v", dashboardFile, q.panel, err)
		}
		for _, name := range names {
			used[name] = true
			if !exported[name] {
				t.Errorf("%s: panel %q queries %s, which cosla does not export (query %s)", dashboardFile, q.panel, name, q.query)
			}
		}
	}
	t.Logf("the dashboard queries %d metrics in %d queries", len(used), len(queries))

	t.Run("self-check", func(t *testing.T) {
		for _, tc := range []struct {
			query string
			names []string
			err   string // a substring of queryMetrics' error, or ""
		}{
			{query: `sum by (node) (rate(cosla_replica_puts_total{node=~"$node"}[$__rate_interval]))`, names: []string{"cosla_replica_puts_total"}},
			{query: `sum by (node) (rate(cosla_node_synced_events_total[5m])) / sum by (node) (rate(cosla_node_syncs_total[5m]))`,
				names: []string{"cosla_node_synced_events_total", "cosla_node_syncs_total"}},
			{query: `max(cosla_client_sla_met_ratio{sla="strong 1s 1; eventual unbounded 0.5",sub_sla!="none"}) * 1e3 > bool 0.5`,
				names: []string{"cosla_client_sla_met_ratio"}},
			{query: `label_values(cosla_replica_puts_total, node)`, names: []string{"cosla_replica_puts_total"}},
			{query: `rate(cosla_nonexistent_total[5m])`, names: []string{"cosla_nonexistent_total"}},
			{query: `rate(node_cpu_seconds_total[5m])`, err: "node_cpu_seconds_total is not a cosla metric"},
			{query: `up`, err: "up is not a cosla metric"},
			{query: `rate(cosla_replica_gets_total{node="a"[5m])`, err: "unbalanced"},
		} {
			names, err := queryMetrics(tc.query)
			switch {
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("queryMetrics(%s): error %v, want one saying %q", tc.query, err, tc.err)
			case tc.err == "" && (err != nil || !slices.Equal(names, tc.names)):
				t.Errorf("queryMetrics(%s) = %q, %v; want %q", tc.query, names, err, tc.names)
			}
		}
		if exported["cosla_nonexistent_total"] {
			t.Error("cosla_nonexistent_total counts as exported: the check would miss an unknown metric")
		}
		for _, name := range []string{"cosla_replica_puts_total", "cosla_node_failed", "cosla_client_replica_staleness_seconds", "cosla_client_sla_met_ratio"} {
			if !exported[name] {
				t.Errorf("%s is not among the exported metrics %v", name, exported)
			}
		}
	})
}

// exportedMetrics runs the writers of cosla's Prometheus metrics on
// snapshots that fill every series and returns the names their # TYPE
// lines declare, with the _bucket, _sum and _count series of histograms
// and summaries.
func exportedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	high := hlc.FromTime(int64(100 * time.Second))
	st := Status{Site: "england", Nodes: []NodeStatus{
		{ID: "england/r1", Metrics: replica.Metrics{Puts: 1, Gets: 1, Tablets: []replica.TabletStatus{{Table: "t", Ref: wire.TabletRef{Table: 1}, Primary: true, High: high}}}},
		{ID: "england/r2", Metrics: replica.Metrics{Gets: 1, Tablets: []replica.TabletStatus{{Table: "t", Ref: wire.TabletRef{Table: 1, Tablet: 1}, High: high}}}},
	}}
	var b strings.Builder
	WritePrometheus(&b, st, time.Unix(101, 0))
	writeNodeFailed(&b, []wire.NodeID{"england/r1", "england/r2"}, []nodeFailure{{id: "england/r2", err: errors.New("disk")}})

	agreement, err := sla.Parse("strong 1s 1; eventual unbounded 0.5")
	if err != nil {
		t.Fatal(err)
	}
	m := cosla.Metrics{Puts: 2, PutErrors: 1, Gets: 2, Unmet: 1, Met: map[string]int64{"strong 1s 1": 1}, SLAWindow: time.Minute,
		SLAs: []cosla.SLAStats{{SLA: agreement, Total: cosla.Outcomes{Gets: 2, Met: []int64{1, 0}, Unmet: 1}, Window: cosla.Outcomes{Gets: 2, Met: []int64{1, 0}, Unmet: 1}}},
		RTT:  []cosla.RTTEstimate{{Node: "england/r1", Mean: time.Millisecond, Samples: 1}},
		Replicas: []cosla.ReplicaEstimate{{Node: "england/r1", Table: "t", Primary: true, HighTS: cosla.Timestamp(high)},
			{Node: "england/r2", Table: "t", Tablet: 1, HighTS: cosla.Timestamp(high), Staleness: time.Second}},
		Probes: 1}
	m.WritePrometheus(&b)

	exported := map[string]bool{}
	for line := range strings.Lines(b.String()) {
		fields := strings.Fields(line)
		if len(fields) != 4 || fields[0] != "#" || fields[1] != "TYPE" {
			continue
		}
		exported[fields[2]] = true
		if fields[3] == "histogram" || fields[3] == "summary" {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				exported[fields[2]+suffix] = true
			}
		}
	}
	return exported
}

// dashboardQuery is a PromQL query of a dashboard: a panel's target, or
// a template variable's.
type dashboardQuery struct {
	panel, query string
}

// dashboardQueries returns the queries of a Grafana dashboard (JSON
// model): every target's expr, in panels and rows' panels, and the query
// of every templated variable of type query.
func dashboardQueries(data []byte) ([]dashboardQuery, error) {
	var d struct {
		Panels     []dashboardPanel `json:"panels"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, err
	}
	var out []dashboardQuery
	var walk func([]dashboardPanel) error
	walk = func(panels []dashboardPanel) error {
		for _, p := range panels {
			if p.Type != "row" && len(p.Targets) == 0 {
				return errors.New("panel " + p.Title + " has no query")
			}
			for _, tg := range p.Targets {
				if strings.TrimSpace(tg.Expr) == "" {
					return errors.New("panel " + p.Title + " has a target without expr")
				}
				out = append(out, dashboardQuery{p.Title, tg.Expr})
			}
			if err := walk(p.Panels); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(d.Panels); err != nil {
		return nil, err
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q, _ := v.Query.(string)
		if m, ok := v.Query.(map[string]any); ok {
			q, _ = m["query"].(string)
		}
		out = append(out, dashboardQuery{"variable " + v.Name, q})
	}
	return out, nil
}

type dashboardPanel struct {
	Type    string `json:"type"`
	Title   string `json:"title"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	Panels []dashboardPanel `json:"panels"`
}

var (
	// promString is a PromQL string literal.
	promString = regexp.MustCompile("\"(?:[^\"\\\\]|\\\\.)*\"|'(?:[^'\\\\]|\\\\.)*'|`[^`]*`")
	// promGrouping is a clause whose parentheses hold label names.
	promGrouping = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)`)
	// promLabelValues is Grafana's label_values(query, label).
	promLabelValues = regexp.MustCompile(`^\s*label_values\((.*),\s*[a-zA-Z_][a-zA-Z0-9_]*\s*\)\s*$`)
	// promIdentifier is a name, or the tail of a number or $variable
	// (queryMetrics looks at the character before it).
	promIdentifier = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	coslaMetric    = regexp.MustCompile(`^cosla_[a-z0-9_]+$`)
)

// promKeywords are the PromQL words that are not metric names when no
// parenthesis follows them.
var promKeywords = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true,
	"group_right": true, "bool": true, "and": true, "or": true, "unless": true, "offset": true, "Inf": true, "NaN": true, "inf": true, "nan": true}

// queryMetrics returns the metric names a PromQL query (or a Grafana
// label_values query) names, in order, each once. It parses loosely: it
// drops string literals, label matchers in braces, ranges in brackets,
// grouping clauses and function calls, and takes every other identifier
// for a metric name, failing on one that is not cosla_[a-z0-9_]+.
func queryMetrics(query string) ([]string, error) {
	if m := promLabelValues.FindStringSubmatch(query); m != nil {
		query = m[1]
	}
	q := promString.ReplaceAllString(query, `""`)
	for _, pair := range []string{"{}", "[]", "()"} {
		if strings.Count(q, pair[:1]) != strings.Count(q, pair[1:]) {
			return nil, errors.New("unbalanced " + pair + " in " + query)
		}
	}
	q = regexp.MustCompile(`\{[^{}]*\}`).ReplaceAllString(q, " ")
	q = regexp.MustCompile(`\[[^\[\]]*\]`).ReplaceAllString(q, " ")
	q = promGrouping.ReplaceAllString(q, " ")
	var names []string
	for _, loc := range promIdentifier.FindAllStringIndex(q, -1) {
		name := q[loc[0]:loc[1]]
		if loc[0] > 0 && strings.ContainsAny(q[loc[0]-1:loc[0]], "0123456789.$") {
			continue // 1e3, or $__rate_interval
		}
		call := strings.HasPrefix(strings.TrimLeft(q[loc[1]:], " \t\n"), "(")
		if call || promKeywords[name] || slices.Contains(names, name) {
			continue
		}
		if !coslaMetric.MatchString(name) {
			return names, errors.New(name + " is not a cosla metric")
		}
		names = append(names, name)
	}
	return names, nil
}

// TestStallMetrics checks that every hosted node has both stall gauges,
// in seconds.
func TestStallMetrics(t *testing.T) {
	var b strings.Builder
	writeStallMetrics(&b, []StallStatus{
		{ID: "us/cc", LongestSync: 1500 * time.Millisecond, LongestLateness: 20 * time.Millisecond},
		{ID: "us/r0", LongestSync: 3 * time.Millisecond},
	})
	out := b.String()
	for _, want := range []string{
		"# TYPE cosla_node_longest_sync_seconds gauge\n",
		`cosla_node_longest_sync_seconds{node="us/cc"} 1.500000` + "\n",
		`cosla_node_longest_sync_seconds{node="us/r0"} 0.003000` + "\n",
		"# TYPE cosla_node_longest_timer_lateness_seconds gauge\n",
		`cosla_node_longest_timer_lateness_seconds{node="us/cc"} 0.020000` + "\n",
		`cosla_node_longest_timer_lateness_seconds{node="us/r0"} 0.000000` + "\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
}

// TestCoordinatorMetrics checks the causal coordinators' series: one per
// running coordinator, none for a failed one.
func TestCoordinatorMetrics(t *testing.T) {
	var b strings.Builder
	writeCoordinatorMetrics(&b, []CoordinatorStatus{
		{ID: "us/cc", Metrics: causal.CoordinatorMetrics{Buffered: 2048, Waiting: 3, PutsWaited: 17}},
		{ID: "eu/cc", Failed: "disk"},
	})
	out := b.String()
	for _, want := range []string{
		"# TYPE cosla_causal_buffered_writes gauge\n", `cosla_causal_buffered_writes{node="us/cc"} 2048` + "\n",
		"# TYPE cosla_causal_waiting_puts gauge\n", `cosla_causal_waiting_puts{node="us/cc"} 3` + "\n",
		"# TYPE cosla_causal_puts_waited_total counter\n", `cosla_causal_puts_waited_total{node="us/cc"} 17` + "\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	if strings.Contains(out, "eu/cc") {
		t.Errorf("a failed coordinator has series:\n%s", out)
	}
}
