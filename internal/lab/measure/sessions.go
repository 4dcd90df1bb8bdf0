package measure

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"text/tabwriter"

	"github.com/cosla/cosla/keyfmt"
)

// PairTable is Wada Table 2 for one read option: successive reads of one
// key by one client, classified by the freshness of each.
type PairTable struct {
	// Option is the reads' option, or "a+b" when the first read used a and
	// the second b.
	Option string `json:"option"`
	Pairs  int    `json:"pairs"`
	// The four outcomes, first read then second, and their fractions of
	// Pairs. FreshStale is what Wada 2.1.1.2 calls a monotonic-read
	// violation.
	FreshFresh     int     `json:"fresh_fresh"`
	FreshStale     int     `json:"fresh_stale"`
	StaleFresh     int     `json:"stale_fresh"`
	StaleStale     int     `json:"stale_stale"`
	FreshFreshFrac float64 `json:"fresh_fresh_frac"`
	FreshStaleFrac float64 `json:"fresh_stale_frac"`
	StaleFreshFrac float64 `json:"stale_fresh_frac"`
	StaleStaleFrac float64 `json:"stale_stale_frac"`
	// Violations counts pairs whose second read returned an older version
	// than the first: the monotonic-read guarantee broken (Terry et al.).
	Violations    int     `json:"violations"`
	ViolationRate float64 `json:"violation_rate"`
	// Correlation is the Pearson correlation of the two reads' freshness
	// (1 fresh, 0 stale), Wada 2.1.1.2; it is undefined (and 0) when either
	// read is always fresh or always stale.
	Correlation        float64 `json:"correlation"`
	CorrelationDefined bool    `json:"correlation_defined"`
}

func (t *PairTable) add(firstFresh, secondFresh, violation bool) {
	t.Pairs++
	switch {
	case firstFresh && secondFresh:
		t.FreshFresh++
	case firstFresh:
		t.FreshStale++
	case secondFresh:
		t.StaleFresh++
	default:
		t.StaleStale++
	}
	if violation {
		t.Violations++
	}
}

func (t *PairTable) finish() {
	t.FreshFreshFrac = fraction(t.FreshFresh, t.Pairs)
	t.FreshStaleFrac = fraction(t.FreshStale, t.Pairs)
	t.StaleFreshFrac = fraction(t.StaleFresh, t.Pairs)
	t.StaleStaleFrac = fraction(t.StaleStale, t.Pairs)
	t.ViolationRate = fraction(t.Violations, t.Pairs)
	t.Correlation, t.CorrelationDefined = phi(t.FreshFresh, t.FreshStale, t.StaleFresh, t.StaleStale)
}

// phi is the Pearson correlation of two 0/1 variables from their 2x2 table
// (n11: both 1, n10: first 1 and second 0, ...).
func phi(n11, n10, n01, n00 int) (float64, bool) {
	a, b, c, d := float64(n11), float64(n10), float64(n01), float64(n00)
	den := (a + b) * (c + d) * (a + c) * (b + d)
	if den == 0 {
		return 0, false
	}
	return (a*d - b*c) / math.Sqrt(den), true
}

// MonotonicResult is Wada Table 2 per option.
type MonotonicResult struct {
	Window  RangeMS     `json:"window"`
	Options []PairTable `json:"options"`
}

// MonotonicReads builds the table of successive reads (Wada 2.1.1.2, Table
// 2). Two reads are successive when the same client issued them, OK, on
// the same key with no OK read of that key between them; both must be
// classified and both start within Config.MonotonicWindow of their
// reference writes.
func MonotonicReads(ops []Op, cfg Config) MonotonicResult {
	return analyse(ops, cfg, monotonicReads)
}

func monotonicReads(h *history, cfg Config) MonotonicResult {
	tables := map[string]*PairTable{}
	for _, ck := range h.clientKeys {
		last := map[string]int{}
		for _, i := range h.clients[ck] {
			op := h.ops[i]
			rc, isRead := h.reads[i]
			if !isRead {
				continue
			}
			prev, hasPrev := last[op.Key]
			last[op.Key] = i
			if !hasPrev {
				continue
			}
			pc := h.reads[prev]
			if !pc.classified() || !rc.classified() ||
				!cfg.MonotonicWindow.contains(pc.elapsedUS) || !cfg.MonotonicWindow.contains(rc.elapsedUS) {
				continue
			}
			option := optionPair(h.ops[prev].Option, op.Option)
			t := tables[option]
			if t == nil {
				t = &PairTable{Option: option}
				tables[option] = t
			}
			t.add(pc.fresh(), rc.fresh(), rc.version < pc.version)
		}
	}
	res := MonotonicResult{Window: cfg.MonotonicWindow}
	for _, option := range sortedOptions(tables) {
		t := tables[option]
		t.finish()
		res.Options = append(res.Options, *t)
	}
	return res
}

// WriteText renders Table 2 for every option.
func (r MonotonicResult) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "Successive reads of one key by one client (Wada Table 2), both within %s of a write\n", r.Window)
	if len(r.Options) == 0 {
		fmt.Fprintln(tw, "  no pairs")
	}
	for _, t := range r.Options {
		fmt.Fprintf(tw, "  %s: %d pairs\n", optionLabel(t.Option), t.Pairs)
		fmt.Fprintln(tw, "    first \\ second\tstale\tfresh\t")
		fmt.Fprintf(tw, "    stale\t%s (%d)\t%s (%d)\t\n", pct(t.StaleStaleFrac, t.Pairs), t.StaleStale, pct(t.StaleFreshFrac, t.Pairs), t.StaleFresh)
		fmt.Fprintf(tw, "    fresh\t%s (%d)\t%s (%d)\t\n", pct(t.FreshStaleFrac, t.Pairs), t.FreshStale, pct(t.FreshFreshFrac, t.Pairs), t.FreshFresh)
		corr := "undefined"
		if t.CorrelationDefined {
			corr = fmt.Sprintf("%.4f", t.Correlation)
		}
		fmt.Fprintf(tw, "    second read older than first: %d (%s); correlation %s\n", t.Violations, pct(t.ViolationRate, t.Pairs), corr)
	}
	return tw.Flush()
}

func (r MonotonicResult) String() string { return formatString(r) }

// RYWOption is the read-your-writes result of one read option.
type RYWOption struct {
	Option string `json:"option"`
	// Checked counts OK reads of a known value by a client that had
	// completed a write of the key before invoking the read; Violations
	// those that returned an older version than the client's newest such
	// write.
	Checked    int       `json:"checked"`
	Violations int       `json:"violations"`
	Rate       float64   `json:"rate"`
	Examples   []Anomaly `json:"examples,omitempty"`
}

// RYWResult is the read-your-writes violation rate per option (Wada
// 2.1.1.1; Terry et al.'s session guarantee).
type RYWResult struct {
	Options []RYWOption `json:"options"`
}

// ReadYourWrites finds reads that returned an older version of a key than
// the newest write of it the same client completed (returned OK) before
// invoking the read.
func ReadYourWrites(ops []Op, cfg Config) RYWResult {
	return analyse(ops, cfg, readYourWrites)
}

func readYourWrites(h *history, cfg Config) RYWResult {
	type ownWrite struct {
		returnUS int64
		version  int
	}
	byOption := map[string]*RYWOption{}
	for _, ck := range h.clientKeys {
		pending := map[string][]ownWrite{}
		best := map[string]int{}
		for _, i := range h.clients[ck] {
			op := h.ops[i]
			if op.Kind == KindWrite {
				if op.OK {
					reg := h.regs[regKey{op.Run, op.Key}]
					pending[op.Key] = append(pending[op.Key], ownWrite{op.ReturnUS, reg.version[op.Value]})
				}
				continue
			}
			rc, isRead := h.reads[i]
			if !isRead || !rc.known {
				continue
			}
			// Ops come in order of CallUS, so a write that returned before
			// this read was invoked returned before every later one too.
			kept := pending[op.Key][:0]
			for _, w := range pending[op.Key] {
				if w.returnUS < op.CallUS {
					best[op.Key] = max(best[op.Key], w.version)
				} else {
					kept = append(kept, w)
				}
			}
			pending[op.Key] = kept
			own, wrote := best[op.Key]
			if !wrote {
				continue
			}
			o := byOption[op.Option]
			if o == nil {
				o = &RYWOption{Option: op.Option}
				byOption[op.Option] = o
			}
			o.Checked++
			if rc.version < own {
				o.Violations++
				if len(o.Examples) < cfg.MaxExamples {
					reg := h.regs[regKey{op.Run, op.Key}]
					o.Examples = append(o.Examples, Anomaly{
						Kind: "read-your-writes", Index: i, Run: op.Run, Client: op.Client, Key: keyfmt.JSON(op.Key),
						Value: keyfmt.JSON(op.Value), CallUS: op.CallUS,
						Detail: fmt.Sprintf("the client had written %q", h.ops[reg.writes[own-1]].Value),
					})
				}
			}
		}
	}
	var res RYWResult
	for _, option := range sortedOptions(byOption) {
		o := byOption[option]
		o.Rate = fraction(o.Violations, o.Checked)
		res.Options = append(res.Options, *o)
	}
	return res
}

// WriteText renders the violation rate of every option.
func (r RYWResult) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "Read-your-writes (Wada 2.1.1.1): reads older than the reader's own latest completed write")
	if len(r.Options) == 0 {
		fmt.Fprintln(tw, "  no client read a key it had written")
	}
	for _, o := range r.Options {
		fmt.Fprintf(tw, "  %s\t%d/%d violations\t%s\t\n", optionLabel(o.Option), o.Violations, o.Checked, pct(o.Rate, o.Checked))
	}
	return tw.Flush()
}

func (r RYWResult) String() string { return formatString(r) }

// InterElementOption is one column group of Wada Table 3.
type InterElementOption struct {
	// Option is the reads' option ("x+y" when they differ).
	Option       string `json:"option"`
	Observations int    `json:"observations"`
	// A: X and Y fresh; B: X fresh, Y stale; C: X stale, Y fresh; D: both
	// stale (Wada 3.2).
	A     int     `json:"a"`
	B     int     `json:"b"`
	C     int     `json:"c"`
	D     int     `json:"d"`
	AFrac float64 `json:"a_frac"`
	BFrac float64 `json:"b_frac"`
	CFrac float64 `json:"c_frac"`
	DFrac float64 `json:"d_frac"`
}

// InterElementResult is Wada Table 3: the consistency of two elements X
// and Y that one writer writes, as one reader sees them.
type InterElementResult struct {
	KeyX keyfmt.JSON `json:"key_x"`
	KeyY keyfmt.JSON `json:"key_y"`
	// Skipped says why the analysis did not run, empty when it did.
	Skipped string               `json:"skipped,omitempty"`
	Window  RangeMS              `json:"window"`
	Options []InterElementOption `json:"options"`
}

// InterElement computes Wada Table 3. An observation is a read of X and a
// read of Y, OK, adjacent in one client's op sequence (in either order; a
// single call that reads both is recorded as two adjacent lines), both
// classified and both within Config.InterElementWindow of their reference
// writes. An op belongs to at most one observation.
func InterElement(ops []Op, cfg Config) InterElementResult {
	return analyse(ops, cfg, interElement)
}

func interElement(h *history, cfg Config) InterElementResult {
	res := InterElementResult{Window: cfg.InterElementWindow}
	x, y := cfg.InterElementKeys[0], cfg.InterElementKeys[1]
	if x == "" {
		x, y, res.Skipped = guessElements(h)
	}
	res.KeyX, res.KeyY = keyfmt.JSON(x), keyfmt.JSON(y)
	if res.Skipped != "" {
		return res
	}
	groups := map[string]*InterElementOption{}
	for _, ck := range h.clientKeys {
		seq := h.clients[ck]
		for j := 0; j+1 < len(seq); j++ {
			xi, yi := seq[j], seq[j+1]
			if h.ops[xi].Key == y && h.ops[yi].Key == x {
				xi, yi = yi, xi
			}
			xc, xRead := h.reads[xi]
			yc, yRead := h.reads[yi]
			if !xRead || !yRead || h.ops[xi].Key != x || h.ops[yi].Key != y {
				continue
			}
			j++ // both ops are used up
			if !xc.classified() || !yc.classified() ||
				!cfg.InterElementWindow.contains(xc.elapsedUS) || !cfg.InterElementWindow.contains(yc.elapsedUS) {
				continue
			}
			option := optionPair(h.ops[xi].Option, h.ops[yi].Option)
			g := groups[option]
			if g == nil {
				g = &InterElementOption{Option: option}
				groups[option] = g
			}
			g.Observations++
			switch xf, yf := xc.fresh(), yc.fresh(); {
			case xf && yf:
				g.A++
			case xf:
				g.B++
			case yf:
				g.C++
			default:
				g.D++
			}
		}
	}
	for _, option := range sortedOptions(groups) {
		g := groups[option]
		g.AFrac, g.BFrac = fraction(g.A, g.Observations), fraction(g.B, g.Observations)
		g.CFrac, g.DFrac = fraction(g.C, g.Observations), fraction(g.D, g.Observations)
		res.Options = append(res.Options, *g)
	}
	return res
}

// guessElements picks X and Y when the trace has exactly two keys: X is
// the key written first (Wada 3.2: the first item written is the one a
// second write flushes).
func guessElements(h *history) (x, y, skipped string) {
	keys := map[string]bool{}
	first := -1
	for i, op := range h.ops {
		if !h.valid[i] {
			continue
		}
		keys[op.Key] = true
		if op.Kind == KindWrite && (first < 0 || cmp.Less(op.CallUS, h.ops[first].CallUS)) {
			first = i
		}
	}
	if len(keys) != 2 {
		return "", "", fmt.Sprintf("the trace has %d keys, not 2; set InterElementKeys", len(keys))
	}
	if first < 0 {
		return "", "", "the trace has no writes"
	}
	x = h.ops[first].Key
	for k := range keys {
		if k != x {
			y = k
		}
	}
	return x, y, ""
}

// WriteText renders Table 3.
func (r InterElementResult) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if r.Skipped != "" {
		fmt.Fprintf(tw, "Two elements (Wada Table 3): skipped: %s\n", r.Skipped)
		return tw.Flush()
	}
	fmt.Fprintf(tw, "Two elements X=%q, Y=%q (Wada Table 3), reads within %s of a write\n", r.KeyX, r.KeyY, r.Window)
	if len(r.Options) == 0 {
		fmt.Fprintln(tw, "  no observations")
		return tw.Flush()
	}
	fmt.Fprintln(tw, "  option\tobservations\tA both fresh\tB X fresh, Y stale\tC X stale, Y fresh\tD both stale\t")
	for _, g := range r.Options {
		n := g.Observations
		fmt.Fprintf(tw, "  %s\t%d\t%s (%d)\t%s (%d)\t%s (%d)\t%s (%d)\t\n", optionLabel(g.Option), n,
			pct(g.AFrac, n), g.A, pct(g.BFrac, n), g.B, pct(g.CFrac, n), g.C, pct(g.DFrac, n), g.D)
	}
	return tw.Flush()
}

func (r InterElementResult) String() string { return formatString(r) }
