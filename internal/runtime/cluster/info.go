package cluster

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/cosla/cosla/internal/runtime/certs"
	"github.com/cosla/cosla/internal/runtime/clientfile"
	"github.com/cosla/cosla/internal/runtime/private"
)

// InfoFile is the name, in the cluster directory, of the file that
// describes a running cluster to the commands that use it.
const InfoFile = "cluster.json"

// ErrNotRunning is returned when a directory holds no running cluster.
var ErrNotRunning = errors.New("cosla: no cluster running")

// Info describes a running local cluster.
type Info struct {
	// Dir is the cluster directory; Control the address of the
	// supervisor's control API; PID the supervisor's process.
	Dir     string `json:"dir"`
	Control string `json:"control"`
	PID     int    `json:"pid"`
	// Topology is the topology's name.
	Topology string `json:"topology"`
	// Sites are the sites that run storage nodes.
	Sites []SiteInfo `json:"sites"`
	// Clients maps every site to the addresses a client there dials to
	// reach each storage node: through the emulated link from its site.
	Clients map[string]map[string]string `json:"clients"`
	// Table is the table the cluster creates at start, and DefaultSite the
	// first site of the topology: the CLI's defaults.
	Table       string `json:"table"`
	DefaultSite string `json:"default_site"`
	// Insecure: the cluster runs without TLS. Otherwise its authority and
	// certificates are in certs.ClusterDir(Dir).
	Insecure bool `json:"insecure,omitempty"`
	// Causal: Table is a causal table (the topology has rings).
	Causal bool `json:"causal,omitempty"`
}

// SiteInfo is one cosla serve process.
type SiteInfo struct {
	Name  string   `json:"name"`
	Nodes []string `json:"nodes"`
	// Voter says that the process hosts a member of the configuration
	// service (topology.ConfigSites).
	Voter bool `json:"voter,omitempty"`
	// Addr is the process's own transport address, HTTP its /status and
	// /metrics address.
	Addr string `json:"addr"`
	HTTP string `json:"http"`
	// PID is the running process's, 0 while the supervisor waits to
	// restart one that died.
	PID int `json:"pid"`
	// Restarts counts the times the supervisor restarted the site's
	// process after it died on its own; LastExit says how and when the
	// last one ended.
	Restarts int    `json:"restarts,omitempty"`
	LastExit string `json:"last_exit,omitempty"`
}

// DataDir returns the data directory of a site's process, whose
// RollbackDir holds the versions its replicas rolled back at a failover
// (server.ReadRollbacks).
func (in *Info) DataDir(site string) string { return dataDir(in.Dir, site) }

func dataDir(dir, site string) string { return filepath.Join(dir, site, "data") }

// ClientSites returns the sites a client may run at, sorted.
func (in *Info) ClientSites() []string { return slices.Sorted(maps.Keys(in.Clients)) }

// NodesFor returns the node addresses for a client at site, or an error
// naming the known sites.
func (in *Info) NodesFor(site string) (map[string]string, error) {
	nodes, ok := in.Clients[site]
	if !ok {
		return nil, fmt.Errorf("cosla: unknown site %q (this cluster has %v)", site, in.ClientSites())
	}
	return nodes, nil
}

// ClientTLS returns what a client of the cluster secures its connections
// with: the cluster's client certificate, or nil if the cluster runs
// without TLS.
func (in *Info) ClientTLS() (*tls.Config, error) {
	if in.Insecure {
		return nil, nil
	}
	return certs.Load(certs.ClientFiles(certs.ClusterDir(in.Dir)))
}

// Access is how a client reaches a cluster: a local one (`cluster up`)
// or one on several hosts (`cluster plan`'s client config file).
type Access struct {
	// Nodes returns the node addresses a client at site dials.
	Nodes func(site string) (map[string]string, error)
	// TLS is the client's certificate, nil for a cluster without TLS.
	TLS *tls.Config
	// DefaultSite and Table are the CLI's defaults: where a client runs
	// and the table it uses unless told otherwise ("" if the config file
	// names none).
	DefaultSite, Table string
}

// Reach returns how to reach the cluster that the client config file
// config describes (package clientfile), or, when config is "", the
// local cluster running in dir. Every site's clients dial a planned
// cluster's nodes at the same addresses.
func Reach(dir, config string) (Access, error) {
	if config != "" {
		f, err := clientfile.Load(config)
		if err != nil {
			return Access{}, err
		}
		a := Access{DefaultSite: f.Site, Table: f.Table,
			Nodes: func(string) (map[string]string, error) { return maps.Clone(f.Nodes), nil }}
		if !f.Insecure {
			if a.TLS, err = certs.Load(f.TLS); err != nil {
				return Access{}, fmt.Errorf("%s: %w", config, err)
			}
		}
		return a, nil
	}
	in, err := ReadInfo(dir)
	if err != nil {
		return Access{}, err
	}
	return in.Access()
}

// Access returns how a client reaches the cluster.
func (in *Info) Access() (Access, error) {
	tlsConfig, err := in.ClientTLS()
	if err != nil {
		return Access{}, err
	}
	return Access{Nodes: in.NodesFor, TLS: tlsConfig, DefaultSite: in.DefaultSite, Table: in.Table}, nil
}

// ReadInfo reads the description of the cluster running in dir.
func ReadInfo(dir string) (*Info, error) {
	data, err := os.ReadFile(filepath.Join(dir, InfoFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w in %s (start one with: cosla cluster up --dir %s)", ErrNotRunning, dir, dir)
	}
	if err != nil {
		return nil, err
	}
	var in Info
	if err := json.Unmarshal(data, &in); err != nil {
		return nil, fmt.Errorf("cosla: %s: %w", filepath.Join(dir, InfoFile), err)
	}
	return &in, nil
}

// Running reports whether a cluster's supervisor is running in dir, and
// its process.
func Running(dir string) (pid int, running bool) {
	in, err := ReadInfo(dir)
	if err != nil || in.PID <= 0 {
		return 0, false
	}
	return in.PID, alive(in.PID)
}

// writeInfo writes the description atomically, so a reader never sees half
// of it.
func writeInfo(in *Info) error {
	data, err := json.MarshalIndent(in, "", "  ")
	if err != nil {
		return err
	}
	return private.WriteFileAtomic(filepath.Join(in.Dir, InfoFile), data)
}

// DefaultDir is where a cluster lives unless told otherwise: under the
// user's cache directory.
func DefaultDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "cosla", "cluster")
	}
	return filepath.Join(os.TempDir(), "cosla-cluster")
}
