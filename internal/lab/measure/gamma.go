package measure

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"text/tabwriter"

	"github.com/cosla/cosla/keyfmt"
)

// negInfUS and posInfUS stand for times before and after every op: the
// initial value's write happens at negInfUS, an indeterminate write may
// return at posInfUS. They keep every difference of times within int64
// because op times are at most maxTimeUS.
const (
	negInfUS = math.MinInt64 / 4
	posInfUS = math.MaxInt64 / 4
)

// ValueScore is the Gamma score of one value of one key (Golab et al.,
// ICDCS'14; CPQ 2): how far the operations that wrote or read the value
// deviate from linearizability. See the package doc for the formula.
type ValueScore struct {
	Run   string      `json:"run,omitempty"`
	Key   keyfmt.JSON `json:"key"`
	Value keyfmt.JSON `json:"value"`
	// Initial marks the key's initial (empty) value, scored when read.
	Initial bool `json:"initial,omitempty"`
	// Reads counts the OK reads that returned the value.
	Reads   int     `json:"reads"`
	ScoreUS int64   `json:"score_us"`
	ScoreMS float64 `json:"score_ms"`
	// Against is the value whose operations the score conflicts with, and
	// FutureRead reports that the score comes from a read that returned
	// before the value's write was invoked.
	Against    keyfmt.JSON `json:"against,omitempty"`
	FutureRead bool        `json:"future_read,omitempty"`
}

// GammaResult summarizes the per-value Gamma scores of a trace.
type GammaResult struct {
	// Values counts the scored values; Excluded the values written more
	// than once, which have no well-defined cluster and are not scored.
	Values   int `json:"values"`
	Excluded int `json:"excluded"`
	// Positive counts the scores above zero and at least
	// ClockUncertaintyMS (CPQ 3.1.3); PositiveFraction is Positive/Values,
	// CPQ's estimate of the fraction of stale reads.
	ClockUncertaintyMS float64 `json:"clock_uncertainty_ms"`
	Positive           int     `json:"positive"`
	PositiveFraction   float64 `json:"positive_fraction"`
	// TraceGammaMS is the Gamma of the whole trace, the largest score: the
	// trace is linearizable once every op's interval is widened by half of
	// it on each side.
	TraceGammaMS float64 `json:"trace_gamma_ms"`
	// All is the distribution of every score, Positives that of the scores
	// counted in Positive.
	All       Percentiles `json:"all"`
	Positives Percentiles `json:"positives"`
	// Worst lists the largest scores, at most Config.MaxExamples.
	Worst []ValueScore `json:"worst,omitempty"`
	// Scores holds every score, by run, key and version.
	Scores []ValueScore `json:"-"`
}

// Gamma computes the per-value Gamma scores of a trace and their summary.
func Gamma(ops []Op, cfg Config) GammaResult {
	return analyse(ops, cfg, gamma)
}

// cluster is the write of one value and the reads that returned it
// (Gibbons and Korach; Golab et al. PODC'11, "clusters" and "zones").
type cluster struct {
	version int
	score   ValueScore
	// a is the least finish time of the cluster's ops and b the greatest
	// start time: the zone is forward, [a, b], when a < b and backward,
	// [b, a], otherwise.
	a, b int64
	// writeStartUS is the write's invocation, negInfUS for the initial
	// value.
	writeStartUS int64
}

func (c *cluster) lo() int64 { return min(c.a, c.b) }
func (c *cluster) hi() int64 { return max(c.a, c.b) }

func gamma(h *history, cfg Config) GammaResult {
	var res GammaResult
	res.ClockUncertaintyMS = cfg.ClockUncertaintyMS
	readsOf := map[regKey]map[string][]int{}
	for i, op := range h.ops {
		if rc, ok := h.reads[i]; ok && rc.known {
			rk := regKey{op.Run, op.Key}
			if readsOf[rk] == nil {
				readsOf[rk] = map[string][]int{}
			}
			readsOf[rk][op.Value] = append(readsOf[rk][op.Value], i)
		}
	}
	for _, rk := range h.regKeys {
		reg := h.regs[rk]
		res.Excluded += len(reg.dup)
		res.Scores = append(res.Scores, scoreRegister(h, rk, reg, readsOf[rk])...)
	}
	res.Values = len(res.Scores)
	thresholdUS := int64(math.Ceil(cfg.ClockUncertaintyMS * 1000))
	all := make([]int64, 0, len(res.Scores))
	var positives []int64
	for _, s := range res.Scores {
		all = append(all, s.ScoreUS)
		if s.ScoreUS > 0 && s.ScoreUS >= thresholdUS {
			positives = append(positives, s.ScoreUS)
		}
	}
	res.Positive = len(positives)
	res.PositiveFraction = fraction(res.Positive, res.Values)
	res.All = ExactPercentiles(all)
	res.Positives = ExactPercentiles(positives)
	res.TraceGammaMS = res.All.MaxMS
	worst := slices.Clone(res.Scores)
	slices.SortStableFunc(worst, func(x, y ValueScore) int { return cmp.Compare(y.ScoreUS, x.ScoreUS) })
	for _, s := range worst {
		if len(res.Worst) >= cfg.MaxExamples || s.ScoreUS == 0 {
			break
		}
		res.Worst = append(res.Worst, s)
	}
	return res
}

// scoreRegister scores the values of one register in version order.
func scoreRegister(h *history, rk regKey, reg *register, reads map[string][]int) []ValueScore {
	var clusters []*cluster
	newCluster := func(version int, value string, writeStart, writeFinish int64) *cluster {
		c := &cluster{
			version:      version,
			score:        ValueScore{Run: rk.run, Key: keyfmt.JSON(rk.key), Value: keyfmt.JSON(value), Initial: version == 0},
			a:            writeFinish,
			b:            writeStart,
			writeStartUS: writeStart,
		}
		for _, i := range reads[value] {
			r := h.ops[i]
			c.a, c.b = min(c.a, r.ReturnUS), max(c.b, r.CallUS)
			c.score.Reads++
			// Relaxing by gamma/2 on each side, the read's finish and the
			// write's start meet at gamma = start - finish.
			if d := writeStart - r.ReturnUS; d > c.score.ScoreUS {
				c.score.ScoreUS, c.score.FutureRead, c.score.Against = d, true, ""
			}
		}
		return c
	}
	if len(reads[""]) > 0 {
		clusters = append(clusters, newCluster(0, "", negInfUS, negInfUS))
	}
	for pos, i := range reg.writes {
		w := h.ops[i]
		if reg.dup[w.Value] > 0 || reg.version[w.Value] != pos+1 {
			continue
		}
		finish := w.ReturnUS
		if !w.OK {
			if len(reads[w.Value]) == 0 {
				continue // it may never have taken effect: not part of the history
			}
			finish = posInfUS // it may take effect at any time after its start
		}
		clusters = append(clusters, newCluster(pos+1, w.Value, w.CallUS, finish))
	}
	// Only clusters whose zones overlap at gamma = 0 can conflict (a
	// conflict needs overlapping forward zones or a backward zone inside a
	// forward one), so a sweep over zones ordered by their low end compares
	// each cluster with the ones still open.
	order := slices.Clone(clusters)
	slices.SortStableFunc(order, func(x, y *cluster) int { return cmp.Compare(x.lo(), y.lo()) })
	var open []*cluster
	for _, c := range order {
		kept := open[:0]
		for _, o := range open {
			if o.hi() > c.lo() {
				kept = append(kept, o)
			}
		}
		open = kept
		for _, o := range open {
			g := pairGammaUS(o.a, o.b, c.a, c.b)
			if g == 0 {
				continue
			}
			// The score goes to the older value (package doc, "Gamma").
			older, newer := o, c
			if c.version < o.version {
				older, newer = c, o
			}
			if g > older.score.ScoreUS {
				older.score.ScoreUS, older.score.FutureRead, older.score.Against = g, false, newer.score.Value
			}
		}
		open = append(open, c)
	}
	out := make([]ValueScore, len(clusters))
	for i, c := range clusters {
		c.score.ScoreMS = msOf(c.score.ScoreUS)
		out[i] = c.score
	}
	return out
}

// pairGammaUS is the least gamma at which two clusters, with zone ends
// (a1, b1) and (a2, b2), stop conflicting once every op's start moves
// gamma/2 earlier and its finish gamma/2 later: each a grows by gamma/2
// and each b shrinks by gamma/2. Conflicts (Gibbons and Korach) are strict
// overlaps, as op intervals are closed: ops that touch are concurrent.
func pairGammaUS(a1, b1, a2, b2 int64) int64 {
	var g int64
	// Two forward zones overlap while gamma < O, the length of their
	// overlap (O is at most either zone's length, so both are still forward).
	if o := min(b1, b2) - max(a1, a2); o > 0 && b1 > a1 && b2 > a2 {
		g = o
	}
	return max(g, backwardInForward(a1, b1, a2, b2), backwardInForward(a2, b2, a1, b1))
}

// backwardInForward is the end of the gammas for which cluster j's zone is
// backward (gamma >= bj-aj) and strictly inside cluster i's forward zone
// (gamma < bi-ai, ai+gamma/2 < bj-gamma/2, aj+gamma/2 < bi-gamma/2), or 0
// when there are none.
func backwardInForward(ai, bi, aj, bj int64) int64 {
	from := max(0, bj-aj)
	to := min(bi-ai, bj-ai, bi-aj)
	if to > from {
		return to
	}
	return 0
}

// WriteText renders the Gamma summary and the worst values.
func (r GammaResult) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "Gamma scores (Golab et al.; CPQ 2): %d values scored, %d excluded as written more than once\n", r.Values, r.Excluded)
	fmt.Fprintf(tw, "  positive (>= %g ms): %d (%s); trace Gamma %.3f ms\n", r.ClockUncertaintyMS, r.Positive, pct(r.PositiveFraction, r.Values), r.TraceGammaMS)
	fmt.Fprintf(tw, "  all scores:      %s\n", r.All)
	fmt.Fprintf(tw, "  positive scores: %s\n", r.Positives)
	for _, s := range r.Worst {
		why := fmt.Sprintf("against %q", s.Against)
		if s.FutureRead {
			why = "read returned before its write was invoked"
		}
		fmt.Fprintf(tw, "    run %s key %q value %q\t%.3f ms\t%d reads\t%s\t\n", runLabel(s.Run), s.Key, s.Value, s.ScoreMS, s.Reads, why)
	}
	return tw.Flush()
}

func (r GammaResult) String() string { return formatString(r) }
