package sla

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

func TestMarshalYAML(t *testing.T) {
	s, _ := Preset("web-application")
	out, err := yaml.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	want := `- {consistency: bounded(5m), latency: 200ms, utility: 0.00001}
- {consistency: bounded(5m), latency: 400ms, utility: 0.000008}
- {consistency: bounded(5m), latency: 600ms, utility: 0.000005}
- {consistency: bounded(5m), latency: 1s, utility: 0}
`
	if string(out) != want {
		t.Errorf("yaml.Marshal = \n%s\nwant\n%s", out, want)
	}
	if _, err := yaml.Marshal(SLA{{Consistency{}, time.Second, 1}}); err == nil {
		t.Error("yaml.Marshal of an invalid SLA succeeded")
	}
}

// checkYAMLRoundTrip checks that s survives yaml.Marshal and ParseYAML in the
// list form, and yaml.Unmarshal in the string form.
func checkYAMLRoundTrip(t *testing.T, s SLA) bool {
	t.Helper()
	list, err := yaml.Marshal(s)
	if err != nil {
		t.Errorf("yaml.Marshal(%v): %v", s, err)
		return false
	}
	got, err := ParseYAML(list)
	if err != nil || !reflect.DeepEqual(got, s) {
		t.Errorf("ParseYAML(%q) = %v, %v; want %v", list, got, err, s)
		return false
	}
	str, err := yaml.Marshal(s.String())
	if err != nil {
		t.Fatal(err)
	}
	got = nil
	if err := yaml.Unmarshal(str, &got); err != nil || !reflect.DeepEqual(got, s) {
		t.Errorf("yaml.Unmarshal(%q) = %v, %v; want %v", str, got, err, s)
		return false
	}
	return true
}

func TestYAMLRoundTripPresets(t *testing.T) {
	for _, name := range PresetNames() {
		t.Run(name, func(t *testing.T) {
			s, _ := Preset(name)
			checkYAMLRoundTrip(t, s)
		})
	}
}

// config is how a larger configuration file embeds SLAs and guarantees.
type config struct {
	Name  string      `yaml:"name" json:"name"`
	SLA   SLA         `yaml:"sla" json:"sla"`
	Floor Consistency `yaml:"floor" json:"floor"`
}

func TestYAMLInConfig(t *testing.T) {
	fig4 := SLA{{ReadMyWritesConsistency, 300 * ms, 1}, {EventualConsistency, 300 * ms, 0.5}}
	for _, tc := range []struct {
		name string
		doc  string
	}{
		{"text", `
name: cart
sla: read-my-writes 300ms 1.0; eventual 300ms 0.5
floor: bounded(30s)
`},
		{"text block", `
name: cart
sla: |
  # Pileus Fig. 4
  read-my-writes 300ms 1.0
  eventual 300ms 0.5
floor: Bounded(30s)
`},
		{"list", `
name: cart
sla:
  - consistency: read-my-writes
    latency: 300ms
    utility: 1.0
  - {consistency: eventual, latency: 300ms, utility: 0.5}
floor: bounded(30s)
`},
		{"anchors", `
name: cart
latency: &fast 300ms
sla:
  - consistency: rmw
    latency: *fast
    utility: 1
  - consistency: eventual
    latency: *fast
    utility: "0.5"
floor: bounded(30s)
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got config
			if err := yaml.Unmarshal([]byte(tc.doc), &got); err != nil {
				t.Fatalf("yaml.Unmarshal: %v", err)
			}
			want := config{Name: "cart", SLA: fig4, Floor: BoundedBy(30 * time.Second)}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("got %+v, want %+v", got, want)
			}
			out, err := yaml.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			var again config
			if err := yaml.Unmarshal(out, &again); err != nil || !reflect.DeepEqual(again, want) {
				t.Errorf("round trip through\n%s\ngave %+v, %v", out, again, err)
			}
		})
	}
}

func TestJSON(t *testing.T) {
	want := config{Name: "pw", SLA: presets["password-checking"], Floor: EventualConsistency}
	out, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	const wantJSON = `{"name":"pw","sla":"strong 150ms 1; eventual 150ms 0.5; strong 1s 0.25","floor":"eventual"}`
	if string(out) != wantJSON {
		t.Errorf("json.Marshal = %s, want %s", out, wantJSON)
	}
	var got config
	if err := json.Unmarshal(out, &got); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("json.Unmarshal(%s) = %+v, %v", out, got, err)
	}
	err = json.Unmarshal([]byte(`{"sla":"strong 150 1"}`), &got)
	checkErr(t, err, []string{"subSLA 1: latency:", `"150"`})
}

func TestParseYAML(t *testing.T) {
	fig6 := presets["password-checking"]
	for _, tc := range []struct {
		name string
		doc  string
	}{
		{"list", `
- {consistency: strong, latency: 150ms, utility: 1.0}
- {consistency: eventual, latency: 150ms, utility: 0.5}
- {consistency: strong, latency: 1s, utility: 0.25}
`},
		{"subslas", `
name: password checking, Pileus Fig. 6
subslas:
  - {consistency: strong, latency: 150ms, utility: 1.0}
  - {consistency: eventual, latency: 150ms, utility: 0.5}
  - {consistency: strong, latency: 1000ms, utility: 0.25}
`},
		{"subslas text", `subslas: strong 150ms 1; eventual 150ms 0.5; strong 1s 0.25`},
		{"string", `"strong 150ms 1; eventual 150ms 0.5; strong 1s 0.25"`},
		{"plain string", "strong 150ms 1; eventual 150ms 0.5; strong 1s 0.25\n"},
		{"document markers", "---\n- {consistency: strong, latency: 150ms, utility: 1}\n" +
			"- {consistency: eventual, latency: 150ms, utility: 0.5}\n" +
			"- {consistency: strong, latency: 1s, utility: 0.25}\n...\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseYAML([]byte(tc.doc))
			if err != nil {
				t.Fatalf("ParseYAML: %v", err)
			}
			if !reflect.DeepEqual(got, fig6) {
				t.Errorf("ParseYAML = %v, want %v", got, fig6)
			}
		})
	}
}

func TestParseYAMLErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		doc  string
		want []string
	}{
		{"empty", "", []string{"empty"}},
		{"comment only", "# nothing\n", []string{"empty"}},
		{"null", "~\n", []string{"at least one subSLA"}},
		{"empty list", "[]\n", []string{"at least one subSLA"}},
		{"syntax", "- {consistency: strong\n", []string{"yaml:"}},
		{"two documents", "strong 1s 1\n---\nstrong 1s 1\n", []string{"one YAML document"}},
		{"unknown subSLA field", `
- {consistency: strong, latency: 150ms, utility: 1}
- {consistency: eventual, latency: 150ms, utility: 0.5, note: fast}
`, []string{"line 3: subSLA 2:", `unknown field "note"`}},
		{"unknown top field", `
name: x
subSLAs: []
`, []string{"line 3:", `unknown field "subSLAs"`}},
		{"no subslas", "name: x\n", []string{"no subslas"}},
		{"missing utility", "- {consistency: strong, latency: 150ms}\n", []string{"subSLA 1: utility:", "missing"}},
		{"null utility", "- {consistency: strong, latency: 150ms, utility: }\n", []string{"subSLA 1: utility:", "single value"}},
		{"duplicate field", "- {consistency: strong, latency: 150ms, latency: 1s, utility: 1}\n",
			[]string{"subSLA 1: latency:", "twice"}},
		{"list utility", "- {consistency: strong, latency: 150ms, utility: [1]}\n", []string{"subSLA 1: utility:", "single value"}},
		{"subSLA not a mapping", "- strong 150ms 1\n", []string{"line 1: subSLA 1:", "want a mapping"}},
		{"bare latency", `
- consistency: strong
  latency: 150
  utility: 1
`, []string{"line 3: subSLA 1: latency:", `"150" is not a duration`}},
		{"bounded without unit", `
- consistency: bounded(300)
  latency: 200ms
  utility: 1
`, []string{"line 2: subSLA 1: consistency:", "bounded(300s)"}},
		{"increasing utility", `
- {consistency: strong, latency: 150ms, utility: 0.5}
- {consistency: eventual, latency: 150ms, utility: 1}
`, []string{"subSLA 2: utility:", "greater"}},
		{"bad text", "subslas: strong 150ms 1; eventual 150 0.5\n", []string{"line 1: subSLA 2: latency:", `"150"`}},
		{"number", "5\n", []string{"subSLA 1:", "1 fields"}},
		{"mapping as SLA", "subslas: {consistency: strong}\n", []string{"line 1:", "list of"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseYAML([]byte(tc.doc))
			checkErr(t, err, tc.want)
			if got != nil {
				t.Errorf("ParseYAML returned %v with its error", got)
			}
		})
	}
}

func TestUnmarshalYAMLIgnoresDecoderLeniency(t *testing.T) {
	// The caller's decoder does not use KnownFields, but the SLA still
	// refuses keys it does not know.
	var got config
	err := yaml.Unmarshal([]byte("sla:\n  - {consistency: strong, latency: 1s, utility: 1, utilty: 2}\n"), &got)
	checkErr(t, err, []string{"line 2: subSLA 1:", `unknown field "utilty"`})
}

func TestTextMarshalers(t *testing.T) {
	if _, err := (Consistency{Kind: Strong, Bound: time.Second}).MarshalText(); err == nil {
		t.Error("MarshalText of strong with a bound succeeded")
	}
	if _, err := (SLA{}).MarshalText(); err == nil {
		t.Error("MarshalText of an empty SLA succeeded")
	}
	var c Consistency
	checkErr(t, c.UnmarshalText([]byte("bounded(300)")), []string{"bounded(300s)"})
	if c != (Consistency{}) {
		t.Errorf("failed UnmarshalText changed the guarantee to %v", c)
	}
	_, err := ParseYAML([]byte("subslas: strong 1s 1\nsubslas: strong 2s 1\n"))
	checkErr(t, err, []string{"line 2:", "subslas given twice"})
}
