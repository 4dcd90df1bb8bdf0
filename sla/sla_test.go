package sla

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

const ms = time.Millisecond

func TestValidate(t *testing.T) {
	good := SubSLA{StrongConsistency, 150 * ms, 1}
	for _, tc := range []struct {
		name string
		sla  SLA
		// want lists substrings of the error, or is nil for a valid SLA.
		want []string
	}{
		{name: "shopping cart", sla: SLA{
			{ReadMyWritesConsistency, 300 * ms, 1},
			{EventualConsistency, 300 * ms, 0.5},
		}},
		{name: "equal utilities", sla: SLA{good, good}},
		{name: "unbounded latency", sla: SLA{{EventualConsistency, Unbounded, 0}}},
		{name: "empty", sla: SLA{}, want: []string{"at least one subSLA"}},
		{name: "nil", sla: nil, want: []string{"at least one subSLA"}},
		{name: "the most subSLAs", sla: slices.Repeat(SLA{good}, MaxSubSLAs)},
		{name: "too many subSLAs", sla: slices.Repeat(SLA{good}, MaxSubSLAs+1), want: []string{"65 subSLAs, at most 64"}},
		{name: "zero latency", sla: SLA{good, {EventualConsistency, 0, 0.5}},
			want: []string{"subSLA 2: latency:", "positive"}},
		{name: "negative latency", sla: SLA{{EventualConsistency, -ms, 0.5}},
			want: []string{"subSLA 1: latency:", "-1ms"}},
		{name: "negative utility", sla: SLA{good, {EventualConsistency, ms, -0.5}},
			want: []string{"subSLA 2: utility:", "-0.5"}},
		{name: "NaN utility", sla: SLA{{EventualConsistency, ms, math.NaN()}},
			want: []string{"subSLA 1: utility:", "NaN"}},
		{name: "infinite utility", sla: SLA{{EventualConsistency, ms, math.Inf(1)}},
			want: []string{"subSLA 1: utility:", "+Inf"}},
		{name: "increasing utility", sla: SLA{good, {EventualConsistency, ms, 0.5}, {StrongConsistency, time.Second, 0.75}},
			want: []string{"subSLA 3: utility:", "greater than subSLA 2"}},
		{name: "kind zero", sla: SLA{good, {Consistency{}, ms, 0.5}},
			want: []string{"subSLA 2: consistency:", "unknown guarantee 0"}},
		{name: "kind 99", sla: SLA{{Consistency{Kind: 99}, ms, 0.5}},
			want: []string{"subSLA 1: consistency:", "unknown guarantee 99"}},
		{name: "bounded zero", sla: SLA{{BoundedBy(0), ms, 0.5}},
			want: []string{"subSLA 1: consistency:", "positive bound"}},
		{name: "bounded negative", sla: SLA{good, {BoundedBy(-time.Second), ms, 0.5}},
			want: []string{"subSLA 2: consistency:", "positive bound"}},
		{name: "strong with bound", sla: SLA{{Consistency{Strong, time.Second}, ms, 0.5}},
			want: []string{"subSLA 1: consistency:", "strong takes no bound"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.sla.Validate()
			checkErr(t, err, tc.want)
		})
	}
}

// checkErr fails unless err is nil and want is nil, or err wraps ErrInvalid
// and contains every string in want.
func checkErr(t *testing.T, err error, want []string) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("no error, want one containing %q", want)
	}
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("error %q does not wrap ErrInvalid", err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
}

func TestString(t *testing.T) {
	for _, tc := range []struct {
		name string
		sub  SubSLA
		want string
	}{
		{"strong", SubSLA{StrongConsistency, 150 * ms, 1}, "strong 150ms 1"},
		{"bounded minutes", SubSLA{BoundedBy(300 * time.Second), time.Second, 0.00001}, "bounded(5m) 1s 0.00001"},
		{"bounded hour", SubSLA{BoundedBy(time.Hour), 1500 * ms, 0.5}, "bounded(1h) 1.5s 0.5"},
		{"bounded mixed", SubSLA{BoundedBy(time.Hour + 30*time.Second), 90 * time.Second, 0}, "bounded(1h0m30s) 1m30s 0"},
		{"unbounded", SubSLA{EventualConsistency, Unbounded, 0.25}, "eventual unbounded 0.25"},
		{"tiny utility", SubSLA{MonotonicConsistency, time.Microsecond, 1e-9}, "monotonic 1µs 0.000000001"},
		{"big utility", SubSLA{CausalConsistency, 2 * time.Hour, 1e6}, "causal 2h 1000000"},
		{"unknown kind", SubSLA{Consistency{Kind: 99}, ms, 1}, "kind(99) 1ms 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.sub.String(); got != tc.want {
				t.Errorf("String() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestMaxLatency(t *testing.T) {
	s, _ := Preset("password-checking")
	if got := s.MaxLatency(); got != time.Second {
		t.Errorf("MaxLatency() = %s, want 1s", got)
	}
	s = append(s, SubSLA{EventualConsistency, Unbounded, 0})
	if got := s.MaxLatency(); got != Unbounded {
		t.Errorf("MaxLatency() = %s, want Unbounded", got)
	}
}
