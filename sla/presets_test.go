package sla

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestPresets(t *testing.T) {
	want := []string{"password-checking", "shopping-cart", "web-application"}
	if got := PresetNames(); !slices.Equal(got, want) {
		t.Fatalf("PresetNames() = %q, want %q", got, want)
	}
	for _, tc := range []struct {
		name string
		text string
	}{
		{"shopping-cart", "read-my-writes 300ms 1; eventual 300ms 0.5"},
		{"web-application", "bounded(5m) 200ms 0.00001; bounded(5m) 400ms 0.000008; bounded(5m) 600ms 0.000005; bounded(5m) 1s 0"},
		{"password-checking", "strong 150ms 1; eventual 150ms 0.5; strong 1s 0.25"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, ok := Preset(tc.name)
			if !ok {
				t.Fatalf("Preset(%q) not found", tc.name)
			}
			if err := s.Validate(); err != nil {
				t.Fatal(err)
			}
			if got := s.String(); got != tc.text {
				t.Errorf("String() = %q, want %q", got, tc.text)
			}
		})
	}
	if s, ok := Preset("Shopping-Cart"); ok || s != nil {
		t.Errorf("Preset of an unknown name = %v, %t", s, ok)
	}
}

func TestPresetIsACopy(t *testing.T) {
	s, _ := Preset("shopping-cart")
	s[0].Latency = time.Hour
	s[1].Consistency = StrongConsistency
	again, _ := Preset("shopping-cart")
	if again[0].Latency != 300*ms || again[1].Consistency != EventualConsistency {
		t.Errorf("changing one Preset result changed the next: %v", again)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	fig4, _ := Preset("shopping-cart")
	files := map[string]string{
		"cart.txt":  "# Pileus Fig. 4\nread-my-writes 300ms 1.0\neventual 300ms 0.5\n",
		"cart":      "read-my-writes 300ms 1.0; eventual 300ms 0.5",
		"cart.yaml": "name: shopping cart\nsubslas:\n  - {consistency: read-my-writes, latency: 300ms, utility: 1.0}\n  - {consistency: eventual, latency: 300ms, utility: 0.5}\n",
		"cart.YML":  "- {consistency: rmw, latency: 300ms, utility: 1}\n- {consistency: eventual, latency: 300ms, utility: 0.5}\n",
		"bad.yaml":  "- {consistency: rmw, latency: 300ms, utility: 1, extra: 1}\n",
		"bad.txt":   "read-my-writes 300ms 1\neventual 300 0.5\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"cart.txt", "cart", "cart.yaml", "cart.YML"} {
		t.Run(name, func(t *testing.T) {
			got, err := Load(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, fig4) {
				t.Errorf("Load = %v, want %v", got, fig4)
			}
		})
	}
	for _, tc := range []struct {
		name string
		want []string
	}{
		{"bad.yaml", []string{"bad.yaml: line 1: subSLA 1:", `unknown field "extra"`}},
		{"bad.txt", []string{"bad.txt: subSLA 2: latency:", `"300"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(filepath.Join(dir, tc.name))
			checkErr(t, err, tc.want)
		})
	}
	t.Run("missing", func(t *testing.T) {
		_, err := Load(filepath.Join(dir, "missing.yaml"))
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Load of a missing file: %v, want fs.ErrNotExist", err)
		}
	})
}

func TestResolve(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "pw.yaml")
	if err := os.WriteFile(file, []byte("strong 150ms 1; eventual 150ms 0.5; strong 1s 0.25\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fig6, _ := Preset("password-checking")
	for _, tc := range []struct {
		name string
		spec string
		want SLA
	}{
		{"preset", "password-checking", fig6},
		{"preset with spaces", " password-checking\n", fig6},
		{"file", file, fig6},
		{"text", "strong 150ms 1; eventual 150ms 0.5; strong 1s 0.25", fig6},
		{"one subSLA", "strong 150ms 1", SLA{{StrongConsistency, 150 * ms, 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Resolve(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Resolve(%q) = %v, want %v", tc.spec, got, tc.want)
			}
		})
	}
	for _, tc := range []struct {
		name string
		spec string
		want []string
	}{
		{"unknown word", "shoping-cart", []string{`"shoping-cart" is not a preset (password-checking, shopping-cart, web-application)`}},
		{"missing file", filepath.Join(dir, "nope.yaml"), []string{"nope.yaml", "not a preset"}},
		{"empty", "", []string{"the SLA is empty", "a preset (password-checking"}},
		{"blank", " \t ", []string{"the SLA is empty"}},
		{"too many subSLAs", strings.Repeat("eventual 1s 1; ", MaxSubSLAs+1), []string{"more than 64 subSLAs"}},
		{"directory", dir, []string{"not a preset"}},
		{"bad text", "strong 150ms 1; eventual 150 0.5", []string{"subSLA 2: latency:", `"150"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Resolve(tc.spec)
			checkErr(t, err, tc.want)
		})
	}
}
