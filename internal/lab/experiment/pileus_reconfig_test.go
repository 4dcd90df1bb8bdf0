package experiment

import (
	"slices"
	"testing"
	"time"

	"github.com/cosla/cosla/internal/runtime/server"
)

// TestReconfigFollowsTheLoad runs pileus-reconfig shortened: the planner
// moves the primary at least once, each time to a site whose clients
// were active when it moved, and reconfiguration delivers over the day
// at least the utility of the best fixed primary.
func TestReconfigFollowsTheLoad(t *testing.T) {
	scale := scaleFor(1, 0.05)
	s, r := runPreset(t, "pileus-reconfig", scale)
	checkReconfig(t, scale, s, r)
}

// checkReconfig checks a pileus-reconfig result run at scale.
func checkReconfig(t *testing.T, scale float64, s *Scenario, r *Result) {
	t.Helper()
	var moves []MoveRecord
	for _, run := range r.Runs {
		if c := run.Service; c == nil || c.RaftPerS <= 0 || c.RenewalsPerS <= 0 || c.ReportsPerS <= 0 {
			t.Errorf("series %s at %s: service cost %+v; want raft messages, renewals and reports", run.Series, run.Client, c)
		}
		if run.Series == "reconfigure" {
			moves = run.Moves
		} else if len(run.Moves) > 0 {
			t.Errorf("series %s (a fixed primary) moved: %v", run.Series, run.Moves)
		}
	}
	if len(moves) == 0 {
		t.Errorf("reconfigure moved no primary\nreproduce with: %s", repro("pileus-reconfig", scale))
	}
	for _, m := range moves {
		at := time.Duration(m.AtS / scale * float64(time.Second))
		if a := s.Active[m.To]; len(a) != 2 || at < a[0] || at >= a[1] {
			t.Errorf("move %+v at %v of the day: %s's clients are not active then (%v)\nreproduce with: %s", m, at, m.To, a, repro("pileus-reconfig", scale))
		}
	}
	day := dayUtility(r)
	best := 0.0
	for series, u := range day {
		if series != "reconfigure" {
			best = max(best, u)
		}
	}
	if day["reconfigure"] < best {
		t.Errorf("reconfigure delivered %.3f per Get over the day, below the best fixed primary's %.3f (%v)\nreproduce with: %s",
			day["reconfigure"], best, day, repro("pileus-reconfig", scale))
	}
}

// dayUtility is each series' utility per Get over the whole run.
func dayUtility(r *Result) map[string]float64 {
	gets, utility := map[string]int{}, map[string]float64{}
	for _, run := range r.Runs {
		for _, h := range run.Hours {
			gets[run.Series] += h.Gets
			utility[run.Series] += h.Utility
		}
	}
	out := map[string]float64{}
	for series, n := range gets {
		out[series] = utility[series] / float64(n)
	}
	return out
}

// TestReconfigClusterPlan checks how pileus-reconfig runs on a
// cluster: a fresh cluster per series, the planner on (with its times
// compressed as the day is) only in the reconfigure series' serve
// configs, whose clients report as often, and each client site's hours
// and think time compressed with the day.
func TestReconfigClusterPlan(t *testing.T) {
	s, err := Resolve("pileus-reconfig")
	if err != nil {
		t.Fatal(err)
	}
	tm := timing{cluster: true, scale: s.Cluster.TimeScale}
	units, err := planUnits(s, 1, tm)
	if err != nil {
		t.Fatal(err)
	}
	groups, err := clusterGroups(s, units)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, g := range groups {
		names = append(names, g.series)
		if len(g.units) != 1 || len(g.units[0].runs) != 3 {
			t.Fatalf("series %s: %d units; want 1 of 3 runs (us, india, china at once)", g.series, len(g.units))
		}
		plan := g.series == "reconfigure"
		if g.base.Reconfigure != nil != plan {
			t.Errorf("series %s: reconfigure %+v", g.series, g.base.Reconfigure)
		}
		for _, r := range g.units[0].runs {
			if got := r.group.Cosla.Client.ReportEvery; plan && got != 150*time.Millisecond || !plan && got != 0 {
				t.Errorf("series %s, %s: reports every %v; want 150ms with the planner, else the default", g.series, r.r.Client, got)
			}
			st := r.group.Streams[0]
			if r.r.Client == "india" && (st.From != 72*time.Second || st.Until != 144*time.Second) {
				t.Errorf("india's hours on the cluster: %v to %v; want 72s to 144s (8h and 16h of a 3m36s day)", st.From, st.Until)
			}
			if st.Think != time.Second || r.group.Sessions != 40 {
				t.Errorf("think %v, %d sessions; want 1s (5s x 0.0025 is 12.5ms, cluster.think 1s), 40", st.Think, r.group.Sessions)
			}
		}
	}
	if !slices.Equal(names, []string{"england", "us", "india", "reconfigure"}) {
		t.Fatalf("clusters %v; want one per series", names)
	}
	got := groups[3].base.Reconfigure.serve(tm)
	want := server.PlannerOptions{Window: 1500 * time.Millisecond, Gain: 0.05, Hold: 2, MinInterval: 9 * time.Second, MinOps: 1}
	if !got.Reconfigure || got.Planner != want {
		t.Errorf("serve config %+v; want reconfigure on, planner %+v", got, want)
	}
}
