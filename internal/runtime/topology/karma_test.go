package topology

import (
	"testing"
	"time"
)

// TestKarma8 checks the Karma preset: eight sites of six storage nodes
// and a client each, a link between every pair, the paper's round trips
// from US-West1 as given.
func TestKarma8(t *testing.T) {
	topo, err := Resolve("karma8")
	if err != nil {
		t.Fatal(err)
	}
	if err := topo.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(topo.Sites) != 8 || len(topo.Links) != 28 || topo.LocalRTT != 500*time.Microsecond {
		t.Fatalf("%d sites, %d links, local RTT %s; want 8, 28, 500µs", len(topo.Sites), len(topo.Links), topo.LocalRTT)
	}
	for _, s := range topo.Sites {
		if len(s.Replicas) != 6 || len(s.Clients) != 1 {
			t.Errorf("site %s: %d storage nodes and %d clients, want 6 and 1", s.Name, len(s.Replicas), len(s.Clients))
		}
	}
	// Karma 5.
	for site, rtt := range map[string]int{"us-east": 86, "us-west2": 23, "europe": 175, "singapore": 221, "tokyo": 143, "sydney": 198, "brazil": 205} {
		l, ok := topo.Link("us-west1", site)
		if !ok || l.RTT != time.Duration(rtt)*time.Millisecond {
			t.Errorf("us-west1-%s: %v (%v), want %d ms", site, l.RTT, ok, rtt)
		}
	}
	// The rings of Karma 5 are groups of nearby sites: every round trip
	// within {U.S., Europe} and within {Singapore, Tokyo, Sydney} is below
	// every round trip from those sites to Brazil.
	for _, ring := range [][]string{{"us-west1", "us-west2", "us-east", "europe"}, {"singapore", "tokyo", "sydney"}} {
		for i, a := range ring {
			toBrazil, _ := topo.Link(a, "brazil")
			for _, b := range ring[i+1:] {
				if l, _ := topo.Link(a, b); l.RTT >= toBrazil.RTT {
					t.Errorf("%s-%s %s is not below %s-brazil %s", a, b, l.RTT, a, toBrazil.RTT)
				}
			}
		}
	}
}
