package check

import (
	"cmp"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cosla/cosla/internal/core/hlc"
)

// Multi-writer histories below use ts and ms of check_test.go: times in
// milliseconds, timestamps in whole seconds. A version's origin is the
// datacenter "dc-" + the session of the Put unless stated.

func mv(seconds int64, origin string) Version { return Version{TS: ts(seconds), Origin: origin} }

// mput is an acknowledged Put assigned version ts(t)/dc-session.
func mput(session, key, value string, call, ret int, t int64) MultiOp {
	return MultiOp{Session: session, Kind: Put, Key: key, Value: value, Call: ms(call), Return: ms(ret),
		OK: true, Version: mv(t, "dc-"+session)}
}

// mlost is an unacknowledged (indeterminate) Put.
func mlost(session, key, value string, call, ret int) MultiOp {
	return MultiOp{Session: session, Kind: Put, Key: key, Value: value, Call: ms(call), Return: ms(ret)}
}

// mget is a Get that returned value at version ts(t)/origin.
func mget(session, key, value string, call, ret int, t int64, origin string) MultiOp {
	return MultiOp{Session: session, Kind: Get, Key: key, Value: value, Found: true, Call: ms(call), Return: ms(ret),
		OK: true, Version: mv(t, origin)}
}

// mmiss is a Get that found no version.
func mmiss(session, key string, call, ret int) MultiOp {
	return MultiOp{Session: session, Kind: Get, Key: key, Call: ms(call), Return: ms(ret), OK: true}
}

// mtx is a get-transaction that returned items.
func mtx(session string, call, ret int, items ...TxItem) MultiOp {
	return MultiOp{Session: session, Kind: Tx, Call: ms(call), Return: ms(ret), OK: true, Items: items}
}

// item is a Tx item that returned value at version ts(t)/origin; noItem
// one that found no version of key.
func item(key, value string, t int64, origin string) TxItem {
	return TxItem{Key: key, Value: value, Found: true, Version: mv(t, origin)}
}

func noItem(key string) TxItem { return TxItem{Key: key} }

// replicas returns n final states that all hold versions.
func replicas(n int, versions map[string]Version) []FinalState {
	fs := make([]FinalState, n)
	for i := range fs {
		fs[i] = FinalState{Replica: fmt.Sprintf("dc-%d", i), Versions: maps.Clone(versions)}
	}
	return fs
}

func TestVersion(t *testing.T) {
	a, b, c := mv(1, "dc-b"), mv(2, "dc-a"), mv(2, "dc-b")
	if !a.Less(b) || !b.Less(c) || c.Less(b) || b.Less(b) || b.Compare(b) != 0 || c.Compare(a) != 1 {
		t.Errorf("versions %s < %s < %s are misordered", a, b, c)
	}
	if !(Version{}).IsZero() || b.IsZero() || (Version{Origin: "x"}).IsZero() {
		t.Error("IsZero is wrong")
	}
	if got := c.String(); got != "2.000000000,0/dc-b" {
		t.Errorf("String() = %q", got)
	}
	if got := Tx.String(); got != "gettx" {
		t.Errorf("Tx.String() = %q", got)
	}
}

func TestCheckMulti(t *testing.T) {
	unknownKind := mput("a", "x", "x1", 0, 10, 1)
	unknownKind.Kind = 0
	backwards := mput("a", "x", "x1", 10, 5, 1)
	zeroPut := mput("a", "x", "x1", 0, 10, 1)
	zeroPut.Version = Version{}
	missWithVersion := mmiss("b", "x", 20, 30)
	missWithVersion.Version = mv(1, "dc-a")
	getWithItems := mget("c", "x", "x1", 20, 30, 1, "dc-a")
	getWithItems.Items = []TxItem{item("x", "x1", 1, "dc-a")}
	notOK := mget("d", "x", "nothing", 20, 30, 9, "dc-z")
	notOK.OK = false
	notOKTx := mtx("e", 20, 30, noItem("x"))
	notOKTx.OK = false
	buffered := mget("a", "x", "x1", 20, 30, 1, "dc-a")
	buffered.FromBuffer = true
	sameVersion := mput("b", "x", "x2", 0, 10, 1)
	sameVersion.Version = mv(1, "dc-a")

	tests := []struct {
		name  string
		h     []MultiOp
		final []FinalState
		want  []want
	}{
		{name: "empty history"},

		// multi-op
		{
			name: "well-formed history of every kind",
			h: []MultiOp{
				mput("a", "x", "x1", 0, 10, 1),
				buffered,
				mget("b", "x", "x1", 20, 30, 1, "dc-a"),
				mtx("b", 40, 50, item("x", "x1", 1, "dc-a"), noItem("y")),
				notOK,
				mlost("c", "y", "y1", 0, 10),
			},
			final: replicas(3, map[string]Version{"x": mv(1, "dc-a")}),
		},
		{
			name: "unknown kind, return before call",
			h:    []MultiOp{unknownKind, backwards},
			want: []want{{0, RuleMultiOp}, {1, RuleMultiOp}},
		},
		{
			name: "duplicate put value",
			h:    []MultiOp{mput("a", "x", "v", 0, 10, 1), mput("b", "y", "v", 0, 10, 2)},
			want: []want{{1, RuleMultiOp}},
		},
		{
			name: "acknowledged put without version",
			h:    []MultiOp{zeroPut},
			want: []want{{0, RuleMultiOp}},
		},
		{
			name: "read of a value no put wrote, or wrote to another key",
			h: []MultiOp{
				mput("a", "y", "y1", 0, 10, 1),
				mget("b", "x", "x1", 20, 30, 1, "dc-a"),
				mget("b", "x", "y1", 40, 50, 1, "dc-a"),
			},
			want: []want{{1, RuleMultiOp}, {2, RuleMultiOp}},
		},
		{
			name: "read with another version than the put's",
			h: []MultiOp{
				mput("a", "x", "x1", 0, 10, 1),
				mget("b", "x", "x1", 20, 30, 1, "dc-b"),
				mtx("c", 20, 30, item("x", "x1", 2, "dc-a")),
			},
			want: []want{{1, RuleMultiOp}, {2, RuleMultiOp}},
		},
		{
			name: "two reads of an unacknowledged put disagree",
			h: []MultiOp{
				mlost("a", "x", "x1", 0, 10),
				mget("b", "x", "x1", 20, 30, 3, "dc-a"),
				mget("c", "x", "x1", 20, 30, 4, "dc-a"),
			},
			want: []want{{2, RuleMultiOp}},
		},
		{
			name: "found nothing with a version; get with items",
			h:    []MultiOp{mput("a", "x", "x1", 0, 10, 1), missWithVersion, getWithItems},
			want: []want{{1, RuleMultiOp}, {2, RuleMultiOp}},
		},
		{
			name: "transaction reads a key twice",
			h:    []MultiOp{mtx("b", 0, 10, noItem("x"), noItem("x"))},
			want: []want{{0, RuleMultiOp}},
		},
		{
			name: "session runs two ops at once",
			h:    []MultiOp{mput("a", "x", "x1", 0, 10, 1), mmiss("a", "y", 5, 15)},
			want: []want{{1, RuleMultiOp}},
		},
		{
			name: "read of a put called after it returned",
			h:    []MultiOp{mget("b", "x", "x1", 0, 10, 1, "dc-a"), mput("a", "x", "x1", 20, 30, 1)},
			want: []want{{0, RuleMultiOp}},
		},
		{
			// a reads x1 and then writes y1; b reads y1 and then writes
			// x1: a cycle, although every write was called no later
			// than its read returned.
			name: "session order and reads-from form a cycle",
			h: []MultiOp{
				mget("a", "x", "x1", 0, 30, 2, "dc-b"),
				mput("a", "y", "y1", 30, 40, 3),
				mget("b", "y", "y1", 0, 30, 3, "dc-a"),
				mput("b", "x", "x1", 30, 50, 2),
			},
			want: []want{{0, RuleMultiOp}},
		},

		// multi-version (H2)
		{
			name: "concurrent writes with last-writer-wins",
			h: []MultiOp{
				mput("a", "x", "x1", 0, 10, 5),
				mput("b", "x", "x2", 20, 30, 3), // a skewed clock, concurrent with x1
				mput("c", "x", "x3", 0, 10, 5),  // ts 5 at dc-c beats x1's ts 5 at dc-a
				mget("d", "x", "x3", 40, 50, 5, "dc-c"),
				mput("d", "x", "x4", 60, 70, 6),
			},
			final: replicas(2, map[string]Version{"x": mv(6, "dc-d")}),
			want:  []want{},
		},
		{
			name: "two puts with the same version",
			h:    []MultiOp{mput("a", "x", "x1", 0, 10, 1), sameVersion},
			want: []want{{1, RuleMultiVersion}},
		},
		{
			name: "same version on different keys",
			h:    []MultiOp{mput("a", "x", "x1", 0, 10, 1), mput("a", "y", "y1", 20, 30, 1)},
		},
		{
			name: "later put of the session gets an older version",
			h:    []MultiOp{mput("a", "x", "x1", 0, 10, 5), mput("a", "x", "x2", 20, 30, 3)},
			want: []want{{1, RuleMultiVersion}},
		},
		{
			name: "put after reading a newer version of its key through another key",
			h: []MultiOp{
				mput("a", "x", "x1", 0, 10, 5),
				mput("a", "y", "y1", 20, 30, 6),
				mtx("b", 40, 50, item("y", "y1", 6, "dc-a")),
				mput("b", "x", "x2", 60, 70, 4),
			},
			want: []want{{3, RuleMultiVersion}},
		},
		{
			name: "unacknowledged put does not order the later puts of its session",
			h:    []MultiOp{mlost("a", "x", "x1", 0, 10), mget("b", "x", "x1", 20, 30, 5, "dc-a"), mput("a", "x", "x2", 20, 30, 3)},
		},

		// multi-causal (H1)
		{
			name: "causal reads across sessions",
			h: []MultiOp{
				mput("a", "x", "x1", 0, 10, 1),
				mput("a", "y", "y1", 20, 30, 2),
				mget("b", "y", "y1", 40, 50, 2, "dc-a"),
				mget("b", "x", "x1", 60, 70, 1, "dc-a"),
				mmiss("c", "x", 60, 70), // y1 is not in c's past
			},
		},
		{
			name: "read of y1 then x not found",
			h: []MultiOp{
				mput("a", "x", "x1", 0, 10, 1),
				mput("a", "y", "y1", 20, 30, 2),
				mget("b", "y", "y1", 40, 50, 2, "dc-a"),
				mmiss("b", "x", 60, 70),
			},
			want: []want{{3, RuleMultiCausal}},
		},
		{
			name: "read of y1 then the older x0",
			h: []MultiOp{
				mput("c", "x", "x0", 0, 5, 1),
				mput("a", "x", "x1", 0, 10, 2),
				mput("a", "y", "y1", 20, 30, 3),
				mget("b", "y", "y1", 40, 50, 3, "dc-a"),
				mget("b", "x", "x0", 60, 70, 1, "dc-c"),
			},
			want: []want{{4, RuleMultiCausal}},
		},
		{
			name: "read your own writes",
			h:    []MultiOp{mput("a", "x", "x1", 0, 10, 1), mmiss("a", "x", 20, 30)},
			want: []want{{1, RuleMultiCausal}},
		},
		{
			name: "unacknowledged put never read does not count",
			h: []MultiOp{
				mlost("a", "x", "x1", 0, 10),
				mmiss("a", "x", 20, 30),
				mput("a", "y", "y1", 40, 50, 2),
				mget("b", "y", "y1", 60, 70, 2, "dc-a"),
				mmiss("b", "x", 80, 90),
			},
		},
		{
			name: "unacknowledged put read by b counts downstream of b's read only",
			h: []MultiOp{
				mlost("a", "x", "x1", 0, 10),
				mmiss("b", "x", 10, 15),                 // before b read it: fine
				mget("b", "x", "x1", 20, 30, 1, "dc-a"), // reveals ts 1
				mput("b", "z", "z1", 40, 50, 2),
				mmiss("a", "x", 40, 50), // a never read x1: fine
				mget("c", "z", "z1", 60, 70, 2, "dc-b"),
				mmiss("c", "x", 80, 90), // x1 -> b's read -> z1 -> c's read
			},
			want: []want{{6, RuleMultiCausal}},
		},
		{
			name: "transaction item older than the session's past",
			h: []MultiOp{
				mput("a", "x", "x1", 0, 10, 1),
				mput("a", "y", "y1", 20, 30, 2),
				mget("b", "y", "y1", 40, 50, 2, "dc-a"),
				mtx("b", 60, 70, noItem("x")),
			},
			want: []want{{3, RuleMultiCausal}},
		},
		{
			name: "transaction items count as reads for later ops",
			h: []MultiOp{
				mput("a", "x", "x1", 0, 10, 1),
				mput("a", "y", "y1", 20, 30, 2),
				mtx("b", 40, 50, item("y", "y1", 2, "dc-a"), item("x", "x1", 1, "dc-a")),
				mmiss("b", "x", 60, 70),
				mput("b", "z", "z1", 80, 90, 3),
				mget("c", "z", "z1", 100, 110, 3, "dc-b"),
				mmiss("c", "y", 120, 130),
			},
			want: []want{{3, RuleMultiCausal}, {6, RuleMultiCausal}},
		},
		{
			name: "not-OK reads are not checked and carry nothing",
			h: []MultiOp{
				mput("a", "x", "x1", 0, 10, 1),
				mput("a", "y", "y1", 20, 30, 2),
				notOK,
				notOKTx,
			},
		},

		// multi-snapshot (H4)
		{
			name: "transaction returns a snapshot",
			h: []MultiOp{
				mput("a", "x", "x1", 0, 10, 1),
				mput("a", "y", "y1", 20, 30, 2),
				mtx("b", 40, 50, item("y", "y1", 2, "dc-a"), item("x", "x1", 1, "dc-a")),
				mtx("c", 5, 15, item("x", "x1", 1, "dc-a"), noItem("y")), // y1 is later
				mtx("d", 40, 50, noItem("x"), noItem("y")),
			},
		},
		{
			name: "transaction returns y1 and x not found",
			h: []MultiOp{
				mput("a", "x", "x1", 0, 10, 1),
				mput("a", "y", "y1", 20, 30, 2),
				mtx("b", 40, 50, item("y", "y1", 2, "dc-a"), noItem("x")),
			},
			want: []want{{2, RuleMultiSnapshot}},
		},
		{
			name: "transaction returns y1 and the older x0",
			h: []MultiOp{
				mput("c", "x", "x0", 0, 5, 1),
				mput("a", "x", "x1", 0, 10, 2),
				mget("b", "x", "x1", 20, 30, 2, "dc-a"),
				mput("b", "y", "y1", 40, 50, 3),
				mtx("d", 60, 70, noItem("z"), item("x", "x0", 1, "dc-c"), item("y", "y1", 3, "dc-b")),
			},
			want: []want{{4, RuleMultiSnapshot}},
		},

		// multi-converge (H3)
		{
			name: "replicas converge to the newest version",
			h: []MultiOp{
				mput("a", "x", "x1", 0, 10, 2),
				mput("b", "x", "x2", 0, 10, 1),
				mlost("c", "y", "y1", 0, 10), // took effect unseen
			},
			final: replicas(3, map[string]Version{"x": mv(2, "dc-a"), "y": mv(7, "dc-c")}),
		},
		{
			name: "divergent final states",
			h:    []MultiOp{mput("a", "x", "x1", 0, 10, 2), mput("b", "x", "x2", 0, 10, 1)},
			final: []FinalState{
				{Replica: "dc-a", Versions: map[string]Version{"x": mv(2, "dc-a")}},
				{Replica: "dc-b", Versions: map[string]Version{"x": mv(1, "dc-b")}},
			},
			want: []want{{0, RuleMultiConverge}},
		},
		{
			name:  "replicas agree on an older version than an acknowledged put",
			h:     []MultiOp{mput("a", "x", "x1", 0, 10, 2), mput("b", "x", "x2", 0, 10, 1)},
			final: replicas(2, map[string]Version{"x": mv(1, "dc-b")}),
			want:  []want{{0, RuleMultiConverge}},
		},
		{
			name:  "replicas lost a write",
			h:     []MultiOp{mput("a", "x", "x1", 0, 10, 2)},
			final: replicas(2, nil),
			want:  []want{{0, RuleMultiConverge}},
		},
		{
			name: "a replica holds a version no other has",
			final: []FinalState{
				{Replica: "dc-a", Versions: map[string]Version{"x": mv(2, "dc-a")}},
				{Replica: "dc-b", Versions: map[string]Version{}},
			},
			want: []want{{-1, RuleMultiConverge}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vs := CheckMulti(tt.h, tt.final)
			got := violationsOf(vs)
			sortWants(got)
			want := slices.Clone(tt.want)
			sortWants(want)
			if len(got) != len(want) || !slices.Equal(got, want) {
				t.Errorf("got %v, want %v", got, want)
				for _, v := range vs {
					t.Logf("  op %d %s", v.Op, v)
				}
			}
		})
	}
}

// TestMultiConvergeBound checks that rule multi-converge reports 20 keys
// one by one and counts the rest.
func TestMultiConvergeBound(t *testing.T) {
	var h []MultiOp
	for k := range 25 {
		h = append(h, mput("a", fmt.Sprintf("k%02d", k), fmt.Sprintf("v%d", k), 10*k, 10*k+5, int64(k+1)))
	}
	vs := CheckMulti(h, replicas(2, nil))
	if len(vs) != maxConverge+1 {
		t.Fatalf("%d violations, want %d: %v", len(vs), maxConverge+1, vs)
	}
	for k, v := range vs[:maxConverge] {
		if v.Rule != RuleMultiConverge || v.Op != k || !strings.Contains(v.Detail, fmt.Sprintf(`key "k%02d"`, k)) {
			t.Errorf("violation %d: %+v", k, v)
		}
	}
	if last := vs[maxConverge]; last.Op != -1 || !strings.Contains(last.Detail, "5 more keys differ") {
		t.Errorf("summary: %+v", last)
	}
}

// TestMultiDetail checks that details name the ops involved and the chain
// of causal precedence.
func TestMultiDetail(t *testing.T) {
	tests := []struct {
		name  string
		h     []MultiOp
		final []FinalState
		want  []string
	}{
		{
			name: "causal",
			h: []MultiOp{
				mlost("a", "x", "x1", 0, 10),
				mget("b", "x", "x1", 20, 30, 1, "dc-a"),
				mput("b", "z", "z1", 40, 50, 2),
				mget("c", "z", "z1", 60, 70, 2, "dc-b"),
				mmiss("c", "x", 80, 90),
			},
			want: []string{
				`get #4 (session c, key "x", called 80ms, returned 90ms) found no version, but causal consistency requires a version >= 1.000000000,0/dc-a from put #0 (session a, key "x", value "x1", called 0s, returned 10ms, unacknowledged, version 1.000000000,0/dc-a as read by get #1), which causally precedes it: ` +
					`put #0 (session a) -> get #1 (session b) reads put #0 -> put #2 later in session b -> get #3 (session c) reads put #2 -> get #4 later in session c`,
			},
		},
		{
			name: "version",
			h: []MultiOp{
				mput("a", "x", "x1", 0, 10, 5),
				mput("a", "y", "y1", 20, 30, 6),
				mtx("b", 40, 50, item("y", "y1", 6, "dc-a")),
				mput("b", "x", "x2", 60, 70, 4),
			},
			want: []string{
				`put #3 (session b, key "x", value "x2", called 60ms, returned 70ms, version 4.000000000,0/dc-b) was assigned version 4.000000000,0/dc-b, older than version 5.000000000,0/dc-a of put #0`,
				`which causally precedes it: put #0 (session a) -> put #1 later in session a -> gettx #2 (session b) reads put #1 -> put #3 later in session b; the version order`,
			},
		},
		{
			name: "snapshot",
			h: []MultiOp{
				mput("a", "x", "x1", 0, 10, 1),
				mput("a", "y", "y1", 20, 30, 2),
				mtx("b", 40, 50, item("y", "y1", 2, "dc-a"), noItem("x")),
			},
			want: []string{
				`gettx #2 (session b, keys "y", "x", called 40ms, returned 50ms) found no version of key "x", but it read "y1"@2.000000000,0/dc-a of key "y" from put #1 (`,
				`whose causal past holds put #0 (session a, key "x", value "x1", called 0s, returned 10ms, version 1.000000000,0/dc-a) with the newer version 1.000000000,0/dc-a: put #0 (session a) -> put #1 later in session a; a get-transaction`,
			},
		},
		{
			name: "converge",
			h:    []MultiOp{mput("a", "x", "x1", 0, 10, 2)},
			final: []FinalState{
				{Replica: "dc-a", Versions: map[string]Version{"x": mv(2, "dc-a")}},
				{Replica: "dc-b", Versions: map[string]Version{}},
			},
			want: []string{
				`key "x" differs across replicas after quiescence: dc-a holds 2.000000000,0/dc-a, dc-b holds nothing; every replica must hold the newest version 2.000000000,0/dc-a, of put #0 (session a`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vs := CheckMulti(tt.h, tt.final)
			if len(vs) != 1 {
				t.Fatalf("got %d violations, want 1: %v", len(vs), vs)
			}
			for _, w := range tt.want {
				if !strings.Contains(vs[0].Detail, w) {
					t.Errorf("detail\n  %s\nlacks\n  %s", vs[0].Detail, w)
				}
			}
		})
	}
}

// multiHistory simulates a correct causal table: one global store that
// applies each op atomically when it is called, keeping the newest
// version of each key (last-writer-wins), so that every read sees the
// latest version. Each of origins datacenters assigns versions from its
// own hybrid logical clock, skewed by up to 5ms, which it first updates
// with the newest timestamp the session has seen, as a causal store
// carries a session's dependencies; so versions extend causal order but
// not real time. A tenth of the Puts fail: of those, a third never take
// effect, a third do at once and a third up to 50ms later, each with a
// version its session never learns. A twentieth of the Gets and
// transactions return garbage and are not OK. The store's final state is
// every replica's.
func multiHistory(seed uint64, ops, keys, sessions, origins int) ([]MultiOp, []FinalState) {
	r := rand.New(rand.NewPCG(seed, 7))
	var now time.Duration
	type origin struct {
		name  string
		clock *hlc.Clock
	}
	dcs := make([]origin, origins)
	for o := range dcs {
		skew := int64(r.IntN(10_000_000)) - 5_000_000
		dcs[o] = origin{fmt.Sprintf("dc-%d", o), hlc.NewClock(func() int64 { return 1e9 + int64(now) + skew })}
	}
	type session struct {
		id     string
		origin int
		seen   hlc.Timestamp
		busy   time.Duration
	}
	ss := make([]*session, sessions)
	for s := range ss {
		ss[s] = &session{id: fmt.Sprintf("s%d", s), origin: r.IntN(origins)}
	}
	type version struct {
		value string
		v     Version
	}
	store := make(map[string]version)
	apply := func(key, value string, o int, seen hlc.Timestamp) Version {
		dcs[o].clock.Update(seen)
		v := Version{TS: dcs[o].clock.Now(), Origin: dcs[o].name}
		if cur, ok := store[key]; !ok || cur.v.Less(v) {
			store[key] = version{value, v}
		}
		return v
	}
	type later struct {
		at         time.Duration
		key, value string
		origin     int
		seen       hlc.Timestamp
	}
	var pending []later
	pickKey := func() string {
		if r.IntN(2) == 0 {
			return fmt.Sprintf("k%d", r.IntN(min(keys, 10))) // hot keys
		}
		return fmt.Sprintf("k%d", r.IntN(keys))
	}
	var h []MultiOp
	for seq := 1; len(h) < ops; seq++ {
		now += time.Duration(r.IntN(100)) * time.Microsecond
		pending = slices.DeleteFunc(pending, func(l later) bool {
			if l.at <= now {
				apply(l.key, l.value, l.origin, l.seen)
				return true
			}
			return false
		})
		s := ss[r.IntN(len(ss))]
		if s.busy > now {
			continue
		}
		op := MultiOp{Session: s.id, Call: now, Return: now + time.Duration(1+r.IntN(20))*time.Millisecond}
		switch k := r.IntN(20); {
		case k < 9:
			op.Kind, op.Key, op.Value = Put, pickKey(), fmt.Sprintf("v%d", seq)
			op.OK = r.IntN(10) != 0
			switch {
			case op.OK:
				op.Version = apply(op.Key, op.Value, s.origin, s.seen)
				s.seen = hlc.Max(s.seen, op.Version.TS)
			case r.IntN(3) == 0:
				apply(op.Key, op.Value, s.origin, s.seen)
			case r.IntN(2) == 0:
				pending = append(pending, later{now + time.Duration(r.IntN(50))*time.Millisecond, op.Key, op.Value, s.origin, s.seen})
			}
		case k < 17:
			op.Kind, op.Key, op.OK = Get, pickKey(), r.IntN(20) != 0
			if cur, ok := store[op.Key]; ok {
				op.Found, op.Value, op.Version = true, cur.value, cur.v
				s.seen = hlc.Max(s.seen, cur.v.TS)
			}
			op.FromBuffer = op.Found && r.IntN(10) == 0 // informational only
			if !op.OK {
				op.Found, op.Value, op.Version = true, "garbage", Version{TS: hlc.Timestamp{WallNanos: 1}}
			}
		default:
			op.Kind, op.OK = Tx, r.IntN(20) != 0
			for n := 2 + r.IntN(3); len(op.Items) < n; {
				key := pickKey()
				if slices.ContainsFunc(op.Items, func(it TxItem) bool { return it.Key == key }) {
					continue
				}
				it := TxItem{Key: key}
				if cur, ok := store[key]; ok {
					it.Found, it.Value, it.Version = true, cur.value, cur.v
					s.seen = hlc.Max(s.seen, cur.v.TS)
				}
				if !op.OK {
					it.Found, it.Value = true, "garbage"
				}
				op.Items = append(op.Items, it)
			}
		}
		h = append(h, op)
		s.busy = op.Return
	}
	for _, l := range pending {
		apply(l.key, l.value, l.origin, l.seen)
	}
	final := make(map[string]Version, len(store))
	for key, cur := range store {
		final[key] = cur.v
	}
	// Record in Return order, as a recorder appending on completion does.
	slices.SortStableFunc(h, func(a, b MultiOp) int { return cmp.Compare(a.Return, b.Return) })
	return h, replicas(3, final)
}

func TestRandomMultiHistoriesPass(t *testing.T) {
	for seed := range uint64(30) {
		h, final := multiHistory(seed, 3000, 50, 40, 3)
		if vs := CheckMulti(h, final); len(vs) > 0 {
			t.Fatalf("seed %d: %d violations in a correct history, first: %s", seed, len(vs), vs[0])
		}
	}
}

// hasViolation reports whether vs holds one of rule at op.
func hasViolation(vs []Violation, op int, rule string) bool {
	return slices.ContainsFunc(vs, func(v Violation) bool { return v.Op == op && v.Rule == rule })
}

var (
	mutationSeeds = flag.Int("check.seeds", 5, "TestRandomMultiMutations: number of random histories to break (each some 30 ways)")
	largeFlag     = flag.Bool("check.large", false, "TestMultiLargeHistory: check a history of 200,000 ops over 10,000 keys instead of 20,000 over 1,000 (2,000 sessions either way)")
)

// TestRandomMultiMutations breaks correct histories in ways each rule must
// catch: a Get that returns an older version, or none, of a key its
// session wrote before (multi-causal); a Put assigned a version older than
// its session's earlier Put to the key (multi-version); a Tx that finds
// nothing of a key written before another item's Put in that Put's session
// (multi-snapshot); a replica that lost a key's newest version
// (multi-converge).
func TestRandomMultiMutations(t *testing.T) {
	for seed := range uint64(*mutationSeeds) {
		orig, origFinal := multiHistory(seed, 3000, 50, 40, 3)
		r := rand.New(rand.NewPCG(seed, 8))
		clone := func() ([]MultiOp, []FinalState) {
			h := slices.Clone(orig)
			for k := range h {
				h[k].Items = slices.Clone(h[k].Items)
			}
			final := slices.Clone(origFinal)
			for k := range final {
				final[k].Versions = maps.Clone(final[k].Versions)
			}
			return h, final
		}
		// Session order and, per key, the session's last acked Put.
		bySession := make(map[string][]int)
		for i, op := range orig {
			bySession[op.Session] = append(bySession[op.Session], i)
		}
		for _, ops := range bySession {
			slices.SortFunc(ops, func(a, b int) int { return cmp.Compare(orig[a].Call, orig[b].Call) })
		}

		var stale, versions, tries int
		for _, ops := range bySession {
			own := make(map[string]int)
			for _, i := range ops {
				op := orig[i]
				if op.Kind == Put && op.OK {
					if prev, ok := own[op.Key]; ok && tries < 10 {
						// multi-version: older than the session's last Put.
						tries++
						h, final := clone()
						older := Version{TS: h[prev].Version.TS, Origin: ""}
						old := h[i].Version
						h[i].Version = older
						for j := range h {
							if h[j].Kind == Get && h[j].Value == op.Value {
								h[j].Version = older
							}
							for k := range h[j].Items {
								if it := &h[j].Items[k]; it.Value == op.Value {
									it.Version = older
								}
							}
						}
						for _, f := range final {
							if f.Versions[op.Key] == old {
								f.Versions[op.Key] = older
							}
						}
						if vs := CheckMulti(h, final); !hasViolation(vs, i, RuleMultiVersion) {
							t.Fatalf("seed %d: put #%d made older than put #%d of its session: no multi-version violation in %v", seed, i, prev, vs)
						}
						versions++
					}
					own[op.Key] = i
					continue
				}
				q, ok := own[op.Key]
				if op.Kind != Get || !op.OK || !ok || stale >= 10 {
					continue
				}
				// multi-causal: return nothing, or a version older than q's
				// of a Put called before the Get (so not causally after it).
				h, final := clone()
				g := &h[i]
				var older []int
				for p, po := range orig {
					if po.Kind == Put && po.OK && po.Key == op.Key && po.Call < op.Call && po.Version.Less(orig[q].Version) {
						older = append(older, p)
					}
				}
				if len(older) == 0 || r.IntN(3) == 0 {
					g.Found, g.Value, g.Version = false, "", Version{}
				} else {
					p := older[r.IntN(len(older))]
					g.Value, g.Version = orig[p].Value, orig[p].Version
				}
				if vs := CheckMulti(h, final); !hasViolation(vs, i, RuleMultiCausal) {
					t.Fatalf("seed %d: get #%d made stale behind put #%d of its session: no multi-causal violation in %v", seed, i, q, vs)
				}
				stale++
			}
		}

		// multi-snapshot: a Tx item finds nothing of a key that the
		// session of another item's Put wrote before that Put.
		writer := make(map[string]int)
		for i, op := range orig {
			if op.Kind == Put {
				writer[op.Value] = i
			}
		}
		snapshots := 0
		for i, op := range orig {
			if op.Kind != Tx || !op.OK || snapshots == 10 {
				continue
			}
			j, x := slices.IndexFunc(op.Items, func(it TxItem) bool { return it.Found }), -1
			if j < 0 {
				continue
			}
			w := writer[op.Items[j].Value]
			for _, q := range bySession[orig[w].Session] {
				if orig[q].Call >= orig[w].Call {
					break
				}
				if orig[q].Kind == Put && orig[q].OK {
					if k := slices.IndexFunc(op.Items, func(it TxItem) bool { return it.Key == orig[q].Key }); k >= 0 && k != j {
						x = k
					}
				}
			}
			if x < 0 {
				continue
			}
			h, final := clone()
			h[i].Items[x] = TxItem{Key: op.Items[x].Key}
			if vs := CheckMulti(h, final); !hasViolation(vs, i, RuleMultiSnapshot) {
				t.Fatalf("seed %d: gettx #%d made to miss key %q: no multi-snapshot violation in %v", seed, i, op.Items[x].Key, vs)
			}
			snapshots++
		}
		if stale == 0 || versions == 0 || snapshots == 0 {
			t.Fatalf("seed %d: %d stale gets, %d older puts and %d broken snapshots tried; the test checks nothing", seed, stale, versions, snapshots)
		}

		// multi-converge: one replica loses or rolls back one key.
		h, final := clone()
		keys := slices.Sorted(maps.Keys(final[0].Versions))
		key := keys[r.IntN(len(keys))]
		f := final[r.IntN(len(final))]
		if r.IntN(2) == 0 {
			delete(f.Versions, key)
		} else {
			f.Versions[key] = Version{TS: hlc.Timestamp{WallNanos: 1}, Origin: "dc-0"}
		}
		vs := CheckMulti(h, final)
		if len(vs) != 1 || vs[0].Rule != RuleMultiConverge || !strings.Contains(vs[0].Detail, fmt.Sprintf("key %q", key)) {
			t.Fatalf("seed %d: replica %s lost key %q: got %v", seed, f.Replica, key, vs)
		}
	}
}

// TestMultiLargeHistory checks that a correct history of 20,000 ops by
// 2,000 sessions (wide clocks with an inner level over their leaves)
// passes, and logs how long the check took; -check.large checks 200,000
// ops, which take a few seconds (BenchmarkCheckMulti measures it).
func TestMultiLargeHistory(t *testing.T) {
	if testing.Short() {
		t.Skip("large history")
	}
	ops, keys := 20_000, 1000
	if *largeFlag {
		ops, keys = 200_000, 10_000
	}
	h, final := multiHistory(1, ops, keys, 2000, 5)
	start := time.Now()
	vs := CheckMulti(h, final)
	took := time.Since(start)
	if len(vs) > 0 {
		t.Fatalf("%d violations in a correct history, first: %s", len(vs), vs[0])
	}
	t.Logf("CheckMulti took %s for %d ops", took, len(h))
}

func BenchmarkCheckMulti(b *testing.B) {
	for _, size := range []struct{ ops, keys, sessions int }{
		{100_000, 1000, 200},
		{100_000, 10_000, 2000},
	} {
		h, final := multiHistory(1, size.ops, size.keys, size.sessions, 5)
		b.Run(fmt.Sprintf("ops=%d/keys=%d/sessions=%d", size.ops, size.keys, size.sessions), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				CheckMulti(h, final)
			}
		})
	}
}

// TestWideClock checks the persistent clocks of CheckMulti against plain
// arrays: running clocks updated in place by their owner, published
// snapshots that must never change, with and without several trie levels.
func TestWideClock(t *testing.T) {
	for _, sessions := range []int{5, 300, 5000} {
		r := rand.New(rand.NewPCG(uint64(sessions), 9))
		shape := newWideShape(sessions)
		type snapshot struct {
			clock *wideNode
			want  []position
		}
		var published []snapshot
		const runners = 4
		running := make([]*wideNode, runners)
		want := make([][]position, runners)
		owner := make([]uint32, runners)
		var tokens uint32
		for k := range running {
			want[k] = make([]position, sessions)
			tokens++
			owner[k] = tokens
		}
		check := func(step int, c *wideNode, want []position) {
			for s := range sessions {
				if got := shape.get(c, s); got != want[s] {
					t.Fatalf("sessions %d, step %d: entry %d is %d, want %d", sessions, step, s, got, want[s])
				}
			}
		}
		for step := range 400 {
			k := r.IntN(runners)
			if r.IntN(2) == 0 || len(published) == 0 {
				// Publish the running clock with one entry raised.
				s, p := r.IntN(sessions), position(1+r.IntN(1000))
				snap := snapshot{clock: shape.with(running[k], s, p), want: slices.Clone(want[k])}
				snap.want[s] = max(snap.want[s], p)
				published = append(published, snap)
				tokens++
				owner[k] = tokens
			} else {
				snap := published[r.IntN(len(published))]
				running[k] = mergeWide(running[k], snap.clock, owner[k])
				for s := range want[k] {
					want[k][s] = max(want[k][s], snap.want[s])
				}
			}
			check(step, running[k], want[k])
			if step%50 == 49 {
				for _, snap := range published {
					check(step, snap.clock, snap.want)
				}
			}
		}
	}
}
