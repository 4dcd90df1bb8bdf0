package check

import (
	"time"

	"github.com/cosla/cosla/sla"
)

// Summary counts the operations of a history, so that a randomized test can
// tell whether a run exercised the guarantees it meant to check.
type Summary struct {
	Puts      int // all Puts
	AckedPuts int // Puts with OK
	Gets      int // all Gets
	MetGets   int // Gets with OK, the ones Check verifies
	NotFound  int // Gets with OK that found no version
	// ByConsistency counts Gets with OK per guarantee of the subSLA met.
	ByConsistency map[sla.Kind]int
	// ByRank counts Gets with OK per 1-based rank of the subSLA met.
	ByRank map[int]int
	// QuorumGets counts the Gets with OK that rule "quorum" binds to a
	// Put: an acknowledged Put to their key, not Lost, whose write level
	// overlaps their read level (r + w > N) returned before they were
	// called.
	QuorumGets int
	// PendingPuts counts the Puts with OK and Pending, SessionGets the
	// Gets with OK that returned their session's pending write
	// (FromSession).
	PendingPuts, SessionGets int
	// LostPuts counts the Puts with OK and Lost: acknowledged, then
	// rolled back at a failover.
	LostPuts int
}

// Summarize counts the operations of h.
func Summarize(h []Op) Summary {
	s := Summary{ByConsistency: make(map[sla.Kind]int), ByRank: make(map[int]int)}
	// firstReturn[key][w] is when the first acknowledged Put to key with
	// write level w returned.
	firstReturn := make(map[string]map[int]time.Duration)
	for _, op := range h {
		if op.Kind != Put || !op.OK || op.Pending || op.Lost || op.Level <= 0 {
			continue
		}
		byLevel := firstReturn[op.Key]
		if byLevel == nil {
			byLevel = make(map[int]time.Duration)
			firstReturn[op.Key] = byLevel
		}
		if ret, ok := byLevel[op.Level]; !ok || op.Return < ret {
			byLevel[op.Level] = op.Return
		}
	}
	for _, op := range h {
		switch op.Kind {
		case Put:
			s.Puts++
			if op.OK {
				s.AckedPuts++
			}
			if op.OK && op.Pending {
				s.PendingPuts++
			}
			if op.OK && op.Lost {
				s.LostPuts++
			}
		case Get:
			s.Gets++
			if !op.OK {
				continue
			}
			s.MetGets++
			if op.FromSession {
				s.SessionGets++
			}
			if !op.Found {
				s.NotFound++
			}
			s.ByConsistency[op.Met.Consistency.Kind]++
			s.ByRank[op.MetRank]++
			for w, ret := range firstReturn[op.Key] {
				if quorumBound(op.Level, w, op.Replicas) && ret < op.Call {
					s.QuorumGets++
					break
				}
			}
		}
	}
	return s
}
