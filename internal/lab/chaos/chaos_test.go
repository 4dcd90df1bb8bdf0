package chaos

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cosla/cosla/internal/core/clientcore"
	"github.com/cosla/cosla/internal/lab/driver"
	"github.com/cosla/cosla/internal/runtime/topology"
)

func TestWindows(t *testing.T) {
	s := func(start, end int, failed bool) span {
		return span{start: time.Duration(start) * time.Second, end: time.Duration(end) * time.Second, failed: failed}
	}
	w := func(start, end, failed int) window {
		return window{start: time.Duration(start) * time.Second, end: time.Duration(end) * time.Second, failed: failed}
	}
	for _, tc := range []struct {
		name string
		ops  []span
		want []window
	}{
		{name: "no ops"},
		{name: "all succeed", ops: []span{s(0, 1, false), s(1, 2, false)}},
		{name: "one failure", ops: []span{s(0, 1, false), s(1, 3, true), s(3, 4, false)}, want: []window{w(1, 3, 1)}},
		{name: "failures merge until a success",
			ops:  []span{s(0, 1, false), s(2, 4, true), s(3, 5, true), s(5, 6, false), s(7, 8, true)},
			want: []window{w(2, 5, 2), w(7, 8, 1)}},
		{name: "a failure that began before the last success counts from it",
			ops:  []span{s(0, 6, true), s(1, 4, false)},
			want: []window{w(4, 6, 1)}},
		{name: "order of the input does not matter",
			ops:  []span{s(7, 8, true), s(5, 6, false), s(3, 5, true), s(0, 1, false), s(2, 4, true)},
			want: []window{w(2, 5, 2), w(7, 8, 1)}},
		{name: "failing to the end", ops: []span{s(0, 1, true), s(1, 2, true)}, want: []window{w(0, 2, 2)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := windows(tc.ops); !slices.Equal(got, tc.want) {
				t.Errorf("windows(%v) = %v, want %v", tc.ops, got, tc.want)
			}
		})
	}
}

func TestBlame(t *testing.T) {
	events := []Event{
		{Name: "kill", Site: "england", Role: "primary", StartS: 10, EndS: 11},
		{Name: "pause", Site: "us", Role: "secondary", StartS: 20, EndS: 22},
	}
	for _, tc := range []struct {
		start, end float64
		want       []string
	}{
		{5, 6, nil},
		{10.5, 12, []string{"kill england (primary)"}},
		{9, 25, []string{"kill england (primary)", "pause us (secondary)"}},
		{12.5, 13, []string{"none under way; 1.5s after kill england (primary) was healed"}},
		{23, 24, []string{"none under way; 1.0s after pause us (secondary) was healed"}},
	} {
		if got := blame(events, tc.start, tc.end); !slices.Equal(got, tc.want) {
			t.Errorf("blame(%v, %v) = %q, want %q", tc.start, tc.end, got, tc.want)
		}
	}
}

func TestAfterHeal(t *testing.T) {
	events := []Event{{StartS: 10, EndS: 11}, {StartS: 20, EndS: 22}}
	for _, tc := range []struct{ end, want float64 }{
		{5, 0},      // before any fault
		{10.5, 0},   // during the first
		{13, 2},     // 2 s after the first healed
		{21, 0},     // during the second: the first is over, but not the second
		{25.5, 3.5}, // after the second
	} {
		if got := afterHeal(events, tc.end); got != tc.want {
			t.Errorf("afterHeal(end %v) = %v, want %v", tc.end, got, tc.want)
		}
	}
}

func TestParseFaults(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []Fault
		bad  bool
	}{
		{in: "all", want: []Fault{Kill, Partition, Pause}},
		{in: "kill", want: []Fault{Kill}},
		{in: "pause,kill,pause", want: []Fault{Pause, Kill}},
		{in: "failover", want: []Fault{Failover}},
		{in: "kill,failover", want: []Fault{Kill, Failover}},
		{in: "karma", want: []Fault{AZB, AZF, RingPartition}},
		{in: "az-f,ring-partition", want: []Fault{AZF, RingPartition}},
		{in: "kill,crash", bad: true},
		{in: "", bad: true},
	} {
		got, err := ParseFaults(tc.in)
		if tc.bad {
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("ParseFaults(%q) = %v, %v; want an error wrapping ErrInvalid", tc.in, got, err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ParseFaults(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestOptionsValidateNamesTheField(t *testing.T) {
	valid := Options{Dir: "d", Topology: topology.Pileus4()}
	if err := valid.EnsureDefaults().Validate(); err != nil {
		t.Fatalf("valid options: %v", err)
	}
	for _, tc := range []struct {
		field string
		set   func(o *Options)
	}{
		{"Dir", func(o *Options) { o.Dir = "" }},
		{"Kills", func(o *Options) { o.Kills = -1 }},
		{"Kills", func(o *Options) { o.Faults, o.Kills = []Fault{Pause}, 3 }},
		{"Puts", func(o *Options) { o.Puts = -1 }},
		{"Failovers", func(o *Options) { o.Failovers = -1 }},
		{"Failovers", func(o *Options) { o.Faults, o.Failovers = []Fault{Kill}, 3 }},
		{"FailoverHold", func(o *Options) { o.FailoverHold = -time.Second }},
		{"Duration", func(o *Options) { o.Duration = 25 * time.Hour }},
		{"Hold", func(o *Options) { o.Hold = -time.Second }},
		{"Keys", func(o *Options) { o.Keys = -1 }},
		{"Sessions", func(o *Options) { o.Sessions, o.Writers = -1, 1 }},
		{"WriterThink", func(o *Options) { o.WriterThink = -time.Second }},
		{"RequestTimeout", func(o *Options) { o.RequestTimeout = 2 * time.Minute }},
		{"Faults", func(o *Options) { o.Faults = []Fault{9} }},
		{"Topology", func(o *Options) { o.Topology = topology.Topology{Name: "empty"} }},
		{"Topology", func(o *Options) { o.Faults = []Fault{AZB} }},
		{"Faults", func(o *Options) { o.Faults, o.Topology = []Fault{AZB, Kill}, topology.Karma8() }},
	} {
		o := valid
		tc.set(&o)
		err := o.EnsureDefaults().Validate()
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "Options."+tc.field) {
			t.Errorf("Options with a bad %s: Validate() = %v; want an error naming Options.%s", tc.field, err, tc.field)
		}
	}
}

func TestMixes(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	fresh := &freshMix{prefix: "d"}
	for _, want := range []string{"d1", "d2", "d3"} {
		step, ok := fresh.Next(r)
		if !ok || len(step.Ops) != 1 || step.Ops[0].Kind != driver.Put || step.Ops[0].Key != want {
			t.Fatalf("freshMix: %+v, %t; want a Put of %s", step, ok, want)
		}
	}
}

func TestTargetStrikesThePrimaryThenASecondary(t *testing.T) {
	in := newInjector(nil, Options{}.EnsureDefaults(), rand.New(rand.NewPCG(1, 0)), nil, "england", []string{"us", "india"}, 1)
	for _, kind := range Faults {
		if site, role := in.target(kind); site != "england" || role != "primary" {
			t.Errorf("first %s strikes %s (%s), want england (primary)", kind, site, role)
		}
		in.counts[kind]++
		if site, role := in.target(kind); role != "secondary" || (site != "us" && site != "india") {
			t.Errorf("second %s strikes %s (%s), want a secondary", kind, site, role)
		}
		in.counts[kind]++
	}
	if !in.done() {
		t.Errorf("every kind made twice and no kills asked for, but the injector is not done")
	}
	in.o.Kills = 3
	if in.done() {
		t.Errorf("3 kills asked for, 2 made, but the injector is done")
	}
}

func TestCause(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("get: %w", clientcore.ErrTimeout), "timeout"},
		{fmt.Errorf("get: %w", clientcore.ErrSLAUnmet), "sla unmet"},
		{&clientcore.QuorumTimeoutError{Key: "q1", Level: 2, Acks: 1}, "write level not reached"},
		{fmt.Errorf("get %q from india/r1: %w", "q1", clientcore.ErrCatchingUp), "replica catching up"},
		{errors.New("cosla: not primary"), "cosla: not primary"},
	} {
		if got := cause(tc.err); got != tc.want {
			t.Errorf("cause(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

func TestLongestGap(t *testing.T) {
	s := func(start, end int, failed bool) span {
		return span{start: time.Duration(start) * time.Second, end: time.Duration(end) * time.Second, failed: failed}
	}
	for _, tc := range []struct {
		name string
		ops  []span
		want int
	}{
		{name: "no ops"},
		{name: "successes: the slowest first answer or the widest gap between answers", ops: []span{s(0, 2, false), s(1, 3, false), s(3, 6, false)}, want: 3},
		{name: "failures extend the gap until a success", ops: []span{s(0, 1, false), s(1, 5, true), s(5, 7, false)}, want: 6},
		{name: "failing to the end", ops: []span{s(0, 1, false), s(1, 4, true)}, want: 3},
		{name: "another session's success ends the gap", ops: []span{s(0, 6, true), s(0, 2, false), s(2, 3, false)}, want: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := longestGap(tc.ops); got != time.Duration(tc.want)*time.Second {
				t.Errorf("longestGap(%v) = %s, want %ds", tc.ops, got, tc.want)
			}
		})
	}
}
