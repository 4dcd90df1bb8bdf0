package replica

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/storage"
	"github.com/cosla/cosla/internal/core/wire"
)

// FuzzRecover starts a node on an engine holding arbitrary keys and
// values, as after a restart over a damaged disk. Start must return an
// error wrapping errCorrupt or succeed, never panic. A node that starts
// must serve Gets, Puts, probes, pulls, pushes, repairs and its timers
// without panicking, must start again on the engine it wrote to and read
// back every Put it acknowledged, and, once it has deleted every table,
// must start again holding none.
//
// The input is a list of records (see writeRecords) that name the spaces
// of the storage layout in keys.go, so that mutations keep to the keys
// the node reads; the seeds are the engines of nodes that served a table
// as primary and as secondary.
//
// Run it with: go test -run x -fuzz FuzzRecover ./internal/core/replica
func FuzzRecover(f *testing.F) {
	for _, eng := range fuzzSeedEngines(f) {
		f.Add(encodeRecords(f, eng))
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		eng := storage.NewMem()
		writeRecords(t, data, eng)
		env := newFuzzEnv(eng)
		n := New(Options{})
		if err := n.Start(env); err != nil {
			if !errors.Is(err, errCorrupt) {
				t.Fatalf("Start: %v, want an error wrapping errCorrupt", err)
			}
			return
		}
		puts := exercise(n, env)

		env.timers = nil
		n = New(Options{})
		if err := n.Start(env); err != nil {
			t.Fatalf("a node that started once does not start again on what it wrote: %v", err)
		}
		for ref, puts := range puts {
			for key, put := range puts {
				env.sent = env.sent[:0]
				n.Receive(fuzzClient, &wire.GetRequest{Req: 1, Tablet: ref, Key: key})
				r := env.sent[0].(*wire.GetReply)
				if r.Code != wire.OK || !r.Found || string(r.Value) != put.value || r.VersionTS != put.ts {
					t.Fatalf("after a restart, Get %s %q = %v, want %q at %s", ref, key, r, put.value, put.ts)
				}
			}
		}
		for _, name := range tableNames(n) {
			env.sent = env.sent[:0]
			n.Receive(fuzzClient, &wire.DeleteTableRequest{Req: 1, Name: name})
			if r := env.sent[0].(*wire.DeleteTableReply); r.Code != wire.OK {
				t.Fatalf("DeleteTable %q: %v", name, r.Code)
			}
		}
		n = New(Options{})
		if err := n.Start(env); err != nil {
			t.Fatalf("start after deleting every table: %v", err)
		}
		if m := n.Metrics(); len(m.Tablets) > 0 {
			t.Fatalf("every table was deleted, but the node holds %v", m.Tablets)
		}
	})
}

const (
	fuzzSelf      = wire.NodeID("s/r1")
	fuzzSecondary = wire.NodeID("s/r2")
	fuzzPrimary   = wire.NodeID("p/r1")
	fuzzClient    = wire.NodeID("s/c1")
)

// fuzzEnv is a node.Env whose sends and timers are kept for the test;
// the physical clock advances a microsecond per reading.
type fuzzEnv struct {
	wall   int64
	engine storage.Engine
	rng    *rand.Rand
	sent   []wire.Msg
	timers []any
}

func newFuzzEnv(eng storage.Engine) *fuzzEnv {
	return &fuzzEnv{wall: 1_700_000_000 * int64(time.Second), engine: eng, rng: rand.New(rand.NewPCG(1, 2))}
}

func (e *fuzzEnv) ID() wire.NodeID { return fuzzSelf }
func (e *fuzzEnv) Now() time.Time  { return time.Unix(0, e.wall) }
func (e *fuzzEnv) WallNanos() int64 {
	e.wall += int64(time.Microsecond)
	return e.wall
}
func (e *fuzzEnv) Send(_ wire.NodeID, m wire.Msg)   { e.sent = append(e.sent, m) }
func (e *fuzzEnv) After(_ time.Duration, timer any) { e.timers = append(e.timers, timer) }
func (e *fuzzEnv) Rand() *rand.Rand                 { return e.rng }
func (e *fuzzEnv) Engine() storage.Engine           { return e.engine }
func (e *fuzzEnv) Logger() *slog.Logger             { return slog.New(slog.DiscardHandler) }

// Record kinds of the fuzz input: the key of a record is the record's
// key bytes in the named space.
const (
	recordRaw      = iota // the key bytes as they are
	recordCatalog         // catalogKey
	recordRevealed        // revealedKey; the key bytes are ignored
	recordData            // tablet keys: the first two key bytes are
	recordLog             // the table ID and the tablet index, the
	recordMeta            // rest follows the tablet prefix
	recordKinds
)

// writeRecords writes the records of data to eng. A record is a kind
// byte (modulo recordKinds), then the key and the value, each a uvarint
// length and that many bytes, cut short at the end of data.
func writeRecords(t *testing.T, data []byte, eng storage.Engine) {
	field := func() []byte {
		n, w := binary.Uvarint(data)
		if w <= 0 {
			data = nil
			return nil
		}
		data = data[w:]
		n = min(n, uint64(len(data)))
		b := data[:n]
		data = data[n:]
		return b
	}
	var b storage.Batch
	for len(data) > 0 {
		kind := data[0] % recordKinds
		data = data[1:]
		key, value := field(), field()
		switch kind {
		case recordCatalog:
			key = catalogKey(string(key))
		case recordRevealed:
			key = revealedKey
		case recordData, recordLog, recordMeta:
			var ref wire.TabletRef
			if len(key) >= 2 {
				ref = wire.TabletRef{Table: uint64(key[0]), Tablet: int32(key[1])}
				key = key[2:]
			}
			space := []byte{spaceData, spaceLog, spaceMeta}[kind-recordData]
			key = append(tabletPrefix(space, ref), key...)
		}
		b.Set(key, value)
	}
	if err := eng.Apply(&b, true); err != nil {
		t.Fatal(err)
	}
}

// encodeRecords is the inverse of writeRecords: eng's keys and values as
// records, in the spaces they belong to.
func encodeRecords(tb testing.TB, eng storage.Engine) []byte {
	var out []byte
	record := func(kind byte, key, value []byte) {
		out = append(out, kind)
		out = binary.AppendUvarint(out, uint64(len(key)))
		out = append(out, key...)
		out = binary.AppendUvarint(out, uint64(len(value)))
		out = append(out, value...)
	}
	err := eng.Scan(nil, nil, func(k, v []byte) bool {
		switch {
		case k[0] == spaceCatalog:
			record(recordCatalog, k[1:], v)
		case string(k) == string(revealedKey):
			record(recordRevealed, nil, v)
		case len(k) >= prefixLen && slices.Contains([]byte{spaceData, spaceLog, spaceMeta}, k[0]) &&
			binary.BigEndian.Uint64(k[1:]) < 256 && binary.BigEndian.Uint32(k[9:]) < 256:
			kind := map[byte]byte{spaceData: recordData, spaceLog: recordLog, spaceMeta: recordMeta}[k[0]]
			record(kind, append([]byte{k[8], k[12]}, k[prefixLen:]...), v)
		default:
			record(recordRaw, k, v)
		}
		return true
	})
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// fuzzSeedEngines returns the engines of nodes that served: a table of
// two tablets by range with this node the primary of the first and a
// secondary of the second, a table by hash in push mode with a quorum
// write level, and a table this node holds no tablet of.
func fuzzSeedEngines(tb testing.TB) []storage.Engine {
	ts := func(s int64) hlc.Timestamp {
		return hlc.Timestamp{WallNanos: (1_600_000_000 + s) * int64(time.Second), Logical: 1}
	}
	layouts := []wire.Layout{{
		Name: "t", ID: 1,
		Tablets: []wire.Tablet{
			{Primary: fuzzSelf, Secondaries: []wire.NodeID{fuzzSecondary}},
			{Start: "m", Primary: fuzzPrimary, Secondaries: []wire.NodeID{fuzzSelf}},
		},
		Replication: wire.Replication{Mode: wire.ModePull, Interval: time.Minute},
	}, {
		Name: "h", ID: 2, Partition: wire.ByHash,
		Tablets: []wire.Tablet{
			{Primary: fuzzPrimary, Secondaries: []wire.NodeID{fuzzSelf, fuzzSecondary}},
			{Start: wire.HashStarts(2)[0], Primary: fuzzSelf, Secondaries: []wire.NodeID{fuzzPrimary}},
		},
		Replication: wire.Replication{Mode: wire.ModePush, Interval: time.Second},
		WriteLevel:  wire.Quorum,
	}, {
		Name: "other", ID: 3,
		Tablets:     []wire.Tablet{{Primary: fuzzPrimary}},
		Replication: wire.Replication{Mode: wire.ModePull, Interval: time.Minute},
	}}
	var out []storage.Engine
	for i := range layouts {
		eng := storage.NewMem()
		env := newFuzzEnv(eng)
		n := New(Options{})
		if err := n.Start(env); err != nil {
			tb.Fatal(err)
		}
		l := layouts[i]
		n.Receive(fuzzClient, &wire.CreateTableRequest{Req: 1, Layout: l})
		for j := range 3 {
			key := fmt.Sprintf("a%d", j)
			n.Receive(fuzzClient, &wire.PutRequest{Req: uint64(10 + j), Tablet: wire.TabletRef{Table: l.ID}, Key: key, Value: []byte(key)})
			n.Receive(fuzzClient, &wire.PutRequest{Req: uint64(20 + j), Tablet: wire.TabletRef{Table: l.ID, Tablet: 1}, Key: "z" + key, Value: []byte(key)})
		}
		for j := range int32(2) {
			ref := wire.TabletRef{Table: l.ID, Tablet: j}
			n.Receive(fuzzSecondary, &wire.PullRequest{Tablet: ref, Since: ts(5)})
			n.Receive(fuzzPrimary, &wire.PullReply{Tablet: ref, Since: hlc.Timestamp{}, High: ts(10),
				Entries: []wire.Entry{{TS: ts(3), Key: "n", Value: []byte("n")}, {TS: ts(7), Key: "o"}}})
			n.Receive(fuzzPrimary, &wire.Push{Tablet: ref, Prev: ts(7), Entry: wire.Entry{TS: ts(12), Key: "p", Value: []byte("p")}, Ack: true})
			n.Receive(fuzzClient, &wire.Repair{Req: uint64(50 + j), Tablet: ref, TS: ts(20)})
			// Staged writes (stage.go): a staging record where the node
			// is a secondary, a receiver's record where it is primary.
			n.Receive(fuzzClient, &wire.PutRequest{Req: uint64(30 + j), Tablet: ref, Key: "r", Value: []byte("r"), Bound: wire.Immediate})
			n.Receive(fuzzClient, &wire.PutRequest{Req: uint64(40 + j), Tablet: ref, Key: "s", Value: []byte("s"), Bound: wire.Immediate,
				Test: &wire.Test{Key: "r", Found: true, Value: []byte("r")}})
			n.Receive(fuzzSecondary, &wire.Forward{Tablet: ref, Seq: 1, Key: "t", Value: []byte("t")})
		}
		out = append(out, eng)
	}
	return out
}

// fuzzPut is a version a Put wrote, as acknowledged.
type fuzzPut struct {
	value string
	ts    hlc.Timestamp
}

// exercise serves every request and timer the node may see on each of
// its tablets, and returns the Puts it acknowledged at once.
func exercise(n *Node, env *fuzzEnv) map[wire.TabletRef]map[string]fuzzPut {
	puts := map[wire.TabletRef]map[string]fuzzPut{}
	req := uint64(0)
	ask := func(from wire.NodeID, m wire.Msg) []wire.Msg {
		env.sent = env.sent[:0]
		n.Receive(from, m)
		return env.sent
	}
	_ = n.Metrics()
	for _, name := range tableNames(n) {
		t := n.tables[name]
		ask(fuzzClient, &wire.TableInfoRequest{Req: req, Name: name})
		for _, i := range slices.Sorted(maps.Keys(t.tablets)) {
			tb := t.tablets[i]
			ref := tb.ref
			keys := []string{tb.start, "k"}
			for _, e := range n.Versions(ref) {
				if len(keys) == 5 {
					break
				}
				keys = append(keys, e.Key)
			}
			slices.Sort(keys)
			keys = slices.Compact(keys)
			for _, key := range keys {
				req++
				ask(fuzzClient, &wire.GetRequest{Req: req, Tablet: ref, Key: key})
				req++
				value := fmt.Sprintf("v%d", req)
				for _, m := range ask(fuzzClient, &wire.PutRequest{Req: req, Tablet: ref, Key: key, Value: []byte(value)}) {
					if r, ok := m.(*wire.PutReply); ok && r.Req == req && r.Code == wire.OK {
						if puts[ref] == nil {
							puts[ref] = map[string]fuzzPut{}
						}
						puts[ref][key] = fuzzPut{value, r.TS}
					}
				}
			}
			ask(fuzzClient, &wire.ProbeRequest{Req: req, Tablet: ref})
			for _, s := range append([]wire.NodeID{fuzzClient}, tb.secondaries...) {
				ask(s, &wire.PullRequest{Tablet: ref})
				ask(s, &wire.PullRequest{Tablet: ref, Since: tb.lastUpdate})
				ask(s, &wire.PushAck{Tablet: ref, High: tb.lastUpdate})
			}
			next := func(d int64) hlc.Timestamp {
				last := hlc.Max(tb.high, tb.lastUpdate)
				return hlc.Timestamp{WallNanos: last.WallNanos + d, Logical: last.Logical}
			}
			entry := wire.Entry{TS: next(2), Key: tb.start, Value: []byte("pulled")}
			ask(tb.primary, &wire.PullReply{Tablet: ref, Since: tb.high, High: next(3), Entries: []wire.Entry{entry}, More: true})
			// A snapshot in two chunks, from the high the replica has now.
			snap := next(5)
			ask(tb.primary, &wire.PullReply{Tablet: ref, Since: tb.high, High: snap, Entries: []wire.Entry{entry}, More: true, Snapshot: true, SnapshotLast: entry.Key})
			ask(tb.primary, &wire.PullReply{Tablet: ref, High: snap, Entries: []wire.Entry{{TS: snap, Key: entry.Key + "z", Value: []byte("snap")}},
				Snapshot: true, InSnapshot: true, SnapshotAfter: entry.Key, SnapshotLast: entry.Key + "z"})
			ask(tb.primary, &wire.Push{Tablet: ref, Prev: tb.lastUpdate, Entry: wire.Entry{TS: next(7), Key: "k", Value: []byte("pushed")}, Ack: true})
			ask(fuzzClient, &wire.Repair{Req: req, Tablet: ref, TS: next(11)})
		}
	}
	timers := env.timers
	env.timers = nil
	for _, timer := range timers {
		n.Fire(timer)
	}
	return puts
}

// tableNames returns the node's tables, sorted.
func tableNames(n *Node) []string {
	return slices.Sorted(maps.Keys(n.tables))
}

// TestStartRejectsCorruptCatalog checks the catalog entries Start
// refuses, each found by FuzzRecover or beside one it found: before, a
// node skipped every table after an entry that was not JSON, served a
// table under a name whose entry it could not delete, and panicked on a
// replication interval of zero.
func TestStartRejectsCorruptCatalog(t *testing.T) {
	good := wire.Layout{
		Name: "t", ID: 1, Tablets: []wire.Tablet{{Primary: fuzzPrimary, Secondaries: []wire.NodeID{fuzzSelf}}},
		Replication: wire.Replication{Mode: wire.ModePull, Interval: time.Minute},
	}
	layout := func(change func(*wire.Layout)) []byte {
		l := good
		change(&l)
		b, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, tc := range []struct {
		name    string
		entries map[string][]byte
		want    string
	}{
		{"not json", map[string][]byte{"a": []byte("{"), "t": layout(func(*wire.Layout) {})}, `catalog entry "a": unexpected end of JSON input`},
		{"other name", map[string][]byte{"h": layout(func(l *wire.Layout) { l.Name = "" })}, `catalog entry "h" holds table ""`},
		{"zero interval", map[string][]byte{"t": layout(func(l *wire.Layout) { l.Replication.Interval = 0 })}, "replication interval must be positive"},
		{"same id", map[string][]byte{"t": layout(func(*wire.Layout) {}), "u": layout(func(l *wire.Layout) { l.Name = "u" })}, `catalog entry "u": table ID 1 is taken`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eng := storage.NewMem()
			var b storage.Batch
			for name, v := range tc.entries {
				b.Set(catalogKey(name), v)
			}
			if err := eng.Apply(&b, true); err != nil {
				t.Fatal(err)
			}
			err := New(Options{}).Start(newFuzzEnv(eng))
			if !errors.Is(err, errCorrupt) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Start: %v, want an error wrapping errCorrupt that says %s", err, tc.want)
			}
		})
	}
}
