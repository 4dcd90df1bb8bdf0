package experiment

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const testSeed = 1

// longFlag runs the paper checks at the scales they were written for,
// and the long runs (several minutes). Without it every preset still
// runs, scaled down (TestPresetsScaled), with the checks that hold at
// that scale.
var longFlag = flag.Bool("long", false, "run the paper checks at full scale and the long runs (minutes)")

// scaleFor is a test's scale: full with -long, short without.
func scaleFor(full, short float64) float64 {
	if *longFlag {
		return full
	}
	return short
}

// needLong skips a test that runs only with -long.
func needLong(t *testing.T, why string) {
	t.Helper()
	if !*longFlag {
		t.Skipf("%s: runs with -long", why)
	}
}

// presetScale is the scale TestPresetsScaled runs every preset at, and
// causalPresetScale a causal table's.
const (
	presetScale       = 0.01
	causalPresetScale = 0.1
)

// presetKeys bounds the keys of a preset in TestPresetsScaled: a run
// loads its keys whatever its scale, and a dConssandra preset loads
// 50,000 with an fsync each.
const presetKeys = 500

// runScaledPreset runs a shipped scenario at presetScale with at most
// presetKeys keys (as cluster.keys shrinks a cluster run).
func runScaledPreset(t *testing.T, name string) (*Scenario, *Result) {
	t.Helper()
	s, err := Resolve(name)
	if err != nil {
		t.Fatal(err)
	}
	s = derive(s, func(c *Scenario) { c.Workload.Keys = min(c.Workload.Keys, presetKeys) })
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	scale, how := presetScale, fmt.Sprintf("workload.keys %d", presetKeys)
	if s.Causal != nil {
		// Thousands of sessions overload a causal world in its first
		// milliseconds: run the simulator's model of the preset's
		// cluster run (cluster.sessions_scale, replicas_per_site), long
		// enough for its far sites' Gets to return.
		s, scale, how = s.ClusterModel(), causalPresetScale, how+", as its cluster model"
	}
	r, err := Run(s, RunOptions{Seed: testSeed, Scale: scale})
	if err != nil {
		t.Fatalf("%v\nreproduce with: %s with %s", err, repro(name, scale), how)
	}
	return s, r
}

// scaledChecks are the paper checks that hold at presetScale, by preset.
var scaledChecks = map[string]func(*testing.T, *Scenario, *Result){
	"pileus-table1": func(t *testing.T, s *Scenario, r *Result) {
		checkPileusTables(t, "pileus-table1", presetScale, s, r)
	},
	"pileus-table2": func(t *testing.T, s *Scenario, r *Result) {
		checkPileusTables(t, "pileus-table2", presetScale, s, r)
	},
	"pileus-fig3":  func(t *testing.T, s *Scenario, r *Result) { checkFig3(t, presetScale, s, r) },
	"pileus-fig14": func(t *testing.T, _ *Scenario, r *Result) { checkFig14(t, r) },
}

// TestPresetsScaled runs every shipped preset in the simulator at a
// small scale, with few keys, and writes its outputs: every run has a trace hash and
// the outputs it asks for give tables and files. The paper checks run at
// full scale with -long; TestSameSeedSameResults checks that a seed
// fixes results.json. The presets run in parallel: each simulation is
// a world of its own, and the karma ones take most of the package's time.
func TestPresetsScaled(t *testing.T) {
	ps, err := Presets()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		t.Run(p.Name, func(t *testing.T) {
			t.Parallel()
			s, r := runScaledPreset(t, p.Name)
			if len(r.Runs) == 0 || r.TraceHash == "" {
				t.Fatalf("%d runs, trace hash %q; want runs and a hash\nreproduce with: %s", len(r.Runs), r.TraceHash, repro(p.Name, presetScale))
			}
			for _, run := range r.Runs {
				if run.TraceHash == "" {
					t.Errorf("%s/%s %s: no trace hash", run.Client, run.Strategy, run.Point)
				}
			}
			if len(Tables(s, r)) == 0 {
				t.Errorf("outputs %v gave no table", s.Outputs)
			}
			if check, ok := scaledChecks[p.Name]; ok {
				check(t, s, r)
			}
			files, err := Write(t.TempDir(), s, r, WriteOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(files) < 3 {
				t.Errorf("wrote %v; want results.json, report.md and the tables", files)
			}
		})
	}
}

// runPreset runs a shipped scenario shortened by scale.
func runPreset(t *testing.T, name string, scale float64) (*Scenario, *Result) {
	t.Helper()
	s, err := Resolve(name)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(s, RunOptions{Seed: testSeed, Scale: scale})
	if err != nil {
		t.Fatalf("%v\nreproduce with: cosla experiment run %s --seed %d --scale %g", err, name, testSeed, scale)
	}
	return s, r
}

func repro(name string, scale float64) string {
	return fmt.Sprintf("cosla experiment run %s --seed %d --scale %g", name, testSeed, scale)
}

// checkPileusBest asserts that in every (SLA, client) group Pileus delivers
// at least the utility of the best fixed strategy, with a small tolerance
// for short runs. Pileus's options beyond the paper (pileus+...) are not
// fixed strategies.
func checkPileusBest(t *testing.T, name string, scale float64, r *Result) {
	t.Helper()
	type group struct {
		sla, client string
	}
	pileus := map[group]float64{}
	best := map[group]float64{}
	for _, run := range r.Runs {
		g := group{run.SLA, run.Client}
		switch {
		case run.Strategy == "pileus":
			pileus[g] = run.AvgUtility
		case strings.HasPrefix(run.Strategy, "pileus+"):
		default:
			best[g] = math.Max(best[g], run.AvgUtility)
		}
		var sum float64
		for _, m := range run.Met {
			sum += m
		}
		if math.Abs(sum+run.Unmet-1) > 1e-9 {
			t.Errorf("%s/%s/%s: met %v and unmet %v do not add up to 1", run.SLA, run.Client, run.Strategy, run.Met, run.Unmet)
		}
	}
	if len(pileus) == 0 {
		t.Fatalf("%s: no Pileus runs", name)
	}
	for g, u := range pileus {
		if u+0.01 < best[g] {
			t.Errorf("%s/%s: Pileus utility %.3f below the best fixed strategy's %.3f\nreproduce with: %s", g.sla, g.client, u, best[g], repro(name, scale))
		}
	}
}

func TestPileusTables(t *testing.T) {
	needLong(t, "pileus-table1 and pileus-table2 at scale 0.1 (TestPresetsScaled runs them small)")
	for _, name := range []string{"pileus-table1", "pileus-table2"} {
		t.Run(name, func(t *testing.T) {
			const scale = 0.1
			s, r := runPreset(t, name, scale)
			checkPileusTables(t, name, scale, s, r)
		})
	}
}

// checkPileusTables checks a run of pileus-table1 or pileus-table2: 24
// runs, Pileus at least as good as every fixed strategy and each option
// as plain Pileus, the breakdown covering every Get, and (with -long)
// Pileus's utility within 0.03 of the paper's.
func checkPileusTables(t *testing.T, name string, scale float64, s *Scenario, r *Result) {
	t.Helper()
	if len(r.Runs) != 24 {
		t.Fatalf("%d runs, want 24 (4 sites x 6 strategies)", len(r.Runs))
	}
	checkPileusBest(t, name, scale, r)
	plain := map[string]float64{}
	for _, run := range r.Runs {
		if !strings.HasPrefix(run.Strategy, "pileus") {
			if len(run.Breakdown) != 0 {
				t.Errorf("%s/%s: breakdown for a fixed strategy", run.Client, run.Strategy)
			}
			continue
		}
		if run.Strategy == "pileus" {
			plain[run.Client] = run.AvgUtility
			// The paper's Tables 1-2, within 0.03 (the bound; a
			// short run is a little noisier).
			if p, ok := s.PaperUtility(run); !ok {
				t.Errorf("%s: no paper utility", run.Client)
			} else if *longFlag && math.Abs(run.AvgUtility-p) > 0.03 {
				t.Errorf("%s: Pileus utility %.3f, paper %.2f\nreproduce with: %s", run.Client, run.AvgUtility, p, repro(name, scale))
			}
		} else if run.AvgUtility < plain[run.Client]-0.01 {
			t.Errorf("%s/%s: utility %.3f below plain Pileus's %.3f\nreproduce with: %s", run.Client, run.Strategy, run.AvgUtility, plain[run.Client], repro(name, scale))
		}
		var gets, met float64
		for _, b := range run.Breakdown {
			met += b.MetPct
			for _, p := range b.GetsPct {
				gets += p
			}
		}
		if math.Abs(gets-100) > 1e-6 || math.Abs(met+100*run.Unmet-100) > 1e-6 {
			t.Errorf("%s: breakdown covers %.3f%% of Gets and %.3f%% met, want 100", run.Client, gets, met+100*run.Unmet)
		}
	}
}

func TestPileusFig14(t *testing.T) {
	needLong(t, "96 runs of pileus-fig14 at scale 0.2")
	const scale = 0.2
	_, r := runPreset(t, "pileus-fig14", scale)
	checkFig14(t, r)
	checkPileusBest(t, "pileus-fig14", scale, r)
}

func checkFig14(t *testing.T, r *Result) {
	t.Helper()
	if len(r.Runs) != 6*4*4 {
		t.Fatalf("%d runs, want 96 (6 factors x 4 sites x 4 strategies)", len(r.Runs))
	}
}

// TestPileusFig3 checks that strong Gets take the round trip to the
// primary and eventual Gets the round trip to the closest node.
func TestPileusFig3(t *testing.T) {
	needLong(t, "pileus-fig3 at scale 0.1 (TestPresetsScaled runs it small)")
	const scale = 0.1
	s, r := runPreset(t, "pileus-fig3", scale)
	checkFig3(t, scale, s, r)
}

func checkFig3(t *testing.T, scale float64, s *Scenario, r *Result) {
	t.Helper()
	closest := map[string]float64{"us": 1, "england": 1, "india": 1, "china": 160}
	for _, run := range r.Runs {
		var want float64
		switch run.SLA {
		case "strong":
			l, _ := s.topo.Link(run.Client, "england")
			want = float64(l.RTT.Milliseconds())
			if run.Client == "england" {
				want = 1
			}
		case "eventual":
			want = closest[run.Client]
		default:
			continue
		}
		if math.Abs(run.AvgLatencyMS-want) > 0.05*want+0.5 {
			t.Errorf("%s Gets from %s: %.1f ms, want about %.0f ms\nreproduce with: %s", run.SLA, run.Client, run.AvgLatencyMS, want, repro("pileus-fig3", scale))
		}
	}
}

// TestPileusFig13 checks that the client adapts after every change: it
// settles on a choice of highest attainable utility, and then delivers
// about that utility.
func TestPileusFig13(t *testing.T) {
	needLong(t, "pileus-fig13 at full scale")
	const scale = 1 // the client's 2-minute RTT window sets the pace
	_, r := runPreset(t, "pileus-fig13", scale)
	if len(r.Runs) != 4 {
		t.Fatalf("%d runs, want 4 (pileus, pileus+retry, pileus+hedge, pileus+probe)", len(r.Runs))
	}
	want := []float64{0.5, 0.25, 0.5, 1}
	for _, run := range r.Runs {
		if len(run.Adaptation) != len(want) {
			t.Fatalf("%s: %d adaptations, want %d", run.Strategy, len(run.Adaptation), len(want))
		}
		for i, a := range run.Adaptation {
			if a.BestUtility != want[i] {
				t.Errorf("%s %s: best attainable utility %.2f, want %.2f", run.Strategy, a.Event, a.BestUtility, want[i])
			}
			if !a.Adapted {
				t.Errorf("%s %s: Pileus did not adapt (best %v)\nreproduce with: %s", run.Strategy, a.Event, a.Best, repro("pileus-fig13", scale))
				continue
			}
			// 0.03: the primary's jitter makes about 1-2% of its Gets miss
			// 150 ms even when it is the right choice (Table 2: 0.6%).
			if a.UtilityAfter < a.BestUtility-0.03 {
				t.Errorf("%s %s: utility %.3f after adapting, best attainable %.2f", run.Strategy, a.Event, a.UtilityAfter, a.BestUtility)
			}
		}
	}
	// Retry after a miss and hedging (beyond the paper) spend extra
	// requests to turn misses into met subSLAs: more utility, fewer misses.
	plain := r.Runs[0]
	for _, run := range r.Runs[1:3] {
		if run.ExtraRequests == 0 || run.AvgUtility <= plain.AvgUtility || run.Unmet >= plain.Unmet {
			t.Errorf("%s: utility %.3f (pileus %.3f), unmet %.3f (pileus %.3f), %d extra requests; want more utility, fewer misses",
				run.Strategy, run.AvgUtility, plain.AvgUtility, run.Unmet, plain.Unmet, run.ExtraRequests)
		}
	}
	if plain.ExtraRequests != 0 {
		t.Errorf("pileus: %d extra requests, want 0", plain.ExtraRequests)
	}
	// Adaptive probing (beyond the paper, 6.1) probes the stable idle
	// nodes less often, and after #5 confirms the local node's return to
	// 1 ms with two probes and forgets its 300 ms samples, where the plain
	// client waits for them to leave its 2-minute window (about a minute
	// here). After #6 it gains nothing: the idle primary, stable until
	// then, was being probed only every 40 s, so the change is found
	// about when the plain client's old samples leave its window.
	probe := r.Runs[3]
	if probe.Probes >= plain.Probes {
		t.Errorf("pileus+probe: %d probes, pileus %d; want fewer\nreproduce with: %s", probe.Probes, plain.Probes, repro("pileus-fig13", scale))
	}
	if p, q := probe.Adaptation[2], plain.Adaptation[2]; !p.Adapted || !q.Adapted || p.SecondsToAdapt > q.SecondsToAdapt/2 {
		t.Errorf("pileus+probe %s: adapted in %.1f s, pileus in %.1f s; want under half\nreproduce with: %s",
			p.Event, p.SecondsToAdapt, q.SecondsToAdapt, repro("pileus-fig13", scale))
	}
}

// TestSameSeedSameResults checks that a seed fixes results.json, and that
// a run writes every file.
func TestSameSeedSameResults(t *testing.T) {
	// Hedged and retried Gets have timers of their own: their traces too
	// must be the same in every run.
	hedgeScale := scaleFor(0.1, 0.03)
	_, hedged := runPreset(t, "pileus-fig13", hedgeScale)
	_, hedgedAgain := runPreset(t, "pileus-fig13", hedgeScale)
	for i, run := range hedged.Runs {
		if again := hedgedAgain.Runs[i].TraceHash; run.TraceHash != again {
			t.Errorf("pileus-fig13 %s, seed %d: trace hash %s, then %s", run.Strategy, testSeed, run.TraceHash, again)
		}
		if run.Strategy == "pileus+hedge" && run.ExtraRequests == 0 {
			t.Errorf("pileus-fig13 pileus+hedge at scale %g: no hedged request, so no timer of its own to check", hedgeScale)
		}
	}
	s, first := runScaledPreset(t, "pileus-table2")
	_, again := runScaledPreset(t, "pileus-table2")
	a, err := MarshalResult(first)
	if err != nil {
		t.Fatal(err)
	}
	b, err := MarshalResult(again)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatalf("seed %d: results.json differs between two runs", testSeed)
	}
	dir := t.TempDir()
	if _, err := Write(dir, s, first, WriteOptions{Command: repro("pileus-table2", presetScale)}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"results.json", "report.md", "tables/utility.csv", "tables/breakdown.csv",
		"plots/utility-password-checking.png", "plots/utility-password-checking.svg"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	report, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	for _, want := range []string{"seed: 1", "cosla experiment run pileus-table2", "| 99.4 |"} {
		if !bytes.Contains(report, []byte(want)) {
			t.Errorf("report.md lacks %q", want)
		}
	}
}

func TestPresetsList(t *testing.T) {
	ps, err := Presets()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range ps {
		names = append(names, p.Name)
		if p.Description == "" {
			t.Errorf("%s: no description", p.Name)
		}
	}
	want := "capacity-lan cpq-fig1-hotspot cpq-fig1 cpq-fig2 cpq-fig3 cpq-sla-quorum cpq-tuner dcon-fig10 dcon-fig11 dcon-fig7 dcon-fig8 dcon-fig9 dcon-table3 dcon-table4 karma-drr karma-fig10 karma-fig11 karma-fig7 karma-fig8 karma-values pileus-fig13 pileus-fig14 pileus-fig3 pileus-reconfig pileus-table1 pileus-table2 pileus-volatile"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("presets %q, want %q", got, want)
	}
}

func TestValidateNamesTheField(t *testing.T) {
	base := "slas: [{sla: password-checking}]\n"
	for _, tc := range []struct {
		name, yaml, field string
	}{
		{"unknown field", base + "bogus: 1\n", "bogus"},
		{"topology", "topology: mars\n" + base, "topology"},
		{"primary", "table: {primary: china}\n" + base, "table.primary"},
		{"no slas", "clients: [us]\n", "slas"},
		{"bad sla", "slas: [{sla: shopping-carts}]\n", "slas[0].sla"},
		{"factor", "slas: [{sla: password-checking, scale: [2], factors: [0.5, -1]}]\n", "slas[0].factors[1]"},
		{"scale rank", "slas: [{sla: password-checking, scale: [4], factors: [2]}]\n", "slas[0].scale[0]"},
		{"increasing", "slas: [{sla: password-checking, scale: [2], factors: [3]}]\n", "slas[0].factors[0]"},
		{"client", base + "clients: [us, mars]\n", "clients[1]"},
		{"strategy", base + "strategies: [pileus, nearest]\n", "strategies[1]"},
		{"cpq probability", base + "strategies: [cpq(1.5)]\n", "strategies[0]"},
		{"ad delay", base + "strategies: [one-one, ad(-1ms)]\n", "strategies[1]"},
		{"tuner target", base + "strategies: [cpq-tune(0s, 0.1)]\n", "strategies[0]"},
		{"tuner without targets", base + "strategies: [cpq-tune]\n", "strategies[0]"},
		{"level above the replicas", base + "strategies: [3-3, quo-4]\n", "strategies[1]"},
		{"cluster targets", base + "targets: {read_p95: 1ms, stale: 0.1}\ncluster: {targets: {read_p95: 0s, stale: 0.1}}\n", "cluster.targets.read_p95"},
		{"cluster targets alone", base + "cluster: {targets: {read_p95: 1ms, stale: 0.1}}\n", "cluster.targets"},
		{"write level", base + "table: {write_level: 5}\n", "table.write_level"},
		{"ops and duration", base + "workload: {ops: 10, duration: 1m}\n", "workload.ops"},
		{"put fraction", base + "workload: {put_fraction: 1.5}\n", "workload.put_fraction"},
		{"event action", base + "schedule: [{at: 1s, action: explode}]\n", "schedule[0].action"},
		{"event end", base + "schedule: [{at: 1s, action: add-rtt, to: mars, rtt: 1s}]\n", "schedule[0].to"},
		{"event rtt", base + "schedule: [{at: 1s, action: set-rtt, to: primary}]\n", "schedule[0].rtt"},
		{"event node", base + "schedule: [{at: 1s, action: crash, node: china/c1}]\n", "schedule[0].node"},
		{"spikes rtt", base + "schedule: [{at: 1s, action: spikes, to: primary, every: 10s, for: 1s, until: 1m}]\n", "schedule[0].rtt"},
		{"spikes every", base + "schedule: [{at: 1s, action: spikes, to: primary, rtt: 1s, for: 1s, until: 1m}]\n", "schedule[0].every"},
		{"spikes for", base + "schedule: [{at: 1s, action: spikes, to: primary, rtt: 1s, every: 10s, for: [2s, 1s], until: 1m}]\n", "schedule[0].for"},
		{"spikes until", base + "schedule: [{at: 1s, action: spikes, to: primary, rtt: 1s, every: 10s, for: 1s}]\n", "schedule[0].until"},
		{"spikes to", base + "schedule: [{at: 1s, action: spikes, rtt: 1s, every: 10s, for: 1s, until: 1m}]\n", "schedule[0].to"},
		{"spikes by gets", base + "schedule: [{after_gets: 5, action: spikes, to: local, rtt: 1s, every: 10s, for: 1s, until: 1m}]\n", "schedule[0].after_gets"},
		{"every without spikes", base + "schedule: [{at: 1s, action: add-rtt, to: primary, rtt: 1s, every: 10s}]\n", "schedule[0].every"},
		{"stalls every", base + "schedule: [{at: 1s, action: stalls, for: 1ms, until: 1m}]\n", "schedule[0].every"},
		{"stalls for", base + "schedule: [{at: 1s, action: stalls, every: 1s, until: 1m}]\n", "schedule[0].for"},
		{"stalls node", base + "schedule: [{at: 1s, action: stalls, node: mars/r1, every: 1s, for: 1ms, until: 1m}]\n", "schedule[0].node"},
		{"stalls until", base + "schedule: [{at: 1s, action: stalls, every: 1s, for: 1ms}]\n", "schedule[0].until"},
		{"stalls link", base + "schedule: [{at: 1s, action: stalls, to: primary, every: 1s, for: 1ms, until: 1m}]\n", "schedule[0]"},
		{"pause for", base + "schedule: [{at: 1s, action: pause, node: primary, for: [1ms, 2ms]}]\n", "schedule[0].for"},
		{"for without spikes", base + "schedule: [{at: 1s, action: crash, node: primary, for: 1s}]\n", "schedule[0].for"},
		{"slow node", base + "schedule: [{at: 1s, action: slow, node: mars/r1, service: 1s}]\n", "schedule[0].node"},
		{"slow service", base + "schedule: [{at: 1s, action: slow, node: primary, service: -1s}]\n", "schedule[0].service"},
		{"service without slow", base + "schedule: [{at: 1s, action: crash, node: primary, service: 1s}]\n", "schedule[0].service"},
		{"output", base + "outputs: [pie]\n", "outputs[0]"},
		{"timeline needs schedule", base + "outputs: [timeline]\n", "outputs"},
		{"paper metric", base + "paper: {values: [{metric: speed, value: 1}]}\n", "paper.values[0].metric"},
		{"sessions", base + "clients: {us: 0}\n", "clients[0]"},
		{"too many sessions", base + "clients: {us: 100000}\n", "clients[0]"},
		{"clients kind", base + "clients: us\n", "clients"},
		{"sweep param", base + "sweep: {param: colour, values: [red]}\n", "sweep.param"},
		{"sweep no values", base + "sweep: {param: sessions}\n", "sweep.values"},
		{"sweep value", base + "sweep: {param: sessions, values: [1, x]}\n", "sweep.values[1]"},
		{"sweep repeated", base + "sweep: {param: rate, values: [10, 10]}\n", "sweep.values[1]"},
		{"repeat", base + "repeat: 1000\n", "repeat"},
		{"rate", base + "workload: {rate: -1}\n", "workload.rate"},
		{"rate and think", base + "workload: {rate: 10, think: 1s}\n", "workload.think"},
		{"warmup", base + "workload: {duration: 1s, warmup: 2s}\n", "workload.warmup"},
		{"value size", base + "workload: {value_size: -1}\n", "workload.value_size"},
		{"distribution", base + "workload: {distribution: gaussian}\n", "workload.distribution"},
		{"ycsb", base + "workload: {ycsb: z}\n", "workload.ycsb"},
		{"ycsb and mix", base + "workload: {ycsb: a, put_fraction: 0.1}\n", "workload.ycsb"},
		{"replicas", base + "table: {replicas: 4}\n", "table"},
		{"partition", base + "table: {partition: random}\n", "table"},
		{"service kind", base + "sim: {service: {teleport: 1us}}\n", "sim.service.teleport"},
		{"service", base + "sim: {service: {get: -1us}}\n", "sim.service.get"},
		{"free", base + "sim: {free: true, fsync: 1ms}\n", "sim.free"},
		{"active site", base + "clients: [us]\nactive: {india: [0h, 1h]}\n", "active.india"},
		{"active hours", base + "clients: [us]\nactive: {us: [2h, 1h]}\n", "active.us"},
		{"active one time", base + "clients: [us]\nactive: {us: [1h]}\n", "active.us"},
		{"active open loop", base + "clients: [us]\nactive: {us: [0h, 1h]}\nworkload: {rate: 10}\n", "active.us"},
		{"reconfigure gain", base + "reconfigure: {gain: -1}\n", "reconfigure"},
		{"reconfigure report", base + "reconfigure: {report_every: -1s}\n", "reconfigure.report_every"},
		{"reconfig needs active", base + "outputs: [reconfig]\n", "outputs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml), "test")
			if err == nil {
				t.Fatalf("no error for:\n%s", tc.yaml)
			}
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.field) {
				t.Errorf("error %q does not name %s", err, tc.field)
			}
		})
	}
}

// TestValidateSaysWhy checks that an error says what is wrong with the
// field, not only which it is: a strategy's own error rather than
// "unknown or repeated", and the bound on operations (a scenario of 1e15
// operations ran for ever without a progress line).
func TestValidateSaysWhy(t *testing.T) {
	base := "slas: [{sla: password-checking}]\n"
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"cpq probability", base + "strategies: [cpq(1.5)]\n", `strategies[0]: strategy "cpq(1.5)": want cpq(P) with P in [0, 1]`},
		{"ad delay", base + "strategies: [ad(-5ms)]\n", `strategies[0]: strategy "ad(-5ms)": want ad(D) with a duration D of 0 or more`},
		{"tuner", base + "strategies: [cpq-tune(5ms)]\n", "want cpq-tune(L,S) with a positive latency L"},
		{"unknown", base + "strategies: [nearest]\n", `unknown strategy "nearest" (want pileus,`},
		{"option", base + "strategies: [primary+hedge]\n", `unknown option "hedge" of strategy "primary"`},
		{"repeated", base + "strategies: [pileus, primary, pileus]\n", `strategies[2]: "pileus" repeats strategies[0]`},
		{"ops", base + "workload: {ops: 1e15}\n", "workload.ops: 1000000000000000 outside 0..1000000"},
		{"cluster ops", base + "cluster: {ops: 2000000}\n", "cluster.ops: 2000000 outside 0..1000000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml), "test")
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Parse: %v; want an error saying %q", err, tc.want)
			}
		})
	}
}

// TestScheduleKinds runs a small scenario with every kind of event, by time
// and by Get count, and checks they are applied in order.
func TestScheduleKinds(t *testing.T) {
	s, err := Parse([]byte(`
slas: [{sla: password-checking}]
clients: [us]
strategies: [pileus]
workload: {keys: 100, ops: 400}
schedule:
  - {after_gets: 20, action: set-rtt, from: us, to: england/r1, rtt: 200ms, jitter: 0s}
  - {after_gets: 40, action: partition, to: india}
  - {after_gets: 60, action: heal, to: india}
  - {after_gets: 80, action: crash, node: india/r1}
  - {after_gets: 100, action: restart, node: india/r1}
  - {after_gets: 120, action: restore, to: primary}
outputs: [utility, timeline]
`), "kinds")
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(s, RunOptions{Seed: testSeed})
	if err != nil {
		t.Fatal(err)
	}
	events := r.Runs[0].Events
	if len(events) != 6 {
		t.Fatalf("%d events applied, want 6: %+v", len(events), events)
	}
	for i, e := range events {
		if e.AfterGets != 20*(i+1) {
			t.Errorf("event %s applied after %d Gets, want %d", e.Label, e.AfterGets, 20*(i+1))
		}
	}
	if !strings.Contains(events[0].Description, "rtt now 200ms") || !strings.Contains(events[5].Description, "rtt now 147ms") {
		t.Errorf("link changes described as %q and %q", events[0].Description, events[5].Description)
	}
	if events[0].BestUtility != 0.5 || events[5].BestUtility != 1 {
		t.Errorf("best utility %.2f with the primary at 200 ms, %.2f restored; want 0.5 and 1", events[0].BestUtility, events[5].BestUtility)
	}
}

// TestPileusVolatile checks the outcome of the volatile scenario (beyond
// the paper): under random latency spikes and a slow node Pileus still
// delivers at least the utility of the best fixed strategy, and each
// option raises it for the India client, whose local reads the spikes and
// the slow node spoil: retrying and hedging with extra requests, adaptive
// probing with none. The U.S. client reads the primary in time
// throughout: there the options must cost it nothing.
func TestPileusVolatile(t *testing.T) {
	needLong(t, "pileus-volatile at full scale")
	const scale = 1 // the spikes and the slow period are set against the clients' 2-minute RTT window
	s, r := runPreset(t, "pileus-volatile", scale)
	if want := len(s.Clients) * len(s.Strategies); len(r.Runs) != want {
		t.Fatalf("%d runs, want %d", len(r.Runs), want)
	}
	checkPileusBest(t, "pileus-volatile", scale, r)
	plain := map[string]RunResult{}
	type spike struct {
		label string
		atS   float64
		sign  int
	}
	spikes := map[string][]spike{}
	for _, run := range r.Runs {
		if run.Strategy == "pileus" {
			plain[run.Client] = run
		}
		// Common random numbers: every run of a client meets the same
		// spikes at the same times.
		var own []spike
		for _, e := range run.Events {
			if e.Spike != 0 {
				own = append(own, spike{e.Label, e.AtS, e.Spike})
			}
		}
		if len(own) < 20 {
			t.Errorf("%s/%s: %d spike events, want dozens", run.Client, run.Strategy, len(own))
		}
		if first, ok := spikes[run.Client]; !ok {
			spikes[run.Client] = own
		} else if !slices.Equal(first, own) {
			t.Errorf("%s/%s: spikes differ from the client's first run", run.Client, run.Strategy)
		}
		if len(run.Adaptation) != 2 {
			t.Errorf("%s/%s: %d adaptations, want 2 (the slow node's events only)", run.Client, run.Strategy, len(run.Adaptation))
		}
	}
	options := 0
	for _, run := range r.Runs {
		if !strings.HasPrefix(run.Strategy, "pileus+") {
			continue
		}
		options++
		p := plain[run.Client]
		gain := run.AvgUtility - p.AvgUtility
		// Adaptive probing spends probes, not extra requests.
		spends := run.ExtraRequests > 0 || run.Strategy == "pileus+probe"
		switch run.Client {
		case "india":
			if gain <= 0 || !spends {
				t.Errorf("%s/%s: utility %.3f (pileus %.3f) with %d extra requests; want more utility (retry and hedge: for extra requests)\nreproduce with: %s",
					run.Client, run.Strategy, run.AvgUtility, p.AvgUtility, run.ExtraRequests, repro("pileus-volatile", scale))
			}
		case "us":
			if gain < -0.005 || run.ExtraRequests > 0 {
				t.Errorf("%s/%s: utility %.3f (pileus %.3f) with %d extra requests; want no loss and none\nreproduce with: %s",
					run.Client, run.Strategy, run.AvgUtility, p.AvgUtility, run.ExtraRequests, repro("pileus-volatile", scale))
			}
		}
	}
	if options != 2*3 {
		t.Errorf("%d runs of options, want 6 (2 clients x retry, hedge, probe)", options)
	}
}
