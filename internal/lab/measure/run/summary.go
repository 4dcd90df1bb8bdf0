package run

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/cosla/cosla/internal/lab/measure"
)

// Summary is the handful of numbers of Wada 2.1.1 for one run: the
// freshness of the weak read option over the Table 1 ranges, the
// consistent option's freshness, the Table 2 monotonic-read violations,
// read-your-writes violations and the Gamma score (CPQ 2). Probabilities
// are fractions in [0, 1]; a number with no observations is 0 and its
// count is 0.
type Summary struct {
	Target string  `json:"target,omitempty"`
	Seed   *uint64 `json:"seed,omitempty"`
	// WeakOption is the read option of the weak reads (the first read
	// option), StrongOption the consistent one (the second), if any.
	WeakOption   string `json:"weak_option"`
	StrongOption string `json:"strong_option,omitempty"`
	// PFresh0To450MS and the others are the fraction of fresh weak reads
	// invoked that long after the start of their reference write (Wada
	// Table 1); PFresh510To1000MS leaves out the 10 ms in which the last
	// replicas catch up.
	PFresh0To450MS      float64 `json:"p_fresh_0_450ms"`
	Reads0To450MS       int     `json:"reads_0_450ms"`
	PFresh450To500MS    float64 `json:"p_fresh_450_500ms"`
	PFresh500To1000MS   float64 `json:"p_fresh_500_1000ms"`
	Reads500To1000MS    int     `json:"reads_500_1000ms"`
	PFresh510To1000MS   float64 `json:"p_fresh_510_1000ms"`
	PFreshAfter1000MS   float64 `json:"p_fresh_after_1000ms"`
	PFreshConsistent    float64 `json:"p_fresh_consistent"`
	ReadsConsistent     int     `json:"reads_consistent"`
	MedianTimeToFreshMS float64 `json:"median_time_to_fresh_ms"`
	// MRViolationFraction is Wada Table 2's fresh-then-stale fraction of
	// successive weak reads both invoked within [0, 450) ms of a write;
	// MRPairs counts those pairs, MRCorrelation is their freshness
	// correlation.
	MRViolationFraction float64 `json:"mr_violation_fraction"`
	MRPairs             int     `json:"mr_pairs"`
	MRCorrelation       float64 `json:"mr_correlation"`
	// RYWViolationFraction is the fraction of weak reads by a client that
	// had written the key that returned an older version than its own
	// (only a client that both writes and reads, PlacementThread, has
	// any); RYWChecked counts them.
	RYWViolationFraction float64 `json:"ryw_violation_fraction"`
	RYWChecked           int     `json:"ryw_checked"`
	// GammaPositiveFraction is the fraction of values with a positive
	// Gamma score over the writes and the weak reads (CPQ 2).
	GammaPositiveFraction float64 `json:"gamma_positive_fraction"`
	GammaValues           int     `json:"gamma_values"`
}

// Summarize computes the summary of a run from its ops and report. weak
// and strong name the read options; strong may be empty.
func Summarize(ops []measure.Op, rep measure.Report, weak, strong string) Summary {
	s := Summary{WeakOption: weak, StrongOption: strong}
	for _, of := range rep.Freshness.Options {
		switch of.Option {
		case weak:
			var r0, r450, r500, r510, r1000 counter
			for _, b := range of.Buckets {
				switch ms := b.StartMS; {
				case ms < 450:
					r0.add(b)
				case ms < 500:
					r450.add(b)
				case ms < 1000:
					r500.add(b)
					if ms >= 510 {
						r510.add(b)
					}
				default:
					r1000.add(b)
				}
			}
			s.PFresh0To450MS, s.Reads0To450MS = r0.p(), r0.reads
			s.PFresh450To500MS = r450.p()
			s.PFresh500To1000MS, s.Reads500To1000MS = r500.p(), r500.reads
			s.PFresh510To1000MS = r510.p()
			s.PFreshAfter1000MS = r1000.p()
			s.MedianTimeToFreshMS = of.MedianFirstAboveMS
		case strong:
			if strong != "" {
				s.PFreshConsistent, s.ReadsConsistent = of.P, of.Reads
			}
		}
	}
	for _, t := range rep.MonotonicReads.Options {
		if t.Option == weak {
			s.MRViolationFraction, s.MRPairs, s.MRCorrelation = t.FreshStaleFrac, t.Pairs, t.Correlation
		}
	}
	for _, o := range rep.ReadYourWrites.Options {
		if o.Option == weak {
			s.RYWViolationFraction, s.RYWChecked = o.Rate, o.Checked
		}
	}
	var weakOps []measure.Op
	for _, op := range ops {
		if op.Kind == measure.KindWrite || op.Option == weak {
			weakOps = append(weakOps, op)
		}
	}
	g := measure.Gamma(weakOps, rep.Config)
	s.GammaPositiveFraction, s.GammaValues = g.PositiveFraction, g.Values
	return s
}

type counter struct{ reads, fresh int }

func (c *counter) add(b measure.FreshBucket) { c.reads += b.Reads; c.fresh += b.Fresh }

func (c counter) p() float64 {
	if c.reads == 0 {
		return 0
	}
	return float64(c.fresh) / float64(c.reads)
}

// WriteText renders the summary, with the paper's numbers beside it when
// paper is not nil (negative paper numbers are shown as not given).
func (s Summary) WriteText(w io.Writer, paper *Summary) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	header := "Summary (Wada 2.1.1)"
	if s.Target != "" {
		header += ", target " + s.Target
	}
	if s.Seed != nil {
		header += fmt.Sprintf(", seed %d", *s.Seed)
	}
	fmt.Fprintln(tw, header)
	if paper != nil {
		fmt.Fprintln(tw, "  \tthis run\tWada (SimpleDB)\t")
	}
	row := func(name string, v float64, n int, p float64, isPct bool) {
		val := fmt.Sprintf("%.2f", v)
		if isPct {
			val = fmt.Sprintf("%.2f%%", 100*v)
		}
		if n >= 0 {
			val += fmt.Sprintf(" (n=%d)", n)
		}
		if paper == nil {
			fmt.Fprintf(tw, "  %s\t%s\t\n", name, val)
			return
		}
		ref := "-"
		switch {
		case p >= 0 && isPct:
			ref = fmt.Sprintf("%.2f%%", 100*p)
		case p >= 0:
			ref = fmt.Sprintf("%.2f", p)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t\n", name, val, ref)
	}
	var ps Summary
	if paper != nil {
		ps = *paper
	}
	weak := optionName(s.WeakOption)
	row(fmt.Sprintf("P(fresh) %s reads [0, 450) ms", weak), s.PFresh0To450MS, s.Reads0To450MS, ps.PFresh0To450MS, true)
	row(fmt.Sprintf("P(fresh) %s reads [500, 1000) ms", weak), s.PFresh500To1000MS, s.Reads500To1000MS, ps.PFresh500To1000MS, true)
	row(fmt.Sprintf("P(fresh) %s reads [510, 1000) ms", weak), s.PFresh510To1000MS, -1, -1, true)
	row(fmt.Sprintf("median time to > 99%% fresh, ms (%s)", weak), s.MedianTimeToFreshMS, -1, ps.MedianTimeToFreshMS, false)
	if s.StrongOption != "" {
		row(fmt.Sprintf("P(fresh) %s reads", s.StrongOption), s.PFreshConsistent, s.ReadsConsistent, ps.PFreshConsistent, true)
	}
	row("monotonic-read violations (fresh then stale)", s.MRViolationFraction, s.MRPairs, ps.MRViolationFraction, true)
	row("  correlation of successive reads", s.MRCorrelation, -1, ps.MRCorrelation, false)
	row("read-your-writes violations", s.RYWViolationFraction, s.RYWChecked, ps.RYWViolationFraction, true)
	row("values with a positive Gamma score", s.GammaPositiveFraction, s.GammaValues, ps.GammaPositiveFraction, true)
	return tw.Flush()
}
