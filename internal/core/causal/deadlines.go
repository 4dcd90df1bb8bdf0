package causal

import (
	"time"

	"github.com/cosla/cosla/internal/core/node"
)

// deadlines times out requests that all wait the same delay, with one
// timer armed at a time, for the oldest: the cores here start a request
// for every operation, and a timer each would crowd the runtime's queue
// with timers that almost never matter. Entries are in the order added,
// which is the order of their deadlines; one whose request finished
// stays until its deadline and is then ignored by the caller.
type deadlines[K any] struct {
	delay time.Duration
	tick  any // the timer value, unique to the queue within its core
	q     []deadline[K]
	armed bool
}

type deadline[K any] struct {
	key K
	at  time.Time
}

func newDeadlines[K any](delay time.Duration, tick any) *deadlines[K] {
	return &deadlines[K]{delay: delay, tick: tick}
}

// add starts key's wait.
func (d *deadlines[K]) add(env node.Env, key K) {
	d.q = append(d.q, deadline[K]{key, env.Now().Add(d.delay)})
	if !d.armed {
		d.armed = true
		env.After(d.delay, d.tick)
	}
}

// fire is called when the queue's timer fires: it returns the keys whose
// wait is over and arms the timer for the next.
func (d *deadlines[K]) fire(env node.Env) []K {
	d.armed = false
	now := env.Now()
	i := 0
	for i < len(d.q) && !d.q[i].at.After(now) {
		i++
	}
	out := make([]K, i)
	for j := range i {
		out[j] = d.q[j].key
	}
	d.q = d.q[i:]
	if len(d.q) == 0 {
		d.q = nil
	} else {
		d.armed = true
		env.After(d.q[0].at.Sub(now), d.tick)
	}
	return out
}
