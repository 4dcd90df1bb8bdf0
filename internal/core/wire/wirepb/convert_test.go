package wirepb

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/wire"
)

// TestRoundTrip encodes one of every message, marshals it, and checks that
// decoding gives back the same message and addresses.
func TestRoundTrip(t *testing.T) {
	ts := hlc.Timestamp{WallNanos: 1_700_000_000_123_456_789, Logical: 7}
	ref := wire.TabletRef{Table: 42, Tablet: 3}
	layout := wire.Layout{
		Name: "usertable", ID: 42,
		Tablets: []wire.Tablet{
			{Start: "", Primary: "england/r1", Secondaries: []wire.NodeID{"us/r1", "india/r1"}},
			{Start: "m", Primary: "us/r1", Secondaries: []wire.NodeID{"england/r1"}},
		},
		Replication: wire.Replication{Mode: wire.ModePush, Interval: time.Minute},
	}
	hashed := wire.Layout{
		Name: "usertable", ID: 43, Partition: wire.ByHash,
		Tablets: []wire.Tablet{
			{Start: "", Primary: "england/r1", Secondaries: []wire.NodeID{"us/r1"}},
			{Start: wire.HashStarts(2)[0], Primary: "us/r1", Secondaries: []wire.NodeID{"england/r1"}},
		},
		Replication: wire.Replication{Mode: wire.ModePull, Interval: time.Second},
		WriteLevel:  wire.All,
	}
	entries := []wire.Entry{{TS: ts, Key: "a", Value: []byte("1")}, {TS: hlc.Timestamp{WallNanos: ts.WallNanos + 1}, Key: "b", Value: []byte("2")}}
	causal, causalNC, causalEmpty := causalLayouts()
	msgs := []wire.Msg{
		&wire.CreateTableRequest{Req: 1, Layout: layout},
		&wire.CreateTableRequest{Req: 1, Layout: hashed},
		&wire.CreateTableRequest{Req: 1, Layout: causal},
		&wire.CreateTableRequest{Req: 1, Layout: causalNC},
		&wire.CreateTableRequest{Req: 1, Layout: causalEmpty}, // an empty causal layout stays causal
		&wire.TableInfoReply{Req: 6, Code: wire.OK, Layout: causal},
		&wire.TableInfoReply{Req: 6, Code: wire.OK, Layout: hashed},
		&wire.CreateTableReply{Req: 2, Code: wire.TableExists},
		&wire.DeleteTableRequest{Req: 3, Name: "usertable"},
		&wire.DeleteTableReply{Req: 4, Code: wire.OK},
		&wire.TableInfoRequest{Req: 5, Name: "usertable"},
		&wire.TableInfoReply{Req: 6, Code: wire.OK, Layout: layout},
		&wire.PutRequest{Req: 7, Tablet: ref, Key: "k", Value: []byte("v"), MinTS: ts},
		&wire.PutReply{Req: 8, Code: wire.NotPrimary, TS: ts},
		&wire.PutRequest{Req: 7, Tablet: ref, Key: "k", Value: []byte("v"), MinTS: ts, W: 2, Wait: time.Second},
		&wire.PutReply{Req: 8, Code: wire.QuorumTimeout, TS: ts, Acks: 2},
		&wire.GetRequest{Req: 9, Tablet: ref, Key: "k"},
		&wire.GetReply{Req: 10, Code: wire.OK, Found: true, Value: []byte("v"), VersionTS: ts, HighTS: ts, Primary: true},
		&wire.ProbeRequest{Req: 11, Tablet: ref},
		&wire.ProbeReply{Req: 12, Code: wire.OK, HighTS: ts, Primary: true},
		&wire.PullRequest{Tablet: ref, Since: ts},
		&wire.PullReply{Tablet: ref, Code: wire.OK, Since: ts, High: ts, Entries: entries, More: true},
		&wire.PullReply{Tablet: ref, Code: wire.OK, Since: ts, High: ts, Entries: entries, More: true, Snapshot: true, SnapshotLast: "b"},
		&wire.PullRequest{Tablet: ref, InSnapshot: true, SnapshotHigh: ts, SnapshotAfter: "b"},
		&wire.PullRequest{Tablet: ref, InSnapshot: true, SnapshotHigh: ts}, // after the empty key
		&wire.PullReply{Tablet: ref, Code: wire.OK, High: ts, Entries: entries, Snapshot: true, InSnapshot: true, SnapshotAfter: "a", SnapshotLast: "b", Epoch: 2,
			Records: []wire.Record{{Origin: "us/r1", Seq: 4, TS: ts, Tested: wire.Held}, {Origin: "india/r1", Seq: 9, Tested: wire.Failed, Code: wire.TooLarge}}},
		&wire.Push{Tablet: ref, Prev: ts, Entry: entries[0]},
		&wire.Push{Tablet: ref, Prev: ts, Entry: entries[1], Ack: true},
		&wire.PushAck{Tablet: ref, High: ts},
		&wire.Repair{Req: 13, Tablet: ref, TS: ts},
		&wire.RepairReply{Req: 13, Code: wire.Behind, High: ts},
		// Staged writes (dConssandra) and bounded reads.
		&wire.PutRequest{Req: 7, Tablet: ref, Key: "k", Value: []byte("v"), MinTS: ts, Bound: wire.Bound(50 * time.Millisecond), Budget: 40 * time.Millisecond},
		&wire.PutRequest{Req: 7, Tablet: ref, Key: "k", Value: []byte("v"), MinTS: ts, Bound: wire.Immediate},
		&wire.PutRequest{Req: 7, Tablet: ref, Key: "k", Value: []byte("v"), MinTS: ts, Bound: wire.Unbounded, Budget: -time.Millisecond,
			Test: &wire.Test{Key: "j", Found: true, Value: []byte("w")}},
		&wire.PutRequest{Req: 7, Tablet: ref, Key: "k", MinTS: ts, Bound: wire.Immediate, Test: &wire.Test{}}, // k must have no value
		&wire.PutReply{Req: 8, Stage: wire.Received, WriteID: 3},
		&wire.PutReply{Req: 8, TS: ts, Acks: 3, Stage: wire.Executed, WriteID: 1 << 63, Holders: []wire.NodeID{"england/r1", "us/r1", ""}, Tested: wire.Held},
		&wire.PutReply{Req: 8, TS: ts, Stage: wire.Coordinated, WriteID: 4, Tested: wire.Failed},
		&wire.GetRequest{Req: 9, Tablet: ref, Key: "k", Bound: wire.Bound(50 * time.Millisecond), Budget: 40 * time.Millisecond},
		&wire.GetRequest{Req: 9, Tablet: ref, Key: "k", Bound: wire.Immediate},
		&wire.GetReply{Req: 10, Code: wire.OK, Found: true, Value: []byte("v"), VersionTS: ts, HighTS: ts, Applied: 2, Pending: 1},
		&wire.GetReply{Req: 10, Code: wire.OK, HighTS: ts, Pending: -1, Null: true},
		&wire.Forward{Tablet: ref, Seq: 5, Key: "k", Value: []byte("v"), MinTS: ts},
		&wire.Forward{Tablet: ref, Seq: 5, Key: "k", Value: []byte("v"), MinTS: ts, W: 3, Wait: time.Second, Test: &wire.Test{Key: "k", Found: true, Value: []byte("u")}, Epoch: 2, Acked: 4},
		&wire.ForwardAck{Tablet: ref, Seq: 5, TS: ts},
		&wire.ForwardAck{Tablet: ref, Seq: 5, TS: ts, Acks: 2, Holders: []wire.NodeID{"england/r1", "us/r1"}, Tested: wire.Failed},
		&wire.ForwardAck{Tablet: ref, Seq: 6, Code: wire.TooLarge, TS: ts},
		&wire.Resolved{Tablet: ref, WriteID: 3, TS: ts},
		&wire.Resolved{Tablet: ref, WriteID: 3, Code: wire.StorageFailed, TS: ts},
	}
	for _, m := range causalMsgs() {
		msgs = append(msgs, m)
	}
	// Keys are any bytes (issue 25): not UTF-8, NUL, a lone surrogate's
	// encoding, in every kind of key field.
	const bad = "\xff\xfe\x80key\x00"
	binary := layout
	binary.Tablets = []wire.Tablet{{Primary: "england/r1"}, {Start: "\xc3", Primary: "us/r1"}, {Start: "\xff", Primary: "us/r1"}}
	msgs = append(msgs,
		&wire.PutRequest{Req: 7, Tablet: ref, Key: bad, Value: []byte("v"), MinTS: ts, Test: &wire.Test{Key: "\xed\xa0\x80"}},
		&wire.GetRequest{Req: 9, Tablet: ref, Key: bad},
		&wire.CreateTableRequest{Req: 1, Layout: binary},
		&wire.PullRequest{Tablet: ref, InSnapshot: true, SnapshotHigh: ts, SnapshotAfter: bad},
		&wire.PullReply{Tablet: ref, High: ts, Entries: []wire.Entry{{TS: ts, Key: bad, Value: []byte("1")}}, Snapshot: true, InSnapshot: true,
			SnapshotAfter: "\x80", SnapshotLast: bad},
		&wire.CausalGetTx{Req: 3, Table: 42, Session: 9, Keys: []string{bad, "\xc3"}, Ring: wire.NoRing},
		&wire.CausalPut{Req: 1, Table: 42, Key: bad, Value: []byte("v"), Deps: []wire.Dep{{Key: "\xff"}}},
	)
	for _, m := range msgs {
		t.Run(fmt.Sprint(m), func(t *testing.T) {
			e, err := Wrap("us/c1", "england/r1", m)
			if err != nil {
				t.Fatal(err)
			}
			b, err := proto.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			var back Envelope
			if err := proto.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			from, to, got, err := Unwrap(&back)
			if err != nil {
				t.Fatal(err)
			}
			if from != "us/c1" || to != "england/r1" {
				t.Errorf("addresses %s -> %s, want us/c1 -> england/r1", from, to)
			}
			if !reflect.DeepEqual(got, m) {
				t.Errorf("round trip changed the message:\n got %#v\nwant %#v", got, m)
			}
		})
	}
}

func TestUnwrapMalformed(t *testing.T) {
	for _, tc := range []struct {
		name string
		e    *Envelope
	}{
		{"no message", &Envelope{From: "a", To: "b"}},
		{"code out of range", &Envelope{Msg: &Envelope_PutReply{&PutReply{Code: 300}}}},
		{"replication mode out of range", &Envelope{Msg: &Envelope_CreateTableRequest{&CreateTableRequest{Layout: &Layout{ReplicationMode: 1000}}}}},
		{"unknown partition", &Envelope{Msg: &Envelope_CreateTableRequest{&CreateTableRequest{Layout: &Layout{Partition: 2}}}}},
		{"partition out of range", &Envelope{Msg: &Envelope_TableInfoReply{&TableInfoReply{Layout: &Layout{Partition: 257}}}}},
		{"put bound below immediate", &Envelope{Msg: &Envelope_PutRequest{&PutRequest{Bound: -2}}}},
		{"get bound below immediate", &Envelope{Msg: &Envelope_GetRequest{&GetRequest{Bound: -1 << 63}}}},
		{"stage above executed", &Envelope{Msg: &Envelope_PutReply{&PutReply{Stage: uint32(wire.Executed) + 1}}}},
		{"stage out of range", &Envelope{Msg: &Envelope_PutReply{&PutReply{Stage: 256 + uint32(wire.Received)}}}},
		{"put outcome above failed", &Envelope{Msg: &Envelope_PutReply{&PutReply{Stage: uint32(wire.Coordinated), Tested: uint32(wire.Failed) + 1}}}},
		{"get-reply code out of range", &Envelope{Msg: &Envelope_GetReply{&GetReply{Code: 256}}}},
		{"forward-ack code out of range", &Envelope{Msg: &Envelope_ForwardAck{&ForwardAck{Code: 1 << 20}}}},
		{"forward-ack outcome above failed", &Envelope{Msg: &Envelope_ForwardAck{&ForwardAck{Tested: 3}}}},
		{"forward-ack outcome out of range", &Envelope{Msg: &Envelope_ForwardAck{&ForwardAck{Tested: 256 + uint32(wire.Held)}}}},
		{"resolved code out of range", &Envelope{Msg: &Envelope_Resolved{&Resolved{Code: 300}}}},
		{"causal-put-reply code out of range", &Envelope{Msg: &Envelope_CausalPutReply{&CausalPutReply{Code: 256}}}},
		{"causal-get-reply code out of range", &Envelope{Msg: &Envelope_CausalGetReply{&CausalGetReply{Code: 300}}}},
		{"causal-get-reply unknown source", &Envelope{Msg: &Envelope_CausalGetReply{&CausalGetReply{Source: uint32(wire.FromCache) + 1}}}},
		{"causal-get-reply source out of range", &Envelope{Msg: &Envelope_CausalGetReply{&CausalGetReply{Source: 256 + uint32(wire.FromBuffer)}}}},
		{"causal-get-tx-reply code out of range", &Envelope{Msg: &Envelope_CausalGetTxReply{&CausalGetTxReply{Code: 1 << 20}}}},
		{"causal-get-tx-reply item source", &Envelope{Msg: &Envelope_CausalGetTxReply{&CausalGetTxReply{
			Items: []*TxItem{{Key: []byte("a")}, {Key: []byte("b"), Source: 3}}}}}},
		{"read-reply code out of range", &Envelope{Msg: &Envelope_ReadReply{&ReadReply{Code: 300}}}},
		{"read-reply unknown source", &Envelope{Msg: &Envelope_ReadReply{&ReadReply{Source: 3}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, m, err := Unwrap(tc.e); !errors.Is(err, ErrMalformed) || m != nil {
				t.Fatalf("Unwrap = %v, %v; want nil and an error wrapping ErrMalformed", m, err)
			}
		})
	}
}

// causalLayouts returns layouts of causal tables: with every field set
// (empty names and nodes among them), without caches, and empty. Lists
// that are empty are nil, as Unwrap decodes them.
func causalLayouts() (causal, noCaches, empty wire.Layout) {
	causal = wire.Layout{Name: "karma", ID: 44, Causal: &wire.CausalLayout{
		Rings: []wire.Ring{
			{Name: "west", Nodes: []wire.NodeID{"us/s1", "us/s2", "india/s1"}},
			{Name: "east", Nodes: []wire.NodeID{"england/s1"}},
			{Nodes: []wire.NodeID{""}},
			{Name: "none"},
		},
		Coordinators: []wire.NodeID{"us/cc", "england/cc", ""},
		Caches:       []wire.NodeID{"us/cache", "england/cache"},
		Points:       16,
	}}
	noCaches = wire.Layout{Name: "cops", ID: 45, Causal: &wire.CausalLayout{
		Rings:        []wire.Ring{{Name: "us", Nodes: []wire.NodeID{"us/s1"}}},
		Coordinators: []wire.NodeID{"us/cc"},
		Points:       -1,
		Static:       true,
	}}
	empty = wire.Layout{Name: "empty", ID: 46, Causal: &wire.CausalLayout{}}
	return causal, noCaches, empty
}

// causalMsgs returns messages of causal tables, every kind, with zero and
// non-zero versions, dependencies, keys and items, and every source. Empty
// values are nil, as protobuf decodes them.
func causalMsgs() []wire.Msg {
	ts := hlc.Timestamp{WallNanos: 1_700_000_000_123_456_789, Logical: 7}
	v := wire.Version{TS: ts, Origin: "us/cc"}
	older := wire.Version{TS: hlc.Timestamp{WallNanos: -1}, Origin: "england/cc"}
	noOrigin := wire.Version{TS: hlc.Timestamp{Logical: 1}}
	noTS := wire.Version{Origin: "india/cc"}
	deps := []wire.Dep{{Key: "y", Version: older}, {Key: "", Version: v}, {Key: "z"}, {Key: "w", Version: noTS}}
	return []wire.Msg{
		&wire.CausalPut{Req: 1, Table: 42, Session: 1 << 40, Seq: 3, Key: "x", Value: []byte("v"), Seen: v},
		&wire.CausalPut{Req: 1, Table: 42, Session: 9, Seq: 4, Key: "x", Value: []byte("v"), Deps: deps},
		&wire.CausalPut{Req: 1, Table: 42, Session: 9, Seq: 5, Seen: noOrigin, Deps: deps[:1], Notify: true},
		&wire.CausalPut{},
		&wire.CausalPutReply{Req: 1, Table: 42, Version: v},
		&wire.CausalPutReply{Req: 1, Code: wire.Overloaded},
		&wire.CausalComplete{Table: 42, Session: 9, Seq: 5},
		&wire.CausalGet{Req: 2, Table: 42, Session: 9, Key: "x", Ring: wire.NoRing},
		&wire.CausalGet{Req: 2, Table: 42, Session: 9, Key: "x", Ring: 2, MaxRead: older, Deadline: older.TS},
		&wire.CausalGet{Req: 2, Ring: -1 << 31, MaxRead: noTS},
		&wire.CausalGetReply{Req: 2, Table: 42, Found: true, Value: []byte("v"), Version: v, Source: wire.FromRing, Ring: 1, Node: "us/mm1", InFlight: true},
		&wire.CausalGetReply{Req: 2, Found: true, Value: []byte("v"), Version: v, Source: wire.FromBuffer, Ring: wire.NoRing},
		&wire.CausalGetReply{Req: 2, Source: wire.FromCache, Ring: wire.NoRing, Node: "us/cache1", Lifted: []wire.Dep{{Key: "x", Version: older}}},
		&wire.CausalGet{Req: 2, Table: 42, Session: 9, Key: "x", Ring: 1, Restrictions: []wire.Dep{{Key: "x", Version: older}, {Key: "y", Version: v}}},
		&wire.CausalGetTx{Req: 3, Table: 42, Session: 9, Keys: []string{"a"}, Ring: 1, Restrictions: []wire.Dep{{Key: "x", Version: v}}},
		&wire.CausalGetTxReply{Req: 3, Table: 42, Ring: wire.NoRing, Lifted: []wire.Dep{{Key: "x", Version: v}}},
		&wire.CausalGetReply{Req: 2, Table: 1 << 63, Code: wire.Unavailable},
		&wire.CausalGetTx{Req: 3, Table: 42, Session: 9, Keys: []string{"a", "", "b"}, Ring: wire.NoRing, MaxRead: v, Deadline: v.TS},
		&wire.CausalGetTx{Req: 3, Table: 42, Session: 9, Ring: 1 << 30},
		&wire.CausalGetTxReply{Req: 3, Table: 42, Ring: 2, Rounds: 2, Items: []wire.TxItem{
			{Key: "a", Found: true, Value: []byte("1"), Version: v},
			{Key: "b"},
			{Key: "c", Found: true, Value: []byte("3"), Version: older, Source: wire.FromBuffer, InFlight: true},
			{Key: "d", Found: true, Version: noOrigin, Source: wire.FromCache},
			{},
		}},
		&wire.CausalGetTxReply{Req: 3, Code: wire.Aborted, Ring: wire.NoRing, Rounds: -1},
		&wire.Propagate{Table: 42, Client: "a/c1", Session: 9, Seq: 3, Key: "x", Value: []byte("v"), Version: v},
		&wire.Propagate{Table: 42, Session: 9, Seq: 4, Key: "x", Value: []byte("v"), Version: v, Deps: deps},
		&wire.Propagate{Table: 42, Session: 9, Seq: 5, Version: older, Deps: deps[2:], Notify: true},
		&wire.PropagateAck{Table: 42, Client: "a/c1", Session: 9, Seq: 3, Ring: 1},
		&wire.PropagateAck{Table: 42, Session: 9, Seq: 3, Ring: wire.NoRing},
		&wire.Stable{Table: 42, Key: "x", Version: v},
		&wire.Stable{},
		&wire.Read{Req: 4, Table: 42, Key: "x"},
		&wire.Read{Req: 4, Table: 42, Key: "x", Fill: true},
		&wire.Read{Req: 4, Table: 42, Key: "x", Deadline: older.TS},
		&wire.Read{Req: 4, Table: 42, Key: "x", Ring: 2, Min: v},
		&wire.ReadReply{Req: 4, Table: 42, Found: true, Value: []byte("v"), Version: v, InFlight: true, Source: wire.FromCache, Ring: wire.NoRing, Node: "us/cache1"},
		&wire.ReadReply{Req: 4, Ring: 0, Node: "us/mm1"},
		&wire.ReadReply{Req: 4, Table: 7, Code: wire.NoTable, Ring: 3},
		&wire.DepCheck{Req: 5, Table: 42, Key: "y", Version: older},
		&wire.DepCheck{Req: 5, Table: 42, Key: "y", Version: v, Watch: true},
		&wire.DepCheckReply{Req: 5, Table: 42, Done: true},
		&wire.DepCheckReply{Table: 42},
		&wire.DepCheckReply{Req: 5},
		&wire.Invalidate{Req: 6, Table: 42, Key: "x", Version: v},
		&wire.Invalidate{Req: 6, Table: 42},
		&wire.InvalidateAck{Req: 6},
		&wire.InvalidateAck{Req: 6, Table: 42},
	}
}

// TestWrapUnknown checks that a message type without an encoding is an
// error, not a panic.
func TestWrapUnknown(t *testing.T) {
	if _, err := Wrap("a", "b", nil); err == nil {
		t.Fatal("Wrap(nil) succeeded")
	}
}
