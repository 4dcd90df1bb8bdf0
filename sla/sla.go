// Package sla defines consistency-based service level agreements (Pileus,
// Terry et al. SOSP'13, section 3).
//
// An SLA is an ordered list of subSLAs. Each subSLA pairs a consistency
// guarantee with a latency target and a utility: the value to the application
// of a Get that returns data with at least that consistency within that
// latency. The first subSLA is the application's preference; lower ones are
// acceptable alternatives of no greater utility (3.3). A Get reports which
// subSLA it met, or fails with no data if it met none. An SLA has at most
// MaxSubSLAs (64) subSLAs.
//
// # Text format
//
// Parse reads an SLA as subSLAs separated by semicolons or newlines, most
// preferred first, each written as the three columns of the paper's figures:
//
//	sla         = subSLA { (";" | newline) subSLA }
//	subSLA      = consistency latency utility
//	consistency = "strong" | "causal" | "bounded(" duration ")"
//	            | "read-my-writes" | "monotonic" | "eventual"
//	latency     = duration | "unbounded" | "inf"
//	utility     = decimal number >= 0, e.g. 1, 0.5, 0.00001
//	duration    = Go duration with a unit, e.g. 300ms, 1s, 5m
//
// Words are case-insensitive, and rmw and read-your-writes are accepted for
// read-my-writes and monotonic-reads for monotonic. A '#' starts a comment
// that runs to the end of the line; empty entries are ignored. The paper
// writes staleness bounds in seconds, bounded(300), but a bound must carry a
// unit here: bounded(300s) or bounded(5m). Utilities must not increase down
// the list. SLA.String prints this format on one line and Parse reads it back
// unchanged; the shopping cart SLA of Pileus Fig. 4 is
//
//	read-my-writes 300ms 1; eventual 300ms 0.5
//
// # YAML
//
// An SLA in a YAML document is either a string in the text format or a list
// of mappings with exactly the keys consistency, latency and utility, which
// is what SLA.MarshalYAML writes:
//
//	# shopping cart, Pileus Fig. 4
//	- {consistency: read-my-writes, latency: 300ms, utility: 1}
//	- {consistency: eventual, latency: 300ms, utility: 0.5}
//
// ParseYAML and Load also accept a document that is a mapping with the list
// under subslas and an optional name, which is ignored:
//
//	name: web application (Pileus Fig. 5)
//	subslas:
//	  - consistency: bounded(5m)
//	    latency: 200ms
//	    utility: 0.00001
//	  - consistency: bounded(5m)
//	    latency: 1s
//	    utility: 0
//
// Preset returns the SLAs of the paper's figures by name, and Resolve turns a
// command-line argument that is a preset name, a file or SLA text into an SLA.
package sla

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Kind names one of the six read guarantees of Pileus 3.2.
type Kind uint8

// The guarantees, from strongest to weakest in the order of Pileus Fig. 3.
// The zero Kind is invalid so that an unset guarantee is caught by Validate.
const (
	Strong Kind = iota + 1
	Causal
	Bounded
	ReadMyWrites
	Monotonic
	Eventual
)

// Kinds lists every valid Kind in the order above.
var Kinds = []Kind{Strong, Causal, Bounded, ReadMyWrites, Monotonic, Eventual}

var kindNames = [...]string{
	Strong:       "strong",
	Causal:       "causal",
	Bounded:      "bounded",
	ReadMyWrites: "read-my-writes",
	Monotonic:    "monotonic",
	Eventual:     "eventual",
}

// String returns the guarantee's name as written in SLA files.
func (k Kind) String() string {
	if k == 0 || int(k) >= len(kindNames) {
		return fmt.Sprintf("kind(%d)", uint8(k))
	}
	return kindNames[k]
}

// Unbounded is the latency of a subSLA that accepts any response time, such
// as the <eventual, unbounded> subSLA that Pileus 3.3 suggests for maximum
// availability.
const Unbounded = time.Duration(math.MaxInt64)

// Consistency is a read guarantee. Bound is the staleness bound t of
// bounded(t) and must be zero for every other kind.
type Consistency struct {
	Kind  Kind
	Bound time.Duration
}

// Common guarantees without parameters.
var (
	StrongConsistency       = Consistency{Kind: Strong}
	CausalConsistency       = Consistency{Kind: Causal}
	ReadMyWritesConsistency = Consistency{Kind: ReadMyWrites}
	MonotonicConsistency    = Consistency{Kind: Monotonic}
	EventualConsistency     = Consistency{Kind: Eventual}
)

// BoundedBy returns the bounded(t) guarantee.
func BoundedBy(t time.Duration) Consistency {
	return Consistency{Kind: Bounded, Bound: t}
}

// String formats the guarantee as written in SLA files, e.g. "bounded(30s)".
func (c Consistency) String() string {
	if c.Kind == Bounded {
		return "bounded(" + formatDuration(c.Bound) + ")"
	}
	return c.Kind.String()
}

// Validate reports whether c names a known guarantee with a sensible bound.
func (c Consistency) Validate() error {
	switch {
	case c.Kind == 0 || int(c.Kind) >= len(kindNames):
		return fmt.Errorf("%w: unknown guarantee %d", ErrInvalid, uint8(c.Kind))
	case c.Kind == Bounded && c.Bound <= 0:
		return fmt.Errorf("%w: bounded staleness needs a positive bound, got %s", ErrInvalid, c.Bound)
	case c.Kind != Bounded && c.Bound != 0:
		return fmt.Errorf("%w: %s takes no bound, got %s", ErrInvalid, c.Kind, c.Bound)
	}
	return nil
}

// SubSLA is one (consistency, latency, utility) target.
type SubSLA struct {
	Consistency Consistency
	// Latency is the largest acceptable round-trip time of the Get, or
	// Unbounded.
	Latency time.Duration
	// Utility is the value of meeting this subSLA; it is at least zero and
	// no greater than the utility of any subSLA above it.
	Utility float64
}

// String formats the subSLA as one entry of the text format.
func (s SubSLA) String() string {
	return fmt.Sprintf("%s %s %s", s.Consistency, formatLatency(s.Latency), formatUtility(s.Utility))
}

// SLA is an ordered list of subSLAs, most preferred first.
type SLA []SubSLA

// ErrInvalid is wrapped by every validation and parse error.
var ErrInvalid = errors.New("cosla: invalid SLA")

// MaxSubSLAs bounds the subSLAs of an SLA. The paper's SLAs have two to
// five; every Get weighs each subSLA against each replica, so the bound
// keeps a Get's selection small.
const MaxSubSLAs = 64

// Validate checks the SLA and returns an error that names the bad subSLA
// (by its 1-based rank, as in the paper's figures) and field.
func (s SLA) Validate() error {
	switch {
	case len(s) == 0:
		return fmt.Errorf("%w: an SLA needs at least one subSLA", ErrInvalid)
	case len(s) > MaxSubSLAs:
		return fmt.Errorf("%w: %d subSLAs, at most %d", ErrInvalid, len(s), MaxSubSLAs)
	}
	for i, sub := range s {
		rank := i + 1
		if err := sub.Consistency.Validate(); err != nil {
			return fmt.Errorf("subSLA %d: consistency: %w", rank, err)
		}
		if sub.Latency <= 0 {
			return fmt.Errorf("subSLA %d: latency: %w: must be positive, got %s", rank, ErrInvalid, sub.Latency)
		}
		if math.IsNaN(sub.Utility) || math.IsInf(sub.Utility, 0) || sub.Utility < 0 {
			return fmt.Errorf("subSLA %d: utility: %w: must be a finite number >= 0, got %v", rank, ErrInvalid, sub.Utility)
		}
		if i > 0 && sub.Utility > s[i-1].Utility {
			return fmt.Errorf("subSLA %d: utility: %w: %v is greater than subSLA %d's %v; utilities must not increase down the list",
				rank, ErrInvalid, sub.Utility, rank-1, s[i-1].Utility)
		}
	}
	return nil
}

// MaxLatency returns the largest latency of any subSLA: after that long no
// subSLA can be met any more.
func (s SLA) MaxLatency() time.Duration {
	var longest time.Duration
	for _, sub := range s {
		longest = max(longest, sub.Latency)
	}
	return longest
}

// String formats the SLA in the one-line text format accepted by Parse.
func (s SLA) String() string {
	parts := make([]string, len(s))
	for i, sub := range s {
		parts[i] = sub.String()
	}
	return strings.Join(parts, "; ")
}

// formatLatency writes a latency as the text format spells it.
func formatLatency(d time.Duration) string {
	if d == Unbounded {
		return "unbounded"
	}
	return formatDuration(d)
}

// formatDuration is time.Duration.String without trailing zero units, so
// that five minutes reads "5m" rather than "5m0s". time.ParseDuration reads
// both.
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// formatUtility writes the shortest decimal that parses back to u, e.g. "1",
// "0.5" or "0.00001", never an exponent.
func formatUtility(u float64) string {
	return strconv.FormatFloat(u, 'f', -1, 64)
}
