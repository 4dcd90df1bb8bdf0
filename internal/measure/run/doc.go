// Package run is the driver side of `cosla measure`: it runs the
// benchmark of Wada et al. (CIDR'11, section 2, Fig. 1) against a store and
// records what every operation did as a trace of measure.Op, which package
// measure analyses.
//
// # Roles and placements (Wada 2)
//
// A writer writes its keys every Workload.WriteEvery (Wada: every three
// seconds), each write a value no other write writes, "<client>-<seq>-
// <call_us>", so that a read names the write it saw. A reader reads the
// keys at Workload.ReadHz (Wada: 50 times a second) with one read option
// ("eventual" or "consistent", "replica" or "primary"...). Placements:
//
//   - thread: one client writes and then reads in one loop (Wada 2.1.1);
//     with several read options, one such client per option, each in a
//     run of its own (runs are independent histories) and on keys of its
//     own ("k.eventual"), so that Table 3 needs a single read option;
//   - threads: every role in a goroutine of its own (Wada 2.1.2);
//   - processes: every role in a child process of its own that writes its
//     own trace, merged after the run (Wada 2.1.2).
//
// Readers are created per read option: Workload.Readers readers read with
// each option, all sharing the writers. With two keys (Wada 3.2, Table 3)
// a writer writes X then Y in each round, and a reader reads X then Y, two
// adjacent ops of one client.
//
// # Clocks
//
// Live runs take call_us just before a call and return_us just after it
// from CLOCK_REALTIME, in microseconds since the Unix epoch: each process
// reads the wall clock once when it starts and adds the monotonic time
// elapsed since, so that a trace never goes back in time within a process,
// and the processes of one machine share one clock (a step of the system
// clock during a run would show between processes, not within one). Runs
// across machines would need synchronized clocks and
// measure.Config.ClockUncertaintyMS; this package does not do that.
//
// Simulated runs (Sim) use the simulator's virtual time, in microseconds
// since the simulation started; the same seed gives the same trace.
//
// # Limits
//
// Every run is bounded by Workload.Duration and Workload.MaxOps, whichever
// comes first, and by the caller's context. Live runs stream every op to
// the trace writer as it completes, flushed, so an interrupted run loses
// nothing it has done.
package run
