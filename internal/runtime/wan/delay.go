package wan

import (
	"math/rand/v2"
	"time"
)

// oneWay draws a one-way delay: latency + jitter*(E-1) with E exponential
// with mean 1, clamped at zero. This is internal/runtime/sim.Latency's distribution,
// copied rather than imported so that the emulated cluster and the
// simulator agree on what "mean 70 ms, jitter 1 ms" means without the
// server runtime depending on the simulator.
func oneWay(latency, jitter time.Duration, r *rand.Rand) time.Duration {
	if jitter == 0 {
		return latency
	}
	d := latency + time.Duration(float64(jitter)*(r.ExpFloat64()-1))
	return max(d, 0)
}

// burstGap: a chunk read within burstGap of the previous one on the same
// direction of a connection, while that one is still held, belongs to the
// same burst (the TLS records of one batch of messages are written microseconds
// apart) and travels with the same delay. Drawing per chunk instead made a message of k chunks arrive at
// the largest of k draws: on the U.S.-England link of pileus4 (147 ms,
// 0.6 ms jitter) 10-17% of strong Gets missed 150 ms, against 0.6% in the
// paper and in the simulator, which draws once per message.
const burstGap = 500 * time.Microsecond

// schedule assigns release times to the chunks of one direction of one
// connection. It is pure: the caller passes the time, so tests can check it
// without a clock.
type schedule struct {
	last      time.Time     // release time of the previous chunk
	lastRead  time.Time     // read time of the previous chunk
	lastDelay time.Duration // delay of the previous chunk
}

// next returns when a chunk read at now with a drawn delay may be written:
// now+delay (the previous chunk's delay instead, within a burst), or the
// previous chunk's release time if that is later, because a TCP stream
// delivers bytes in order and one late chunk holds back the chunks behind
// it.
func (s *schedule) next(now time.Time, delay time.Duration) time.Time {
	if now.Before(s.last) && now.Sub(s.lastRead) < burstGap {
		delay = s.lastDelay
	}
	s.lastRead, s.lastDelay = now, delay
	t := now.Add(delay)
	if t.Before(s.last) {
		t = s.last
	}
	s.last = t
	return t
}
