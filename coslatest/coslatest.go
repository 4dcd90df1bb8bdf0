// Package coslatest runs a cosla store in this process, for the tests and
// examples of programs that use package cosla, as net/http/httptest does
// for HTTP servers: one site, "england", with one storage node,
// "england/r1", listening on a loopback port without TLS, its data in a
// temporary directory that Close removes.
//
//	srv, err := coslatest.NewServer()
//	...
//	defer srv.Close()
//	c, err := cosla.Open(ctx, srv.Config())
//
// A real cluster is started with `cosla cluster up` (or `cosla serve` on
// each host) and reached with cosla.ClusterTLS or cosla.LoadConfig.
package coslatest

import (
	"fmt"
	"os"

	"github.com/cosla/cosla"
	"github.com/cosla/cosla/internal/runtime/server"
)

// Site and Node name the server's site and its storage node.
const (
	Site = "england"
	Node = Site + "/r1"
)

// Server is a running one-site store.
type Server struct {
	srv *server.Server
	dir string
}

// NewServer starts a store on a free loopback port.
func NewServer() (*Server, error) {
	dir, err := os.MkdirTemp("", "coslatest")
	if err != nil {
		return nil, fmt.Errorf("coslatest: %w", err)
	}
	srv, err := server.Start(server.Options{Site: Site, Listen: "127.0.0.1:0", DataDir: dir, Insecure: true})
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("coslatest: %w", err)
	}
	return &Server{srv: srv, dir: dir}, nil
}

// Config is the configuration of a client at the server's site.
func (s *Server) Config() cosla.Config {
	return cosla.Config{Site: Site, Nodes: map[string]string{Node: s.srv.Addr()}, Insecure: true}
}

// Close stops the server and removes its data.
func (s *Server) Close() error {
	s.srv.Close()
	return os.RemoveAll(s.dir)
}
