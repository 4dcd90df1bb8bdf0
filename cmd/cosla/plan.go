package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cosla/cosla"
	"github.com/cosla/cosla/internal/runtime/clientfile"
	"github.com/cosla/cosla/internal/runtime/cluster"
	"github.com/cosla/cosla/internal/runtime/topology"
)

// tableFlags place the table a cluster creates (cluster up, cluster plan).
type tableFlags struct {
	pull                                 time.Duration
	push                                 bool
	sites, partition, starts, writeLevel string
	replicas, tablets                    int
}

func (t *tableFlags) add(fs *flag.FlagSet) {
	fs.DurationVar(&t.pull, "pull-interval", time.Minute, "how often secondaries pull from the primary (Pileus 4.3)")
	fs.BoolVar(&t.push, "push", false, "also push every Put to the secondaries at once")
	fs.StringVar(&t.sites, "sites", "", "comma-separated sites holding the table's replicas, the primaries' site first (default: every site with storage nodes)")
	fs.IntVar(&t.replicas, "replicas", 0, "replicas of each tablet (default: one per site of --sites)")
	fs.IntVar(&t.tablets, "tablets", 1, "number of tablets")
	fs.StringVar(&t.partition, "partition", "range", "how keys map to tablets: range or hash")
	fs.StringVar(&t.starts, "starts", "", "comma-separated split points of a range-partitioned table of several tablets (--tablets minus one, ascending)")
	fs.StringVar(&t.writeLevel, "write-level", "", "least write level of every Put to the table (CPQ): one, quorum, all or a number; a Get of r of N replicas with r + w > N is then strong without the primary; a table kept from a previous run keeps its level (--fresh to change it) (default one)")
}

// resolve checks the flags against topo: the placement and write level.
func (t *tableFlags) resolve(topo topology.Topology) (cluster.Table, error) {
	switch {
	case t.pull <= 0:
		return cluster.Table{}, usagef("--pull-interval must be positive")
	case t.tablets < 1:
		// Placement reads 0 as its default; given on the command line, it
		// is a mistake.
		return cluster.Table{}, usagef("--tablets %d: a table needs at least one tablet", t.tablets)
	}
	placement := topology.Placement{Sites: commaList(t.sites), Replicas: t.replicas, Tablets: t.tablets,
		Partition: t.partition, Starts: commaList(t.starts)}
	table, err := cluster.CheckTable(topo, placement, t.pull)
	if err != nil {
		return table, usagef("%v", err)
	}
	if err := table.SetWriteLevel(t.writeLevel); err != nil {
		return table, usagef("--write-level: %v", err)
	}
	return table, nil
}

// hostFlags collect --host SITE=ADDR.
type hostFlags map[string]string

func (h hostFlags) String() string { return fmt.Sprint(map[string]string(h)) }

func (h hostFlags) Set(v string) error {
	site, addr, ok := strings.Cut(v, "=")
	if !ok || site == "" || addr == "" {
		return fmt.Errorf("want SITE=ADDRESS, e.g. england=10.0.0.1 or england=10.0.0.1:7100, got %q", v)
	}
	if _, dup := h[site]; dup {
		return fmt.Errorf("site %s given twice", site)
	}
	h[site] = addr
	return nil
}

// planDoc is the help of cosla cluster plan.
const planDoc = `Plans a cluster whose sites run on their own hosts. It writes, in DIR:
  hosts/SITE  for each site: serve.yaml, the site's certificate and start.sh; copy it to the
              site's host and run start.sh there
  client      client.yaml (every node's address, the table to create) and the client
              certificate; copy it where clients run: cosla COMMAND --config client/client.yaml;
              client-NAME.yaml and NAME's certificate for each of --clients
  tls         the certificate authority; its key stays with you
Once every site runs, cosla cluster init --config DIR/client/client.yaml creates the table.`

func runClusterPlan(args []string, stdout, stderr io.Writer) error {
	fs := newCommand("cluster plan", "cosla cluster plan --topology FILE --host SITE=ADDRESS ... [--dir DIR] [placement flags]", planDoc, stderr)
	var topo topologyFlags
	topo.add(fs)
	var table tableFlags
	table.add(fs)
	hosts := hostFlags{}
	fs.Var(hosts, "host", fmt.Sprintf("SITE=ADDRESS: the host of a site with storage nodes, its IP or a name the other hosts resolve, with an optional port (default %d; HTTP on the port + %d); once per site", cluster.DefaultPort, cluster.HTTPPortOffset))
	dir := fs.String("dir", "cosla-plan", "directory to write the plan into")
	dataDir := fs.String("data-dir", "data", "each site's data directory on its host (relative: inside the host's directory)")
	httpPublic := fs.Bool("http-public", false, "serve each site's status page, /status and /metrics (plain HTTP, read-only) on its host's address instead of loopback, for Prometheus and for the status page's view of the other sites")
	insecure := fs.Bool("insecure", false, "plan a cluster without TLS: any process that reaches a node's port may send it anything")
	clients := fs.String("clients", "", "comma-separated names of clients to issue certificates of their own to, each with its config file client/client-NAME.yaml, besides the default client.yaml")
	jsonOut := fs.Bool("json", false, "print the plan as JSON")
	if err := parseArgs(fs, args, noOperands); err != nil {
		return err
	}
	if len(hosts) == 0 {
		return usagef("want --host SITE=ADDRESS for every site with storage nodes")
	}
	t, tbl, err := resolveCluster(&topo, &table)
	if err != nil {
		return err
	}
	res, err := cluster.Plan(cluster.PlanOptions{Dir: *dir, Topology: t, Hosts: hosts, Placement: tbl.Placement, PullInterval: table.pull,
		Push: table.push, WriteLevel: tbl.WriteLevel, DataDir: *dataDir, HTTPPublic: *httpPublic, Insecure: *insecure, Clients: commaList(*clients)})
	if err != nil {
		return err
	}
	return emit(stdout, *jsonOut, res, func() error { return printPlan(stdout, t.Name, *dir, res, *insecure) })
}

// printPlan prints what cluster plan wrote and the steps that remain.
func printPlan(stdout io.Writer, name, dir string, res cluster.PlanResult, insecure bool) error {
	fmt.Fprintf(stdout, "planned cluster %s in %s\n", name, dir)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  site\tnodes\taddress\thttp\tcopy to the host")
	for _, h := range res.Hosts {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", h.Site, strings.Join(h.Nodes, ","), h.Addr, h.HTTP, h.Dir)
	}
	tw.Flush()
	fmt.Fprintln(stdout, "next:")
	fmt.Fprintln(stdout, "  1. on each host, in its copied directory: ./start.sh  (cosla on PATH, or COSLA=/path/to/cosla)")
	fmt.Fprintf(stdout, "  2. copy %s to the machines that run clients\n", res.ClientDir)
	fmt.Fprintf(stdout, "  3. once every site runs: cosla cluster init --config %s\n", res.ClientConfig)
	fmt.Fprintf(stdout, "  4. cosla put --config %s cart book; cosla get --config %s --sla shopping-cart cart\n", res.ClientConfig, res.ClientConfig)
	for _, name := range slices.Sorted(maps.Keys(res.NamedConfigs)) {
		fmt.Fprintf(stdout, "client %s: --config %s\n", name, res.NamedConfigs[name])
	}
	if insecure {
		fmt.Fprintln(stdout, "warning: TLS is off (--insecure): any process that reaches a node's port may send it anything")
	} else {
		fmt.Fprintf(stdout, "keep %s secret: it signs the cluster's certificates\n", filepath.Join(res.TLSDir, "ca-key.pem"))
	}
	return nil
}

// runClusterInit creates the table a client config's create section
// describes: the last step of a planned cluster.
func runClusterInit(args []string, stdout, stderr io.Writer) error {
	fs := newCommand("cluster init", "cosla cluster init --config FILE", "Creates the table of a cluster planned with cosla cluster plan, once every site runs.\n"+
		"A table that exists already is left as it is.", stderr)
	config := fs.String("config", "", "client config file written by cosla cluster plan (required)")
	timeout := fs.Duration("timeout", 30*time.Second, "give up after this long")
	if err := parseArgs(fs, args, anyOperands); err != nil {
		return err
	}
	switch {
	case *config == "" || fs.NArg() > 0:
		return usagef("want --config FILE and no arguments")
	case *timeout <= 0:
		return usagef("--timeout %s: want a positive duration such as 30s", *timeout)
	}
	f, err := clientfile.Load(*config)
	if err != nil {
		return err
	}
	if f.Create == nil {
		return fmt.Errorf("%s names no table to create (no create section)", *config)
	}
	spec, err := fileTableSpec(*f.Create)
	if err != nil {
		return fmt.Errorf("%s: %w", *config, err)
	}
	cfg, err := cosla.LoadConfig(*config)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	c, err := cosla.Open(ctx, cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	switch err := c.CreateTable(ctx, spec); {
	case errors.Is(err, cosla.ErrTableExists):
		fmt.Fprintf(stdout, "table %s exists already; left as it is\n", spec.Name)
	case err != nil:
		return fmt.Errorf("create table %s: %w", spec.Name, err)
	default:
		fmt.Fprintf(stdout, "created table %s: %d tablet(s), primary %s\n", spec.Name, len(spec.Tablets), spec.Tablets[0].Primary)
	}
	return nil
}

// fileTableSpec is the table a client file's create section describes,
// as `cosla cluster init` creates it.
func fileTableSpec(t clientfile.Table) (cosla.TableSpec, error) {
	spec := cosla.TableSpec{Name: t.Name, PullInterval: t.PullInterval, Push: t.Push}
	switch t.Partition {
	case "", "range":
		spec.Partition = cosla.ByRange
	case "hash":
		spec.Partition = cosla.ByHash
	default:
		return spec, fmt.Errorf("%w: create.partition: want range or hash, got %q", clientfile.ErrInvalid, t.Partition)
	}
	if t.WriteLevel != "" {
		level, err := cosla.ParseLevel(t.WriteLevel)
		if err != nil {
			return spec, fmt.Errorf("%w: create.write_level: %v", clientfile.ErrInvalid, err)
		}
		spec.WriteLevel = level
	}
	for _, ts := range t.Tablets {
		spec.Tablets = append(spec.Tablets, cosla.TabletSpec{Start: ts.Start, Primary: ts.Primary, Secondaries: ts.Secondaries})
	}
	return spec, nil
}
