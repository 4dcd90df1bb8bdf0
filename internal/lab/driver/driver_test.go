package driver

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cosla/cosla/internal/lab/measure"
	"github.com/cosla/cosla/internal/lab/workload"
	"github.com/cosla/cosla/internal/runtime/sim"
)

// fakeTarget performs ops on the simulator's event loop: each takes
// latency(op), then fails with fail(op) (nil: succeeds). A Put stores its
// value's identity, a Get returns the key's.
type fakeTarget struct {
	sim     *sim.Sim
	latency func(op *Op) time.Duration
	fail    func(op *Op) error
	refuse  bool
	values  map[string]string
	begun   []string
	// inFlight counts the ops under way, maxInFlight the most at once.
	inFlight, maxInFlight int
}

func newFake(latency time.Duration) *fakeTarget {
	return &fakeTarget{sim: sim.New(sim.Options{Seed: 1}), latency: func(*Op) time.Duration { return latency },
		values: map[string]string{}}
}

func (t *fakeTarget) Open(*Group) (Client, error) { return t, nil }
func (t *fakeTarget) Begin(name string) (Session, error) {
	t.begun = append(t.begun, name)
	return t, nil
}
func (t *fakeTarget) Close() {}
func (t *fakeTarget) End()   {}

func (t *fakeTarget) Do(op *Op, done func()) {
	op.Start = t.sim.Now()
	if t.refuse {
		op.Err, op.Refused = errors.New("refused"), true
		op.End = op.Start
		t.sim.After(0, done)
		return
	}
	t.inFlight++
	t.maxInFlight = max(t.maxInFlight, t.inFlight)
	t.sim.After(t.latency(op), func() {
		t.inFlight--
		op.End = t.sim.Now()
		if t.fail != nil {
			op.Err = t.fail(op)
		}
		if op.Err == nil {
			switch op.Kind {
			case Put:
				t.values[op.Key] = op.ValueID
			case Get:
				op.ValueID, op.Found = t.values[op.Key]
			}
		}
		done()
	})
}

// runFake runs spec on the fake target until done, within a day of
// virtual time.
func runFake(t *testing.T, ft *fakeTarget, spec Spec) *Driver {
	t.Helper()
	if spec.Recorder == nil {
		spec.Recorder = &Recorder{}
	}
	d, err := New(ft, spec)
	if err != nil {
		t.Fatal(err)
	}
	d.Start(SimRuntime{Sim: ft.sim})
	if err := ft.sim.RunUntil(ft.sim.Now()+24*time.Hour, d.Done); err != nil {
		t.Fatal(err)
	}
	if !d.Done() {
		t.Fatalf("run not done after a day of virtual time")
	}
	return d
}

func getMix(t *testing.T, keys uint64) Mix {
	t.Helper()
	gen, err := workload.NewUniform(keys)
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewKeyMix([]Weighted{{Kind: Get, Weight: 1}}, gen, 0)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// starts returns the start times of the recorded ops, in order of
// completion.
func starts(rec *[]Op) []time.Duration {
	var out []time.Duration
	for _, op := range *rec {
		out = append(out, op.Start)
	}
	return out
}

func collect(ops *[]Op) func(*Group, *Op) {
	return func(_ *Group, op *Op) { *ops = append(*ops, *op) }
}

func ms(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }

func TestClosedLoop(t *testing.T) {
	for _, tc := range []struct {
		name     string
		latency  time.Duration
		think    time.Duration
		sessions int
		steps    int
		duration time.Duration
		// from and until bound the stream's hours.
		from, until time.Duration
		want        []time.Duration // start times, in completion order
	}{
		{name: "one session, think", latency: ms(2), think: ms(3), sessions: 1, steps: 4,
			want: []time.Duration{0, ms(5), ms(10), ms(15)}},
		{name: "bounded by duration", latency: ms(2), think: ms(3), sessions: 1, duration: ms(11),
			want: []time.Duration{0, ms(5), ms(10)}},
		{name: "two sessions", latency: ms(4), sessions: 2, steps: 5,
			want: []time.Duration{0, 0, ms(4), ms(4), ms(8)}},
		{name: "hours: none before from, none at or after until", latency: ms(2), think: ms(3), sessions: 1, duration: ms(100),
			from: ms(4), until: ms(14), want: []time.Duration{ms(4), ms(9)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ft := newFake(tc.latency)
			var ops []Op
			g := &Group{Name: "g", Sessions: tc.sessions, Rand: rand.New(rand.NewPCG(1, 1)),
				Streams: []Stream{{Mix: getMix(t, 10), Think: tc.think, From: tc.from, Until: tc.until}}}
			runFake(t, ft, Spec{Groups: []*Group{g}, Steps: tc.steps, Duration: tc.duration, Recorder: &Recorder{OnOp: collect(&ops)}})
			if got := starts(&ops); !slices.Equal(got, tc.want) {
				t.Errorf("starts %v, want %v", got, tc.want)
			}
		})
	}
}

// TestPeriodic checks Wada's schedule: a step each slot, late steps
// started as soon as the session is free while their slot lasts, passed
// slots skipped; writers staggered over the period.
func TestPeriodic(t *testing.T) {
	// Slots every 10 ms; the op at 0 takes 25 ms: the slot at 10 has
	// passed when it ends and is skipped, the one at 20 still runs, so its
	// step starts at once, at 25.
	ft := newFake(ms(1))
	ft.latency = func(op *Op) time.Duration {
		if op.Start == 0 {
			return ms(25)
		}
		if op.Start == ms(30) {
			return ms(12) // ends at 42, in slot 40: that one starts late, at 42
		}
		return ms(1)
	}
	var ops []Op
	g := &Group{Name: "r", Rand: rand.New(rand.NewPCG(1, 1)), Streams: []Stream{{Mix: getMix(t, 1), Every: ms(10)}}}
	runFake(t, ft, Spec{Groups: []*Group{g}, Duration: ms(60), Recorder: &Recorder{OnOp: collect(&ops)}})
	if got, want := starts(&ops), []time.Duration{0, ms(25), ms(30), ms(42), ms(50)}; !slices.Equal(got, want) {
		t.Errorf("starts %v, want %v", got, want)
	}

	// Stagger: three writers every 30 ms start at 0, 10 and 20.
	ft = newFake(ms(1))
	ops = nil
	w := &Group{Name: "w", Sessions: 3, Rand: rand.New(rand.NewPCG(1, 1)),
		Streams: []Stream{{Mix: FixedMix{Step{Ops: []Op{{Kind: Put, Key: "k"}}}}, Every: ms(30), Stagger: true}}}
	runFake(t, ft, Spec{Groups: []*Group{w}, Duration: ms(60), Recorder: &Recorder{OnOp: collect(&ops)}})
	if got, want := starts(&ops), []time.Duration{0, ms(10), ms(20), ms(30), ms(40), ms(50)}; !slices.Equal(got, want) {
		t.Errorf("staggered starts %v, want %v", got, want)
	}

	// Jitter: each step at a point of its slot, never two in one slot.
	ft = newFake(ms(1))
	ops = nil
	g = &Group{Name: "r", Rand: rand.New(rand.NewPCG(7, 1)), Streams: []Stream{{Mix: getMix(t, 1), Every: ms(10), Jitter: true}}}
	runFake(t, ft, Spec{Groups: []*Group{g}, Duration: ms(1000), Recorder: &Recorder{OnOp: collect(&ops)}})
	if len(ops) != 100 {
		t.Fatalf("%d steps in 100 slots", len(ops))
	}
	offsets := map[time.Duration]bool{}
	for i, op := range ops {
		if slot := op.Start / ms(10); slot != time.Duration(i) {
			t.Fatalf("step %d started at %s, in slot %d", i, op.Start, slot)
		}
		offsets[op.Start%ms(10)] = true
	}
	if len(offsets) < 50 {
		t.Errorf("only %d distinct offsets within the slots: jitter does not spread the steps", len(offsets))
	}
}

// TestTwoStreams is Wada's thread placement: one session writes every
// 30 ms and reads every 10 ms; the write comes first on a tie.
func TestTwoStreams(t *testing.T) {
	ft := newFake(ms(1))
	var ops []Op
	g := &Group{Name: "t1", Rand: rand.New(rand.NewPCG(1, 1)), Streams: []Stream{
		{Mix: FixedMix{Step{Ops: []Op{{Kind: Put, Key: "k"}}}}, Every: ms(30)},
		{Mix: FixedMix{Step{Ops: []Op{{Kind: Get, Key: "k"}}}}, Every: ms(10)},
	}}
	runFake(t, ft, Spec{Groups: []*Group{g}, Duration: ms(40), Recorder: &Recorder{OnOp: collect(&ops)}})
	var got []string
	for _, op := range ops {
		got = append(got, fmt.Sprintf("%s@%s", op.Kind, op.Start))
	}
	want := []string{"put@0s", "get@1ms", "get@10ms", "get@20ms", "put@30ms", "get@31ms"}
	if !slices.Equal(got, want) {
		t.Errorf("ops %v, want %v", got, want)
	}
	// Every read after the first write sees a value it wrote.
	for _, op := range ops[1:] {
		if op.Kind == Get && !strings.HasPrefix(op.ValueID, "t1-") {
			t.Errorf("read at %s returned %q", op.Start, op.ValueID)
		}
	}
}

// TestOpenLoop checks that an open loop never has more steps in flight
// than sessions, sheds the arrivals that find none free, and offers its
// rate.
func TestOpenLoop(t *testing.T) {
	for _, tc := range []struct {
		name     string
		latency  time.Duration
		sessions int
		shed     bool
	}{
		{name: "fast store", latency: ms(1), sessions: 4, shed: false},
		{name: "slow store", latency: ms(100), sessions: 4, shed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ft := newFake(tc.latency)
			rec := &Recorder{}
			g := &Group{Name: "o", Sessions: tc.sessions, Rate: 100, Mix: getMix(t, 10), Rand: rand.New(rand.NewPCG(3, 3))}
			runFake(t, ft, Spec{Groups: []*Group{g}, Duration: 100 * time.Second, Recorder: rec})
			gs := rec.Groups()[0]
			if ft.maxInFlight > tc.sessions {
				t.Errorf("%d steps in flight at once, with %d sessions", ft.maxInFlight, tc.sessions)
			}
			arrivals := gs.Steps + gs.Shed
			if arrivals < 9500 || arrivals > 10500 {
				t.Errorf("%d arrivals in 100 s at 100/s", arrivals)
			}
			if (gs.Shed > 0) != tc.shed {
				t.Errorf("%d arrivals shed", gs.Shed)
			}
			if tc.shed && gs.ThroughputOpsPerS > 41 {
				t.Errorf("%.1f ops/s through 4 sessions of 100 ms each", gs.ThroughputOpsPerS)
			}
		})
	}
}

func TestSessionRotation(t *testing.T) {
	ft := newFake(ms(1))
	var ops []Op
	g := &Group{Name: "g", Sessions: 2, SessionSteps: 3, Rand: rand.New(rand.NewPCG(1, 1)), Streams: []Stream{{Mix: getMix(t, 10)}}}
	runFake(t, ft, Spec{Groups: []*Group{g}, Steps: 14, Recorder: &Recorder{OnOp: collect(&ops)}})
	perSession := map[string]int{}
	for _, op := range ops {
		perSession[op.Session]++
		if !strings.HasPrefix(op.Session, op.Client+"#") {
			t.Errorf("session %q of slot %q", op.Session, op.Client)
		}
	}
	want := map[string]int{"g#1#1": 3, "g#1#2": 3, "g#1#3": 1, "g#2#1": 3, "g#2#2": 3, "g#2#3": 1}
	if fmt.Sprint(perSession) != fmt.Sprint(want) {
		t.Errorf("ops per session %v, want %v", perSession, want)
	}
	if len(ft.begun) != 6 {
		t.Errorf("%d sessions begun, want 6", len(ft.begun))
	}
}

// TestStats checks the recorder's figures against exact latencies: a
// latency of (key number + 1) ms, a failure on key 0, a warmup.
func TestStats(t *testing.T) {
	ft := newFake(0)
	ft.latency = func(op *Op) time.Duration {
		var n int
		fmt.Sscanf(op.Key, "k%d", &n)
		return ms(float64(n + 1))
	}
	ft.fail = func(op *Op) error {
		if op.Key == "k0" {
			return errors.New("boom")
		}
		return nil
	}
	var step int
	mix := mixFunc(func(*rand.Rand) (Step, bool) {
		step++
		return Step{Ops: []Op{{Kind: Get, Key: fmt.Sprintf("k%d", (step-1)%10)}}}, true
	})
	rec := &Recorder{}
	g := &Group{Name: "g", Rand: rand.New(rand.NewPCG(1, 1)), Streams: []Stream{{Mix: mix}}}
	// Keys 0..9 take 1..10 ms: 55 ms a round. The first round is the
	// warmup; rounds 2 to 11 are recorded.
	runFake(t, ft, Spec{Groups: []*Group{g}, Steps: 110, Warmup: ms(55), Recorder: rec})
	st := rec.Stats()
	if len(st) != 1 {
		t.Fatalf("stats %+v", st)
	}
	s := st[0]
	if s.Op != "get" || s.Count != 100 || s.Errors != 10 || s.FailureRate != 0.1 || s.FirstError != "boom" {
		t.Errorf("stats %+v", s)
	}
	// The successful ones take 2..10 ms, ten of each; the histogram keeps
	// three significant digits.
	near := func(got, want float64) bool { return got >= want && got <= want*1.001 }
	if l := s.LatencyMS; l.Count != 90 || !near(l.P50, 6) || !near(l.Max, 10) || !near(l.Mean, 6) {
		t.Errorf("latency %+v", l)
	}
	// The distribution: 2 ms at the minimum, 10 ms at the maximum, never
	// falling; a ninth of the ops at each whole millisecond, so 6 ms at
	// the median and 9 ms at the 80th percentile (72 of 90 take at most
	// 9 ms).
	cdf := rec.LatencyCDF("g", "get")
	if len(cdf) < 3 || cdf[0].Q != 0 || !near(cdf[0].MS, 2) || cdf[len(cdf)-1].Q != 1 || !near(cdf[len(cdf)-1].MS, 10) {
		t.Fatalf("LatencyCDF = %+v", cdf)
	}
	for i, p := range cdf {
		if i > 0 && (p.Q <= cdf[i-1].Q || p.MS < cdf[i-1].MS) {
			t.Errorf("LatencyCDF falls at %d: %+v", i, cdf)
		}
		if (p.Q == 0.5 && !near(p.MS, 6)) || (p.Q == 0.8 && !near(p.MS, 9)) {
			t.Errorf("LatencyCDF point %+v", p)
		}
	}
	if rec.LatencyCDF("g", "put") != nil || rec.LatencyCDF("h", "get") != nil {
		t.Errorf("LatencyCDF of a label or group that did not run is not nil")
	}
	// 90 successful ops over the 550 ms after the warmup.
	if want := 90 / 0.55; s.ThroughputOpsPerS < want-1e-9 || s.ThroughputOpsPerS > want+1e-9 {
		t.Errorf("throughput %v, want %v", s.ThroughputOpsPerS, want)
	}
}

type mixFunc func(*rand.Rand) (Step, bool)

func (f mixFunc) Next(r *rand.Rand) (Step, bool) { return f(r) }

// TestMultiOpSteps checks that a step's ops go back to back and count once
// under the step's label, and that a failed op ends its step.
func TestMultiOpSteps(t *testing.T) {
	ft := newFake(ms(1))
	ft.fail = func(op *Op) error {
		if op.Key == "bad" {
			return errors.New("no")
		}
		return nil
	}
	var ops []Op
	rec := &Recorder{OnOp: collect(&ops)}
	steps := []Step{
		{Label: "read-modify-write", Ops: []Op{{Kind: Get, Key: "a"}, {Kind: Put, Key: "a"}}},
		{Label: "scan", Ops: []Op{{Kind: Get, Key: "a"}, {Kind: Get, Key: "bad"}, {Kind: Get, Key: "c"}}},
	}
	i := 0
	mix := mixFunc(func(*rand.Rand) (Step, bool) {
		i++
		return steps[(i-1)%2], true
	})
	g := &Group{Name: "y", Rand: rand.New(rand.NewPCG(1, 1)), Streams: []Stream{{Mix: mix}}}
	runFake(t, ft, Spec{Groups: []*Group{g}, Steps: 2, Recorder: rec})
	if len(ops) != 4 {
		t.Fatalf("%d ops recorded, want 4 (the scan stops at its failed read)", len(ops))
	}
	got := map[string]string{}
	for _, s := range rec.Stats() {
		got[s.Op] = fmt.Sprintf("%d/%d/%.0f", s.Count, s.Errors, s.LatencyMS.Max)
	}
	if want := map[string]string{"read-modify-write": "1/0/2", "scan": "1/1/0"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("stats %v, want %v", got, want)
	}
}

func TestRefusedStopsTheRun(t *testing.T) {
	ft := newFake(ms(1))
	ft.refuse = true
	g := &Group{Name: "g", Sessions: 3, Rand: rand.New(rand.NewPCG(1, 1)), Streams: []Stream{{Mix: getMix(t, 10)}}}
	d := runFake(t, ft, Spec{Groups: []*Group{g}, Steps: 100})
	if d.Err() == nil || !strings.Contains(d.Err().Error(), "refused") {
		t.Errorf("err %v, want the refusal", d.Err())
	}
}

// TestTrace checks the measure trace lines and values: unique identities
// that reads name, padded to the value size.
func TestTrace(t *testing.T) {
	ft := newFake(ms(1))
	var buf bytes.Buffer
	var ops []Op
	rec := &Recorder{Run: "r1", OriginUS: 1000, Trace: &buf, Keep: true, OnOp: collect(&ops)}
	g := &Group{Name: "c", Rand: rand.New(rand.NewPCG(1, 1)), Streams: []Stream{{Mix: mixFunc(func(*rand.Rand) (Step, bool) {
		return Step{Ops: []Op{{Kind: Put, Key: "k", Option: "w"}, {Kind: Get, Key: "k", Option: "r"}}, ValueSize: 64}, true
	})}}}
	runFake(t, ft, Spec{Groups: []*Group{g}, Steps: 3, Recorder: rec})
	if err := rec.Flush(); err != nil {
		t.Fatal(err)
	}
	trace, err := measure.ReadJSONL(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(trace, rec.Ops()) || len(trace) != 6 {
		t.Fatalf("trace of %d ops, kept %d", len(trace), len(rec.Ops()))
	}
	seen := map[string]bool{}
	for i, op := range trace {
		if err := op.Validate(); err != nil {
			t.Fatal(err)
		}
		if op.Run != "r1" || op.Client != "c" || op.CallUS != 1000+ops[i].Start.Microseconds() {
			t.Errorf("op %d: %+v", i, op)
		}
		switch op.Kind {
		case measure.KindWrite:
			if seen[op.Value] || op.Role != measure.RoleWriter || op.Option != "w" || len(ops[i].Value) != 64 {
				t.Errorf("write %d: %+v, %d bytes", i, op, len(ops[i].Value))
			}
			seen[op.Value] = true
		case measure.KindRead:
			if op.Value != trace[i-1].Value || op.Role != measure.RoleReader {
				t.Errorf("read %d returned %q after writing %q", i, op.Value, trace[i-1].Value)
			}
		}
	}
}

func TestValues(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, size := range []int{0, 3, 10, 11, 256} {
		v := MakeValue("w1-2-300", size, r)
		if len(v) != max(size, 8) || ValueID(v) != "w1-2-300" {
			t.Errorf("size %d: value %q of %d bytes names %q", size, v, len(v), ValueID(v))
		}
	}
}

func TestValidate(t *testing.T) {
	mix := FixedMix{Step{Ops: []Op{{Kind: Get, Key: "k"}}}}
	r := rand.New(rand.NewPCG(1, 1))
	for _, tc := range []struct {
		name string
		spec Spec
		want string
	}{
		{"no groups", Spec{Steps: 1, Recorder: &Recorder{}}, "no groups"},
		{"unbounded", Spec{Groups: []*Group{{Name: "g", Rand: r, Streams: []Stream{{Mix: mix}}}}, Recorder: &Recorder{}}, "bounds"},
		{"no rand", Spec{Steps: 1, Groups: []*Group{{Name: "g", Streams: []Stream{{Mix: mix}}}}, Recorder: &Recorder{}}, "random"},
		{"no streams", Spec{Steps: 1, Groups: []*Group{{Name: "g", Rand: r}}, Recorder: &Recorder{}}, "no streams"},
		{"two closed streams", Spec{Steps: 1, Groups: []*Group{{Name: "g", Rand: r, Streams: []Stream{{Mix: mix}, {Mix: mix}}}}, Recorder: &Recorder{}}, "closed-loop"},
		{"open loop without mix", Spec{Steps: 1, Groups: []*Group{{Name: "g", Rand: r, Rate: 5}}, Recorder: &Recorder{}}, "open loop"},
		{"repeated name", Spec{Steps: 1, Groups: []*Group{{Name: "g", Rand: r, Streams: []Stream{{Mix: mix}}}, {Name: "g", Rand: r, Streams: []Stream{{Mix: mix}}}}, Recorder: &Recorder{}}, "repeated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.spec.Validate()
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
	if _, err := NewKeyMix([]Weighted{{Kind: Get, Weight: -1}}, nil, 0); !errors.Is(err, ErrInvalid) {
		t.Errorf("bad mix: %v", err)
	}
}

// TestStartAt checks a run whose clock's zero is not when it starts: a
// run started 25 ms after its origin skips the slots that have passed, one
// started 15 ms before waits for its first slot (a start before the origin
// would show as a negative time); and Recorder.RunOf names each group's
// run in the trace.
func TestStartAt(t *testing.T) {
	for _, tc := range []struct {
		name      string
		startedAt time.Duration // on the simulator's clock
		origin    time.Duration
		want      []time.Duration // on the run's clock
	}{
		{name: "late", startedAt: ms(25), origin: 0, want: []time.Duration{ms(25), ms(30), ms(40), ms(50)}},
		{name: "early", startedAt: 0, origin: ms(15), want: []time.Duration{0, ms(10), ms(20), ms(30), ms(40), ms(50)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ft := newFake(ms(1))
			var ops []Op
			rec := &Recorder{Keep: true, RunOf: func(g *Group) string { return "run-" + g.Name }, OnOp: collect(&ops)}
			g := &Group{Name: "r", Rand: rand.New(rand.NewPCG(1, 1)), Streams: []Stream{{Mix: getMix(t, 1), Every: ms(10)}}}
			d, err := New(ft, Spec{Groups: []*Group{g}, Duration: ms(60), Recorder: rec})
			if err != nil {
				t.Fatal(err)
			}
			ft.sim.After(tc.startedAt, func() { d.StartAt(SimRuntime{Sim: ft.sim}, tc.origin) })
			if err := ft.sim.RunUntil(time.Hour, d.Done); err != nil || !d.Done() {
				t.Fatalf("run not done: %v", err)
			}
			if got := starts(&ops); !slices.Equal(got, tc.want) {
				t.Errorf("starts %v, want %v", got, tc.want)
			}
			for _, op := range rec.Ops() {
				if op.Run != "run-r" {
					t.Fatalf("trace op %+v, want run run-r", op)
				}
			}
		})
	}
}
