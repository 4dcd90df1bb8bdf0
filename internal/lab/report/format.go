package report

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode"
)

// na marks a figure a run does not have: a section its Report lacks, or a
// fraction of no observations.
const na = "n/a"

// pct renders p as a percentage, or n/a when it rests on no observations.
func pct(p float64, n int) string {
	if n == 0 || !finite(p) {
		return na
	}
	return fmt.Sprintf("%.2f%%", 100*p)
}

// ratio renders num/den as "12.50% (1/8)", or n/a when den is 0.
func ratio(num, den int) string {
	if den == 0 {
		return na
	}
	return fmt.Sprintf("%.2f%% (%d/%d)", 100*float64(num)/float64(den), num, den)
}

// ms renders a duration in milliseconds.
func ms(v float64) string {
	if !finite(v) {
		return na
	}
	return fmt.Sprintf("%.3f", v)
}

// pair renders two latencies as "p50 / p99", or n/a when count is 0.
func pair(a, b float64, count int) string {
	if count == 0 {
		return na
	}
	return ms(a) + " / " + ms(b)
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// optionLabel names a read option; the empty option is a run without one.
func optionLabel(option string) string {
	if option == "" {
		return "(no option)"
	}
	return option
}

// seriesLabel names a (run, option) in tables and legends.
func seriesLabel(run, option string) string {
	if option == "" {
		return run
	}
	return run + " / " + option
}

// median of xs, 0 when empty.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// plainText makes a string from a run safe for a single line of a plot or
// a table cell: control characters (which XML 1.0 forbids in an SVG) become
// spaces.
func plainText(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == unicode.ReplacementChar {
			return ' '
		}
		return r
	}, s)
}

// markdownEscaper makes a string inert in a Markdown table cell: it can
// neither end the cell nor turn into emphasis, code, a link (which needs a
// "]") or raw HTML (which needs a "<").
var markdownEscaper = strings.NewReplacer(
	`\`, `\\`, "|", `\|`, "`", "\\`", "*", `\*`, "_", `\_`, "]", `\]`,
	"<", "&lt;", "&", "&amp;",
)

func markdownCell(s string) string { return markdownEscaper.Replace(plainText(s)) }
