package bench

import (
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/cosla/cosla/internal/lab/driver"
	"github.com/cosla/cosla/internal/runtime/hostcheck"
	"github.com/cosla/cosla/internal/runtime/hostclient"
)

// MetricsHandler serves, at GET /metrics, the Prometheus metrics of the
// cosla client that runs the phase in progress on target, as the public
// client writes them (hostclient.WritePrometheus, which cosla.Metrics.WritePrometheus calls): Puts and Gets by
// subSLA, the SLA shares over the last minute, and the monitor's
// round-trip and staleness estimates per replica. Each phase has a
// client of its own, so the counters start again at the run phase
// (Prometheus's rate() takes it as a reset); between phases it answers
// 503. It reports an error wrapping ErrInvalid for a target that is not
// a cosla client (a driver.HostTarget).
func MetricsHandler(target driver.Target) (http.Handler, error) {
	host, ok := target.(*driver.HostTarget)
	if !ok {
		return nil, fmt.Errorf("%w: client metrics are a cosla client's; the target is a %T", ErrInvalid, target)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
		clients := host.Metrics()
		if len(clients) == 0 {
			http.Error(w, "no cosla client is open: the run is between phases", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		// A bench phase has one group, so one client: the last opened.
		hostclient.WritePrometheus(w, clients[len(clients)-1])
	})
	return mux, nil
}

// ServeMetrics serves MetricsHandler(target) on addr until stop is
// called, and returns the address it listens on. An address without a
// host (":9464") listens on loopback only: the endpoint is plain HTTP. It
// answers only requests whose Host names it (package hostcheck).
func ServeMetrics(addr string, target driver.Target) (listening string, stop func(), err error) {
	h, err := MetricsHandler(target)
	if err != nil {
		return "", nil, err
	}
	if host, port, err := net.SplitHostPort(addr); err == nil && host == "" {
		addr = net.JoinHostPort("127.0.0.1", port)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("bench: metrics: %w", err)
	}
	srv := &http.Server{Handler: hostcheck.Handler(addr, h), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Serve returns when stop closes the server; should the listener
		// fail before, the run goes on without its metrics.
		_ = srv.Serve(l)
	}()
	return l.Addr().String(), func() { srv.Close(); <-done }, nil
}
