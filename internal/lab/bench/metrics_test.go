package bench

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cosla/cosla"
	"github.com/cosla/cosla/internal/lab/driver"
	"github.com/cosla/cosla/internal/runtime/server"
)

// TestServeMetrics serves the metrics of a run's cosla client: 503 while
// no client is open, the client's gauges while one is, and an error for
// a target that is no cosla client.
func TestServeMetrics(t *testing.T) {
	if _, err := MetricsHandler(&driver.StoreTarget{}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("MetricsHandler(StoreTarget) = %v, want ErrInvalid", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	srv, err := server.Start(server.Options{Site: "england", Listen: addr, DataDir: t.TempDir(), Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	nodes := map[string]string{"england/r1": addr}
	c, err := cosla.Open(ctx, cosla.Config{Site: "england", Nodes: nodes, Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	err = c.CreateTable(ctx, cosla.TableSpec{Name: "t", Tablets: []cosla.TabletSpec{{Primary: "england/r1"}}})
	c.Close()
	if err != nil {
		t.Fatal(err)
	}

	target := &driver.HostTarget{Loop: driver.NewLoop(time.Now()), Table: "t",
		Nodes: func(string) (map[string]string, error) { return nodes, nil }}
	listening, stop, err := ServeMetrics(":0", target)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if !strings.HasPrefix(listening, "127.0.0.1:") {
		t.Errorf("ServeMetrics(:0) listens on %s, want loopback", listening)
	}
	scrape := func() (int, string) {
		t.Helper()
		resp, err := http.Get("http://" + listening + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, _ := scrape(); code != http.StatusServiceUnavailable {
		t.Fatalf("with no client open: status %d, want 503", code)
	}
	// DNS rebinding: a page's own name in the Host header is refused.
	req, err := http.NewRequest(http.MethodGet, "http://"+listening+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "rebound.example:9464"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("with a foreign Host: %s, want 403 Forbidden", resp.Status)
	}
	client, err := target.Open(&driver.Group{Name: "run", Site: "england"})
	if err != nil {
		t.Fatal(err)
	}
	code, body := scrape()
	for _, want := range []string{
		`cosla_client_rtt_seconds{node="england/r1"}`,
		`cosla_client_replica_staleness_seconds{node="england/r1",table="t",tablet="0",primary="true"} 0.000000`,
		`cosla_client_probes_total 1`,
	} {
		if code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("status %d, metrics lack %s:\n%s", code, want, body)
		}
	}
	client.Close()
	if code, _ := scrape(); code != http.StatusServiceUnavailable {
		t.Fatalf("after the client closed: status %d, want 503", code)
	}
}
