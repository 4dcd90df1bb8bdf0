package wan

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkRoundTrip streams 8 MiB through a link and back per iteration.
// Pipelining should make MB/s nearly independent of the latency: compare
// the sub-benchmarks with -bench RoundTrip -benchmem.
func BenchmarkRoundTrip(b *testing.B) {
	for _, latency := range []time.Duration{0, 10 * time.Millisecond} {
		b.Run(fmt.Sprintf("latency=%v", latency), func(b *testing.B) {
			echo := startEcho(b)
			l, err := NewLink(echo.addr(), Options{Latency: latency, Jitter: latency / 10})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			data := make([]byte, 8<<20)
			b.SetBytes(int64(2 * len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if err := roundTrip(l.Addr(), data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
