package cosla

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cosla/cosla/internal/core/clientcore"
	"github.com/cosla/cosla/internal/core/wire"
)

// Reconfiguration is where a tablet's replicas are once the
// configuration service committed a change to it: its epoch (the
// number of its primaries so far; it grows with each move of the
// primary), its primary and its secondaries ("site/node").
type Reconfiguration struct {
	Table       string
	Tablet      int
	Epoch       uint64
	Primary     string
	Secondaries []string
}

// MovePrimary moves the primary of tablet (its index in the table's
// layout, from 0) of table to the tablet's replica at site, by planned
// switchover: the old primary stops taking Puts, the new one catches up
// with it, and the tablet's epoch moves, so that no acknowledged Put is
// lost at any write level (DESIGN.md section 10). It returns once the
// move has committed, with the tablet's new place. The cluster must run
// a configuration service, whose members ("site/cfg") Config.Nodes
// lists; ErrInvalid otherwise, or if the tablet has no replica at site.
// ErrTimeout: no leader of the service answered within ctx.
func (c *Client) MovePrimary(ctx context.Context, table string, tablet int, site string) (Reconfiguration, error) {
	l, err := c.tabletLayout(ctx, table, tablet)
	if err != nil {
		return Reconfiguration{}, err
	}
	replicas := l.Tablets[tablet].Replicas()
	i := slices.IndexFunc(replicas, func(id wire.NodeID) bool { return strings.HasPrefix(string(id), site+"/") })
	if i < 0 {
		return Reconfiguration{}, fmt.Errorf("%w: table %s tablet %d has no replica at site %q (its replicas: %v)", ErrInvalid, table, tablet, site, replicas)
	}
	return c.reconfigure(ctx, wire.Reconfigure{Table: table, Tablet: int32(tablet), Primary: replicas[i]})
}

// AddReplica adds node ("site/name", a storage node of the cluster) to
// the secondaries of tablet of table; the new replica catches up from
// the primary. It returns once the change has committed. Errors as
// MovePrimary's.
func (c *Client) AddReplica(ctx context.Context, table string, tablet int, node string) (Reconfiguration, error) {
	if err := checkNode(node); err != nil {
		return Reconfiguration{}, err
	}
	return c.reconfigure(ctx, wire.Reconfigure{Table: table, Tablet: int32(tablet), Add: wire.NodeID(node)})
}

// RemoveReplica removes node from the secondaries of tablet of table;
// it drops its copy of the tablet. The primary cannot be removed (move
// it first). Errors as MovePrimary's.
func (c *Client) RemoveReplica(ctx context.Context, table string, tablet int, node string) (Reconfiguration, error) {
	if err := checkNode(node); err != nil {
		return Reconfiguration{}, err
	}
	return c.reconfigure(ctx, wire.Reconfigure{Table: table, Tablet: int32(tablet), Remove: wire.NodeID(node)})
}

// checkNode checks a node ID given to AddReplica or RemoveReplica.
func checkNode(node string) error {
	if site, name, ok := strings.Cut(node, "/"); !ok || site == "" || name == "" {
		return fmt.Errorf("%w: node %q: want site/name, e.g. india/r1", ErrInvalid, node)
	}
	return CheckName("node", node)
}

// tabletLayout returns the layout of table, checking that it has the
// tablet.
func (c *Client) tabletLayout(ctx context.Context, table string, tablet int) (wire.Layout, error) {
	t, err := c.OpenTable(ctx, table)
	if err != nil {
		return wire.Layout{}, err
	}
	l := t.t.Layout()
	if l.Causal != nil {
		return l, fmt.Errorf("%w: %s is a causal table: it has no primaries to move", ErrInvalid, table)
	}
	if tablet < 0 || tablet >= len(l.Tablets) {
		return l, fmt.Errorf("%w: table %s has tablets 0 to %d, not %d", ErrInvalid, table, len(l.Tablets)-1, tablet)
	}
	return l, nil
}

// reconfigure sends m to the configuration service and waits for its
// answer, within ctx.
func (c *Client) reconfigure(ctx context.Context, m wire.Reconfigure) (Reconfiguration, error) {
	if err := CheckName("table", m.Table); err != nil {
		return Reconfiguration{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if m.Tablet < 0 {
		return Reconfiguration{}, fmt.Errorf("%w: tablet %d: want an index from 0", ErrInvalid, m.Tablet)
	}
	var timeout time.Duration
	if deadline, ok := ctx.Deadline(); ok {
		timeout = time.Until(deadline)
	}
	type result struct {
		reply wire.ReconfigureReply
		err   error
	}
	r, err := call(ctx, c, func(core *clientcore.Client, ch chan<- result) {
		core.Reconfigure(m, timeout, func(reply wire.ReconfigureReply, err error) { ch <- result{reply, err} })
	})
	if err = errors.Join(err, r.err); err != nil {
		return Reconfiguration{}, err
	}
	out := Reconfiguration{Table: m.Table, Tablet: int(m.Tablet), Epoch: r.reply.Epoch}
	if int(m.Tablet) < len(r.reply.Layout.Tablets) {
		tb := r.reply.Layout.Tablets[m.Tablet]
		out.Primary = string(tb.Primary)
		for _, id := range tb.Secondaries {
			out.Secondaries = append(out.Secondaries, string(id))
		}
	}
	return out, nil
}
