package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/cosla/cosla/internal/lab/bench"
	"github.com/cosla/cosla/internal/lab/driver"
)

// benchComparison is a comparison of cosla with a store whose name would
// be markup, at 1 and 4 clients, weak reads; each run reads and updates
// with latencies scaled by f.
func benchComparison() bench.Comparison {
	row := func(target, read string, opsPerS, f float64, vs *bench.Ratio) bench.Row {
		r := bench.Row{Strength: bench.Weak, VsReference: vs}
		r.Result.Setup = bench.Setup{Target: target, Read: read, Write: "durable"}
		r.Result.Run = bench.Phase{Name: bench.PhaseRun, Stop: bench.StopComplete, Operations: 100, ThroughputOpsPerS: opsPerS}
		for _, k := range []string{"read", "update"} {
			r.Result.Run.Kinds = append(r.Result.Run.Kinds, bench.KindStats{Kind: k, Operations: 50,
				LatencyMS:  driver.Latency{Count: 50, P50: f, P99: 3 * f},
				LatencyCDF: []driver.Quantile{{Q: 0, MS: f / 2}, {Q: 0.5, MS: f}, {Q: 0.99, MS: 3 * f}, {Q: 1, MS: 4 * f}}})
		}
		return r
	}
	vs := &bench.Ratio{Throughput: 0.5, P50: map[string]float64{"read": 2, "update": 2}}
	return bench.Comparison{Seed: 3, Workload: "recordcount=10\noperationcount=1000\nfieldlength=256\n", Mix: "10 records; read 50%, update 50%; zipfian keys; 256-byte values",
		Limit:     "5s each",
		Reference: "cosla", Reads: []bench.Strength{bench.Weak}, Write: bench.Weak,
		Tables: []bench.Table{
			{Clients: 1, Rows: []bench.Row{row("cosla", "eventual (closest)", 100, 1, nil), row(`<script>x</script>`, "replica", 200, 0.5, vs)}},
			{Clients: 4, Rows: []bench.Row{row("cosla", "eventual (closest)", 300, 2, nil), row(`<script>x</script>`, "replica", 600, 1, vs)}},
		}}
}

func TestWriteBench(t *testing.T) {
	c := benchComparison()
	out := t.TempDir()
	if err := WriteBench(out, c); err != nil {
		t.Fatal(err)
	}
	var back bench.Comparison
	if err := json.Unmarshal(readFile(t, filepath.Join(out, BenchFileName)), &back); err != nil || !reflect.DeepEqual(back, c) {
		t.Errorf("%s does not decode to the comparison (%v)", BenchFileName, err)
	}
	for _, name := range []string{"latency_cdf_read", "latency_cdf_update", "throughput"} {
		png := readFile(t, filepath.Join(out, "plots", name+".png"))
		if !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
			t.Errorf("plots/%s.png does not start with the PNG signature", name)
		}
		checkXML(t, filepath.Join(out, "plots", name+".svg"))
	}
	md := string(readFile(t, filepath.Join(out, "report.md")))
	for _, want := range []string{
		"# cosla bench compare: cosla vs &lt;script>x&lt;/script>",
		"## Workload", "Runs of 5s each, in place of operationcount.", "| fieldlength | 256 |", "runs of 5s each.",
		"## 1 client", "## 4 clients",
		"cosla/this is cosla's figure over the row's",
		"| target | reads | read option | write option | ops/s | errors | read p50 ms | read p99 ms | update p50 ms | update p99 ms | cosla/this ops/s | cosla/this read p50 | cosla/this update p50 |",
		"| cosla | weak | eventual (closest) | durable | 100 | 0 | 1.000 | 3.000 | 1.000 | 3.000 | - | - | - |",
		"| 200 | 0 | 0.500 | 1.500 | 0.500 | 1.500 | 0.50 | 2.00 | 2.00 |",
		"plots/latency_cdf_read.png", "plots/throughput.png",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
	page := string(readFile(t, filepath.Join(out, "report.html")))
	if strings.Contains(md, "operationcount |") {
		t.Error("report.md lists operationcount, which the runs do not follow")
	}
	if strings.Contains(md, "<script>") || strings.Contains(page, "<script") {
		t.Error("a report carries a raw <script> from a target's name")
	}
	if !strings.Contains(page, "&lt;script&gt;x&lt;/script&gt;") {
		t.Error("report.html lacks the escaped target name")
	}
	if n := strings.Count(page, `<img src="data:image/svg`); n != 3 {
		t.Errorf("report.html embeds %d plots, want 3", n)
	}
	checkXML(t, filepath.Join(out, "report.html"))

	if err := WriteBench(t.TempDir(), bench.Comparison{}); !errors.Is(err, ErrNoRuns) {
		t.Errorf("WriteBench of no runs: %v, want ErrNoRuns", err)
	}
}

// TestBenchCharts checks what the plots draw: a CDF line per run and
// kind, the same style for a system at every client count, and a
// throughput line per system in order of clients.
func TestBenchCharts(t *testing.T) {
	c := benchComparison()
	// Client counts out of order: the throughput lines still run left to
	// right.
	c.Tables[0], c.Tables[1] = c.Tables[1], c.Tables[0]
	charts := benchCharts(c)
	if len(charts) != 3 || charts[0].name != "latency_cdf_read" || charts[2].name != "throughput" {
		t.Fatalf("charts %v", charts)
	}
	read := charts[0]
	if len(read.series) != 4 || !read.logX || !read.series[0].step {
		t.Fatalf("read CDF: %+v", read)
	}
	if s := read.series[0]; s.label != "cosla eventual (closest), weak reads, 4 clients" || s.xys[1].X != 2 || s.xys[1].Y != 0.5 || s.dashed {
		t.Errorf("first CDF line %+v", s)
	}
	if a, b := read.series[0], read.series[2]; a.style != b.style || !b.dashed {
		t.Errorf("cosla at 4 and 1 clients: styles %d, %d, dashed %t, %t; want one style, the second dashed", a.style, b.style, a.dashed, b.dashed)
	}
	through := charts[2]
	if len(through.series) != 2 {
		t.Fatalf("throughput: %+v", through)
	}
	if xys := through.series[1].xys; through.series[1].label != "<script>x</script> replica, weak reads" || len(xys) != 2 ||
		xys[0].X != 1 || xys[0].Y != 200 || xys[1].X != 4 || xys[1].Y != 600 {
		t.Errorf("throughput line %+v", through.series[1])
	}
	if fileName("read-modify-write") != "read-modify-write" || fileName("a/b c") != "a-b-c" {
		t.Errorf("fileName")
	}
}
