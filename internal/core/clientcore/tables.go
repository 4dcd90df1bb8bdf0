package clientcore

import (
	"fmt"
	"slices"

	"github.com/cosla/cosla/internal/core/wire"
)

// Table management (Pileus Fig. 2). A table's layout is stored on every
// node that holds one of its tablets; there is no separate catalog service.
// CreateTable and DeleteTable contact every such node and succeed when all
// have answered; OpenTable asks every node the client knows and takes the
// first layout it gets.

// CreateTable creates a table with the given layout on every node it names.
// A zero layout ID is replaced by a random one. Creating an identical table
// again succeeds.
func (c *Client) CreateTable(l wire.Layout, done func(error)) {
	if l.ID == 0 {
		l.ID = c.env.Rand().Uint64() | 1
	}
	if err := l.Validate(); err != nil {
		done(fmt.Errorf("%w: %w", ErrInvalid, err))
		return
	}
	c.fanout(layoutNodes(&l), func(req uint64) wire.Msg {
		return &wire.CreateTableRequest{Req: req, Layout: l}
	}, done)
}

// DeleteTable deletes a table from every node that holds it.
func (c *Client) DeleteTable(name string, done func(error)) {
	c.lookupLayout(name, func(l wire.Layout, err error) {
		if err != nil {
			done(err)
			return
		}
		c.fanout(layoutNodes(&l), func(req uint64) wire.Msg {
			return &wire.DeleteTableRequest{Req: req, Name: name}
		}, func(err error) {
			if err == nil {
				delete(c.tables, name)
			}
			done(err)
		})
	})
}

// OpenTable fetches a table's layout and starts monitoring its replicas.
func (c *Client) OpenTable(name string, done func(*Table, error)) {
	c.lookupLayout(name, func(l wire.Layout, err error) {
		if err != nil {
			done(nil, err)
			return
		}
		t := &Table{layout: l}
		if l.Causal != nil {
			ct, err := c.causal.open(c.env, c.opts, l)
			if err != nil {
				done(nil, err)
				return
			}
			t.causal = ct
			c.tables[name] = t
			done(t, nil)
			return
		}
		for i := range l.Tablets {
			t.tablets = append(t.tablets, c.newTabletView(&l, i, nil))
		}
		c.tables[name] = t
		// Measure every replica at once rather than wait for the first
		// probe round, so the first Gets are well informed (see
		// Options.Measure).
		for i := range t.tablets {
			for _, r := range t.tablets[i].replicas {
				r.warming = c.opts.Measure == MeasureNeeded && r.rtt.Len() == 0
				c.probe(&t.tablets[i], r, r.warming)
			}
		}
		if c.opts.Measure == MeasureAll {
			c.awaitMeasured(t, func() { done(t, nil) })
			return
		}
		done(t, nil)
	})
}

// newTabletView returns the client's view of tablet i of layout l. The
// replicas that old, the tablet's previous view, also has keep their
// state (high timestamps, probes), and the view keeps its epoch.
func (c *Client) newTabletView(l *wire.Layout, i int, old *tabletView) tabletView {
	spec := l.Tablets[i]
	tv := tabletView{ref: wire.TabletRef{Table: l.ID, Tablet: int32(i)}}
	if old != nil {
		tv.epoch = old.epoch
	}
	for _, id := range spec.Replicas() {
		r := &replicaState{id: id, rtt: c.mon.node(id)}
		if old != nil {
			if j := slices.IndexFunc(old.replicas, func(o *replicaState) bool { return o.id == id }); j >= 0 {
				r = old.replicas[j]
			}
		}
		r.primary = id == spec.Primary
		tv.replicas = append(tv.replicas, r)
	}
	n := len(tv.replicas)
	tv.writeCount = l.WriteLevel.Count(n)
	if tv.writeCount > 1 {
		tv.quorumRead = n - tv.writeCount + 1
	}
	return tv
}

// awaitMeasured calls done once no replica of t has a probe out
// (MeasureAll).
func (c *Client) awaitMeasured(t *Table, done func()) {
	for i := range t.tablets {
		for _, r := range t.tablets[i].replicas {
			if r.probing {
				c.mon.await(func() { c.awaitMeasured(t, done) })
				return
			}
		}
	}
	done()
}

// lookupLayout asks every known node for the layout and answers with the
// first one found; ErrNoTable if every node answers that it has none.
func (c *Client) lookupLayout(name string, done func(wire.Layout, error)) {
	if err := wire.CheckIdentifier("table name", name); err != nil {
		done(wire.Layout{}, fmt.Errorf("%w: %w", ErrInvalid, err))
		return
	}
	outstanding := len(c.opts.Nodes)
	finished := false
	var timedOut []wire.NodeID
	finish := func() {
		if outstanding > 0 || finished {
			return
		}
		finished = true
		if len(timedOut) > 0 {
			done(wire.Layout{}, fmt.Errorf("%w: looking up table %q: no answer from %v", ErrTimeout, name, timedOut))
			return
		}
		done(wire.Layout{}, fmt.Errorf("%w: %q", ErrNoTable, name))
	}
	for _, id := range c.opts.Nodes {
		req := c.newReq()
		c.send(id, &wire.TableInfoRequest{Req: req, Name: name}, req, c.opts.RequestTimeout, &pending{
			onReply: func(_ wire.NodeID, m wire.Msg) {
				outstanding--
				if r := m.(*wire.TableInfoReply); r.Code == wire.OK && !finished {
					finished = true
					done(r.Layout, nil)
				}
				finish()
			},
			onTimeout: func() {
				outstanding--
				timedOut = append(timedOut, id)
				finish()
			},
		})
	}
}

// fanout sends one request to each node and calls done once: with the
// first error, or with nil when every node has answered OK.
func (c *Client) fanout(nodes []wire.NodeID, build func(req uint64) wire.Msg, done func(error)) {
	outstanding := len(nodes)
	finished := false
	fail := func(err error) {
		if !finished {
			finished = true
			done(err)
		}
	}
	for _, id := range nodes {
		req := c.newReq()
		c.send(id, build(req), req, c.opts.RequestTimeout, &pending{
			onReply: func(from wire.NodeID, m wire.Msg) {
				var code wire.Code
				switch r := m.(type) {
				case *wire.CreateTableReply:
					code = r.Code
				case *wire.DeleteTableReply:
					code = r.Code
				}
				if err := codeError(code); err != nil {
					fail(fmt.Errorf("node %s: %w", from, err))
					return
				}
				outstanding--
				if outstanding == 0 && !finished {
					finished = true
					done(nil)
				}
			},
			onTimeout: func() { fail(fmt.Errorf("%w: no answer from node %s", ErrTimeout, id)) },
		})
	}
}

// layoutNodes returns every node holding a tablet of the layout, sorted.
func layoutNodes(l *wire.Layout) []wire.NodeID {
	var ids []wire.NodeID
	add := func(id wire.NodeID) {
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	for _, t := range l.Tablets {
		for _, id := range t.Replicas() {
			add(id)
		}
	}
	if c := l.Causal; c != nil {
		// A causal table lives on its rings' storage nodes and its sites'
		// coordinators and caches.
		for _, r := range c.Rings {
			for _, id := range r.Nodes {
				add(id)
			}
		}
		for _, id := range slices.Concat(c.Coordinators, c.Caches) {
			add(id)
		}
	}
	slices.Sort(ids)
	return ids
}
