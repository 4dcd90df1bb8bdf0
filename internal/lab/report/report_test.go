package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cosla/cosla/internal/lab/measure"
)

const msUS = 1000 // microseconds per millisecond

func wr(client, key, value string, callUS, returnUS int64) measure.Op {
	return measure.Op{Client: client, Role: measure.RoleWriter, Kind: measure.KindWrite, Key: key, Value: value,
		CallUS: callUS, ReturnUS: returnUS, OK: true}
}

func rd(client, key, value, option string, callUS, returnUS int64) measure.Op {
	return measure.Op{Client: client, Role: measure.RoleReader, Kind: measure.KindRead, Key: key, Value: value,
		CallUS: callUS, ReturnUS: returnUS, OK: true, Option: option}
}

// config uses two Table 1 ranges, so that the expected figures are few.
func config() measure.Config {
	return measure.Config{Ranges: []measure.RangeMS{{FromMS: 0, ToMS: 50}, {FromMS: 50}}}
}

// replicaTrace is a primary-replica store (Wada Fig. 2 in miniature): ten
// writes a second apart, each visible on the replica 50 ms after it
// starts. Reader r reads the replica 10, 30, 60 and 200 ms after each
// write starts; reader p reads the primary, always fresh. The writer reads
// its own key once from the replica too early (a read-your-writes
// violation), and r once reads an older value than before (a
// monotonic-read violation).
func replicaTrace() []measure.Op {
	var ops []measure.Op
	value := func(i int) string {
		if i == 0 {
			return ""
		}
		return fmt.Sprintf("v%d", i)
	}
	for i := 1; i <= 10; i++ {
		t := int64(i) * 1000 * msUS
		ops = append(ops, wr("w", "k", value(i), t, t+5*msUS))
		for _, at := range []int64{10, 30, 60, 200} {
			seen := value(i)
			if at < 50 {
				seen = value(i - 1)
			}
			ops = append(ops, rd("r", "k", seen, "replica", t+at*msUS, t+at*msUS+2*msUS))
			ops = append(ops, rd("p", "k", value(i), "primary", t+at*msUS, t+at*msUS+4*msUS))
		}
		if i == 3 {
			ops = append(ops, rd("w", "k", value(i-1), "replica", t+20*msUS, t+22*msUS))
		}
		if i == 5 {
			ops = append(ops, rd("r", "k", value(i-1), "replica", t+250*msUS, t+252*msUS))
		}
	}
	return ops
}

// twoElementTrace writes X then Y every second (Wada 3.2) and reads both,
// linearizably, as adjacent ops of one client.
func twoElementTrace() []measure.Op {
	var ops []measure.Op
	for i := 1; i <= 5; i++ {
		t := int64(i) * 1000 * msUS
		x, y := fmt.Sprintf("x%d", i), fmt.Sprintf("y%d", i)
		ops = append(ops, wr("w", "X", x, t, t+3*msUS), wr("w", "Y", y, t+4*msUS, t+7*msUS))
		for _, at := range []int64{20, 100} {
			ops = append(ops, rd("r", "X", x, "linearizable", t+at*msUS, t+at*msUS+3*msUS),
				rd("r", "Y", y, "linearizable", t+at*msUS+4*msUS, t+at*msUS+7*msUS))
		}
	}
	return ops
}

// sweep is a two-point load sweep (Wada 4.1) of one read option.
func sweep() *measure.SweepResult {
	var inputs []measure.SweepInput
	for _, clients := range []int{1, 2} {
		var ops []measure.Op
		for c := range clients {
			name := fmt.Sprintf("c%d", c)
			for i := range 10 {
				t := int64(i) * 100 * msUS
				lat := int64(clients) * 2 * msUS
				op := rd(name, "k", "", "linearizable", t, t+lat)
				if i == 9 && clients == 2 {
					op.OK, op.Error = false, "timeout"
				}
				ops = append(ops, op)
			}
		}
		inputs = append(inputs, measure.SweepInput{Clients: clients, OfferedOpsPerS: float64(clients) * 10, Ops: ops})
	}
	s := measure.Sweep(inputs)
	return &s
}

const hostile = `etcd <script>alert("x")</script> | *linearizable*`

func testRuns() []Run {
	return []Run{
		{Name: "redis replica", Dir: "runs/redis", Report: measure.Analyze(replicaTrace(), config()),
			Meta: map[string]string{"target": "redis", "seed": "1"}},
		{Name: hostile, Report: measure.Analyze(twoElementTrace(), config()), Sweep: sweep(),
			Meta: map[string]string{"command": "cosla measure --target etcd <x>"}},
		{Name: "empty"},
	}
}

func TestWrite(t *testing.T) {
	runs := testRuns()
	// The synthetic reports must show what the test expects of them.
	if v := runs[0].Report.Linearizability.Verdict; v != measure.VerdictNotLinearizable {
		t.Fatalf("replica trace verdict %s", v)
	}
	if ie := runs[1].Report.InterElement; ie.Skipped != "" || len(ie.Options) != 1 {
		t.Fatalf("two-element trace: %+v", ie)
	}
	out := t.TempDir()
	if err := Write(out, runs); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"freshness", "latency", "gamma", "sweep_throughput", "sweep_latency", "sweep_failures"} {
		png := readFile(t, filepath.Join(out, "plots", name+".png"))
		if !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
			t.Errorf("plots/%s.png does not start with the PNG signature: %q", name, png[:min(8, len(png))])
		}
		checkXML(t, filepath.Join(out, "plots", name+".svg"))
	}

	md := string(readFile(t, filepath.Join(out, "report.md")))
	for _, want := range []string{
		"redis replica / replica", "redis replica / primary", "empty",
		`etcd &lt;script>alert("x")&lt;/script> \| \*linearizable\* / linearizable`,
		// Wada Table 1: 21 early replica reads, all stale (the writer's
		// own early read among them); 21 late ones, one stale.
		"| P(fresh) [0, 50) ms | 100.00% (20/20) | 0.00% (0/21) |",
		"95.24% (20/21)",
		// Table 2: 41 reads by r, 40 successive pairs, one going back.
		"2.50% (1/40)",
		// Read-your-writes: the writer's only read.
		"100.00% (1/1)",
		// Table 3: every observation both fresh.
		"100.00% / 0.00% / 0.00% / 0.00% (n=10)",
		"not-linearizable", "linearizable",
		"plots/freshness.png", "plots/sweep_throughput.png",
		"## Load sweep (Wada Figs 7-12)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if strings.Contains(md, "<script>") {
		t.Error("report.md carries a raw <script> from a run name")
	}
	// The empty run is all n/a, in every row of the summary.
	summary := md[strings.Index(md, "## Summary"):strings.Index(md, "## Runs")]
	for _, line := range strings.Split(summary, "\n") {
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| **") || strings.HasPrefix(line, "| measure") || strings.HasPrefix(line, "| ---") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if last := cells[len(cells)-1]; last != na {
			t.Errorf("empty run shows %q in %s", last, line)
		}
	}

	page := string(readFile(t, filepath.Join(out, "report.html")))
	if strings.Contains(page, "<script") {
		t.Error("report.html carries a raw <script> from a run name")
	}
	for _, want := range []string{
		"etcd &lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; | *linearizable*",
		"cosla measure --target etcd &lt;x&gt;",
		"0.00% (0/21)", "2.50% (1/40)",
		`src="data:image/svg`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	if n := strings.Count(page, `<img src="data:image/svg`); n != 6 {
		t.Errorf("report.html embeds %d plots, want 6", n)
	}
	checkXML(t, filepath.Join(out, "report.html"))
}

// TestTablesAreRectangular guards the renderers: every row has a cell per
// column.
func TestTablesAreRectangular(t *testing.T) {
	for _, tab := range tables(testRuns()) {
		for i, r := range tab.rows {
			if r.section == "" && len(r.cells) != len(tab.header) {
				t.Errorf("table %s row %d has %d cells for %d columns: %q", tab.id, i, len(r.cells), len(tab.header), r.cells)
			}
		}
	}
}

// TestWriteLoadedRuns writes runs as Load returns them: without the Gamma
// scores, which report.json does not keep, the Gamma CDF goes through the
// percentiles.
func TestWriteLoadedRuns(t *testing.T) {
	dir := t.TempDir()
	var loaded []Run
	for i, r := range testRuns()[:2] {
		runDir := filepath.Join(dir, fmt.Sprint("run", i))
		if err := Save(runDir, r); err != nil {
			t.Fatal(err)
		}
		l, err := Load(runDir)
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Report.Gamma.Scores) != 0 {
			t.Fatal("Gamma scores survived report.json")
		}
		loaded = append(loaded, l)
	}
	out := filepath.Join(dir, "out")
	if err := Write(out, loaded); err != nil {
		t.Fatal(err)
	}
	if md := string(readFile(t, filepath.Join(out, "report.md"))); !strings.Contains(md, "0.00% (0/21)") {
		t.Error("report.md of loaded runs lacks the Table 1 figures")
	}
	checkXML(t, filepath.Join(out, "plots", "gamma.svg"))
	if svg := string(readFile(t, filepath.Join(out, "plots", "gamma.svg"))); !strings.Contains(svg, "(percentiles)") {
		t.Error("the Gamma CDF of loaded runs is not marked as drawn through percentiles")
	}
}

func TestPercentileCDF(t *testing.T) {
	// Half the values score 0, the rest 10 to 40 ms: the CDF is pinned at
	// 0.5 at 0 and never falls, though p50 is 0 too.
	g := measure.GammaResult{Values: 100, Positive: 50, PositiveFraction: 0.5,
		All: measure.Percentiles{Count: 100, P50MS: 0, P90MS: 10, P95MS: 20, P99MS: 30, P999MS: 40, MaxMS: 40}}
	xys := percentileCDF(g)
	if xys[0].X != 0 || xys[0].Y != 0.5 {
		t.Errorf("CDF starts at %v, want (0, 0.5)", xys[0])
	}
	for i := 1; i < len(xys); i++ {
		if xys[i].X < xys[i-1].X || xys[i].Y < xys[i-1].Y {
			t.Errorf("CDF falls or goes back at %d: %v", i, xys)
		}
	}
	if last := xys[len(xys)-1]; last.X != 40 || last.Y != 1 {
		t.Errorf("CDF ends at %v, want (40, 1)", last)
	}
}

func TestLogTicks(t *testing.T) {
	for _, tc := range []struct {
		lo, hi float64
		want   []string
	}{
		{2, 5, []string{"2", "3", "4", "5"}},
		{0.5, 200, []string{"0.5", "1", "2", "5", "10", "20", "50", "100", "200"}},
		{0, 10, nil},
	} {
		var got []string
		for _, tick := range (logTicks{}).Ticks(tc.lo, tc.hi) {
			if tick.Label != "" {
				got = append(got, tick.Label)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("ticks of [%g, %g] labelled %v, want %v", tc.lo, tc.hi, got, tc.want)
		}
	}
}

func TestWriteEdgeCases(t *testing.T) {
	if err := Write(t.TempDir(), nil); !errors.Is(err, ErrNoRuns) {
		t.Errorf("Write of no runs: %v, want ErrNoRuns", err)
	}
	// Runs with nothing to plot, and duplicate names, still give a report;
	// the sweep plots of an earlier report into the same place go.
	out := t.TempDir()
	if err := Write(out, testRuns()[1:2]); err != nil {
		t.Fatal(err)
	}
	if err := Write(out, []Run{{Name: "a"}, {Name: "a"}, {Name: "ctl\x00\x1b"}}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"freshness", "latency", "gamma"} {
		checkXML(t, filepath.Join(out, "plots", name+".svg"))
	}
	if _, err := os.Stat(filepath.Join(out, "plots", "sweep_throughput.png")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a sweep plot without a sweep: %v", err)
	}
	md := string(readFile(t, filepath.Join(out, "report.md")))
	if !strings.Contains(md, "| a | a (2) | ctl   |") {
		t.Errorf("duplicate names are not told apart:\n%s", md)
	}
	checkXML(t, filepath.Join(out, "report.html"))
}

func TestSaveLoad(t *testing.T) {
	want := testRuns()[1]
	dir := filepath.Join(t.TempDir(), "etcd-linearizable")
	if err := Save(dir, want); err != nil {
		t.Fatal(err)
	}
	got, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != want.Name || got.Dir != dir {
		t.Errorf("loaded name %q dir %q, want %q %q", got.Name, got.Dir, want.Name, dir)
	}
	if fmt.Sprint(got.Meta) != fmt.Sprint(want.Meta) {
		t.Errorf("loaded meta %v, want %v", got.Meta, want.Meta)
	}
	if a, b := mustJSON(t, got.Report), mustJSON(t, want.Report); a != b {
		t.Errorf("report changed in the round trip:\n got %s\nwant %s", a, b)
	}
	if a, b := mustJSON(t, got.Sweep), mustJSON(t, want.Sweep); a != b {
		t.Errorf("sweep changed in the round trip:\n got %s\nwant %s", a, b)
	}

	// An unnamed run takes its directory's name.
	want.Name = ""
	if err := Save(dir, want); err != nil {
		t.Fatal(err)
	}
	if got, err := Load(dir); err != nil || got.Name != "etcd-linearizable" {
		t.Errorf("unnamed run loaded as %q, %v", got.Name, err)
	}
}

// TestLoadFlat reads the form `cosla measure --out` writes: the report's
// fields at the top level.
func TestLoadFlat(t *testing.T) {
	rep := measure.Analyze(replicaTrace(), config())
	flat := map[string]any{}
	if err := json.Unmarshal([]byte(mustJSON(t, rep)), &flat); err != nil {
		t.Fatal(err)
	}
	flat["meta"] = map[string]string{"target": "redis"}
	flat["sweep"] = sweep()
	flat["wada_summary"] = map[string]any{"weak_option": "replica"}
	dir := filepath.Join(t.TempDir(), "redis")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, FileName), []byte(mustJSON(t, flat)), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "redis" || got.Meta["target"] != "redis" || got.Sweep == nil || len(got.Sweep.Points) != 2 {
		t.Errorf("flat report loaded as name %q meta %v sweep %v", got.Name, got.Meta, got.Sweep)
	}
	if a, b := mustJSON(t, got.Report), mustJSON(t, rep); a != b {
		t.Errorf("flat report changed:\n got %s\nwant %s", a, b)
	}
}

func TestLoadErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nowhere")
	_, err := Load(missing)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(missing, FileName)) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load of a missing report: %v", err)
	}
	for _, tc := range []struct{ name, content string }{
		{"not json", "{not json"},
		{"null", "null"},
		{"array", "[1, 2]"},
		{"no report", `{"name": "x", "meta": {"a": "b"}}`},
		{"report of the wrong type", `{"name": "x", "report": 42}`},
		{"trailing data", `{"name": "x", "report": {}} {}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, FileName)
			if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Load(dir)
			if err == nil || !strings.Contains(err.Error(), path) || !errors.Is(err, ErrMalformed) {
				t.Errorf("Load of %q: %v, want ErrMalformed naming %s", tc.content, err, path)
			}
		})
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) == 0 {
		t.Fatalf("%s is empty", path)
	}
	return data
}

// checkXML parses a whole file as XML (an SVG, or the HTML page, which is
// written as well-formed markup apart from its doctype).
func checkXML(t *testing.T, path string) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(readFile(t, path)))
	dec.Strict = !strings.HasSuffix(path, ".html")
	dec.AutoClose = xml.HTMLAutoClose
	dec.Entity = xml.HTMLEntity
	for {
		_, err := dec.Token()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("%s does not parse as XML: %v", path, err)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
