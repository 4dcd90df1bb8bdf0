package cosla_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/cosla/cosla"
	"github.com/cosla/cosla/coslatest"
	"github.com/cosla/cosla/sla"
)

// openExampleTable starts a one-site store in this process (package
// coslatest, standing in for `cosla cluster up`), opens a client there
// and creates and opens a one-tablet table.
func openExampleTable(ctx context.Context, name string) (*cosla.Client, *cosla.Table, func()) {
	srv, err := coslatest.NewServer()
	if err != nil {
		log.Fatal(err)
	}
	// The test server runs without TLS; a cluster that `cosla cluster up`
	// started takes Config.TLS from cosla.ClusterTLS(dir).
	c, err := cosla.Open(ctx, srv.Config())
	if err != nil {
		log.Fatal(err)
	}
	err = c.CreateTable(ctx, cosla.TableSpec{Name: name, Tablets: []cosla.TabletSpec{{Primary: coslatest.Node}}})
	if err != nil {
		log.Fatal(err)
	}
	table, err := c.OpenTable(ctx, name)
	if err != nil {
		log.Fatal(err)
	}
	return c, table, func() { c.Close(); srv.Close() }
}

// A Get under the shopping-cart SLA of Pileus Fig. 4: read-my-writes
// within 300 ms is worth 1, any value within 300 ms is worth 0.5.
func Example() {
	ctx := context.Background()
	c, table, stop := openExampleTable(ctx, "carts")
	defer stop()

	cart, _ := sla.Preset("shopping-cart")
	s, err := c.BeginSession(table, cart)
	if err != nil {
		log.Fatal(err)
	}
	defer c.EndSession(s)

	if _, err := c.Put(ctx, s, "alice", []byte("book")); err != nil {
		log.Fatal(err)
	}
	value, res, err := c.Get(ctx, s, "alice")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: met subSLA %d (%s), utility %g\n", value, res.Met+1, res.SubSLA, res.Utility())
	// Output: book: met subSLA 1 (read-my-writes 300ms 1), utility 1
}

// A Get whose SLA cannot be met returns no data and ErrSLAUnmet.
func ExampleClient_Get_unmet() {
	ctx := context.Background()
	c, table, stop := openExampleTable(ctx, "t")
	defer stop()

	impossible, _ := sla.Parse("strong 1ns 1")
	s, err := c.BeginSession(table, impossible)
	if err != nil {
		log.Fatal(err)
	}
	value, res, err := c.Get(ctx, s, "k")
	fmt.Println(value == nil, res.Met, errors.Is(err, cosla.ErrSLAUnmet))
	// Output: true -1 true
}

// A client of a cluster whose sites run on their own hosts reads its
// configuration from the file `cosla cluster plan` wrote: the client's
// site, every node's address and the client certificate. (No Output: it
// needs such a cluster.)
func ExampleLoadConfig() {
	ctx := context.Background()
	cfg, err := cosla.LoadConfig("plan/client/client.yaml")
	if err != nil {
		log.Fatal(err)
	}
	cfg.Site = "china" // where this client runs, if not the file's site
	c, err := cosla.Open(ctx, cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	table, err := c.OpenTable(ctx, "usertable")
	if err != nil {
		log.Fatal(err)
	}
	cart, _ := sla.Preset("shopping-cart")
	s, err := c.BeginSession(table, cart)
	if err != nil {
		log.Fatal(err)
	}
	value, result, err := c.Get(ctx, s, "cart")
	fmt.Println(string(value), result.SubSLA, err)
}
