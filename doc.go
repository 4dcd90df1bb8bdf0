// Package cosla is the Go client of cosla, a geo-replicated key-value store
// with consistency-based SLAs (Terry et al., "Consistency-Based Service
// Level Agreements for Cloud Storage", SOSP'13).
//
// Every Get carries an SLA: an ordered list of subSLAs, each a consistency
// guarantee, a latency and a utility. The client picks the replica with the
// highest expected utility, and the Result says which subSLA the Get
// actually met, the consistency delivered, the round trip and the replica.
// Puts go to the key's primary and are durable there when acknowledged.
//
// A client runs at a site (Config.Site) and reaches the storage nodes at
// the addresses Config.Nodes gives; on a local cluster made by
// `cosla cluster up`, those addresses pass through the emulated wide-area
// links of the client's site. Connections are mutual TLS with a client
// certificate of the cluster's authority (ClusterTLS reads a local
// cluster's). Sessions scope the session guarantees:
//
//	tlsConfig, err := cosla.ClusterTLS(dir)
//	c, err := cosla.Open(ctx, cosla.Config{Site: "us", Nodes: nodes, TLS: tlsConfig})
//	t, err := c.OpenTable(ctx, "usertable")
//	agreement, _ := sla.Parse("read-my-writes 300ms 1; eventual 300ms 0.5")
//	s, err := c.BeginSession(t, agreement)
//	ts, err := c.Put(ctx, s, "cart", []byte("book"))
//	v, res, err := c.Get(ctx, s, "cart")
//	if errors.Is(err, cosla.ErrSLAUnmet) { ... }
//
// Errors are the package's Err values, tested with errors.Is.
package cosla
