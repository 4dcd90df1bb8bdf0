package experiment

import (
	"fmt"
	"strings"
	"time"

	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/sla"
)

// topologyLink is the round trip and one-way jitter the topology gives
// the link between sites a and b (a == b: within a site).
func topologyLink(s *Scenario, a, b string) (rtt, jitter time.Duration) {
	if a == b {
		return s.topo.LocalRTT, s.topo.LocalJitter
	}
	l, _ := s.topo.Link(a, b)
	return l.RTT, l.Jitter
}

// replicaSites are the sites of the table's replicas, primary first.
func replicaSites(s *Scenario) []string {
	return append([]string{s.Table.Primary}, s.Table.Secondaries...)
}

func siteOf(id wire.NodeID) string {
	site, _, _ := strings.Cut(string(id), "/")
	return site
}

// network is what a scheduled change acts on: the simulator's links and
// nodes, or a local cluster's emulated WAN.
type network interface {
	// setLink sets the round trip and one-way jitter of the link between
	// sites a and b (a == b: between a client and a node of one site).
	setLink(a, b string, rtt, jitter time.Duration) error
	partition(a, b string) error
	heal(a, b string) error
	crash(node string) error
	restart(node string) error
	// setService sets the time a storage node spends on each request,
	// beyond what it spends anyway.
	setService(node string, d time.Duration) error
	// pause stops a storage node for d; it then handles what queued.
	pause(node string, d time.Duration) error
}

// world is the oracle's view of the network for one run: the configured
// round trips and jitters, cut links, crashed nodes and slow nodes'
// service times. It applies the scheduled changes to net. The round
// trips added by the spikes of spikes events are kept apart in spike:
// the oracle looks through them (see EventSpec).
type world struct {
	s       *Scenario
	net     network
	client  string
	rtt     map[[2]string]time.Duration
	spike   map[[2]string]time.Duration
	jitter  map[[2]string]time.Duration
	down    map[[2]string]bool
	crashed map[string]bool
	service map[string]time.Duration
}

func pair(a, b string) [2]string {
	if b < a {
		a, b = b, a
	}
	return [2]string{a, b}
}

func newWorld(s *Scenario, net network, client string) *world {
	o := &world{s: s, net: net, client: client, rtt: map[[2]string]time.Duration{},
		spike: map[[2]string]time.Duration{}, jitter: map[[2]string]time.Duration{},
		down: map[[2]string]bool{}, crashed: map[string]bool{}, service: map[string]time.Duration{}}
	for _, st := range s.topo.Sites {
		o.rtt[pair(st.Name, st.Name)] = s.topo.LocalRTT
		o.jitter[pair(st.Name, st.Name)] = s.topo.LocalJitter
	}
	for _, l := range s.topo.Links {
		o.rtt[pair(l.A, l.B)] = l.RTT
		o.jitter[pair(l.A, l.B)] = l.Jitter
	}
	return o
}

// apply makes a scheduled change and describes it.
func (o *world) apply(e EventSpec) (string, error) {
	switch e.Action {
	case ActionCrash, ActionRestart:
		id, _ := o.s.replicaNode(e.Node)
		if e.Action == ActionCrash {
			o.crashed[id] = true
			return "crash " + id, o.net.crash(id)
		}
		delete(o.crashed, id)
		return "restart " + id, o.net.restart(id)
	case ActionSpikes:
		return "", fmt.Errorf("experiment: spikes event %s applied whole: expand the schedule first (expandSchedule)", e.Label)
	case ActionStalls:
		return "", fmt.Errorf("experiment: stalls event %s applied whole: expand the schedule first (expandSchedule)", e.Label)
	case ActionPause:
		id, _ := o.s.replicaNode(e.Node)
		return fmt.Sprintf("pause %s for %s", id, e.For.Min), o.net.pause(id, e.For.Min)
	case ActionSlow:
		id, _ := o.s.replicaNode(e.Node)
		o.service[id] = e.Service
		return fmt.Sprintf("slow %s: service now %s", id, e.Service), o.net.setService(id, e.Service)
	}
	a, b := o.s.site(e.From, o.client), o.s.site(e.To, o.client)
	key := pair(a, b)
	switch e.Action {
	case ActionPartition:
		o.down[key] = true
		return fmt.Sprintf("partition %s-%s", a, b), o.net.partition(a, b)
	case ActionHeal:
		delete(o.down, key)
		return fmt.Sprintf("heal %s-%s", a, b), o.net.heal(a, b)
	case ActionAddRTT:
		if e.spike != 0 {
			o.spike[key] += e.RTT
			break
		}
		o.rtt[key] = max(0, o.rtt[key]+e.RTT)
	case ActionSetRTT:
		o.rtt[key] = e.RTT
		if e.Jitter != nil {
			o.jitter[key] = *e.Jitter
		}
	case ActionRestore:
		o.rtt[key], o.jitter[key] = topologyLink(o.s, a, b)
	}
	rtt := max(0, o.rtt[key]+o.spike[key])
	desc := fmt.Sprintf("%s %s-%s: rtt now %s", e.Action, a, b, rtt)
	return desc, o.net.setLink(a, b, rtt, o.jitter[key])
}

// best returns the attainable (subSLA, node) choices of highest utility
// for this run's client, as Adaptation describes.
func (o *world) best(agreement sla.SLA, layout wire.Layout) (float64, []string) {
	utility := -1.0
	var choices []string
	tablet := layout.Tablets[0]
	for i, sub := range agreement {
		for _, id := range tablet.Replicas() {
			site := siteOf(id)
			if o.crashed[string(id)] || o.down[pair(o.client, site)] {
				continue
			}
			primary := id == tablet.Primary
			if !primary && sub.Consistency.Kind != sla.Eventual {
				continue
			}
			if o.rtt[pair(o.client, site)]+o.service[string(id)] > sub.Latency {
				continue
			}
			c := fmt.Sprintf("%d@%s", i+1, site)
			switch {
			case sub.Utility > utility:
				utility, choices = sub.Utility, []string{c}
			case sub.Utility == utility:
				choices = append(choices, c)
			}
		}
	}
	return max(utility, 0), choices
}
