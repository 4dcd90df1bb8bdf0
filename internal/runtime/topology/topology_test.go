package topology

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("two.yaml", `
local_rtt: 1ms
sites:
  - {name: england, replicas: [r1], clients: [c1]}
  - {name: us, replicas: [r1]}
links:
  - {a: us, b: england, rtt: 147ms, jitter: 600us}
`)
	topo, err := Load(good)
	if err != nil {
		t.Fatal(err)
	}
	if topo.Name != "two" || len(topo.Sites) != 2 || topo.Links[0].RTT != 147*time.Millisecond || topo.Links[0].Jitter != 600*time.Microsecond {
		t.Fatalf("loaded %+v", topo)
	}
	for name, text := range map[string]string{
		"unknown-field.yaml":    "sites: [{name: a}]\nlinkz: []\n",
		"missing-link.yaml":     "sites: [{name: a}, {name: b}]\n",
		"bad-rtt.yaml":          "sites: [{name: a}, {name: b}]\nlinks: [{a: a, b: b, rtt: fast}]\n",
		"binary-site.yaml":      "sites: [{name: !!binary /w==}]\n", // a site named "\xff"
		"binary-node.yaml":      "sites: [{name: a, replicas: [!!binary gA==]}]\n",
		"two-voters.yaml":       "sites: [{name: a, replicas: [r1]}, {name: b, replicas: [r1]}]\nlinks: [{a: a, b: b, rtt: 1ms}]\nvoters: [a, b]\n",
		"voter-no-storage.yaml": "sites: [{name: a, replicas: [r1]}, {name: b}]\nlinks: [{a: a, b: b, rtt: 1ms}]\nvoters: [b]\n",
		"voter-twice.yaml": "sites: [{name: a, replicas: [r1]}, {name: b, replicas: [r1]}, {name: c, replicas: [r1]}]\n" +
			"links: [{a: a, b: b, rtt: 1ms}, {a: a, b: c, rtt: 1ms}, {a: b, b: c, rtt: 1ms}]\nvoters: [a, b, a]\n",
	} {
		if _, err := Load(write(name, text)); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err %v, want ErrInvalid", name, err)
		}
	}
	if _, err := Resolve("pileus4"); err != nil {
		t.Errorf("Resolve(pileus4): %v", err)
	}
	local, err := Resolve("local")
	if err != nil || local.Validate() != nil || len(local.Sites) != 1 || len(local.Sites[0].Replicas) != 1 || local.LocalRTT != 0 {
		t.Errorf("Resolve(local) = %+v, %v; want one site, one storage node, no local round trip", local, err)
	}
	if _, err := Resolve("no-such-preset"); !errors.Is(err, ErrInvalid) {
		t.Errorf("Resolve of an unknown name: err %v, want ErrInvalid", err)
	}
}

// TestConfigSites checks the default voters (the first 5, 3 or 1 sites
// with storage nodes, in the topology's order) and that named voters
// win.
func TestConfigSites(t *testing.T) {
	sites := func(storage ...bool) Topology {
		var topo Topology
		for i, s := range storage {
			site := Site{Name: string(rune('a' + i))}
			if s {
				site.Replicas = []string{"r1"}
			}
			topo.Sites = append(topo.Sites, site)
		}
		return topo
	}
	for _, tc := range []struct {
		topo Topology
		want string
	}{
		{sites(true), "[a]"},
		{sites(true, true), "[a]"},
		{sites(false, true, true, true), "[b c d]"},
		{sites(true, true, false, true, true), "[a b d]"},
		{sites(true, true, true, true, true, true), "[a b c d e]"},
		{Pileus4(), "[england us india]"},
		{Topology{Sites: sites(true, true, true).Sites, Voters: []string{"c"}}, "[c]"},
	} {
		if got := fmt.Sprint(tc.topo.ConfigSites()); got != tc.want {
			t.Errorf("%+v: ConfigSites() = %s, want %s", tc.topo.Sites, got, tc.want)
		}
	}
}
