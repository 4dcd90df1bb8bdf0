package sla

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Parse reads an SLA in the text format described in the package
// documentation, e.g. "read-my-writes 300ms 1; eventual 300ms 0.5", and
// validates it. Errors wrap ErrInvalid and name the subSLA's rank and field.
func Parse(text string) (SLA, error) {
	var s SLA
	for line := range strings.Lines(text) {
		line, _, _ = strings.Cut(line, "#")
		for entry := range strings.SplitSeq(line, ";") {
			if strings.TrimSpace(entry) == "" {
				continue
			}
			sub, err := parseSubSLA(entry)
			if err != nil {
				return nil, fmt.Errorf("subSLA %d: %w", len(s)+1, err)
			}
			s = append(s, sub)
			if len(s) > MaxSubSLAs {
				return nil, fmt.Errorf("%w: more than %d subSLAs", ErrInvalid, MaxSubSLAs)
			}
		}
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return s, nil
}

// parseSubSLA reads "<consistency> <latency> <utility>". Its errors name the
// field but not the rank, which the caller knows.
func parseSubSLA(entry string) (SubSLA, error) {
	fields := strings.Fields(entry)
	if len(fields) != 3 {
		return SubSLA{}, fmt.Errorf("%w: %q has %d fields, want 3: <consistency> <latency> <utility>",
			ErrInvalid, strings.TrimSpace(entry), len(fields))
	}
	var sub SubSLA
	var err error
	if sub.Consistency, err = ParseConsistency(fields[0]); err != nil {
		return SubSLA{}, fmt.Errorf("consistency: %w", err)
	}
	if sub.Latency, err = parseLatency(fields[1]); err != nil {
		return SubSLA{}, fmt.Errorf("latency: %w", err)
	}
	if sub.Utility, err = parseUtility(fields[2]); err != nil {
		return SubSLA{}, fmt.Errorf("utility: %w", err)
	}
	return sub, nil
}

// kindsByName maps every accepted guarantee name except bounded, which takes
// an argument, to its Kind.
var kindsByName = map[string]Kind{
	"strong":           Strong,
	"causal":           Causal,
	"read-my-writes":   ReadMyWrites,
	"rmw":              ReadMyWrites,
	"read-your-writes": ReadMyWrites,
	"monotonic":        Monotonic,
	"monotonic-reads":  Monotonic,
	"eventual":         Eventual,
}

// ParseConsistency reads one guarantee as Consistency.String writes it, such
// as "strong" or "bounded(30s)", case-insensitively and with the aliases
// listed in the package documentation. The result is valid.
func ParseConsistency(s string) (Consistency, error) {
	tok := strings.ToLower(strings.TrimSpace(s))
	name, arg, hasArg := strings.Cut(tok, "(")
	name = strings.TrimSpace(name)
	if hasArg {
		var closed bool
		if arg, closed = strings.CutSuffix(arg, ")"); !closed {
			return Consistency{}, fmt.Errorf("%w: %q has no closing parenthesis", ErrInvalid, s)
		}
		arg = strings.TrimSpace(arg)
	}
	if name == Bounded.String() {
		if !hasArg {
			return Consistency{}, fmt.Errorf("%w: %q needs a staleness bound, e.g. bounded(30s)", ErrInvalid, s)
		}
		bound, err := parseBound(s, arg)
		if err != nil {
			return Consistency{}, err
		}
		c := BoundedBy(bound)
		if err := c.Validate(); err != nil {
			return Consistency{}, err
		}
		return c, nil
	}
	kind, ok := kindsByName[name]
	if !ok {
		return Consistency{}, fmt.Errorf("%w: %q is not a consistency guarantee (want strong, causal, bounded(<duration>), read-my-writes, monotonic or eventual)",
			ErrInvalid, s)
	}
	if hasArg {
		return Consistency{}, fmt.Errorf("%w: %q: %s takes no bound", ErrInvalid, s, kind)
	}
	return Consistency{Kind: kind}, nil
}

// parseBound reads the t of bounded(t); tok is the whole token, for errors.
func parseBound(tok, arg string) (time.Duration, error) {
	// Pileus 3.2 gives bounds in seconds, as in bounded(300); a bare number
	// is refused rather than guessed so that nobody gets 300ns by mistake.
	if isBareNumber(arg) {
		return 0, fmt.Errorf("%w: %q: the bound %q has no unit; write e.g. bounded(%ss) for %s seconds",
			ErrInvalid, tok, arg, arg, arg)
	}
	bound, err := time.ParseDuration(arg)
	if err != nil {
		return 0, fmt.Errorf("%w: %q: the bound %q is not a duration (write e.g. bounded(30s) or bounded(5m))",
			ErrInvalid, tok, arg)
	}
	return bound, nil
}

// isBareNumber reports whether s is a decimal number such as 300 or 0.5.
func isBareNumber(s string) bool {
	s = strings.TrimLeft(s, "+-")
	return s != "" && strings.Trim(s, "0123456789.") == "" && strings.ContainsAny(s, "0123456789")
}

// parseLatency reads a Go duration, or "unbounded" or "inf" for Unbounded.
func parseLatency(tok string) (time.Duration, error) {
	lower := strings.ToLower(strings.TrimSpace(tok))
	if lower == "unbounded" || lower == "inf" {
		return Unbounded, nil
	}
	latency, err := time.ParseDuration(lower)
	if err != nil {
		return 0, fmt.Errorf("%w: %q is not a duration (write e.g. 300ms or 1s)", ErrInvalid, tok)
	}
	return latency, nil
}

// parseUtility reads a decimal number; Validate rejects negative, NaN and
// infinite ones.
func parseUtility(tok string) (float64, error) {
	u, err := strconv.ParseFloat(strings.TrimSpace(tok), 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %q is not a number (write e.g. 1, 0.5 or 0.00001)", ErrInvalid, tok)
	}
	return u, nil
}
