package clientcore

import (
	"strings"
	"testing"
	"time"

	"github.com/cosla/cosla/internal/core/wire"
)

// TestOptionsAdaptiveProbing checks the defaults and validation of the
// adaptive probing options (Pileus 6.1).
func TestOptionsAdaptiveProbing(t *testing.T) {
	nodes := []wire.NodeID{"a/r1"}
	for _, tc := range []struct {
		name     string
		opts     Options
		min, max time.Duration
		err      string // a substring of the error, or "" for valid
	}{
		{name: "off", opts: Options{}},
		{name: "defaults", opts: Options{AdaptiveProbing: true}, min: 2500 * time.Millisecond, max: 40 * time.Second},
		{name: "defaults follow ProbeInterval", opts: Options{AdaptiveProbing: true, ProbeInterval: 4 * time.Second},
			min: time.Second, max: 16 * time.Second},
		{name: "bounds equal to ProbeInterval", opts: Options{AdaptiveProbing: true, MinProbeInterval: 10 * time.Second, MaxProbeInterval: 10 * time.Second},
			min: 10 * time.Second, max: 10 * time.Second},
		{name: "min above ProbeInterval", opts: Options{AdaptiveProbing: true, MinProbeInterval: 11 * time.Second},
			err: "Options.MinProbeInterval"},
		{name: "negative min", opts: Options{AdaptiveProbing: true, MinProbeInterval: -time.Second},
			err: "Options.MinProbeInterval"},
		{name: "max below ProbeInterval", opts: Options{AdaptiveProbing: true, MaxProbeInterval: 9 * time.Second},
			err: "Options.MaxProbeInterval"},
		{name: "bounds without AdaptiveProbing", opts: Options{MinProbeInterval: time.Second},
			err: "AdaptiveProbing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Nodes = nodes
			o := tc.opts.EnsureDefaults()
			err := o.Validate()
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Validate() = %v, want an error naming %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o.MinProbeInterval != tc.min || o.MaxProbeInterval != tc.max {
				t.Errorf("MinProbeInterval, MaxProbeInterval = %s, %s; want %s, %s", o.MinProbeInterval, o.MaxProbeInterval, tc.min, tc.max)
			}
		})
	}
}

// TestAdaptProbe follows one replica's probe interval through a sequence
// of probes: stable probes double it, one that departs from the mean by
// more than a quarter (and 5 ms) or times out drops it to the minimum,
// and two departing probes that agree forget the samples before them.
func TestAdaptProbe(t *testing.T) {
	m := newMonitor(Options{AdaptiveProbing: true}.EnsureDefaults())
	r := &replicaState{id: "a/r1", rtt: newRTTStats(64)}
	at := epoch
	for i, step := range []struct {
		rtt      time.Duration
		timedOut bool
		interval time.Duration
		samples  int
	}{
		{rtt: ms(100), interval: 10 * time.Second, samples: 1}, // the first sample is not judged
		{rtt: ms(110), interval: 20 * time.Second, samples: 2},
		{rtt: ms(90), interval: 40 * time.Second, samples: 3},
		{rtt: ms(100), interval: 40 * time.Second, samples: 4},        // capped
		{rtt: ms(130), interval: 2500 * time.Millisecond, samples: 5}, // departs
		{rtt: ms(100), interval: 5 * time.Second, samples: 6},
		{rtt: 2 * time.Second, timedOut: true, interval: 2500 * time.Millisecond, samples: 7},
		{rtt: ms(100), interval: 2500 * time.Millisecond, samples: 8}, // departs from the mean the timeout raised
		{rtt: ms(105), interval: 2500 * time.Millisecond, samples: 2}, // departs too, agrees with 100: a shift
		{rtt: ms(100), interval: 5 * time.Second, samples: 3},
	} {
		at = at.Add(10 * time.Second)
		mean, measured := r.rtt.Mean(), r.rtt.Len() > 0
		r.rtt.Add(at, step.rtt)
		m.adapt(r, at.Add(-step.rtt), mean, measured, step.rtt, step.timedOut)
		if got := m.probeInterval(r); got != step.interval || r.rtt.Len() != step.samples {
			t.Fatalf("probe %d (%s): interval %s with %d samples, want %s with %d", i+1, step.rtt, got, r.rtt.Len(), step.interval, step.samples)
		}
	}
}
