package wirepb

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/wire"
)

// TestSize checks wire.Size and wire.EnvelopeSize, which the simulator
// charges link bandwidth by, against the size of the envelope Wrap
// builds, for every message type with small and 4 KiB values, zero and
// extreme fields, and a pull reply with many entries (and causal
// messages with many dependencies, keys and items); every field of
// wire.proto is set in at least one case. The sizes must be exact: they
// and the conversions are generated from one definition (wiregen), and
// the simulator's traces depend on them.
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
	version := wire.Version{TS: ts, Origin: "us/cc"}
	manyDeps := make([]wire.Dep, 100)
	manyKeys := make([]string, 100)
	manyItems := make([]wire.TxItem, 100)
	for i := range manyDeps {
		v := wire.Version{TS: hlc.Timestamp{WallNanos: ts.WallNanos + int64(i)*int64(time.Hour), Logical: uint32(i)}, Origin: "england/cc"}
		if i%10 == 0 {
			v = wire.Version{} // a dependency on a key never written
		}
		manyDeps[i] = wire.Dep{Key: fmt.Sprintf("user%06d", i), Version: v}
		manyKeys[i] = manyDeps[i].Key
		manyItems[i] = wire.TxItem{Key: manyKeys[i], Found: i%10 != 0, Value: large[:i*i%4000], Version: v,
			Source: wire.Source(i % 3), InFlight: i%2 == 1}
	}
	type sized struct {
		name string
		m    wire.Msg
	}
	causal, causalNC, causalEmpty := causalLayouts()
	cases := []sized{
		{"create-table", &wire.CreateTableRequest{Req: 1, Layout: layout}},
		{"create-table causal", &wire.CreateTableRequest{Req: 1, Layout: causal}},
		{"create-table causal no caches", &wire.CreateTableRequest{Req: 1, Layout: causalNC}},
		{"create-table causal empty", &wire.CreateTableRequest{Req: 1, Layout: causalEmpty}},
		{"create-table causal empty lists", &wire.CreateTableRequest{Layout: wire.Layout{Causal: &wire.CausalLayout{
			Rings: []wire.Ring{{Nodes: []wire.NodeID{}}, {}}, Coordinators: []wire.NodeID{}}}}},
		{"table-info-reply causal", &wire.TableInfoReply{Req: 6, Layout: causal}},
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
		{"repair", &wire.Repair{Req: 1 << 63, Tablet: ref, TS: ts}},
		{"repair-reply", &wire.RepairReply{Req: 1 << 63, Code: wire.Behind, High: ts}},
		{"repair-reply empty", &wire.RepairReply{}},
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
		{"delete-table-reply failed", &wire.DeleteTableReply{Req: 4, Code: wire.StorageFailed}},
		{"get-reply no table", &wire.GetReply{Req: 10, Code: wire.NoTable}},
		{"probe-reply wrong tablet", &wire.ProbeReply{Req: 12, Code: wire.WrongTablet}},
		{"pull-reply no table", &wire.PullReply{Tablet: ref, Code: wire.NoTable}},
		{"push ack", &wire.Push{Tablet: ref, Prev: ts, Entry: wire.Entry{TS: ts, Key: "k", Value: small}, Ack: true}},
		// Staged writes and bounded reads (dConssandra).
		{"put bounded", &wire.PutRequest{Req: 7, Tablet: ref, Key: "k", MinTS: ts, Bound: wire.Bound(50 * time.Millisecond), Budget: 40 * time.Millisecond}},
		{"put immediate", &wire.PutRequest{Req: 7, Tablet: ref, Key: "k", MinTS: ts, Bound: wire.Immediate, Budget: -time.Millisecond}},
		{"put unbounded", &wire.PutRequest{Req: 7, Tablet: ref, Key: "k", MinTS: ts, Bound: wire.Unbounded}},
		{"put read-test-write", &wire.PutRequest{Req: 7, Tablet: ref, Key: "k", Value: small, MinTS: ts, Bound: wire.Unbounded, Budget: time.Second,
			Test: &wire.Test{Key: "user000001", Found: true, Value: large}}},
		{"put empty test", &wire.PutRequest{Req: 7, Tablet: ref, Key: "k", MinTS: ts, Bound: wire.Immediate, Test: &wire.Test{}}},
		{"put-reply received", &wire.PutReply{Req: 8, Stage: wire.Received, WriteID: 3}},
		{"put-reply executed", &wire.PutReply{Req: 8, TS: ts, Acks: 3, Stage: wire.Executed, WriteID: 1 << 63,
			Holders: []wire.NodeID{"england/r1", "us/r1", "", wire.NodeID(strings.Repeat("n", 200))}, Tested: wire.Held}},
		{"put-reply test failed", &wire.PutReply{Req: 8, TS: ts, Stage: wire.Coordinated, WriteID: 4, Tested: wire.Failed}},
		{"get bounded", &wire.GetRequest{Req: 9, Tablet: ref, Key: "k", Bound: wire.Bound(50 * time.Millisecond), Budget: 40 * time.Millisecond}},
		{"get immediate", &wire.GetRequest{Req: 9, Tablet: ref, Key: "k", Bound: wire.Immediate, Budget: -1}},
		{"get unbounded", &wire.GetRequest{Req: 9, Tablet: ref, Key: "k", Bound: wire.Unbounded, Budget: time.Second}},
		{"get-reply bounded", &wire.GetReply{Req: 10, Found: true, Value: small, VersionTS: ts, HighTS: ts, Applied: 2, Pending: 1}},
		{"get-reply null", &wire.GetReply{Req: 10, HighTS: ts, Applied: -1, Pending: 1 << 30, Null: true}},
		{"forward", &wire.Forward{Tablet: ref, Seq: 5, Key: "user000001", Value: large, MinTS: ts}},
		{"forward empty", &wire.Forward{}},
		{"forward read-test-write", &wire.Forward{Tablet: wire.TabletRef{Table: 1, Tablet: -1}, Seq: 1 << 63, Key: "k", Value: small, MinTS: ts,
			W: 3, Wait: time.Second, Test: &wire.Test{Key: "k", Found: true, Value: small}}},
		{"forward-ack", &wire.ForwardAck{Tablet: ref, Seq: 5, TS: ts}},
		{"forward-ack empty", &wire.ForwardAck{}},
		{"forward-ack holders", &wire.ForwardAck{Tablet: ref, Seq: 5, Code: wire.QuorumTimeout, TS: ts, Acks: 2,
			Holders: []wire.NodeID{"england/r1", "", "us/r1"}, Tested: wire.Failed}},
		{"resolved", &wire.Resolved{Tablet: ref, WriteID: 3, TS: ts}},
		{"resolved empty", &wire.Resolved{}},
		{"resolved refused", &wire.Resolved{Tablet: ref, WriteID: 1 << 40, Code: wire.StorageFailed, TS: hlc.Timestamp{WallNanos: -1}}},
		// Causal tables (Karma): zero versions are left out, rings are
		// zigzag-encoded.
		{"causal-put empty", &wire.CausalPut{}},
		{"causal-put 100 deps", &wire.CausalPut{Req: 1, Table: 42, Session: 1 << 63, Seq: 1 << 20, Key: "user000001", Value: large,
			Seen: version, Deps: manyDeps, Notify: true}},
		{"causal-put-reply empty", &wire.CausalPutReply{}},
		{"causal-put-reply large table", &wire.CausalPutReply{Req: 1, Table: 1 << 63, Version: version}},
		{"causal-get extreme rings", &wire.CausalGet{Req: 2, Ring: math.MinInt32, MaxRead: wire.Version{Origin: wire.NodeID(strings.Repeat("o", 200))}}},
		{"causal-get large ring", &wire.CausalGet{Req: 2, Ring: math.MaxInt32, MaxRead: wire.Version{TS: hlc.Timestamp{WallNanos: math.MinInt64, Logical: math.MaxUint32}}}},
		{"causal-get deadline", &wire.CausalGet{Req: 2, Ring: wire.NoRing, Deadline: hlc.Timestamp{WallNanos: math.MaxInt64}}},
		{"causal-get-reply empty", &wire.CausalGetReply{}},
		{"causal-get 100 restrictions", &wire.CausalGet{Req: 2, Ring: 3, Restrictions: manyDeps}},
		{"causal-get-reply 100 lifted", &wire.CausalGetReply{Req: 2, Ring: wire.NoRing, Lifted: manyDeps}},
		{"causal-get-tx 100 restrictions", &wire.CausalGetTx{Req: 3, Keys: []string{"a"}, Ring: 1, Restrictions: manyDeps}},
		{"causal-get-tx-reply 100 lifted", &wire.CausalGetTxReply{Req: 3, Ring: wire.NoRing, Lifted: manyDeps}},
		{"causal-get-tx 100 keys", &wire.CausalGetTx{Req: 3, Table: 42, Session: 9, Keys: manyKeys, Ring: wire.NoRing, MaxRead: version,
			Deadline: hlc.Timestamp{WallNanos: 1 << 62, Logical: 3}}},
		{"causal-get-tx-reply 100 items", &wire.CausalGetTxReply{Req: 3, Table: 42, Ring: 7, Rounds: 1, Items: manyItems}},
		{"causal-get-tx-reply empty items", &wire.CausalGetTxReply{Items: []wire.TxItem{{}, {}}}},
		{"causal-get-reply rebound", &wire.CausalGetReply{Req: 2, Ring: 1, Rebound: true}},
		{"causal-get-tx-reply rebound", &wire.CausalGetTxReply{Req: 3, Ring: 1, Rebound: true}},
		{"propagate empty", &wire.Propagate{}},
		{"propagate 100 deps", &wire.Propagate{Table: 42, Client: "us-west1/c1", Session: 9, Seq: 300, Key: "user000001", Value: large, Version: version, Deps: manyDeps}},
		{"propagate-ack empty", &wire.PropagateAck{}},
		{"propagate-ack", &wire.PropagateAck{Table: 42, Client: "us-west1/c1", Session: 9, Seq: 300, Ring: 2}},
		{"stable empty", &wire.Stable{}},
		{"read empty", &wire.Read{}},
		{"read deadline", &wire.Read{Req: 4, Table: 42, Key: "x", Fill: true, Deadline: hlc.Timestamp{WallNanos: math.MinInt64}}},
		{"read bound", &wire.Read{Req: 4, Table: 42, Key: "x", Ring: wire.NoRing, Min: version}},
		{"read-reply empty", &wire.ReadReply{}},
		{"read-reply large table", &wire.ReadReply{Req: 4, Table: 1 << 63}},
		{"dep-check empty", &wire.DepCheck{}},
		{"dep-check watch", &wire.DepCheck{Req: 5, Table: 42, Key: "x", Version: version, Watch: true}},
		{"dep-check-reply empty", &wire.DepCheckReply{}},
		{"dep-check-reply large table", &wire.DepCheckReply{Req: 5, Table: 1 << 40, Done: true}},
		{"invalidate empty", &wire.Invalidate{}},
		{"invalidate-ack empty", &wire.InvalidateAck{}},
		{"invalidate-ack large table", &wire.InvalidateAck{Req: 1 << 63, Table: 1 << 63}},
		// The configuration service, and the epochs of the write path.
		{"config-raft", &wire.ConfigRaft{Data: large}},
		{"config-raft empty", &wire.ConfigRaft{}},
		{"lease-renew", &wire.LeaseRenew{Seq: 1 << 40, Tablets: []wire.TabletEpoch{{Tablet: ref, Epoch: 7}, {}}, Layouts: []wire.Layout{layout, quorum}}},
		{"lease-grant", &wire.LeaseGrant{Seq: 3, Tablets: []wire.TabletEpoch{{Tablet: ref, Epoch: 1 << 63}}}},
		{"lease-grant not leader", &wire.LeaseGrant{Seq: 3, Code: wire.NotLeader, Leader: "us/cfg"}},
		{"high", &wire.HighRequest{Tablet: ref, Epoch: 2, Until: ts}},
		{"high-reply", &wire.HighReply{Tablet: ref, Epoch: 2, High: ts, Code: wire.Invalid}},
		{"epoch-change", &wire.EpochChange{Layout: hashed, Tablet: 1, Epoch: 9, Start: ts}},
		{"epoch-change earlier", &wire.EpochChange{Layout: hashed, Tablet: 1, Epoch: 9, Start: ts,
			Earlier: []wire.EpochStart{{Epoch: 8, Start: ts}, {Epoch: 1 << 40}}, Term: 7}},
		{"high term", &wire.HighRequest{Tablet: ref, Epoch: 2, Term: 1 << 33}},
		{"epoch-ack", &wire.EpochAck{Tablet: ref, Epoch: 9}},
		{"utility-report", &wire.UtilityReport{Tablet: ref, Ops: 1 << 33, Sites: []wire.SiteUtility{{Site: "us", Micro: 1 << 50}, {}}}},
		{"reconfigure", &wire.Reconfigure{Req: 1, Table: "t", Tablet: 2, Primary: "us/r1", Add: "india/r1", Remove: "china/r1"}},
		{"reconfigure-reply", &wire.ReconfigureReply{Req: 1, Epoch: 3, Layout: layout, Leader: "us/cfg", Code: wire.NotLeader}},
		{"pull-reply staged", &wire.PullReply{Tablet: ref, High: ts, Entries: []wire.Entry{{TS: ts, Key: "k", Origin: "us/r1", Seq: 1 << 62}}}},
		{"put epoch", &wire.PutRequest{Req: 7, Tablet: ref, Key: "k", MinTS: ts, Epoch: 3}},
		{"put-reply not primary", &wire.PutReply{Req: 8, Code: wire.NotPrimary, Epoch: 4, Primary: "us/r1"}},
		{"pull epoch", &wire.PullRequest{Tablet: ref, Since: ts, Epoch: 2}},
		{"pull-reply epoch", &wire.PullReply{Tablet: ref, High: ts, Epoch: 2}},
		{"push epoch", &wire.Push{Tablet: ref, Prev: ts, Entry: wire.Entry{TS: ts, Key: "k"}, Epoch: 1 << 63}},
		{"push-ack epoch", &wire.PushAck{Tablet: ref, High: ts, Epoch: 5}},
		{"forward epoch", &wire.Forward{Tablet: ref, Seq: 5, Key: "k", Epoch: 2}},
		{"pull-reply records", &wire.PullReply{Tablet: ref, High: ts, Snapshot: true, Epoch: 2, Records: []wire.Record{
			{Origin: "us/r1", Seq: 1 << 62, TS: ts, Tested: wire.Held}, {Origin: "india/r1", Seq: 3, Code: wire.TooLarge, Tested: wire.Failed}, {}}}},
		{"forward acked", &wire.Forward{Tablet: ref, Seq: 1 << 40, Key: "k", Epoch: 2, Acked: 1<<40 - 1}},
		{"forward-ack not primary", &wire.ForwardAck{Tablet: ref, Seq: 5, Code: wire.NotPrimary, Epoch: 3, Primary: "india/r1"}},
	}
	for i, m := range causalMsgs() {
		cases = append(cases, sized{fmt.Sprintf("%s %d", wire.Kind(m), i), m})
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
			sized{"causal-put " + v.name, &wire.CausalPut{Req: 1, Table: 42, Session: 9, Seq: 1, Key: "user000001", Value: v.value, Seen: version}},
			sized{"causal-get-reply " + v.name, &wire.CausalGetReply{Req: 2, Table: 42, Found: v.value != nil, Value: v.value, Version: version,
				Source: wire.FromCache, Ring: wire.NoRing, Node: "us/cache1"}},
			sized{"propagate " + v.name, &wire.Propagate{Table: 42, Session: 9, Seq: 1, Key: "user000001", Value: v.value, Version: version}},
			sized{"read-reply " + v.name, &wire.ReadReply{Req: 4, Table: 42, Found: v.value != nil, Value: v.value, Version: version, Ring: 2, Node: "us/mm1"}},
		)
	}
	seen := map[string]bool{}
	populated := map[protoreflect.FullName]bool{}
	for _, tc := range cases {
		seen[wire.Kind(tc.m)] = true
		if e, err := Wrap("us/c1", "england/r1", tc.m); err == nil {
			populatedFields(e.ProtoReflect(), populated)
		}
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
				if got != want {
					t.Errorf("wire size %d, proto.Size %d", got, want)
				}
			})
		}
	}
	for _, k := range wire.Kinds {
		if !seen[k] {
			t.Errorf("no case of kind %q", k)
		}
	}
	// Every field of the schema is sized with a value that is not its
	// zero value (which the encoding leaves out) at least once.
	for _, f := range schemaFields((&Envelope{}).ProtoReflect().Descriptor(), nil, map[protoreflect.FullName]bool{}) {
		if !populated[f] {
			t.Errorf("no case sets %s", f)
		}
	}
}

// populatedFields adds to set the fields of m and of its submessages that
// the encoding carries: those not at their zero value.
func populatedFields(m protoreflect.Message, set map[protoreflect.FullName]bool) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		set[fd.FullName()] = true
		switch {
		case fd.Message() == nil:
		case fd.IsList():
			for i := 0; i < v.List().Len(); i++ {
				populatedFields(v.List().Get(i).Message(), set)
			}
		default:
			populatedFields(v.Message(), set)
		}
		return true
	})
}

// schemaFields appends to out the fields of md and of every message it
// reaches.
func schemaFields(md protoreflect.MessageDescriptor, out []protoreflect.FullName, visited map[protoreflect.FullName]bool) []protoreflect.FullName {
	if visited[md.FullName()] {
		return out
	}
	visited[md.FullName()] = true
	for i := 0; i < md.Fields().Len(); i++ {
		fd := md.Fields().Get(i)
		out = append(out, fd.FullName())
		if fd.Message() != nil {
			out = schemaFields(fd.Message(), out, visited)
		}
	}
	return out
}
