package run

import (
	"math/rand/v2"
	"time"
)

// step is one op a role issues next.
type step struct {
	write bool
	key   string
}

// plan is a role's schedule as a pure function of time, shared by the live
// and the simulated runners: writes at WriteOffset + k*WriteEvery, reads
// at k/ReadHz, each op starting when its slot comes or, if the client is
// late, as soon as the previous op returns (slots that have passed are
// skipped, never made up in a burst). A round writes, or reads, every key
// in order, back to back (Wada 3.2).
//
// With jitter set (the simulator, where op latencies are exact) each read
// starts at a uniformly random point of its slot, so that over a run the
// reads fall at every distance from the writes; live runs get the same
// from the network.
type plan struct {
	spec       RoleSpec
	readEvery  time.Duration
	nextWrite  time.Duration
	readSlot   int64
	jitter     *rand.Rand
	queue      []step
	readPrimed bool
	nextReadAt time.Duration
}

func newPlan(spec RoleSpec, jitter *rand.Rand) *plan {
	p := &plan{spec: spec, jitter: jitter, nextWrite: spec.WriteOffset}
	p.readEvery = time.Duration(float64(time.Second) / spec.ReadHz)
	if p.readEvery <= 0 {
		p.readEvery = 1
	}
	return p
}

// next returns the next step and the time, relative to the run's start,
// at which it starts, given that the role is free at now; ok is false when
// the schedule has ended (nothing starts at or after spec.Duration).
func (p *plan) next(now time.Duration) (s step, at time.Duration, ok bool) {
	if len(p.queue) > 0 {
		s, p.queue = p.queue[0], p.queue[1:]
		return s, now, now < p.spec.Duration
	}
	readAt := time.Duration(-1)
	if p.spec.Read {
		readAt = p.peekRead(now)
	}
	if p.spec.Write && (!p.spec.Read || p.nextWrite <= readAt) {
		at = max(p.nextWrite, now)
		for p.nextWrite <= at {
			p.nextWrite += p.spec.WriteEvery
		}
		p.enqueue(true)
	} else {
		at = readAt
		p.readPrimed = false
		p.readSlot++
		p.enqueue(false)
	}
	s, p.queue = p.queue[0], p.queue[1:]
	return s, at, at < p.spec.Duration
}

// peekRead returns when the next read starts, skipping passed slots.
func (p *plan) peekRead(now time.Duration) time.Duration {
	if p.readPrimed {
		return max(p.nextReadAt, now)
	}
	slotStart := func(k int64) time.Duration { return time.Duration(k) * p.readEvery }
	for slotStart(p.readSlot+1) <= now {
		p.readSlot++
	}
	at := slotStart(p.readSlot)
	if p.jitter != nil {
		at += time.Duration(p.jitter.Int64N(int64(p.readEvery)))
	}
	p.nextReadAt, p.readPrimed = at, true
	return max(at, now)
}

func (p *plan) enqueue(write bool) {
	for _, k := range p.spec.Keys {
		p.queue = append(p.queue, step{write: write, key: k})
	}
}
