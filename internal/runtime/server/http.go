package server

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/cosla/cosla/internal/core/causal"
	"github.com/cosla/cosla/internal/core/replica"
	"github.com/cosla/cosla/internal/core/wire"
)

func (s *Server) httpHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		failures, unleased := s.failures(), s.unleased()
		if len(failures) == 0 && len(unleased) == 0 {
			fmt.Fprintln(w, "ok")
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		for _, f := range failures {
			fmt.Fprintf(w, "%s failed: %v\n", f.id, f.err)
		}
		for _, u := range unleased {
			fmt.Fprintf(w, "%s: primary of %s/%d without a lease (the configuration service has not granted it yet, or is moving the tablet)\n",
				u.node, u.tablet.Table, u.tablet.Ref.Tablet)
		}
	})
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(s.Status())
	})
	mux.HandleFunc("GET /decisions", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(s.Decisions())
	})
	mux.HandleFunc("GET /{$}", s.servePage)
	mux.HandleFunc("GET /cluster", s.serveCluster)
	if s.opts.FaultInjection {
		mux.HandleFunc("POST /faults", s.serveFaults)
	}
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		WritePrometheus(w, s.Status(), time.Now())
		writeNodeFailed(w, s.nodeIDs(), s.failures())
	})
	return mux
}

// nodeFailure is a node that stopped because its storage failed.
type nodeFailure struct {
	id  wire.NodeID
	err error
}

// failures returns the nodes of the process that have stopped because
// their storage failed, in ID order, with the error: the node's (a sync
// that failed, host.Node.Err), or its engine's if the node has not
// noticed yet (pebbledb.Engine.Err). Such a node acknowledges nothing and
// serves nothing until the process restarts; its status and counters are
// missing from /status and /metrics, which ask the node.
func (s *Server) failures() []nodeFailure {
	var out []nodeFailure
	for _, id := range s.nodeIDs() {
		s.mu.RLock()
		h := s.nodes[id]
		s.mu.RUnlock()
		err := h.node.Err()
		if err == nil {
			err = h.engine.Err()
		}
		if err != nil {
			out = append(out, nodeFailure{id, err})
		}
	}
	return out
}

// unleasedPrimary is a tablet a node is the primary of that it may not
// yet take Puts for.
type unleasedPrimary struct {
	node   wire.NodeID
	tablet replica.TabletStatus
}

// unleased lists the tablets whose primary here holds no lease: /healthz
// is not ready while a primary cannot take Puts, so that `cluster up`
// and a restart wait for the first lease.
func (s *Server) unleased() []unleasedPrimary {
	var out []unleasedPrimary
	for _, n := range s.Status().Nodes {
		for _, t := range n.Metrics.Tablets {
			if t.Primary && !t.Leased {
				out = append(out, unleasedPrimary{n.ID, t})
			}
		}
	}
	return out
}

func (s *Server) nodeIDs() []wire.NodeID {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Sorted(maps.Keys(s.nodes))
}

// writeNodeFailed writes the gauge cosla_node_failed: 1 for each node in
// failed, 0 for the other nodes of ids.
func writeNodeFailed(w io.Writer, ids []wire.NodeID, failed []nodeFailure) {
	fmt.Fprintf(w, "# HELP cosla_node_failed Whether the node stopped because its storage failed (a sync, a WAL write, a flush, a compaction, a MANIFEST write); /healthz says why.\n# TYPE cosla_node_failed gauge\n")
	for _, id := range ids {
		v := 0
		if slices.ContainsFunc(failed, func(f nodeFailure) bool { return f.id == id }) {
			v = 1
		}
		fmt.Fprintf(w, "cosla_node_failed{node=%q} %d\n", id, v)
	}
}

// WritePrometheus writes a status snapshot in the Prometheus text
// exposition format. Replication lag is how far a secondary's high
// timestamp trails now: the staleness bound it can serve (Pileus 4.3).
func WritePrometheus(w io.Writer, st Status, now time.Time) {
	writeNodeCounters(w, st.Nodes)
	writeConfigMetrics(w, st.Config)
	writeCacheMetrics(w, st.Caches)
	writeCoordinatorMetrics(w, st.Coordinators)

	fmt.Fprintf(w, "# HELP cosla_tablet_high_timestamp_seconds The replica's high timestamp.\n# TYPE cosla_tablet_high_timestamp_seconds gauge\n")
	for _, n := range st.Nodes {
		for _, t := range n.Metrics.Tablets {
			fmt.Fprintf(w, "cosla_tablet_high_timestamp_seconds{node=%q,table=%q,tablet=\"%d\",primary=\"%t\"} %.6f\n",
				n.ID, t.Table, t.Ref.Tablet, t.Primary, float64(t.High.WallNanos)/1e9)
		}
	}
	fmt.Fprintf(w, "# HELP cosla_tablet_replication_lag_seconds How far a secondary's high timestamp trails now.\n# TYPE cosla_tablet_replication_lag_seconds gauge\n")
	for _, n := range st.Nodes {
		for _, t := range n.Metrics.Tablets {
			if t.Primary {
				continue
			}
			lag := float64(now.UnixNano()-t.High.WallNanos) / 1e9
			fmt.Fprintf(w, "cosla_tablet_replication_lag_seconds{node=%q,table=%q,tablet=\"%d\"} %.6f\n", n.ID, t.Table, t.Ref.Tablet, lag)
		}
	}
	fmt.Fprintf(w, "# HELP cosla_link_rtt_seconds The node's smoothed round trip to a replication peer (RFC 6298 SRTT over pulls and acknowledged pushes, the peer's fsync included).\n# TYPE cosla_link_rtt_seconds gauge\n")
	for _, n := range st.Nodes {
		for _, l := range n.Metrics.Links {
			fmt.Fprintf(w, "cosla_link_rtt_seconds{node=%q,peer=%q} %.6f\n", n.ID, l.Peer, l.RTT.Seconds())
		}
	}
	fmt.Fprintf(w, "# HELP cosla_link_rtt_samples_total Round trips to a replication peer that the node measured.\n# TYPE cosla_link_rtt_samples_total counter\n")
	for _, n := range st.Nodes {
		for _, l := range n.Metrics.Links {
			fmt.Fprintf(w, "cosla_link_rtt_samples_total{node=%q,peer=%q} %d\n", n.ID, l.Peer, l.Samples)
		}
	}
	fmt.Fprintf(w, "# HELP cosla_step_cost_seconds A node's learned cost of a planned step toward a primary (dConssandra 5-B): fixed + per_write * writes.\n# TYPE cosla_step_cost_seconds gauge\n")
	for _, n := range st.Nodes {
		for _, c := range n.Metrics.Costs {
			fmt.Fprintf(w, "cosla_step_cost_seconds{node=%q,primary=%q,step=%q,part=\"fixed\"} %.6f\n", n.ID, c.Primary, c.Step, c.Fixed.Seconds())
			fmt.Fprintf(w, "cosla_step_cost_seconds{node=%q,primary=%q,step=%q,part=\"per_write\"} %.9f\n", n.ID, c.Primary, c.Step, c.PerWrite.Seconds())
		}
	}
	writeStallMetrics(w, st.Stalls)
	tr := st.Transport
	fmt.Fprintf(w, "# HELP cosla_transport_messages_total Messages by outcome.\n# TYPE cosla_transport_messages_total counter\n")
	for _, c := range []struct {
		what string
		n    int64
	}{{"sent", tr.Sent}, {"received", tr.Received}, {"dropped", tr.Dropped}, {"unroutable", tr.Unroutable}, {"malformed", tr.Malformed}, {"too_large", tr.TooLarge}} {
		fmt.Fprintf(w, "cosla_transport_messages_total{outcome=%q} %d\n", c.what, c.n)
	}
	fmt.Fprintf(w, "# HELP cosla_transport_refused_total Streams ended for a message the sender's certificate does not allow.\n# TYPE cosla_transport_refused_total counter\ncosla_transport_refused_total %d\n", tr.Refused)
	fmt.Fprintf(w, "# HELP cosla_overloaded_total Client requests answered overloaded at a full mailbox.\n# TYPE cosla_overloaded_total counter\ncosla_overloaded_total %d\n", st.Overloaded)
}

// writeConfigMetrics writes the site's configuration member's gauges and
// counters, if the site has one: what the service costs in steady state
// (raft messages, fsyncs) and what it did (leases, failovers,
// switchovers).
// writeNodeCounters writes the storage nodes' counters.
func writeNodeCounters(w io.Writer, nodes []NodeStatus) {
	counter := func(name, help string, value func(NodeStatus) int64) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s counter\n", name, help, name)
		for _, n := range nodes {
			// A failed node's counters are unknown, not zero: a series
			// that fell to zero would read as a reset.
			if n.Failed == "" {
				fmt.Fprintf(w, "%s{node=%q} %d\n", name, n.ID, value(n))
			}
		}
	}
	counter("cosla_replica_puts_total", "Puts received.", func(n NodeStatus) int64 { return n.Metrics.Puts })
	counter("cosla_replica_puts_rejected_total", "Puts answered with an error.", func(n NodeStatus) int64 { return n.Metrics.PutsRejected })
	counter("cosla_replica_gets_total", "Gets served.", func(n NodeStatus) int64 { return n.Metrics.Gets })
	counter("cosla_replica_probes_total", "Probes served.", func(n NodeStatus) int64 { return n.Metrics.Probes })
	counter("cosla_replica_pulls_served_total", "Pulls served as a primary.", func(n NodeStatus) int64 { return n.Metrics.PullsServed })
	counter("cosla_replica_entries_sent_total", "Versions sent to secondaries.", func(n NodeStatus) int64 { return n.Metrics.EntriesSent })
	counter("cosla_replica_entries_applied_total", "Versions applied as a secondary.", func(n NodeStatus) int64 { return n.Metrics.EntriesApplied })
	counter("cosla_replica_level_puts_total", "Puts that waited for a write level above one.", func(n NodeStatus) int64 { return n.Metrics.LevelPuts })
	counter("cosla_replica_level_timeouts_total", "Puts whose write level was not reached in time.", func(n NodeStatus) int64 { return n.Metrics.LevelTimeouts })
	counter("cosla_replica_duplicate_puts_total", "Put requests received twice and applied once.", func(n NodeStatus) int64 { return n.Metrics.DuplicatePuts })
	counter("cosla_replica_repairs_acked_total", "Read repairs answered holding their timestamp.", func(n NodeStatus) int64 { return n.Metrics.RepairsAcked })
	counter("cosla_replica_repairs_refused_total", "Read repairs refused: the timestamp not reached in time, or overloaded.", func(n NodeStatus) int64 { return n.Metrics.RepairsRefused })
	counter("cosla_replica_snapshot_chunks_sent_total", "Snapshot chunks sent as a primary to secondaries that lost their storage.", func(n NodeStatus) int64 { return n.Metrics.SnapshotChunksSent })
	counter("cosla_replica_snapshot_chunks_applied_total", "Snapshot chunks applied as a secondary.", func(n NodeStatus) int64 { return n.Metrics.SnapshotChunksApplied })
	counter("cosla_replica_staged_puts_total", "Puts with a bound (dConssandra) taken as the receiver.", func(n NodeStatus) int64 { return n.Metrics.StagedPuts })
	counter("cosla_replica_bounded_gets_total", "Gets with a bound served.", func(n NodeStatus) int64 { return n.Metrics.BoundedGets })
	counter("cosla_replica_deadlines_total", "Bounded operations answered by their deadline timer.", func(n NodeStatus) int64 { return n.Metrics.Deadlines })
	counter("cosla_replica_null_reads_total", "Bounded Gets answered NULL: writes of the key pending, none could be applied in time.", func(n NodeStatus) int64 { return n.Metrics.NullReads })
	counter("cosla_replica_forward_resends_total", "Times a receiver sent its unacknowledged staged writes again.", func(n NodeStatus) int64 { return n.Metrics.ForwardResends })
	counter("cosla_replica_storage_errors_total", "Storage reads or writes that failed.", func(n NodeStatus) int64 { return n.Metrics.StorageErrors })
	counter("cosla_node_syncs_total", "Syncs of the node's storage that committed a group of events.", func(n NodeStatus) int64 { return n.Commit.Syncs })
	counter("cosla_node_synced_events_total", "Events with durable writes that those syncs covered.", func(n NodeStatus) int64 { return n.Commit.Events })
	counter("cosla_replica_mailbox_dropped_total", "Messages dropped at a full mailbox.", func(n NodeStatus) int64 { return n.Dropped })
	counter("cosla_replica_rolled_back_total", "Versions rolled back at a failover (written to the rollback files).", func(n NodeStatus) int64 { return n.Metrics.RolledBack })
	counter("cosla_replica_rollback_wipes_total", "Rollbacks that emptied a tablet to catch up by snapshot, its log not telling the versions before.", func(n NodeStatus) int64 { return n.Metrics.RollbackWipes })
	counter("cosla_replica_epochs_refused_total", "Replication messages refused for another epoch of their tablet.", func(n NodeStatus) int64 { return n.Metrics.EpochsRefused })
	counter("cosla_replica_no_lease_total", "Writes refused because the primary held no lease.", func(n NodeStatus) int64 { return n.Metrics.NoLease })
}

// writeStallMetrics writes how long each hosted node has been held up at
// worst (StallStatus).
func writeStallMetrics(w io.Writer, stalls []StallStatus) {
	fmt.Fprintf(w, "# HELP cosla_node_longest_sync_seconds The longest sync of the node's storage so far; the node's messages wait for it.\n# TYPE cosla_node_longest_sync_seconds gauge\n")
	for _, n := range stalls {
		fmt.Fprintf(w, "cosla_node_longest_sync_seconds{node=%q} %.6f\n", n.ID, n.LongestSync.Seconds())
	}
	fmt.Fprintf(w, "# HELP cosla_node_longest_timer_lateness_seconds The longest a timer of the node's waited past when it was due, behind the node's other events.\n# TYPE cosla_node_longest_timer_lateness_seconds gauge\n")
	for _, n := range stalls {
		fmt.Fprintf(w, "cosla_node_longest_timer_lateness_seconds{node=%q} %.6f\n", n.ID, n.LongestLateness.Seconds())
	}
}

// writeCacheMetrics writes the counters of the site's causal caches.
func writeCacheMetrics(w io.Writer, caches []CacheStatus) {
	for _, k := range []struct {
		name, help string
		v          func(causal.CacheMetrics) uint64
	}{
		{"hits", "Causal reads served from a cache entry.", func(m causal.CacheMetrics) uint64 { return m.Hits }},
		{"misses", "Causal reads a cache filled from a ring.", func(m causal.CacheMetrics) uint64 { return m.Misses }},
		{"abandoned_reads", "Causal reads dropped unserved, their sender having stopped waiting.", func(m causal.CacheMetrics) uint64 { return m.AbandonedReads }},
	} {
		name := "cosla_cache_" + k.name + "_total"
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s counter\n", name, k.help, name)
		for _, c := range caches {
			if c.Failed == "" {
				fmt.Fprintf(w, "%s{node=%q} %d\n", name, c.ID, k.v(c.Metrics))
			}
		}
	}
}

// writeCoordinatorMetrics writes what the site's causal coordinators
// hold and counted.
func writeCoordinatorMetrics(w io.Writer, coords []CoordinatorStatus) {
	for _, k := range []struct {
		name, kind, help string
		v                func(causal.CoordinatorMetrics) uint64
	}{
		{"cosla_causal_buffered_writes", "gauge", "Writes in the coordinator's write buffers that some ring does not yet hold.", func(m causal.CoordinatorMetrics) uint64 { return m.Buffered }},
		{"cosla_causal_waiting_puts", "gauge", "Puts waiting for room in the coordinator's write buffers (max_buffered).", func(m causal.CoordinatorMetrics) uint64 { return m.Waiting }},
		{"cosla_causal_puts_waited_total", "counter", "Puts that waited for room in the coordinator's write buffers.", func(m causal.CoordinatorMetrics) uint64 { return m.PutsWaited }},
	} {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", k.name, k.help, k.name, k.kind)
		for _, c := range coords {
			if c.Failed == "" {
				fmt.Fprintf(w, "%s{node=%q} %d\n", k.name, c.ID, k.v(c.Metrics))
			}
		}
	}
}

func writeConfigMetrics(w io.Writer, c *ConfigStatus) {
	if c == nil || c.Failed != "" {
		return
	}
	leading := 0
	if c.Status.Leading {
		leading = 1
	}
	fmt.Fprintf(w, "# HELP cosla_config_leader Whether the member leads the configuration service.\n# TYPE cosla_config_leader gauge\ncosla_config_leader{node=%q} %d\n", c.ID, leading)
	fmt.Fprintf(w, "# HELP cosla_config_term The configuration service's raft term at the member.\n# TYPE cosla_config_term gauge\ncosla_config_term{node=%q} %d\n", c.ID, c.Status.Term)
	m := c.Metrics
	for _, k := range []struct {
		name, help string
		v          int64
	}{
		{"raft_messages_sent", "Raft messages the member sent.", m.RaftSent},
		{"raft_messages_received", "Raft messages the member received.", m.RaftReceived},
		{"fsyncs", "Synced writes of the member's raft log.", m.Fsyncs},
		{"leases_granted", "Lease renewals granted while leading.", m.RenewalsGranted},
		{"failovers", "Failovers completed while leading: a lapsed primary's tablet moved to the longest prefix.", m.FailoversCompleted},
		{"switchovers", "Planned switchovers completed while leading.", m.SwitchoversCompleted},
		{"utility_reports", "Clients' utility reports received (Pileus 6.2).", m.UtilityReports},
	} {
		name := "cosla_config_" + k.name + "_total"
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s counter\n%s{node=%q} %d\n", name, k.help, name, name, c.ID, k.v)
	}
}
