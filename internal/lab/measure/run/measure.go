package run

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cosla/cosla/internal/lab/adapters"
	"github.com/cosla/cosla/internal/lab/measure"
)

// Config is one `cosla measure run`: the target, the workload, and where
// the run writes. The zero value of every field but Target and Out takes
// the default its comment states (EnsureDefaults).
type Config struct {
	// Target names the store measured (Targets).
	Target string
	// Preset names the workload preset the run started from, if any; the
	// simpledb preset in the simulator prints its summary beside Wada's.
	Preset   string
	Workload Workload
	// Seed seeds a simulated run, and a sweep's choice of reads and
	// writes.
	Seed uint64
	// Out is the directory of trace.jsonl, trace.csv and report.json, and
	// of the servers (Out/servers) and the workers' traces (Out/workers).
	Out string
	// Connect, for a store of adapters' registry, lists the addresses of
	// servers the user runs (adapters.Connect): the run measures them
	// instead of starting its own.
	Connect []string
	// ClusterDir or ClientConfig, WriterSite and ReaderSite locate a
	// cosla cluster (OpenCluster).
	ClusterDir, ClientConfig, WriterSite, ReaderSite string
	// Lag is the replica lag of target mem.
	Lag time.Duration
	// Sweep, if set, runs a load sweep over these client counts instead
	// (LoadSweep), each client at ClientHz (default 1) with ReadFraction
	// reads (default 0.99).
	Sweep                  []int
	ClientHz, ReadFraction float64
	// Spawn starts a worker process that runs Worker(w)
	// (PlacementProcesses).
	Spawn func(ctx context.Context, w WorkerConfig) (Process, error)
	// Log receives the run's messages and progress lines. Default none.
	Log io.Writer
	// Command is the command line, for report.json and the rerun hint.
	Command string
}

// EnsureDefaults returns a copy of c with every zero field given its
// default (the options idiom of package node). A live run with no
// keys gets a key no earlier run wrote, so that every key starts empty
// (measure: the empty value is every key's initial state).
func (c Config) EnsureDefaults() Config {
	if t, err := LookupTarget(c.Target); err == nil && t.Live() && len(c.Workload.Keys) == 0 {
		c.Workload.Keys = []string{fmt.Sprintf("cosla-measure-%d", time.Now().UnixMicro())}
	}
	c.Workload = c.Workload.EnsureDefaults()
	c.ClientHz = cmp.Or(c.ClientHz, 1)
	c.ReadFraction = cmp.Or(c.ReadFraction, 0.99)
	if c.Log == nil {
		c.Log = io.Discard
	}
	return c
}

// Validate reports the first thing wrong with the configuration; every
// error wraps ErrInvalidWorkload.
func (c Config) Validate() error {
	t, err := LookupTarget(c.Target)
	switch {
	case err != nil:
		return err
	case c.Out == "":
		return fmt.Errorf("%w: no output directory", ErrInvalidWorkload)
	}
	if err := c.Workload.Validate(); err != nil {
		return err
	}
	if c.Sweep != nil {
		if !t.Live() {
			return fmt.Errorf("%w: a sweep needs a live target: the simulator models no server load", ErrInvalidWorkload)
		}
		for _, n := range c.Sweep {
			if n < 1 || n > MaxClients {
				return fmt.Errorf("%w: client count %d not in [1, %d]", ErrInvalidWorkload, n, MaxClients)
			}
		}
	}
	if len(c.Connect) > 0 && t.kind != kindStore {
		return fmt.Errorf("%w: target %s has no servers to connect to (--connect is for %s)", ErrInvalidWorkload, t.Name, adapters.StoreNames())
	}
	if t.Live() && c.Workload.Placement == PlacementProcesses && t.kind == kindMem {
		return fmt.Errorf("%w: target %s lives in one process: use placement thread or threads", ErrInvalidWorkload, t.Name)
	}
	return t.checkOptions(c.Workload.ReadOptions, c.Workload.WriteOption)
}

// Measure runs the benchmark, writes Out/trace.jsonl as it goes, then
// Out/trace.csv and Out/report.json, and returns the report. A live run
// interrupted by ctx keeps what it did and is reported.
func Measure(ctx context.Context, c Config) (*ReportFile, error) {
	c = c.EnsureDefaults()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	t, _ := LookupTarget(c.Target)
	w := c.Workload
	if err := os.MkdirAll(c.Out, 0o755); err != nil {
		return nil, err
	}
	traceFile, err := os.Create(filepath.Join(c.Out, "trace.jsonl"))
	if err != nil {
		return nil, err
	}
	defer traceFile.Close()
	meta := map[string]string{
		"target": c.Target, "preset": c.Preset, "placement": string(w.Placement),
		"read_options": strings.Join(w.ReadOptions, ","), "write_option": w.WriteOption,
		"writers": strconv.Itoa(w.Writers), "readers": strconv.Itoa(w.Readers),
		"write_every": w.WriteEvery.String(), "read_hz": strconv.FormatFloat(w.ReadHz, 'g', -1, 64),
		"keys": strings.Join(w.Keys, ","), "duration": w.Duration.String(), "max_ops": strconv.Itoa(w.MaxOps),
		"command": c.Command, "started_at": time.Now().UTC().Format(time.RFC3339),
	}
	if len(c.Connect) > 0 {
		meta["connect"] = strings.Join(c.Connect, ",")
	}
	progress := func(p Progress) {
		fmt.Fprintf(c.Log, "  %8.1fs  %d ops (%d writes, %d reads, %d failed)\n", p.Elapsed.Seconds(), p.Ops, p.Writes, p.Reads, p.Failed)
	}
	var ops []measure.Op
	var sweep *measure.SweepResult
	var seed *uint64
	if !t.Live() {
		fmt.Fprintf(c.Log, "cosla measure: simulated run, seed %d: %s\n", c.Seed, w)
		res, err := Sim(SimOptions{Workload: w, Seed: c.Seed, Trace: traceFile, Progress: progress, ProgressEvery: 2 * time.Minute})
		if err != nil {
			return nil, err
		}
		ops, seed = res.Ops, &c.Seed
		meta["seed"] = strconv.FormatUint(c.Seed, 10)
		meta["trace_hash"] = fmt.Sprintf("%016x", res.TraceHash)
		meta["topology"] = res.Topology.Name
		fmt.Fprintf(c.Log, "seed %d, trace hash %016x; rerun with: %s\n", c.Seed, res.TraceHash, c.Command)
	} else {
		l, name, err := c.open(ctx, t)
		if err != nil {
			return nil, err
		}
		if l.store != nil {
			defer l.store.Close()
		}
		meta["store"] = name
		if c.Sweep != nil {
			fmt.Fprintf(c.Log, "cosla measure: load sweep of %s, clients %v, %g Hz each, %.0f%% reads, %s per point\n",
				name, c.Sweep, c.ClientHz, 100*c.ReadFraction, w.Duration)
			var inputs []measure.SweepInput
			ops, inputs, err = LoadSweep(ctx, SweepOptions{Store: l.store, Cluster: l.cluster, Clients: c.Sweep,
				ClientHz: c.ClientHz, ReadFraction: c.ReadFraction, ReadOptions: w.ReadOptions, WriteOption: w.WriteOption,
				Policy: w.Policy, Key: w.Keys[0], Duration: w.Duration, MaxOps: w.MaxOps, Seed: c.Seed, Trace: traceFile,
				Progress: func(p Progress) {
					fmt.Fprintf(c.Log, "  %s: %d ops, %d failed, %.1fs\n", p.Run, p.Ops, p.Failed, p.Elapsed.Seconds())
				}})
			if err != nil {
				return nil, err
			}
			sr := measure.Sweep(inputs)
			sweep = &sr
			counts := make([]string, len(c.Sweep))
			for i, n := range c.Sweep {
				counts[i] = strconv.Itoa(n)
			}
			meta["sweep"], meta["client_hz"], meta["read_fraction"] = strings.Join(counts, ","), fmt.Sprint(c.ClientHz), fmt.Sprint(c.ReadFraction)
		} else {
			fmt.Fprintf(c.Log, "cosla measure: %s: %s\n", name, w)
			lo := LiveOptions{Workload: w, Store: l.store, Cluster: l.cluster, Trace: traceFile, Progress: progress,
				WorkDir: filepath.Join(c.Out, "workers")}
			if w.Placement == PlacementProcesses && c.Spawn != nil {
				var addrs []string
				if r, ok := l.store.(adapters.Remote); ok {
					addrs = r.Addrs()
				}
				lo.Spawn = func(ctx context.Context, wc WorkerConfig) (Process, error) {
					wc.Target, wc.ClusterDir, wc.ClientConfig, wc.Connect = c.Target, c.ClusterDir, c.ClientConfig, addrs
					return c.Spawn(ctx, wc)
				}
			}
			if ops, err = Live(ctx, lo); err != nil {
				return nil, err
			}
			if w.Placement == PlacementProcesses {
				// The workers wrote their own traces; the merged one
				// replaces what was streamed (nothing, for this placement).
				if err := rewriteTrace(traceFile, ops); err != nil {
					return nil, err
				}
			}
		}
	}
	if err := traceFile.Sync(); err != nil {
		return nil, err
	}
	weak, strong := weakStrong(w.ReadOptions)
	rf, err := WriteOutputs(c.Out, ops, meta, weak, strong, sweep)
	if err != nil {
		return nil, err
	}
	rf.Wada.Target, rf.Wada.Seed = c.Target, seed
	fmt.Fprintf(c.Log, "cosla measure: %d ops; wrote %s\n", len(ops), strings.Join([]string{
		filepath.Join(c.Out, "trace.jsonl"), filepath.Join(c.Out, "trace.csv"), filepath.Join(c.Out, FileName)}, ", "))
	return rf, nil
}

// open starts or connects to a live target, and names it.
func (c *Config) open(ctx context.Context, t Target) (live, string, error) {
	if t.kind == kindCosla {
		cl, err := OpenCluster(c.ClusterDir, c.ClientConfig, c.WriterSite, c.ReaderSite)
		if err != nil {
			return live{}, "", err
		}
		return live{cluster: cl}, cl.Name(), nil
	}
	s, err := t.start(ctx, serversDir(c.Out), c.Connect, c.Lag)
	if err != nil {
		return live{}, "", err
	}
	return live{store: s}, s.Name(), nil
}

func rewriteTrace(f *os.File, ops []measure.Op) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	return measure.WriteJSONL(f, ops)
}

// FileName is the name of a run's report in its directory (package
// report reads it).
const FileName = "report.json"

// ReportFile is Out/report.json: measure.Report's fields, the Wada
// summary, the sweep if any, and the run's metadata.
type ReportFile struct {
	measure.Report
	Wada  *Summary             `json:"wada_summary,omitempty"`
	Sweep *measure.SweepResult `json:"sweep,omitempty"`
	Meta  map[string]string    `json:"meta,omitempty"`
}

// WriteOutputs analyses ops and writes dir/trace.csv and dir/report.json;
// weak and strong name the summary's read options (Summarize). It is the
// one writer of report.json.
func WriteOutputs(dir string, ops []measure.Op, meta map[string]string, weak, strong string, sweep *measure.SweepResult) (*ReportFile, error) {
	rep := measure.Analyze(ops, AnalysisConfig())
	s := Summarize(ops, rep, weak, strong)
	rf := &ReportFile{Report: rep, Wada: &s, Sweep: sweep, Meta: meta}
	csvFile, err := os.Create(filepath.Join(dir, "trace.csv"))
	if err != nil {
		return nil, err
	}
	if err := measure.WriteCSV(csvFile, ops); err != nil {
		csvFile.Close()
		return nil, err
	}
	if err := csvFile.Close(); err != nil {
		return nil, err
	}
	data, err := json.MarshalIndent(rf, "", "  ")
	if err != nil {
		return nil, err
	}
	return rf, os.WriteFile(filepath.Join(dir, FileName), append(data, '\n'), 0o644)
}

// AnalyzeFile is Analyze of the JSONL trace at path.
func AnalyzeFile(path string) (*ReportFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ops, err := measure.ReadJSONL(f)
	if err != nil {
		return nil, err
	}
	return Analyze(ops), nil
}

// Analyze is the report of a trace alone (`cosla measure analyze`): the
// summary's read options are picked from the reads' options.
func Analyze(ops []measure.Op) *ReportFile {
	var options []string
	for _, op := range ops {
		if op.Kind == measure.KindRead && !slices.Contains(options, op.Option) {
			options = append(options, op.Option)
		}
	}
	weak, strong := weakStrong(options)
	rep := measure.Analyze(ops, AnalysisConfig())
	s := Summarize(ops, rep, weak, strong)
	return &ReportFile{Report: rep, Wada: &s}
}

// WriteText renders the report, the sweep if any, and the summary, beside
// Wada's SimpleDB numbers if paper is set.
func (rf *ReportFile) WriteText(w io.Writer, paper bool) error {
	if err := rf.Report.WriteText(w); err != nil {
		return err
	}
	if rf.Sweep != nil {
		fmt.Fprintln(w)
		if err := rf.Sweep.WriteText(w); err != nil {
			return err
		}
	}
	fmt.Fprintln(w)
	var ref *Summary
	if paper {
		ref = &PaperSimpleDB
	}
	return rf.Wada.WriteText(w, ref)
}

// weakStrong picks the summary's weak and consistent read options: a
// known pair when both are present, else the first two.
func weakStrong(options []string) (weak, strong string) {
	for _, pair := range [][2]string{{"eventual", "consistent"}, {"replica", "primary"}, {"serializable", "linearizable"}, {"standby", "primary"}} {
		if slices.Contains(options, pair[0]) && slices.Contains(options, pair[1]) {
			return pair[0], pair[1]
		}
	}
	if len(options) > 0 {
		weak = options[0]
	}
	if len(options) > 1 {
		strong = options[1]
	}
	return weak, strong
}
