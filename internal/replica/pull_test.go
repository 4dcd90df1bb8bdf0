package replica_test

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cosla/cosla/internal/replica"
	"github.com/cosla/cosla/internal/storage"
	"github.com/cosla/cosla/internal/wire"
)

// TestPullBatchBytes: a pull reply stops before the version that would
// take it past PullBatchBytes, but always carries one version, however
// large; the secondary's next pull goes on from there.
func TestPullBatchBytes(t *testing.T) {
	env := &partitionEnv{engine: storage.NewMem(), rng: rand.New(rand.NewPCG(1, 2))}
	n := replica.New(replica.Options{PullBatchBytes: 2500})
	if err := n.Start(env); err != nil {
		t.Fatal(err)
	}
	layout := wire.Layout{Name: "t", ID: 9, Tablets: []wire.Tablet{{Primary: "s/r1", Secondaries: []wire.NodeID{"p/r1"}}},
		Replication: wire.Replication{Mode: wire.ModePull, Interval: time.Minute}}
	if r := env.ask(t, n, &wire.CreateTableRequest{Req: 1, Layout: layout}).(*wire.CreateTableReply); r.Code != wire.OK {
		t.Fatalf("create table: %s", r.Code)
	}
	ref := wire.TabletRef{Table: 9}
	sizes := []int{1000, 1000, 1000, 6000, 10}
	for i, size := range sizes {
		put := &wire.PutRequest{Req: uint64(10 + i), Tablet: ref, Key: string(rune('a' + i)), Value: bytes.Repeat([]byte{'v'}, size)}
		if r := env.ask(t, n, put).(*wire.PutReply); r.Code != wire.OK {
			t.Fatalf("put %d: %s", i, r.Code)
		}
	}
	// Versions per reply: two of 1000 bytes fit in 2500, a third does not;
	// then one of 1000 (the 6000 would pass the limit); the 6000 alone;
	// the last one.
	var since wire.PullReply
	for i, want := range []int{2, 1, 1, 1} {
		e := env
		e.sent = e.sent[:0]
		n.Receive("p/r1", &wire.PullRequest{Tablet: ref, Since: since.High})
		r := e.sent[0].(*wire.PullReply)
		if r.Code != wire.OK || len(r.Entries) != want || r.More != (i < 3) {
			t.Fatalf("pull %d: %s, %d versions, more %v; want %d versions, more %v", i, r.Code, len(r.Entries), r.More, want, i < 3)
		}
		if got := wire.EnvelopeSize("s/r1", "p/r1", r); got > replica.Options(replica.Options{PullBatchBytes: 2500}).EnsureDefaults().MessageBytesMax() {
			t.Fatalf("pull %d: a reply of %d bytes passes MessageBytesMax", i, got)
		}
		since = *r
	}
}
