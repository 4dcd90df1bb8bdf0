package clientcore

import (
	"errors"
	"testing"

	"github.com/cosla/cosla/internal/core/causal"
	"github.com/cosla/cosla/internal/core/wire"
)

// TestCausalTimeoutNamesNode checks the error of a causal Get that timed
// out (issue 25 item 6): it is ErrTimeout and names the node the read
// waited for, the ring's node for a read bound to a ring, the coordinator
// when it did not answer.
func TestCausalTimeoutNamesNode(t *testing.T) {
	ct := &causalTable{layout: &causal.Layout{Rings: []causal.Ring{{Name: "eu"}, {Name: "asia"}}}, cc: "eu/cc"}
	for _, tc := range []struct {
		r    causal.Result
		want string
	}{
		{causal.Result{Code: wire.Unavailable, Node: "asia/mm2", Ring: 1, Restricted: true},
			`cosla: request timed out: get "k": asia/mm2 of ring 1 (asia) did not answer before the read's deadline; a ring restriction binds the session to that ring (Karma 4.2)`},
		{causal.Result{Code: wire.Unavailable, Node: "eu/cc", Ring: wire.NoRing},
			`cosla: request timed out: get "k": no answer from the coordinator eu/cc`},
		{causal.Result{Code: wire.Unavailable, Ring: wire.NoRing},
			`get "k": cosla: request timed out: no ring of the causal table answered in time`},
	} {
		if err := ct.timeoutError("k", tc.r); !errors.Is(err, ErrTimeout) || err.Error() != tc.want {
			t.Errorf("timeoutError(%+v) = %v, want %s", tc.r, err, tc.want)
		}
	}
}
