package bench

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/cosla/cosla/internal/lab/driver"
)

// PhaseName names a phase of a run.
type PhaseName string

// The phases of Run.
const (
	PhaseLoad PhaseName = "load"
	PhaseRun  PhaseName = "run"
)

// Stop says why a phase ended.
type Stop string

// The reasons a phase ends.
const (
	// StopComplete: every operation was issued and completed (the load's
	// RecordCount writes, or the run's Options.Operations).
	StopComplete Stop = "complete"
	// StopDuration: Options.Duration passed first.
	StopDuration Stop = "duration"
	// StopCanceled: the caller's context was cancelled.
	StopCanceled Stop = "canceled"
	// StopError: the phase could not start, or the target refused an
	// operation (driver.Op.Refused), which stops the driver.
	StopError Stop = "error"
)

// Setup names what a run measured: the store, and what its reads and
// writes are there.
type Setup struct {
	// Target names the store: cosla, cosla-nofsync, redis, etcd,
	// postgres.
	Target string `json:"target,omitempty"`
	// Read and Write say what the run's Gets and Puts were on it: a
	// store's read and write options (package adapters: "replica",
	// "async"...), or, on cosla, the Gets' SLA and replica choice and the
	// Puts' durability.
	Read  string `json:"read,omitempty"`
	Write string `json:"write,omitempty"`
	// Transport is "plaintext" or "TLS": how the clients reach the store.
	Transport string `json:"transport,omitempty"`
}

// String renders the setup for a line of text: "redis, reads replica,
// writes async, plaintext".
func (s Setup) String() string {
	text := fmt.Sprintf("%s, reads %s, writes %s", orDefault(s.Target, "target"), orDefault(s.Read, "default"), orDefault(s.Write, "default"))
	if s.Transport != "" {
		text += ", " + s.Transport
	}
	return text
}

func orDefault(s, def string) string {
	if s == "" {
		return "(" + def + ")"
	}
	return s
}

// Result is what Run measured. It is a plain snapshot: safe to copy, encode
// as JSON and compare.
type Result struct {
	Setup
	Seed    uint64 `json:"seed"`
	Clients int    `json:"clients"`
	// Workload is the effective workload, in properties-file form.
	Workload string `json:"workload"`
	// Load is nil when Options.Load was not set.
	Load *Phase `json:"load,omitempty"`
	Run  Phase  `json:"run"`
}

// Phase summarizes one phase.
type Phase struct {
	Name      PhaseName `json:"name"`
	Stop      Stop      `json:"stop"`
	ElapsedMS float64   `json:"elapsed_ms"`
	// Operations counts completed operations, failed ones included.
	// Operations cut short when the caller's context was cancelled (their
	// store call failed with context.Canceled once the driver had stopped)
	// are Aborted, not counted here or as errors.
	Operations uint64 `json:"operations"`
	Errors     uint64 `json:"errors"`
	Aborted    uint64 `json:"aborted"`
	// ThroughputOpsPerS is successful operations per second of the phase.
	// Failed ones are left out so that a store that fails fast does not
	// look fast.
	ThroughputOpsPerS float64 `json:"throughput_ops_per_s"`
	// Kinds has one entry per operation kind that completed at least once,
	// in workload.Kind order: the driver's statistics per step label (the
	// load phase's are YCSB's inserts).
	Kinds []KindStats `json:"kinds"`
	// CPU is what the processors did during the phase: the run phase's
	// only; nil where /proc could not be read, or for a phase shorter
	// than the kernel's clock tick (cpuBetween).
	CPU *CPU `json:"cpu,omitempty"`
}

// KindStats summarizes the operations of one kind.
type KindStats struct {
	Kind string `json:"kind"`
	// Operations counts completed operations of this kind, failed ones
	// included; Errors the failed ones.
	Operations uint64 `json:"operations"`
	Errors     uint64 `json:"errors"`
	// FirstError is the text of the first error of this kind, if any.
	FirstError string `json:"first_error,omitempty"`
	// LatencyMS is measured over the successful operations only, for the
	// same reason as Phase.ThroughputOpsPerS, by the driver's recorder (an
	// HDR histogram with three significant digits). It is zero when all
	// failed.
	LatencyMS driver.Latency `json:"latency_ms"`
	// LatencyCDF is their distribution, from the same histogram
	// (driver.Recorder.LatencyCDF); nil when all failed.
	LatencyCDF []driver.Quantile `json:"latency_cdf_ms,omitempty"`
}

// WriteText writes r as aligned text: per phase a summary line and a table
// with one row per operation kind, latencies in milliseconds.
func (r Result) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	if r.Target != "" {
		fmt.Fprintf(tw, "%s\n", r.Setup)
	}
	fmt.Fprintf(tw, "seed %d, %d clients\n", r.Seed, r.Clients)
	phases := []Phase{r.Run}
	if r.Load != nil {
		phases = []Phase{*r.Load, r.Run}
	}
	for _, p := range phases {
		fmt.Fprintf(tw, "\n%s: %d ops in %.3fs (stop: %s), %.1f ops/s, %d errors, %d aborted\n",
			p.Name, p.Operations, p.ElapsedMS/1000, p.Stop, p.ThroughputOpsPerS, p.Errors, p.Aborted)
		fmt.Fprint(tw, "op\tops\terrors\tmean_ms\tp50_ms\tp90_ms\tp95_ms\tp99_ms\tp99.9_ms\tmax_ms\t\n")
		for _, k := range p.Kinds {
			l := k.LatencyMS
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", k.Kind, k.Operations, k.Errors,
				ms(l.Mean), ms(l.P50), ms(l.P90), ms(l.P95), ms(l.P99), ms(l.P999), ms(l.Max))
		}
		for _, k := range p.Kinds {
			if k.FirstError != "" {
				fmt.Fprintf(tw, "first %s error: %s\n", k.Kind, k.FirstError)
			}
		}
		if p.CPU != nil {
			fmt.Fprintf(tw, "cpu: %s\n", p.CPU)
			for _, w := range p.CPU.Warnings() {
				fmt.Fprintf(tw, "warning: %s\n", w)
			}
		}
	}
	return tw.Flush()
}

func ms(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
