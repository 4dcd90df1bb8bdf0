// Package report turns measured runs of `cosla measure` (and the
// comparisons of `cosla bench compare`) into a side-by-side comparison:
// Markdown and self-contained HTML tables plus PNG and SVG plots, after
// the tables and figures of Wada et al. (CIDR'11) and the Gamma metric of
// Golab et al. as used by CPQ (SCDM'15, section 2).
//
// A Run is one measurement directory: DIR/report.json holds the run's
// name, its free-form metadata and its measure.Report (Save, Load). Write
// compares any number of runs, typically a weak and a strong read option
// of one store (Redis replica and primary, etcd serializable and
// linearizable, PostgreSQL standby and primary, cosla eventual,
// read-my-writes and strong).
//
// What Write produces, in the output directory:
//
//   - report.md and report.html: the same tables. The summary puts one
//     column per (run, read option) side by side: P(fresh) over the
//     configured ranges (Wada Table 1), the time to freshness (Fig. 3),
//     monotonic reads (Table 2), read-your-writes, two elements (Table 3),
//     Gamma, latency, the linearizability verdict and throughput. Detail
//     tables follow, then the plots. report.html embeds every plot and
//     escapes every string that comes from a run.
//   - plots/NAME.png and plots/NAME.svg for NAME in freshness (Wada Fig.
//     2), latency (percentiles per run, kind and option), gamma (the CDF
//     of the Gamma scores) and, when a run carries a load sweep,
//     sweep_throughput (Fig. 10), sweep_latency (Figs 7-9) and
//     sweep_failures (Fig. 12).
//
// A section a run lacks (no inter-element data, no reads of an option, an
// analysis that did not run) is shown as "n/a"; Write fails only on I/O.
//
// WriteBench writes the report of `cosla bench compare` the same way: a
// table per client count, a latency CDF per operation kind and the
// throughput against clients, with the comparison's JSON beside them.
//
// The Gamma plot is exact when a Run holds measure.GammaResult.Scores
// (a Report straight from measure.Analyze); Scores are not part of
// report.json, so for a loaded run the CDF is drawn through the
// percentiles the report keeps (p50 to max) and marked as such.
package report
