package wire

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/cosla/cosla/internal/core/hlc"
)

// The String methods give each message a compact one-line form for traces:
// the simulator hashes these lines and scenario tests compare them.

func valueString(v []byte) string {
	const max = 16
	if len(v) > max {
		return fmt.Sprintf("%q...(%dB)", v[:max], len(v))
	}
	return fmt.Sprintf("%q", v)
}

func codeSuffix(c Code) string {
	if c == OK {
		return ""
	}
	return fmt.Sprintf(" err=%q", c)
}

// causalLayoutString prints a causal table's layout: causal rings=2 ccs=3
// caches=3, its points per node when set, and static when it is.
func causalLayoutString(c *CausalLayout) string {
	s := fmt.Sprintf("causal rings=%d ccs=%d caches=%d", len(c.Rings), len(c.Coordinators), len(c.Caches))
	if c.Points != 0 {
		s += fmt.Sprintf(" points=%d", c.Points)
	}
	if c.Static {
		s += " static"
	}
	return s
}

func (m *CreateTableRequest) String() string {
	if c := m.Layout.Causal; c != nil {
		return fmt.Sprintf("CreateTable(req=%d table=%s/%d %s)", m.Req, m.Layout.Name, m.Layout.ID, causalLayoutString(c))
	}
	// A range-partitioned table, the default, says nothing, so the traces
	// of tables made before Partition existed keep their hashes.
	partition := ""
	if m.Layout.Partition != ByRange {
		partition = " by " + m.Layout.Partition.String()
	}
	if m.Layout.WriteLevel != 0 {
		partition += " write=" + m.Layout.WriteLevel.String()
	}
	return fmt.Sprintf("CreateTable(req=%d table=%s/%d tablets=%d%s %s/%s)",
		m.Req, m.Layout.Name, m.Layout.ID, len(m.Layout.Tablets), partition, m.Layout.Replication.Mode, m.Layout.Replication.Interval)
}

func (m *CreateTableReply) String() string {
	return fmt.Sprintf("CreateTableReply(req=%d%s)", m.Req, codeSuffix(m.Code))
}

func (m *DeleteTableRequest) String() string {
	return fmt.Sprintf("DeleteTable(req=%d table=%s)", m.Req, m.Name)
}

func (m *DeleteTableReply) String() string {
	return fmt.Sprintf("DeleteTableReply(req=%d%s)", m.Req, codeSuffix(m.Code))
}

func (m *TableInfoRequest) String() string {
	return fmt.Sprintf("TableInfo(req=%d table=%s)", m.Req, m.Name)
}

func (m *TableInfoReply) String() string {
	if m.Code != OK {
		return fmt.Sprintf("TableInfoReply(req=%d%s)", m.Req, codeSuffix(m.Code))
	}
	if c := m.Layout.Causal; c != nil {
		return fmt.Sprintf("TableInfoReply(req=%d table=%s/%d %s)", m.Req, m.Layout.Name, m.Layout.ID, causalLayoutString(c))
	}
	return fmt.Sprintf("TableInfoReply(req=%d table=%s/%d)", m.Req, m.Layout.Name, m.Layout.ID)
}

// A Put of write level one and its reply print as they did before write
// levels existed, so that the traces of such runs keep their hashes; so
// do Puts and Gets without a bound (the fields of staged writes and
// bounded reads print only when set).

func (m *PutRequest) String() string {
	level := ""
	if m.W > 1 {
		level = fmt.Sprintf(" w=%d wait=%s", m.W, m.Wait)
	}
	return fmt.Sprintf("Put(req=%d tablet=%s key=%q value=%s min=%s%s%s%s)", m.Req, m.Tablet, m.Key, valueString(m.Value), m.MinTS, level,
		boundSuffix(m.Bound, m.Budget), testSuffix(m.Test))
}

// boundSuffix prints a bounded operation's bound and budget, each only
// when set.
func boundSuffix(b Bound, budget time.Duration) string {
	s := ""
	if b != NoBound {
		s = " bound=" + b.String()
	}
	if budget != 0 {
		s += " budget=" + budget.String()
	}
	return s
}

// testSuffix prints a ReadTestWrite's test: test=k=="v", or test=k==absent
// for a test that the key has no value.
func testSuffix(t *Test) string {
	if t == nil {
		return ""
	}
	if !t.Found {
		return fmt.Sprintf(" test=%s==absent", t.Key)
	}
	return fmt.Sprintf(" test=%s==%s", t.Key, valueString(t.Value))
}

// stagedSuffix prints what a staged write's reply or acknowledgement
// adds, each part only when set: holders=[a b] and tested=held.
func stagedSuffix(holders []NodeID, tested Outcome) string {
	var b strings.Builder
	if len(holders) > 0 {
		b.WriteString(" holders=[")
		for i, h := range holders {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(string(h))
		}
		b.WriteByte(']')
	}
	if tested != NotEvaluated {
		b.WriteString(" tested=" + tested.String())
	}
	return b.String()
}

func (m *PutReply) String() string {
	acks := ""
	if m.Acks > 1 || m.Code == QuorumTimeout {
		acks = fmt.Sprintf(" acks=%d", m.Acks)
	}
	staged := ""
	if m.Stage != 0 {
		staged = " stage=" + m.Stage.String()
	}
	if m.WriteID != 0 {
		staged += fmt.Sprintf(" write=%d", m.WriteID)
	}
	return fmt.Sprintf("PutReply(req=%d ts=%s%s%s%s%s)", m.Req, m.TS, acks, staged, stagedSuffix(m.Holders, m.Tested), codeSuffix(m.Code))
}

func (m *GetRequest) String() string {
	return fmt.Sprintf("Get(req=%d tablet=%s key=%q%s)", m.Req, m.Tablet, m.Key, boundSuffix(m.Bound, m.Budget))
}

func (m *GetReply) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "GetReply(req=%d", m.Req)
	if m.Found {
		fmt.Fprintf(&b, " value=%s version=%s", valueString(m.Value), m.VersionTS)
	} else if m.Code == OK && !m.Null {
		b.WriteString(" not-found")
	}
	fmt.Fprintf(&b, " high=%s", m.HighTS)
	if m.Primary {
		b.WriteString(" primary")
	}
	if m.Applied != 0 || m.Pending != 0 {
		fmt.Fprintf(&b, " applied=%d pending=%d", m.Applied, m.Pending)
	}
	if m.Null {
		b.WriteString(" null")
	}
	b.WriteString(codeSuffix(m.Code))
	b.WriteString(")")
	return b.String()
}

func (m *ProbeRequest) String() string {
	return fmt.Sprintf("Probe(req=%d tablet=%s)", m.Req, m.Tablet)
}

func (m *ProbeReply) String() string {
	primary := ""
	if m.Primary {
		primary = " primary"
	}
	return fmt.Sprintf("ProbeReply(req=%d high=%s%s%s)", m.Req, m.HighTS, primary, codeSuffix(m.Code))
}

func (m *PullRequest) String() string {
	if m.InSnapshot {
		return fmt.Sprintf("Pull(tablet=%s since=%s snapshot=%s after=%q)", m.Tablet, m.Since, m.SnapshotHigh, m.SnapshotAfter)
	}
	return fmt.Sprintf("Pull(tablet=%s since=%s)", m.Tablet, m.Since)
}

func (m *PullReply) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "PullReply(tablet=%s since=%s high=%s entries=%d", m.Tablet, m.Since, m.High, len(m.Entries))
	for i, e := range m.Entries {
		if i == 4 {
			b.WriteString(" ...")
			break
		}
		fmt.Fprintf(&b, " %q@%s", e.Key, e.TS)
	}
	if m.More {
		b.WriteString(" more")
	}
	if m.Snapshot {
		b.WriteString(" snapshot")
	}
	if m.InSnapshot {
		fmt.Fprintf(&b, " after=%q", m.SnapshotAfter)
	}
	if m.Snapshot {
		fmt.Fprintf(&b, " last=%q", m.SnapshotLast)
	}
	b.WriteString(codeSuffix(m.Code))
	b.WriteString(")")
	return b.String()
}

func (m *Push) String() string {
	ack := ""
	if m.Ack {
		ack = " ack"
	}
	return fmt.Sprintf("Push(tablet=%s prev=%s key=%q value=%s ts=%s%s)", m.Tablet, m.Prev, m.Entry.Key, valueString(m.Entry.Value), m.Entry.TS, ack)
}

func (m *PushAck) String() string {
	return fmt.Sprintf("PushAck(tablet=%s high=%s)", m.Tablet, m.High)
}

func (m *Repair) String() string {
	return fmt.Sprintf("Repair(req=%d tablet=%s ts=%s)", m.Req, m.Tablet, m.TS)
}

func (m *RepairReply) String() string {
	return fmt.Sprintf("RepairReply(req=%d high=%s%s)", m.Req, m.High, codeSuffix(m.Code))
}

func (m *Forward) String() string {
	level := ""
	if m.W > 1 {
		level = fmt.Sprintf(" w=%d wait=%s", m.W, m.Wait)
	}
	return fmt.Sprintf("Forward(tablet=%s seq=%d key=%q value=%s min=%s%s%s)", m.Tablet, m.Seq, m.Key, valueString(m.Value), m.MinTS, level,
		testSuffix(m.Test))
}

func (m *ForwardAck) String() string {
	acks := ""
	if m.Acks != 0 {
		acks = fmt.Sprintf(" acks=%d", m.Acks)
	}
	return fmt.Sprintf("ForwardAck(tablet=%s seq=%d ts=%s%s%s%s)", m.Tablet, m.Seq, m.TS, acks, stagedSuffix(m.Holders, m.Tested), codeSuffix(m.Code))
}

func (m *Resolved) String() string {
	return fmt.Sprintf("Resolved(tablet=%s write=%d ts=%s%s)", m.Tablet, m.WriteID, m.TS, codeSuffix(m.Code))
}

// The messages of causal tables (Karma). A version prints as its
// timestamp and origin, ts@origin, or - when zero; keys are quoted, and
// fields that are rarely set (a notify-after, dependencies, a ring
// restriction, in flight) print only when set.

// String prints v as <timestamp>@<origin>, or - for the zero version.
func (v Version) String() string {
	if v.IsZero() {
		return "-"
	}
	return v.TS.String() + "@" + string(v.Origin)
}

// ringSuffix prints a ring, unless NoRing.
func ringSuffix(ring int32) string {
	if ring == NoRing {
		return ""
	}
	return fmt.Sprintf(" ring=%d", ring)
}

// sourceName is a Source in one word.
func sourceName(s Source) string {
	if s == FromBuffer {
		return "buffer"
	}
	return s.String()
}

func (m *CausalPut) String() string {
	b := appendField(make([]byte, 0, 128), "CausalPut(req=", m.Req)
	b = appendField(b, " table=", m.Table)
	b = appendField(b, " session=", m.Session)
	b = appendField(b, " seq=", m.Seq)
	b = append(b, ' ')
	b = appendWrite(b, m.Notify, m.Key, m.Value)
	b = append(b, " seen="...)
	b = appendVersion(b, m.Seen)
	b = appendDeps(b, m.Deps)
	return string(append(b, ')'))
}

func (m *CausalPutReply) String() string {
	b := appendField(make([]byte, 0, 96), "CausalPutReply(req=", m.Req)
	b = appendField(b, " table=", m.Table)
	b = append(b, " version="...)
	b = appendVersion(b, m.Version)
	b = appendCode(b, m.Code)
	return string(append(b, ')'))
}

func (m *CausalComplete) String() string {
	b := appendField(make([]byte, 0, 64), "CausalComplete(table=", m.Table)
	b = appendField(b, " session=", m.Session)
	b = appendField(b, " seq=", m.Seq)
	return string(append(b, ')'))
}

func (m *CausalGet) String() string {
	b := appendField(make([]byte, 0, 96), "CausalGet(req=", m.Req)
	b = appendField(b, " table=", m.Table)
	b = appendField(b, " session=", m.Session)
	b = append(b, " key="...)
	b = strconv.AppendQuote(b, m.Key)
	b = appendRing(b, m.Ring)
	b = append(b, " max="...)
	b = appendVersion(b, m.MaxRead)
	return string(append(b, ')'))
}

func (m *CausalGetReply) String() string {
	b := appendField(make([]byte, 0, 128), "CausalGetReply(req=", m.Req)
	b = appendField(b, " table=", m.Table)
	b = appendRead(b, m.Code, m.Found, m.Value, m.Version, m.Source, m.Ring, m.Node, m.InFlight)
	return string(append(b, ')'))
}

func (m *CausalGetTx) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "CausalGetTx(req=%d table=%d session=%d keys=[", m.Req, m.Table, m.Session)
	for i, k := range m.Keys {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%q", k)
	}
	fmt.Fprintf(&b, "]%s max=%s)", ringSuffix(m.Ring), m.MaxRead)
	return b.String()
}

// String prints a transaction's item: "k"="v"@version, or "k"=absent,
// then where it came from unless the ring, and in-flight, in
// parentheses.
func (it TxItem) String() string {
	var b strings.Builder
	if it.Found {
		fmt.Fprintf(&b, "%q=%s@%s", it.Key, valueString(it.Value), it.Version)
	} else {
		fmt.Fprintf(&b, "%q=absent", it.Key)
	}
	switch {
	case it.Source != FromRing && it.InFlight:
		b.WriteString("(" + sourceName(it.Source) + ",in-flight)")
	case it.Source != FromRing:
		b.WriteString("(" + sourceName(it.Source) + ")")
	case it.InFlight:
		b.WriteString("(in-flight)")
	}
	return b.String()
}

func (m *CausalGetTxReply) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "CausalGetTxReply(req=%d table=%d%s rounds=%d items=[", m.Req, m.Table, ringSuffix(m.Ring), m.Rounds)
	for i, it := range m.Items {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(it.String())
	}
	b.WriteString("]" + codeSuffix(m.Code) + ")")
	return b.String()
}

func (m *Propagate) String() string {
	b := appendField(make([]byte, 0, 128), "Propagate(table=", m.Table)
	b = append(b, " session="...)
	b = append(b, m.Client...)
	b = appendField(b, "#", m.Session)
	b = appendField(b, " seq=", m.Seq)
	b = append(b, ' ')
	b = appendWrite(b, m.Notify, m.Key, m.Value)
	b = append(b, " version="...)
	b = appendVersion(b, m.Version)
	b = appendDeps(b, m.Deps)
	return string(append(b, ')'))
}

func (m *PropagateAck) String() string {
	b := appendField(make([]byte, 0, 80), "PropagateAck(table=", m.Table)
	b = append(b, " session="...)
	b = append(b, m.Client...)
	b = appendField(b, "#", m.Session)
	b = appendField(b, " seq=", m.Seq)
	b = append(b, " ring="...)
	b = strconv.AppendInt(b, int64(m.Ring), 10)
	return string(append(b, ')'))
}

func (m *Stable) String() string {
	b := appendField(make([]byte, 0, 80), "Stable(table=", m.Table)
	b = append(b, " key="...)
	b = strconv.AppendQuote(b, m.Key)
	b = append(b, " version="...)
	b = appendVersion(b, m.Version)
	return string(append(b, ')'))
}

func (m *Read) String() string {
	b := appendField(make([]byte, 0, 64), "Read(req=", m.Req)
	b = appendField(b, " table=", m.Table)
	b = append(b, " key="...)
	b = strconv.AppendQuote(b, m.Key)
	if m.Fill {
		b = append(b, " fill"...)
	}
	return string(append(b, ')'))
}

func (m *ReadReply) String() string {
	b := appendField(make([]byte, 0, 128), "ReadReply(req=", m.Req)
	b = appendField(b, " table=", m.Table)
	b = appendRead(b, m.Code, m.Found, m.Value, m.Version, m.Source, m.Ring, m.Node, m.InFlight)
	return string(append(b, ')'))
}

func (m *DepCheck) String() string {
	return fmt.Sprintf("DepCheck(req=%d table=%d key=%q version=%s)", m.Req, m.Table, m.Key, m.Version)
}

func (m *DepCheckReply) String() string {
	done := "done"
	if !m.Done {
		done = "not-done"
	}
	return fmt.Sprintf("DepCheckReply(req=%d table=%d %s)", m.Req, m.Table, done)
}

func (m *Invalidate) String() string {
	if m.Key == "" {
		// Everything the cache filled from the sender.
		return fmt.Sprintf("Invalidate(req=%d table=%d all version=%s)", m.Req, m.Table, m.Version)
	}
	return fmt.Sprintf("Invalidate(req=%d table=%d key=%q version=%s)", m.Req, m.Table, m.Key, m.Version)
}

func (m *InvalidateAck) String() string {
	return fmt.Sprintf("InvalidateAck(req=%d table=%d)", m.Req, m.Table)
}

// The causal messages' String methods build their text with appends: the
// simulator hashes every message it delivers by its text, and a causal
// table's runs deliver millions.

func appendTS(b []byte, t hlc.Timestamp) []byte {
	w := uint64(t.WallNanos)
	if t.WallNanos < 0 {
		b = append(b, '-')
		w = -w
	}
	b = strconv.AppendUint(b, w/uint64(time.Second), 10)
	b = append(b, '.')
	frac := w % uint64(time.Second)
	for d := uint64(100_000_000); d > 1 && frac < d; d /= 10 {
		b = append(b, '0')
	}
	b = strconv.AppendUint(b, frac, 10)
	b = append(b, ',')
	return strconv.AppendUint(b, uint64(t.Logical), 10)
}

func appendVersion(b []byte, v Version) []byte {
	if v.IsZero() {
		return append(b, '-')
	}
	b = appendTS(b, v.TS)
	b = append(b, '@')
	return append(b, v.Origin...)
}

func appendValue(b []byte, v []byte) []byte {
	const max = 16
	if len(v) > max {
		b = strconv.AppendQuote(b, string(v[:max]))
		b = append(b, "...("...)
		b = strconv.AppendInt(b, int64(len(v)), 10)
		return append(b, "B)"...)
	}
	return strconv.AppendQuote(b, string(v))
}

func appendCode(b []byte, c Code) []byte {
	if c == OK {
		return b
	}
	b = append(b, " err="...)
	return strconv.AppendQuote(b, c.String())
}

func appendField(b []byte, name string, v uint64) []byte {
	b = append(b, name...)
	return strconv.AppendUint(b, v, 10)
}

func appendRing(b []byte, ring int32) []byte {
	if ring == NoRing {
		return b
	}
	b = append(b, " ring="...)
	return strconv.AppendInt(b, int64(ring), 10)
}

func appendDeps(b []byte, deps []Dep) []byte {
	if len(deps) == 0 {
		return b
	}
	b = append(b, " deps=["...)
	for i, d := range deps {
		if i > 0 {
			b = append(b, ' ')
		}
		b = strconv.AppendQuote(b, d.Key)
		b = append(b, '@')
		b = appendVersion(b, d.Version)
	}
	return append(b, ']')
}

func appendWrite(b []byte, notify bool, key string, value []byte) []byte {
	if notify {
		return append(b, "notify"...)
	}
	b = append(b, "key="...)
	b = strconv.AppendQuote(b, key)
	b = append(b, " value="...)
	return appendValue(b, value)
}

// appendRead is causalRead's text, appended.
func appendRead(b []byte, code Code, found bool, value []byte, v Version, source Source, ring int32, node NodeID, inFlight bool) []byte {
	if found {
		b = append(b, " value="...)
		b = appendValue(b, value)
		b = append(b, " version="...)
		b = appendVersion(b, v)
	} else if code == OK {
		b = append(b, " not-found"...)
	}
	if code == OK {
		b = append(b, " from="...)
		b = append(b, sourceName(source)...)
		b = appendRing(b, ring)
		if node != "" {
			b = append(b, " node="...)
			b = append(b, node...)
		}
	}
	if inFlight {
		b = append(b, " in-flight"...)
	}
	return appendCode(b, code)
}
