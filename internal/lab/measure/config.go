package measure

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// RangeMS is the half-open interval [FromMS, ToMS) of milliseconds elapsed
// since the start of a write. ToMS == 0 means no upper bound, so the zero
// RangeMS is [0, ∞) and admits every elapsed time.
type RangeMS struct {
	FromMS float64 `json:"from_ms"`
	ToMS   float64 `json:"to_ms,omitempty"`
}

// Unbounded reports whether r has no upper bound.
func (r RangeMS) Unbounded() bool { return r.ToMS == 0 }

// contains reports whether elapsedUS lies in r.
func (r RangeMS) contains(elapsedUS int64) bool {
	ms := float64(elapsedUS) / 1000
	return ms >= r.FromMS && (r.Unbounded() || ms < r.ToMS)
}

func (r RangeMS) validate(field string) error {
	switch {
	case r.FromMS < 0 || math.IsNaN(r.FromMS):
		return fmt.Errorf("%w: %s.FromMS %v is negative", ErrInvalidConfig, field, r.FromMS)
	case r.ToMS < 0 || math.IsNaN(r.ToMS) || math.IsInf(r.ToMS, 0):
		return fmt.Errorf("%w: %s.ToMS %v is negative or not finite (0 means unbounded)", ErrInvalidConfig, field, r.ToMS)
	case !r.Unbounded() && r.ToMS <= r.FromMS:
		return fmt.Errorf("%w: %s [%v, %v) is empty", ErrInvalidConfig, field, r.FromMS, r.ToMS)
	}
	return nil
}

// String renders r as "[0, 450) ms" or "[1000, ∞) ms".
func (r RangeMS) String() string {
	if r.Unbounded() {
		return fmt.Sprintf("[%g, ∞) ms", r.FromMS)
	}
	return fmt.Sprintf("[%g, %g) ms", r.FromMS, r.ToMS)
}

// DefaultRanges are the rows of Wada Table 1 (plus the tail beyond 1 s).
var DefaultRanges = []RangeMS{{0, 450}, {450, 500}, {500, 1000}, {1000, 0}}

// Config configures every analysis. The zero Config is valid: each zero
// field takes the default its comment states (see EnsureDefaults).
type Config struct {
	// BucketWidthMS is the width of the elapsed-time buckets of the fresh-read
	// curve (Wada 2.1.1, Fig. 2: "agree to millisecond granularity").
	// Default 1.
	BucketWidthMS float64 `json:"bucket_width_ms"`
	// Ranges are the broad intervals of the Table 1 summary. Default
	// DefaultRanges.
	Ranges []RangeMS `json:"ranges"`
	// FreshThreshold is the probability a bucket must exceed to count as
	// "fresh" for the per-run time to freshness (Wada Fig. 3). Default 0.99.
	FreshThreshold float64 `json:"fresh_threshold"`
	// MinBucketReads is the fewest reads a per-run bucket needs to take part
	// in the time to freshness; sparser buckets are too noisy. Default 1.
	MinBucketReads int `json:"min_bucket_reads"`
	// MonotonicWindow restricts the monotonic-read pairs to those whose two
	// reads both start within it after their latest completed write (Wada
	// Table 2 uses [0, 450)). Default (zero): every pair.
	MonotonicWindow RangeMS `json:"monotonic_window"`
	// InterElementKeys are X and Y of Wada Table 3, X being the element the
	// writer writes first. Default (empty): the two keys of a trace that has
	// exactly two, X being the one written first; otherwise the analysis is
	// skipped.
	InterElementKeys [2]string `json:"inter_element_keys"`
	// InterElementWindow restricts Table 3 observations to those whose two
	// reads both start within it after their latest completed write (Wada
	// 3.2 uses [0, 450)). Default (zero): every observation.
	InterElementWindow RangeMS `json:"inter_element_window"`
	// ClockUncertaintyMS is the clock-synchronization uncertainty: Gamma
	// scores below it are not counted as positive (CPQ 3.1.3 uses about
	// 2 ms). Default 0, right for traces on one clock.
	ClockUncertaintyMS float64 `json:"clock_uncertainty_ms"`
	// LinearizabilityMaxOps is the largest history the linearizability
	// checker accepts; the check is exponential in the worst case. Default
	// 1000.
	LinearizabilityMaxOps int `json:"linearizability_max_ops"`
	// LinearizabilityTimeout bounds the checker's running time; when it
	// expires the verdict is "unknown". Default 30s.
	LinearizabilityTimeout time.Duration `json:"linearizability_timeout"`
	// Visualization, when not nil, receives Porcupine's HTML visualization
	// of a history found not linearizable.
	Visualization io.Writer `json:"-"`
	// MaxExamples bounds every list of examples in a result. Default 10.
	MaxExamples int `json:"max_examples"`
}

// ErrInvalidConfig is wrapped by every error Validate returns.
var ErrInvalidConfig = errors.New("measure: invalid config")

// EnsureDefaults returns a copy of c with every zero field given its
// default (the options idiom of package node).
func (c Config) EnsureDefaults() Config {
	c.BucketWidthMS = cmp.Or(c.BucketWidthMS, 1)
	if c.Ranges == nil {
		c.Ranges = append([]RangeMS(nil), DefaultRanges...)
	}
	c.FreshThreshold = cmp.Or(c.FreshThreshold, 0.99)
	c.MinBucketReads = cmp.Or(c.MinBucketReads, 1)
	c.LinearizabilityMaxOps = cmp.Or(c.LinearizabilityMaxOps, 1000)
	c.LinearizabilityTimeout = cmp.Or(c.LinearizabilityTimeout, 30*time.Second)
	c.MaxExamples = cmp.Or(c.MaxExamples, 10)
	return c
}

// Validate reports the first invalid field, by name.
func (c Config) Validate() error {
	switch {
	case !(c.BucketWidthMS >= 0.001) || math.IsInf(c.BucketWidthMS, 0):
		return fmt.Errorf("%w: BucketWidthMS %v is below 0.001 (one microsecond) or not finite", ErrInvalidConfig, c.BucketWidthMS)
	case !(c.FreshThreshold > 0 && c.FreshThreshold < 1):
		return fmt.Errorf("%w: FreshThreshold %v is not in (0, 1)", ErrInvalidConfig, c.FreshThreshold)
	case c.MinBucketReads < 0:
		return fmt.Errorf("%w: MinBucketReads %d is negative", ErrInvalidConfig, c.MinBucketReads)
	case c.ClockUncertaintyMS < 0 || math.IsNaN(c.ClockUncertaintyMS) || math.IsInf(c.ClockUncertaintyMS, 0):
		return fmt.Errorf("%w: ClockUncertaintyMS %v is negative or not finite", ErrInvalidConfig, c.ClockUncertaintyMS)
	case c.LinearizabilityMaxOps < 0:
		return fmt.Errorf("%w: LinearizabilityMaxOps %d is negative", ErrInvalidConfig, c.LinearizabilityMaxOps)
	case c.LinearizabilityTimeout < 0:
		return fmt.Errorf("%w: LinearizabilityTimeout %v is negative", ErrInvalidConfig, c.LinearizabilityTimeout)
	case c.MaxExamples < 0:
		return fmt.Errorf("%w: MaxExamples %d is negative", ErrInvalidConfig, c.MaxExamples)
	case (c.InterElementKeys[0] == "") != (c.InterElementKeys[1] == ""):
		return fmt.Errorf("%w: InterElementKeys %q names only one key", ErrInvalidConfig, c.InterElementKeys)
	case c.InterElementKeys[0] != "" && c.InterElementKeys[0] == c.InterElementKeys[1]:
		return fmt.Errorf("%w: InterElementKeys names %q twice", ErrInvalidConfig, c.InterElementKeys[0])
	}
	for i, r := range c.Ranges {
		if err := r.validate(fmt.Sprintf("Ranges[%d]", i)); err != nil {
			return err
		}
	}
	if err := c.MonotonicWindow.validate("MonotonicWindow"); err != nil {
		return err
	}
	return c.InterElementWindow.validate("InterElementWindow")
}

// String renders the effective configuration on one line, for logs.
func (c Config) String() string {
	ranges := make([]string, len(c.Ranges))
	for i, r := range c.Ranges {
		ranges[i] = r.String()
	}
	return fmt.Sprintf("bucket_width_ms=%g ranges=%s fresh_threshold=%g min_bucket_reads=%d "+
		"monotonic_window=%s inter_element_keys=%q inter_element_window=%s clock_uncertainty_ms=%g "+
		"linearizability_max_ops=%d linearizability_timeout=%s max_examples=%d",
		c.BucketWidthMS, strings.Join(ranges, ","), c.FreshThreshold, c.MinBucketReads,
		c.MonotonicWindow, c.InterElementKeys, c.InterElementWindow, c.ClockUncertaintyMS,
		c.LinearizabilityMaxOps, c.LinearizabilityTimeout, c.MaxExamples)
}

// effective returns a defaulted copy of c; analyses never mutate the
// caller's Config.
func (c Config) effective() Config {
	c.Ranges = append([]RangeMS(nil), c.Ranges...)
	if len(c.Ranges) == 0 {
		c.Ranges = nil
	}
	return c.EnsureDefaults()
}

// bucketWidthUS is BucketWidthMS in whole microseconds, at least one.
func (c Config) bucketWidthUS() int64 {
	us := int64(math.Round(c.BucketWidthMS * 1000))
	if us < 1 {
		us = 1
	}
	return us
}

func msOf(us int64) float64 { return float64(us) / 1000 }
