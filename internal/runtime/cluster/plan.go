package cluster

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/runtime/certs"
	"github.com/cosla/cosla/internal/runtime/clientfile"
	"github.com/cosla/cosla/internal/runtime/private"
	"github.com/cosla/cosla/internal/runtime/server"
	"github.com/cosla/cosla/internal/runtime/topology"
)

// DefaultPort is the transport port a planned site listens on when its host's
// address names none. Its HTTP listener (/, /status, /metrics) is on the
// transport port plus HTTPPortOffset.
const (
	DefaultPort    = 7100
	HTTPPortOffset = 80
)

// PlanOptions configures Plan: a cluster whose sites run on their own
// hosts, one `cosla serve` process per site.
type PlanOptions struct {
	// Dir receives the plan. Required. A CA already in Dir/tls is kept,
	// so planning again (another host, another address) keeps the
	// certificates that clients and hosts hold.
	Dir string
	// Topology is the sites; its links' round trips are the real
	// network's, so they are not used. Required.
	Topology topology.Topology
	// Hosts maps every site with storage nodes to the address of its
	// host, "10.0.0.1" or "10.0.0.1:7200" (default port DefaultPort).
	// Required.
	Hosts map[string]string
	// Table, Placement, PullInterval, Push and WriteLevel are the table
	// `cosla cluster init` creates, as in Options.
	Table        string
	Placement    topology.Placement
	PullInterval time.Duration
	Push         bool
	WriteLevel   wire.Level
	// DataDir is each site's data directory on its host; a relative path
	// is relative to the host's directory. Default "data".
	DataDir string
	// HTTPPublic makes each site's HTTP listener (status page, /status,
	// /metrics, /healthz: read-only, plain HTTP) listen on its host's
	// address, for Prometheus and the status page's view of the other
	// sites. Default: loopback only.
	HTTPPublic bool
	// Insecure plans a cluster without TLS.
	Insecure bool
	// Clients names clients to issue certificates to besides the
	// default one, each with a client config file of its own in the
	// client directory.
	Clients []string
}

// PlannedHost is one host of a plan.
type PlannedHost struct {
	Site  string
	Nodes []string
	// Voter says that the site hosts a member of the configuration
	// service (topology.ConfigSites).
	Voter bool
	// Addr is where the site's nodes listen and are dialed; HTTP its
	// HTTP listener.
	Addr, HTTP string
	// Dir is the directory to copy to the host; Start runs the site.
	Dir, Start string
}

// PlanResult is what Plan wrote.
type PlanResult struct {
	Hosts []PlannedHost
	// ClientDir is the directory to copy to the machines that run
	// clients; ClientConfig the config file in it, of the default
	// client certificate, and NamedConfigs those of PlanOptions.Clients,
	// by name.
	ClientDir, ClientConfig string
	NamedConfigs            map[string]string
	// TLSDir holds the authority's key: it stays with the operator.
	TLSDir string
}

// Plan writes a cluster whose sites run on their own hosts into
// opts.Dir: hosts/SITE for each site (its serve.yaml, certificate and
// start.sh), client (client.yaml with every node's address, the client
// certificate, and the table to create, and client-NAME.yaml with NAME's
// certificate for each of opts.Clients), and tls (the authority). Every
// file is its owner's only (package private): copy them as that user.
//
// Errors in the options wrap ErrBadPlan. Plan refuses a directory a
// running local cluster uses: its authority would be replaced.
func Plan(opts PlanOptions) (PlanResult, error) {
	var res PlanResult
	topo := opts.Topology
	if err := topo.Validate(); err != nil {
		return res, err
	}
	opts.Table = cmp.Or(opts.Table, "usertable")
	opts.DataDir = cmp.Or(opts.DataDir, "data")
	if opts.PullInterval == 0 {
		opts.PullInterval = time.Minute
	}
	if opts.Dir == "" {
		return res, fmt.Errorf("%w: a directory is required", ErrBadPlan)
	}
	if pid, running := Running(opts.Dir); running {
		return res, fmt.Errorf("%w: a cluster is running in %s (pid %d): plan into another directory", ErrBadPlan, opts.Dir, pid)
	}
	if err := CheckClients(opts.Clients, opts.Insecure); err != nil {
		return res, fmt.Errorf("%w: %w", ErrBadPlan, err)
	}
	for site := range opts.Hosts {
		i := slices.IndexFunc(topo.Sites, func(s topology.Site) bool { return s.Name == site })
		switch {
		case i < 0:
			return res, fmt.Errorf("%w: --host %s: no such site in topology %s", ErrBadPlan, site, topo.Name)
		case len(topo.Sites[i].Replicas) == 0:
			return res, fmt.Errorf("%w: --host %s: the site has no storage nodes; its clients need only the client directory", ErrBadPlan, site)
		}
	}
	listens := map[string]string{}
	for _, s := range topo.Sites {
		if len(s.Replicas) == 0 {
			continue
		}
		addr, ok := opts.Hosts[s.Name]
		if !ok {
			return res, fmt.Errorf("%w: site %s has storage nodes but no host: add --host %s=ADDRESS", ErrBadPlan, s.Name, s.Name)
		}
		h, err := plannedHost(opts, s, addr)
		if err != nil {
			return res, err
		}
		// Two sites may share a host on different ports; the HTTP port
		// counts on the host even when it listens on loopback.
		host, _, _ := net.SplitHostPort(h.Addr)
		_, httpPort, _ := net.SplitHostPort(h.HTTP)
		for _, a := range []string{h.Addr, net.JoinHostPort(host, httpPort)} {
			if other, ok := listens[a]; ok {
				return res, fmt.Errorf("%w: sites %s and %s would both listen on %s: give one of them another port (--host %s=HOST:PORT)", ErrBadPlan, other, s.Name, a, s.Name)
			}
			listens[a] = s.Name
		}
		res.Hosts = append(res.Hosts, h)
	}
	spec, err := tableLayout(topo, Options{Table: opts.Table, Placement: opts.Placement, PullInterval: opts.PullInterval, Push: opts.Push, WriteLevel: opts.WriteLevel})
	if err != nil {
		return res, err
	}
	if err := private.MkdirAll(opts.Dir); err != nil {
		return res, err
	}
	res.TLSDir = filepath.Join(opts.Dir, "tls")
	if !opts.Insecure {
		var sites []string
		for _, h := range res.Hosts {
			sites = append(sites, h.Site)
		}
		if err := issueCerts(res.TLSDir, sites, opts.Clients); err != nil {
			return res, fmt.Errorf("certificates: %w", err)
		}
	}
	nodes := map[string]string{}
	for _, h := range res.Hosts {
		for _, n := range served(h.Nodes, h.Voter) {
			nodes[h.Site+"/"+n] = h.Addr
		}
	}
	for _, h := range res.Hosts {
		if err := writeHost(opts, h, res); err != nil {
			return res, err
		}
	}
	f := clientfile.File{Site: topo.Sites[0].Name, Table: opts.Table, Nodes: nodes, Insecure: opts.Insecure, Create: fileTable(spec)}
	return res, writeClientDir(&res, opts.Dir, f, opts.Clients)
}

// writeClientDir writes the plan's client directory in dir: the config
// file of the default client and of each of clients, with their
// certificates.
func writeClientDir(res *PlanResult, dir string, f clientfile.File, clients []string) error {
	res.ClientDir = filepath.Join(dir, "client")
	if err := private.MkdirAll(res.ClientDir); err != nil {
		return err
	}
	var err error
	if res.ClientConfig, err = writeClientConfig(*res, f, certs.DefaultClient); err != nil {
		return err
	}
	res.NamedConfigs = map[string]string{}
	for _, name := range clients {
		if res.NamedConfigs[name], err = writeClientConfig(*res, f, name); err != nil {
			return err
		}
	}
	return nil
}

// writeClientConfig writes into the client directory the config file of
// client name, with a copy of its certificate, and returns its path:
// client.yaml for the default client, client-NAME.yaml for the others.
func writeClientConfig(res PlanResult, f clientfile.File, name string) (string, error) {
	files := certs.NamedClientFiles(res.TLSDir, name)
	path := filepath.Join(res.ClientDir, strings.TrimSuffix(filepath.Base(files.Cert), ".pem")+".yaml")
	if !f.Insecure {
		var err error
		if f.TLS, err = copyTLS(files, res.ClientDir); err != nil {
			return "", err
		}
	}
	return path, clientfile.Write(path, f)
}

// ErrBadPlan is wrapped by the errors of a plan's options.
var ErrBadPlan = errors.New("cosla: invalid cluster plan")

// validHost reports whether host is an IP address or a DNS name
// (RFC 1123: dot-separated labels of letters, digits and inner hyphens).
func validHost(host string) bool {
	if net.ParseIP(host) != nil {
		return true
	}
	if host == "" || len(host) > 253 {
		return false
	}
	for label := range strings.SplitSeq(strings.TrimSuffix(host, "."), ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r == '-' || '0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z') {
				return false
			}
		}
	}
	return true
}

// plannedHost places site s at addr.
func plannedHost(opts PlanOptions, s topology.Site, addr string) (PlannedHost, error) {
	host, port := addr, DefaultPort
	if h, p, err := net.SplitHostPort(addr); err == nil {
		if port, err = strconv.Atoi(p); err != nil || port <= 0 || port+HTTPPortOffset > 65535 {
			return PlannedHost{}, fmt.Errorf("%w: --host %s=%s: want a port from 1 to %d", ErrBadPlan, s.Name, addr, 65535-HTTPPortOffset)
		}
		host = h
	}
	if !validHost(host) {
		return PlannedHost{}, fmt.Errorf("%w: --host %s=%s: want the host's address (an IP or a name the other hosts resolve)", ErrBadPlan, s.Name, addr)
	}
	httpHost := "127.0.0.1"
	if opts.HTTPPublic {
		httpHost = host
	}
	dir := filepath.Join(opts.Dir, "hosts", s.Name)
	return PlannedHost{Site: s.Name, Nodes: s.Replicas, Voter: slices.Contains(opts.Topology.ConfigSites(), s.Name), Dir: dir, Start: filepath.Join(dir, "start.sh"),
		Addr: net.JoinHostPort(host, strconv.Itoa(port)), HTTP: net.JoinHostPort(httpHost, strconv.Itoa(port+HTTPPortOffset))}, nil
}

// writeHost writes one host's directory: serve.yaml naming every other
// site's nodes at their hosts, the site's certificate, and start.sh.
func writeHost(opts PlanOptions, h PlannedHost, res PlanResult) error {
	if err := private.MkdirAll(h.Dir); err != nil {
		return err
	}
	cfg := server.Options{Site: h.Site, Nodes: h.Nodes, Listen: h.Addr, HTTPListen: h.HTTP, DataDir: opts.DataDir,
		Peers: map[wire.NodeID]string{}, Insecure: opts.Insecure, Config: server.ConfigOptions{Voters: opts.Topology.ConfigSites()}}
	for _, other := range res.Hosts {
		if other.Site == h.Site {
			continue
		}
		for _, n := range served(other.Nodes, other.Voter) {
			cfg.Peers[wire.NodeID(other.Site+"/"+n)] = other.Addr
		}
		// The status page shows the sites whose HTTP it can reach: on
		// loopback, only its own.
		if opts.HTTPPublic {
			if cfg.StatusPeers == nil {
				cfg.StatusPeers = map[string]string{}
			}
			cfg.StatusPeers[other.Site] = other.HTTP
		}
	}
	if !opts.Insecure {
		files, err := copyTLS(certs.NodeFiles(res.TLSDir, h.Site), h.Dir)
		if err != nil {
			return err
		}
		cfg.TLS = server.TLSFiles(files)
	}
	data, err := yaml.Marshal(cfg)
	if err != nil {
		return err
	}
	header := fmt.Sprintf("# cosla site %s, planned by cosla cluster plan: run start.sh on the host.\n# Paths are relative to this file's directory.\n", h.Site)
	if err := private.WriteFile(filepath.Join(h.Dir, "serve.yaml"), append([]byte(header), data...)); err != nil {
		return err
	}
	script := fmt.Sprintf("#!/bin/sh\n# Runs cosla site %s on this host until interrupted. cosla must be on PATH,\n# or COSLA must name it.\ncd \"$(dirname \"$0\")\" && exec \"${COSLA:-cosla}\" serve --config serve.yaml \"$@\"\n", h.Site)
	return private.WriteScript(h.Start, []byte(script))
}

// copyTLS copies a holder's files into dir and returns their names there,
// relative to dir.
func copyTLS(f certs.Files, dir string) (certs.Files, error) {
	var out certs.Files
	for _, c := range []struct{ src, dst *string }{{&f.Cert, &out.Cert}, {&f.Key, &out.Key}, {&f.CA, &out.CA}} {
		data, err := os.ReadFile(*c.src)
		if err != nil {
			return out, err
		}
		name := filepath.Base(*c.src)
		if err := private.WriteFile(filepath.Join(dir, name), data); err != nil {
			return out, err
		}
		*c.dst = name
	}
	return out, nil
}

// fileTable is l in a client file's words.
func fileTable(l wire.Layout) *clientfile.Table {
	t := &clientfile.Table{Name: l.Name, Partition: l.Partition.String(), PullInterval: l.Replication.Interval, Push: l.Replication.Mode == wire.ModePush}
	if l.WriteLevel != 0 {
		t.WriteLevel = l.WriteLevel.String()
	}
	for _, lt := range l.Tablets {
		ft := clientfile.Tablet{Start: lt.Start, Primary: string(lt.Primary)}
		for _, id := range lt.Secondaries {
			ft.Secondaries = append(ft.Secondaries, string(id))
		}
		t.Tablets = append(t.Tablets, ft)
	}
	return t
}
