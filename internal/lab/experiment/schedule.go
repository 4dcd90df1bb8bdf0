package experiment

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"gopkg.in/yaml.v3"
)

// Span is a duration, or a range of durations to draw from uniformly.
// In YAML it is one duration (5s) or two ([2s, 10s]).
type Span struct {
	Min, Max time.Duration
}

// UnmarshalYAML reads a duration or a [min, max] pair.
func (r *Span) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		var d time.Duration
		if err := n.Decode(&d); err != nil {
			return err
		}
		*r = Span{Min: d, Max: d}
		return nil
	}
	var pair []time.Duration
	if err := n.Decode(&pair); err != nil {
		return err
	}
	if len(pair) != 2 {
		return fmt.Errorf("line %d: want a duration or [min, max], got %d values", n.Line, len(pair))
	}
	*r = Span{Min: pair[0], Max: pair[1]}
	return nil
}

func (r Span) String() string {
	if r.Min == r.Max {
		return r.Min.String()
	}
	return fmt.Sprintf("%s to %s", r.Min, r.Max)
}

// spikeStream is the PCG stream of the spikes generator of schedule
// event i (spikeStream+i): apart from the workload's stream (5), so that
// spikes do not change the operations drawn.
const spikeStream = 0x5b1ce

// maxSpikes bounds the spikes one spikes event makes in a run, and the
// pauses of one node that a stalls event makes.
const maxSpikes = 10_000

// stallStream is the first PCG stream of the pauses of schedule event i
// at the topology's storage node j (stallStream + i<<16 + j).
const stallStream = 0x57a11 << 20

// expandSchedule returns the events of one run of s with this seed and
// scale: the schedule with At, AfterGets and each spikes event's times
// (at, until, every, for) multiplied by scale, and each spikes event
// replaced by its random latency spikes. A spike is a pair of add-rtt
// events on the spikes event's link, +RTT at its start and -RTT at its
// end; the gaps from the start of the spiky period, and from one spike's
// end to the next one's start, are exponential with mean Every, the
// spikes last a uniform draw from For, and the last one is cut short at
// Until. Likewise each stalls event is replaced by pause events, one
// sequence per node it stalls: exponential gaps of mean Every between
// one pause's end and the next one's start, lengths drawn from For. The
// events are sorted by At (those fired by a Get count, whose
// At is 0, first).
//
// The result depends on (s, seed, scale) alone, so every strategy's run,
// in the simulator or on a cluster, faces the same spikes (common random
// numbers), and a smaller scale gives the same spikes compressed.
func expandSchedule(s *Scenario, seed uint64, scale float64) []EventSpec {
	at := func(d time.Duration) time.Duration { return time.Duration(float64(d) * scale) }
	var out []EventSpec
	for i, e := range s.Schedule {
		if e.AfterGets > 0 {
			e.AfterGets = max(1, int(math.Round(float64(e.AfterGets)*scale)))
			out = append(out, e)
			continue
		}
		if e.Action == ActionStalls {
			out = append(out, expandStalls(s, e, i, seed, at)...)
			continue
		}
		if e.Action != ActionSpikes {
			e.At = at(e.At)
			out = append(out, e)
			continue
		}
		rng := rand.New(rand.NewPCG(seed, spikeStream+uint64(i)))
		t := e.At
		for range maxSpikes {
			t += time.Duration(rng.ExpFloat64() * float64(e.Every))
			length := e.For.Min + time.Duration(rng.Float64()*float64(e.For.Max-e.For.Min))
			if t >= e.Until {
				break
			}
			end := min(t+length, e.Until)
			on := e
			on.Action, on.At, on.spike = ActionAddRTT, at(t), 1
			on.Every, on.For, on.Until = 0, Span{}, 0
			off := on
			off.At, off.RTT, off.spike = at(end), -e.RTT, -1
			out = append(out, on, off)
			t = end
		}
	}
	slices.SortStableFunc(out, func(a, b EventSpec) int { return cmp.Compare(a.At, b.At) })
	return out
}

// expandStalls draws the pauses of stalls event e, the i-th of the
// schedule.
func expandStalls(s *Scenario, e EventSpec, i int, seed uint64, at func(time.Duration) time.Duration) []EventSpec {
	var nodes []string
	if e.Node != "" {
		id, _ := s.replicaNode(e.Node)
		nodes = append(nodes, id)
	} else {
		for _, id := range s.topo.Replicas() {
			nodes = append(nodes, string(id))
		}
	}
	var out []EventSpec
	for j, id := range nodes {
		rng := rand.New(rand.NewPCG(seed, stallStream+uint64(i)<<16+uint64(j)))
		t := e.At
		for range maxSpikes {
			t += time.Duration(rng.ExpFloat64() * float64(e.Every))
			if t >= e.Until {
				break
			}
			length := e.For.Min + time.Duration(rng.Float64()*float64(e.For.Max-e.For.Min))
			length = min(length, e.Until-t)
			out = append(out, EventSpec{Label: e.Label, At: at(t), Action: ActionPause, Node: id,
				For: Span{Min: at(length), Max: at(length)}, stall: true})
			t += length
		}
	}
	return out
}

// validateSpikes checks a spikes event's own fields and fills in Until.
func (s *Scenario) validateSpikes(field string, e *EventSpec) error {
	if e.AfterGets == 0 && e.RTT <= 0 {
		return invalid(field+".rtt", "spikes need a positive rtt, the round trip each spike adds")
	}
	return s.validateRecurring(field, e, recurring{name: "spikes", gap: "spikes", count: "spikes"})
}

// A recurring is a kind of event that recurs from At until Until at
// exponential gaps of mean Every, each lasting For.
type recurring struct {
	name string
	// gap is what Every is the mean gap between, count what the
	// recurrences are counted as.
	gap, count string
	// maxFor bounds For's max; 0 for no bound.
	maxFor time.Duration
}

// stalls are the stalls event's recurrences.
var stalls = recurring{name: "stalls", gap: "a node's pauses", count: "pauses per node", maxFor: maxService}

// validateRecurring checks a recurring event's own fields and fills in
// Until.
func (s *Scenario) validateRecurring(field string, e *EventSpec, k recurring) error {
	if e.AfterGets > 0 {
		return invalid(field+".after_gets", "%s start at a time (at), not after a number of Gets", k.name)
	}
	if e.Every <= 0 {
		return invalid(field+".every", "%s need a positive every, the mean gap between %s", k.name, k.gap)
	}
	if e.For.Min <= 0 || e.For.Max < e.For.Min || (k.maxFor > 0 && e.For.Max > k.maxFor) {
		order := "min <= max"
		if k.maxFor > 0 {
			order += " <= " + k.maxFor.String()
		}
		return invalid(field+".for", "%s: %s need a positive duration or [min, max] with %s", e.For, k.name, order)
	}
	if e.Until == 0 {
		e.Until = s.Workload.Duration
	}
	if e.Until == 0 {
		return invalid(field+".until", "%s need until when the workload runs by ops", k.name)
	}
	if e.Until <= e.At {
		return invalid(field+".until", "%s is not after at (%s)", e.Until, e.At)
	}
	if n := (e.Until - e.At) / e.Every; n > maxSpikes {
		return invalid(field+".every", "%s between %s and %s makes about %d %s, over %d", e.Every, e.At, e.Until, n, k.count, maxSpikes)
	}
	return nil
}

// scheduled returns the events that the schedule names, without the
// spikes of spikes events: the adaptation analysis is theirs alone. (The
// pauses of stalls events are not recorded at all.)
func scheduled(events []EventRecord) []EventRecord {
	return slices.DeleteFunc(slices.Clone(events), func(e EventRecord) bool { return e.Spike != 0 })
}
