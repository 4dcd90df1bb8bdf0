package experiment

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/cosla/cosla/internal/driver"
	"github.com/cosla/cosla/internal/hlc"
)

// The windows output judges a run as CPQ's target SLA would (CPQ 1:
// "reads have 95th-percentile latency at most L and return stale values
// at most a fraction S of the time"), window by window, so that a tuner
// that adapts to changing load and latency can be set beside every fixed
// choice (the cpq-tuner preset).

// TargetsSpec is the target the windows output judges runs by.
type TargetsSpec struct {
	// ReadP95 is L, Stale is S.
	ReadP95 time.Duration `yaml:"read_p95"`
	Stale   float64       `yaml:"stale"`
	// Window is the length of a window. Default 1s.
	Window time.Duration `yaml:"window"`
}

func (t *TargetsSpec) validate() error {
	if t.Window == 0 {
		t.Window = time.Second
	}
	switch {
	case t.ReadP95 <= 0:
		return invalid("targets.read_p95", "%s is not positive", t.ReadP95)
	case !(t.Stale >= 0 && t.Stale <= 1):
		return invalid("targets.stale", "%v outside [0, 1]", t.Stale)
	case t.Window < 0:
		return invalid("targets.window", "%s is negative", t.Window)
	}
	return nil
}

// windowOp is what the windows output keeps of an op.
type windowOp struct {
	key        string
	put, ok    bool
	start, end time.Duration
	ts         hlc.Timestamp
}

func newWindowOp(op *driver.Op) windowOp {
	return windowOp{key: op.Key, put: op.Kind == driver.Put, ok: op.Err == nil, start: op.Start, end: op.End, ts: op.TS}
}

// Windows is a run's judgement window by window.
type Windows struct {
	// Count counts the windows with reads; MetBoth, MetLatency and
	// MetStale those whose reads met both targets, the latency target and
	// the staleness target.
	Count, MetBoth, MetLatency, MetStale int
	// StaleFraction is the share of stale reads over the whole run.
	StaleFraction float64 `json:"stale_fraction"`
}

// windowsOf judges the ops window by window from from on. A read is stale
// when it returned a version older than a Put of its key that completed
// (acknowledged) before the read started: the reads that CPQ's Gamma
// counts as stale, judged exactly because the trace has one clock.
func windowsOf(ops []windowOp, from time.Duration, t TargetsSpec) Windows {
	type put struct {
		end time.Duration
		ts  hlc.Timestamp
	}
	puts := map[string][]put{}
	for _, op := range ops {
		if op.put && op.ok {
			puts[op.key] = append(puts[op.key], put{op.end, op.ts})
		}
	}
	// Per key, by end, with each entry's ts raised to the largest so far.
	for _, ps := range puts {
		slices.SortFunc(ps, func(a, b put) int { return int(a.end - b.end) })
		for i := 1; i < len(ps); i++ {
			ps[i].ts = hlc.Max(ps[i].ts, ps[i-1].ts)
		}
	}
	type window struct {
		latencies []time.Duration
		stale     int
	}
	var windows []window
	reads, stale := 0, 0
	for _, op := range ops {
		if op.put || !op.ok || op.start < from {
			continue
		}
		i := int((op.start - from) / t.Window)
		for len(windows) <= i {
			windows = append(windows, window{})
		}
		w := &windows[i]
		w.latencies = append(w.latencies, op.end-op.start)
		reads++
		ps := puts[op.key]
		n, _ := slices.BinarySearchFunc(ps, op.start, func(p put, start time.Duration) int { return int(p.end - start) })
		if n > 0 && op.ts.Less(ps[n-1].ts) {
			w.stale++
			stale++
		}
	}
	var res Windows
	for _, w := range windows {
		if len(w.latencies) == 0 {
			continue
		}
		res.Count++
		slices.Sort(w.latencies)
		p95 := w.latencies[(len(w.latencies)*95+99)/100-1]
		lat := p95 <= t.ReadP95
		fresh := float64(w.stale) <= t.Stale*float64(len(w.latencies))
		if lat {
			res.MetLatency++
		}
		if fresh {
			res.MetStale++
		}
		if lat && fresh {
			res.MetBoth++
		}
	}
	if reads > 0 {
		res.StaleFraction = float64(stale) / float64(reads)
	}
	return res
}

// windowsTable sets each run's share of windows that met the targets.
func windowsTable(s *Scenario, r *Result) Table {
	t := Table{Name: "windows", Title: fmt.Sprintf("Windows of %s meeting read p95 <= %s and stale reads <= %g%% (CPQ 1's target)",
		s.Targets.Window, s.Targets.ReadP95, 100*s.Targets.Stale),
		Header: append(runColumns(s), "windows", "met both %", "met latency %", "met staleness %", "read p95 ms", "stale reads %")}
	pct := func(n, of int) string {
		if of == 0 {
			return ""
		}
		return f1(100 * float64(n) / float64(of))
	}
	for _, run := range r.Runs {
		w := run.Windows
		if w == nil {
			continue
		}
		p95 := ""
		for _, o := range run.Ops {
			if o.Op == "get" {
				p95 = f3(o.LatencyMS.P95)
			}
		}
		t.Rows = append(t.Rows, append(runCells(s, run), strconv.Itoa(w.Count), pct(w.MetBoth, w.Count),
			pct(w.MetLatency, w.Count), pct(w.MetStale, w.Count), p95, f3(100*w.StaleFraction)))
	}
	t.Caption = "A read is stale when it returned a version older than a Put of its key acknowledged before the read began; a window meets a target over the reads that began in it. The read p95 and stale columns are over the whole run."
	return t
}
