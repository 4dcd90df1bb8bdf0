package wirepb

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/wire"
)

// BenchmarkWrapUnwrap measures a message's way through the transport:
// Wrap, Marshal, Unmarshal, Unwrap, for the messages of a Get and a Put,
// a pull reply and a causal put.
func BenchmarkWrapUnwrap(b *testing.B) {
	ts := hlc.Timestamp{WallNanos: 1_700_000_000_123_456_789, Logical: 7}
	ref := wire.TabletRef{Table: 42, Tablet: 3}
	v := wire.Version{TS: ts, Origin: "us/cc"}
	entries := make([]wire.Entry, 10)
	for i := range entries {
		entries[i] = wire.Entry{TS: ts, Key: "user000001", Value: make([]byte, 100)}
	}
	for _, m := range []wire.Msg{
		&wire.GetRequest{Req: 9, Tablet: ref, Key: "user000001"},
		&wire.GetReply{Req: 10, Found: true, Value: make([]byte, 100), VersionTS: ts, HighTS: ts, Primary: true},
		&wire.PutRequest{Req: 7, Tablet: ref, Key: "user000001", Value: make([]byte, 100), MinTS: ts},
		&wire.PutReply{Req: 8, TS: ts},
		&wire.PullReply{Tablet: ref, Since: ts, High: ts, Entries: entries},
		&wire.CausalPut{Req: 1, Table: 42, Session: 9, Seq: 1, Key: "user000001", Value: make([]byte, 100), Seen: v,
			Deps: []wire.Dep{{Key: "a", Version: v}, {Key: "b", Version: v}}},
	} {
		b.Run(wire.Kind(m), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				e, err := Wrap("us/c1", "england/r1", m)
				if err != nil {
					b.Fatal(err)
				}
				buf, err := proto.Marshal(e)
				if err != nil {
					b.Fatal(err)
				}
				var back Envelope
				if err := proto.Unmarshal(buf, &back); err != nil {
					b.Fatal(err)
				}
				if _, _, _, err := Unwrap(&back); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
