// Package measure is the analysis core of `cosla measure`: it reads traces
// of client operations and computes the consumer-side consistency and
// performance measurements of Wada et al. (CIDR'11) and the Gamma metric of
// Golab et al. (ICDCS'14) as used by McKenzie et al. (CPQ, SCDM'15).
//
// Everything here is a pure function of a trace: no clock, no randomness,
// no network, no goroutines of its own (Porcupine, which CheckLinearizable
// calls, runs one per register). Bad input never panics; ops that cannot
// be analysed are reported as Anomalies and skipped.
//
// # Traces
//
// A trace is a sequence of Op, one JSON object per line (WriteJSONL,
// ReadJSONL), with invocation and response times in microseconds on one
// clock. Each write writes a value no other write of its key writes
// (Wada 2: the value is the write's time); the empty value is every key's
// initial state and what a read that found nothing returns. Each key of
// each run is a separate register: runs are independent measurements.
//
// The benchmark's duties, in order:
//  1. give every write a fresh non-empty value;
//  2. take call_us just before sending and return_us just after the
//     response, from the same clock for every client;
//  3. record failed ops too, with ok=false: a failed write is indeterminate,
//     a failed read returned nothing;
//  4. record a call that reads two elements (Wada 3.2, one GetAttributes) as
//     two adjacent lines of the same client.
//
// # Versions
//
// The writes of a register are ordered by invocation time (then response
// time, then trace order); a value's version is its write's 1-based
// position, the initial value's is 0. With one writer this is the order in
// which the writes happened; with several concurrent writers it is Wada's
// order ("the value written is the current time"). A value written more
// than once is an anomaly; it stands for its earliest write.
//
// # Freshness (Wada 2.1.1)
//
// The reference write of an OK read r is the newest write, in version
// order, among the OK writes of r's register that returned strictly before
// r was invoked (Wada: "the closest preceding write"; SimpleDB's consistent
// read returns "the most recently completed write"). r is fresh when the
// version it returned is at least its reference write's (a value from a
// write still in progress is fresh too), stale otherwise. Its elapsed time
// is from the reference write's invocation to r's invocation (Wada:
// "elapsed from when the write begins, to the time when the read is
// submitted"); it is always positive. A read is classified when it has a
// reference write and returned a known value; reads before any write
// returned and reads of never-written values are counted apart.
//
// Freshness, MonotonicReads, InterElement and the fresh/stale outcomes of
// ReadYourWrites all use this definition, grouped by Op.Option. The time to
// freshness of a run (Fig. 3) is the start of the first bucket whose
// fraction of fresh reads exceeds Config.FreshThreshold, and the start of
// the last bucket below 100%, over buckets with at least
// Config.MinBucketReads reads.
//
// # Session guarantees
//
// A monotonic-read violation is a read that returned an older version than
// the same client's previous OK read of the key (Terry et al.). Wada
// 2.1.1.2 counts instead a fresh read followed by a stale one; the table
// gives both. A read-your-writes violation is a read that returned an
// older version than the newest write of the key by the same client that
// returned OK before the read was invoked.
//
// # Gamma (Golab et al., ICDCS'14; CPQ 2)
//
// A trace is Γ-atomic when it is linearizable after every op's start moves
// Γ/2 earlier and its finish Γ/2 later; its Γ is the least such Γ. So a
// read that starts d after the write overwriting its value returned scores
// d (when the writes are further apart than d), which makes a positive
// score an upper bound on staleness (CPQ 2). CPQ's sentence "between its
// start time minus t and its finish time plus t" would halve every score;
// we follow ICDCS'14's Γ/2 so that scores read as staleness.
//
// The per-value score is derived from the zone characterization of
// atomicity for registers with distinct values (Gibbons and Korach; Golab
// et al., PODC'11). The cluster of value v is its write and the OK reads
// that returned it (the initial value's write is at -∞; a failed write
// that some read saw finishes at +∞; a failed write nobody saw, and any
// duplicated value, are left out). Let a(v) be the least finish and b(v)
// the greatest start in the cluster. The zone is forward, [a, b], when
// a < b, and backward, [b, a], otherwise. The trace is atomic iff no read
// finishes before its value's write starts and no two clusters conflict:
// two forward zones overlap, or a backward zone lies inside a forward one.
// Widening by Γ/2 adds Γ/2 to every a and subtracts it from every b. For
// clusters 1 and 2, with L = b - a, the gammas at which they conflict are
// [0, O) with O = min(b1, b2) - max(a1, a2), when both are forward, and
// [max(0, L2), min(L1, b2 - a1, b1 - a2)) for 2 backward inside 1
// forward (and symmetrically); all inequalities are strict because op
// intervals are closed, as in Porcupine. The pair's score is
//
//	pair(1, 2) = max(O if O > 0 and L1 > 0 and L2 > 0,
//	                 min(L1, b2-a1, b1-a2) if that exceeds max(0, L2),
//	                 min(L2, b1-a2, b2-a1) if that exceeds max(0, L1),
//	                 0)
//
// and the score of v is
//
//	score(v) = max(max over reads r of v of start(write(v)) - finish(r),
//	               max over clusters u newer than v of pair(u, v),
//	               0)
//
// A conflict is charged to the older value of the pair (by version): the
// value that was read when a newer one should have been, so that positive
// scores mark stale values as CPQ 2 counts them. Γ of the whole trace is
// the largest score. Only clusters whose zones overlap can conflict, so a
// sweep keeps the cost near O(n log n). GammaResult.PositiveFraction
// counts scores above zero and at least Config.ClockUncertaintyMS (CPQ
// 3.1.3), over all scored values.
//
// # Other analyses
//
// CheckLinearizable runs Porcupine with a register model partitioned by
// (run, key), bounded by Config.LinearizabilityMaxOps. Latency and Sweep
// report HDR-histogram percentiles of OK ops per kind and option, and
// throughput and failure rate per client count (Wada 4.1). Analyze runs
// everything into a Report.
package measure
