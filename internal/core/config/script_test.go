package config

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/cosla/cosla/internal/core/wire"
)

// TestScripts runs the scripts in testdata: the service's members (a/cfg,
// b/cfg, c/cfg) and scripted replicas in a world (world_test.go). A
// command's expected output is the trace it caused: every message but
// raft's, each change of leader and the members' log lines at Info.
// Commands:
//
//	world [seed=N] [plan]                    three members; plan: NodeOptions.Plan
//	table name=T id=N primary=R secondaries=R,R...
//	                                         a table of one tablet at its replicas
//	high replica=R ts=SECONDS [stuck]        the replica's high timestamp of tablet 1/0;
//	                                         stuck: it cannot catch up to a switchover's Until
//	kill replica=R | revive replica=R        a replica stops (answers and renews nothing) or returns
//	cut node=M | heal node=M                 a member is cut off the network or back
//	reconfigure primary=R | add=R | remove=R [table=T]
//	                                         op/client asks the leader to change tablet 0
//	run for=D [hide=leases]                  run the world for D of virtual time; hide=leases
//	                                         leaves out LeaseRenew and LeaseGrant
//	status                                   the leader and its view of the tables
func TestScripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		var w *world
		mark, req := 0, uint64(0)
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			if d.Cmd != "world" && w == nil {
				d.Fatalf(t, "%s before world", d.Cmd)
			}
			if d.Cmd == "world" {
				w, mark = scriptWorld(t, d), 0
				return ""
			}
			req++
			out := scriptCommand(t, w, d, mark, req)
			mark = len(w.trace)
			return out
		})
	})
}

func scriptWorld(t *testing.T, d *datadriven.TestData) *world {
	seed := uint64(1)
	if d.HasArg("seed") {
		d.ScanArgs(t, "seed", &seed)
	}
	opts := NodeOptions{}
	if d.HasArg("plan") {
		opts.Plan = true
		opts.Planner = PlannerOptions{Window: 10 * time.Second, Hold: 2, MinOps: 1, MinInterval: time.Minute}
	}
	return voters3World(t, seed, opts)
}

// scriptCommand runs one command; req numbers its Reconfigure, if any.
func scriptCommand(t *testing.T, w *world, d *datadriven.TestData, mark int, req uint64) string {
	arg := func(key string) string {
		var v string
		if d.HasArg(key) {
			d.ScanArgs(t, key, &v)
		}
		return v
	}
	switch d.Cmd {
	case "table":
		id, _ := strconv.ParseUint(arg("id"), 10, 64)
		tb := wire.Tablet{Primary: wire.NodeID(arg("primary"))}
		for _, s := range strings.Split(arg("secondaries"), ",") {
			tb.Secondaries = append(tb.Secondaries, wire.NodeID(s))
		}
		w.addTable(wire.Layout{Name: arg("name"), ID: id, Tablets: []wire.Tablet{tb}})
	case "high":
		secs, err := strconv.ParseInt(arg("ts"), 10, 64)
		if err != nil {
			d.Fatalf(t, "ts: %v", err)
		}
		r := w.replica(wire.NodeID(arg("replica")))
		r.highs[ref0], r.stuck[ref0] = ts(secs), d.HasArg("stuck")
	case "kill":
		w.replica(wire.NodeID(arg("replica"))).kill()
	case "revive":
		w.replica(wire.NodeID(arg("replica"))).revive()
	case "cut", "heal":
		w.cut[wire.NodeID(arg("node"))] = d.Cmd == "cut"
	case "reconfigure":
		m := &wire.Reconfigure{Req: req, Table: cmp.Or(arg("table"), "t"),
			Primary: wire.NodeID(arg("primary")), Add: wire.NodeID(arg("add")), Remove: wire.NodeID(arg("remove"))}
		w.send("op/client", w.leader(), m)
	case "run":
		var d0 string
		d.ScanArgs(t, "for", &d0)
		dur, err := time.ParseDuration(d0)
		if err != nil {
			d.Fatalf(t, "for: %v", err)
		}
		w.run(dur)
		return traceSince(w, mark, arg("hide") == "leases")
	case "status":
		return scriptStatus(w)
	default:
		d.Fatalf(t, "unknown command %q", d.Cmd)
	}
	return ""
}

func traceSince(w *world, mark int, hideLeases bool) string {
	var b strings.Builder
	for _, line := range w.trace[mark:] {
		if hideLeases && (strings.Contains(line, " LeaseRenew(") || strings.Contains(line, " LeaseGrant(")) {
			continue
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

func scriptStatus(w *world) string {
	lead := w.leader()
	if lead == "" {
		return "no leader\n"
	}
	st := w.nodes[lead].Status()
	var b strings.Builder
	fmt.Fprintf(&b, "leader %s term %d\n", lead, st.Term)
	for _, tb := range st.Tables {
		for i, x := range tb.Tablets {
			fmt.Fprintf(&b, "%s %d/%d primary=%s secondaries=%v epoch=%d start=%s moving=%v\n", tb.Name, tb.ID, i, x.Primary, x.Secondaries, x.Epoch, x.Start, x.Moving)
		}
	}
	return b.String()
}
