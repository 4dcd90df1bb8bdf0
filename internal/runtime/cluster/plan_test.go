package cluster

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/runtime/certs"
	"github.com/cosla/cosla/internal/runtime/clientfile"
	"github.com/cosla/cosla/internal/runtime/server"
	"github.com/cosla/cosla/internal/runtime/topology"
)

// TestPlan plans pileus4 on three hosts, two sites sharing one, and reads
// back what a host and a client get.
func TestPlan(t *testing.T) {
	dir := t.TempDir()
	topo := topology.Pileus4()
	res, err := Plan(PlanOptions{Dir: dir, Topology: topo, Push: true, WriteLevel: wire.Quorum, Clients: []string{"alice"},
		Hosts: map[string]string{"england": "10.0.0.1", "us": "10.0.0.2", "india": "10.0.0.1:7200"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Hosts) != 3 {
		t.Fatalf("planned %d hosts, want 3: %+v", len(res.Hosts), res.Hosts)
	}

	// india's serve config: its own address, every other node at its
	// host's, TLS files copied beside it, data in the host's directory.
	var opts server.Options
	data, err := os.ReadFile(filepath.Join(dir, "hosts", "india", "serve.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &opts); err != nil {
		t.Fatal(err)
	}
	// Each site's storage nodes, its coordinator and cache of causal
	// tables, and its member of the configuration service (all three
	// sites are voters), at its serve process.
	wantPeers := map[wire.NodeID]string{"england/r1": "10.0.0.1:7100", "england/cc": "10.0.0.1:7100", "england/cache": "10.0.0.1:7100",
		"england/cfg": "10.0.0.1:7100", "us/r1": "10.0.0.2:7100", "us/cc": "10.0.0.2:7100", "us/cache": "10.0.0.2:7100", "us/cfg": "10.0.0.2:7100"}
	if opts.Site != "india" || opts.Listen != "10.0.0.1:7200" || opts.HTTPListen != "127.0.0.1:7280" || opts.DataDir != "data" ||
		!reflect.DeepEqual(opts.Peers, wantPeers) || !slices.Equal(opts.Config.Voters, []string{"england", "us", "india"}) {
		t.Errorf("india's serve config: %+v; want listen 10.0.0.1:7200, http 127.0.0.1:7280, data_dir data, peers %v, voters england, us, india", opts, wantPeers)
	}
	if opts.TLS != (server.TLSFiles{Cert: "node-india.pem", Key: "node-india-key.pem", CA: "ca.pem"}) {
		t.Errorf("india's tls: %+v", opts.TLS)
	}
	if fi, err := os.Stat(filepath.Join(dir, "hosts", "india", "node-india-key.pem")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("india's key: %v, mode %v; want 0600", err, fi.Mode())
	}
	if _, err := os.Stat(filepath.Join(dir, "hosts", "india", "ca-key.pem")); err == nil {
		t.Error("the authority's key was copied to a host")
	}
	if script, err := os.ReadFile(res.Hosts[2].Start); err != nil || !strings.Contains(string(script), "serve --config serve.yaml") {
		t.Errorf("start.sh: %v\n%s", err, script)
	}

	// The client: every node's address, its certificate, the table.
	f, err := clientfile.Load(res.ClientConfig)
	if err != nil {
		t.Fatal(err)
	}
	wantNodes := map[string]string{"england/r1": "10.0.0.1:7100", "us/r1": "10.0.0.2:7100", "india/r1": "10.0.0.1:7200"}
	for site, addr := range map[string]string{"england": "10.0.0.1:7100", "us": "10.0.0.2:7100", "india": "10.0.0.1:7200"} {
		wantNodes[site+"/cc"], wantNodes[site+"/cache"], wantNodes[site+"/cfg"] = addr, addr, addr
	}
	if f.Site != "england" || f.Table != "usertable" || !reflect.DeepEqual(f.Nodes, wantNodes) {
		t.Errorf("client config: site %s, table %s, nodes %v; want england, usertable, %v", f.Site, f.Table, f.Nodes, wantNodes)
	}
	if f.TLS.CA != filepath.Join(res.ClientDir, "ca.pem") {
		t.Errorf("client tls ca %s: not resolved against the file's directory", f.TLS.CA)
	}
	if _, err := certs.Load(f.TLS); err != nil {
		t.Errorf("client certificate: %v", err)
	}
	// Alice's config differs in its certificate only, which names her.
	alice, err := clientfile.Load(res.NamedConfigs["alice"])
	if err != nil {
		t.Fatal(err)
	}
	if cfg, err := certs.Load(alice.TLS); err != nil {
		t.Errorf("alice's certificate: %v", err)
	} else if name, err := certs.ClientName(cfg); name != "alice" || err != nil || !reflect.DeepEqual(alice.Nodes, f.Nodes) {
		t.Errorf("alice's config: certificate of %q (%v), nodes %v; want alice's, nodes %v", name, err, alice.Nodes, f.Nodes)
	}
	checkPrivate(t, dir)
	want, err := tableLayout(topo, Options{Table: "usertable", PullInterval: f.Create.PullInterval, Push: true, WriteLevel: wire.Quorum})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(f.Create, fileTable(want)) {
		t.Errorf("table to create: %+v; want %+v", f.Create, fileTable(want))
	}

	if len(opts.StatusPeers) != 0 {
		t.Errorf("status peers %v with HTTP on loopback", opts.StatusPeers)
	}

	// Planning again keeps the authority; with HTTP on the hosts'
	// addresses, each status page names the other sites'.
	ca, _ := os.ReadFile(filepath.Join(dir, "tls", "ca.pem"))
	if _, err := Plan(PlanOptions{Dir: dir, Topology: topo, HTTPPublic: true, Hosts: map[string]string{"england": "10.0.0.1", "us": "10.0.0.2", "india": "10.0.0.4"}}); err != nil {
		t.Fatal(err)
	}
	var us server.Options
	data, err = os.ReadFile(filepath.Join(dir, "hosts", "us", "serve.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &us); err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"england": "10.0.0.1:7180", "india": "10.0.0.4:7180"}; us.HTTPListen != "10.0.0.2:7180" || !reflect.DeepEqual(us.StatusPeers, want) {
		t.Errorf("us with --http-public: http %s, status peers %v; want 10.0.0.2:7180 and %v", us.HTTPListen, us.StatusPeers, want)
	}
	if again, _ := os.ReadFile(filepath.Join(dir, "hosts", "us", "ca.pem")); string(again) != string(ca) {
		t.Error("planning again made a new authority")
	}
}

func TestPlanErrors(t *testing.T) {
	all := map[string]string{"england": "10.0.0.1", "us": "10.0.0.2", "india": "10.0.0.3"}
	with := func(k, v string) map[string]string {
		m := map[string]string{}
		for site, addr := range all {
			m[site] = addr
		}
		if v == "" {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	for _, tc := range []struct {
		name  string
		hosts map[string]string
		want  string
	}{
		{"missing site", with("india", ""), "site india has storage nodes but no host"},
		{"unknown site", with("mars", "10.0.0.9"), "--host mars: no such site"},
		{"client-only site", with("china", "10.0.0.9"), "--host china: the site has no storage nodes"},
		{"same address", with("us", "10.0.0.1"), "would both listen on 10.0.0.1:7100"},
		{"http port of another site", with("us", "10.0.0.1:7180"), "would both listen on 10.0.0.1:7180"},
		{"bad port", with("us", "10.0.0.2:x"), "want a port"},
		{"no host", with("us", ":7100"), "want the host's address"},
		{"not a host", with("england", "not a host"), "--host england=not a host: want the host's address"},
		{"not a name", with("england", "-x.example.com:7100"), "want the host's address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Plan(PlanOptions{Dir: t.TempDir(), Topology: topology.Pileus4(), Hosts: tc.hosts, Insecure: true})
			if !errors.Is(err, ErrBadPlan) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Plan: %v; want an error saying %q", err, tc.want)
			}
		})
	}
	for _, host := range []string{"10.0.0.1", "::1", "db-1.example.com", "localhost"} {
		if !validHost(host) {
			t.Errorf("validHost(%q) = false, want true", host)
		}
	}
}

// TestPlanIntoRunningCluster: a plan into the directory of a running
// local cluster is refused before it writes anything (it would replace
// the cluster's certificate authority).
func TestPlanIntoRunningCluster(t *testing.T) {
	dir := t.TempDir()
	if err := writeInfo(&Info{Dir: dir, PID: os.Getpid()}); err != nil {
		t.Fatal(err)
	}
	_, err := Plan(PlanOptions{Dir: dir, Topology: topology.Pileus4(), Insecure: true,
		Hosts: map[string]string{"england": "10.0.0.1", "us": "10.0.0.2", "india": "10.0.0.3"}})
	if !errors.Is(err, ErrBadPlan) || !strings.Contains(err.Error(), "a cluster is running in "+dir) {
		t.Fatalf("Plan into a running cluster's directory: %v; want it refused", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "hosts")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused plan wrote %s (%v)", filepath.Join(dir, "hosts"), err)
	}
}

// TestCheckPorts: --port-base's ports are checked, naming a taken one and
// what it was for.
func TestCheckPorts(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	err = CheckPorts(topology.Pileus4(), port)
	want := fmt.Sprintf("port %d, for site england's transport, is taken", port)
	if !errors.Is(err, ErrBadPorts) || !strings.Contains(err.Error(), want) {
		t.Errorf("CheckPorts at a taken port: %v; want %q", err, want)
	}
	if err := CheckPorts(topology.Pileus4(), 65531); !errors.Is(err, ErrBadPorts) || !strings.Contains(err.Error(), "want one from 1 to 65530 for 3 sites") {
		t.Errorf("CheckPorts(65531) for three sites: %v; want the range refused", err)
	}
}
