package experiment

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/lab/workload"
)

// TestRestrictionModelUniform checks the model's arithmetic where it has
// a closed form: 1,000 uniform keys written 100 times a second, each
// write in flight 1 s, so a key has x = 0.1 writes in flight: a Get
// finds one with r = 1 - e^-0.1, the version found has g(0.1) =
// 1 - 10 + 1/(e^0.1 - 1) of its flight left, and a session making 20
// accesses a second, 95% Gets (19 a second), each restriction lasting
// 0.5 s at its coordinator, makes its Gets restricted
// 1 - exp(-19 r 0.5) of the time and its Puts, which wait for the next
// Get's reply to drop it, 1 - exp(-19 r (0.5 + 1/19)).
func TestRestrictionModelUniform(t *testing.T) {
	keys, ok := keyBuckets("uniform", 1000)
	if !ok || len(keys) != 1 || keys[0].count != 1000 || keys[0].q != 0.001 {
		t.Fatalf("uniform buckets %v, %v", keys, ok)
	}
	r, rho := inFlight(keys, 100, 1)
	near := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %.12f, want %.12f", name, got, want)
		}
	}
	near("r", r, 0.09516258196404048)
	near("rho", rho, 0.5083319447750494)
	near("restricted share", restrictedShare(20, 0.95, r, 0.5), 0.5969092696749908)
	// A key written once in a long while is read anywhere in its flight
	// (half left); a hot key's newest version was just written (all of
	// it left).
	near("g(0)", flightRemaining(1e-9), 0.5)
	if g := flightRemaining(100); g < 0.98 || g > 1 {
		t.Errorf("g(100) = %v, want just under 1", g)
	}
	if _, ok := keyBuckets("hotspot", 1000); ok {
		t.Error("the model claims to know the hotspot distribution")
	}
}

// TestRestrictionModelZipfian checks the bucketed scrambled zipfian
// against the sum over every rank: the same keys (n of them, the top
// rank 1/zeta(10^10, 0.99), about 3.8%) and the same in-flight chance.
func TestRestrictionModelZipfian(t *testing.T) {
	const n = 200_000
	keys, ok := keyBuckets("zipfian", n)
	if !ok {
		t.Fatal("zipfian unknown")
	}
	var count, mass float64
	for _, k := range keys {
		count += k.count
		mass += k.count * k.q
	}
	if count != n || math.Abs(mass-1) > 1e-9 || math.Abs(keys[0].q-0.0378) > 0.0005 {
		t.Errorf("%v keys of mass %v, top key %v; want %d of mass 1, top about 3.8%%", count, mass, keys[0].q, n)
	}
	const writes, flight = 2000.0, 0.3
	var ranked float64
	for i := 1; i <= n; i++ {
		ranked += workload.ScrambledRankProbability(float64(i))
	}
	background := (1 - ranked) / n
	var want float64
	for i := 1; i <= n; i++ {
		q := workload.ScrambledRankProbability(float64(i)) + background
		want += q * -math.Expm1(-writes*q*flight)
	}
	if r, _ := inFlight(keys, writes, flight); math.Abs(r-want) > 1e-3*want {
		t.Errorf("bucketed r = %.6f, the sum over every rank %.6f", r, want)
	}
}

// TestStabilityProbe feeds the probe a hand-made history and checks
// Little's law on it. The run begins at 0 with a write acknowledged
// then and complete at 1.5 s, half a second into the window (1 s to
// 9 s); write A is acknowledged at 1 s, held by ring 0 at 1.5 s,
// complete at 3 s; write B acknowledged at 2 s, complete at 2.5 s; a
// notify-after is not counted; write C, in the window's second half, is
// acknowledged at 6 s and complete at 8 s. Site a had 5 write-seconds
// in flight in the window (3 in its first half) and 3 writes
// acknowledged in it (2 in its first half).
func TestStabilityProbe(t *testing.T) {
	s := parse(t, causalWorld3)
	p := newStabilityProbe(s)
	var now time.Duration
	p.start(func() time.Duration { return now }, time.Second, 9*time.Second)
	client, cc, node := wire.NodeID("a/c1"), wire.NodeID("a/cc"), wire.NodeID("b/r1")
	at := func(d time.Duration, from, to wire.NodeID, m wire.Msg) {
		now = d
		p.observe(from, to, m)
	}
	at(0, client, cc, &wire.CausalPut{Req: 9, Session: 9, Seq: 1})
	at(0, cc, client, &wire.CausalPutReply{Req: 9, Code: wire.OK})
	at(time.Second, client, cc, &wire.CausalPut{Req: 1, Session: 1, Seq: 1})
	at(time.Second, cc, client, &wire.CausalPutReply{Req: 1, Code: wire.OK})
	at(1500*time.Millisecond, cc, client, &wire.CausalComplete{Session: 9, Seq: 1})
	at(1500*time.Millisecond, node, cc, &wire.PropagateAck{Client: client, Session: 1, Seq: 1, Ring: 0})
	at(2*time.Second, client, cc, &wire.CausalPut{Req: 2, Session: 2, Seq: 1})
	at(2*time.Second, cc, client, &wire.CausalPutReply{Req: 2, Code: wire.OK})
	at(2*time.Second, client, cc, &wire.CausalPut{Req: 3, Session: 3, Seq: 1, Notify: true})
	at(2*time.Second, cc, client, &wire.CausalPutReply{Req: 3, Code: wire.OK})
	at(2500*time.Millisecond, cc, client, &wire.CausalComplete{Session: 2, Seq: 1})
	at(3*time.Second, cc, client, &wire.CausalComplete{Session: 1, Seq: 1})
	at(6*time.Second, client, cc, &wire.CausalPut{Req: 4, Session: 4, Seq: 1})
	at(6*time.Second, cc, client, &wire.CausalPutReply{Req: 4, Code: wire.OK})
	at(8*time.Second, cc, client, &wire.CausalComplete{Session: 4, Seq: 1})
	now = 20 * time.Second
	st := p.stability(s)
	if st == nil || st.WindowS != 8 || len(st.Sites) != 3 || len(st.Rings) != 1 {
		t.Fatalf("stability %+v: want an 8 s window (1 s to 9 s), 3 sites, 1 ring", st)
	}
	if a := st.Sites[0]; a.Name != "a" || a.Acked != 3 || math.Abs(a.MeanMS-5000.0/3) > 1e-9 || a.InFlight != 5.0/8 ||
		a.FirstHalfMS != 1500 || a.SecondHalfMS != 2000 {
		t.Errorf("site a: %+v, want 3 writes, 1667 ms each by Little's law, 5/8 in flight; 1500 ms in the first half (1 s to 5 s), 2000 ms in the second", a)
	}
	if r := st.Rings[0]; r.Name != "0" || r.Acked != 1 || r.MeanMS != 1500 {
		t.Errorf("ring 0: %+v, want 1 write held 1500 ms", r)
	}
}

// TestRestrictionModelTable runs a small causal scenario: Karma's run
// measures its time to stability, and the report sets the model beside
// the measured share, for Karma and not for COPS-PR (no dynamic
// restrictions).
func TestRestrictionModelTable(t *testing.T) {
	s := parse(t, strings.Replace(causalWorld3, "put_fraction: 0.05", "put_fraction: 0.2, distribution: zipfian", 1)+
		"strategies: [karma, cops-pr]\noutputs: [causal]\n")
	r := runSim(t, s)
	var table *Table
	strategies := map[string]bool{}
	for _, tb := range Tables(s, r) {
		switch tb.Name {
		case "restriction-model":
			table = &tb
		case "stability-sites":
			for _, row := range tb.Rows {
				strategies[row[slices.Index(tb.Header, "strategy")]] = true
			}
		}
	}
	if !strategies["karma"] || !strategies["cops-pr"] {
		t.Errorf("stability-sites table: rows of %v, want karma's and cops-pr's", strategies)
	}
	if table == nil || len(table.Rows) != 1 {
		t.Fatalf("restriction-model table %+v: want one row, karma's", table)
	}
	row := map[string]string{}
	for i, h := range table.Header {
		row[h] = table.Rows[0][i]
	}
	model, err1 := strconv.ParseFloat(row["restricted % model"], 64)
	measured, err2 := strconv.ParseFloat(row["restricted %"], 64)
	stability, err3 := strconv.ParseFloat(row["stability ms"], 64)
	if row["strategy"] != "karma" || err1 != nil || err2 != nil || err3 != nil || model <= 0 || model > 100 || stability <= 0 {
		t.Errorf("row %v: want karma's, with a model share in (0, 100] and a positive time to stability", row)
	}
	if measured > 0 && model == 0 {
		t.Errorf("measured %.1f%% restricted, model 0", measured)
	}
}

// TestResidual checks the Gets' mean residual latency, E[L^2] / 2E[L]:
// half the latency when every Get takes as long, but for Gets of 1 ms and
// 100 ms alike (a cache hit and a far ring's read) about half the long
// one, not half the mean: a moment taken at random falls in a long Get
// a hundred times as often as in a short one.
func TestResidual(t *testing.T) {
	h := hdrhistogram.New(1, 10_000_000, 3)
	for range 10 {
		_ = h.RecordValue(10_000)
	}
	if got := residualMS(h); math.Abs(got-5) > 0.01 {
		t.Errorf("10 ms Gets: residual %.3f ms, want 5", got)
	}
	h.Reset()
	for range 10 {
		_ = h.RecordValue(1_000)
		_ = h.RecordValue(100_000)
	}
	if got, want := residualMS(h), (1.0+100*100)/(2*101); math.Abs(got-want) > 0.05 {
		t.Errorf("1 and 100 ms Gets: residual %.3f ms, want %.3f (half the mean: 25.25)", got, want)
	}
}
