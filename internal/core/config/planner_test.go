package config

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// sunReport is an hour of a password SLA's load from one region: its
// operations would get full utility with the primary at home and half
// elsewhere (met from a secondary's subSLA).
func sunReport(home string, ops int64) UtilityReport {
	u := map[string]float64{}
	for _, s := range []string{"england", "us", "india", "china"} {
		u[s] = 0.5 * float64(ops)
	}
	u[home] = float64(ops)
	return UtilityReport{Table: "t", Tablet: 0, Ops: ops, Utility: u}
}

func TestPlannerFollowsTheSun(t *testing.T) {
	p := NewPlanner(PlannerOptions{Window: time.Hour, MinInterval: 4 * time.Hour})
	primary := "england"
	day := []string{"us", "us", "us", "us", "us", "us", "india", "us", "india", "india", "india", "china", "china", "china", "china", "china", "china", "china"}
	var moves []string
	t0 := time.Unix(0, 0)
	for h, home := range day {
		p.Add(sunReport(home, 600))
		for _, m := range p.EndWindow(t0.Add(time.Duration(h+1)*time.Hour), func(string, int) string { return primary }) {
			moves = append(moves, fmt.Sprintf("h%d:%s", h+1, m.Site))
			primary = m.Site
		}
	}
	// us leads from hour 1 and holds 3 windows; india's lone hour 7 is
	// noise; india then leads from hour 9 (3 windows: hour 11, 8h after
	// the last move); china leads from hour 12 and holds from hour 14,
	// but the move waits for MinInterval after india's, until hour 15.
	want := "h3:us h11:india h15:china"
	if got := strings.Join(moves, " "); got != want {
		t.Errorf("moves %q, want %q", got, want)
	}
}

func TestPlannerIgnoresSmallGainsAndThinWindows(t *testing.T) {
	p := NewPlanner(PlannerOptions{})
	for range 10 {
		r := sunReport("us", 1000)
		r.Utility["us"] = r.Utility["england"] + 0.04*1000 // 0.04 per op: under Gain
		p.Add(r)
		p.Add(sunReport("india", 50)) // ops count, but india's gain is diluted
		if m := p.EndWindow(time.Unix(0, 0), func(string, int) string { return "england" }); len(m) != 0 {
			t.Fatalf("moved on a gain under the threshold: %+v", m)
		}
	}
	for range 10 {
		p.Add(sunReport("us", 99)) // under MinOps
		if m := p.EndWindow(time.Unix(0, 0), func(string, int) string { return "england" }); len(m) != 0 {
			t.Fatalf("moved on a window of 99 ops: %+v", m)
		}
	}
}

func TestPlannerOptionsValidate(t *testing.T) {
	if err := (PlannerOptions{}).EnsureDefaults().Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
	for _, o := range []PlannerOptions{{Window: -1, Gain: 1, Hold: 1}, {Window: 1, Gain: -1, Hold: 1}, {Window: 1, Gain: 1, Hold: -1}} {
		if o.Validate() == nil {
			t.Errorf("Validate(%+v) accepted it", o)
		}
	}
}
