package config

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"
)

// SLA-driven reconfiguration (Pileus section 6.2, which names it and
// leaves it open): clients report, per tablet, the utility their
// operations would have received with the primary at each site, and the
// service's leader moves a primary (by planned switchover) to the site
// that would deliver the most, when that gain holds.

// PlannerOptions configures the planner. Pileus 6.2 gives no numbers; the
// defaults are ours.
type PlannerOptions struct {
	// Window is how long reports are summed before the planner decides.
	// Default 1m.
	Window time.Duration
	// Gain is how much more utility per operation another site must
	// deliver than the primary's, over a window, for the window to count
	// towards a move. Default 0.05 (a subSLA's utility is at most 1).
	Gain float64
	// Hold is the number of windows in a row one site must lead by Gain
	// before the tablet moves there (hysteresis). Default 3.
	Hold int
	// MinInterval is the least time between two moves of one tablet.
	// Default 15m.
	MinInterval time.Duration
	// MinOps is the least number of reported operations a window needs
	// to count at all. Default 100.
	MinOps int64
}

// EnsureDefaults returns a copy of o with every unset field given its
// default.
func (o PlannerOptions) EnsureDefaults() PlannerOptions {
	if o.Window == 0 {
		o.Window = time.Minute
	}
	if o.Gain == 0 {
		o.Gain = 0.05
	}
	if o.Hold == 0 {
		o.Hold = 3
	}
	if o.MinInterval == 0 {
		o.MinInterval = 15 * time.Minute
	}
	if o.MinOps == 0 {
		o.MinOps = 100
	}
	return o
}

// Validate names the first invalid field.
func (o PlannerOptions) Validate() error {
	switch {
	case o.Window <= 0 || o.MinInterval < 0:
		return fmt.Errorf("config: planner window %v must be positive and min interval %v not negative", o.Window, o.MinInterval)
	case o.Gain <= 0 || o.Hold < 1 || o.MinOps < 0:
		return fmt.Errorf("config: planner gain %v and hold %d must be positive", o.Gain, o.Hold)
	}
	return nil
}

// UtilityReport is one client's operations on one tablet since its last
// report: how many, and the utility they would have received, summed,
// with the tablet's primary at each site. Its size is bounded by the
// number of sites.
type UtilityReport struct {
	Table   string             `json:"table"`
	Tablet  int                `json:"tablet"`
	Ops     int64              `json:"ops"`
	Utility map[string]float64 `json:"utility"`
}

// Move is a planned switchover: Table's tablet Tablet to Site, which
// delivered Gain more utility per operation than the primary's site over
// the last windows.
type Move struct {
	Table  string  `json:"table"`
	Tablet int     `json:"tablet"`
	Site   string  `json:"site"`
	Gain   float64 `json:"gain"`
}

// Planner decides SLA-driven moves. It runs at the service's leader; a new
// leader starts with an empty planner, which only delays a move by Hold
// windows.
type Planner struct {
	opts     PlannerOptions
	sums     map[tabletName]*utilitySum
	leader   map[tabletName]string // the site that led the last windows
	leads    map[tabletName]int    // for how many windows in a row
	lastMove map[tabletName]time.Time
}

type tabletName struct {
	table  string
	tablet int
}

type utilitySum struct {
	ops     int64
	utility map[string]float64
}

// NewPlanner returns a planner with opts (EnsureDefaults applied).
func NewPlanner(opts PlannerOptions) *Planner {
	return &Planner{opts: opts.EnsureDefaults(), sums: map[tabletName]*utilitySum{}, leader: map[tabletName]string{},
		leads: map[tabletName]int{}, lastMove: map[tabletName]time.Time{}}
}

// Add adds a client's report to the current window.
func (p *Planner) Add(r UtilityReport) {
	k := tabletName{r.Table, r.Tablet}
	s := p.sums[k]
	if s == nil {
		s = &utilitySum{utility: map[string]float64{}}
		p.sums[k] = s
	}
	s.ops += r.Ops
	for site, u := range r.Utility {
		s.utility[site] += u
	}
}

// EndWindow closes the window at now and returns the moves it decides, in
// tablet order. primarySite names the site of a tablet's primary now.
func (p *Planner) EndWindow(now time.Time, primarySite func(table string, tablet int) string) []Move {
	var moves []Move
	keys := slices.SortedFunc(maps.Keys(p.sums), func(a, b tabletName) int {
		return cmp.Or(cmp.Compare(a.table, b.table), cmp.Compare(a.tablet, b.tablet))
	})
	for _, k := range keys {
		if m, ok := p.decide(k, now, primarySite(k.table, k.tablet)); ok {
			moves = append(moves, m)
		}
	}
	clear(p.sums)
	return moves
}

func (p *Planner) decide(k tabletName, now time.Time, current string) (Move, bool) {
	s := p.sums[k]
	if s.ops < p.opts.MinOps {
		return Move{}, false
	}
	best, bestU := current, s.utility[current]
	for _, site := range slices.Sorted(maps.Keys(s.utility)) {
		if u := s.utility[site]; u > bestU {
			best, bestU = site, u
		}
	}
	gain := (bestU - s.utility[current]) / float64(s.ops)
	if best == current || gain <= p.opts.Gain {
		delete(p.leader, k)
		delete(p.leads, k)
		return Move{}, false
	}
	if p.leader[k] != best {
		p.leader[k], p.leads[k] = best, 0
	}
	p.leads[k]++
	if p.leads[k] < p.opts.Hold {
		return Move{}, false
	}
	if last, ok := p.lastMove[k]; ok && now.Sub(last) < p.opts.MinInterval {
		return Move{}, false
	}
	p.lastMove[k] = now
	delete(p.leader, k)
	delete(p.leads, k)
	return Move{Table: k.table, Tablet: k.tablet, Site: best, Gain: gain}, true
}
