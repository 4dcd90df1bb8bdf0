package run

import (
	"context"
	"fmt"

	"github.com/cosla/cosla"
	"github.com/cosla/cosla/internal/cluster"
	"github.com/cosla/cosla/sla"
)

// CoslaStore measures a running local cosla cluster through the public
// client, from one site, in one session (so that read-my-writes and
// monotonic reads hold across the roles of a process, as they would for
// one application). Read options are SimReadOption's: "eventual" (Random),
// "consistent" (Primary), a guarantee, or "pileus-<preset>". There are no
// write options: every Put goes to the primary.
type CoslaStore struct {
	client  *cosla.Client
	session *cosla.Session
	site    string
}

// OpenCosla connects to the cluster described in dir (cluster.ReadInfo)
// as a client at site (default: the cluster's first site) and opens table
// (default: the cluster's table).
func OpenCosla(ctx context.Context, dir, site, table string) (*CoslaStore, error) {
	info, err := cluster.ReadInfo(dir)
	if err != nil {
		return nil, err
	}
	if site == "" {
		site = info.DefaultSite
	}
	if table == "" {
		table = info.Table
	}
	nodes, err := info.NodesFor(site)
	if err != nil {
		return nil, err
	}
	c, err := cosla.Open(ctx, cosla.Config{Site: site, Nodes: nodes})
	if err != nil {
		return nil, err
	}
	t, err := c.OpenTable(ctx, table)
	if err != nil {
		c.Close()
		return nil, err
	}
	s, err := c.BeginSession(t, sla.SLA{{Consistency: sla.EventualConsistency, Latency: sla.Unbounded, Utility: 1}})
	if err != nil {
		c.Close()
		return nil, err
	}
	return &CoslaStore{client: c, session: s, site: site}, nil
}

// Name implements Store.
func (s *CoslaStore) Name() string { return "cosla@" + s.site }

// Write implements Store.
func (s *CoslaStore) Write(ctx context.Context, key, value, option string) (Outcome, error) {
	if option != "" {
		return Outcome{}, fmt.Errorf("measure: cosla: unknown write option %q (every Put goes to the primary)", option)
	}
	_, err := s.client.Put(ctx, s.session, key, []byte(value))
	return Outcome{Consistency: "strong"}, err
}

// Read implements Store.
func (s *CoslaStore) Read(ctx context.Context, key, option string) (string, bool, Outcome, error) {
	if option == "" {
		option = "eventual"
	}
	agreement, strategy, err := SimReadOption(option)
	if err != nil {
		return "", false, Outcome{}, err
	}
	value, r, err := s.client.Get(ctx, s.session, key, cosla.WithSLA(agreement), cosla.WithGetStrategy(strategy))
	out := Outcome{Replica: r.Node}
	if err == nil && r.Met >= 0 {
		out.Consistency = r.Consistency.String()
	}
	return string(value), err == nil && r.Found, out, err
}

// Close closes the client.
func (s *CoslaStore) Close() error { return s.client.Close() }
