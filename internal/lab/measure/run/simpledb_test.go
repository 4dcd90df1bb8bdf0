package run

import (
	"bytes"
	"fmt"
	"os"
	"testing"

	"github.com/cosla/cosla/internal/lab/measure"
)

// simpleDB runs the simpledb preset once per seed and caches it: the run
// takes a few seconds of real time.
var simpleDBRuns = map[uint64]SimResult{}

func simpleDB(t *testing.T, seed uint64) SimResult {
	t.Helper()
	if r, ok := simpleDBRuns[seed]; ok {
		return r
	}
	res, err := Sim(SimOptions{Workload: SimpleDBWorkload(), Seed: seed})
	if err != nil {
		t.Fatalf("%v; rerun with: go test ./internal/lab/measure/run -run %s (seed %d)", err, t.Name(), seed)
	}
	simpleDBRuns[seed] = res
	return res
}

// TestSimpleDBReproducesWada checks the simpledb preset against Wada
// 2.1.1 (Table 1, Table 2) within tolerances.
func TestSimpleDBReproducesWada(t *testing.T) {
	const seed = 1
	res := simpleDB(t, seed)
	rep := measure.Analyze(res.Ops, AnalysisConfig())
	s := Summarize(res.Ops, rep, "eventual", "consistent")
	var b bytes.Buffer
	_ = s.WriteText(&b, &PaperSimpleDB)
	t.Logf("seed %d, %d ops\n%s", seed, len(res.Ops), b.String())
	if os.Getenv("MEASURE_VERBOSE") != "" {
		fmt.Println(rep.String())
	}
	check := func(name string, v, lo, hi float64) {
		t.Helper()
		if v < lo || v > hi {
			t.Errorf("%s = %.4f, want in [%.2f, %.2f] (seed %d; rerun: go test ./internal/lab/measure/run -run TestSimpleDBReproducesWada)", name, v, lo, hi, seed)
		}
	}
	check("p_fresh_0_450ms", s.PFresh0To450MS, 0.25, 0.42)
	check("p_fresh_510_1000ms", s.PFresh510To1000MS, 0.99, 1)
	check("p_fresh_500_1000ms", s.PFresh500To1000MS, 0.99, 1)
	check("p_fresh_consistent", s.PFreshConsistent, 1, 1)
	check("mr_violation_fraction", s.MRViolationFraction, 0.15, 0.30)
	check("ryw_violation_fraction", s.RYWViolationFraction, 0.01, 0.5)
	check("gamma_positive_fraction", s.GammaPositiveFraction, 0.01, 1)
	if s.Reads0To450MS < 1000 || s.MRPairs < 1000 || s.ReadsConsistent < 10000 || s.RYWChecked < 1000 || s.GammaValues < 100 {
		t.Errorf("too few observations: %+v", s)
	}
}
