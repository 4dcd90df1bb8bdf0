package check

import "github.com/cosla/cosla/sla"

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
}

// Summarize counts the operations of h.
func Summarize(h []Op) Summary {
	s := Summary{ByConsistency: make(map[sla.Kind]int), ByRank: make(map[int]int)}
	for _, op := range h {
		switch op.Kind {
		case Put:
			s.Puts++
			if op.OK {
				s.AckedPuts++
			}
		case Get:
			s.Gets++
			if !op.OK {
				continue
			}
			s.MetGets++
			if !op.Found {
				s.NotFound++
			}
			s.ByConsistency[op.Met.Consistency.Kind]++
			s.ByRank[op.MetRank]++
		}
	}
	return s
}
