// Package driver is cosla's one workload engine (DESIGN.md section 6):
// it generates operations, issues them to a store and records what each
// did, for every run mode: the experiments in the simulator and on a
// local cluster, `cosla measure run`, `cosla bench` and the tests.
//
// A run is a Spec: groups of sessions, each group at a client site with
// one configuration (an SLA and strategy, a store option) and one source
// of steps. A session runs one step at a time; a step is one op or a few
// back to back. Steps come from a Mix (a kind mix over a key
// distribution, a YCSB workload, a load phase, a fixed step,
// dConssandra's groups of bounded writes and a read) and start
// by a Stream's rule: a closed loop with a think time, or periodic slots
// (Wada's writers and readers); or a group runs an open loop, steps
// arriving at a rate, with at most one in flight per session.
//
// The driver is a state machine on its Runtime's loop: the simulator
// (SimRuntime) or a real-time Loop. Targets perform the ops: SimTarget
// and HostTarget run cosla's client core (package clientcore) with one
// executor, in the simulator or against a real cluster over TCP, so
// that the two differ only in their network and clock; StoreTarget
// calls another store. An op may carry a bound (dConssandra), and then
// records what the store reported: the stage a write reached, a read's
// NULL, the writes it applied and those still pending. A Recorder keeps
// statistics per group and step label, and per op label for the ops
// that have one (HDR latency percentiles, throughput, failures), writes
// the measure trace format when asked, and hands every op to a hook.
//
// The caller's duties, in order:
//
//  1. Build the Spec and a Recorder, and New the driver on a Target: it
//     opens every group's client (in the simulator, running it until
//     the table is open).
//  2. Start it on the runtime, which fixes the run clock's zero.
//  3. Run the runtime until Done: Sim.RunUntil(limit, d.Done), or
//     Loop.Run(ctx, d.Done). To end a live run early, Stop on the loop
//     and run it until Done again (the ops in flight finish).
//  4. Read the Recorder's Stats, Groups and Ops, then Close the driver.
package driver
