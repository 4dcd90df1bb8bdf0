package causal

import (
	"testing"

	"github.com/cosla/cosla/internal/core/node"
	"github.com/cosla/cosla/internal/core/wire"
)

func TestUrgent(t *testing.T) {
	for _, tc := range []struct {
		m    wire.Msg
		want bool
	}{
		{&wire.CausalGet{}, false},
		{&wire.CausalPut{}, false},
		{&wire.CausalGetTx{}, false},
		{&wire.Read{}, false},
		{&wire.ReadReply{}, true},
		{&wire.Propagate{}, true},
		{&wire.PropagateAck{}, true},
		{&wire.DepCheck{}, true},
		{&wire.DepCheckReply{}, true},
		{&wire.Invalidate{}, true},
		{&wire.InvalidateAck{}, true},
		{&wire.Stable{}, true},
		{&wire.CausalComplete{}, true},
		{&wire.CausalGetReply{}, true},
		{&wire.CausalPutReply{}, true},
		{&wire.GetRequest{}, false}, // not a causal table's
		{&wire.Push{}, false},
	} {
		if got := Urgent(tc.m); got != tc.want {
			t.Errorf("Urgent(%T) = %v, want %v", tc.m, got, tc.want)
		}
	}
	for _, h := range []node.Handler{&Node{}, &Beside{}} {
		if _, ok := h.(node.Urgency); !ok {
			t.Errorf("%T does not implement node.Urgency", h)
		}
	}
}
