package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/cosla/cosla/internal/runtime/certs"
	"github.com/cosla/cosla/internal/runtime/cluster"
	"github.com/cosla/cosla/internal/runtime/private"
	"github.com/cosla/cosla/internal/runtime/topology"
)

// topologyFlags choose a topology: a preset or a file.
type topologyFlags struct{ preset, file string }

func (t *topologyFlags) add(fs *flag.FlagSet) {
	fs.StringVar(&t.preset, "preset", "pileus4", "topology preset: pileus4 (Pileus 5.1: England, U.S., India, China) , local (one site, clients dial the node directly) or karma8 (Karma 5: eight datacenters in three rings, six storage nodes each; the table is a causal table)")
	fs.StringVar(&t.file, "topology", "", "topology YAML file (instead of --preset); see internal/runtime/topology.Load")
}

// resolve returns the topology the flags name.
func (t *topologyFlags) resolve() (topology.Topology, error) {
	load := func() (topology.Topology, error) {
		if t.file != "" {
			return topology.Load(t.file)
		}
		return topology.Resolve(t.preset)
	}
	topo, err := load()
	if err != nil {
		return topo, usageError{err}
	}
	return topo, nil
}

// resolveCluster checks the topology and table flags of a cluster to
// start or plan: its topology, and its table's placement and write level.
func resolveCluster(topo *topologyFlags, table *tableFlags) (topology.Topology, cluster.Table, error) {
	t, err := topo.resolve()
	if err != nil {
		return t, cluster.Table{}, err
	}
	tbl, err := table.resolve(t)
	return t, tbl, err
}

func runClusterUp(args []string, stdout, stderr io.Writer) error {
	fs := newCommand("cluster up", "cosla cluster up [--preset pileus4 | --topology FILE] [--dir DIR] [--port-base N] [placement flags]",
		"Starts a multi-site cluster on this machine: one cosla serve process per site, the WAN\n"+
			"between sites emulated, and a table \"usertable\", by default one tablet replicated from\n"+
			"the first site to the others (--sites, --replicas, --tablets, --partition and --starts\n"+
			"place it otherwise; see internal/runtime/topology.Placement). It returns once the cluster is\n"+
			"ready; cosla cluster down stops it.", stderr)
	var topo topologyFlags
	topo.add(fs)
	dir := fs.String("dir", defaultDir(), "directory for the cluster's data, configs and logs ($COSLA_DIR sets the default)")
	var table tableFlags
	table.add(fs)
	fresh := fs.Bool("fresh", false, "delete the data of a previous cluster in --dir first")
	insecure := fs.Bool("insecure", false, "run without TLS: any process that reaches a node's port may send it anything (by default a CA and node and client certificates are written to DIR/tls and every connection is mutual TLS)")
	noFsync := fs.Bool("unsafe-no-fsync", false, "never fsync: acknowledged Puts may be lost in a crash (to measure what durability costs)")
	foreground := fs.Bool("foreground", false, "run the supervisor in this process until interrupted")
	portBase := fs.Int("port-base", 0, "listen on fixed ports: the i-th site with storage nodes (from 0, in the topology's order) on `N`+2i (nodes and clients) and N+2i+1 (HTTP: status page, /metrics), the same after every restart (default: free ports chosen at start)")
	clients := fs.String("clients", "", "comma-separated names of clients to issue certificates of their own to, besides the CLI's (DIR/tls/client-NAME.pem; cosla cluster cert client NAME issues one later)")
	if err := parseArgs(fs, args, noOperands); err != nil {
		return err
	}
	t, tbl, err := resolveCluster(&topo, &table)
	if err != nil {
		return err
	}
	if err := cluster.CheckClients(commaList(*clients), *insecure); err != nil {
		return usagef("--clients: %v", err)
	}
	if *foreground {
		return superviseCluster(stdout, cluster.Options{Dir: *dir, Topology: t, Placement: tbl.Placement, PullInterval: table.pull, Push: table.push,
			WriteLevel: tbl.WriteLevel, Fresh: *fresh, Insecure: *insecure, UnsafeNoFsync: *noFsync, PortBase: *portBase, Clients: commaList(*clients),
			Logger: slog.New(slog.NewTextHandler(stderr, nil))})
	}
	if pid, running := cluster.Running(*dir); running {
		return usagef("a cluster is already running in %s (pid %d); stop it with: cosla cluster down%s", *dir, pid, dirArg(*dir))
	}
	// Said here, before the supervisor starts, rather than in its log.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cluster.StopOrphans(ctx, *dir, func(msg string) { fmt.Fprintln(stdout, msg) }); err != nil {
		return err
	}
	if *portBase != 0 {
		if err := cluster.CheckPorts(t, *portBase); err != nil {
			return err
		}
	}
	return startDetached(*dir, args, stdout)
}

// superviseCluster starts a cluster and supervises it until interrupted:
// the detached process of cluster up.
func superviseCluster(stdout io.Writer, o cluster.Options) error {
	ctx, cancel := interruptible()
	defer cancel()
	c, err := cluster.Start(ctx, o)
	if err != nil {
		return err
	}
	defer c.Close()
	printClusterInfo(stdout, c.Info())
	c.Wait(ctx)
	return nil
}

// clusterDirFlag adds --dir, the directory of a running cluster.
func clusterDirFlag(fs *flag.FlagSet) *string {
	return fs.String("dir", defaultDir(), "directory of the cluster ($COSLA_DIR sets the default)")
}

// commaList splits a comma-separated flag value; "" is no items.
func commaList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// startDetached runs `cluster up --foreground` in a new session, in the
// background, and waits until it has written the cluster's description.
func startDetached(dir string, args []string, stdout io.Writer) error {
	if err := private.MkdirAll(dir); err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	logPath := filepath.Join(dir, "cluster.log")
	logFile, err := private.OpenFile(logPath, os.O_WRONLY|os.O_TRUNC)
	if err != nil {
		return err
	}
	defer logFile.Close()
	cmd := exec.Command(exe, append([]string{"cluster", "up", "--foreground"}, args...)...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.After(2 * time.Minute)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if in, err := cluster.ReadInfo(dir); err == nil && in.PID == cmd.Process.Pid {
			printClusterInfo(stdout, *in)
			return nil
		}
		select {
		case err := <-exited:
			log, _ := os.ReadFile(logPath)
			return fmt.Errorf("the cluster did not start (%v):\n%s", err, strings.TrimSpace(string(log)))
		case <-deadline:
			_ = cmd.Process.Kill()
			return fmt.Errorf("the cluster did not start within 2 minutes; see %s", logPath)
		case <-tick.C:
		}
	}
}

func printClusterInfo(w io.Writer, in cluster.Info) {
	fmt.Fprintf(w, "cluster %s is up in %s (supervisor pid %d)\n", in.Topology, in.Dir, in.PID)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  site\tnodes\taddress\tmetrics\tpid")
	for _, s := range in.Sites {
		fmt.Fprintf(tw, "  %s\t%s\t%s\thttp://%s/metrics\t%d\n", s.Name, strings.Join(s.Nodes, ","), s.Addr, s.HTTP, s.PID)
	}
	tw.Flush()
	if len(in.Sites) > 0 {
		// Every site serves the page and shows the whole cluster on it
		// (status_peers): one address is enough to print.
		fmt.Fprintf(w, "status page: http://%s/\n", in.Sites[0].HTTP)
	}
	fmt.Fprintf(w, "table %q; client sites: %s\n", in.Table, strings.Join(in.ClientSites(), ", "))
	if in.Insecure {
		fmt.Fprintln(w, "warning: TLS is off (--insecure): any process that reaches a node's port may send it anything")
	} else {
		fmt.Fprintf(w, "mutual TLS: CA and certificates in %s (the CLI uses client.pem; each client sends only as the name in its certificate)\n", certs.ClusterDir(in.Dir))
	}
	dir := dirArg(in.Dir)
	if in.Causal {
		sites := in.ClientSites()
		fmt.Fprintf(w, "the table is a causal table (Karma)\ntry: cosla put%s --site %s cart book; cosla get%s --site %s cart; cosla gettx%s --site %s cart note\n",
			dir, in.DefaultSite, dir, sites[len(sites)-1], dir, sites[len(sites)-1])
		return
	}
	fmt.Fprintf(w, "try: cosla put%s cart book; cosla get%s --site %s --sla shopping-cart cart\n", dir, dir, in.ClientSites()[0])
}

func runClusterDown(args []string, stdout, stderr io.Writer) error {
	fs := newCommand("cluster down", "cosla cluster down [--dir DIR]", "Stops the cluster running in DIR: its supervisor and every site's process. The data stays\n"+
		"in DIR for the next cluster up (--fresh deletes it).", stderr)
	dir := clusterDirFlag(fs)
	if err := parseArgs(fs, args, noOperands); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ctl, in, err := cluster.Connect(*dir)
	if errors.Is(err, cluster.ErrNotRunning) {
		// The supervisor died (killed, say): stop the site processes it
		// left behind, whose pids it recorded.
		if _, rerr := cluster.ReadInfo(*dir); rerr == nil {
			return cluster.StopOrphans(ctx, *dir, func(msg string) { fmt.Fprintln(stdout, msg+" (data kept)") })
		}
	}
	if err != nil {
		return err
	}
	if err := ctl.Shutdown(ctx); err != nil {
		return err
	}
	if err := cluster.WaitStopped(ctx, in.PID); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "cluster in %s stopped (data kept)\n", *dir)
	return nil
}

func runClusterStatus(args []string, stdout, stderr io.Writer) error {
	fs := newCommand("cluster status", "cosla cluster status [--dir DIR] [--json]", "Shows the cluster running in DIR: each site's process and HTTP address (status page,\n"+
		"/metrics), each node's tablets with their role, high timestamp and lag behind the primary,\nPuts and Gets, and the emulated links.", stderr)
	dir := clusterDirFlag(fs)
	jsonOut := fs.Bool("json", false, "print JSON")
	if err := parseArgs(fs, args, noOperands); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, st, err := clusterStatus(ctx, *dir)
	if err != nil {
		return err
	}
	return emit(stdout, *jsonOut, st, func() error { return printClusterStatus(stdout, st) })
}

// printClusterStatus prints a cluster's status as text: a row per tablet
// of each node, then a row per link.
func printClusterStatus(stdout io.Writer, st cluster.Status) error {
	now := time.Now()
	fmt.Fprintf(stdout, "cluster %s in %s\n\n", st.Topology, st.Dir)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "site\tpid\thttp\tnode\ttable\ttablet\trole\tepoch\thigh timestamp\tlag\tputs\tgets")
	for _, s := range st.Sites {
		if !s.Up {
			fmt.Fprintf(tw, "%s\t%d\t%s\tDOWN: %s\t\t\t\t\t\t\t\t\n", s.Name, s.PID, s.HTTP, s.Error)
			continue
		}
		for _, n := range s.Serve.Nodes {
			for _, t := range n.Metrics.Tablets {
				role, lag := "secondary", fmt.Sprintf("%.1fs", now.Sub(time.Unix(0, t.High.WallNanos)).Seconds())
				switch {
				case t.Primary && !t.Leased:
					role, lag = "primary (no lease)", "-"
				case t.Primary:
					role, lag = "primary", "-"
				case t.CatchingUp:
					role = "secondary (catching up)"
				case t.High.IsZero():
					lag = "not pulled yet"
				}
				fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%d\t%s\t%d\t%s\t%s\t%d\t%d\n", s.Name, s.PID, s.HTTP, n.ID, t.Table, t.Ref.Tablet, role, t.Epoch, t.High, lag, n.Metrics.Puts, n.Metrics.Gets)
			}
		}
	}
	tw.Flush()
	for _, s := range st.Sites {
		if s.Restarts > 0 {
			fmt.Fprintf(stdout, "site %s: restarted %d times by the supervisor; its last process ended: %s\n", s.Name, s.Restarts, s.LastExit)
		}
	}
	printService(stdout, st)
	fmt.Fprintln(stdout)
	tw = tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "link\trtt\tjitter\tstate")
	for _, l := range st.Links {
		state := "up"
		if l.Down {
			state = "DOWN"
		}
		fmt.Fprintf(tw, "%s-%s\t%.0fms\t%.1fms\t%s\n", l.A, l.B, l.RTTMS, l.JitterMS, state)
	}
	return tw.Flush()
}

// printService prints who leads the configuration service, as its
// members that answered see it.
func printService(stdout io.Writer, st cluster.Status) {
	var members []string
	leader, term := "", uint64(0)
	for _, s := range st.Sites {
		if s.Serve == nil || s.Serve.Config == nil {
			continue
		}
		c := s.Serve.Config
		members = append(members, string(c.ID))
		if c.Status.Term >= term && c.Status.Leader != "" {
			leader, term = string(c.Status.Leader), c.Status.Term
		}
	}
	switch {
	case len(members) == 0:
	case leader == "":
		fmt.Fprintf(stdout, "configuration service: members %s, no leader known\n", strings.Join(members, ", "))
	default:
		fmt.Fprintf(stdout, "configuration service: members %s, leader %s (term %d)\n", strings.Join(members, ", "), leader, term)
	}
}

// clusterStatus connects to the cluster running in dir and fetches its
// status.
func clusterStatus(ctx context.Context, dir string) (*cluster.Control, cluster.Status, error) {
	ctl, _, err := cluster.Connect(dir)
	if err != nil {
		return nil, cluster.Status{}, err
	}
	st, err := ctl.Status(ctx)
	return ctl, st, err
}

func runClusterLink(args []string, stdout, stderr io.Writer) error {
	fs := newCommand("cluster link set", "cosla cluster link set A B [--latency D] [--jitter D] [--down | --up]",
		"Changes the emulated link between sites A and B, both ways, at once. Unset flags keep\nthe link's current value.", stderr)
	dir := clusterDirFlag(fs)
	latency := fs.Duration("latency", 0, "round-trip time between the two sites (default: unchanged)")
	jitter := fs.Duration("jitter", 0, "standard deviation of each one-way delay (default: unchanged)")
	down := fs.Bool("down", false, "partition the two sites")
	up := fs.Bool("up", false, "heal a partition")
	if err := parseArgs(fs, args, operandCount(2, 2, "want two sites: cosla cluster link set A B [flags]")); err != nil {
		return err
	}
	a, b := fs.Arg(0), fs.Arg(1)
	set := flagsSet(fs)
	switch {
	case *down && *up:
		return usagef("--down and --up together")
	case *latency < 0:
		return usagef("--latency %s: a round-trip time must not be negative", *latency)
	case *jitter < 0:
		return usagef("--jitter %s: a deviation must not be negative", *jitter)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ctl, st, err := clusterStatus(ctx, *dir)
	if err != nil {
		return err
	}
	var req *cluster.LinkRequest
	for _, l := range st.Links {
		if (l.A == a && l.B == b) || (l.A == b && l.B == a) {
			req = &cluster.LinkRequest{A: a, B: b, RTTMS: l.RTTMS, JitterMS: l.JitterMS, Down: l.Down}
		}
	}
	if req == nil {
		return usagef("no link between %q and %q", a, b)
	}
	if set["latency"] {
		req.RTTMS = milliseconds(*latency)
	}
	if set["jitter"] {
		req.JitterMS = milliseconds(*jitter)
	}
	if *down {
		req.Down = true
	}
	if *up {
		req.Down = false
	}
	if err := ctl.SetLink(ctx, *req); err != nil {
		return err
	}
	state := "up"
	if req.Down {
		state = "down"
	}
	fmt.Fprintf(stdout, "link %s-%s: rtt %.0fms, jitter %.1fms, %s\n", a, b, req.RTTMS, req.JitterMS, state)
	return nil
}
