package sla

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// FuzzParse reads arbitrary text as an SLA and a guarantee. Neither parser
// may panic, errors must wrap ErrInvalid, and whatever parses must be
// valid and read back unchanged from what String prints. Resolve must
// agree with Preset and Parse on text that names no file.
//
// Run it with: go test -run x -fuzz '^FuzzParse$' ./sla
func FuzzParse(f *testing.F) {
	for _, name := range PresetNames() {
		s, _ := Preset(name)
		f.Add(s.String())
		f.Add(name)
	}
	for _, text := range []string{
		"read-my-writes 300ms 1; eventual 300ms 0.5",
		"# comment\nSTRONG 150ms 1 # the latest\nMonotonic-Reads inf 0.25\n\n;;",
		"bounded(5m) 200ms 0.00001\nbounded( 1h0m0s ) 1s 0",
		"causal unbounded 1e-3; rmw 2562047h47m16.854775807s 0",
		"bounded(300) 1s 1",
		"eventual(1s) 1s 1",
		"strong -1ms 1",
		"strong 1ms NaN",
		"strong 1ms 1; eventual 1ms 2",
		"strong",
		"",
	} {
		f.Add(text)
	}
	f.Fuzz(func(t *testing.T, text string) {
		s, err := Parse(text)
		if err != nil {
			if s != nil || !errors.Is(err, ErrInvalid) {
				t.Fatalf("Parse(%q) = %v, %v; want nil and an error wrapping ErrInvalid", text, s, err)
			}
		} else {
			checkPrintParse(t, s)
		}
		if c, err := ParseConsistency(text); err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("ParseConsistency(%q): %v, want an error wrapping ErrInvalid", text, err)
			}
		} else if err := c.Validate(); err != nil {
			t.Fatalf("ParseConsistency(%q) = %v, invalid: %v", text, c, err)
		} else if back, err := ParseConsistency(c.String()); err != nil || back != c {
			t.Fatalf("ParseConsistency(%q) = %v, which reads back as %v, %v", text, c, back, err)
		}
		// Resolve reads a file if the text names one; leave those alone.
		if _, err := os.Stat(strings.TrimSpace(text)); err == nil {
			return
		}
		want, ok := Preset(strings.TrimSpace(text))
		if !ok {
			want = s
		}
		got, err := Resolve(text)
		if err != nil && !errors.Is(err, ErrInvalid) {
			t.Fatalf("Resolve(%q): %v, want an error wrapping ErrInvalid", text, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("Resolve(%q) = %v, %v; want %v", text, got, err, want)
		}
	})
}

// FuzzParseYAML reads arbitrary bytes as an SLA document, by ParseYAML and
// by yaml.Unmarshal. Neither may panic, and whatever parses must be valid
// and read back unchanged from both the YAML that MarshalYAML writes and
// the text that String prints.
//
// Run it with: go test -run x -fuzz FuzzParseYAML ./sla
func FuzzParseYAML(f *testing.F) {
	for _, name := range PresetNames() {
		s, _ := Preset(name)
		b, err := yaml.Marshal(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add([]byte(`"` + s.String() + `"`))
	}
	for _, doc := range []string{
		"# shopping cart, Pileus Fig. 4\n- {consistency: read-my-writes, latency: 300ms, utility: 1}\n- {consistency: eventual, latency: 300ms, utility: 0.5}\n",
		"name: web application (Pileus Fig. 5)\nsubslas:\n  - consistency: bounded(5m)\n    latency: 200ms\n    utility: 0.00001\n  - consistency: bounded(5m)\n    latency: 1s\n    utility: 0\n",
		"subslas: &s\n  - &row {consistency: strong, latency: inf, utility: 1}\n  - *row\n",
		"strong 150ms 1; eventual 150ms 0.5",
		"- {consistency: strong, latency: 1s, utility: 1, utility: 1}",
		"- {consistency: strong, latency: ~, utility: 1}",
		"subslas: []\nsubslas: []",
		"---\n- {}\n---\n",
		"~",
		"",
	} {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseYAML(data)
		if err != nil {
			if s != nil || !errors.Is(err, ErrInvalid) {
				t.Fatalf("ParseYAML = %v, %v; want nil and an error wrapping ErrInvalid", s, err)
			}
		} else {
			checkPrintParse(t, s)
			out, err := yaml.Marshal(s)
			if err != nil {
				t.Fatalf("yaml.Marshal(%v): %v", s, err)
			}
			back, err := ParseYAML(out)
			if err != nil || !reflect.DeepEqual(back, s) {
				t.Fatalf("%v marshals to\n%s\nwhich reads back as %v, %v", s, out, back, err)
			}
		}
		var u SLA
		if err := yaml.Unmarshal(data, &u); err == nil && len(u) > 0 {
			if err := u.Validate(); err != nil {
				t.Fatalf("yaml.Unmarshal gave the invalid SLA %v: %v", u, err)
			}
		}
	})
}

// checkPrintParse checks that a parsed SLA is valid and that its String
// parses back to it.
func checkPrintParse(t *testing.T, s SLA) {
	t.Helper()
	if err := s.Validate(); err != nil {
		t.Fatalf("parsed the invalid SLA %v: %v", s, err)
	}
	back, err := Parse(s.String())
	if err != nil || !reflect.DeepEqual(back, s) {
		t.Fatalf("%#v prints as %q, which reads back as %#v, %v", s, s.String(), back, err)
	}
	text, err := s.MarshalText()
	if err != nil || string(text) != s.String() {
		t.Fatalf("MarshalText = %q, %v; want %q", text, err, s.String())
	}
}
