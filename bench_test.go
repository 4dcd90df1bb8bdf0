package cosla_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/cosla/cosla"
	"github.com/cosla/cosla/sla"
)

// BenchmarkGet: an eventual Get of a 256-byte value through the public
// client, over TCP on loopback to a server in this process, from the call
// to its return: the read path end to end (client API, client core, DRPC
// stream, server, replica, Pebble, and back).
func BenchmarkGet(b *testing.B) {
	n := testCluster(b, "england")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := cosla.Open(ctx, n.config("england"))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	spec := cosla.TableSpec{Name: "t", Tablets: []cosla.TabletSpec{{Primary: "england/r1"}}}
	if err := c.CreateTable(ctx, spec); err != nil {
		b.Fatal(err)
	}
	s := strongSession(ctx, b, c, "t")
	value := bytes.Repeat([]byte{'v'}, 256)
	if _, err := c.Put(ctx, s, "user000001", value); err != nil {
		b.Fatal(err)
	}
	eventual := cosla.WithSLA(sla.SLA{{Consistency: sla.EventualConsistency, Latency: time.Second, Utility: 1}})
	b.ReportAllocs()
	for b.Loop() {
		got, _, err := c.Get(ctx, s, "user000001", eventual)
		if err != nil || len(got) != len(value) {
			b.Fatalf("Get: %d bytes, %v", len(got), err)
		}
	}
}
