package wire_test

import (
	"testing"
	"time"

	"github.com/cosla/cosla/internal/hlc"
	"github.com/cosla/cosla/internal/wire"
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
		{&wire.ForwardAck{Tablet: ref, Seq: 5, TS: ts, Acks: 2, Holders: []wire.NodeID{"england/r1", "us/r1"}, Tested: wire.Held},
			`ForwardAck(tablet=42/3 seq=5 ts=1.500000000,2 acks=2 holders=[england/r1 us/r1] tested=held)`},
		{&wire.ForwardAck{Tablet: ref, Seq: 6, Code: wire.TooLarge},
			`ForwardAck(tablet=42/3 seq=6 ts=0.000000000,0 err="key or value too large")`},
		{&wire.Resolved{Tablet: ref, WriteID: 3, TS: ts}, `Resolved(tablet=42/3 write=3 ts=1.500000000,2)`},
		{&wire.Resolved{Tablet: ref, WriteID: 3, Code: wire.StorageFailed}, `Resolved(tablet=42/3 write=3 ts=0.000000000,0 err="storage failed")`},
	} {
		if got := tc.m.String(); got != tc.want {
			t.Errorf("got  %s\nwant %s", got, tc.want)
		}
	}
}
