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
//     for the last Put to a key;
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
// first fault of each kind strikes the primary's site, the second a
// secondary's, later ones the primary's with probability 1/2. Each lasts
// a drawn hold (a killed process stays down for up to that long) and is
// healed before the next, a drawn gap later. The campaign ends once it
// has made every kind at least twice, the kills asked for, and seen the
// acknowledged Puts asked for, or at its time bound, which is a failure.
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
