package experiment

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/cosla/cosla/internal/lab/workload"
)

// FuzzParse reads arbitrary bytes as a scenario file. Parse must not
// panic and its errors must wrap ErrInvalid. A scenario it accepts must
// validate again unchanged (defaults are filled in once), place its table
// in a layout that validates, and give every sweep point, its schedule and
// its runs in both modes without an error. There is no marshal path to
// round-trip: ClientSites reads a list or a map but writes neither.
//
// Run it with: go test -run x -fuzz '^FuzzParse$' ./internal/lab/experiment
func FuzzParse(f *testing.F) {
	presets, err := Presets()
	if err != nil {
		f.Fatal(err)
	}
	for _, p := range presets {
		data, err := presetFS.ReadFile("presets/" + p.Name + ".yaml")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(withoutComments(data))
	}
	for _, doc := range []string{
		"slas: [{sla: shopping-cart}]\nworkload: {keys: 100, ops: 10}\n",
		"topology_inline:\n  sites: [{name: a, replicas: [r1, r2, r3], clients: [c1]}]\ntable: {replicas: 3, tablets: 2, partition: hash, write_level: quorum}\nslas: [{sla: strong 10ms 1}]\nstrategies: [quo-one, cpq(0.5), ad(1ms), 'cpq-tune(5ms, 0.1)']\nclients: {a: 3}\n",
		"slas: [{sla: password-checking, scale: [2], factors: [0.5, 2]}]\nsweep: {param: sessions, values: ['1', '4']}\nschedule:\n  - {at: 1s, action: spikes, to: primary, rtt: 100ms, every: 1s, for: [10ms, 20ms], until: 5s}\n  - {after_gets: 5, action: crash, node: primary}\noutputs: [timeline, utility]\n",
		"slas: [{sla: web-application}]\nworkload: {ycsb: a, keys: 50, value_size: 8}\ntargets: {read_p95: 10ms, stale: 0.1}\noutputs: [windows, levels]\n",
		"slas: [{sla: eventual 1s 1}]\nworkload: {ops: 1, duration: 1s}\n",
		"slas: []\n",
		"topology: moon\n",
		"",
	} {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if costly(data) {
			t.Skip()
		}
		s, err := Parse(data, "fuzz")
		if err != nil {
			if s != nil || !errors.Is(err, ErrInvalid) {
				t.Fatalf("Parse = %v, %v; want nil and an error wrapping ErrInvalid", s, err)
			}
			return
		}
		before := *s
		if err := s.Validate(); err != nil {
			t.Fatalf("Parse accepted a scenario that does not validate again: %v", err)
		}
		if !reflect.DeepEqual(before, *s) {
			t.Fatalf("validating again changed the scenario:\n got %+v\nwant %+v", *s, before)
		}
		l, err := s.layout()
		if err != nil {
			t.Fatalf("layout: %v", err)
		}
		l.ID = 1
		if err := l.Validate(); err != nil {
			t.Fatalf("layout %+v: %v", l, err)
		}
		if _, err := pointScenarios(s); err != nil {
			t.Fatalf("pointScenarios: %v", err)
		}
		events := expandSchedule(s, 1, 1)
		for i := 1; i < len(events); i++ {
			if events[i].At < events[i-1].At {
				t.Fatalf("expandSchedule: event %d at %s before event %d at %s", i, events[i].At, i-1, events[i-1].At)
			}
		}
		for _, cluster := range []bool{false, true} {
			if _, err := planUnits(s, 1, timing{cluster: cluster, scale: 1}); err != nil {
				t.Fatalf("units (cluster %v): %v", cluster, err)
			}
		}
	})
}

// withoutComments drops the comment lines of a scenario file: a smaller
// seed is mutated and minimized faster.
func withoutComments(data []byte) []byte {
	var out []byte
	for line := range bytes.Lines(data) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) {
			out = append(out, line...)
		}
	}
	return out
}

// costly reports whether a scenario would make the fuzzer wait or read
// files rather than find bugs: more than 10,000 keys (placing a table by
// range draws and sorts every key, and each run's zipfian generator sums
// over them), a sweep of the keys, or a YCSB property file.
func costly(data []byte) bool {
	var s Scenario
	_ = yaml.Unmarshal(data, &s) // what Parse reads is a subset
	if s.Workload.Keys > 10_000 || (s.Sweep != nil && s.Sweep.Param == "keys") {
		return true
	}
	if s.Workload.YCSB != "" {
		if _, err := workload.Preset(s.Workload.YCSB); err != nil {
			return true
		}
	}
	return false
}
