package sla

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name string
		text string
		want SLA
	}{
		{name: "one line", text: "read-my-writes 300ms 1.0; eventual 300ms 0.5", want: SLA{
			{ReadMyWritesConsistency, 300 * ms, 1},
			{EventualConsistency, 300 * ms, 0.5},
		}},
		{name: "lines, comments, blanks", text: `
# password checking, Pileus Fig. 6
strong   150ms 1.0   # the latest credentials, quickly

eventual 150ms 0.5;
	strong 1s 0.25 ;;
`, want: SLA{
			{StrongConsistency, 150 * ms, 1},
			{EventualConsistency, 150 * ms, 0.5},
			{StrongConsistency, time.Second, 0.25},
		}},
		{name: "CRLF", text: "strong 150ms 1\r\neventual 150ms 0.5\r\n", want: SLA{
			{StrongConsistency, 150 * ms, 1},
			{EventualConsistency, 150 * ms, 0.5},
		}},
		{name: "aliases and case", text: "RMW 1s 1; Read-Your-Writes 1s 1; monotonic-reads 1S 1; MONOTONIC 2s 1; Bounded(5M) 1s 1", want: SLA{
			{ReadMyWritesConsistency, time.Second, 1},
			{ReadMyWritesConsistency, time.Second, 1},
			{MonotonicConsistency, time.Second, 1},
			{MonotonicConsistency, 2 * time.Second, 1},
			{BoundedBy(5 * time.Minute), time.Second, 1},
		}},
		{name: "unbounded", text: "causal 1s 1; eventual unbounded 0; eventual INF 0", want: SLA{
			{CausalConsistency, time.Second, 1},
			{EventualConsistency, Unbounded, 0},
			{EventualConsistency, Unbounded, 0},
		}},
		{name: "number forms", text: "bounded(30s) 1m30s 1e-5; bounded(1.5s) 1h 0.000001; strong 500us .0000005", want: SLA{
			{BoundedBy(30 * time.Second), 90 * time.Second, 0.00001},
			{BoundedBy(1500 * ms), time.Hour, 0.000001},
			{StrongConsistency, 500 * time.Microsecond, 0.0000005},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.text)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.text, err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Parse(%q) = %v, want %v", tc.text, got, tc.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		text string
		want []string
	}{
		{"empty", "", []string{"at least one subSLA"}},
		{"only comments", "# nothing\n\n ; ;", []string{"at least one subSLA"}},
		{"latency without unit", "strong 150ms 1; eventual 30 0.5",
			[]string{`subSLA 2: latency: cosla: invalid SLA: "30" is not a duration (write e.g. 300ms or 1s)`}},
		{"latency word", "strong soon 1", []string{"subSLA 1: latency:", `"soon"`}},
		{"utility word", "strong 1s high", []string{"subSLA 1: utility:", `"high" is not a number`}},
		{"utility percent", "strong 1s 1; eventual 1s 50%", []string{"subSLA 2: utility:", `"50%"`}},
		{"unknown consistency", "strong 1s 1; linearizable 1s 1", []string{"subSLA 2: consistency:", `"linearizable"`, "bounded(<duration>)"}},
		{"bounded without unit", "bounded(300) 200ms 1",
			[]string{"subSLA 1: consistency:", `"bounded(300)"`, "no unit", "bounded(300s)"}},
		{"bounded decimal without unit", "bounded(0.5) 200ms 1", []string{"subSLA 1: consistency:", "bounded(0.5s)"}},
		{"bounded bad duration", "bounded(soon) 200ms 1", []string{"subSLA 1: consistency:", `"soon" is not a duration`}},
		{"bounded no bound", "bounded 200ms 1", []string{"subSLA 1: consistency:", "needs a staleness bound"}},
		{"bounded empty", "bounded() 200ms 1", []string{"subSLA 1: consistency:", `"" is not a duration`}},
		{"bounded unclosed", "bounded(30s 200ms 1", []string{"subSLA 1: consistency:", "closing parenthesis"}},
		{"bounded zero", "bounded(0s) 200ms 1", []string{"subSLA 1: consistency:", "positive bound"}},
		{"bounded negative", "bounded(-5s) 200ms 1", []string{"subSLA 1: consistency:", "positive bound"}},
		{"strong with bound", "strong(5s) 200ms 1", []string{"subSLA 1: consistency:", "strong takes no bound"}},
		{"too few fields", "strong 1s 1; eventual 1s", []string{"subSLA 2:", "2 fields, want 3"}},
		{"too many fields", "strong 1s 1 extra", []string{"subSLA 1:", "4 fields, want 3"}},
		{"zero latency", "strong 0s 1", []string{"subSLA 1: latency:", "positive"}},
		{"negative latency", "strong -1s 1", []string{"subSLA 1: latency:", "positive"}},
		{"negative utility", "strong 1s -1", []string{"subSLA 1: utility:", ">= 0"}},
		{"NaN utility", "strong 1s NaN", []string{"subSLA 1: utility:", "NaN"}},
		{"infinite utility", "strong 1s inf", []string{"subSLA 1: utility:", "+Inf"}},
		{"huge utility", "strong 1s 1e400", []string{"subSLA 1: utility:", `"1e400"`}},
		{"increasing utility", "eventual 1s 0.5\nstrong 1s 1", []string{"subSLA 2: utility:", "greater than subSLA 1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.text)
			checkErr(t, err, tc.want)
			if got != nil {
				t.Errorf("Parse(%q) returned %v with its error", tc.text, got)
			}
		})
	}
}

func TestParseConsistency(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Consistency
	}{
		{"strong", StrongConsistency},
		{" Causal ", CausalConsistency},
		{"bounded(30s)", BoundedBy(30 * time.Second)},
		{"bounded( 5m )", BoundedBy(5 * time.Minute)},
		{"read-my-writes", ReadMyWritesConsistency},
		{"rmw", ReadMyWritesConsistency},
		{"read-your-writes", ReadMyWritesConsistency},
		{"monotonic", MonotonicConsistency},
		{"monotonic-reads", MonotonicConsistency},
		{"EVENTUAL", EventualConsistency},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseConsistency(tc.in)
			if err != nil {
				t.Fatalf("ParseConsistency(%q): %v", tc.in, err)
			}
			if got != tc.want {
				t.Errorf("ParseConsistency(%q) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
	for _, k := range Kinds {
		c := Consistency{Kind: k}
		if k == Bounded {
			c.Bound = time.Second
		}
		t.Run("round trip "+c.String(), func(t *testing.T) {
			if got, err := ParseConsistency(c.String()); err != nil || got != c {
				t.Errorf("ParseConsistency(%q) = %v, %v; want %v", c.String(), got, err, c)
			}
		})
	}
}

func TestRoundTripPresets(t *testing.T) {
	for _, name := range PresetNames() {
		t.Run(name, func(t *testing.T) {
			s, _ := Preset(name)
			checkTextRoundTrip(t, s)
		})
	}
}

// roundTripSeed seeds TestRoundTripRandom; change it to explore other SLAs.
const roundTripSeed = 20131103

func TestRoundTripRandom(t *testing.T) {
	t.Logf("seed %d", roundTripSeed)
	rng := rand.New(rand.NewPCG(roundTripSeed, 0))
	for i := range 500 {
		s := randomSLA(rng)
		if err := s.Validate(); err != nil {
			t.Fatalf("SLA %d from seed %d is invalid: %v", i, roundTripSeed, err)
		}
		if !checkTextRoundTrip(t, s) || !checkYAMLRoundTrip(t, s) {
			t.Fatalf("SLA %d from seed %d failed; reproduce with: go test ./sla/ -run TestRoundTripRandom", i, roundTripSeed)
		}
	}
}

// checkTextRoundTrip checks that Parse reads String's output back to s, and
// that printing it again gives the same text.
func checkTextRoundTrip(t *testing.T, s SLA) bool {
	t.Helper()
	text := s.String()
	got, err := Parse(text)
	if err != nil {
		t.Errorf("Parse(%q): %v", text, err)
		return false
	}
	if !reflect.DeepEqual(got, s) || got.String() != text {
		t.Errorf("Parse(%q) = %#v, want %#v", text, got, s)
		return false
	}
	return true
}

// randomSLA returns a valid SLA of one to six subSLAs drawn from rng,
// favoring the round numbers people write but reaching odd durations too.
func randomSLA(rng *rand.Rand) SLA {
	s := make(SLA, 1+rng.IntN(6))
	utilities := make([]float64, len(s))
	for i := range utilities {
		switch rng.IntN(4) {
		case 0:
			utilities[i] = 0
		case 1:
			utilities[i] = float64(rng.IntN(10))
		default:
			utilities[i] = rng.Float64() * float64(rng.IntN(1000)+1)
		}
	}
	slices.Sort(utilities)
	slices.Reverse(utilities)
	for i := range s {
		c := Consistency{Kind: Kinds[rng.IntN(len(Kinds))]}
		if c.Kind == Bounded {
			c.Bound = randomDuration(rng)
		}
		latency := randomDuration(rng)
		if rng.IntN(8) == 0 {
			latency = Unbounded
		}
		s[i] = SubSLA{c, latency, utilities[i]}
	}
	return s
}

func randomDuration(rng *rand.Rand) time.Duration {
	if rng.IntN(10) == 0 {
		return time.Duration(1 + rng.Int64N(1<<62))
	}
	units := []time.Duration{time.Nanosecond, time.Microsecond, time.Millisecond, time.Second, time.Minute, time.Hour}
	d := time.Duration(1+rng.IntN(1000)) * units[rng.IntN(len(units))]
	if rng.IntN(4) == 0 {
		d += time.Duration(rng.IntN(1000)) * units[rng.IntN(len(units))]
	}
	return d
}
