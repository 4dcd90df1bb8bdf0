package clientcore

import (
	"errors"
	"strings"
	"testing"
	"time"
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

// TestLevelWaitLeavesRoom checks that the primary's wait for a write
// level ends early enough for its QuorumTimeout to reach the client
// before the Put's own timeout: on loopback, where the round trip is
// next to nothing, a 2 s Put left 5 ms, less than a loaded machine's
// timer lateness, and the client timed out instead.
func TestLevelWaitLeavesRoom(t *testing.T) {
	at := time.Unix(0, 0)
	for _, tc := range []struct {
		timeout, rtt, want time.Duration
	}{
		{2 * time.Second, 100 * time.Microsecond, 2*time.Second - 200*time.Microsecond - 100*time.Millisecond},
		{10 * time.Second, 150 * time.Millisecond, 10*time.Second - 300*time.Millisecond - 500*time.Millisecond},
		{50 * time.Millisecond, 100 * time.Microsecond, 50*time.Millisecond - 200*time.Microsecond - holdMargin},
		{time.Second, 400 * time.Millisecond, 500 * time.Millisecond},
	} {
		r := &replicaState{rtt: newRTTStats(8)}
		r.rtt.Add(at, tc.rtt)
		if got := levelWait(tc.timeout, r); got != tc.want {
			t.Errorf("levelWait(%s) with a %s round trip = %s, want %s", tc.timeout, tc.rtt, got, tc.want)
		}
	}
	if got := levelWait(time.Second, &replicaState{rtt: newRTTStats(8)}); got != 500*time.Millisecond {
		t.Errorf("levelWait(1s) with no round trip known = %s, want half", got)
	}
}
