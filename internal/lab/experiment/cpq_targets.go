package experiment

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/lab/driver"
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

// validate checks the targets of field (targets or cluster.targets).
func (t *TargetsSpec) validate(field string) error {
	if t.Window == 0 {
		t.Window = time.Second
	}
	switch {
	case t.ReadP95 <= 0:
		return invalid(field+".read_p95", "%s is not positive", t.ReadP95)
	case !(t.Stale >= 0 && t.Stale <= 1):
		return invalid(field+".stale", "%v outside [0, 1]", t.Stale)
	case t.Window < 0:
		return invalid(field+".window", "%s is negative", t.Window)
	}
	return nil
}

// targetsFor returns the targets of a mode: cluster.targets on a cluster
// if set, else targets, which must be set.
func targetsFor(s *Scenario, cluster bool) TargetsSpec {
	if cluster && s.Cluster.Targets != nil {
		return *s.Cluster.Targets
	}
	return *s.Targets
}

// windowOp is what the windows output keeps of an op.
type windowOp struct {
	key        string
	put, ok    bool
	start, end time.Duration
	ts         hlc.Timestamp
	// level is the number of replicas a Get asked (driver.Op.Level).
	level int
}

func newWindowOp(op *driver.Op) windowOp {
	return windowOp{key: op.Key, put: op.Kind == driver.Put, ok: op.Err == nil, start: op.Start, end: op.End, ts: op.TS, level: op.Level}
}

// Windows is a run's judgement window by window.
type Windows struct {
	// Count counts the windows with reads; MetBoth, MetLatency and
	// MetStale those whose reads met both targets, the latency target and
	// the staleness target.
	Count, MetBoth, MetLatency, MetStale int
	// StaleFraction is the share of stale reads over the whole run.
	StaleFraction float64 `json:"stale_fraction"`
	// Each is every window with reads, in order.
	Each []Window `json:"each,omitempty"`
}

// Window is one window's judgement.
type Window struct {
	// StartS is the window's start, in seconds from the warmup's end.
	StartS float64 `json:"start_s"`
	Reads  int     `json:"reads"`
	// P95MS is the p95 of its reads' latency, StaleFraction the share
	// of them stale, QuorumFraction the share that asked more than one
	// replica (for CPQ(p), an estimate of p; for the tuner, the p it
	// chose on average).
	P95MS          float64 `json:"p95_ms"`
	StaleFraction  float64 `json:"stale_fraction"`
	QuorumFraction float64 `json:"quorum_fraction"`
	// Latency and Fresh say whether the window met the latency target
	// and the staleness target.
	Latency bool `json:"latency"`
	Fresh   bool `json:"fresh"`
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
		latencies     []time.Duration
		stale, quorum int
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
		if op.level > 1 {
			w.quorum++
		}
		reads++
		ps := puts[op.key]
		n, _ := slices.BinarySearchFunc(ps, op.start, func(p put, start time.Duration) int { return int(p.end - start) })
		if n > 0 && op.ts.Less(ps[n-1].ts) {
			w.stale++
			stale++
		}
	}
	var res Windows
	for i, w := range windows {
		if len(w.latencies) == 0 {
			continue
		}
		res.Count++
		slices.Sort(w.latencies)
		n := len(w.latencies)
		p95 := w.latencies[(n*95+99)/100-1]
		lat := p95 <= t.ReadP95
		fresh := float64(w.stale) <= t.Stale*float64(n)
		res.Each = append(res.Each, Window{StartS: (time.Duration(i) * t.Window).Seconds(), Reads: n,
			P95MS: float64(p95) / 1e6, StaleFraction: float64(w.stale) / float64(n), QuorumFraction: float64(w.quorum) / float64(n),
			Latency: lat, Fresh: fresh})
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
	tg := targetsFor(s, r.Mode == "cluster")
	t := Table{Name: "windows", Title: fmt.Sprintf("Windows of %s meeting read p95 <= %s and stale reads <= %g%% (CPQ 1's target)",
		tg.Window, tg.ReadP95, 100*tg.Stale),
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

// windowsEachTable shows each run window by window: which targets the
// window met (L for latency, S for staleness, a dot for a miss) and the
// share of its reads that asked more than one replica, so that a tuner's
// p can be followed through the schedule's phases.
func windowsEachTable(s *Scenario, r *Result) Table {
	window := targetsFor(s, r.Mode == "cluster").Window
	t := Table{Name: "windows-each", Title: fmt.Sprintf("Each window of %s: targets met (L latency, S staleness, . missed) and the share of reads at QUORUM", window),
		Header: runColumns(s)}
	most := 0
	for _, run := range r.Runs {
		if run.Windows != nil && len(run.Windows.Each) > most {
			most = len(run.Windows.Each)
		}
	}
	for i := range most {
		t.Header = append(t.Header, (time.Duration(i) * window).String())
	}
	for _, run := range r.Runs {
		if run.Windows == nil {
			continue
		}
		row := runCells(s, run)
		for _, w := range run.Windows.Each {
			code := []byte("..")
			if w.Latency {
				code[0] = 'L'
			}
			if w.Fresh {
				code[1] = 'S'
			}
			row = append(row, string(code)+" "+f2(w.QuorumFraction))
		}
		for len(row) < len(t.Header) {
			row = append(row, "")
		}
		t.Rows = append(t.Rows, row)
	}
	t.Caption = "Columns are the windows' starts, from the warmup's end. A window's QUORUM share is the fraction of its reads that asked more than one replica: p for a fixed cpq(p), the tuner's average p for cpq-tune."
	return t
}

// windowsMeanTable sets each (point, SLA, client, strategy) over its
// seeds: the mean share of windows meeting both targets with its 95%
// confidence interval, and the least and most of any seed.
func windowsMeanTable(s *Scenario, r *Result) Table {
	window := targetsFor(s, r.Mode == "cluster").Window
	var h []string
	if s.Sweep != nil {
		h = append(h, s.Sweep.Param)
	}
	t := Table{Name: "windows-mean", Title: fmt.Sprintf("Over %d seeds: windows of %s meeting both targets, mean ± 95%% confidence interval", s.Repeat, window),
		Header: append(h, "sla", "client", "strategy", "seeds", "met both %", "min %", "max %", "met latency %", "met staleness %")}
	type key struct{ point, sla, client, strategy string }
	var order []key
	byKey := map[key][]*Windows{}
	for _, run := range r.Runs {
		if run.Windows == nil || run.Windows.Count == 0 {
			continue
		}
		k := key{run.Point, run.SLA, run.Client, run.Strategy}
		if _, ok := byKey[k]; !ok {
			order = append(order, k)
		}
		byKey[k] = append(byKey[k], run.Windows)
	}
	for _, k := range order {
		var both, lat, fresh []float64
		for _, w := range byKey[k] {
			both = append(both, 100*float64(w.MetBoth)/float64(w.Count))
			lat = append(lat, 100*float64(w.MetLatency)/float64(w.Count))
			fresh = append(fresh, 100*float64(w.MetStale)/float64(w.Count))
		}
		e := estimate(both)
		var row []string
		if s.Sweep != nil {
			row = append(row, k.point)
		}
		t.Rows = append(t.Rows, append(row, k.sla, k.client, k.strategy, strconv.Itoa(len(both)), f1(e.Mean)+" ± "+f1(e.CI95),
			f1(slices.Min(both)), f1(slices.Max(both)), f1(estimate(lat).Mean), f1(estimate(fresh).Mean)))
	}
	return t
}
