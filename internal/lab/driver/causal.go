package driver

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/cosla/cosla/internal/core/causal"
	"github.com/cosla/cosla/internal/core/node"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/runtime/harness"
	"github.com/cosla/cosla/internal/runtime/sim"
)

// ErrCausal is wrapped by the error of a causal op that the table's
// coordinator answered with a failure (its wire.Code follows), or that
// timed out at the client (wire.Unavailable).
var ErrCausal = errors.New("driver: causal operation failed")

// CausalSimTarget runs each group as a causal client node (package
// causal) of a simulated world holding one causal table
// (harness.NewCausal; Karma, DESIGN.md section 5): the first, second ...
// group of this target at a site is the site's node c1, c2, ... (Prefix
// replaces "c"). A node the world already has (a client of the topology)
// is used as it is; otherwise it is added with Client's options (the
// world's layout filled in) and Node's costs. Each session the driver
// begins is a causal session of that node (a Karma thread), numbered
// from 1 on the node in the order begun.
//
// Ops: Get, Put and GetTx (a get-transaction of Key and Keys). A Put is
// answered once the site's coordinator has it in its durable write
// buffer (Karma 4.1.2: puts are local); a read fills Op's Source, Ring,
// InFlight and Restricted.
type CausalSimTarget struct {
	World *harness.CausalWorld
	// Client configures the client nodes the target adds.
	Client causal.ClientOptions
	// Node is the simulator's model of the client nodes it adds.
	Node sim.NodeOptions
	// Prefix names the nodes: Prefix1, Prefix2, ... Default "c".
	Prefix string

	perSite map[string]int
}

// Open implements Target.
func (t *CausalSimTarget) Open(g *Group) (Client, error) {
	if t.World == nil {
		return nil, fmt.Errorf("%w: CausalSimTarget has no world", ErrInvalid)
	}
	if t.perSite == nil {
		t.perSite = map[string]int{}
	}
	prefix := t.Prefix
	if prefix == "" {
		prefix = "c"
	}
	t.perSite[g.Site]++
	id := wire.NodeID(g.Site + "/" + prefix + strconv.Itoa(t.perSite[g.Site]))
	s := t.World.Sim
	if _, ok := s.Handler(id); !ok {
		opts := t.Client
		opts.Layout = t.World.Layout
		if err := s.AddNode(id, g.Site, t.Node, func() node.Handler { return causal.NewClient(opts) }); err != nil {
			return nil, err
		}
	}
	core, err := t.World.Client(id)
	if err != nil {
		return nil, err
	}
	return &causalClient{sim: s, id: id, core: core, layout: t.World.Layout}, nil
}

type causalClient struct {
	sim    *sim.Sim
	id     wire.NodeID
	core   *causal.Client
	layout *causal.Layout
	// sessions counts the sessions begun on the node through this client.
	sessions uint64
}

func (c *causalClient) Begin(string) (Session, error) {
	c.sessions++
	return &causalSession{c: c, s: c.core.Session(c.sessions)}, nil
}

func (c *causalClient) Close() {}

// ID is the client node's identity.
func (c *causalClient) ID() wire.NodeID { return c.id }

type causalSession struct {
	c *causalClient
	s *causal.Session
}

// codeErr is the error of a causal op's outcome; refused says the op
// would fail the same way again (a usage error).
func codeErr(kind Kind, code wire.Code) (err error, refused bool) {
	if code == wire.OK {
		return nil, false
	}
	err = fmt.Errorf("%w: %s: %s", ErrCausal, kind, code)
	switch code {
	case wire.NoTable, wire.TooLarge, wire.Invalid:
		return err, true
	}
	return err, false
}

// Do implements Session.
func (s *causalSession) Do(op *Op, done func()) {
	c := s.c
	now := c.sim.Now
	inDo := true
	finish := func() {
		if inDo {
			c.sim.After(0, done)
			return
		}
		done()
	}
	op.Start = now()
	op.Ring = wire.NoRing
	switch op.Kind {
	case Put:
		op.Restricted = c.core.Restricted(s.s)
		c.core.Put(s.s, op.Key, op.Value, func(r causal.Result) {
			op.End = now()
			op.Err, op.Refused = codeErr(op.Kind, r.Code)
			op.RTT = op.End - op.Start
			op.TS, op.Node = r.Version.TS, string(r.Version.Origin)
			finish()
		})
	case Get:
		c.core.Get(s.s, op.Key, func(r causal.Result) {
			op.End = now()
			op.Err, op.Refused = codeErr(op.Kind, r.Code)
			op.RTT = op.End - op.Start
			op.Restricted = r.Restricted
			if r.Code == wire.Unavailable && r.Node != "" {
				// A read that timed out names the node it waited for.
				op.Node, op.Ring = string(r.Node), r.Ring
				op.Err = fmt.Errorf("%w: %s did not answer in time", op.Err, r.Node)
			}
			if op.Err == nil {
				op.Consistency = "causal"
				op.Found, op.TS, op.Node = r.Found, r.Version.TS, string(r.Node)
				op.Source, op.Ring, op.InFlight = r.Source, r.Ring, r.InFlight
				if r.Found {
					op.ValueID = ValueID(r.Value)
				}
			}
			finish()
		})
	case GetTx:
		keys := append([]string{op.Key}, op.Keys...)
		c.core.GetTx(s.s, keys, func(r causal.Result) {
			op.End = now()
			op.Err, op.Refused = codeErr(op.Kind, r.Code)
			op.RTT = op.End - op.Start
			op.Restricted, op.Rounds = r.Restricted, int(r.Rounds)
			if op.Err == nil && len(r.Items) > 0 {
				it := r.Items[0]
				op.Consistency = "causal"
				op.Found, op.TS, op.Ring = it.Found, it.Version.TS, r.Ring
				op.Source, op.InFlight = it.Source, it.InFlight
				if it.Source == wire.FromRing && r.Ring >= 0 && int(r.Ring) < len(c.layout.Rings) {
					op.Node = string(c.layout.Node(int(r.Ring), op.Key))
				} else {
					op.Node = string(c.layout.Coordinators[causal.Site(c.id)])
				}
				if it.Found {
					op.ValueID = ValueID(it.Value)
				}
			}
			finish()
		})
	default:
		op.End, op.Err, op.Refused = now(), fmt.Errorf("%w: %s on a causal table", ErrUnsupported, op.Kind), true
		finish()
	}
	inDo = false
}

// End implements Session: a causal session keeps its state at its
// client, which has nothing to release.
func (s *causalSession) End() {}
