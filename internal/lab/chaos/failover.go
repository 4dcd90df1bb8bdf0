package chaos

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/cosla/cosla/internal/core/config"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/lab/driver"
	"github.com/cosla/cosla/internal/runtime/cluster"
)

// failoverMethods are the ways a failover fault strikes the primary's
// site, taken by turns: its process killed (down, restarted at the
// heal), its site cut off the WAN (alive: a primary that does not know
// it was deposed), its process stopped (SIGSTOP, then SIGCONT).
var failoverMethods = []Fault{Kill, Partition, Pause}

const (
	// failoverWait bounds how long a failover fault goes on past
	// FailoverHold for another node to hold the primary's lease, and how
	// long the cluster then has to settle: a primary never elected, or a
	// cluster that does not settle, stops the campaign.
	failoverWait = 2 * time.Minute
	// statusPoll is how often the cluster's status is asked for while
	// waiting; statusTimeout bounds one status call (a stopped process
	// does not answer).
	statusPoll    = 250 * time.Millisecond
	statusTimeout = 2 * time.Second
)

// defaultFailoverHold is Options.FailoverHold's default, from the
// configuration service's defaults (config.NodeOptions, which the
// campaign's cluster runs with): a new raft election when the struck
// site hosted the leader (ElectionTicks, then StaggerTicks for each of
// the two voters before the last of pileus4's three, and the draw of a
// third of one), then a whole lease with its margin (a new leader may
// count a lease from its own election), then Collect for the struck
// replica's answer, and a second for the WAN's round trips (pileus4's
// reach 435ms). With the defaults: 2.4s + 4s + 250ms + 1s + 1s = 8.65s.
func defaultFailoverHold() time.Duration {
	o := config.NodeOptions{}.EnsureDefaults()
	m := o.Member
	election := time.Duration(m.ElectionTicks+2*m.StaggerTicks+m.StaggerTicks/3) * m.Tick
	return election + o.Lease.Length + o.Lease.Margin + o.Collect + time.Second
}

// primaries reads a cluster's status: for each tablet of table, the node
// that holds the primary's lease (the newest epoch's, should two), and
// whether the cluster is settled: every site answers, each of the
// table's tablets has exactly one node that takes itself for its primary,
// and that node holds the lease (a returning old primary has rolled back
// and become a secondary), and no secondary is catching up after a
// rollback. A replica catching up takes no part in an election (it lacks
// versions a write level may have counted it for): striking the primary
// before it has caught up would be a second failure at once, which
// leaves the tablet without a primary until one of the two returns.
func primaries(st cluster.Status, table string, tablets int) (map[int32]wire.NodeID, bool) {
	leased := map[int32]wire.NodeID{}
	epochs := map[int32]uint64{}
	claims := map[int32]int{}
	settled := true
	for _, s := range st.Sites {
		if !s.Up || s.Serve == nil {
			settled = false
			continue
		}
		for _, n := range s.Serve.Nodes {
			for _, t := range n.Metrics.Tablets {
				if t.Table == table && t.CatchingUp {
					settled = false
				}
				if t.Table != table || !t.Primary {
					continue
				}
				claims[t.Ref.Tablet]++
				if t.Leased && (leased[t.Ref.Tablet] == "" || t.Epoch > epochs[t.Ref.Tablet]) {
					leased[t.Ref.Tablet], epochs[t.Ref.Tablet] = n.ID, t.Epoch
				}
			}
		}
	}
	for i := range int32(tablets) {
		if claims[i] != 1 || leased[i] == "" {
			settled = false
		}
	}
	return leased, settled
}

// describePrimaries says, for a fault error, who takes itself for a
// tablet's primary in a status, with its epoch and lease.
func describePrimaries(st cluster.Status, table string) string {
	var out []string
	for _, s := range st.Sites {
		if !s.Up || s.Serve == nil {
			out = append(out, fmt.Sprintf("%s down (%s)", s.Name, s.Error))
			continue
		}
		for _, n := range s.Serve.Nodes {
			for _, t := range n.Metrics.Tablets {
				if t.Table == table && t.Primary {
					out = append(out, fmt.Sprintf("%s primary of tablet %d at epoch %d, leased %t", n.ID, t.Ref.Tablet, t.Epoch, t.Leased))
				}
			}
		}
	}
	return strings.Join(out, "; ")
}

// await polls the cluster's status until ready says so, for at most
// wait (awaitStatus).
func (in *injector) await(ctx context.Context, wait time.Duration, ready func(map[int32]wire.NodeID, bool) bool) (cluster.Status, bool) {
	return awaitStatus(ctx, in.c, in.tablets, wait, ready)
}

// awaitStatus polls the cluster's status until ready says so of the
// table's primaries (see primaries), for at most wait, and returns the
// last status and whether ready did.
func awaitStatus(ctx context.Context, c *cluster.Cluster, tablets int, wait time.Duration, ready func(map[int32]wire.NodeID, bool) bool) (cluster.Status, bool) {
	end := time.Now().Add(wait)
	for {
		sctx, cancel := context.WithTimeout(ctx, statusTimeout)
		st := c.Status(sctx)
		cancel()
		if ready(primaries(st, table, tablets)) {
			return st, true
		}
		if time.Now().After(end) || driver.Sleep(ctx, statusPoll) != nil {
			return st, false
		}
	}
}

// settle waits for the cluster to settle (see primaries) and returns
// tablet 0's primary.
func (in *injector) settle(ctx context.Context) (wire.NodeID, error) {
	var primary wire.NodeID
	st, ok := in.await(ctx, failoverWait, func(p map[int32]wire.NodeID, settled bool) bool {
		primary = p[0]
		return settled
	})
	if !ok {
		return "", fmt.Errorf("chaos: the cluster did not settle within %s (every site up, one leased primary per tablet): %s",
			failoverWait, describePrimaries(st, table))
	}
	return primary, nil
}

// failover makes one failover fault (see Failover) and heals it, filling
// e in: the site of tablet 0's primary is struck by the next of
// failoverMethods, at least FailoverHold and until another node holds
// tablet 0's lease; then healed, and the cluster given time to settle.
func (in *injector) failover(ctx context.Context, e *Event) error {
	from, err := in.settle(ctx)
	if err != nil {
		return err
	}
	in.mu.Lock()
	method := failoverMethods[in.counts[Failover]%len(failoverMethods)]
	in.mu.Unlock()
	e.Site, e.Role, e.Method, e.From = siteOf(from), "primary", method.String(), string(from)
	e.StartS = in.now().Seconds()
	in.setCurrent(e.String())
	heal, err := in.strike(method, e.Site)
	if err != nil {
		return err
	}
	start := time.Now()
	_ = driver.Sleep(ctx, in.o.FailoverHold)
	st, moved := in.await(ctx, failoverWait, func(p map[int32]wire.NodeID, _ bool) bool {
		e.To = string(p[0])
		return p[0] != "" && p[0] != from
	})
	healErr := heal()
	// The campaign's end may cut a fault short; the cluster must settle
	// all the same, for the checks that follow.
	cut := ctx.Err() != nil
	ctx = context.WithoutCancel(ctx)
	switch {
	case !moved && !cut:
		e.To = ""
		return fmt.Errorf("chaos: no node other than %s held tablet 0's lease %s after the fault began: %s",
			from, time.Since(start).Round(time.Second), describePrimaries(st, table))
	case healErr != nil:
		return healErr
	case moved:
		in.moved(siteOf(wire.NodeID(e.To)))
	default:
		e.To = ""
	}
	_, err = in.settle(ctx)
	return err
}

// strike makes a fault of kind at site and returns its heal.
func (in *injector) strike(kind Fault, site string) (heal func() error, err error) {
	switch kind {
	case Kill:
		return func() error {
			ctx, cancel := context.WithTimeout(context.Background(), restartTimeout)
			defer cancel()
			return in.c.Restart(ctx, site)
		}, in.c.Crash(site)
	case Partition:
		return func() error { return in.cut(site, false) }, in.cut(site, true)
	case Pause:
		return func() error { return in.signal(site, syscall.SIGCONT) }, in.signal(site, syscall.SIGSTOP)
	}
	return nil, fmt.Errorf("chaos: a failover cannot strike by %s", kind)
}

// moved records a failover that moved the primary to site: later faults
// take it for the primary's.
func (in *injector) moved(site string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	sites := append([]string{in.primary}, in.secondaries...)
	in.primary = site
	in.secondaries = slices.DeleteFunc(sites, func(s string) bool { return s == site })
	in.failovers++
}

// failoverCounts counts the failover faults by method, for the report.
func failoverCounts(events []Event) map[string]int {
	out := map[string]int{}
	for _, e := range events {
		if e.Kind == Failover {
			out[e.Method]++
		}
	}
	return out
}

// methodsLine lists failoverCounts as "kill 2, partition 2".
func methodsLine(counts map[string]int) string {
	var parts []string
	for _, m := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%s %d", m, counts[m]))
	}
	return strings.Join(parts, ", ")
}
