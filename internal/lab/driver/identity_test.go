package driver

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cosla/cosla"
	"github.com/cosla/cosla/internal/runtime/certs"
	"github.com/cosla/cosla/internal/runtime/server"
)

// TestHostTargetTLSIdentity: over TLS a group's client takes the ID its
// client certificate allows, SITE/NAME-driver-<random>, so that the node
// answers it: the table opens.
func TestHostTargetTLSIdentity(t *testing.T) {
	dir := t.TempDir()
	if err := certs.Ensure(dir, []string{"a"}); err != nil {
		t.Fatal(err)
	}
	srv, err := server.Start(server.Options{Site: "a", Listen: "127.0.0.1:0", DataDir: t.TempDir(),
		TLS: server.TLSFiles(certs.NodeFiles(dir, "a"))})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	f, _, err := certs.IssueClient(dir, "loadgen")
	if err != nil {
		t.Fatal(err)
	}
	clientTLS, err := certs.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	addrs := map[string]string{"a/r1": srv.Addr()}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin, err := cosla.Open(ctx, cosla.Config{Site: "a", Nodes: addrs, TLS: clientTLS})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if err := admin.CreateTable(ctx, cosla.TableSpec{Name: "t", Tablets: []cosla.TabletSpec{{Primary: "a/r1"}}}); err != nil {
		t.Fatal(err)
	}
	target := &HostTarget{Loop: NewLoop(time.Now()), Table: "t", TLS: clientTLS, OpenTimeout: 10 * time.Second,
		Nodes: func(string) (map[string]string, error) { return addrs, nil }}
	c, err := target.Open(&Group{Name: "g", Site: "a"})
	if err != nil {
		t.Fatalf("open a group's client over TLS: %v", err)
	}
	defer c.Close()
	if id := string(c.(*hostClient).h.ID()); !strings.HasPrefix(id, "a/loadgen-driver-") {
		t.Errorf("the group's client is %s, want a/loadgen-driver-<random>", id)
	}
	if refused := srv.Status().Transport.Refused; refused != 0 {
		t.Errorf("the node refused %d streams", refused)
	}
}
