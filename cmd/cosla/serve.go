package main

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"gopkg.in/yaml.v3"

	"github.com/cosla/cosla/internal/server"
)

func runServe(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("serve", stderr)
	config := fs.String("config", "", "YAML file of server options (required); see internal/server.Options")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn or error")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: cosla serve --config FILE")
		fmt.Fprintln(stderr, "\nHosts one site's storage nodes until interrupted. The config names the site, the nodes,")
		fmt.Fprintln(stderr, "the listen addresses, the data directory and the addresses of the other sites' nodes:")
		fmt.Fprintln(stderr, "\n  site: england\n  nodes: [r1]\n  listen: 127.0.0.1:7100\n  http_listen: 127.0.0.1:7180\n  data_dir: /var/lib/cosla/england\n  peers:\n    us/r1: 127.0.0.1:7200")
		fmt.Fprintln(stderr, "\nFlags:")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *config == "" || fs.NArg() > 0 {
		return usagef("want --config FILE and no arguments")
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return usagef("--log-level: %v", err)
	}
	opts, err := loadServeConfig(*config)
	if err != nil {
		return err
	}
	opts.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	srv, err := server.Start(opts)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "cosla serve: site %s listening on %s\n", opts.Site, srv.Addr())
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	<-stop
	srv.Close()
	return nil
}

// loadServeConfig reads server options from a YAML file, rejecting
// unknown fields so that a typo is not silently ignored.
func loadServeConfig(path string) (server.Options, error) {
	var opts server.Options
	data, err := os.ReadFile(path)
	if err != nil {
		return opts, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&opts); err != nil {
		return opts, fmt.Errorf("%s: %w", path, err)
	}
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return opts, fmt.Errorf("%s: %w", path, err)
	}
	return opts, nil
}
