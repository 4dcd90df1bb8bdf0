package experiment

import (
	"github.com/cosla/cosla/internal/core/clientcore"
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
