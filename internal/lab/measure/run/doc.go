// Package run is the driver side of `cosla measure`: it runs the
// benchmark of Wada et al. (CIDR'11, section 2, Fig. 1) against a store and
// records what every operation did as a trace of measure.Op, which package
// measure analyses. It has no loop of its own: every run is a run of
// package driver, the project's one workload engine, and the driver's
// Recorder writes the trace.
//
// # Roles and placements (Wada 2)
//
// Every role is a driver group of one session (roleGroup). A writer's
// periodic stream writes its keys every Workload.WriteEvery (Wada: every
// three seconds), several writers staggered over the period; each write
// writes a value no other write writes, the driver's "<client>-<n>-
// <us>", the time on the trace clock at which the driver issued it, so
// that a read names the write it saw. A reader's stream reads the keys
// every 1/Workload.ReadHz (Wada: 50 times a second) with one read option
// ("eventual" or "consistent", "replica" or "primary"...). Placements:
//
//   - thread: one session with both streams, writing and reading (Wada
//     2.1.1; the write first when both are due); with several read
//     options, one such client per option, each in a run of its own (runs
//     are independent histories) and on keys of its own ("k.eventual"),
//     so that Table 3 needs a single read option;
//   - threads: every role a group of its own, in one driver run (Wada
//     2.1.2);
//   - processes: every role in a child process of its own that runs the
//     driver with its one group and writes its own trace, merged after
//     the run (Wada 2.1.2).
//
// Readers are created per read option: Workload.Readers readers read with
// each option, all sharing the writers. With two keys (Wada 3.2, Table 3)
// a step is a round: a writer writes X then Y, a reader reads X then Y,
// two adjacent ops of one client.
//
// The schedule is the driver's periodic streams: a step starts at the
// beginning of its slot (a reader in the simulator at a uniform point of
// it), or, if the session is still busy then, as soon as it is free while
// its slot lasts; slots that have passed are skipped, never made up in a
// burst.
//
// # Targets
//
// Targets (the registry) lists what `cosla measure run --target` names,
// with its read and write options: sim runs in the simulator (Sim); mem
// (LagStore), redis, etcd and postgres are adapters.Store values measured
// through driver.StoreTarget, the last three from adapters' registry:
// started on loopback for the run (adapters.Start), or reached on servers
// the user runs (Config.Connect, adapters.Connect); cosla is a running
// local cluster measured through driver.HostTarget, cosla's client core
// over TCP, the writers a group at the writer site and the readers at
// the reader site, each read option's SLA and strategy those of
// SimReadOption. Measure runs a whole `cosla measure run` and is the one
// writer of trace.csv and report.json (WriteOutputs).
//
// # Clocks
//
// Live runs take an op's call_us when the target starts it and return_us
// when it has finished, in microseconds since the Unix epoch: a run's
// driver.Loop reads the wall clock once, at its origin, and adds the
// monotonic time elapsed since (driver.Recorder.OriginUS is the origin's
// Unix time), so that a trace never goes back in time within a process,
// and the processes of one machine share one clock (a step of the system
// clock during a run would show between processes, not within one). The
// workers of PlacementProcesses share one schedule: each runs its loop
// from the origin the parent chose (a second after the run starts), as a
// reading of its own monotonic clock, and a worker that is late skips the
// slots that have passed. Runs across machines would need synchronized
// clocks and measure.Config.ClockUncertaintyMS; this package does not do
// that.
//
// Simulated runs (Sim) use the simulator's virtual time (OriginUS 0), in
// microseconds since the simulation began; the same seed gives the same
// trace.
//
// # Limits
//
// Every run is bounded by Workload.Duration and Workload.MaxOps, whichever
// comes first, and by the caller's context. Live runs stream every op to
// the trace writer as it completes, flushed, so an interrupted run loses
// nothing it has done: it is stopped, its ops in flight finish (a store's
// calls are cut short and left out of the trace) and it is reported.
//
// # Changes from the runner's own loops
//
// Moving onto the driver changed these, each small:
//
//   - in the simulator every role, thread and threads placements alike, is
//     a client node of its own (c1, c2, ... at the client site; c1 creates
//     the table); threads used to share one node;
//   - on a cosla cluster every role is a client core and session of its
//     own (one per process used to serve every role), and writes no longer
//     claim "strong" consistency in the trace;
//   - MaxOps counts rounds of one op per key: a run stops after
//     MaxOps/len(Keys) rounds (at least one); a round stops at its first
//     failed op, and its second op may start after Duration;
//   - a write's value carries the time the driver issued it, a few
//     microseconds before its call_us;
//   - sweep clients are the sessions of one group, "c" (one client) or
//     "c#1", "c#2", ...; they are staggered evenly over the period rather
//     than at random points of it, and a client whose request overran its
//     period starts the next at once while that slot lasts, rather than
//     waiting for the next slot;
//   - a read or write option the target does not take is a usage error
//     before the run (Target's options), not a run of failed ops.
package run
