package cosla_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cosla/cosla"
)

// TestReconfigureChecks checks what MovePrimary, AddReplica and
// RemoveReplica refuse before they reach a configuration service: a
// site without a replica, a tablet out of range, a node that is not
// site/name, and a cluster whose client knows no configuration member.
func TestReconfigureChecks(t *testing.T) {
	n, _ := testServers(t, "england")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := cosla.Open(ctx, n.config("england"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	spec := cosla.TableSpec{Name: "t", Tablets: []cosla.TabletSpec{{Primary: "england/r1"}}}
	if err := c.CreateTable(ctx, spec); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		run  func() (cosla.Reconfiguration, error)
	}{
		{"no replica at the site", func() (cosla.Reconfiguration, error) { return c.MovePrimary(ctx, "t", 0, "india") }},
		{"tablet out of range", func() (cosla.Reconfiguration, error) { return c.MovePrimary(ctx, "t", 1, "england") }},
		{"no configuration member", func() (cosla.Reconfiguration, error) { return c.MovePrimary(ctx, "t", 0, "england") }},
		{"node not site/name", func() (cosla.Reconfiguration, error) { return c.AddReplica(ctx, "t", 0, "r2") }},
		{"negative tablet", func() (cosla.Reconfiguration, error) { return c.RemoveReplica(ctx, "t", -1, "england/r2") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.run(); !errors.Is(err, cosla.ErrInvalid) {
				t.Fatalf("err %v, want ErrInvalid", err)
			}
		})
	}
}
