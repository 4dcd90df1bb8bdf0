package sim

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"math/bits"
	"slices"
	"time"

	"github.com/cosla/cosla/internal/core/storage"
	"github.com/cosla/cosla/internal/core/wire"
)

// This file charges for where a real server's time goes beyond the
// network's latency: per-kind service times, fsyncs with group commit
// (DESIGN.md section 2, "Durable writes and group commit") and link
// bandwidth. Each is off by default, and a run with none set is event for
// event the run it was before they existed.

// validate reports a negative mean or jitter, naming the field.
func (l Latency) validate(field string) error {
	if l.Mean < 0 || l.Jitter < 0 {
		return fmt.Errorf("%w: %s %+v is negative", ErrConfig, field, l)
	}
	return nil
}

// Validate reports the first field that cannot work: a negative latency,
// or a ServiceByKind key that is not one of wire.Kinds (a typo would
// otherwise cost nothing, silently). The error wraps ErrConfig.
func (o NodeOptions) Validate() error {
	if err := o.Service.validate("Service"); err != nil {
		return err
	}
	if err := validateServiceByKind(o.ServiceByKind); err != nil {
		return err
	}
	return o.Fsync.validate("Fsync")
}

func validateServiceByKind(m map[string]Latency) error {
	// Sorted, so that the error names the same kind every time.
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !slices.Contains(wire.Kinds, k) {
			return fmt.Errorf("%w: ServiceByKind: unknown message kind %q (see wire.Kinds)", ErrConfig, k)
		}
		if err := m[k].validate(fmt.Sprintf("ServiceByKind[%q]", k)); err != nil {
			return err
		}
	}
	return nil
}

// serviceTime draws the time a node spends on a message: Service, from the
// node's own stream as it always has, plus the message kind's cost from
// the cost stream, so that setting per-kind costs does not change the
// random numbers the handler draws.
func (s *Sim) serviceTime(n *simNode, m wire.Msg) time.Duration {
	d := n.opts.Service.sample(n.rng)
	if len(n.opts.ServiceByKind) > 0 {
		if l, ok := n.opts.ServiceByKind[wire.Kind(m)]; ok {
			d += l.sample(n.costs)
		}
	}
	return d
}

// transmission is how long a message of size bytes occupies a link of
// bandwidth bytes per second.
func transmission(size int, bandwidth int64) time.Duration {
	hi, lo := bits.Mul64(uint64(size), uint64(time.Second))
	if hi >= uint64(bandwidth) {
		return math.MaxInt64 // beyond 292 years: the link is as good as cut
	}
	d, _ := bits.Div64(hi, lo, uint64(bandwidth))
	return time.Duration(min(d, math.MaxInt64))
}

// outMsg is a message a node sent while handling an event.
type outMsg struct {
	to wire.NodeID
	m  wire.Msg
}

// fsyncGroup is one fsync of a node's disk and the events whose synced
// writes it makes durable. The disk runs one fsync at a time, from start
// to end. Until start the group is open: every event with synced writes
// that ends by then joins it (group commit). The messages those events
// sent are held until end.
type fsyncGroup struct {
	start, end time.Duration
	events     int64
	held       []outMsg
}

// diskEngine is the engine a node's Env returns: the node's Mem, with the
// synced writes of an event deferred to the fsync that covers the event.
//
// While Fsync is set, Apply with sync applies the batch without sync and
// notes that the event needs an fsync; the fsync's end syncs the Mem. So a
// crash before the fsync completes loses the group's writes, as a real
// disk would, along with the replies that acknowledged them, which were
// held; a crash after it keeps them. Reads see the writes at once, but
// what an event sends while an fsync is pending waits for the last one, as
// in the host runtime (internal/runtime/host, commit.go): no message reveals a
// write that a crash could take back. Outside an event (a handler's Start, a driver's call) and with Fsync
// zero, Apply is the Mem's.
type diskEngine struct {
	node *simNode
}

// errDisk is the error of a read or write that SetDiskErrors failed.
var errDisk = errors.New("sim: disk I/O error")

// failed draws whether this read or write fails (SetDiskErrors).
func (d *diskEngine) failed() bool {
	n := d.node
	if n.diskErrors == 0 || n.recovering || n.faults.Float64() >= n.diskErrors {
		return false
	}
	n.env.sim.stats.DiskErrors++
	return true
}

func (d *diskEngine) Get(key []byte) ([]byte, bool, error) {
	if d.failed() {
		return nil, false, errDisk
	}
	return d.node.engine.Get(key)
}

func (d *diskEngine) Scan(start, end []byte, fn func(key, value []byte) bool) error {
	if d.failed() {
		return errDisk
	}
	return d.node.engine.Scan(start, end, fn)
}

func (d *diskEngine) Apply(b *storage.Batch, sync bool) error {
	n := d.node
	if d.failed() {
		return errDisk
	}
	if !sync || !n.inEvent {
		return n.engine.Apply(b, sync)
	}
	if err := n.engine.Apply(b, false); err != nil {
		return err
	}
	n.synced = true
	return nil
}

func (d *diskEngine) Close() error { return d.node.engine.Close() }

// beginEvent prepares to hold what a node's event sends, if the node pays
// for fsyncs. It reports whether endEvent must be called.
func (s *Sim) beginEvent(n *simNode) bool {
	if n.opts.Fsync == (Latency{}) {
		return false
	}
	n.inEvent = true
	n.synced = false
	n.outbox = n.outbox[:0]
	return true
}

// endEvent sends what the event sent, or, if it made synced writes, holds
// it for the fsync that will cover them.
func (s *Sim) endEvent(n *simNode, incarnation int) {
	n.inEvent = false
	out := n.outbox
	n.outbox = n.outbox[:0]
	switch {
	case !n.up || n.incarnation != incarnation:
		// The node crashed inside its own event.
		for _, o := range out {
			s.recordDrop("crashed", n.id, o.to, o.m)
		}
	case n.synced:
		s.groupCommit(n, out)
	case len(n.fsyncs) > 0:
		// Persist, then send: the event may have read writes that the
		// node's last fsync has yet to make durable, so what it sent
		// waits for that fsync.
		g := n.fsyncs[len(n.fsyncs)-1]
		g.held = append(g.held, out...)
	default:
		for _, o := range out {
			s.transmit(n, o.to, o.m)
		}
	}
	clear(out)
}

// groupCommit adds an event that has just ended to the node's open fsync,
// or opens one that starts when the disk is free.
func (s *Sim) groupCommit(n *simNode, out []outMsg) {
	var g *fsyncGroup
	if k := len(n.fsyncs); k > 0 {
		g = n.fsyncs[k-1]
	}
	if g == nil || g.start < s.now {
		start := s.now
		if g != nil {
			start = max(start, g.end)
		}
		g = &fsyncGroup{start: start, end: start + n.opts.Fsync.sample(n.costs)}
		n.fsyncs = append(n.fsyncs, g)
		s.push(&event{at: g.end, kind: evFsync, to: n.id, group: g, incarnation: n.incarnation})
	}
	g.events++
	g.held = append(g.held, out...)
}

// fsyncDone ends a node's fsync: its writes become durable and the
// messages it held go out, in the order they were sent.
func (s *Sim) fsyncDone(ev *event) {
	n := s.nodes[ev.to]
	if !n.up || n.incarnation != ev.incarnation {
		return // the crash dropped the held messages
	}
	g := ev.group
	n.fsyncs = slices.DeleteFunc(n.fsyncs, func(x *fsyncGroup) bool { return x == g })
	s.stats.Fsyncs++
	s.stats.FsyncedEvents += g.events
	s.record(fmt.Sprintf("fsync %s events=%d held=%d", n.id, g.events, len(g.held)))
	// An error means the handler closed its engine; the writes stay as
	// they are, and the replies go out as the handler asked.
	_ = n.engine.Apply(nil, true)
	for _, o := range g.held {
		s.transmit(n, o.to, o.m)
	}
}

// crashDisk drops the messages held by a crashing node's fsyncs. The Mem's
// crash loses their writes.
func (s *Sim) crashDisk(n *simNode) {
	for _, g := range n.fsyncs {
		for _, o := range g.held {
			s.recordDrop("crashed", n.id, o.to, o.m)
		}
	}
	clear(n.fsyncs)
	n.fsyncs = n.fsyncs[:0]
	n.inEvent = false
}
