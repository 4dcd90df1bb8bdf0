package causal

import (
	"errors"
	"fmt"
	"testing"

	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/wire"
)

func TestPlacementSpreadsKeys(t *testing.T) {
	l := &Layout{Table: 1, Coordinators: map[string]wire.NodeID{"a": "a/cc"},
		Rings: []Ring{{Name: "r", Nodes: []wire.NodeID{"a/s1", "a/s2", "b/s1", "b/s2", "b/s3", "b/s4"}}}}
	if err := l.Validate(); err != nil {
		t.Fatal(err)
	}
	counts := map[wire.NodeID]int{}
	const keys = 60000
	for i := range keys {
		counts[l.Node(0, fmt.Sprintf("user%d", i))]++
	}
	// 256 points per node: each of 6 nodes should take its sixth within
	// a quarter (a node's share varies by about 1/sqrt(256) = 6%).
	for id, n := range counts {
		if n < keys/6*3/4 || n > keys/6*5/4 {
			t.Errorf("node %s holds %d of %d keys, want about %d", id, n, keys, keys/6)
		}
	}
	if len(counts) != 6 {
		t.Errorf("keys on %d nodes, want 6: %v", len(counts), counts)
	}
	// Keys that differ only in their last letter spread too.
	single := map[wire.NodeID]bool{}
	for c := 'a'; c <= 'z'; c++ {
		single[l.Node(0, string(c))] = true
	}
	if len(single) < 4 {
		t.Errorf("the 26 one-letter keys sit on %d nodes, want most of 6", len(single))
	}
}

func TestLayoutValidate(t *testing.T) {
	cc := map[string]wire.NodeID{"a": "a/cc"}
	for _, tc := range []struct {
		name string
		l    Layout
	}{
		{"no table", Layout{Rings: []Ring{{Nodes: []wire.NodeID{"a/s1"}}}, Coordinators: cc}},
		{"no rings", Layout{Table: 1, Coordinators: cc}},
		{"empty ring", Layout{Table: 1, Rings: []Ring{{Name: "x"}}, Coordinators: cc}},
		{"node twice", Layout{Table: 1, Rings: []Ring{{Nodes: []wire.NodeID{"a/s1"}}, {Nodes: []wire.NodeID{"a/s1"}}}, Coordinators: cc}},
		{"no coordinators", Layout{Table: 1, Rings: []Ring{{Nodes: []wire.NodeID{"a/s1"}}}}},
		{"static, a site in no ring", Layout{Table: 1, Rings: []Ring{{Nodes: []wire.NodeID{"a/s1"}}}, Static: true,
			Coordinators: map[string]wire.NodeID{"a": "a/cc", "b": "b/cc"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.l.Validate(); !errors.Is(err, ErrBadLayout) {
				t.Fatalf("Validate: %v, want ErrBadLayout", err)
			}
		})
	}
}

func TestHomeRingAndRingOf(t *testing.T) {
	l := &Layout{Table: 1, Coordinators: map[string]wire.NodeID{"a": "a/cc"},
		Rings: []Ring{{Name: "ab", Nodes: []wire.NodeID{"a/s1", "b/s1"}}, {Name: "c", Nodes: []wire.NodeID{"c/s1"}}}}
	if err := l.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := l.HomeRing("b"); got != 0 {
		t.Errorf("HomeRing(b) = %d, want 0", got)
	}
	if got := l.HomeRing("d"); got != -1 {
		t.Errorf("HomeRing(d) = %d, want -1", got)
	}
	if got := l.RingOf("c/s1"); got != 1 {
		t.Errorf("RingOf(c/s1) = %d, want 1", got)
	}
}

func TestCodecRoundTrip(t *testing.T) {
	v := wire.Version{TS: hlc.Timestamp{WallNanos: 1234567, Logical: 3}, Origin: "a/cc"}
	r := record{version: v, stable: true, value: []byte("hello")}
	got, err := decodeRecord(encodeRecord(r))
	if err != nil || got.version != v || !got.stable || string(got.value) != "hello" {
		t.Fatalf("record round trip: %+v, %v", got, err)
	}
	e := &buffered{key: "k", value: []byte("v"), version: v, deps: []wire.Dep{{Key: "x", Version: v}, {Key: "y"}}}
	back, err := decodeBuffered(encodeBuffered(e))
	if err != nil || back.key != "k" || string(back.value) != "v" || back.version != v || len(back.deps) != 2 || back.deps[0].Version != v || back.deps[1].Key != "y" {
		t.Fatalf("buffered round trip: %+v, %v", back, err)
	}
	if _, err := decodeBuffered([]byte{1, 2, 3}); !errors.Is(err, errCorrupt) {
		t.Fatalf("decode of garbage: %v, want errCorrupt", err)
	}
	s := sessionID{client: "a/c1", session: 7}
	gs, seq, err := parseBufferKey(bufferKey(9, s, 42))
	if err != nil || gs != s || seq != 42 {
		t.Fatalf("buffer key round trip: %+v %d %v", gs, seq, err)
	}
}

func TestSessionRestrictions(t *testing.T) {
	s := NewSession(1)
	v := func(n int64) wire.Version { return wire.Version{TS: hlc.Timestamp{WallNanos: n}, Origin: "a/cc"} }
	// A stable read binds nothing.
	s.Read("x", true, v(1), wire.FromRing, 0, false)
	if s.Ring() != wire.NoRing || s.Restrictions() != 0 {
		t.Fatalf("after a stable read: ring %d, %d restrictions", s.Ring(), s.Restrictions())
	}
	// An in-flight read binds the session to its ring and becomes a
	// dependency of the next write.
	s.Read("y", true, v(2), wire.FromRing, 1, true)
	if s.Ring() != 1 || s.Restrictions() != 1 {
		t.Fatalf("after an in-flight read: ring %d, %d restrictions", s.Ring(), s.Restrictions())
	}
	if g := s.Get(1, "z"); g.Ring != 1 {
		t.Fatalf("a bound session's Get goes to ring %d, want 1", g.Ring)
	}
	p := s.Put(1, "z", []byte("v"), false)
	if len(p.Deps) != 1 || p.Deps[0].Key != "y" || p.Seq != 1 || p.Seen != v(2) {
		t.Fatalf("put after the in-flight read: %+v", p)
	}
	// A read from the write buffer binds nothing.
	s.Read("z", true, v(3), wire.FromBuffer, wire.NoRing, true)
	if s.Restrictions() != 1 {
		t.Fatalf("a write-buffer read changed the restrictions: %d", s.Restrictions())
	}
	// The completion of an earlier write lifts nothing; that of the
	// write after the read lifts it.
	s.Complete(0)
	if s.Restrictions() != 1 {
		t.Fatalf("completion of seq 0 lifted a restriction")
	}
	s.Complete(1)
	if s.Ring() != wire.NoRing || s.Restrictions() != 0 {
		t.Fatalf("after the put's completion: ring %d, %d restrictions", s.Ring(), s.Restrictions())
	}
	// A write carries only the restrictions taken since the last
	// acknowledged write, whose own dependencies its ring checked first.
	s.PutDone(1, v(3))
	s.Read("u", true, v(6), wire.FromRing, 0, true)
	s.Read("t", true, v(7), wire.FromRing, 0, true)
	p = s.Put(1, "q", []byte("v"), false)
	if len(p.Deps) != 2 || p.Deps[0].Key != "u" || p.Deps[1].Key != "t" {
		t.Fatalf("put after an acknowledged one: deps %+v, want u and t", p.Deps)
	}
	s.PutDone(2, v(8))
	s.Read("o", true, v(9), wire.FromRing, 0, true)
	if p := s.Put(1, "", nil, true); len(p.Deps) != 3 {
		t.Fatalf("notify-after: deps %+v, want every restriction (u, t, o)", p.Deps)
	}
	s.Complete(4)
	// Reading the very version stable again lifts its restriction; a
	// newer stable version of the key does not.
	s.Read("w", true, v(4), wire.FromRing, 0, true)
	s.Read("w", true, v(5), wire.FromRing, 0, false)
	if s.Restrictions() != 1 {
		t.Fatalf("a newer stable version lifted the restriction of an older one")
	}
	s.Read("w", true, v(4), wire.FromRing, 0, false)
	if s.Restrictions() != 0 {
		t.Fatalf("the version read stable did not lift its restriction")
	}
}
