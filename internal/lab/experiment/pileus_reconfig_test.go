package experiment

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
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

// TestReconfigSimulatorOnly: a cluster run of pileus-reconfig is refused
// as bad input before any cluster starts.
func TestReconfigSimulatorOnly(t *testing.T) {
	s, err := Resolve("pileus-reconfig")
	if err != nil {
		t.Fatal(err)
	}
	_, err = RunCluster(context.Background(), s, ClusterRunOptions{Dir: t.TempDir()})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "simulator only") {
		t.Errorf("RunCluster: %v; want ErrInvalid, simulator only", err)
	}
}
