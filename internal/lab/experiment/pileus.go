package experiment

import (
	"fmt"
	"strings"

	"github.com/cosla/cosla/internal/core/clientcore"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/lab/driver"
)

// defaultTopology is the topology of a scenario that names none:
// Pileus's four sites (5.1), where the lab began.
const defaultTopology = "pileus4"

// PileusTables is the Pileus section 5 comparison that `cosla demo`
// runs: the pileus-table1 and pileus-table2 scenarios as one, both SLAs from every client site with the paper's four
// strategies (Pileus, Primary, Random, Closest), and the paper's numbers
// of both.
func PileusTables() (*Scenario, error) {
	t1, err := presetScenario("pileus-table1")
	if err != nil {
		return nil, err
	}
	t2, err := presetScenario("pileus-table2")
	if err != nil {
		return nil, err
	}
	s := *t1
	s.Name = "pileus-tables"
	s.Description = "Pileus 5.2-5.3: shopping-cart and password-checking SLAs, utility per client site and strategy (Figs 11-12, Tables 1-2)"
	s.SLAs = append(append([]SLASpec(nil), t1.SLAs...), t2.SLAs...)
	s.Strategies = nil
	for _, st := range clientcore.Strategies {
		s.Strategies = append(s.Strategies, st.String())
	}
	s.Paper = PaperSpec{Values: append(append([]PaperValue(nil), t1.Paper.Values...), t2.Paper.Values...)}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

// PaperUtility is the average utility the paper reports for the run's
// SLA, client site and strategy, if it survives in its text.
func (s *Scenario) PaperUtility(r RunResult) (float64, bool) {
	return s.paperValue("avg_utility", r.SLA, r.Client, r.Strategy, 0, "", r.Factor)
}

// strategy reads the strategies of Pileus 5.1 (pileus and the fixed
// ones it is compared with: primary, random, closest) with their
// options, beyond the paper: "pileus+retry" is Pileus with retry after
// a miss (clientcore.GetOptions.RetryAfterMiss), "pileus+hedge" with
// hedged Gets at a cost of hedgeCost per extra request, "pileus+probe"
// (or "closest+probe": the strategies that read the monitor) with
// adaptive probing (clientcore.Options.AdaptiveProbing, Pileus 6.1);
// options combine, as in "pileus+retry+probe".
func (pileusPlugin) strategy(_ *Scenario, name string, _ timing) (strategyVariant, bool, error) {
	base, options, _ := strings.Cut(name, "+")
	strategy, err := clientcore.ParseStrategy(base)
	if err != nil {
		return strategyVariant{}, false, nil
	}
	v := strategyVariant{strategy: strategy}
	for option := range strings.SplitSeq(options, "+") {
		switch {
		case option == "":
		case option == "retry" && strategy == clientcore.Pileus:
			v.get.RetryAfterMiss = true
		case option == "hedge" && strategy == clientcore.Pileus:
			v.get.HedgeCost = hedgeCost
		case option == "probe" && (strategy == clientcore.Pileus || strategy == clientcore.Closest):
			v.adaptiveProbing = true
		case option == "noquorum" && strategy == clientcore.Pileus:
			v.get.NoQuorum = true
		default:
			return strategyVariant{}, true, fmt.Errorf("unknown option %q of strategy %q (want pileus+retry, pileus+hedge, pileus+probe, pileus+noquorum, closest+probe)", option, base)
		}
	}
	return v, true, nil
}

func (pileusPlugin) strategyNames() string {
	return "pileus, pileus+retry, pileus+hedge, pileus+probe, pileus+noquorum, primary, random, closest"
}

// hedgeCost is the price, in utility, of the extra request of a hedged
// Get in the pileus+hedge strategy. Section 6.3 leaves it to the
// application; 0.1 hedges when a second node adds a tenth of the top
// subSLA's utility.
const hedgeCost = 0.1

// record is Pileus's share of a unit: the breakdown of each of its
// Pileus runs (Tables 1-2), the subSLA each Get targeted at each of the
// table's replica sites (primary first); with a schedule, every run's
// timeline of Gets and its adaptation to each event (5.4).
func (pileusPlugin) record(u *unit, _ timing) unitPart {
	p := &pileusPart{u: u, sites: replicaSites(u.s), target: map[*run]map[int]map[string]int{}}
	for _, r := range u.runs {
		if r.variant.strategy == clientcore.Pileus {
			p.target[r] = map[int]map[string]int{}
		}
	}
	if len(u.s.Schedule) > 0 {
		p.points = map[*run][]GetPoint{}
	}
	if len(p.target) == 0 && p.points == nil {
		return nil
	}
	return p
}

// pileusPart counts, for each Pileus run, the Gets that targeted each
// subSLA at each site, and keeps each run's timeline.
type pileusPart struct {
	u      *unit
	sites  []string
	target map[*run]map[int]map[string]int // run -> subSLA targeted -> site -> Gets
	points map[*run][]GetPoint             // nil without a schedule
}

func (*pileusPart) keepsOps() bool { return false }

// op records a Get; its completion is its time in the timeline.
func (p *pileusPart) op(r *run, op *driver.Op, recorded bool) {
	if !recorded || op.Kind != driver.Get {
		return
	}
	site := siteOf(wire.NodeID(op.Node))
	if target, ok := p.target[r]; ok && op.Target >= 0 {
		if target[op.Target] == nil {
			target[op.Target] = map[string]int{}
		}
		target[op.Target][site]++
	}
	if p.points != nil {
		met, utility := metUtility(op)
		p.points[r] = append(p.points[r], GetPoint{AtS: op.End.Seconds(), Utility: utility, Target: op.Target + 1,
			Node: site, Met: met + 1, RTTMS: ms(op.RTT)})
	}
}

// finish fills each run's breakdown from its Met fractions, which the
// engine's recorder has finished, and its timeline.
func (p *pileusPart) finish(*driver.Recorder) {
	for _, r := range p.u.runs {
		if r.r.Gets == 0 {
			continue
		}
		if target, ok := p.target[r]; ok {
			r.r.Breakdown = breakdown(r.r, target, p.sites)
		}
		if p.points != nil {
			r.r.Events, r.r.Timeline = p.u.events, p.points[r]
			r.r.Adaptation = adaptation(p.u.events, p.points[r], p.u.s.Adapt.Gets)
		}
	}
}

// breakdown is a run's rows of Tables 1-2 from the Gets that targeted
// each subSLA at each site.
func breakdown(r RunResult, target map[int]map[string]int, sites []string) []BreakdownRow {
	var out []BreakdownRow
	n := float64(r.Gets)
	for i := range r.Met {
		row := BreakdownRow{Target: i + 1, GetsPct: map[string]float64{}, MetPct: 100 * r.Met[i]}
		for _, site := range sites {
			row.GetsPct[site] = 100 * float64(target[i][site]) / n
		}
		out = append(out, row)
	}
	return out
}
