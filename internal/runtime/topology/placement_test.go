package topology

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cosla/cosla/internal/core/wire"
)

// tabletsText writes a layout's tablets one a line: start, primary, then
// the secondaries.
func tabletsText(l wire.Layout) string {
	var b strings.Builder
	for _, t := range l.Tablets {
		fmt.Fprintf(&b, "%q %s", t.Start, t.Primary)
		for _, s := range t.Secondaries {
			fmt.Fprintf(&b, " %s", s)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// sixNodes is one site of six storage nodes, n1 to n6.
func sixNodes() Topology {
	return Topology{Name: "six", Sites: []Site{{Name: "dc", Replicas: []string{"n1", "n2", "n3", "n4", "n5", "n6"}}}}
}

// twoByTwo is two sites of two storage nodes and a client-only site.
func twoByTwo() Topology {
	return Topology{Name: "two", Sites: []Site{
		{Name: "a", Replicas: []string{"a1", "a2"}},
		{Name: "b", Replicas: []string{"b1", "b2"}},
		{Name: "c", Clients: []string{"c1"}},
	}, Links: []Link{
		{A: "a", B: "b", RTT: time.Millisecond}, {A: "a", B: "c", RTT: time.Millisecond}, {A: "b", B: "c", RTT: time.Millisecond},
	}}
}

func TestLayout(t *testing.T) {
	hash6 := wire.HashStarts(6)
	for _, tc := range []struct {
		name      string
		topo      Topology
		p         Placement
		partition wire.Partition
		want      string
	}{
		{"pileus default", Pileus4(), Placement{}, wire.ByRange,
			`"" england/r1 us/r1 india/r1` + "\n"},
		{"pileus sites in order", Pileus4(), Placement{Sites: []string{"england", "us", "india"}, Replicas: 3}, wire.ByRange,
			`"" england/r1 us/r1 india/r1` + "\n"},
		{"pileus primary in the U.S.", Pileus4(), Pileus4().PrimaryAt("us"), wire.ByRange,
			`"" us/r1 england/r1 india/r1` + "\n"},
		{"pileus two replicas", Pileus4(), Placement{Replicas: 2}, wire.ByRange,
			`"" england/r1 us/r1` + "\n"},
		{"pileus primary only", Pileus4(), Placement{Sites: []string{"india"}}, wire.ByRange,
			`"" india/r1` + "\n"},
		{"pileus by range", Pileus4(), Placement{Sites: []string{"us", "england"}, Tablets: 3, Starts: []string{"h", "p"}}, wire.ByRange,
			`"" us/r1 england/r1` + "\n" + `"h" us/r1 england/r1` + "\n" + `"p" us/r1 england/r1` + "\n"},
		{"six nodes three replicas by hash", sixNodes(), Placement{Replicas: 3, Tablets: 6, Partition: "hash"}, wire.ByHash,
			`"" dc/n1 dc/n2 dc/n3` + "\n" +
				fmt.Sprintf("%q dc/n2 dc/n3 dc/n4\n", hash6[0]) +
				fmt.Sprintf("%q dc/n3 dc/n4 dc/n5\n", hash6[1]) +
				fmt.Sprintf("%q dc/n4 dc/n5 dc/n6\n", hash6[2]) +
				fmt.Sprintf("%q dc/n5 dc/n6 dc/n1\n", hash6[3]) +
				fmt.Sprintf("%q dc/n6 dc/n1 dc/n2\n", hash6[4])},
		{"hash with given starts", sixNodes(), Placement{Replicas: 1, Tablets: 2, Partition: "hash", Starts: []string{"0000000000000001"}}, wire.ByHash,
			`"" dc/n1` + "\n" + `"0000000000000001" dc/n2` + "\n"},
		{"explicit range", sixNodes(), Placement{Replicas: 2, Partition: "range"}, wire.ByRange,
			`"" dc/n1 dc/n2` + "\n"},
		{"two by two one per site", twoByTwo(), Placement{Tablets: 4, Partition: "hash"}, wire.ByHash,
			`"" a/a1 b/b1` + "\n" +
				fmt.Sprintf("%q a/a2 b/b2\n", wire.HashStarts(4)[0]) +
				fmt.Sprintf("%q a/a1 b/b1\n", wire.HashStarts(4)[1]) +
				fmt.Sprintf("%q a/a2 b/b2\n", wire.HashStarts(4)[2])},
		{"two by two three replicas", twoByTwo(), Placement{Sites: []string{"b", "a"}, Replicas: 3, Tablets: 2, Starts: []string{"m"}}, wire.ByRange,
			`"" b/b1 a/a1 b/b2` + "\n" + `"m" b/b2 a/a2 b/b1` + "\n"},
		{"two by two every node", twoByTwo(), Placement{Replicas: 4}, wire.ByRange,
			`"" a/a1 b/b1 a/a2 b/b2` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := wire.Replication{Mode: wire.ModePush, Interval: time.Second}
			l, err := tc.topo.Layout("usertable", tc.p, r)
			if err != nil {
				t.Fatal(err)
			}
			if got := tabletsText(l); got != tc.want {
				t.Errorf("tablets:\n%s\nwant:\n%s", got, tc.want)
			}
			if l.Name != "usertable" || l.ID != 0 || l.Partition != tc.partition || l.Replication != r {
				t.Errorf("layout %s/%d by %s, %+v; want usertable/0 by %s, %+v", l.Name, l.ID, l.Partition, l.Replication, tc.partition, r)
			}
			l.ID = 1 // the creating client's part
			if err := l.Validate(); err != nil {
				t.Errorf("the layout is not valid: %v", err)
			}
		})
	}
}

// TestLayoutSpreadsPrimaries checks the promise of the rule on a bigger
// world: with tablets a multiple of the nodes per site, every node of the
// primaries' site leads the same number of tablets and every node holds
// the same number of replicas.
func TestLayoutSpreadsPrimaries(t *testing.T) {
	topo := Topology{Name: "three-by-four"}
	for _, s := range []string{"x", "y", "z"} {
		topo.Sites = append(topo.Sites, Site{Name: s, Replicas: []string{"1", "2", "3", "4"}})
	}
	l, err := topo.Layout("t", Placement{Tablets: 8, Partition: "hash"}, wire.Replication{Mode: wire.ModePull, Interval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	leads, holds := map[wire.NodeID]int{}, map[wire.NodeID]int{}
	for _, tb := range l.Tablets {
		leads[tb.Primary]++
		for _, id := range tb.Replicas() {
			holds[id]++
		}
	}
	for _, id := range topo.Replicas() {
		wantLeads := 0
		if strings.HasPrefix(string(id), "x/") {
			wantLeads = 2
		}
		if leads[id] != wantLeads || holds[id] != 2 {
			t.Errorf("%s leads %d tablets and holds %d, want %d and 2\n%s", id, leads[id], holds[id], wantLeads, tabletsText(l))
		}
	}
}

func TestLayoutErrors(t *testing.T) {
	noStorage := Topology{Name: "empty", Sites: []Site{{Name: "a", Clients: []string{"c1"}}}}
	for _, tc := range []struct {
		name string
		topo Topology
		p    Placement
		want string
	}{
		{"no storage anywhere", noStorage, Placement{}, "placement.sites: no site has storage nodes"},
		{"unknown site", Pileus4(), Placement{Sites: []string{"england", "mars"}}, `placement.sites[1]: unknown site "mars"`},
		{"site without storage", Pileus4(), Placement{Sites: []string{"china"}}, `placement.sites[0]: site "china" has no storage nodes`},
		{"primary at a site without storage", Pileus4(), Pileus4().PrimaryAt("china"), `placement.sites[0]: site "china" has no storage nodes`},
		{"repeated site", Pileus4(), Placement{Sites: []string{"us", "england", "us"}}, `placement.sites[2]: site "us" is repeated`},
		{"negative replicas", Pileus4(), Placement{Replicas: -1}, "placement.replicas: -1, want 1 to 3"},
		{"more replicas than nodes", Pileus4(), Placement{Replicas: 4}, "placement.replicas: 4, want 1 to 3"},
		{"more replicas than the sites' nodes", sixNodes(), Placement{Replicas: 7}, "placement.replicas: 7, want 1 to 6"},
		{"negative tablets", Pileus4(), Placement{Tablets: -2}, "placement.tablets: -2, want 1 to 4096"},
		{"too many tablets", Pileus4(), Placement{Tablets: MaxTablets + 1, Partition: "hash"}, "placement.tablets: 4097, want 1 to 4096"},
		{"unknown partition", Pileus4(), Placement{Partition: "consistent"}, `placement.partition: unknown "consistent" (want range or hash)`},
		{"range without starts", Pileus4(), Placement{Tablets: 2}, "placement.starts: 0 split points for 2 tablets by range, want 1"},
		{"range with too many starts", Pileus4(), Placement{Tablets: 2, Starts: []string{"g", "p"}}, "placement.starts: 2 split points for 2 tablets by range, want 1"},
		{"one tablet with starts", Pileus4(), Placement{Starts: []string{"m"}}, "placement.starts: 1 split points for 1 tablets by range, want 0"},
		{"hash with too few starts", Pileus4(), Placement{Tablets: 3, Partition: "hash", Starts: []string{"8000000000000000"}},
			"placement.starts: 1 split points for 3 tablets by hash, want 2"},
		{"range start empty", Pileus4(), Placement{Tablets: 2, Starts: []string{""}}, `placement.starts[0]: "" is empty or not after`},
		{"range starts not ascending", Pileus4(), Placement{Tablets: 3, Starts: []string{"p", "g"}}, `placement.starts[1]: "g" is empty or not after`},
		{"range starts repeated", Pileus4(), Placement{Tablets: 3, Starts: []string{"g", "g"}}, `placement.starts[1]: "g" is empty or not after`},
		{"hash start not hex", Pileus4(), Placement{Tablets: 2, Partition: "hash", Starts: []string{"m"}}, `placement.starts[0]: "m" is not a key hash`},
		{"hash starts not ascending", Pileus4(), Placement{Tablets: 3, Partition: "hash", Starts: []string{"c000000000000000", "4000000000000000"}},
			`placement.starts[1]: "4000000000000000" is empty or not after`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := tc.topo.Layout("t", tc.p, wire.Replication{Mode: wire.ModePull, Interval: time.Second})
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Layout = %v, %v; want an error wrapping ErrInvalid that says %q", tabletsText(l), err, tc.want)
			}
		})
	}
}

func TestRangeStarts(t *testing.T) {
	keys := func(n int) []string {
		var k []string
		for i := range n {
			k = append(k, fmt.Sprintf("k%02d", i))
		}
		return k
	}
	for _, tc := range []struct {
		name string
		keys []string
		n    int
		want []string
	}{
		{"one tablet", keys(10), 1, []string{}},
		{"halves", keys(10), 2, []string{"k05"}},
		{"thirds", keys(9), 3, []string{"k03", "k06"}},
		{"uneven", keys(10), 3, []string{"k03", "k06"}},
		{"a key each", keys(4), 4, []string{"k01", "k02", "k03"}},
		{"unsorted", []string{"d", "a", "c", "b"}, 2, []string{"c"}},
		{"duplicates count once", []string{"a", "a", "a", "b", "c", "d"}, 2, []string{"c"}},
		{"empty key", []string{"", "a", "b", "c"}, 2, []string{"b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := slices.Clone(tc.keys)
			got, err := RangeStarts(tc.keys, tc.n)
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("RangeStarts = %q, %v; want %q", got, err, tc.want)
			}
			if !slices.Equal(tc.keys, before) {
				t.Errorf("RangeStarts changed its keys to %q", tc.keys)
			}
			l, err := Pileus4().Layout("t", Placement{Tablets: tc.n, Starts: got}, wire.Replication{Mode: wire.ModePull, Interval: time.Second})
			if err != nil {
				t.Fatalf("Layout with these starts: %v", err)
			}
			counts := make([]int, tc.n)
			for _, k := range slices.Compact(slices.Sorted(slices.Values(tc.keys))) {
				counts[l.TabletFor(k)]++
			}
			if slices.Min(counts) < 1 || slices.Max(counts)-slices.Min(counts) > 1 {
				t.Errorf("tablets hold %v distinct keys, want equal shares", counts)
			}
		})
	}
	for _, tc := range []struct {
		name string
		keys []string
		n    int
		want string
	}{
		{"no tablets", keys(3), 0, "placement.tablets: 0, want 1 to 4096"},
		{"too many tablets", keys(5000), MaxTablets + 1, "placement.tablets: 4097"},
		{"too few keys", keys(3), 4, "placement.tablets: 4 tablets, but only 3 distinct keys"},
		{"too few distinct keys", []string{"a", "a", "b"}, 3, "only 2 distinct keys"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := RangeStarts(tc.keys, tc.n)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("RangeStarts = %q, %v; want an error wrapping ErrInvalid that says %q", got, err, tc.want)
			}
		})
	}
}
