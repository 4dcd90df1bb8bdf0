package wire

import (
	"fmt"
	"strings"
	"time"
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
// caches=3, and its points per node when set.
func causalLayoutString(c *CausalLayout) string {
	s := fmt.Sprintf("causal rings=%d ccs=%d caches=%d", len(c.Rings), len(c.Coordinators), len(c.Caches))
	if c.Points != 0 {
		s += fmt.Sprintf(" points=%d", c.Points)
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
	return fmt.Sprintf("Repair(tablet=%s key=%q value=%s ts=%s)", m.Tablet, m.Entry.Key, valueString(m.Entry.Value), m.Entry.TS)
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

// depsSuffix prints a put-after's dependencies: deps=["k"@ts@origin ...].
func depsSuffix(deps []Dep) string {
	if len(deps) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(" deps=[")
	for i, d := range deps {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%q@%s", d.Key, d.Version)
	}
	b.WriteByte(']')
	return b.String()
}

// causalWrite prints a causal write's key and value, or notify for a
// notify-after, which writes nothing.
func causalWrite(notify bool, key string, value []byte) string {
	if notify {
		return "notify"
	}
	return fmt.Sprintf("key=%q value=%s", key, valueString(value))
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

// causalRead prints what a causal read's reply carries: the value and
// its version, or not-found; where it came from (when the read
// succeeded); in-flight; and the code.
func causalRead(b *strings.Builder, code Code, found bool, value []byte, v Version, source Source, ring int32, node NodeID, inFlight bool) {
	if found {
		fmt.Fprintf(b, " value=%s version=%s", valueString(value), v)
	} else if code == OK {
		b.WriteString(" not-found")
	}
	if code == OK {
		b.WriteString(" from=" + sourceName(source) + ringSuffix(ring))
		if node != "" {
			b.WriteString(" node=" + string(node))
		}
	}
	if inFlight {
		b.WriteString(" in-flight")
	}
	b.WriteString(codeSuffix(code))
}

func (m *CausalPut) String() string {
	return fmt.Sprintf("CausalPut(req=%d table=%d session=%d seq=%d %s seen=%s%s)", m.Req, m.Table, m.Session, m.Seq,
		causalWrite(m.Notify, m.Key, m.Value), m.Seen, depsSuffix(m.Deps))
}

func (m *CausalPutReply) String() string {
	return fmt.Sprintf("CausalPutReply(req=%d table=%d version=%s%s)", m.Req, m.Table, m.Version, codeSuffix(m.Code))
}

func (m *CausalComplete) String() string {
	return fmt.Sprintf("CausalComplete(table=%d session=%d seq=%d)", m.Table, m.Session, m.Seq)
}

func (m *CausalGet) String() string {
	return fmt.Sprintf("CausalGet(req=%d table=%d session=%d key=%q%s max=%s)", m.Req, m.Table, m.Session, m.Key, ringSuffix(m.Ring), m.MaxRead)
}

func (m *CausalGetReply) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "CausalGetReply(req=%d table=%d", m.Req, m.Table)
	causalRead(&b, m.Code, m.Found, m.Value, m.Version, m.Source, m.Ring, m.Node, m.InFlight)
	b.WriteString(")")
	return b.String()
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
	return fmt.Sprintf("Propagate(table=%d session=%s#%d seq=%d %s version=%s%s)", m.Table, m.Client, m.Session, m.Seq,
		causalWrite(m.Notify, m.Key, m.Value), m.Version, depsSuffix(m.Deps))
}

func (m *PropagateAck) String() string {
	return fmt.Sprintf("PropagateAck(table=%d session=%s#%d seq=%d ring=%d)", m.Table, m.Client, m.Session, m.Seq, m.Ring)
}

func (m *Stable) String() string {
	return fmt.Sprintf("Stable(table=%d key=%q version=%s)", m.Table, m.Key, m.Version)
}

func (m *Read) String() string {
	fill := ""
	if m.Fill {
		fill = " fill"
	}
	return fmt.Sprintf("Read(req=%d table=%d key=%q%s)", m.Req, m.Table, m.Key, fill)
}

func (m *ReadReply) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "ReadReply(req=%d table=%d", m.Req, m.Table)
	causalRead(&b, m.Code, m.Found, m.Value, m.Version, m.Source, m.Ring, m.Node, m.InFlight)
	b.WriteString(")")
	return b.String()
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
