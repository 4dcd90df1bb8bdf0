// Package clustertest lets a test binary stand in for `cosla serve`, the
// command a local cluster (package cluster) runs once per site, so that
// the tests that start clusters need no built cosla binary.
package clustertest

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/cosla/cosla/internal/runtime/server"
)

// Main runs the package's tests; started as `serve --config FILE` (by a
// cluster the tests started), it runs that site instead. Call it from
// TestMain.
func Main(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "serve" {
		if len(os.Args) != 4 || os.Args[2] != "--config" {
			fmt.Fprintln(os.Stderr, "want: serve --config FILE")
			os.Exit(2)
		}
		if err := serve(os.Args[3]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// serve runs one site's nodes from a serve config until SIGTERM, as
// cmd/cosla's serve does.
func serve(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var opts server.Options
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&opts); err != nil {
		return err
	}
	opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	opts = opts.EnsureDefaults()
	server.PrivateUmask()
	srv, err := server.Start(opts)
	if err != nil {
		return err
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	<-stop
	srv.Close()
	return nil
}
