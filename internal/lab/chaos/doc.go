// Package chaos runs fault campaigns on a local cluster of real processes
// (`cosla chaos`; issue 13, items 5 and 6): clients at every site issue
// durable Puts and Gets under session guarantees while the campaign
// SIGKILLs and restarts the sites' cosla serve processes (the primary's
// and the secondaries'), cuts a site off the emulated WAN and heals it,
// and stops a process with SIGSTOP for a few seconds. Afterwards it
// checks what survived:
//
//   - every acknowledged Put is at the primary: a strong read there of
//     every key written returns a version no older than any
//     acknowledged Put to it. Most Puts write a fresh key each (the
//     writers), so that this accounts for every one of them, not only
//     for the last Put to a key. A Put a replica rolled back at a
//     failover (in its site's rollback files) is counted apart: the
//     failover checks below judge it;
//   - the replicas converge: once the faults are over, every secondary
//     serves the primary's version of every key, within a bound;
//   - the recorded history, the final reads included, breaks no rule of
//     package check: no Get was reported as meeting a guarantee it did
//     not meet, through kills, partitions and pauses;
//   - each client's unavailability windows, the stretches in which every
//     operation it finished failed, with the faults under way then.
//
// The workload runs on the one driver (package driver) over the same
// client cores as every other run mode: per site two clients with one of
// six SLAs each (the six guarantees, as in TestGuaranteesOverNetwork),
// sharing a few keys, and one client of writers of fresh keys.
//
// Faults come one at a time, cycling through the kinds asked for: the
// first kill, partition or pause strikes the primary's site, the second a
// secondary's, later ones the primary's with probability 1/2. Each lasts
// a drawn hold (a killed process stays down for up to that long) and is
// healed before the next, a drawn gap later. The campaign ends once it
// has made every kind at least twice (Karma's once), the kills and
// failovers asked for, and seen the acknowledged Puts asked for, or at
// its time bound, which is a failure.
//
// Failover faults (Failover; issue 27, item 7) strike the site of the
// table's current primary, read from the cluster's status before each
// one (the primary moves with every failover): by turns a kill, a
// partition and a pause, each held at least Options.FailoverHold (longer
// than a raft election, a lease and Collect) and until another node holds
// the primary's lease, then healed; the next waits until every tablet has
// one leased primary again. A failover campaign's workload adds, at every
// site, writers at write level QUORUM and strong readers of the keys they
// write (the other writers write at ONE). After the checks above, done at
// the primary the status names at the end, it reads the sites' rollback
// files and reports:
//
//   - the failover time: from the fault's start to the first Put the new
//     primary acknowledged, per failover, p50, p99 and max;
//   - writes acknowledged and lost per write level, lost meaning rolled
//     back or not held at the end: rule "durable" of package check (no
//     QUORUM write lost) and rule "rollback" (the ONE writes lost are
//     the rollback files' entries of acknowledged Puts) must hold;
//   - Porcupine's verdict on the QUORUM writes and the strong reads of
//     their keys, the rolled-back writes and the reads of them left out
//     (as package check does);
//   - the share of the guarantee clients' Gets, called during each
//     failover, that met a subSLA.
//
// Rule "epochs" is not checked: a Put's reply names no epoch.
//
// Karma campaigns (KarmaFaults; issue 28, item 5) check Karma 4.4's
// fault-tolerance claims on a topology of rings, whose table the cluster
// creates as a causal table: one client per site puts and gets shared
// keys while a site's storage nodes (AZ-B) or its coordinator and cache
// (AZ-F) fail, or a zone of a site of one ring is cut from a zone of a
// site of another (site.Zone), each fault emulated inside the site's
// process (server.Faults). The history is checked in the multi-writer
// causal mode, and the report gives, per fault and client, the operations
// called during it, those that failed, the longest unavailability window
// and the longest gap between answers (karma.go).
//
// The caller's duties, in order:
//
//  1. Fill Options: a directory and a topology at least; EnsureDefaults
//     and Validate are applied by Run.
//  2. Run it. Run starts the cluster in Options.Dir (deleting a previous
//     run's data there), runs the campaign, verifies, stops the cluster
//     (its data and logs stay in Dir) and returns the Report. An error
//     means the campaign could not be run; its verdict is Report.OK.
//  3. Print the Report (WriteText, or JSON) and exit by Report.OK.
package chaos
