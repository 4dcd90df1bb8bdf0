package main

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"gopkg.in/yaml.v3"

	"github.com/cosla/cosla/internal/runtime/server"
)

// serveDoc is the help of cosla serve.
const serveDoc = `Hosts one site's storage nodes until interrupted. The config names the site, the nodes,
the listen addresses, the data directory and the addresses of the other sites' nodes:

  site: england
  nodes: [r1]
  listen: 127.0.0.1:7100
  http_listen: 127.0.0.1:7180
  data_dir: /var/lib/cosla/england
  tls: {cert: node-england.pem, key: node-england-key.pem, ca: ca.pem}
  peers:
    us/r1: 127.0.0.1:7200

Every connection is mutual TLS unless --insecure: other sites present node certificates,
clients client certificates, which may send client requests only, and only as the client
the certificate names: SITE/NAME or SITE/NAME-SUFFIX (cosla cluster up writes them; cosla
cluster cert client NAME issues one more; see internal/runtime/certs). Files it creates are its
owner's only (umask 077); its HTTP listener answers only requests whose Host header names
it (http_listen's host, a loopback address or localhost).

On SIGTERM or interrupt it stops within about twice stop_timeout (default 10s): a
storage call that has not returned by then, or that was in progress when its disk failed,
is left behind. It exits 1 if a node's storage failed or was left open, 0 otherwise.`

func runServe(args []string, stdout, stderr io.Writer) error {
	fs := newCommand("serve", "cosla serve --config FILE", serveDoc, stderr)
	config := fs.String("config", "", "YAML file of server options (required); see internal/runtime/server.Options")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn or error")
	tlsCert := fs.String("tls-cert", "", "the site's node certificate (PEM); overrides the config's tls.cert")
	tlsKey := fs.String("tls-key", "", "the node certificate's key (PEM); overrides tls.key")
	tlsCA := fs.String("tls-ca", "", "the cluster's certificate authority (PEM); overrides tls.ca")
	insecure := fs.Bool("insecure", false, "run without TLS (warns at start): any process that reaches the port may send anything")
	if err := parseArgs(fs, args, anyOperands); err != nil {
		return err
	}
	if *config == "" || fs.NArg() > 0 {
		return usagef("want --config FILE and no arguments")
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return usagef("--log-level: %v", err)
	}
	opts, err := loadServeConfig(*config, func(o *server.Options) {
		for _, f := range []struct{ flag, dst *string }{{tlsCert, &o.TLS.Cert}, {tlsKey, &o.TLS.Key}, {tlsCA, &o.TLS.CA}} {
			if *f.flag != "" {
				*f.dst = *f.flag
			}
		}
		if *insecure {
			o.Insecure, o.TLS = true, server.TLSFiles{}
		}
	})
	if err != nil {
		return err
	}
	opts.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	server.PrivateUmask()
	srv, err := server.Start(opts)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "cosla serve: site %s listening on %s\n", opts.Site, srv.Addr())
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	<-stop
	srv.Close()
	if err := srv.Err(); err != nil {
		return fmt.Errorf("stopped with failed storage: %w", err)
	}
	return nil
}

// loadServeConfig reads server options from a YAML file, rejecting
// unknown fields so that a typo is not silently ignored, makes its
// relative paths relative to the file's directory, and applies the flags'
// overrides (relative to the working directory, as flags are) before
// validating them.
func loadServeConfig(path string, override func(*server.Options)) (server.Options, error) {
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
	// Paths relative to the file's directory: a host's directory from
	// `cosla cluster plan` works wherever it is copied.
	for _, p := range []*string{&opts.DataDir, &opts.TLS.Cert, &opts.TLS.Key, &opts.TLS.CA} {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(filepath.Dir(path), *p)
		}
	}
	override(&opts)
	opts = opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return opts, fmt.Errorf("%s: %w", path, err)
	}
	return opts, nil
}
