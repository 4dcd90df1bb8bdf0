package cosla

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/cosla/cosla/internal/core/causal"
	"github.com/cosla/cosla/internal/core/clientcore"
	"github.com/cosla/cosla/internal/core/wire"
)

// CausalTableSpec describes a causal table (Karma; DESIGN.md section 5):
// writes are taken at every site and acknowledged at once from the
// site's durable write buffer, and reads are causally consistent. Each
// ring holds one replica of every key, spread by consistent hashing over
// its storage nodes; a read goes to the nearest ring unless the session
// read a value still on its way to the other rings, which binds it to
// that ring for a while.
type CausalTableSpec struct {
	Name string
	// Rings lists each ring's storage nodes ("site/node"). Required.
	Rings []RingSpec
	// Sites are the sites whose clients use the table: each gets the
	// coordinator "site/cc" of its serve process, and with Caches its
	// cache "site/cache". Required.
	Sites []string
	// Caches gives every site its cache of stable values (Karma). Without
	// it reads always go to a ring (Karma-NC).
	Caches bool
	// Static binds every site's reads to the ring holding its storage
	// nodes instead of the nearest ring: COPS-PR, the baseline of Karma 5
	// (with a ring per site, COPS-Ideal). Every site must then be in a
	// ring.
	Static bool
}

// RingSpec is one ring of a causal table.
type RingSpec struct {
	Name  string
	Nodes []string
}

func (s CausalTableSpec) layout() (wire.Layout, error) {
	var rings []wire.Ring
	for _, r := range s.Rings {
		wr := wire.Ring{Name: r.Name}
		for _, id := range r.Nodes {
			wr.Nodes = append(wr.Nodes, wire.NodeID(id))
		}
		rings = append(rings, wr)
	}
	for _, site := range s.Sites {
		if site == "" || strings.Contains(site, "/") {
			return wire.Layout{}, fmt.Errorf("%w: causal table %q: site %q: want a site name without '/'", ErrInvalid, s.Name, site)
		}
	}
	return causal.TableLayout(s.Name, rings, s.Sites, s.Caches, s.Static), nil
}

// CreateCausalTable creates a causal table on its storage nodes and its
// sites' coordinators and caches. Each creation draws a new table ID, so
// creating a table of an existing name fails with ErrTableExists.
func (c *Client) CreateCausalTable(ctx context.Context, spec CausalTableSpec) error {
	l, err := spec.layout()
	if err != nil {
		return err
	}
	return closedErr(c.h.CreateTable(ctx, l))
}

// Causal reports whether the table is a causal table (CreateCausalTable).
func (t *Table) Causal() bool { return t != nil && t.t != nil && t.t.Layout().Causal != nil }

// Source says where a causal table's read came from (Karma Fig. 3).
type Source uint8

// Sources of a causal read.
const (
	FromRing   = Source(wire.FromRing)
	FromBuffer = Source(wire.FromBuffer)
	FromCache  = Source(wire.FromCache)
)

func (s Source) String() string { return wire.Source(s).String() }

// MarshalText writes the source as String does.
func (s Source) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// CausalRead describes a read of a causal table: the version (its
// timestamp and the coordinator that wrote it), where it came from (the
// session's write buffer, the site's cache, or a ring: Ring and RingName,
// -1 and "" otherwise), whether it was still in flight (not yet in every
// ring, so the session is now bound to that ring) and whether the session
// was bound to a ring when it read (a dynamic ring restriction).
type CausalRead struct {
	Version    Timestamp `json:"version"`
	Origin     string    `json:"origin"`
	Source     Source    `json:"source"`
	Ring       int       `json:"ring"`
	RingName   string    `json:"ring_name,omitempty"`
	InFlight   bool      `json:"in_flight"`
	Restricted bool      `json:"restricted"`
}

func causalRead(r clientcore.CausalRead) CausalRead {
	return CausalRead{Version: Timestamp(r.Version.TS), Origin: string(r.Version.Origin), Source: Source(r.Source), Ring: int(r.Ring),
		RingName: r.RingName, InFlight: r.InFlight, Restricted: r.Restricted}
}

// TxItem is one key of a get-transaction's snapshot.
type TxItem struct {
	Key   string
	Value []byte
	Found bool
	CausalRead
}

// TxResult says how a get-transaction was served: the ring it read
// (every key from one ring), the rounds it took and its round trip.
type TxResult struct {
	Ring       int
	RingName   string
	Rounds     int
	Restricted bool
	RTT        time.Duration
}

// GetTx reads keys of a causal table as one causally consistent snapshot
// (Karma 4.5): no value returned is older than a write in the causal past
// of another value returned. It fails with ErrAborted when the keys kept
// changing for all its rounds; try again.
func (c *Client) GetTx(ctx context.Context, s *Session, keys []string) ([]TxItem, TxResult, error) {
	if err := s.check(c); err != nil {
		return nil, TxResult{}, err
	}
	type result struct {
		r   clientcore.TxResult
		err error
	}
	r, err := call(ctx, c, func(core *clientcore.Client, ch chan<- result) {
		if err := core.GetTx(s.s, keys, func(r clientcore.TxResult, err error) { ch <- result{r, err} }); err != nil {
			ch <- result{err: err}
		}
	})
	if err == nil {
		err = r.err
	}
	res := TxResult{Ring: int(r.r.Ring), RingName: r.r.RingName, Rounds: r.r.Rounds, Restricted: r.r.Restricted, RTT: r.r.RTT}
	if err != nil {
		return nil, res, err
	}
	items := make([]TxItem, len(r.r.Items))
	for i, it := range r.r.Items {
		items[i] = TxItem{Key: it.Key, Value: it.Value, Found: it.Found, CausalRead: causalRead(it.CausalRead)}
	}
	return items, res, nil
}
