package sla

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"
)

// presets are the example SLAs of Pileus 3.3, row for row.
var presets = map[string]SLA{
	// Fig. 4, the shopping cart of 2.1: prefers to see its own writes but
	// will take any data, and only within 300 ms.
	"shopping-cart": {
		{ReadMyWritesConsistency, 300 * time.Millisecond, 1.0},
		{EventualConsistency, 300 * time.Millisecond, 0.5},
	},
	// Fig. 5, the web search application of 2.2: data at most 5 minutes out
	// of date (the paper's bounded(300) counts seconds), worth less the
	// longer it takes and nothing after 600 ms.
	"web-application": {
		{BoundedBy(300 * time.Second), 200 * time.Millisecond, 0.00001},
		{BoundedBy(300 * time.Second), 400 * time.Millisecond, 0.000008},
		{BoundedBy(300 * time.Second), 600 * time.Millisecond, 0.000005},
		{BoundedBy(300 * time.Second), 1000 * time.Millisecond, 0.0},
	},
	// Fig. 6, password checking of 2.3: the latest credentials quickly, else
	// any credentials quickly, else the latest within a second.
	"password-checking": {
		{StrongConsistency, 150 * time.Millisecond, 1.0},
		{EventualConsistency, 150 * time.Millisecond, 0.5},
		{StrongConsistency, 1 * time.Second, 0.25},
	},
}

// Preset returns the named SLA from the paper's figures: "shopping-cart"
// (Fig. 4), "web-application" (Fig. 5) or "password-checking" (Fig. 6). The
// SLA is a fresh copy that the caller may modify.
func Preset(name string) (SLA, bool) {
	s, ok := presets[name]
	return slices.Clone(s), ok
}

// PresetNames returns the names Preset knows, sorted.
func PresetNames() []string {
	return slices.Sorted(maps.Keys(presets))
}

// Resolve turns a command-line argument into an SLA. The spec is a preset
// name, else the path of an existing file, which is loaded as Load does,
// else an SLA in the text format, so "shopping-cart", "./my.yaml" and
// "strong 150ms 1" all work. A file named like a preset must be written with
// a directory, as in ./shopping-cart.
func Resolve(spec string) (SLA, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, fmt.Errorf("%w: the SLA is empty: give a preset (%s), a file or an SLA such as \"strong 150ms 1\"",
			ErrInvalid, strings.Join(PresetNames(), ", "))
	}
	if s, ok := Preset(spec); ok {
		return s, nil
	}
	if info, err := os.Stat(spec); err == nil && !info.IsDir() {
		return Load(spec)
	}
	s, err := Parse(spec)
	if err == nil {
		return s, nil
	}
	if strings.ContainsAny(spec, " \t\n;") {
		return nil, err // SLA text with a mistake in it
	}
	// A single word: most likely a mistyped preset name or path.
	return nil, fmt.Errorf("%w: %q is not a preset (%s), an existing file or an SLA such as \"strong 150ms 1\"",
		ErrInvalid, spec, strings.Join(PresetNames(), ", "))
}
