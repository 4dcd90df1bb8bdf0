package experiment

import (
	"fmt"
	"strings"

	"github.com/cosla/cosla/internal/core/clientcore"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/lab/driver"
)

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
// table's replica sites (primary first).
func (pileusPlugin) record(u *unit, _ timing) unitPart {
	b := breakdownPart{sites: u.s.replicaSites(), target: map[*run]map[int]map[string]int{}}
	for _, r := range u.runs {
		if r.variant.strategy == clientcore.Pileus {
			b.target[r] = map[int]map[string]int{}
		}
	}
	if len(b.target) == 0 {
		return nil
	}
	return b
}

// breakdownPart counts, for each Pileus run, the Gets that targeted each
// subSLA at each site.
type breakdownPart struct {
	sites  []string
	target map[*run]map[int]map[string]int // run -> subSLA targeted -> site -> Gets
}

func (breakdownPart) keepsOps() bool { return false }

func (b breakdownPart) op(r *run, op *driver.Op, recorded bool) {
	target, ok := b.target[r]
	if !ok || !recorded || op.Kind != driver.Get || op.Target < 0 {
		return
	}
	if target[op.Target] == nil {
		target[op.Target] = map[string]int{}
	}
	target[op.Target][siteOf(wire.NodeID(op.Node))]++
}

// finish fills each run's breakdown from its Met fractions, which the
// engine's recorder has finished.
func (b breakdownPart) finish(*driver.Recorder) {
	for r, target := range b.target {
		if r.r.Gets == 0 {
			continue
		}
		n := float64(r.r.Gets)
		for i := range r.r.Met {
			row := BreakdownRow{Target: i + 1, GetsPct: map[string]float64{}, MetPct: 100 * r.r.Met[i]}
			for _, site := range b.sites {
				row.GetsPct[site] = 100 * float64(target[i][site]) / n
			}
			r.r.Breakdown = append(r.r.Breakdown, row)
		}
	}
}
