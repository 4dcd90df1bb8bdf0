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

// FuzzUnwrap decodes arbitrary bytes as the gRPC transport decodes what
// arrives from the network (proto.Unmarshal, then Unwrap). Unwrap must not
// panic, and must refuse with ErrMalformed rather than return a message
// and an error. A message it accepts must print, must encode again (Wrap)
// and decode back to itself, and must be sized by wire.EnvelopeSize as
// proto.Size sizes the envelope; a layout it accepts must either Validate
// or be refused by Validate with ErrBadLayout.
//
// Run it with: go test -run x -fuzz FuzzUnwrap ./internal/core/wire/wirepb
func FuzzUnwrap(f *testing.F) {
	for _, m := range fuzzSeeds() {
		e, err := Wrap("us/c1", "england/r1", m)
		if err != nil {
			f.Fatal(err)
		}
		b, err := proto.Marshal(e)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		var e Envelope
		if err := proto.Unmarshal(b, &e); err != nil {
			return
		}
		from, to, m, err := Unwrap(&e)
		if err != nil {
			if m != nil || !errors.Is(err, ErrMalformed) {
				t.Fatalf("Unwrap = %v, %v; want no message and an error wrapping ErrMalformed", m, err)
			}
			return
		}
		if m == nil {
			t.Fatal("Unwrap returned neither a message nor an error")
		}
		_ = fmt.Sprint(m) // the trace line of the message
		if l := layoutOf(m); l != nil {
			if err := l.Validate(); err != nil && !errors.Is(err, wire.ErrBadLayout) {
				t.Fatalf("Validate = %v, want nil or an error wrapping ErrBadLayout", err)
			}
		}
		again, err := Wrap(from, to, m)
		if err != nil {
			t.Fatalf("Wrap of a decoded %T: %v", m, err)
		}
		if got, want := wire.EnvelopeSize(from, to, m), proto.Size(again); got != want {
			t.Errorf("wire.EnvelopeSize = %d, proto.Size = %d for %v", got, want, m)
		}
		b2, err := proto.Marshal(again)
		if err != nil {
			t.Fatalf("Marshal of a decoded %T: %v", m, err)
		}
		var back Envelope
		if err := proto.Unmarshal(b2, &back); err != nil {
			t.Fatalf("Unmarshal of a re-encoded %T: %v", m, err)
		}
		from2, to2, m2, err := Unwrap(&back)
		if err != nil {
			t.Fatalf("Unwrap of a re-encoded %T: %v", m, err)
		}
		if from2 != from || to2 != to {
			t.Errorf("addresses %q -> %q became %q -> %q", from, to, from2, to2)
		}
		// Protobuf does not tell an empty bytes field from an absent one.
		if !reflect.DeepEqual(emptyValuesNil(m2), emptyValuesNil(m)) {
			t.Errorf("round trip changed the message:\n got %#v\nwant %#v", m2, m)
		}
	})
}

// fuzzSeeds returns one message of every kind, with layouts by range, by
// hash and of causal tables.
func fuzzSeeds() []wire.Msg {
	ts := hlc.Timestamp{WallNanos: 1_700_000_000_123_456_789, Logical: 7}
	ref := wire.TabletRef{Table: 42, Tablet: 3}
	layout := wire.Layout{
		Name: "usertable", ID: 42,
		Tablets: []wire.Tablet{
			{Start: "", Primary: "england/r1", Secondaries: []wire.NodeID{"us/r1", "india/r1"}},
			{Start: "m", Primary: "us/r1", Secondaries: []wire.NodeID{"england/r1"}},
		},
		Replication: wire.Replication{Mode: wire.ModePush, Interval: time.Minute},
		WriteLevel:  wire.Quorum,
	}
	hashed := wire.Layout{
		Name: "usertable", ID: 43, Partition: wire.ByHash,
		Tablets: []wire.Tablet{
			{Start: "", Primary: "england/r1", Secondaries: []wire.NodeID{"us/r1"}},
			{Start: wire.HashStarts(2)[0], Primary: "us/r1", Secondaries: []wire.NodeID{"england/r1"}},
		},
		Replication: wire.Replication{Mode: wire.ModePull, Interval: time.Second},
	}
	entries := []wire.Entry{{TS: ts, Key: "a", Value: []byte("1")}, {TS: hlc.Timestamp{WallNanos: -1}, Key: "b"}}
	version := wire.Version{TS: ts, Origin: "us/cc"}
	causal, causalNC, _ := causalLayouts()
	return []wire.Msg{
		&wire.CreateTableRequest{Req: 1, Layout: layout},
		&wire.CreateTableRequest{Req: 1, Layout: hashed},
		&wire.CreateTableRequest{Req: 1, Layout: causal},
		&wire.TableInfoReply{Req: 6, Code: wire.OK, Layout: causalNC},
		&wire.CreateTableReply{Req: 2, Code: wire.TableExists},
		&wire.DeleteTableRequest{Req: 3, Name: "usertable"},
		&wire.DeleteTableReply{Req: 4, Code: wire.OK},
		&wire.TableInfoRequest{Req: 5, Name: "usertable"},
		&wire.TableInfoReply{Req: 6, Code: wire.OK, Layout: layout},
		&wire.TableInfoReply{Req: 6, Code: wire.NoTable},
		&wire.PutRequest{Req: 7, Tablet: ref, Key: "k", Value: []byte("v"), MinTS: ts, W: 2, Wait: time.Second},
		&wire.PutReply{Req: 8, Code: wire.QuorumTimeout, TS: ts, Acks: 2},
		&wire.GetRequest{Req: 9, Tablet: wire.TabletRef{Table: 1, Tablet: -1}, Key: "k"},
		&wire.GetRequest{Req: 9, Tablet: ref, Key: "\xff\xfe\x80key"}, // keys are any bytes
		&wire.GetReply{Req: 10, Code: wire.OK, Found: true, Value: []byte("v"), VersionTS: ts, HighTS: ts, Primary: true},
		&wire.ProbeRequest{Req: 11, Tablet: ref},
		&wire.ProbeReply{Req: 12, Code: wire.OK, HighTS: ts, Primary: true},
		&wire.PullRequest{Tablet: ref, Since: ts},
		&wire.PullReply{Tablet: ref, Code: wire.OK, Since: ts, High: ts, Entries: entries, More: true, Snapshot: true},
		&wire.PullRequest{Tablet: ref, InSnapshot: true, SnapshotHigh: ts, SnapshotAfter: "a"},
		&wire.PullReply{Tablet: ref, Code: wire.OK, High: ts, Entries: entries, More: true, Snapshot: true, InSnapshot: true, SnapshotAfter: "\x00", SnapshotLast: "b"},
		&wire.Push{Tablet: ref, Prev: ts, Entry: entries[0], Ack: true},
		&wire.PushAck{Tablet: ref, High: ts},
		&wire.Repair{Req: 13, Tablet: ref, TS: ts},
		&wire.RepairReply{Req: 13, Code: wire.Behind, High: ts},
		&wire.PutRequest{Req: 7, Tablet: ref, Key: "k", Value: []byte("v"), MinTS: ts, Bound: wire.Bound(50 * time.Millisecond), Budget: 40 * time.Millisecond,
			Test: &wire.Test{Key: "k", Found: true, Value: []byte("u")}},
		&wire.PutRequest{Req: 7, Tablet: ref, Key: "k", MinTS: ts, Bound: wire.Immediate, Test: &wire.Test{}},
		&wire.PutReply{Req: 8, TS: ts, Acks: 3, Stage: wire.Executed, WriteID: 3, Holders: []wire.NodeID{"england/r1", "us/r1", ""}, Tested: wire.Held},
		&wire.GetRequest{Req: 9, Tablet: ref, Key: "k", Bound: wire.Unbounded, Budget: time.Second},
		&wire.GetReply{Req: 10, Code: wire.OK, HighTS: ts, Applied: 2, Pending: 1, Null: true},
		&wire.Forward{Tablet: ref, Seq: 5, Key: "k", Value: []byte("v"), MinTS: ts, W: 3, Wait: time.Second, Test: &wire.Test{Key: "k", Value: []byte("u")}},
		&wire.ForwardAck{Tablet: ref, Seq: 5, Code: wire.QuorumTimeout, TS: ts, Acks: 2, Holders: []wire.NodeID{"england/r1", "us/r1"}, Tested: wire.Failed},
		&wire.Resolved{Tablet: ref, WriteID: 3, Code: wire.StorageFailed, TS: ts},
		&wire.CausalPut{Req: 1, Table: 42, Session: 9, Seq: 4, Key: "x", Value: []byte("v"), Seen: version,
			Deps: []wire.Dep{{Key: "y", Version: version}, {Key: "z"}}},
		&wire.CausalPut{Req: 1, Table: 42, Session: 9, Seq: 5, Deps: []wire.Dep{{Key: "y", Version: version}}, Notify: true},
		&wire.CausalPutReply{Req: 1, Table: 42, Code: wire.Overloaded, Version: version},
		&wire.CausalComplete{Table: 42, Session: 9, Seq: 5},
		&wire.CausalGet{Req: 2, Table: 42, Session: 9, Key: "x", Ring: wire.NoRing, MaxRead: version, Deadline: version.TS},
		&wire.CausalGetReply{Req: 2, Table: 42, Found: true, Value: []byte("v"), Version: version, Source: wire.FromBuffer, Ring: 1, Node: "us/mm1", InFlight: true},
		&wire.CausalGetTx{Req: 3, Table: 42, Session: 9, Keys: []string{"a", "", "b"}, Ring: 2, MaxRead: version},
		&wire.CausalGetTxReply{Req: 3, Table: 42, Code: wire.Aborted, Ring: 2, Rounds: 3, Items: []wire.TxItem{
			{Key: "a", Found: true, Value: []byte("1"), Version: version, Source: wire.FromCache, InFlight: true}, {Key: "b"}}},
		&wire.Propagate{Table: 42, Session: 9, Seq: 4, Key: "x", Value: []byte("v"), Version: version,
			Deps: []wire.Dep{{Key: "y", Version: version}}, Notify: true},
		&wire.PropagateAck{Table: 42, Session: 9, Seq: 4, Ring: wire.NoRing},
		&wire.Stable{Table: 42, Key: "x", Version: version},
		&wire.Read{Req: 4, Table: 42, Key: "x", Fill: true},
		&wire.ReadReply{Req: 4, Table: 42, Code: wire.Unavailable, Found: true, Value: []byte("v"), Version: version, InFlight: true,
			Source: wire.FromCache, Ring: -2, Node: "us/cache1"},
		&wire.DepCheck{Req: 5, Table: 42, Key: "y", Version: version, Watch: true},
		&wire.DepCheckReply{Req: 5, Table: 42, Done: true},
		&wire.Invalidate{Req: 6, Table: 42, Key: "x", Version: version},
		&wire.InvalidateAck{Req: 6, Table: 42},
	}
}

// layoutOf returns the layout a message carries, or nil.
func layoutOf(m wire.Msg) *wire.Layout {
	switch m := m.(type) {
	case *wire.CreateTableRequest:
		return &m.Layout
	case *wire.TableInfoReply:
		return &m.Layout
	}
	return nil
}

// emptyValuesNil returns a copy of m whose empty byte values are nil.
func emptyValuesNil(m wire.Msg) wire.Msg {
	value := func(v []byte) []byte {
		if len(v) == 0 {
			return nil
		}
		return v
	}
	entry := func(e wire.Entry) wire.Entry { e.Value = value(e.Value); return e }
	test := func(t *wire.Test) *wire.Test {
		if t == nil {
			return nil
		}
		c := *t
		c.Value = value(c.Value)
		return &c
	}
	switch m := m.(type) {
	case *wire.PutRequest:
		c := *m
		c.Value = value(c.Value)
		c.Test = test(c.Test)
		return &c
	case *wire.Forward:
		c := *m
		c.Value = value(c.Value)
		c.Test = test(c.Test)
		return &c
	case *wire.GetReply:
		c := *m
		c.Value = value(c.Value)
		return &c
	case *wire.PullReply:
		c := *m
		c.Entries = make([]wire.Entry, len(m.Entries))
		for i, e := range m.Entries {
			c.Entries[i] = entry(e)
		}
		return &c
	case *wire.Push:
		c := *m
		c.Entry = entry(c.Entry)
		return &c
	case *wire.CausalPut:
		c := *m
		c.Value = value(c.Value)
		return &c
	case *wire.CausalGetReply:
		c := *m
		c.Value = value(c.Value)
		return &c
	case *wire.CausalGetTxReply:
		c := *m
		c.Items = make([]wire.TxItem, len(m.Items))
		for i, it := range m.Items {
			it.Value = value(it.Value)
			c.Items[i] = it
		}
		return &c
	case *wire.Propagate:
		c := *m
		c.Value = value(c.Value)
		return &c
	case *wire.ReadReply:
		c := *m
		c.Value = value(c.Value)
		return &c
	}
	return m
}
