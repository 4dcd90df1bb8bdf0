package wire_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/wire"
)

// oneOfEach is a message of every type, in the order of wire.Kinds.
func oneOfEach() []wire.Msg {
	return []wire.Msg{
		&wire.CreateTableRequest{Req: 1}, &wire.CreateTableReply{Req: 1},
		&wire.DeleteTableRequest{Req: 1}, &wire.DeleteTableReply{Req: 1},
		&wire.TableInfoRequest{Req: 1}, &wire.TableInfoReply{Req: 1},
		&wire.PutRequest{Req: 1}, &wire.PutReply{Req: 1},
		&wire.GetRequest{Req: 1}, &wire.GetReply{Req: 1},
		&wire.ProbeRequest{Req: 1}, &wire.ProbeReply{Req: 1},
		&wire.PullRequest{}, &wire.PullReply{},
		&wire.Push{}, &wire.PushAck{}, &wire.Repair{},
		&wire.Forward{}, &wire.ForwardAck{}, &wire.Resolved{},
		&wire.CausalPut{Req: 1}, &wire.CausalPutReply{Req: 1}, &wire.CausalComplete{},
		&wire.CausalGet{Req: 1}, &wire.CausalGetReply{Req: 1},
		&wire.CausalGetTx{Req: 1}, &wire.CausalGetTxReply{Req: 1},
		&wire.Propagate{}, &wire.PropagateAck{}, &wire.Stable{},
		&wire.Read{Req: 1}, &wire.ReadReply{Req: 1},
		&wire.DepCheck{Req: 1}, &wire.DepCheckReply{Req: 1},
		&wire.Invalidate{Req: 1}, &wire.InvalidateAck{Req: 1},
		&wire.RepairReply{Req: 1},
		&wire.ConfigRaft{}, &wire.LeaseRenew{}, &wire.LeaseGrant{}, &wire.HighRequest{}, &wire.HighReply{},
		&wire.EpochChange{}, &wire.EpochAck{}, &wire.UtilityReport{}, &wire.Reconfigure{Req: 1}, &wire.ReconfigureReply{Req: 1},
	}
}

func TestKind(t *testing.T) {
	msgs := oneOfEach()
	if len(msgs) != len(wire.Kinds) {
		t.Fatalf("%d messages, %d kinds", len(msgs), len(wire.Kinds))
	}
	for i, m := range msgs {
		if got := wire.Kind(m); got != wire.Kinds[i] {
			t.Errorf("Kind(%T) = %q, want %q", m, got, wire.Kinds[i])
		}
	}
	if got := wire.Kind(nil); got != "unknown" {
		t.Errorf("Kind(nil) = %q, want unknown", got)
	}
	for _, k := range wire.NodeKinds {
		if !slices.Contains(wire.Kinds, k) {
			t.Errorf("NodeKinds lists %q, which is not a kind", k)
		}
	}
	// What a storage node serves: every client request, and every message
	// that neither clients send nor clients receive.
	clientBound := []string{"reconfigure-reply", "create-table-reply", "delete-table-reply", "table-info-reply", "put-reply", "get-reply", "probe-reply", "resolved",
		"repair-reply", "causal-put-reply", "causal-complete", "causal-get-reply", "causal-get-tx-reply"}
	for _, m := range msgs {
		k := wire.Kind(m)
		if want := wire.FromClient(m) || !slices.Contains(clientBound, k); slices.Contains(wire.NodeKinds, k) != want {
			t.Errorf("%q in NodeKinds: %v, want %v", k, !want, want)
		}
	}
}

// TestSizeNil checks that nil messages have no size and nil pointers the
// size of an empty message, without a panic. wirepb's TestSize checks the
// sizes against the protobuf encoding.
func TestSizeNil(t *testing.T) {
	if got := wire.Size(nil); got != 0 {
		t.Errorf("Size(nil) = %d, want 0", got)
	}
	if got := wire.EnvelopeSize("a", "b", nil); got != 0 {
		t.Errorf("EnvelopeSize(nil) = %d, want 0", got)
	}
	// Field 16, empty: a two-byte tag and a zero length.
	if got := wire.Size((*wire.PutRequest)(nil)); got != 3 {
		t.Errorf("Size of a nil *PutRequest = %d, want 3", got)
	}
	if got := wire.EnvelopeSize("a", "bc", (*wire.PutRequest)(nil)); got != 3+3+4 {
		t.Errorf("EnvelopeSize of a nil *PutRequest = %d, want 10", got)
	}
}

func TestSizeAndKindDoNotAllocate(t *testing.T) {
	entries := make([]wire.Entry, 100)
	v := wire.Version{TS: hlc.Timestamp{WallNanos: 1}, Origin: "us/cc"}
	deps := []wire.Dep{{Key: "a", Version: v}, {Key: "b"}}
	for _, m := range append(oneOfEach(), &wire.PullReply{Entries: entries},
		&wire.CausalPut{Seen: v, Deps: deps}, &wire.Propagate{Version: v, Deps: deps},
		&wire.CausalGetTx{Keys: []string{"a", "b"}}, &wire.CausalGetTxReply{Items: []wire.TxItem{{Key: "a", Version: v}, {}}}) {
		t.Run(fmt.Sprintf("%T", m), func(t *testing.T) {
			if a := testing.AllocsPerRun(100, func() { _ = wire.EnvelopeSize("us/c1", "eu/r1", m) + len(wire.Kind(m)) }); a != 0 {
				t.Errorf("%v allocations per call", a)
			}
		})
	}
}
