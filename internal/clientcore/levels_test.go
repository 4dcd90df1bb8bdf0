package clientcore

import (
	"errors"
	"strings"
	"testing"
)

// TestLevelsRefusedBeforeSending checks that a read or write level above
// the tablet's replica count is refused with ErrInvalid, naming the level
// and the count, before anything is sent (issue 25 item 5): when the
// session's policy is set, and for one operation's level even when it is
// only one of a CPQ mix's two.
func TestLevelsRefusedBeforeSending(t *testing.T) {
	c, env, table := openedClient(t, Options{})
	s, err := c.BeginSession(table, defaultSLA, Pileus)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		policy Policy
		want   string
	}{
		{Policy{Write: Fixed(4)}, "write level 4 is more than the tablet's 3 replicas"},
		{Policy{Read: Mix(0.5, One, 4)}, "read level 4 is more than the tablet's 3 replicas"},
	} {
		if err := s.SetPolicy(tc.policy); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("SetPolicy(%+v) = %v, want ErrInvalid saying %q", tc.policy, err, tc.want)
		}
	}
	env.sent = nil
	mix := Mix(0.01, One, 4) // draws One 99 times in 100
	if err := c.Put(s, "k", []byte("v"), PutOptions{Write: mix}, func(PutResult, error) {}); !errors.Is(err, ErrInvalid) {
		t.Errorf("Put at %s = %v, want ErrInvalid", mix, err)
	}
	if err := c.Get(s, "k", GetOptions{Read: mix}, func(GetResult, error) {}); !errors.Is(err, ErrInvalid) {
		t.Errorf("Get at %s = %v, want ErrInvalid", mix, err)
	}
	if len(env.sent) != 0 {
		t.Errorf("sent %v for operations refused", env.sent)
	}
}
