package measure

import (
	"errors"
	"fmt"
	"io"
	"strings"
)

// Summary describes a trace.
type Summary struct {
	Ops          int     `json:"ops"`
	Writes       int     `json:"writes"`
	Reads        int     `json:"reads"`
	Failed       int     `json:"failed"`
	Runs         int     `json:"runs"`
	Clients      int     `json:"clients"`
	Keys         int     `json:"keys"`
	FirstCallUS  int64   `json:"first_call_us"`
	LastReturnUS int64   `json:"last_return_us"`
	DurationS    float64 `json:"duration_s"`
}

// Report is every analysis of one trace.
type Report struct {
	// Config is the effective configuration.
	Config          Config                `json:"config"`
	Summary         Summary               `json:"summary"`
	Anomalies       Anomalies             `json:"anomalies"`
	Freshness       FreshnessResult       `json:"freshness"`
	MonotonicReads  MonotonicResult       `json:"monotonic_reads"`
	ReadYourWrites  RYWResult             `json:"read_your_writes"`
	InterElement    InterElementResult    `json:"inter_element"`
	Gamma           GammaResult           `json:"gamma"`
	Linearizability LinearizabilityResult `json:"linearizability"`
	Latency         LatencyResult         `json:"latency"`
	// Errors lists what kept an analysis from running: an invalid Config
	// (then nothing ran), a history too large for Porcupine.
	Errors []string `json:"errors,omitempty"`
}

// Analyze runs every analysis over ops. It never fails: an invalid Config
// or an analysis that cannot run is reported in Report.Errors, and ops
// that cannot be analysed in Report.Anomalies.
func Analyze(ops []Op, cfg Config) Report {
	cfg = cfg.effective()
	rep := Report{Config: cfg}
	if err := cfg.Validate(); err != nil {
		rep.Errors = append(rep.Errors, err.Error())
		return rep
	}
	h := newHistory(ops, cfg.MaxExamples)
	rep.Summary = summarize(h)
	rep.Anomalies = h.anomalies
	rep.Freshness = freshness(h, cfg)
	rep.MonotonicReads = monotonicReads(h, cfg)
	rep.ReadYourWrites = readYourWrites(h, cfg)
	rep.InterElement = interElement(h, cfg)
	rep.Gamma = gamma(h, cfg)
	lin, err := CheckLinearizable(ops, cfg)
	rep.Linearizability = lin
	if err != nil && !errors.Is(err, ErrHistoryTooLarge) {
		rep.Errors = append(rep.Errors, err.Error())
	}
	rep.Latency = Latency(ops)
	return rep
}

func summarize(h *history) Summary {
	s := Summary{Clients: len(h.clientKeys)}
	runs, keys := map[string]bool{}, map[string]bool{}
	first := true
	for i, op := range h.ops {
		if !h.valid[i] {
			continue
		}
		s.Ops++
		if op.Kind == KindWrite {
			s.Writes++
		} else {
			s.Reads++
		}
		if !op.OK {
			s.Failed++
		}
		runs[op.Run], keys[op.Key] = true, true
		if first || op.CallUS < s.FirstCallUS {
			s.FirstCallUS = op.CallUS
		}
		if first || op.ReturnUS > s.LastReturnUS {
			s.LastReturnUS = op.ReturnUS
		}
		first = false
	}
	s.Runs, s.Keys = len(runs), len(keys)
	s.DurationS = float64(s.LastReturnUS-s.FirstCallUS) / 1e6
	return s
}

// WriteText renders the whole report for a human.
func (r Report) WriteText(w io.Writer) error {
	var b strings.Builder
	if len(r.Errors) > 0 {
		fmt.Fprintln(&b, "Errors:")
		for _, e := range r.Errors {
			fmt.Fprintf(&b, "  %s\n", e)
		}
	}
	s := r.Summary
	fmt.Fprintf(&b, "Trace: %d ops (%d writes, %d reads, %d failed), %d runs, %d clients, %d keys, %.3f s\n",
		s.Ops, s.Writes, s.Reads, s.Failed, s.Runs, s.Clients, s.Keys, s.DurationS)
	a := r.Anomalies
	fmt.Fprintf(&b, "Anomalies: %d invalid ops, %d values written more than once, %d reads of never-written values, %d reads before their write\n",
		a.InvalidOps, a.DuplicateValues, a.NeverWrittenReads, a.FutureReads)
	for _, ex := range a.Examples {
		fmt.Fprintf(&b, "  %s: op %d client %q key %q value %q call_us %d: %s\n", ex.Kind, ex.Index, ex.Client, ex.Key, ex.Value, ex.CallUS, ex.Detail)
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	for _, part := range []textWriter{r.Freshness, r.MonotonicReads, r.ReadYourWrites, r.InterElement, r.Gamma, r.Linearizability, r.Latency} {
		if _, err := io.WriteString(w, "\n"); err != nil {
			return err
		}
		if err := part.WriteText(w); err != nil {
			return err
		}
	}
	return nil
}

func (r Report) String() string { return formatString(r) }
