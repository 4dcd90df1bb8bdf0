package experiment

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cosla/cosla/internal/core/config"
	"github.com/cosla/cosla/internal/lab/driver"
	"github.com/cosla/cosla/internal/runtime/harness"
	"github.com/cosla/cosla/internal/runtime/server"
	"github.com/cosla/cosla/internal/runtime/site"
)

// reconfigPlugin is Pileus 6.2's SLA-driven reconfiguration, which the
// paper names and leaves open: the configuration service's planner
// moves a tablet's primary to the site whose SLAs gain most. Its output
// is the utility delivered per hour of a run whose load moves between
// client sites (the scenario's active hours), per series (a fixed
// primary each, and one with reconfigure on), and the moves made.
type reconfigPlugin struct{}

// OutReconfig is the reconfiguration output: utility per hour and
// series, and the primaries' moves.
const OutReconfig = "reconfig"

// ReconfigureSpec turns the configuration service's planner on
// (config.NodeOptions.Plan) with these options; unset fields take
// config.PlannerOptions's defaults (ReportEvery clientcore's, 10s). In
// the simulator --scale multiplies every time here, and MinOps (the
// operations a window's length holds shrink with it); on a cluster
// cluster.time_scale does.
type ReconfigureSpec struct {
	// The planner's options, as in a serve config's.
	server.PlannerOptions `yaml:",inline"`
	// ReportEvery is how often each client reports its utility
	// (clientcore.Options.ReportEvery).
	ReportEvery time.Duration `yaml:"report_every"`
}

// planner is the spec as the planner's options, scaled by t.
func (r *ReconfigureSpec) planner(t timing) config.PlannerOptions {
	o := r.Options().EnsureDefaults()
	o.Window, o.MinInterval = t.scaled(o.Window), t.scaled(o.MinInterval)
	o.MinOps = max(1, int64(float64(o.MinOps)*t.scale+0.5))
	return o
}

// reportEvery is the clients' report interval, scaled by t.
func (r *ReconfigureSpec) reportEvery(t timing) time.Duration {
	if r.ReportEvery == 0 {
		return t.scaled(10 * time.Second)
	}
	return t.scaled(r.ReportEvery)
}

// serve is the spec as the sites' options of the configuration service
// on a cluster (their serve configs), the planner's scaled by t.
func (r *ReconfigureSpec) serve(t timing) server.ConfigOptions {
	o := r.planner(t)
	return server.ConfigOptions{Reconfigure: true, Planner: server.PlannerOptions{Window: o.Window, Gain: o.Gain, Hold: o.Hold,
		MinInterval: o.MinInterval, MinOps: o.MinOps}}
}

// worldOptions sets a world's configuration service and clients for
// the scenario: the planner on if it asks for reconfiguration.
func (s *Scenario) worldOptions(o *harness.Options, t timing) {
	if s.Reconfigure == nil {
		return
	}
	o.Config.Plan, o.Config.Planner = true, s.Reconfigure.planner(t)
	o.Client.ReportEvery = s.Reconfigure.reportEvery(t)
}

// ReconfigResult is a run's share of the reconfiguration output.
type ReconfigResult struct {
	// Hours are the run's Gets per hour of the run (of the scaled day
	// under --scale), with the utility they delivered, summed.
	Hours []HourUtility `json:"hours,omitempty"`
	// Moves are the moves of the table's primaries the service committed
	// during the unit's run.
	Moves []MoveRecord `json:"moves,omitempty"`
	// Service is what the configuration service's members sent and
	// synced, summed, per second of the world's life.
	Service *ServiceCost `json:"service,omitempty"`
}

// ServiceCost is the configuration service's steady cost in a world:
// its members' raft messages, fsyncs, lease renewals granted and
// utility reports received, per second of virtual time, all members
// summed.
type ServiceCost struct {
	RaftPerS     float64 `json:"raft_per_s"`
	FsyncsPerS   float64 `json:"fsyncs_per_s"`
	RenewalsPerS float64 `json:"renewals_per_s"`
	ReportsPerS  float64 `json:"reports_per_s"`
}

// HourUtility is one hour's Gets and their utility, summed.
type HourUtility struct {
	Hour    int     `json:"hour"`
	Gets    int     `json:"gets"`
	Utility float64 `json:"utility"`
}

// MoveRecord is a tablet's primary as it moved: when the service had
// committed the move (seen within watchEvery), from and to which site.
type MoveRecord struct {
	AtS    float64 `json:"at_s"`
	Tablet int     `json:"tablet"`
	From   string  `json:"from"`
	To     string  `json:"to"`
}

func (reconfigPlugin) outputs() []string { return []string{OutReconfig} }
func (reconfigPlugin) metrics() []string { return nil }

func (reconfigPlugin) validate(s *Scenario) error {
	if r := s.Reconfigure; r != nil {
		if r.ReportEvery < 0 {
			return invalid("reconfigure.report_every", "%v is negative", r.ReportEvery)
		}
		if err := r.planner(timing{scale: 1}).Validate(); err != nil {
			return invalid("reconfigure", "%v", err)
		}
	}
	if s.wants(OutReconfig) && len(s.Active) == 0 {
		return invalid("outputs", "%s needs active hours for the client sites", OutReconfig)
	}
	return nil
}

// record keeps each run's Gets per hour, and watches the primaries.
func (reconfigPlugin) record(u *unit, t timing) unitPart {
	if !u.s.wants(OutReconfig) {
		return nil
	}
	return &reconfigPart{u: u, hour: t.scaled(time.Hour), hours: map[*run]map[int]*HourUtility{}}
}

// reconfigPart sums a unit's Gets per run and hour, and records the
// moves of the table's primaries.
type reconfigPart struct {
	u     *unit
	hour  time.Duration
	hours map[*run]map[int]*HourUtility
	moves []MoveRecord
	last  map[int]string // each tablet's primary when last seen
	// cost, set by the watch, is the service's cost when the run ends.
	cost func() *ServiceCost
}

func (*reconfigPart) keepsOps() bool { return false }

func (p *reconfigPart) op(r *run, op *driver.Op, recorded bool) {
	if !recorded || op.Kind != driver.Get {
		return
	}
	h := int(op.Start / p.hour)
	if p.hours[r] == nil {
		p.hours[r] = map[int]*HourUtility{}
	}
	hu := p.hours[r][h]
	if hu == nil {
		hu = &HourUtility{Hour: h}
		p.hours[r][h] = hu
	}
	_, utility := metUtility(op)
	hu.Gets++
	hu.Utility += utility
}

func (p *reconfigPart) finish(*driver.Recorder) {
	for _, r := range p.u.runs {
		for _, h := range slices.Sorted(maps.Keys(p.hours[r])) {
			r.r.Hours = append(r.r.Hours, *p.hours[r][h])
		}
		r.r.Moves = p.moves
		if p.cost != nil {
			r.r.Service = p.cost()
		}
	}
}

// serviceCost sums the members' metrics over secs seconds of their life.
func serviceCost(members []config.Metrics, secs float64) *ServiceCost {
	var m config.Metrics
	for _, x := range members {
		m.RaftSent += x.RaftSent
		m.Fsyncs += x.Fsyncs
		m.RenewalsGranted += x.RenewalsGranted
		m.UtilityReports += x.UtilityReports
	}
	return &ServiceCost{RaftPerS: float64(m.RaftSent) / secs, FsyncsPerS: float64(m.Fsyncs) / secs,
		RenewalsPerS: float64(m.RenewalsGranted) / secs, ReportsPerS: float64(m.UtilityReports) / secs}
}

// watchEvery is how often the watch reads the service's tables.
const watchEvery = 10 * time.Second

// watch reads, every watchEvery of virtual time, the table's primaries
// as the service's most advanced member has applied them, and records
// each change. It reads and sends nothing, so the run stays as it was.
func (p *reconfigPart) watch(w *harness.World) {
	start := w.Sim.Now()
	var poll func()
	poll = func() {
		statuses, _ := worldMembers(w)
		p.see(w.Sim.Now()-start, primaries(statuses))
		w.Sim.After(watchEvery, poll)
	}
	poll()
	p.cost = func() *ServiceCost {
		_, metrics := worldMembers(w)
		return serviceCost(metrics, w.Sim.Now().Seconds())
	}
}

// worldMembers are the status and metrics of a world's members.
func worldMembers(w *harness.World) ([]config.Status, []config.Metrics) {
	var statuses []config.Status
	var metrics []config.Metrics
	for _, id := range site.Voters(w.Topology.ConfigSites()) {
		if m, err := w.Member(id); err == nil {
			statuses, metrics = append(statuses, m.Status()), append(metrics, m.Metrics())
		}
	}
	return statuses, metrics
}

// see records each tablet whose primary is not the one last seen, as
// moved at (since the run started).
func (p *reconfigPart) see(at time.Duration, primaries []string) {
	if p.last == nil {
		p.last = map[int]string{}
	}
	for i, primary := range primaries {
		if from, ok := p.last[i]; ok && from != primary {
			p.moves = append(p.moves, MoveRecord{AtS: at.Seconds(), Tablet: i, From: from, To: primary})
		}
		p.last[i] = primary
	}
}

// primaries are the sites of the table's primaries, by tablet, as the
// member that has applied the most commands (of statuses) knows them.
func primaries(statuses []config.Status) []string {
	var best config.Status
	for _, st := range statuses {
		if st.Applied > best.Applied {
			best = st
		}
	}
	var out []string
	for _, t := range best.Tables {
		if t.Name != tableName {
			continue
		}
		for _, tb := range t.Tablets {
			out = append(out, siteOf(tb.Primary))
		}
	}
	return out
}

func (reconfigPlugin) tables(s *Scenario, r *Result) []Table {
	if !s.wants(OutReconfig) {
		return nil
	}
	return []Table{hourlyTable(s, r), movesTable(r), serviceTable(r)}
}

func (reconfigPlugin) plots(*Scenario, *Result) ([]Figure, error) { return nil, nil }

// hourlyTable is the utility per Get in each hour of the run, per
// series, with the sites whose load the hour has, and the whole run's.
func hourlyTable(s *Scenario, r *Result) Table {
	names := seriesNames(r)
	t := Table{Name: "reconfig", Title: "Utility per Get by hour, with the primary fixed at each site and with reconfiguration (Pileus 6.2)",
		Header:  append([]string{"hour", "load at"}, names...),
		Caption: "Each series is a world of its own with the same workload and seed; an hour's load comes from the client sites active in it."}
	type sum struct {
		gets    int
		utility float64
	}
	by := map[string]map[int]*sum{}
	last := 0
	for _, run := range r.Runs {
		if by[run.Series] == nil {
			by[run.Series] = map[int]*sum{-1: {}}
		}
		for _, h := range run.Hours {
			if by[run.Series][h.Hour] == nil {
				by[run.Series][h.Hour] = &sum{}
			}
			for _, k := range []int{h.Hour, -1} {
				by[run.Series][k].gets += h.Gets
				by[run.Series][k].utility += h.Utility
			}
			last = max(last, h.Hour)
		}
	}
	cell := func(sr string, h int) string {
		if x := by[sr][h]; x != nil && x.gets > 0 {
			return f3(x.utility / float64(x.gets))
		}
		return ""
	}
	for h := 0; h <= last; h++ {
		row := []string{strconv.Itoa(h), activeAt(s, time.Duration(h)*time.Hour)}
		for _, sr := range names {
			row = append(row, cell(sr, h))
		}
		t.Rows = append(t.Rows, row)
	}
	row := []string{"day", ""}
	for _, sr := range names {
		row = append(row, cell(sr, -1))
	}
	t.Rows = append(t.Rows, row)
	return t
}

// activeAt names the client sites active at hour h of the scenario's
// (unscaled) day.
func activeAt(s *Scenario, h time.Duration) string {
	var out []string
	for _, c := range s.Clients.Sites() {
		if a, ok := s.Active[c]; !ok || (h >= a[0] && h < a[1]) {
			out = append(out, c)
		}
	}
	return fmt.Sprint(out)
}

// movesTable lists each series' moves, at the time of the (unscaled)
// day they were seen.
func movesTable(r *Result) Table {
	seen := fmt.Sprintf("Seen within %v of virtual time (x scale) of the service committing them.", watchEvery)
	if r.Mode == "cluster" {
		seen = fmt.Sprintf("Seen within %v of real time of the service committing them; at is the time of the day (real time / %g).", clusterWatchEvery, r.Scale)
	}
	t := Table{Name: "moves", Title: "Moves of the primaries, per series", Header: []string{"series", "at", "tablet", "from", "to"}, Caption: seen}
	done := map[string]bool{}
	for _, run := range r.Runs {
		if done[run.Series] {
			continue
		}
		done[run.Series] = true
		for _, m := range run.Moves {
			at := time.Duration(m.AtS / r.Scale * float64(time.Second)).Round(time.Minute)
			t.Rows = append(t.Rows, []string{run.Series, strings.TrimSuffix(at.String(), "0s"), strconv.Itoa(m.Tablet), m.From, m.To})
		}
	}
	return t
}

// serviceTable is the configuration service's cost per series.
func serviceTable(r *Result) Table {
	t := Table{Name: "service", Title: "The configuration service's cost per second, all members summed",
		Header:  []string{"series", "raft messages/s", "fsyncs/s", "renewals/s", "reports/s"},
		Caption: "Over the world's virtual life, table creation and load included; a report is counted at each member it reaches."}
	done := map[string]bool{}
	for _, run := range r.Runs {
		if done[run.Series] || run.Service == nil {
			continue
		}
		done[run.Series] = true
		c := run.Service
		t.Rows = append(t.Rows, []string{run.Series, f1(c.RaftPerS), f1(c.FsyncsPerS), f2(c.RenewalsPerS), f2(c.ReportsPerS)})
	}
	return t
}
