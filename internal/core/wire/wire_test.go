package wire_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/lab/workload"
)

// layoutOf returns a valid layout with one tablet per start, each primary
// at its own node.
func layoutOf(p wire.Partition, starts ...string) wire.Layout {
	l := wire.Layout{Name: "t", ID: 1, Partition: p, Replication: wire.Replication{Mode: wire.ModePull, Interval: time.Second}}
	for i, s := range starts {
		l.Tablets = append(l.Tablets, wire.Tablet{Start: s, Primary: wire.NodeID(fmt.Sprintf("s/r%d", i))})
	}
	return l
}

// fmix64 is MurmurHash3's 64-bit finalizer, as Appleby publishes it.
func fmix64(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb93fe53ec64d
	h ^= h >> 33
	return h
}

func TestHashPosition(t *testing.T) {
	for _, key := range []string{"", "a", "user000001", strings.Repeat("k", 1000)} {
		h := fnv.New64a()
		h.Write([]byte(key))
		want := fmt.Sprintf("%016x", fmix64(h.Sum64()))
		if p := wire.HashPosition(key); string(p[:]) != want {
			t.Errorf("HashPosition(%.10q) = %s, want %s (hash/fnv, then fmix64)", key, p[:], want)
		}
	}
	// FNV-1a 64 of "" is its offset basis, cbf29ce484222325, mixed.
	if p := wire.HashPosition(""); string(p[:]) != "69c514c4188f1ac8" {
		t.Errorf("HashPosition(\"\") = %s", p[:])
	}
	l := layoutOf(wire.ByHash, "")
	if got := l.Position("a"); got != "d107528ee760f66e" {
		t.Errorf("Position(a) by hash = %s, want d107528ee760f66e", got)
	}
	if l.Partition = wire.ByRange; l.Position("a") != "a" {
		t.Errorf("Position(a) by range = %s, want a", l.Position("a"))
	}
}

func TestHashStarts(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want []string
	}{
		{0, nil},
		{1, nil},
		{2, []string{"8000000000000000"}},
		{4, []string{"4000000000000000", "8000000000000000", "c000000000000000"}},
		{3, []string{"5555555555555555", "aaaaaaaaaaaaaaaa"}},
	} {
		t.Run(fmt.Sprint(tc.n), func(t *testing.T) {
			got := wire.HashStarts(tc.n)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("HashStarts(%d) = %q, want %q", tc.n, got, tc.want)
			}
		})
	}
	// Every count up to the placement limit gives a valid layout.
	for _, n := range []int{5, 7, 100, 4096} {
		l := layoutOf(wire.ByHash, append([]string{""}, wire.HashStarts(n)...)...)
		if err := l.Validate(); err != nil || len(l.Tablets) != n {
			t.Errorf("HashStarts(%d): %d tablets, Validate: %v", n, len(l.Tablets), err)
		}
	}
}

// TestHashStartsShares checks that HashStarts spreads YCSB's keys evenly:
// each of four tablets gets a quarter of 40,000 keys, give or take 3%.
func TestHashStartsShares(t *testing.T) {
	l := layoutOf(wire.ByHash, append([]string{""}, wire.HashStarts(4)...)...)
	counts := make([]int, 4)
	const keys = 40_000
	for i := range uint64(keys) {
		counts[l.TabletFor(workload.Key(i))]++
	}
	for i, c := range counts {
		if c < keys/4*97/100 || c > keys/4*103/100 {
			t.Errorf("tablet %d holds %d of %d keys, want about %d (counts %v)", i, c, keys, keys/4, counts)
		}
	}
}

// TestHashSpreadsSimilarKeys checks that keys that differ only at the end
// spread over hash tablets: 4,000 keys user000000..user003999 over 8
// tablets, each within 10% of its share.
func TestHashSpreadsSimilarKeys(t *testing.T) {
	l := layoutOf(wire.ByHash, append([]string{""}, wire.HashStarts(8)...)...)
	counts := make([]int, 8)
	for i := range 4000 {
		counts[l.TabletFor(fmt.Sprintf("user%06d", i))]++
	}
	for i, c := range counts {
		if c < 450 || c > 550 {
			t.Errorf("tablet %d holds %d of 4000 keys, want about 500 (counts %v)", i, c, counts)
		}
	}
}

func TestTabletFor(t *testing.T) {
	// The positions: "a" d107528ee760f66e, "b" f4d1b6be5649b6b3, "user1"
	// 1858f213f1b6f14d, "" 69c514c4188f1ac8.
	for _, tc := range []struct {
		name   string
		layout wire.Layout
		key    string
		want   int
	}{
		{"range one tablet", layoutOf(wire.ByRange, ""), "zzz", 0},
		{"range empty key", layoutOf(wire.ByRange, "", "m"), "", 0},
		{"range before split", layoutOf(wire.ByRange, "", "m"), "lzz", 0},
		{"range at split", layoutOf(wire.ByRange, "", "m"), "m", 1},
		{"range after last", layoutOf(wire.ByRange, "", "m", "t"), "zebra", 2},
		{"range middle", layoutOf(wire.ByRange, "", "m", "t"), "p", 1},
		{"range ignores hash", layoutOf(wire.ByRange, "", "8000000000000000"), "a", 1},
		{"hash one tablet", layoutOf(wire.ByHash, ""), "a", 0},
		{"hash high half", layoutOf(wire.ByHash, "", "8000000000000000"), "a", 1},
		{"hash low half", layoutOf(wire.ByHash, "", "8000000000000000"), "user1", 0},
		{"hash at split", layoutOf(wire.ByHash, "", "d107528ee760f66e"), "a", 1},
		{"hash just below split", layoutOf(wire.ByHash, "", "d107528ee760f66f"), "a", 0},
		{"hash between splits", layoutOf(wire.ByHash, "", "d107528ee760f66e", "f4d1b6be5649b6b3"), "a", 1},
		{"hash last", layoutOf(wire.ByHash, "", "d107528ee760f66e", "f4d1b6be5649b6b3"), "b", 2},
		{"hash empty key", layoutOf(wire.ByHash, "", "69c514c4188f1ac8"), "", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.layout.Validate(); err != nil {
				t.Fatal(err)
			}
			if got := tc.layout.TabletFor(tc.key); got != tc.want {
				t.Errorf("TabletFor(%q) = %d, want %d (position %s)", tc.key, got, tc.want, tc.layout.Position(tc.key))
			}
		})
	}
}

func TestTabletForDoesNotAllocate(t *testing.T) {
	for _, p := range []wire.Partition{wire.ByRange, wire.ByHash} {
		l := layoutOf(p, append([]string{""}, wire.HashStarts(16)...)...)
		if n := testing.AllocsPerRun(100, func() { _ = l.TabletFor("user000042") }); n != 0 {
			t.Errorf("TabletFor by %s: %.0f allocations, want 0", p, n)
		}
	}
}

func TestValidate(t *testing.T) {
	valid := func(p wire.Partition, starts ...string) func(*wire.Layout) {
		return func(l *wire.Layout) { *l = layoutOf(p, starts...) }
	}
	for _, tc := range []struct {
		name   string
		change func(*wire.Layout)
		want   string // in the error; "" for a valid layout
	}{
		{"range", valid(wire.ByRange, "", "m", "t"), ""},
		{"range any key", valid(wire.ByRange, "", "M", "zz"), ""},
		{"range keys not UTF-8", valid(wire.ByRange, "", "\xc3", "\xff\xfe"), ""},
		{"name not UTF-8", func(l *wire.Layout) { l.Name = "t\xff" }, `name "t\xff" is not valid UTF-8`},
		{"node not UTF-8", func(l *wire.Layout) { l.Tablets[1].Secondaries = []wire.NodeID{"s/\xc3"} }, `node "s/\xc3" is not valid UTF-8`},
		{"hash", valid(wire.ByHash, "", "4000000000000000", "c000000000000000"), ""},
		{"hash one tablet", valid(wire.ByHash, ""), ""},
		{"no name", func(l *wire.Layout) { l.Name = "" }, "empty table name"},
		{"zero ID", func(l *wire.Layout) { l.ID = 0 }, "zero ID"},
		{"no tablets", func(l *wire.Layout) { l.Tablets = nil }, "no tablets"},
		{"unknown partition", func(l *wire.Layout) { l.Partition = 2 }, "unknown partition 2"},
		{"first start not empty", valid(wire.ByRange, "a", "m"), "first tablet must start at the empty key"},
		{"hash first start not empty", valid(wire.ByHash, "0000000000000000"), "first tablet must start at the empty key"},
		{"range not ascending", valid(wire.ByRange, "", "m", "m"), `tablet 2 starts at "m", not after tablet 1's "m"`},
		{"hash not ascending", valid(wire.ByHash, "", "c000000000000000", "4000000000000000"),
			`tablet 2 starts at "4000000000000000", not after tablet 1's "c000000000000000"`},
		{"hash start too short", valid(wire.ByHash, "", "8"), `partitioned by hash, but tablet 1 starts at "8", not at 16 lower-case hex digits`},
		{"hash start too long", valid(wire.ByHash, "", "80000000000000000"), `tablet 1 starts at "80000000000000000"`},
		{"hash start upper case", valid(wire.ByHash, "", "C000000000000000"), `tablet 1 starts at "C000000000000000", not at 16 lower-case hex digits`},
		{"hash start not hex", valid(wire.ByHash, "", "user000000000001"), `tablet 1 starts at "user000000000001"`},
		{"no primary", func(l *wire.Layout) { l.Tablets[0].Primary = "" }, "tablet 0 has no primary"},
		{"node twice", func(l *wire.Layout) { l.Tablets[0].Secondaries = []wire.NodeID{l.Tablets[0].Primary} }, `tablet 0 lists node "s/r0" twice`},
		{"unknown mode", func(l *wire.Layout) { l.Replication.Mode = 9 }, "unknown replication mode 9"},
		{"zero interval", func(l *wire.Layout) { l.Replication.Interval = 0 }, "replication interval must be positive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := layoutOf(wire.ByRange, "", "m")
			tc.change(&l)
			err := l.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tc.want == "":
			case !errors.Is(err, wire.ErrBadLayout):
				t.Fatalf("Validate = %v, want an error wrapping ErrBadLayout", err)
			case !strings.Contains(err.Error(), tc.want):
				t.Fatalf("Validate = %q, want it to say %q", err, tc.want)
			}
		})
	}
}

// causalLayout returns a valid causal table's layout: rings a (two
// nodes) and b, a coordinator and a cache at sites a and b.
func causalLayout() wire.Layout {
	return wire.Layout{Name: "t", ID: 1, Causal: &wire.CausalLayout{
		Rings:        []wire.Ring{{Name: "a", Nodes: []wire.NodeID{"a/s1", "a/s2"}}, {Name: "b", Nodes: []wire.NodeID{"b/s1"}}},
		Coordinators: []wire.NodeID{"a/cc", "b/cc"},
		Caches:       []wire.NodeID{"a/cache", "b/cache"},
	}}
}

func TestValidateCausal(t *testing.T) {
	rings := func(n int) func(*wire.Layout) {
		return func(l *wire.Layout) {
			l.Causal.Rings = nil
			for i := range n {
				l.Causal.Rings = append(l.Causal.Rings, wire.Ring{Name: fmt.Sprint(i), Nodes: []wire.NodeID{wire.NodeID(fmt.Sprintf("s%d/n", i))}})
			}
		}
	}
	for _, tc := range []struct {
		name   string
		change func(*wire.Layout)
		want   string // in the error; "" for a valid layout
	}{
		{"valid", func(*wire.Layout) {}, ""},
		{"no caches", func(l *wire.Layout) { l.Causal.Caches = nil }, ""},
		{"cache at a site without coordinator", func(l *wire.Layout) { l.Causal.Caches = []wire.NodeID{"c/cache"} }, ""},
		{"one ring", rings(1), ""},
		{"64 rings", rings(64), ""},
		{"points", func(l *wire.Layout) { l.Causal.Points = 1 }, ""},
		{"static", func(l *wire.Layout) { l.Causal.Static = true }, ""},
		{"coordinator without a site", func(l *wire.Layout) { l.Causal.Coordinators = []wire.NodeID{"cc", "b/cc"} }, ""},
		// Only tablets are checked of what a table of tablets has.
		{"unused fields set", func(l *wire.Layout) {
			l.Partition, l.WriteLevel, l.Replication = wire.ByHash, wire.All, wire.Replication{Mode: wire.ModePush, Interval: time.Second}
		}, ""},
		{"unused fields invalid", func(l *wire.Layout) { l.Partition, l.Replication.Mode = 9, 9 }, ""},

		{"no name", func(l *wire.Layout) { l.Name = "" }, "empty table name"},
		{"ring name not UTF-8", func(l *wire.Layout) { l.Causal.Rings[1].Name = "\x80" }, `table "t": name "\x80" is not valid UTF-8`},
		{"cache not UTF-8", func(l *wire.Layout) { l.Causal.Caches[0] = "a/\xff" }, `table "t": node "a/\xff" is not valid UTF-8`},
		{"zero ID", func(l *wire.Layout) { l.ID = 0 }, `table "t": zero ID`},
		{"tablets", func(l *wire.Layout) { l.Tablets = []wire.Tablet{{Primary: "a/s1"}} }, `table "t": causal, but lists tablets`},
		{"empty", func(l *wire.Layout) { l.Causal = &wire.CausalLayout{} }, `table "t": causal, but has no rings`},
		{"no rings", rings(0), `table "t": causal, but has no rings`},
		{"65 rings", rings(65), `table "t": 65 rings, at most 64`},
		{"ring without nodes", func(l *wire.Layout) { l.Causal.Rings[1].Nodes = nil }, `table "t": ring 1 (b) has no nodes`},
		{"empty node", func(l *wire.Layout) { l.Causal.Rings[0].Nodes[1] = "" }, `table "t": ring 0 (a) lists an empty node`},
		{"node twice in a ring", func(l *wire.Layout) { l.Causal.Rings[0].Nodes[1] = "a/s1" }, `table "t": ring 0 (a) lists node "a/s1" twice`},
		{"node in two rings", func(l *wire.Layout) { l.Causal.Rings[1].Nodes = append(l.Causal.Rings[1].Nodes, "a/s2") },
			`table "t": node "a/s2" is in ring 0 (a) and ring 1 (b)`},
		{"negative points", func(l *wire.Layout) { l.Causal.Points = -1 }, `table "t": negative points per node -1`},
		{"no coordinators", func(l *wire.Layout) { l.Causal.Coordinators = nil }, `table "t": causal, but has no coordinators`},
		{"coordinator twice", func(l *wire.Layout) { l.Causal.Coordinators = []wire.NodeID{"a/cc", "b/cc", "a/cc"} },
			`table "t": coordinators: node "a/cc" is listed twice`},
		{"coordinators at one site", func(l *wire.Layout) { l.Causal.Coordinators = []wire.NodeID{"a/cc", "b/cc", "a/cc2"} },
			`table "t": coordinators: nodes "a/cc" and "a/cc2" are at the same site "a"`},
		{"empty coordinator", func(l *wire.Layout) { l.Causal.Coordinators[1] = "" }, `table "t": coordinators: node 1 is empty`},
		{"cache twice", func(l *wire.Layout) { l.Causal.Caches = []wire.NodeID{"b/cache", "b/cache"} },
			`table "t": caches: node "b/cache" is listed twice`},
		{"caches at one site", func(l *wire.Layout) { l.Causal.Caches = []wire.NodeID{"a/cache", "b/cache", "b/cache2"} },
			`table "t": caches: nodes "b/cache" and "b/cache2" are at the same site "b"`},
		{"empty cache", func(l *wire.Layout) { l.Causal.Caches = []wire.NodeID{""} }, `table "t": caches: node 0 is empty`},
		{"static, a coordinator's site in no ring", func(l *wire.Layout) {
			l.Causal.Static, l.Causal.Coordinators = true, append(l.Causal.Coordinators, "c/cc")
		}, `table "t": static, but coordinator "c/cc"'s site has no storage node in a ring`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := causalLayout()
			tc.change(&l)
			err := l.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tc.want == "":
			case !errors.Is(err, wire.ErrBadLayout):
				t.Fatalf("Validate = %v, want an error wrapping ErrBadLayout", err)
			case !strings.Contains(err.Error(), tc.want):
				t.Fatalf("Validate = %q, want it to say %q", err, tc.want)
			}
		})
	}
	// A table of tablets still needs its tablets and replication.
	l := layoutOf(wire.ByRange, "")
	l.Replication = wire.Replication{}
	if err := l.Validate(); !errors.Is(err, wire.ErrBadLayout) {
		t.Errorf("a table of tablets without replication: Validate = %v", err)
	}
}

func TestEqual(t *testing.T) {
	a := layoutOf(wire.ByRange, "", "8000000000000000")
	b := layoutOf(wire.ByRange, "", "8000000000000000")
	if !a.Equal(&b) {
		t.Fatal("identical layouts not Equal")
	}
	b.Partition = wire.ByHash
	if a.Equal(&b) {
		t.Error("layouts that differ in partition are Equal")
	}
}

func TestEqualCausal(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*wire.Layout)
		equal  bool
	}{
		{"identical", func(*wire.Layout) {}, true},
		{"no causal layout", func(l *wire.Layout) { l.Causal = nil }, false},
		{"empty causal layout", func(l *wire.Layout) { l.Causal = &wire.CausalLayout{} }, false},
		{"ring name", func(l *wire.Layout) { l.Causal.Rings[1].Name = "c" }, false},
		{"ring node", func(l *wire.Layout) { l.Causal.Rings[0].Nodes[1] = "a/s3" }, false},
		{"ring nodes order", func(l *wire.Layout) { l.Causal.Rings[0].Nodes = []wire.NodeID{"a/s2", "a/s1"} }, false},
		{"ring nodes count", func(l *wire.Layout) { l.Causal.Rings[0].Nodes = l.Causal.Rings[0].Nodes[:1] }, false},
		{"rings count", func(l *wire.Layout) { l.Causal.Rings = l.Causal.Rings[:1] }, false},
		{"rings order", func(l *wire.Layout) { r := l.Causal.Rings; r[0], r[1] = r[1], r[0] }, false},
		{"coordinator", func(l *wire.Layout) { l.Causal.Coordinators[0] = "a/cc2" }, false},
		{"coordinators count", func(l *wire.Layout) { l.Causal.Coordinators = l.Causal.Coordinators[:1] }, false},
		{"cache", func(l *wire.Layout) { l.Causal.Caches[1] = "b/cache2" }, false},
		{"no caches", func(l *wire.Layout) { l.Causal.Caches = nil }, false},
		{"points", func(l *wire.Layout) { l.Causal.Points = 64 }, false},
		{"name", func(l *wire.Layout) { l.Name = "u" }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := causalLayout(), causalLayout()
			tc.change(&b)
			if got := a.Equal(&b); got != tc.equal {
				t.Errorf("a.Equal(b) = %v, want %v", got, tc.equal)
			}
			if got := b.Equal(&a); got != tc.equal {
				t.Errorf("b.Equal(a) = %v, want %v", got, tc.equal)
			}
		})
	}
	// An empty list is no list, as the encoding cannot tell them apart.
	a, b := causalLayout(), causalLayout()
	a.Causal.Caches, b.Causal.Caches = nil, []wire.NodeID{}
	if !a.Equal(&b) || !b.Equal(&a) {
		t.Error("causal layouts that differ in no caches and an empty list of caches are not Equal")
	}
	// Two tables of tablets, neither causal, stay Equal.
	a, b = layoutOf(wire.ByRange, ""), layoutOf(wire.ByRange, "")
	if !a.Equal(&b) {
		t.Error("identical tables of tablets not Equal")
	}
}

// TestLayoutJSON: storage nodes keep layouts in their catalog as JSON
// (internal/core/replica). A causal layout comes back as it was; a table of
// tablets' JSON has no Causal, so that stored layouts keep their bytes.
func TestLayoutJSON(t *testing.T) {
	for _, l := range []wire.Layout{causalLayout(), layoutOf(wire.ByHash, "", "8000000000000000"), layoutOf(wire.ByRange, "", "\xc3", "\xff\xfe")} {
		b, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(string(b), `"Causal"`); got != (l.Causal != nil) {
			t.Errorf("JSON %s: has Causal %v", b, got)
		}
		var back wire.Layout
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back, l) || !back.Equal(&l) {
			t.Errorf("JSON round trip changed the layout:\n got %#v\nwant %#v", back, l)
		}
	}
	// A tablet whose start is UTF-8 keeps the bytes it had before starts
	// could be any bytes; one whose start is not has it in base64.
	type plainTablet struct {
		Start       string
		Primary     wire.NodeID
		Secondaries []wire.NodeID
	}
	for _, tb := range []wire.Tablet{{Start: "m", Primary: "a/r1", Secondaries: []wire.NodeID{"b/r1"}}, {Primary: "a/r1"}} {
		got, _ := json.Marshal(tb)
		want, _ := json.Marshal(plainTablet(tb))
		if string(got) != string(want) {
			t.Errorf("tablet JSON %s, want %s as before", got, want)
		}
	}
	got, _ := json.Marshal(wire.Tablet{Start: "\xff", Primary: "a/r1"})
	if want := `{"Start":{"base64":"/w=="},"Primary":"a/r1","Secondaries":null}`; string(got) != want {
		t.Errorf("tablet JSON %s, want %s", got, want)
	}
}

func TestPartitionText(t *testing.T) {
	for _, p := range []wire.Partition{wire.ByRange, wire.ByHash} {
		if back, err := wire.ParsePartition(p.String()); err != nil || back != p {
			t.Errorf("ParsePartition(%q) = %v, %v", p, back, err)
		}
	}
	if _, err := wire.ParsePartition("consistent"); !errors.Is(err, wire.ErrBadLayout) {
		t.Errorf("ParsePartition(consistent): err %v, want ErrBadLayout", err)
	}
	if s := wire.Partition(7).String(); s != "partition(7)" {
		t.Errorf("Partition(7).String() = %q", s)
	}
}

func TestLevel(t *testing.T) {
	for _, tc := range []struct {
		in    string
		level wire.Level
		n     int
		count int
		ok    bool
	}{
		{"one", wire.One, 3, 1, true},
		{"QUORUM", wire.Quorum, 3, 2, true},
		{"quorum", wire.Quorum, 4, 3, true},
		{"quorum", wire.Quorum, 1, 1, true},
		{"all", wire.All, 5, 5, true},
		{"2", 2, 3, 2, true},
		{"4", 4, 3, 4, false},
	} {
		l, err := wire.ParseLevel(tc.in)
		if err != nil || l != tc.level {
			t.Errorf("ParseLevel(%q) = %v, %v; want %v", tc.in, l, err, tc.level)
			continue
		}
		if got := l.Count(tc.n); got != tc.count {
			t.Errorf("%s.Count(%d) = %d, want %d", l, tc.n, got, tc.count)
		}
		if err := l.Check(tc.n); (err == nil) != tc.ok {
			t.Errorf("%s.Check(%d) = %v, want ok %v", l, tc.n, err, tc.ok)
		}
	}
	for _, bad := range []string{"", "0", "-1", "two", "99999999999"} {
		if _, err := wire.ParseLevel(bad); err == nil {
			t.Errorf("ParseLevel(%q) succeeded", bad)
		}
	}
	if got := wire.Level(0).Count(3); got != 1 {
		t.Errorf("unset level counts %d replicas, want 1", got)
	}
}

// TestRefusal: every client request has a refusal with its request
// number and the code; other messages have none.
func TestRefusal(t *testing.T) {
	for _, m := range []wire.Msg{&wire.CreateTableRequest{Req: 7}, &wire.DeleteTableRequest{Req: 7}, &wire.TableInfoRequest{Req: 7},
		&wire.PutRequest{Req: 7}, &wire.GetRequest{Req: 7}, &wire.ProbeRequest{Req: 7}, &wire.Repair{Req: 7},
		&wire.CausalPut{Req: 7, Table: 9}, &wire.CausalGet{Req: 7, Table: 9}, &wire.CausalGetTx{Req: 7, Table: 9}} {
		r := wire.Refusal(m, wire.Overloaded)
		if r == nil || !wire.FromClient(m) {
			t.Fatalf("%T: refusal %v, from a client %v", m, r, wire.FromClient(m))
		}
		v := reflect.ValueOf(r).Elem()
		if c := v.FieldByName("Code").Interface().(wire.Code); c != wire.Overloaded {
			t.Errorf("%T: refusal code %v", m, c)
		}
		if req := v.FieldByName("Req").Uint(); req != 7 {
			t.Errorf("%T: refusal answers request %d, want 7", m, req)
		}
		// A causal refusal names its request's table.
		if table := v.FieldByName("Table"); table.IsValid() && table.Uint() != 9 {
			t.Errorf("%T: refusal names table %d, want 9", m, table.Uint())
		}
	}
	for _, m := range []wire.Msg{&wire.RepairReply{}, &wire.Push{}, &wire.PushAck{}, &wire.PullRequest{}, &wire.PullReply{}, &wire.GetReply{},
		&wire.CausalPutReply{}, &wire.CausalGetReply{}, &wire.Propagate{}, &wire.Read{}, &wire.DepCheck{}, &wire.Invalidate{}} {
		if r := wire.Refusal(m, wire.Overloaded); r != nil {
			t.Errorf("%T: refusal %v, want none", m, r)
		}
	}
}

func TestParseBound(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want wire.Bound
		err  string
	}{
		{"", wire.NoBound, ""}, {"Immediate", wire.Immediate, ""}, {"unbounded", wire.Unbounded, ""}, {"50ms", wire.Bound(50 * time.Millisecond), ""},
		{"0s", 0, "zero bound"}, {"-5ms", 0, "positive"}, {"soon", 0, "want immediate, unbounded or a duration"},
	} {
		got, err := wire.ParseBound(tc.in)
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("ParseBound(%q) = %v, %v; want %v, an error saying %q", tc.in, got, err, tc.want, tc.err)
		}
		if err == nil && tc.in != "" {
			if back, _ := wire.ParseBound(got.String()); back != got {
				t.Errorf("ParseBound(%v.String()) = %v", got, back)
			}
		}
	}
}
