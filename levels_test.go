package cosla_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cosla/cosla"
	"github.com/cosla/cosla/sla"
)

// TestLevelsOverNetwork runs write and read levels (CPQ) on three real
// nodes over loopback TCP with Pebble: a Put at ALL is held by every
// replica when it returns, as a read of all three shows; a level above
// the replicas is refused; a read of all three after a Put at ONE writes
// the version back to the secondaries before it answers (read repair);
// and with one node down a Put at ALL ends in
// ErrQuorumTimeout saying that two replicas hold it, and the primary
// serves it.
func TestLevelsOverNetwork(t *testing.T) {
	n, servers := testServers(t, "england", "us", "india")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := cosla.Open(ctx, n.config("us"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Pulls a minute apart: only the pushes of leveled Puts replicate.
	spec := cosla.TableSpec{Name: "t", PullInterval: time.Minute,
		Tablets: []cosla.TabletSpec{{Primary: "england/r1", Secondaries: []string{"us/r1", "india/r1"}}}}
	if err := c.CreateTable(ctx, spec); err != nil {
		t.Fatal(err)
	}
	tbl, err := c.OpenTable(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.BeginSession(tbl, sla.SLA{{Consistency: sla.EventualConsistency, Latency: 10 * time.Second, Utility: 1}},
		cosla.WithReadLevel(cosla.All))
	if err != nil {
		t.Fatal(err)
	}

	ts, err := c.Put(ctx, s, "k", []byte("v1"), cosla.WithWriteLevel(cosla.All))
	if err != nil {
		t.Fatal(err)
	}
	value, res, err := c.Get(ctx, s, "k")
	if err != nil {
		t.Fatal(err)
	}
	if string(value) != "v1" || res.Level != 3 || len(res.Replies) != 3 {
		t.Fatalf("read of all: %q from %d replicas (%d replies), want v1 from 3", value, res.Level, len(res.Replies))
	}
	for _, r := range res.Replies {
		if !r.Found || r.VersionTS != ts {
			t.Errorf("replica %s answered version %s (found %v) after a Put at ALL with %s", r.Node, r.VersionTS, r.Found, ts)
		}
	}

	if _, err := c.Put(ctx, s, "k", []byte("v2"), cosla.WithWriteLevel(4)); !errors.Is(err, cosla.ErrInvalid) {
		t.Errorf("Put at level 4 of 3 replicas: %v, want ErrInvalid", err)
	}
	// A session's levels are checked against the table when it begins.
	for _, o := range []cosla.SessionOption{cosla.WithWriteLevel(4), cosla.WithReadLevel(4)} {
		_, err := c.BeginSession(tbl, sla.SLA{{Consistency: sla.EventualConsistency, Latency: time.Second, Utility: 1}}, o)
		if !errors.Is(err, cosla.ErrInvalid) || !strings.Contains(err.Error(), "level 4 is more than the tablet's 3 replicas") {
			t.Errorf("a session at level 4 of 3 replicas: %v, want ErrInvalid naming the level and the replicas", err)
		}
	}

	// A Put at ONE reaches England only (no push, pulls a minute apart):
	// a read of all three finds the others stale, and writes back before
	// it answers, the secondaries pulling v2 from England.
	ts2, err := c.Put(ctx, s, "k", []byte("v2"), cosla.WithWriteLevel(cosla.One))
	if err != nil {
		t.Fatal(err)
	}
	value, res, err = c.Get(ctx, s, "k")
	if err != nil || string(value) != "v2" || res.VersionTS != ts2 || res.Repaired != 2 || res.Held < 2 {
		t.Fatalf("read of all after a Put at ONE: %q at %s, %d repaired, held by %d, %v; want v2 at %s, 2 repaired, held by 2 or more",
			value, res.VersionTS, res.Repaired, res.Held, err, ts2)
	}
	// Any two replicas hold v2 now, whichever stale one caught up first.
	for range 5 {
		value, res, err = c.Get(ctx, s, "k", cosla.WithReadLevel(2), cosla.WithReadRepair(false), cosla.WithGetStrategy(cosla.Random))
		if err != nil || string(value) != "v2" {
			t.Errorf("read of two after the write-back: %q (replies %v), %v; want v2", value, res.Replies, err)
		}
	}

	servers["india"].Close()
	short, cancelShort := context.WithTimeout(ctx, 2*time.Second)
	defer cancelShort()
	ts3, err := c.Put(short, s, "k", []byte("v3"), cosla.WithWriteLevel(cosla.All))
	var qe *cosla.QuorumTimeoutError
	if !errors.Is(err, cosla.ErrQuorumTimeout) || !errors.As(err, &qe) {
		t.Fatalf("Put at ALL with India down: %v, want ErrQuorumTimeout", err)
	}
	if qe.Acks != 2 || qe.Level != 3 || qe.TS != ts3 || !ts.Less(ts3) {
		t.Errorf("quorum timeout: %d of %d replicas, ts %s (returned %s); want 2 of 3 and a timestamp after %s", qe.Acks, qe.Level, qe.TS, ts3, ts)
	}
	// The version is durable at the primary: a strong read finds it.
	strong, _ := sla.Parse("strong 10s 1")
	value, _, err = c.Get(ctx, s, "k", cosla.WithSLA(strong), cosla.WithReadLevel(cosla.One))
	if err != nil || string(value) != "v3" {
		t.Errorf("strong read after the timed-out Put: %q, %v; want v3", value, err)
	}
}

// TestParseLevel: the public parser reads the levels' names and counts,
// and refuses anything else with ErrInvalid and the core's message alone,
// which the CLI prints after the flag's name.
func TestParseLevel(t *testing.T) {
	for in, want := range map[string]cosla.Level{"one": cosla.One, "QUORUM": cosla.Quorum, "all": cosla.All, "2": 2} {
		if got, err := cosla.ParseLevel(in); got != want || err != nil {
			t.Errorf("ParseLevel(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	_, err := cosla.ParseLevel("nine")
	if !errors.Is(err, cosla.ErrInvalid) || err.Error() != `unknown level "nine" (want one, quorum, all or a positive number of replicas)` {
		t.Errorf("ParseLevel(nine): %v (ErrInvalid %t)", err, errors.Is(err, cosla.ErrInvalid))
	}
}
