package clientcore

import (
	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/sla"
)

// minTS is a subSLA's minimum acceptable read timestamp (Pileus 4.4).
// primaryOnly marks strong consistency, which only the primary provides.
type minTS struct {
	ts          hlc.Timestamp
	primaryOnly bool
}

// minReadTimestamps fills c.mins with the minimum acceptable read
// timestamp of each subSLA for a Get of key starting now.
func (c *Client) minReadTimestamps(s *Session, agreement sla.SLA, key string) []minTS {
	c.mins = c.mins[:0]
	now := c.env.WallNanos()
	for _, sub := range agreement {
		m := minTS{primaryOnly: sub.Consistency.Kind == sla.Strong}
		if !m.primaryOnly {
			m.ts = s.minReadTS(sub.Consistency, key, now, int64(c.opts.ClockUncertainty))
		}
		c.mins = append(c.mins, m)
	}
	return c.mins
}

// pNodeCons is PNodeCons (Pileus 4.5): 1 if the replica's last known high
// timestamp reaches the minimum acceptable read timestamp, else 0. The
// estimate is conservative because high timestamps only grow.
func pNodeCons(r *replicaState, m minTS) float64 {
	if r.primary || (!m.primaryOnly && !r.high.Less(m.ts)) {
		return 1
	}
	return 0
}

// pNodeSLA is PNodeSla (Pileus 4.5): PNodeCons times PNodeLat.
func pNodeSLA(r *replicaState, sub *sla.SubSLA, m minTS) float64 {
	return pNodeCons(r, m) * r.rtt.pWithin(sub.Latency)
}

// selectTarget is SelectTarget of Pileus Fig. 8: the subSLA and replica
// with the highest expected utility, PNodeSla times the subSLA's utility.
// Among replicas of equal expected utility it takes the closest, by mean
// round-trip time with unmeasured nodes last (rtt.Window.Distance). It
// returns indexes into agreement and replicas.
//
// As in the figure, a replica whose expected utility for a lower subSLA
// equals the best so far joins the candidates while the target stays the
// higher subSLA. Keeping only the closest candidate as we go, and replacing
// it only with a strictly closer one, picks the same replica as collecting
// the candidates and scanning them afterwards.
//
// Beyond every anchor (DESIGN.md section 4): when quorum is not zero, a
// read of the quorum nearest replicas is strong without the primary (the
// table's write level overlaps it), and it is a candidate for every strong
// subSLA. It meets the subSLA when all quorum replies come within its
// latency, which we estimate as the product of the replicas' PNodeLat (as
// if independent); its distance, for ties, is that of the quorum-th
// nearest replica, the reply it waits for; on an exact tie a single
// replica is preferred. useQuorum reports that it won;
// replica is then -1.
func selectTarget(agreement sla.SLA, mins []minTS, replicas []*replicaState, quorum int) (target, replica int, utility float64, useQuorum bool) {
	utility, target, replica = -1, -1, -1
	var bestRTT int64
	var buf [8]int
	var group []int
	for i := range agreement {
		sub := &agreement[i]
		for j, r := range replicas {
			// A replica that cannot reach the best so far even on time
			// is passed over without looking at its round trips: PNodeLat
			// is at most 1, so u is at most PNodeCons times the utility.
			if pNodeCons(r, mins[i])*sub.Utility < utility {
				continue
			}
			u := pNodeSLA(r, sub, mins[i]) * sub.Utility
			switch {
			case u > utility:
				utility, target, replica, useQuorum = u, i, j, false
				bestRTT = int64(r.rtt.Distance())
			case u == utility:
				if rtt := int64(r.rtt.Distance()); rtt < bestRTT {
					replica, bestRTT, useQuorum = j, rtt, false
				}
			}
		}
		if quorum > 0 && mins[i].primaryOnly {
			if group == nil {
				group = nearest(buf[:0], replicas, quorum, 0)
			}
			p := 1.0
			for _, j := range group {
				p *= replicas[j].rtt.pWithin(sub.Latency)
			}
			u := p * sub.Utility
			rtt := int64(replicas[group[len(group)-1]].rtt.Distance())
			switch {
			case u > utility:
				utility, target, replica, useQuorum, bestRTT = u, i, -1, true, rtt
			case u == utility && rtt < bestRTT:
				replica, useQuorum, bestRTT = -1, true, rtt
			}
		}
	}
	return target, replica, utility, useQuorum
}

// closest returns the index of the nearest replica by rtt.Window.Distance,
// the first one on ties.
func closest(replicas []*replicaState) int {
	best := 0
	for j, r := range replicas {
		if r.rtt.Distance() < replicas[best].rtt.Distance() {
			best = j
		}
	}
	return best
}

// metSubSLA decides which subSLA a reply met (Pileus 4.6.2): the first,
// in rank order, whose latency covers the measured round trip and whose
// consistency the replica's high timestamp (or primacy) provides. It may be
// higher than the target (Fig. 9). It returns -1 if none was met.
func metSubSLA(agreement sla.SLA, mins []minTS, rtt int64, high hlc.Timestamp, primary bool) int {
	for i := range agreement {
		if rtt > int64(agreement[i].Latency) {
			continue
		}
		m := mins[i]
		if primary || (!m.primaryOnly && !high.Less(m.ts)) {
			return i
		}
	}
	return -1
}
