package harness

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/cosla/cosla/internal/check"
	"github.com/cosla/cosla/internal/clientcore"
	"github.com/cosla/cosla/internal/wire"
	"github.com/cosla/cosla/sla"
)

// Step is one operation of a workload: a Put of Value (a unique value is
// made up when nil) or a Get.
type Step struct {
	Put   bool
	Key   string
	Value []byte
}

// Loop runs one client's closed-loop workload: each operation starts when
// the previous one has finished, plus Think, in sessions of SessionOps
// operations (Pileus 5.1).
type Loop struct {
	Client   wire.NodeID
	Table    *clientcore.Table
	SLA      sla.SLA
	Strategy clientcore.Strategy
	// SessionOps is the number of operations per session; 0 runs one
	// session throughout.
	SessionOps int
	// Ops stops the loop after that many operations; Until stops it from
	// starting operations at or after that virtual time. Zero means no
	// limit, but at least one must be set.
	Ops   int
	Until time.Duration
	Think time.Duration
	// Get are the options of every Get (the session's SLA and strategy
	// apply unless they are set).
	Get clientcore.GetOptions
	// Next chooses the next operation.
	Next func(r *rand.Rand) Step
	Rand *rand.Rand
	// Record appends every operation to World.History.
	Record bool
	// OnGet and OnPut, if set, see every result.
	OnGet func(clientcore.GetResult, error)
	OnPut func(clientcore.PutResult, error)

	world   *World
	session *clientcore.Session
	// sessionID names the session in the history.
	sessionID string
	sessions  int
	inSession int
	done      int
	finished  bool
	err       error
}

// Start schedules the loop's first operation now.
func (w *World) Start(l *Loop) error {
	if l.Ops <= 0 && l.Until <= 0 {
		return fmt.Errorf("harness: loop for %s has neither Ops nor Until: it would never stop", l.Client)
	}
	if l.Next == nil || l.Rand == nil || l.Table == nil {
		return fmt.Errorf("harness: loop for %s needs Next, Rand and Table", l.Client)
	}
	l.world = w
	w.Sim.After(0, l.step)
	return nil
}

// Finished reports whether the loop has stopped.
func (l *Loop) Finished() bool { return l.finished }

// Err returns the error that stopped the loop early, if any.
func (l *Loop) Err() error { return l.err }

// Completed returns the number of operations that have finished.
func (l *Loop) Completed() int { return l.done }

func (l *Loop) stop(err error) {
	l.finished = true
	if l.err == nil {
		l.err = err
	}
}

func (l *Loop) step() {
	sim := l.world.Sim
	if (l.Ops > 0 && l.done >= l.Ops) || (l.Until > 0 && sim.Now() >= l.Until) {
		l.stop(nil)
		return
	}
	c, err := l.world.Client(l.Client)
	if err != nil {
		l.stop(err)
		return
	}
	if l.session == nil || (l.SessionOps > 0 && l.inSession >= l.SessionOps) {
		if l.session != nil {
			c.EndSession(l.session)
		}
		if l.session, err = c.BeginSession(l.Table, l.SLA, l.Strategy); err != nil {
			l.stop(err)
			return
		}
		l.sessions++
		l.sessionID = fmt.Sprintf("%s#%d", l.Client, l.sessions)
		l.inSession = 0
	}
	l.inSession++
	st := l.Next(l.Rand)
	call := sim.Now()
	op := check.Op{Client: string(l.Client), Session: l.sessionID, Key: st.Key, Call: call}
	next := func() {
		l.done++
		if l.Record {
			op.Return = sim.Now()
			l.world.History = append(l.world.History, op)
		}
		sim.After(l.Think, l.step)
	}
	if st.Put {
		if st.Value == nil {
			st.Value = fmt.Appendf(nil, "%s:%d", l.Client, l.done)
		}
		op.Kind, op.Value = check.Put, string(st.Value)
		err = c.Put(l.session, st.Key, st.Value, func(r clientcore.PutResult, err error) {
			op.OK, op.TS = err == nil, r.TS
			if l.OnPut != nil {
				l.OnPut(r, err)
			}
			next()
		})
	} else {
		op.Kind = check.Get
		err = c.Get(l.session, st.Key, l.Get, func(r clientcore.GetResult, err error) {
			if err == nil {
				op.OK, op.Found, op.Value, op.TS = true, r.Found, string(r.Value), r.VersionTS
				op.Met, op.MetRank = r.SubSLA, r.Met+1
			}
			if l.OnGet != nil {
				l.OnGet(r, err)
			}
			next()
		})
	}
	if err != nil {
		l.stop(err)
	}
}
