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

func (m *CreateTableRequest) String() string {
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
