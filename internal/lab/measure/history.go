package measure

import (
	"cmp"
	"fmt"
	"slices"
	"sort"

	"github.com/cosla/cosla/keyfmt"
)

// regKey names a register: one key within one run. Runs are independent
// measurements (Wada 2), so the same key in two runs is two registers.
type regKey struct{ run, key string }

// clientKey names a client within one run.
type clientKey struct{ run, client string }

// register is the version order of one key (see the package doc,
// "Versions").
type register struct {
	// writes are the indices of the register's writes in version order.
	writes []int
	// version maps a written value to its 1-based version, the position of
	// its earliest write in writes; the empty value is version 0.
	version map[string]int
	// dup holds the values written more than once.
	dup map[string]int
	// done are the OK writes in order of ReturnUS, each with the newest
	// version among it and the ones before it.
	done []completed
}

type completed struct {
	returnUS int64
	// best is the position in writes of the newest write completed by
	// returnUS.
	best int
}

// latestBefore returns the position in writes of the newest OK write that
// returned strictly before tUS, or -1 if none did. A write returning at
// the very instant tUS is concurrent (intervals are closed, as in
// Porcupine).
func (r *register) latestBefore(tUS int64) int {
	n := sort.Search(len(r.done), func(i int) bool { return r.done[i].returnUS >= tUS })
	if n == 0 {
		return -1
	}
	return r.done[n-1].best
}

// history indexes a trace once for every analysis.
type history struct {
	ops []Op
	// valid[i] reports that ops[i] passed Validate; invalid ops take part
	// in nothing but Anomalies.
	valid []bool
	regs  map[regKey]*register
	// regKeys lists the registers in sorted order, for deterministic output.
	regKeys []regKey
	// clients are each client's valid ops ordered by CallUS, then by
	// position in the trace.
	clients    map[clientKey][]int
	clientKeys []clientKey
	// reads holds the classification of every valid read, by op index.
	reads     map[int]readClass
	anomalies Anomalies
}

// readClass is what the package doc calls the classification of a read.
type readClass struct {
	// known reports that the value read is the initial value or was written
	// to the register; version is then its version.
	known   bool
	version int
	// hasRef reports that some OK write returned before the read was
	// invoked; ref is the newest such write's position in the register's
	// writes, refVersion its version and elapsedUS the time from its
	// invocation to the read's invocation (Wada 2.1.1, Fig. 2).
	hasRef     bool
	ref        int
	refVersion int
	elapsedUS  int64
}

// classified reports that the read counts towards freshness: OK, of a
// known value, with a reference write.
func (rc readClass) classified() bool { return rc.known && rc.hasRef }

// fresh reports that the read returned the reference write's value or a
// newer one.
func (rc readClass) fresh() bool { return rc.version >= rc.refVersion }

func newHistory(ops []Op, maxExamples int) *history {
	h := &history{
		ops:     ops,
		valid:   make([]bool, len(ops)),
		regs:    make(map[regKey]*register),
		clients: make(map[clientKey][]int),
		reads:   make(map[int]readClass),
	}
	an := &h.anomalies
	for i, op := range ops {
		if err := op.Validate(); err != nil {
			an.InvalidOps++
			an.add(&an.Examples, maxExamples, AnomalyInvalid, i, op, err.Error())
			continue
		}
		h.valid[i] = true
		ck := clientKey{op.Run, op.Client}
		h.clients[ck] = append(h.clients[ck], i)
		rk := regKey{op.Run, op.Key}
		reg := h.regs[rk]
		if reg == nil {
			reg = &register{version: map[string]int{"": 0}, dup: map[string]int{}}
			h.regs[rk] = reg
		}
		if op.Kind == KindWrite {
			reg.writes = append(reg.writes, i)
		}
	}
	for k := range h.regs {
		h.regKeys = append(h.regKeys, k)
	}
	slices.SortFunc(h.regKeys, func(a, b regKey) int {
		return cmp.Or(cmp.Compare(a.run, b.run), cmp.Compare(a.key, b.key))
	})
	for k, idx := range h.clients {
		h.clientKeys = append(h.clientKeys, k)
		slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(ops[a].CallUS, ops[b].CallUS) })
	}
	slices.SortFunc(h.clientKeys, func(a, b clientKey) int {
		return cmp.Or(cmp.Compare(a.run, b.run), cmp.Compare(a.client, b.client))
	})
	for _, rk := range h.regKeys {
		h.indexRegister(rk, maxExamples)
	}
	// Classify reads in trace order so that examples are in trace order.
	for i, op := range ops {
		if !h.valid[i] || op.Kind != KindRead || !op.OK {
			continue
		}
		h.reads[i] = h.classify(i, maxExamples)
	}
	return h
}

// indexRegister orders a register's writes into versions (package doc,
// "Versions") and records duplicated values.
func (h *history) indexRegister(rk regKey, maxExamples int) {
	reg := h.regs[rk]
	ops := h.ops
	slices.SortStableFunc(reg.writes, func(a, b int) int {
		return cmp.Or(cmp.Compare(ops[a].CallUS, ops[b].CallUS), cmp.Compare(ops[a].ReturnUS, ops[b].ReturnUS))
	})
	for pos, i := range reg.writes {
		v := ops[i].Value
		if _, seen := reg.version[v]; seen {
			if reg.dup[v] == 0 {
				reg.dup[v] = 1
				h.anomalies.DuplicateValues++
			}
			reg.dup[v]++
			h.anomalies.add(&h.anomalies.Examples, maxExamples, AnomalyDuplicate, i, ops[i],
				fmt.Sprintf("value also written by the write at call_us %d", ops[reg.writes[reg.version[v]-1]].CallUS))
			continue
		}
		reg.version[v] = pos + 1
	}
	for pos, i := range reg.writes {
		if ops[i].OK {
			reg.done = append(reg.done, completed{returnUS: ops[i].ReturnUS, best: pos})
		}
	}
	slices.SortStableFunc(reg.done, func(a, b completed) int { return cmp.Compare(a.returnUS, b.returnUS) })
	for j := 1; j < len(reg.done); j++ {
		reg.done[j].best = max(reg.done[j].best, reg.done[j-1].best)
	}
}

// versionAt is the version of the value the write at position pos in
// writes wrote: its own position for a unique value, that of the value's
// earliest write for a duplicate (package doc, "Anomalies").
func (h *history) versionAt(reg *register, pos int) int {
	return reg.version[h.ops[reg.writes[pos]].Value]
}

func (h *history) classify(i int, maxExamples int) readClass {
	op := h.ops[i]
	reg := h.regs[regKey{op.Run, op.Key}]
	var rc readClass
	rc.version, rc.known = reg.version[op.Value]
	if !rc.known {
		h.anomalies.NeverWrittenReads++
		h.anomalies.add(&h.anomalies.Examples, maxExamples, AnomalyNeverWritten, i, op, "no write of this key wrote the value read")
	} else if rc.version > 0 {
		w := h.ops[reg.writes[rc.version-1]]
		if w.CallUS > op.ReturnUS {
			h.anomalies.FutureReads++
			h.anomalies.add(&h.anomalies.Examples, maxExamples, AnomalyFutureRead, i, op,
				fmt.Sprintf("its write was invoked at call_us %d, after the read returned", w.CallUS))
		}
	}
	if pos := reg.latestBefore(op.CallUS); pos >= 0 {
		rc.hasRef = true
		rc.ref = pos
		rc.refVersion = h.versionAt(reg, pos)
		rc.elapsedUS = op.CallUS - h.ops[reg.writes[pos]].CallUS
	}
	return rc
}

// AnomalyKind names what is wrong with a trace.
type AnomalyKind string

// The kinds of anomaly.
const (
	AnomalyInvalid      AnomalyKind = "invalid-op"
	AnomalyDuplicate    AnomalyKind = "duplicate-value"
	AnomalyNeverWritten AnomalyKind = "never-written-value"
	AnomalyFutureRead   AnomalyKind = "read-before-write"
)

// Anomaly is one example of something wrong with a trace.
type Anomaly struct {
	Kind AnomalyKind `json:"kind"`
	// Index is the op's 0-based position in the trace.
	Index  int         `json:"index"`
	Run    string      `json:"run,omitempty"`
	Client string      `json:"client"`
	Key    keyfmt.JSON `json:"key"`
	Value  keyfmt.JSON `json:"value"`
	CallUS int64       `json:"call_us"`
	Detail string      `json:"detail"`
}

// Anomalies are what makes part of a trace unusable or impossible; the
// analyses skip the ops concerned (see the package doc) instead of failing.
type Anomalies struct {
	// InvalidOps failed Op.Validate and were ignored.
	InvalidOps int `json:"invalid_ops"`
	// DuplicateValues counts values written more than once to one key.
	DuplicateValues int `json:"duplicate_values"`
	// NeverWrittenReads returned a value no write of their key wrote.
	NeverWrittenReads int `json:"never_written_reads"`
	// FutureReads returned a value whose write was invoked after the read
	// returned: impossible on any correct store, or clock trouble.
	FutureReads int `json:"future_reads"`
	// Examples holds up to Config.MaxExamples examples of each kind.
	Examples []Anomaly `json:"examples,omitempty"`

	perKind map[AnomalyKind]int
}

// Total is the number of anomalies of every kind.
func (a Anomalies) Total() int {
	return a.InvalidOps + a.DuplicateValues + a.NeverWrittenReads + a.FutureReads
}

func (a *Anomalies) add(dst *[]Anomaly, maxExamples int, kind AnomalyKind, i int, op Op, detail string) {
	if a.perKind == nil {
		a.perKind = map[AnomalyKind]int{}
	}
	if a.perKind[kind] >= maxExamples {
		return
	}
	a.perKind[kind]++
	*dst = append(*dst, Anomaly{
		Kind: kind, Index: i, Run: op.Run, Client: op.Client, Key: keyfmt.JSON(op.Key),
		Value: keyfmt.JSON(op.Value), CallUS: op.CallUS, Detail: detail,
	})
}

// analyse runs one analysis over the history of ops, with cfg's
// defaults filled in.
func analyse[R any](ops []Op, cfg Config, analysis func(*history, Config) R) R {
	cfg = cfg.effective()
	return analysis(newHistory(ops, cfg.MaxExamples), cfg)
}

// FindAnomalies reports the anomalies of a trace.
func FindAnomalies(ops []Op, cfg Config) Anomalies {
	cfg = cfg.effective()
	return newHistory(ops, cfg.MaxExamples).anomalies
}

// sortedOptions returns the keys of m in sorted order.
func sortedOptions[T any](m map[string]T) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// optionPair names the group of two ops' options: the option itself when
// they agree, "a+b" when not.
func optionPair(a, b string) string {
	if a == b {
		return a
	}
	return a + "+" + b
}

func fraction(n, d int) float64 {
	if d == 0 {
		return 0
	}
	return float64(n) / float64(d)
}
