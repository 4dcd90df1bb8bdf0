package experiment

import (
	"cmp"
	"slices"
	"testing"
	"time"
)

const spikyScenario = `
slas: [{sla: password-checking}]
clients: [us]
strategies: [primary]
workload: {keys: 100, duration: 10m, think: 100ms}
schedule:
  - {label: jam, at: 1m, action: set-rtt, to: primary, rtt: 200ms}
  - {label: spiky, at: 30s, action: spikes, to: primary, rtt: 400ms, every: 20s, for: [2s, 10s], until: 9m}
  - {label: count, after_gets: 100, action: restore, to: primary}
  - {label: long, at: 0s, action: spikes, to: local, rtt: 1s, every: 1s, for: 1h, until: 2m}
`

// TestExpandSchedule checks the spikes expansion: a function of the seed,
// spikes within [at, until], each one an add-rtt +RTT and a later -RTT on
// the same link, never overlapping, and a smaller scale compressing the
// same spikes.
func TestExpandSchedule(t *testing.T) {
	s, err := Parse([]byte(spikyScenario), "spiky")
	if err != nil {
		t.Fatal(err)
	}
	events := expandSchedule(s, testSeed, 1)
	if again := expandSchedule(s, testSeed, 1); !slices.Equal(eventTimes(events), eventTimes(again)) {
		t.Fatalf("seed %d: two expansions differ", testSeed)
	}
	if other := expandSchedule(s, testSeed+1, 1); slices.Equal(eventTimes(events), eventTimes(other)) {
		t.Errorf("seeds %d and %d give the same spikes", testSeed, testSeed+1)
	}
	if !slices.IsSortedFunc(events, func(a, b EventSpec) int { return cmp.Compare(a.At, b.At) }) {
		t.Errorf("events not sorted by time")
	}
	var spikes int
	var extra time.Duration // the spikes' RTT on the link now
	var long []time.Duration
	for _, e := range events {
		switch e.Label {
		case "long":
			long = append(long, e.At)
			continue
		case "jam":
			if e.At != time.Minute || e.spike != 0 {
				t.Errorf("jam: at %s, spike %d; want 1m, 0", e.At, e.spike)
			}
			continue
		case "count":
			if e.AfterGets != 100 || e.spike != 0 {
				t.Errorf("count: after %d Gets, spike %d; want 100, 0", e.AfterGets, e.spike)
			}
			continue
		}
		if e.Action != ActionAddRTT || e.From != "local" || e.To != "primary" || e.Every != 0 {
			t.Errorf("spike event %+v, want an add-rtt on the link local-primary", e)
		}
		if e.At < 30*time.Second || e.At > 9*time.Minute {
			t.Errorf("spike event at %s, outside [30s, 9m]", e.At)
		}
		switch {
		case e.spike == 1 && e.RTT == 400*time.Millisecond && extra == 0:
			spikes++
		case e.spike == -1 && e.RTT == -400*time.Millisecond && extra == 400*time.Millisecond:
		default:
			t.Fatalf("spike event %+v with %s of spikes on the link: starts and ends do not alternate", e, extra)
		}
		extra += e.RTT
	}
	if extra != 0 {
		t.Errorf("the spikes leave %s on the link", extra)
	}
	// An hour-long spike is cut short at until.
	if len(long) != 2 || long[1] != 2*time.Minute {
		t.Errorf("long: spike events at %v, want one spike ending at 2m", long)
	}
	// 8.5 minutes of gaps of 20 s and spikes of 6 s on average: about 20.
	if spikes < 10 || spikes > 40 {
		t.Errorf("%d spikes, want about 20", spikes)
	}
	half := expandSchedule(s, testSeed, 0.5)
	if len(half) != len(events) {
		t.Fatalf("scale 0.5: %d events, want %d", len(half), len(events))
	}
	for i, e := range half {
		if d := e.At - events[i].At/2; d < -time.Microsecond || d > time.Microsecond {
			t.Errorf("scale 0.5: event %d at %s, want %s", i, e.At, events[i].At/2)
		}
	}
	if half[0].AfterGets != 50 {
		t.Errorf("scale 0.5: after %d Gets, want 50", half[0].AfterGets)
	}
}

func eventTimes(events []EventSpec) []time.Duration {
	var out []time.Duration
	for _, e := range events {
		out = append(out, e.At, e.RTT)
	}
	return out
}

// TestSlowAndSpikes runs a slow primary under spikes: the simulator serves
// the primary's requests 200 ms slower, the oracle counts that, and it
// looks through the spikes, which get no adaptation analysis.
func TestSlowAndSpikes(t *testing.T) {
	s, err := Parse([]byte(`
slas: [{sla: password-checking}]
clients: [us]
strategies: [primary]
workload: {keys: 100, duration: 2m, think: 100ms}
schedule:
  - {label: spiky, at: 0s, action: spikes, to: primary, rtt: 400ms, every: 5s, for: 1s}
  - {label: slow, at: 1m, action: slow, node: primary, service: 200ms}
outputs: [utility, timeline]
`), "slow")
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(s, RunOptions{Seed: testSeed})
	if err != nil {
		t.Fatal(err)
	}
	run := r.Runs[0]
	var spikes, named []EventRecord
	for _, e := range run.Events {
		if e.Spike != 0 {
			spikes = append(spikes, e)
		} else {
			named = append(named, e)
		}
	}
	if len(named) != 1 || len(run.Adaptation) != 1 || len(spikes) < 10 {
		t.Fatalf("%d named events, %d adaptations, %d spike events; want 1, 1 and some 20", len(named), len(run.Adaptation), len(spikes))
	}
	if e := named[0]; e.BestUtility != 0.5 || !slices.Equal(e.Best, []string{"2@us"}) {
		t.Errorf("with the primary 200 ms slow the oracle's best is %v (%.2f), want 2@us (0.5)", e.Best, e.BestUtility)
	}
	for _, e := range spikes {
		want := 1.0
		if e.AtS >= 60 {
			want = 0.5
		}
		if e.BestUtility != want {
			t.Errorf("spike event at %.1f s: best utility %.2f, want %.2f (as without spikes)", e.AtS, e.BestUtility, want)
		}
	}
	// Gets at the primary take 147 ms (give or take the link's jitter),
	// plus 400 ms in a spike, plus 200 ms once it is slow.
	var fast, slow int
	for _, g := range run.Timeline {
		switch {
		case g.AtS < 60 && g.RTTMS < 150:
			fast++
		case g.AtS > 61 && g.RTTMS < 340:
			t.Fatalf("Get at %.1f s took %.1f ms with the primary slow", g.AtS, g.RTTMS)
		case g.AtS > 61:
			slow++
		}
	}
	if fast == 0 || slow == 0 {
		t.Errorf("%d Gets under 150 ms before the primary turned slow, %d after; want some of each", fast, slow)
	}
}

// TestExpandStalls checks the stalls expansion: per node, pauses within
// [at, until] that never overlap, lengths drawn from for, a function of
// the seed; a stalls event with a node stalls that node alone, and the
// pauses are left out of the events recorded.
func TestExpandStalls(t *testing.T) {
	s, err := Parse([]byte(`
slas: [{sla: password-checking}]
clients: [us]
strategies: [primary]
workload: {keys: 100, duration: 2m, think: 100ms}
schedule:
  - {label: gc, at: 10s, action: stalls, every: 1s, for: [20ms, 80ms], until: 1m}
  - {label: one, at: 1m, action: stalls, node: primary, every: 2s, for: 100ms}
outputs: [utility, timeline]
`), "stalls")
	if err != nil {
		t.Fatal(err)
	}
	events := expandSchedule(s, testSeed, 1)
	if again := expandSchedule(s, testSeed, 1); !slices.Equal(eventTimes(events), eventTimes(again)) {
		t.Fatalf("seed %d: two expansions differ", testSeed)
	}
	if other := expandSchedule(s, testSeed+1, 1); slices.Equal(eventTimes(events), eventTimes(other)) {
		t.Errorf("seeds %d and %d give the same pauses", testSeed, testSeed+1)
	}
	end := map[string]time.Duration{} // each node's last pause's end
	count := map[string]int{}
	for _, e := range events {
		if e.Action != ActionPause || !e.stall || e.For.Min != e.For.Max {
			t.Fatalf("event %+v, want a pause of one length drawn for a stalls event", e)
		}
		if e.Label == "one" && e.Node != "england/r1" {
			t.Errorf("stalls of the primary pause %s", e.Node)
		}
		from, until, lo, hi := 10*time.Second, time.Minute, 20*time.Millisecond, 80*time.Millisecond
		if e.Label == "one" {
			from, until, lo, hi = time.Minute, 2*time.Minute, 100*time.Millisecond, 100*time.Millisecond
		}
		if e.At < from || e.At+e.For.Min > until || e.For.Min < lo || e.For.Min > hi {
			t.Errorf("%s: pause of %s at %s, outside %s..%s or %s..%s long", e.Label, e.Node, e.At, from, until, lo, hi)
		}
		if e.At < end[e.Node] {
			t.Errorf("%s: pause of %s at %s overlaps the one before, ending at %s", e.Label, e.Node, e.At, end[e.Node])
		}
		end[e.Node] = e.At + e.For.Min
		count[e.Label+" "+e.Node]++
	}
	// 50 s of gaps of 1 s (and pauses of 50 ms) at each of the 3 storage
	// nodes: about 48 each; 60 s of gaps of 2 s at the primary: about 29.
	if len(count) != 4 {
		t.Errorf("pauses at %v, want every storage node's for gc and the primary's for one", count)
	}
	for k, n := range count {
		if want := 48; k == "one england/r1" {
			want = 29
			if n < want/2 || n > 2*want {
				t.Errorf("%s: %d pauses, want about %d", k, n, want)
			}
		} else if n < want/2 || n > 2*want {
			t.Errorf("%s: %d pauses, want about %d", k, n, want)
		}
	}
	r, err := Run(s, RunOptions{Seed: testSeed})
	if err != nil {
		t.Fatal(err)
	}
	run := r.Runs[0]
	if n := len(run.Events); n != 0 {
		t.Errorf("%d events recorded, want none: the pauses are not recorded one by one", n)
	}
	// Gets at the primary take 147 ms, give or take the link's jitter,
	// and up to a pause more once the stalls begin.
	var held int
	for _, g := range run.Timeline {
		switch {
		case g.AtS < 10 && g.RTTMS > 155:
			t.Errorf("Get at %.1f s took %.1f ms before the stalls", g.AtS, g.RTTMS)
		case g.AtS > 10 && g.RTTMS > 160:
			held++
		}
	}
	if held == 0 {
		t.Errorf("no Get held by a pause")
	}
}
