package measure

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
)

// FreshBucket is one point of the fresh-read curve (Wada Fig. 2): the reads
// whose elapsed time since their reference write falls in
// [StartMS, StartMS+width).
type FreshBucket struct {
	StartMS float64 `json:"start_ms"`
	Reads   int     `json:"reads"`
	Fresh   int     `json:"fresh"`
	// P is Fresh/Reads.
	P float64 `json:"p"`
}

// RangeFreshness is one row of the Table 1 summary (Wada 2.1.1, Table 1).
type RangeFreshness struct {
	Range RangeMS `json:"range"`
	Reads int     `json:"reads"`
	Fresh int     `json:"fresh"`
	P     float64 `json:"p"`
}

// RunFreshness is one run's time to freshness (Wada 2.1.1, Fig. 3): the
// first bucket whose probability of a fresh read exceeds the threshold and
// the last bucket where it is below 100%. Only buckets with at least
// Config.MinBucketReads reads take part.
type RunFreshness struct {
	Run           string  `json:"run"`
	Reads         int     `json:"reads"`
	HasFirstAbove bool    `json:"has_first_above"`
	FirstAboveMS  float64 `json:"first_above_ms"`
	HasLastBelow  bool    `json:"has_last_below"`
	LastBelowMS   float64 `json:"last_below_ms"`
}

// OptionFreshness is the freshness of the reads issued with one option.
type OptionFreshness struct {
	Option string `json:"option"`
	// Reads counts the classified reads (package doc, "Freshness"); Fresh
	// those that were fresh.
	Reads int     `json:"reads"`
	Fresh int     `json:"fresh"`
	P     float64 `json:"p"`
	// NoReference counts OK reads of a known value invoked before any write
	// of their key had returned; Unknown counts OK reads of a value never
	// written (an anomaly). Neither is in Reads.
	NoReference int              `json:"no_reference"`
	Unknown     int              `json:"unknown"`
	Buckets     []FreshBucket    `json:"buckets"`
	Ranges      []RangeFreshness `json:"ranges"`
	Runs        []RunFreshness   `json:"runs"`
	// MedianFirstAboveMS and CVFirstAbove are the median and coefficient of
	// variation of FirstAboveMS over the runs that have one (Wada 2.1.1
	// reports 516.17 ms and 0.0258 for SimpleDB).
	RunsWithFirstAbove int     `json:"runs_with_first_above"`
	MedianFirstAboveMS float64 `json:"median_first_above_ms"`
	CVFirstAbove       float64 `json:"cv_first_above"`
}

// FreshnessResult is the probability of reading the freshest value against
// the time elapsed since the start of the write (Wada 2.1.1, Fig. 2-3,
// Table 1), per read option.
type FreshnessResult struct {
	BucketWidthMS  float64           `json:"bucket_width_ms"`
	FreshThreshold float64           `json:"fresh_threshold"`
	Options        []OptionFreshness `json:"options"`
}

// Freshness computes the fresh-read curve, its Table 1 summary and the
// per-run time to freshness of every read option.
func Freshness(ops []Op, cfg Config) FreshnessResult {
	return analyse(ops, cfg, freshness)
}

type bucketCount struct{ reads, fresh int }

func freshness(h *history, cfg Config) FreshnessResult {
	widthUS := cfg.bucketWidthUS()
	type optionAcc struct {
		all         map[int64]*bucketCount
		runs        map[string]map[int64]*bucketCount
		ranges      []bucketCount
		noReference int
		unknown     int
	}
	byOption := map[string]*optionAcc{}
	for i, op := range h.ops {
		rc, ok := h.reads[i]
		if !ok {
			continue
		}
		acc := byOption[op.Option]
		if acc == nil {
			acc = &optionAcc{
				all:    map[int64]*bucketCount{},
				runs:   map[string]map[int64]*bucketCount{},
				ranges: make([]bucketCount, len(cfg.Ranges)),
			}
			byOption[op.Option] = acc
		}
		switch {
		case !rc.known:
			acc.unknown++
			continue
		case !rc.hasRef:
			acc.noReference++
			continue
		}
		fresh := 0
		if rc.fresh() {
			fresh = 1
		}
		b := rc.elapsedUS / widthUS
		bumpBucket(acc.all, b, fresh)
		run := acc.runs[op.Run]
		if run == nil {
			run = map[int64]*bucketCount{}
			acc.runs[op.Run] = run
		}
		bumpBucket(run, b, fresh)
		for j, r := range cfg.Ranges {
			if r.contains(rc.elapsedUS) {
				acc.ranges[j].reads++
				acc.ranges[j].fresh += fresh
			}
		}
	}
	res := FreshnessResult{BucketWidthMS: msOf(widthUS), FreshThreshold: cfg.FreshThreshold}
	for _, option := range sortedOptions(byOption) {
		acc := byOption[option]
		of := OptionFreshness{Option: option, NoReference: acc.noReference, Unknown: acc.unknown}
		of.Buckets = bucketsOf(acc.all, widthUS)
		for _, b := range of.Buckets {
			of.Reads += b.Reads
			of.Fresh += b.Fresh
		}
		of.P = fraction(of.Fresh, of.Reads)
		for j, r := range cfg.Ranges {
			c := acc.ranges[j]
			of.Ranges = append(of.Ranges, RangeFreshness{Range: r, Reads: c.reads, Fresh: c.fresh, P: fraction(c.fresh, c.reads)})
		}
		var firsts []float64
		for _, run := range sortedOptions(acc.runs) {
			rf := timeToFreshness(run, bucketsOf(acc.runs[run], widthUS), cfg)
			if rf.HasFirstAbove {
				firsts = append(firsts, rf.FirstAboveMS)
			}
			of.Runs = append(of.Runs, rf)
		}
		of.RunsWithFirstAbove = len(firsts)
		of.MedianFirstAboveMS, of.CVFirstAbove = medianAndCV(firsts)
		res.Options = append(res.Options, of)
	}
	return res
}

func bumpBucket(m map[int64]*bucketCount, b int64, fresh int) {
	c := m[b]
	if c == nil {
		c = &bucketCount{}
		m[b] = c
	}
	c.reads++
	c.fresh += fresh
}

// bucketsOf returns the non-empty buckets in order of time.
func bucketsOf(m map[int64]*bucketCount, widthUS int64) []FreshBucket {
	idx := make([]int64, 0, len(m))
	for b := range m {
		idx = append(idx, b)
	}
	slices.Sort(idx)
	out := make([]FreshBucket, 0, len(idx))
	for _, b := range idx {
		c := m[b]
		out = append(out, FreshBucket{StartMS: msOf(b * widthUS), Reads: c.reads, Fresh: c.fresh, P: fraction(c.fresh, c.reads)})
	}
	return out
}

// timeToFreshness is Wada Fig. 3 for one run.
func timeToFreshness(run string, buckets []FreshBucket, cfg Config) RunFreshness {
	rf := RunFreshness{Run: run}
	for _, b := range buckets {
		rf.Reads += b.Reads
		if b.Reads < cfg.MinBucketReads {
			continue
		}
		if !rf.HasFirstAbove && b.P > cfg.FreshThreshold {
			rf.HasFirstAbove, rf.FirstAboveMS = true, b.StartMS
		}
		if b.Fresh < b.Reads {
			rf.HasLastBelow, rf.LastBelowMS = true, b.StartMS
		}
	}
	return rf
}

// medianAndCV returns the median and the coefficient of variation
// (population standard deviation over mean) of xs, zeros when empty.
func medianAndCV(xs []float64) (median, cv float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 1 {
		median = s[n/2]
	} else {
		median = (s[n/2-1] + s[n/2]) / 2
	}
	var sum, sq float64
	for _, x := range s {
		sum += x
	}
	mean := sum / float64(len(s))
	for _, x := range s {
		sq += (x - mean) * (x - mean)
	}
	if mean != 0 {
		cv = math.Sqrt(sq/float64(len(s))) / mean
	}
	return median, cv
}

// WriteText renders the Table 1 summary and the time to freshness of every
// option.
func (r FreshnessResult) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "Probability of reading the freshest value (Wada Table 1), %g ms buckets\n", r.BucketWidthMS)
	if len(r.Options) == 0 {
		fmt.Fprintln(tw, "  no reads")
		return tw.Flush()
	}
	header := []string{"  elapsed since write start"}
	for _, o := range r.Options {
		header = append(header, optionLabel(o.Option))
	}
	fmt.Fprintln(tw, strings.Join(header, "\t")+"\t")
	for j := range r.Options[0].Ranges {
		row := []string{"  " + r.Options[0].Ranges[j].Range.String()}
		for _, o := range r.Options {
			rf := o.Ranges[j]
			row = append(row, fmt.Sprintf("%s (%d/%d)", pct(rf.P, rf.Reads), rf.Fresh, rf.Reads))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	row := []string{"  all"}
	for _, o := range r.Options {
		row = append(row, fmt.Sprintf("%s (%d/%d)", pct(o.P, o.Reads), o.Fresh, o.Reads))
	}
	fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	row = []string{"  no reference / unknown"}
	for _, o := range r.Options {
		row = append(row, fmt.Sprintf("%d / %d", o.NoReference, o.Unknown))
	}
	fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	fmt.Fprintf(tw, "Time to freshness per run (Wada Fig. 3): first bucket > %g%%, last bucket < 100%%\n", 100*r.FreshThreshold)
	for _, o := range r.Options {
		fmt.Fprintf(tw, "  %s: %d runs, %d reach the threshold; median %.2f ms, CV %.4f\n",
			optionLabel(o.Option), len(o.Runs), o.RunsWithFirstAbove, o.MedianFirstAboveMS, o.CVFirstAbove)
		for _, run := range o.Runs {
			first, last := "never", "never"
			if run.HasFirstAbove {
				first = fmt.Sprintf("%g ms", run.FirstAboveMS)
			}
			if run.HasLastBelow {
				last = fmt.Sprintf("%g ms", run.LastBelowMS)
			}
			fmt.Fprintf(tw, "    run %s\t%d reads\tfirst > threshold %s\tlast < 100%% %s\t\n", runLabel(run.Run), run.Reads, first, last)
		}
	}
	return tw.Flush()
}

func (r FreshnessResult) String() string { return formatString(r) }

func optionLabel(option string) string {
	if option == "" {
		return "(no option)"
	}
	return option
}

func runLabel(run string) string {
	if run == "" {
		return "(default)"
	}
	return run
}

// pct renders p as a percentage, or "-" when it rests on no observations.
func pct(p float64, n int) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f%%", 100*p)
}

type textWriter interface{ WriteText(io.Writer) error }

func formatString(f textWriter) string {
	var b strings.Builder
	_ = f.WriteText(&b) // a strings.Builder never fails
	return b.String()
}
