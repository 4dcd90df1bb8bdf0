package wire_test

import (
	"testing"
	"time"

	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/core/wire/wiretest"
)

// TestString checks the trace lines of staged writes and bounded reads,
// and that messages that set none of their fields print as before they
// existed, so that the traces of such runs keep their hashes.
func TestString(t *testing.T) {
	ts := hlc.Timestamp{WallNanos: 1_500_000_000, Logical: 2}
	ref := wire.TabletRef{Table: 42, Tablet: 3}
	for _, tc := range []struct {
		m    interface{ String() string }
		want string
	}{
		// Unchanged.
		{&wire.PutRequest{Req: 7, Tablet: ref, Key: "k", Value: []byte("v"), MinTS: ts},
			`Put(req=7 tablet=42/3 key="k" value="v" min=1.500000000,2)`},
		{&wire.PutRequest{Req: 7, Tablet: ref, Key: "k", Value: []byte("v"), MinTS: ts, W: 2, Wait: time.Second},
			`Put(req=7 tablet=42/3 key="k" value="v" min=1.500000000,2 w=2 wait=1s)`},
		{&wire.PutReply{Req: 8, TS: ts}, `PutReply(req=8 ts=1.500000000,2)`},
		{&wire.PutReply{Req: 8, TS: ts, Acks: 2, Code: wire.QuorumTimeout},
			`PutReply(req=8 ts=1.500000000,2 acks=2 err="write level not reached in time")`},
		{&wire.GetRequest{Req: 9, Tablet: ref, Key: "k"}, `Get(req=9 tablet=42/3 key="k")`},
		{&wire.GetReply{Req: 10, HighTS: ts}, `GetReply(req=10 not-found high=1.500000000,2)`},
		{&wire.GetReply{Req: 10, Found: true, Value: []byte("v"), VersionTS: ts, HighTS: ts, Primary: true},
			`GetReply(req=10 value="v" version=1.500000000,2 high=1.500000000,2 primary)`},

		// Staged writes and bounded reads.
		{&wire.PutRequest{Req: 7, Tablet: ref, Key: "k", Value: []byte("v"), MinTS: ts, Bound: wire.Bound(50 * time.Millisecond), Budget: 40 * time.Millisecond},
			`Put(req=7 tablet=42/3 key="k" value="v" min=1.500000000,2 bound=50ms budget=40ms)`},
		{&wire.PutRequest{Req: 7, Tablet: ref, Key: "k", Value: []byte("v2"), MinTS: ts, Bound: wire.Immediate, Test: &wire.Test{Key: "k", Found: true, Value: []byte("v")}},
			`Put(req=7 tablet=42/3 key="k" value="v2" min=1.500000000,2 bound=immediate test=k=="v")`},
		{&wire.PutRequest{Req: 7, Tablet: ref, Key: "k", MinTS: ts, Bound: wire.Unbounded, Budget: time.Second, Test: &wire.Test{Key: "j"}},
			`Put(req=7 tablet=42/3 key="k" value="" min=1.500000000,2 bound=unbounded budget=1s test=j==absent)`},
		{&wire.PutReply{Req: 8, Stage: wire.Received, WriteID: 3},
			`PutReply(req=8 ts=0.000000000,0 stage=received write=3)`},
		{&wire.PutReply{Req: 8, TS: ts, Acks: 3, Stage: wire.Executed, WriteID: 3, Holders: []wire.NodeID{"us/r1", "england/r1"}, Tested: wire.Held},
			`PutReply(req=8 ts=1.500000000,2 acks=3 stage=executed write=3 holders=[us/r1 england/r1] tested=held)`},
		{&wire.PutReply{Req: 8, TS: ts, Stage: wire.Coordinated, WriteID: 4, Tested: wire.Failed},
			`PutReply(req=8 ts=1.500000000,2 stage=coordinated write=4 tested=failed)`},
		{&wire.GetRequest{Req: 9, Tablet: ref, Key: "k", Bound: wire.Bound(50 * time.Millisecond), Budget: 40 * time.Millisecond},
			`Get(req=9 tablet=42/3 key="k" bound=50ms budget=40ms)`},
		{&wire.GetReply{Req: 10, Found: true, Value: []byte("v"), VersionTS: ts, HighTS: ts, Applied: 2, Pending: 1},
			`GetReply(req=10 value="v" version=1.500000000,2 high=1.500000000,2 applied=2 pending=1)`},
		{&wire.GetReply{Req: 10, HighTS: ts, Pending: 1, Null: true},
			`GetReply(req=10 high=1.500000000,2 applied=0 pending=1 null)`},
		{&wire.Forward{Tablet: ref, Seq: 5, Key: "k", Value: []byte("v"), MinTS: ts},
			`Forward(tablet=42/3 seq=5 key="k" value="v" min=1.500000000,2)`},
		{&wire.Forward{Tablet: ref, Seq: 5, Key: "k", Value: []byte("v"), MinTS: ts, W: 3, Wait: time.Second, Test: &wire.Test{Key: "k"}},
			`Forward(tablet=42/3 seq=5 key="k" value="v" min=1.500000000,2 w=3 wait=1s test=k==absent)`},
		{&wire.ForwardAck{Tablet: ref, Seq: 5, TS: ts},
			`ForwardAck(tablet=42/3 seq=5 ts=1.500000000,2)`},
		{&wire.PullReply{Tablet: ref, High: ts, Snapshot: true, Epoch: 2, Records: []wire.Record{{Origin: "us/r1", Seq: 4, TS: ts}, {}}},
			`PullReply(tablet=42/3 since=0.000000000,0 high=1.500000000,2 entries=0 snapshot records=2 last="")`},
		{&wire.Forward{Tablet: ref, Seq: 5, Key: "k", Value: []byte("v"), MinTS: ts, Epoch: 2, Acked: 3},
			`Forward(tablet=42/3 seq=5 key="k" value="v" min=1.500000000,2 epoch=2 acked=3)`},
		{&wire.ForwardAck{Tablet: ref, Seq: 5, TS: ts, Acks: 2, Holders: []wire.NodeID{"england/r1", "us/r1"}, Tested: wire.Held},
			`ForwardAck(tablet=42/3 seq=5 ts=1.500000000,2 acks=2 holders=[england/r1 us/r1] tested=held)`},
		{&wire.ForwardAck{Tablet: ref, Seq: 6, Code: wire.TooLarge},
			`ForwardAck(tablet=42/3 seq=6 ts=0.000000000,0 err="key or value too large")`},
		{&wire.Resolved{Tablet: ref, WriteID: 3, TS: ts}, `Resolved(tablet=42/3 write=3 ts=1.500000000,2)`},
		{&wire.Resolved{Tablet: ref, WriteID: 3, Code: wire.StorageFailed}, `Resolved(tablet=42/3 write=3 ts=0.000000000,0 err="storage failed")`},
		{&wire.Repair{Req: 4, Tablet: ref, TS: ts}, `Repair(req=4 tablet=42/3 ts=1.500000000,2)`},
		{&wire.RepairReply{Req: 4, High: ts}, `RepairReply(req=4 high=1.500000000,2)`},
		{&wire.RepairReply{Req: 4, Code: wire.Behind}, `RepairReply(req=4 high=0.000000000,0 err="replica behind the timestamp")`},
	} {
		if got := tc.m.String(); got != tc.want {
			t.Errorf("got  %s\nwant %s", got, tc.want)
		}
	}
}

// TestStringCausal checks the trace lines of causal tables' messages.
func TestStringCausal(t *testing.T) {
	ts := hlc.Timestamp{WallNanos: 1_500_000_000, Logical: 2}
	v := wire.Version{TS: ts, Origin: "us/cc"}
	older := wire.Version{TS: hlc.Timestamp{WallNanos: 1_000_000_000}, Origin: "england/cc"}
	deps := []wire.Dep{{Key: "y", Version: older}, {Key: "z", Version: v}}
	for _, tc := range []struct {
		m    interface{ String() string }
		want string
	}{
		{v, `1.500000000,2@us/cc`},
		{wire.Version{}, `-`},
		{wire.Version{Origin: "us/cc"}, `0.000000000,0@us/cc`},
		{&wire.CausalPut{Req: 1, Table: 5, Session: 3, Seq: 2, Key: "x", Value: []byte("v"), Seen: older},
			`CausalPut(req=1 table=5 session=3 seq=2 key="x" value="v" seen=1.000000000,0@england/cc)`},
		{&wire.CausalPut{Req: 1, Table: 5, Session: 3, Seq: 2, Key: "x", Value: []byte("v"), Deps: deps},
			`CausalPut(req=1 table=5 session=3 seq=2 key="x" value="v" seen=- deps=["y"@1.000000000,0@england/cc "z"@1.500000000,2@us/cc])`},
		{&wire.CausalPut{Req: 1, Table: 5, Session: 3, Seq: 4, Seen: v, Deps: deps[:1], Notify: true},
			`CausalPut(req=1 table=5 session=3 seq=4 notify seen=1.500000000,2@us/cc deps=["y"@1.000000000,0@england/cc])`},
		{&wire.CausalPutReply{Req: 1, Table: 5, Version: v}, `CausalPutReply(req=1 table=5 version=1.500000000,2@us/cc)`},
		{&wire.CausalPutReply{Req: 1, Table: 5, Code: wire.Overloaded}, `CausalPutReply(req=1 table=5 version=- err="node overloaded")`},
		{&wire.CausalPutReply{Req: 1}, `CausalPutReply(req=1 table=0 version=-)`},
		{&wire.CausalComplete{Table: 5, Session: 3, Seq: 2}, `CausalComplete(table=5 session=3 seq=2)`},
		{&wire.CausalGet{Req: 2, Table: 5, Session: 3, Key: "x", Ring: wire.NoRing},
			`CausalGet(req=2 table=5 session=3 key="x" max=-)`},
		{&wire.CausalGet{Req: 2, Table: 5, Session: 3, Key: "x", Ring: 0, MaxRead: older},
			`CausalGet(req=2 table=5 session=3 key="x" ring=0 max=1.000000000,0@england/cc)`},
		{&wire.CausalGetReply{Req: 2, Table: 5, Found: true, Value: []byte("v"), Version: v, Source: wire.FromRing, Ring: 1, Node: "us/mm1", InFlight: true},
			`CausalGetReply(req=2 table=5 value="v" version=1.500000000,2@us/cc from=ring ring=1 node=us/mm1 in-flight)`},
		{&wire.CausalGetReply{Req: 2, Table: 5, Found: true, Value: []byte("v"), Version: v, Source: wire.FromBuffer, Ring: wire.NoRing},
			`CausalGetReply(req=2 table=5 value="v" version=1.500000000,2@us/cc from=buffer)`},
		{&wire.CausalGetReply{Req: 2, Table: 5, Source: wire.FromCache, Ring: wire.NoRing, Node: "us/cache1"},
			`CausalGetReply(req=2 table=5 not-found from=cache node=us/cache1)`},
		{&wire.CausalGetReply{Req: 2, Table: 5, Code: wire.Unavailable},
			`CausalGetReply(req=2 table=5 err="no replica answered in time")`},
		{&wire.CausalGetTx{Req: 3, Table: 5, Session: 3, Keys: []string{"a", "b c"}, Ring: wire.NoRing, MaxRead: v},
			`CausalGetTx(req=3 table=5 session=3 keys=["a" "b c"] max=1.500000000,2@us/cc)`},
		{&wire.CausalGetTx{Req: 3, Table: 5, Session: 3, Ring: 2},
			`CausalGetTx(req=3 table=5 session=3 keys=[] ring=2 max=-)`},
		{&wire.CausalGetTxReply{Req: 3, Table: 5, Ring: 2, Rounds: 2, Items: []wire.TxItem{
			{Key: "a", Found: true, Value: []byte("1"), Version: v},
			{Key: "b"},
			{Key: "c", Found: true, Value: []byte("3"), Version: older, Source: wire.FromBuffer, InFlight: true},
			{Key: "d", Found: true, Value: []byte("4"), Version: older, InFlight: true},
		}}, `CausalGetTxReply(req=3 table=5 ring=2 rounds=2 items=["a"="1"@1.500000000,2@us/cc "b"=absent ` +
			`"c"="3"@1.000000000,0@england/cc(buffer,in-flight) "d"="4"@1.000000000,0@england/cc(in-flight)])`},
		{&wire.CausalGetTxReply{Req: 3, Table: 5, Ring: wire.NoRing, Rounds: 5, Code: wire.Aborted},
			`CausalGetTxReply(req=3 table=5 rounds=5 items=[] err="no snapshot found; try again")`},
		{&wire.Propagate{Table: 5, Client: "us/c1", Session: 3, Seq: 2, Key: "x", Value: []byte("v"), Version: v, Deps: deps[:1]},
			`Propagate(table=5 session=us/c1#3 seq=2 key="x" value="v" version=1.500000000,2@us/cc deps=["y"@1.000000000,0@england/cc])`},
		{&wire.Propagate{Table: 5, Client: "us/c1", Session: 3, Seq: 4, Version: v, Deps: deps, Notify: true},
			`Propagate(table=5 session=us/c1#3 seq=4 notify version=1.500000000,2@us/cc deps=["y"@1.000000000,0@england/cc "z"@1.500000000,2@us/cc])`},
		{&wire.PropagateAck{Table: 5, Client: "us/c1", Session: 3, Seq: 2, Ring: 1}, `PropagateAck(table=5 session=us/c1#3 seq=2 ring=1)`},
		{&wire.Stable{Table: 5, Key: "x", Version: v}, `Stable(table=5 key="x" version=1.500000000,2@us/cc)`},
		{&wire.Read{Req: 4, Table: 5, Key: "x", Ring: wire.NoRing}, `Read(req=4 table=5 key="x")`},
		{&wire.Read{Req: 4, Table: 5, Key: "x", Ring: 1, Min: wire.Version{TS: hlc.Timestamp{WallNanos: 7}, Origin: "c"}}, `Read(req=4 table=5 key="x" ring=1 min=0.000000007,0@c)`},
		{&wire.Read{Req: 4, Table: 5, Key: "x", Fill: true, Ring: wire.NoRing}, `Read(req=4 table=5 key="x" fill)`},
		{&wire.ReadReply{Req: 4, Table: 5, Found: true, Value: []byte("v"), Version: v, Source: wire.FromCache, Ring: wire.NoRing},
			`ReadReply(req=4 table=5 value="v" version=1.500000000,2@us/cc from=cache)`},
		{&wire.ReadReply{Req: 4, Table: 5, Ring: 0, Node: "us/mm1"}, `ReadReply(req=4 table=5 not-found from=ring ring=0 node=us/mm1)`},
		{&wire.ReadReply{Req: 4, Table: 5, Code: wire.NoTable, Ring: wire.NoRing}, `ReadReply(req=4 table=5 err="no such table")`},
		{&wire.DepCheck{Req: 6, Table: 5, Key: "y", Version: older}, `DepCheck(req=6 table=5 key="y" version=1.000000000,0@england/cc)`},
		{&wire.DepCheckReply{Req: 6, Table: 5, Done: true}, `DepCheckReply(req=6 table=5 done)`},
		{&wire.DepCheckReply{Req: 6, Table: 5}, `DepCheckReply(req=6 table=5 not-done)`},
		{&wire.Invalidate{Req: 7, Table: 5, Key: "x", Version: v}, `Invalidate(req=7 table=5 key="x" version=1.500000000,2@us/cc)`},
		{&wire.Invalidate{Req: 7, Table: 5}, `Invalidate(req=7 table=5 all version=-)`},
		{&wire.InvalidateAck{Req: 7, Table: 5}, `InvalidateAck(req=7 table=5)`},
	} {
		if got := tc.m.String(); got != tc.want {
			t.Errorf("got  %s\nwant %s", got, tc.want)
		}
	}
}

// TestStringLayout checks how table creation and table information print
// a table of tablets and a causal table.
func TestStringLayout(t *testing.T) {
	tablets := wire.Layout{Name: "t", ID: 7, Tablets: make([]wire.Tablet, 2), Replication: wire.Replication{Mode: wire.ModePull, Interval: time.Second}}
	causal := wire.Layout{Name: "t", ID: 7, Causal: &wire.CausalLayout{
		Rings:        []wire.Ring{{Name: "a", Nodes: []wire.NodeID{"a/s1"}}, {Name: "b", Nodes: []wire.NodeID{"b/s1", "c/s1"}}},
		Coordinators: []wire.NodeID{"a/cc", "b/cc", "c/cc"},
		Caches:       []wire.NodeID{"a/cache", "b/cache", "c/cache"},
	}}
	nc := causal
	nc.Causal = &wire.CausalLayout{Rings: causal.Causal.Rings[:1], Coordinators: []wire.NodeID{"a/cc"}, Points: 16, Static: true}
	for _, tc := range []struct {
		m    interface{ String() string }
		want string
	}{
		{&wire.CreateTableRequest{Req: 1, Layout: tablets}, `CreateTable(req=1 table=t/7 tablets=2 pull/1s)`},
		{&wire.CreateTableRequest{Req: 1, Layout: causal}, `CreateTable(req=1 table=t/7 causal rings=2 ccs=3 caches=3)`},
		{&wire.CreateTableRequest{Req: 1, Layout: nc}, `CreateTable(req=1 table=t/7 causal rings=1 ccs=1 caches=0 points=16 static)`},
		{&wire.TableInfoReply{Req: 2, Layout: tablets}, `TableInfoReply(req=2 table=t/7)`},
		{&wire.TableInfoReply{Req: 2, Layout: causal}, `TableInfoReply(req=2 table=t/7 causal rings=2 ccs=3 caches=3)`},
		{&wire.TableInfoReply{Req: 2, Code: wire.NoTable}, `TableInfoReply(req=2 err="no such table")`},
	} {
		if got := tc.m.String(); got != tc.want {
			t.Errorf("got  %s\nwant %s", got, tc.want)
		}
	}
}

// BenchmarkString measures the trace lines of the messages the simulator
// delivers most: a Get's and a Put's, a pull reply's and a causal put's.
func BenchmarkString(b *testing.B) {
	for _, m := range wiretest.HotMessages() {
		s := m.(interface{ String() string })
		b.Run(wire.Kind(m), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = s.String()
			}
		})
	}
}
