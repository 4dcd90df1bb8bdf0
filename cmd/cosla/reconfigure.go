package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/cosla/cosla"
)

// tabletChange is a command that asks the configuration service to
// change one tablet: cluster failover and cluster replica add|remove.
type tabletChange struct {
	name, doc string
	// flag names the command's own required flag (to, node), value its
	// value in the usage line (SITE, SITE/NAME) and flagDoc its help;
	// check checks it before anything is sent.
	flag, value, flagDoc string
	check                func(value string) error
	change               func(c *cosla.Client, ctx context.Context, table string, tablet int, value string) (cosla.Reconfiguration, error)
}

func runClusterFailover(args []string, stdout, stderr io.Writer) error {
	return runTabletChange(tabletChange{
		name: "cluster failover",
		doc: "Moves the primary of a tablet to its replica at SITE by planned switchover: the old primary\n" +
			"stops taking Puts, the new one catches up with it, and the tablet's epoch moves, so that no\n" +
			"acknowledged Put is lost, whatever its write level. Clients follow on their next Put.",
		flag: "to", value: "SITE", flagDoc: "the `SITE` whose replica of the tablet becomes its primary",
		check: func(site string) error {
			if site == "" || strings.Contains(site, "/") {
				return usagef("--to %q: want a site holding a replica of the tablet, e.g. --to us", site)
			}
			return nil
		},
		change: (*cosla.Client).MovePrimary,
	}, args, stdout, stderr)
}

func runClusterReplicaAdd(args []string, stdout, stderr io.Writer) error {
	return runTabletChange(tabletChange{
		name: "cluster replica add",
		doc: "Adds a storage node to the secondaries of a tablet; it catches up from the primary (by\n" +
			"snapshot if the primary's log no longer reaches back).",
		flag: "node", value: "SITE/NAME", flagDoc: "the storage node to add, `SITE/NAME` (e.g. india/r1)",
		check: checkNodeFlag, change: (*cosla.Client).AddReplica,
	}, args, stdout, stderr)
}

func runClusterReplicaRemove(args []string, stdout, stderr io.Writer) error {
	return runTabletChange(tabletChange{
		name: "cluster replica remove",
		doc: "Removes a secondary of a tablet, which drops its copy. The primary cannot be removed:\n" +
			"move it first (cosla cluster failover).",
		flag: "node", value: "SITE/NAME", flagDoc: "the secondary to remove, `SITE/NAME` (e.g. india/r1)",
		check: checkNodeFlag, change: (*cosla.Client).RemoveReplica,
	}, args, stdout, stderr)
}

// checkNodeFlag checks --node.
func checkNodeFlag(node string) error {
	if site, name, ok := strings.Cut(node, "/"); !ok || site == "" || name == "" || strings.Contains(name, "/") {
		return usagef("--node %q: want a storage node SITE/NAME, e.g. --node india/r1", node)
	}
	return nil
}

// runTabletChange parses and checks a tabletChange's command line, then
// asks the cluster's configuration service for the change and prints
// the tablet's place after it.
func runTabletChange(tc tabletChange, args []string, stdout, stderr io.Writer) error {
	synopsis := fmt.Sprintf("cosla %s [--table T] [--tablet N] --%s %s [--dir DIR | --config FILE] [--json]", tc.name, tc.flag, tc.value)
	doc := tc.doc + "\nNeeds the cluster's configuration service; returns once the change has committed."
	fs := newCommand(tc.name, synopsis, doc, stderr)
	var f clientFlags
	addClientFlags(fs, &f, false)
	tablet := fs.Int("tablet", 0, "the tablet's index in the table's layout, from 0")
	value := fs.String(tc.flag, "", tc.flagDoc)
	if err := parseArgs(fs, args, noOperands); err != nil {
		return err
	}
	if err := f.check(); err != nil {
		return err
	}
	switch {
	case !flagsSet(fs)[tc.flag]:
		return usagef("--%s is required", tc.flag)
	case *tablet < 0:
		return usagef("--tablet %d: want a tablet's index, from 0", *tablet)
	}
	if err := tc.check(*value); err != nil {
		return err
	}
	tg, err := resolveTarget(&f)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), f.timeout)
	defer cancel()
	c, err := cosla.Open(ctx, tg.config)
	if err != nil {
		return err
	}
	defer c.Close()
	r, err := tc.change(c, ctx, tg.table, *tablet, *value)
	if err != nil {
		return f.explain(err)
	}
	out := map[string]any{"table": r.Table, "tablet": r.Tablet, "epoch": r.Epoch, "primary": r.Primary, "secondaries": r.Secondaries}
	return emit(stdout, f.jsonOut, out, func() error {
		_, err := fmt.Fprintf(stdout, "table %s tablet %d: primary %s, secondaries %s, epoch %d\n",
			r.Table, r.Tablet, r.Primary, strings.Join(r.Secondaries, ", "), r.Epoch)
		return err
	})
}
