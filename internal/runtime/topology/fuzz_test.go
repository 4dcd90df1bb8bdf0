package topology

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/cosla/cosla/internal/core/wire"
)

// FuzzParse reads arbitrary bytes as a topology file. Parse must not
// panic and its errors must wrap ErrInvalid. A topology it accepts must
// be valid, must marshal to YAML that reads back the same, and must place
// a table as Pileus's experiments do (PrimaryAt every site with storage
// nodes) and by hash over three tablets into layouts that validate.
//
// Run it with: go test -run x -fuzz FuzzParse ./internal/runtime/topology
func FuzzParse(f *testing.F) {
	for _, name := range PresetNames() {
		b, err := yaml.Marshal(Presets[name]())
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, doc := range []string{
		"name: three-sites\nlocal_rtt: 1ms\nsites:\n  - {name: england, replicas: [r1], clients: [c1]}\n  - {name: us, replicas: [r1], clients: [c1]}\n  - {name: china, clients: [c1]}\nlinks:\n  - {a: us, b: england, rtt: 147ms, jitter: 600us}\n  - {a: china, b: england, rtt: 307ms}\n  - {a: china, b: us, rtt: 160ms}\n",
		"sites: [{name: a, replicas: [r1, r2, r3]}, {name: b, replicas: [r1]}]\nlinks: [{a: b, b: a, rtt: 10ms, bandwidth: 1000000}]\nlocal_bandwidth: 100\nlocal_jitter: 1us\n",
		"sites: [{name: a}]\nlinkz: []\n",
		"sites: [{name: a}, {name: b}]\nlinks: [{a: a, b: b, rtt: fast}]\n",
		"sites: [{name: a, replicas: [r1, r1]}]\n",
		"sites: [{name: a, replicas: [r1]}]\n---\nsites: []\n",
		"",
	} {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		topo, err := Parse(data, "fuzz")
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Parse: %v, want an error wrapping ErrInvalid", err)
			}
			return
		}
		if err := topo.Validate(); err != nil {
			t.Fatalf("Parse accepted an invalid topology: %v", err)
		}
		out, err := yaml.Marshal(topo)
		if err != nil {
			t.Fatalf("yaml.Marshal: %v", err)
		}
		back, err := Parse(out, "other")
		if err != nil {
			t.Fatalf("%+v marshals to\n%s\nwhich does not parse: %v", topo, out, err)
		}
		// Compare as YAML: a nil list comes back empty.
		if again, err := yaml.Marshal(back); err != nil || !bytes.Equal(again, out) {
			t.Fatalf("%+v marshals to\n%s\nwhich reads back as\n%s", topo, out, again)
		}
		_ = topo.Replicas()
		placements := []Placement{{Tablets: 3, Partition: "hash"}}
		for _, s := range topo.Sites {
			if len(s.Replicas) > 0 {
				placements = append(placements, topo.PrimaryAt(s.Name))
			}
		}
		for i, p := range placements {
			l, err := topo.Layout("t", p, wire.Replication{Mode: wire.ModePull, Interval: time.Second})
			if err != nil {
				if !errors.Is(err, ErrInvalid) {
					t.Fatalf("Layout(%+v): %v, want an error wrapping ErrInvalid", p, err)
				}
				if i > 0 {
					t.Fatalf("Layout(PrimaryAt(%s)): %v", p.Sites[0], err)
				}
				continue // the topology has no storage nodes
			}
			l.ID = 1
			if err := l.Validate(); err != nil {
				t.Fatalf("Layout(%+v) placed an invalid table: %v", p, err)
			}
		}
	})
}
