package wirepb

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/core/wire/wiretest"
)

// BenchmarkWrapUnwrap measures a message's way through the transport:
// Wrap, Marshal, Unmarshal, Unwrap, for the messages of a Get and a Put,
// a pull reply and a causal put.
func BenchmarkWrapUnwrap(b *testing.B) {
	for _, m := range wiretest.HotMessages() {
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
