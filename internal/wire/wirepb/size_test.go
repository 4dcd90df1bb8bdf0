package wirepb

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/cosla/cosla/internal/hlc"
	"github.com/cosla/cosla/internal/wire"
)

// TestSize checks wire.Size and wire.EnvelopeSize, which the simulator
// charges link bandwidth by, against the size of the envelope Wrap
// builds, for every message type with small and 4 KiB values, zero and
// extreme fields, and a pull reply with many entries. The sizes are
// computed field by field and should be exact; the test allows what the
// simulator can live with, 10% or 16 bytes.
func TestSize(t *testing.T) {
	ts := hlc.Timestamp{WallNanos: 1_700_000_000_123_456_789, Logical: 7}
	small, large := []byte("v"), bytes.Repeat([]byte("x"), 4<<10)
	ref := wire.TabletRef{Table: 42, Tablet: 3}
	layout := wire.Layout{
		Name: "usertable", ID: 42,
		Tablets: []wire.Tablet{
			{Start: "", Primary: "england/r1", Secondaries: []wire.NodeID{"us/r1", "india/r1", ""}},
			{Start: "m", Primary: "us/r1"},
		},
		Replication: wire.Replication{Mode: wire.ModePush, Interval: time.Minute},
	}
	quorum := layout
	quorum.WriteLevel = wire.Quorum
	hashed := layout
	hashed.Partition = wire.ByHash
	hashed.Tablets = []wire.Tablet{{Primary: "england/r1"}, {Start: wire.HashStarts(2)[0], Primary: "us/r1"}}
	many := make([]wire.Entry, 1000)
	for i := range many {
		many[i] = wire.Entry{TS: hlc.Timestamp{WallNanos: ts.WallNanos + int64(i)}, Key: fmt.Sprintf("user%06d", i), Value: large[:100+i]}
	}
	type sized struct {
		name string
		m    wire.Msg
	}
	cases := []sized{
		{"create-table", &wire.CreateTableRequest{Req: 1, Layout: layout}},
		{"create-table empty", &wire.CreateTableRequest{}},
		{"create-table by hash", &wire.CreateTableRequest{Req: 1, Layout: hashed}},
		{"create-table write level", &wire.CreateTableRequest{Req: 1, Layout: quorum}},
		{"create-table-reply", &wire.CreateTableReply{Req: 2, Code: wire.TableExists}},
		{"delete-table", &wire.DeleteTableRequest{Req: 3, Name: "usertable"}},
		{"delete-table-reply", &wire.DeleteTableReply{Req: 4}},
		{"table-info", &wire.TableInfoRequest{Req: 5, Name: "usertable"}},
		{"table-info-reply", &wire.TableInfoReply{Req: 6, Layout: layout}},
		{"table-info-reply no table", &wire.TableInfoReply{Req: 6, Code: wire.NoTable}},
		{"put-reply", &wire.PutReply{Req: 8, Code: wire.NotPrimary, TS: ts}},
		{"put-reply acks", &wire.PutReply{Req: 8, Code: wire.QuorumTimeout, TS: ts, Acks: 2}},
		{"put write level", &wire.PutRequest{Req: 7, Tablet: ref, Key: "k", MinTS: ts, W: 3, Wait: 10 * time.Second}},
		{"push-ack", &wire.PushAck{Tablet: ref, High: ts}},
		{"repair", &wire.Repair{Tablet: ref, Entry: wire.Entry{TS: ts, Key: "k", Value: large}}},
		{"get", &wire.GetRequest{Req: 9, Tablet: ref, Key: "user000001"}},
		{"get negative tablet", &wire.GetRequest{Req: 1 << 63, Tablet: wire.TabletRef{Table: 1, Tablet: -1}, Key: "k"}},
		{"probe", &wire.ProbeRequest{Req: 11, Tablet: ref}},
		{"probe-reply", &wire.ProbeReply{Req: 12, HighTS: ts, Primary: true}},
		{"pull", &wire.PullRequest{Tablet: ref, Since: ts}},
		{"pull-reply empty", &wire.PullReply{Tablet: ref, Since: ts, High: ts}},
		{"pull-reply 1000 entries", &wire.PullReply{Tablet: ref, Since: ts, High: ts, Entries: many, More: true, Snapshot: true}},
		{"pull-reply negative time", &wire.PullReply{Since: hlc.Timestamp{WallNanos: -1}, Entries: []wire.Entry{{}}}},
		{"pull snapshot chunk", &wire.PullRequest{Tablet: ref, InSnapshot: true, SnapshotHigh: ts, SnapshotAfter: "user000999"}},
		{"pull snapshot after the empty key", &wire.PullRequest{Tablet: ref, InSnapshot: true, SnapshotHigh: ts}},
		{"pull snapshot at time zero", &wire.PullRequest{Tablet: ref, InSnapshot: true, SnapshotAfter: "k"}},
		{"pull-reply snapshot chunk", &wire.PullReply{Tablet: ref, High: ts, Entries: many[:10], More: true, Snapshot: true,
			InSnapshot: true, SnapshotAfter: "user000000", SnapshotLast: "user000010"}},
	}
	for _, v := range []struct {
		name  string
		value []byte
	}{{"no value", nil}, {"small", small}, {"4KiB", large}} {
		cases = append(cases,
			sized{"put " + v.name, &wire.PutRequest{Req: 7, Tablet: ref, Key: "user000001", Value: v.value, MinTS: ts}},
			sized{"get-reply " + v.name, &wire.GetReply{Req: 10, Found: v.value != nil, Value: v.value, VersionTS: ts, HighTS: ts, Primary: true}},
			sized{"pull-reply " + v.name, &wire.PullReply{Tablet: ref, Since: ts, High: ts, Entries: []wire.Entry{{TS: ts, Key: "k", Value: v.value}}}},
			sized{"push " + v.name, &wire.Push{Tablet: ref, Prev: ts, Entry: wire.Entry{TS: ts, Key: "k", Value: v.value}}},
		)
	}
	seen := map[string]bool{}
	for _, tc := range cases {
		seen[wire.Kind(tc.m)] = true
		for _, addr := range [][2]wire.NodeID{{"", ""}, {"us/c1", "england/r1"}, {wire.NodeID(strings.Repeat("n", 200)), "x"}} {
			t.Run(fmt.Sprintf("%s %s->%s", tc.name, addr[0], addr[1]), func(t *testing.T) {
				e, err := Wrap(addr[0], addr[1], tc.m)
				if err != nil {
					t.Fatal(err)
				}
				want := proto.Size(e)
				got := wire.EnvelopeSize(addr[0], addr[1], tc.m)
				if addr[0] == "" && addr[1] == "" {
					if size := wire.Size(tc.m); size != got {
						t.Errorf("Size = %d, EnvelopeSize with empty addresses %d", size, got)
					}
				}
				if diff := max(got-want, want-got); diff > max(want/10, 16) {
					t.Errorf("wire size %d, proto.Size %d", got, want)
				} else if diff != 0 {
					// Within what the simulator needs, but Size no longer
					// follows Wrap field by field: was a field added?
					t.Logf("wire size %d, proto.Size %d: within tolerance but not exact; update wire.Size", got, want)
				}
			})
		}
	}
	for _, k := range wire.Kinds {
		if !seen[k] {
			t.Errorf("no case of kind %q", k)
		}
	}
}
