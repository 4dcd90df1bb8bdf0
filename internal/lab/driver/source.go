package driver

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/lab/workload"
)

// A Step is what a session does at once: one op, or a few back to back
// (a read-modify-write, a scan, a round of Wada's two-key test). The
// driver issues its ops in order, each when the previous one has
// finished, and stops at the first that fails.
type Step struct {
	// Label names the step in the statistics. Default: the first op's
	// kind.
	Label string
	Ops   []Op
	// ValueSize is the size of the values its Puts write; 0 writes just
	// the value's identity (see MakeValue).
	ValueSize int
}

func (s *Step) label() string {
	if s.Label != "" {
		return s.Label
	}
	return s.Ops[0].Kind.String()
}

// A Mix draws a group's steps, on the driver's loop, with the group's
// random source. ok is false once it has no more.
type Mix interface {
	Next(r *rand.Rand) (s Step, ok bool)
}

// Weighted is an op kind and its share of a KeyMix.
type Weighted struct {
	Kind   Kind
	Weight float64
}

// KeyMix draws single-op steps: a kind by weight and a key from a
// distribution over n keys.
type KeyMix struct {
	// KeyName names key number i. Default workload.Key (YCSB's names).
	KeyName func(i uint64) string
	// Bound gives the ops of each kind their bound (dConssandra; see
	// Op.Bound). Default: none.
	Bound map[Kind]wire.Bound
	// TxKeys is the number of keys a get-transaction (GetTx) reads, all
	// drawn from the distribution and different. Default 2.
	TxKeys int

	kinds     []Weighted // weights normalized and cumulative
	keys      workload.Generator
	valueSize int
}

// NewKeyMix returns a mix over the kinds of mix (weights need not sum to
// 1; zero weights are allowed, negative ones are not) with keys drawn from
// keys, and Puts of valueSize bytes. A mix of one kind draws no random
// number for the kind.
func NewKeyMix(mix []Weighted, keys workload.Generator, valueSize int) (*KeyMix, error) {
	if keys == nil {
		return nil, fmt.Errorf("%w: a key mix needs a key distribution", ErrInvalid)
	}
	if valueSize < 0 {
		return nil, fmt.Errorf("%w: negative value size %d", ErrInvalid, valueSize)
	}
	sum := 0.0
	var cum []Weighted
	for _, w := range mix {
		if _, ok := kinds[w.Kind]; !ok || !(w.Weight >= 0) {
			return nil, fmt.Errorf("%w: mix entry %v with weight %v", ErrInvalid, w.Kind, w.Weight)
		}
		if w.Weight == 0 {
			continue
		}
		sum += w.Weight
		cum = append(cum, Weighted{Kind: w.Kind, Weight: sum})
	}
	if len(cum) == 0 {
		return nil, fmt.Errorf("%w: a mix needs a kind of positive weight", ErrInvalid)
	}
	for i := range cum {
		cum[i].Weight /= sum
	}
	cum[len(cum)-1].Weight = 1
	return &KeyMix{KeyName: workload.Key, kinds: cum, keys: keys, valueSize: valueSize}, nil
}

// Next draws the kind (when there is a choice), then the key.
func (m *KeyMix) Next(r *rand.Rand) (Step, bool) {
	kind := m.kinds[0].Kind
	if len(m.kinds) > 1 {
		u := r.Float64()
		for _, w := range m.kinds {
			if u < w.Weight {
				kind = w.Kind
				break
			}
		}
	}
	op := Op{Kind: kind, Key: m.KeyName(m.keys.Next(r)), Bound: m.Bound[kind]}
	if kind == GetTx {
		op.Keys = m.txKeys(r, op.Key)
	}
	return Step{Ops: []Op{op}, ValueSize: m.valueSize}, true
}

// txKeys draws the keys a get-transaction reads beyond first: different
// keys, as many as it finds in a few draws each (a distribution over a
// few keys may not have TxKeys).
func (m *KeyMix) txKeys(r *rand.Rand, first string) []string {
	n := m.TxKeys
	if n == 0 {
		n = 2
	}
	var out []string
	for tries := 0; len(out) < n-1 && tries < 8*n; tries++ {
		k := m.KeyName(m.keys.Next(r))
		if k != first && !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// PutGetMix is a mix of Puts and Gets, half each, of n keys named
// prefix0, prefix1, ..., drawn uniformly: a small working set, whose
// histories the checkers' tests read easily.
func PutGetMix(n int, prefix string) (*KeyMix, error) {
	keys, err := workload.NewUniform(uint64(max(n, 0)))
	if err != nil {
		return nil, err
	}
	m, err := NewKeyMix([]Weighted{{Kind: Put, Weight: 1}, {Kind: Get, Weight: 1}}, keys, 0)
	if err != nil {
		return nil, err
	}
	m.KeyName = func(i uint64) string { return prefix + strconv.FormatUint(i, 10) }
	return m, nil
}

// Keys returns the distribution of that name over n keys: zipfian (YCSB's
// scrambled zipfian), uniform, hotspot (hotSet of the keys take hotOps of
// the operations), latest (the highest-numbered keys most popular) or
// fresh (a key never drawn before, see FreshKeys, numbered from n).
func Keys(distribution string, n uint64, hotSet, hotOps float64) (workload.Generator, error) {
	switch distribution {
	case "fresh":
		return &FreshKeys{From: n}, nil
	case "zipfian":
		return workload.NewScrambledZipfian(n)
	case "uniform":
		return workload.NewUniform(n)
	case "hotspot":
		return workload.NewHotspot(n, hotSet, hotOps)
	case "latest":
		return workload.NewLatest(n)
	}
	return nil, fmt.Errorf("%w: key distribution %q: want zipfian, uniform, hotspot, latest or fresh", ErrInvalid, distribution)
}

// YCSBMix draws the operations of a YCSB core workload (package
// workload) as steps labelled by their YCSB kind:
//
//   - read is a Get, update and insert a Put of FieldCount*FieldLength
//     bytes (cosla keeps one value per key, so YCSB's fields are
//     concatenated);
//   - read-modify-write is a Get then a Put of the same key, measured as
//     one step;
//   - scan of n records from item i is n Gets of workload.Key(i) ...
//     workload.Key(i+n-1), in order, as one step: cosla has no range
//     scans, and keys are hashed, so these are not neighbours in key
//     order; the step measures the cost of reading n records.
type YCSBMix struct {
	W *workload.Workload
}

// Next draws the next operation of the workload.
func (m YCSBMix) Next(r *rand.Rand) (Step, bool) {
	op := m.W.Next(r)
	s := Step{Label: op.Kind.String(), ValueSize: m.W.Properties().ValueBytes()}
	switch op.Kind {
	case workload.Read:
		s.Ops = []Op{{Kind: Get, Key: op.Key}}
	case workload.Update, workload.Insert:
		s.Ops = []Op{{Kind: Put, Key: op.Key}}
	case workload.ReadModifyWrite:
		s.Ops = []Op{{Kind: Get, Key: op.Key}, {Kind: Put, Key: op.Key}}
	case workload.Scan:
		for i := range uint64(op.ScanLength) {
			s.Ops = append(s.Ops, Op{Kind: Get, Key: workload.Key(op.Item + i)})
		}
	}
	return s, true
}

// LoadMix writes each of n keys once, workload.Key(0) to
// workload.Key(n-1) in order, as YCSB's load phase does (its steps are
// YCSB's inserts), then ends. Bound, if set, bounds the Puts
// (dConssandra 6-B loads with unbounded inserts, which also train the
// nodes' costs).
type LoadMix struct {
	N         uint64
	ValueSize int
	Bound     wire.Bound
	next      uint64
}

// Next returns the Put of the next key.
func (m *LoadMix) Next(*rand.Rand) (Step, bool) {
	if m.next >= m.N {
		return Step{}, false
	}
	m.next++
	return Step{Label: workload.Insert.String(), Ops: []Op{{Kind: Put, Key: workload.Key(m.next - 1), Bound: m.Bound}}, ValueSize: m.ValueSize}, true
}

// ReadMix gets each of Keys once, in order, then ends: a final read of
// what a run wrote.
type ReadMix struct {
	Keys []string
	next int
}

// Next returns the Get of the next key.
func (m *ReadMix) Next(*rand.Rand) (Step, bool) {
	if m.next >= len(m.Keys) {
		return Step{}, false
	}
	m.next++
	return Step{Ops: []Op{{Kind: Get, Key: m.Keys[m.next-1]}}}, true
}

// FreshKeys draws keys never drawn before: From, From+1, ... (named, as
// every key, by workload.Key, so that they spread over a table's tablets
// as the loaded keys do). Sessions sharing it never share a key.
type FreshKeys struct {
	From uint64
	n    uint64
}

// Next returns the next fresh key number.
func (f *FreshKeys) Next(*rand.Rand) uint64 {
	f.n++
	return f.From + f.n - 1
}

// Labels of a GroupMix's step and ops.
const (
	GroupLabel = "group"
	WriteLabel = "write"
	ReadLabel  = "read"
	ResetLabel = "reset"
)

// GroupMix draws the groups of dConssandra's experiments (6-B, 6-C), one
// a step, each on a key of its own: Writes Puts of the key at WriteBound,
// then a Get of it at ReadBound, then, with Reset, a Get of it at
// wire.Unbounded, "so that later experimental groups are not affected by
// previous groups" (6-C): it waits for every write the receiver holds.
// The step is labelled "group", its ops "write", "read" and "reset", each
// with statistics of its own (Op.Label). The driver stops a group at its
// first failed op.
type GroupMix struct {
	Writes                int
	WriteBound, ReadBound wire.Bound
	Reset                 bool
	// Keys draws each group's key, KeyName names it (default
	// workload.Key): fresh keys (FreshKeys) keep the groups apart.
	Keys      workload.Generator
	KeyName   func(i uint64) string
	ValueSize int
}

// Next draws the next group's key and returns its ops.
func (m *GroupMix) Next(r *rand.Rand) (Step, bool) {
	name := m.KeyName
	if name == nil {
		name = workload.Key
	}
	key := name(m.Keys.Next(r))
	ops := make([]Op, 0, m.Writes+2)
	for range m.Writes {
		ops = append(ops, Op{Kind: Put, Key: key, Bound: m.WriteBound, Label: WriteLabel})
	}
	ops = append(ops, Op{Kind: Get, Key: key, Bound: m.ReadBound, Label: ReadLabel})
	if m.Reset {
		ops = append(ops, Op{Kind: Get, Key: key, Bound: wire.Unbounded, Label: ResetLabel})
	}
	return Step{Label: GroupLabel, Ops: ops, ValueSize: m.ValueSize}, true
}

// FixedMix repeats one step: a role of Wada's benchmark, which writes or
// reads the same keys every time.
type FixedMix struct{ Step Step }

// Next returns a copy of the step.
func (m FixedMix) Next(*rand.Rand) (Step, bool) {
	s := m.Step
	s.Ops = append([]Op(nil), m.Step.Ops...)
	return s, true
}

// A Stream is a source of a session's steps and the rule for when each
// starts. A session with several streams takes, each time it is free,
// the step whose start comes first (the first stream on a tie).
type Stream struct {
	Mix Mix
	// Every, if positive, makes the stream periodic: a step each slot of
	// Every, the slots beginning at Offset (plus, for session i of a group
	// of n with Stagger, i*Every/n, so that n writers spread over the
	// period). A step starts at the beginning of its slot, or with Jitter
	// at a uniform point of it; if the session is still busy then, it
	// starts as soon as the session is free, unless its slot has passed:
	// passed slots are skipped, never made up in a burst (Wada 2).
	Every   time.Duration
	Offset  time.Duration
	Stagger bool
	Jitter  bool
	// Think, for a stream that is not periodic (a closed loop), is the
	// pause between one step's end and the next step's start.
	Think time.Duration
	// From and Until bound when the stream's steps start: none before
	// From, none at or after Until (0: no end). A session whose streams
	// are all past their Until finishes; load that moves between client
	// sites over a run gives each site's group its hours.
	From, Until time.Duration
}

// streamState is a stream's schedule in one session.
type streamState struct {
	*Stream
	offset time.Duration
	// slot is the current slot of a periodic stream, at is its step's
	// start once drawn (primed).
	slot   int64
	primed bool
	at     time.Duration
}

// next returns when the stream's next step starts, given that the
// session is free at now; for a closed loop, now.
func (st *streamState) next(now time.Duration, r *rand.Rand) time.Duration {
	now = max(now, st.From)
	if st.Every <= 0 {
		return now
	}
	if !st.primed {
		start := func(k int64) time.Duration { return st.offset + time.Duration(k)*st.Every }
		for start(st.slot+1) <= now {
			st.slot++
		}
		st.at = start(st.slot)
		if st.Jitter {
			st.at += time.Duration(r.Int64N(int64(st.Every)))
		}
		st.primed = true
	}
	return max(st.at, now)
}

// over reports whether a step starting at would start too late.
func (st *streamState) over(at time.Duration) bool { return st.Until > 0 && at >= st.Until }

// taken moves a periodic stream to its next slot once its step started.
func (st *streamState) taken() {
	st.primed = false
	st.slot++
}
