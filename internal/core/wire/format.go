package wire

import (
	"strconv"
	"time"

	"github.com/cosla/cosla/internal/core/hlc"
)

// Every message has a compact one-line form for traces, its String: the
// simulator hashes these lines by the million and scenario scripts
// compare them, so they are built with appends. Most are generated from
// the messages' definitions (trace_gen.go, by wiregen, from each field's
// trace tag); this file holds how values print and the few lines that
// are irregular beyond what a tag says. A field added to a message after
// runs were hashed prints only when set (omitzero, if=): a Put of write
// level one, without a bound or a test, prints as before write levels,
// staged writes and ReadTestWrites existed, so such runs keep their
// hashes.

// appendEach prints a list as [a b c], each element by f: a method
// expression (Dep.appendTrace), whose static call keeps b on the stack
// where a generic method call would not.
func appendEach[T any](b []byte, xs []T, f func(T, []byte) []byte) []byte {
	b = append(b, '[')
	for i, x := range xs {
		if i > 0 {
			b = append(b, ' ')
		}
		b = f(x, b)
	}
	return append(b, ']')
}

func appendNode(n NodeID, b []byte) []byte { return append(b, n...) }

func appendKey(k string, b []byte) []byte { return strconv.AppendQuote(b, k) }

// appendTS is hlc.Timestamp's String, appended.
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

// appendValue prints a value quoted, cut after 16 bytes: "0123456789abcdef"...(20B).
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

// appendCode prints a reply's code, unless OK: err="...".
func appendCode(b []byte, c Code) []byte {
	if c == OK {
		return b
	}
	b = append(b, " err="...)
	return strconv.AppendQuote(b, c.String())
}

// sourceName is a Source in one word.
func sourceName(s Source) string {
	if s == FromBuffer {
		return "buffer"
	}
	return s.String()
}

func (r TabletRef) String() string { return string(r.appendTrace(nil)) }

// appendTrace prints a tablet as table/tablet: 42/3.
func (r TabletRef) appendTrace(b []byte) []byte {
	b = strconv.AppendUint(b, r.Table, 10)
	b = append(b, '/')
	return strconv.AppendInt(b, int64(r.Tablet), 10)
}

// appendTrace prints a tablet at an epoch as table/tablet@epoch: 42/3@2.
func (t TabletEpoch) appendTrace(b []byte) []byte {
	b = t.Tablet.appendTrace(b)
	b = append(b, '@')
	return strconv.AppendUint(b, t.Epoch, 10)
}

// appendTrace prints a site's utility in millionths: us=1500000.
func (u SiteUtility) appendTrace(b []byte) []byte {
	b = append(b, u.Site...)
	b = append(b, '=')
	return strconv.AppendUint(b, u.Micro, 10)
}

// appendTrace prints a ReadTestWrite's test: k=="v", or k==absent for a
// test that the key has no value.
func (t Test) appendTrace(b []byte) []byte {
	b = append(b, t.Key...)
	if !t.Found {
		return append(b, "==absent"...)
	}
	b = append(b, "=="...)
	return appendValue(b, t.Value)
}

// String prints v as <timestamp>@<origin>, or - for the zero version.
func (v Version) String() string { return string(v.appendTrace(make([]byte, 0, 40))) }

func (v Version) appendTrace(b []byte) []byte {
	if v.IsZero() {
		return append(b, '-')
	}
	b = appendTS(b, v.TS)
	b = append(b, '@')
	return append(b, v.Origin...)
}

// appendTrace prints a dependency as "k"@version.
func (d Dep) appendTrace(b []byte) []byte {
	b = strconv.AppendQuote(b, d.Key)
	b = append(b, '@')
	return d.Version.appendTrace(b)
}

// appendTrace prints a transaction's item: "k"="v"@version, or
// "k"=absent, then where it came from unless the ring, and in-flight, in
// parentheses.
func (it TxItem) appendTrace(b []byte) []byte {
	b = strconv.AppendQuote(b, it.Key)
	if it.Found {
		b = append(b, '=')
		b = appendValue(b, it.Value)
		b = append(b, '@')
		b = it.Version.appendTrace(b)
	} else {
		b = append(b, "=absent"...)
	}
	switch {
	case it.Source != FromRing && it.InFlight:
		b = append(b, "("+sourceName(it.Source)+",in-flight)"...)
	case it.Source != FromRing:
		b = append(b, "("+sourceName(it.Source)+")"...)
	case it.InFlight:
		b = append(b, "(in-flight)"...)
	}
	return b
}

// The messages below print in ways their fields' tags cannot say.

// appendLayout prints a table: table=name/id, then a causal table's
// layout (causal rings=2 ccs=3 caches=3, its points per node when set,
// and static when it is) when it has one.
func appendLayout(b []byte, l *Layout) []byte {
	b = append(b, " table="...)
	b = append(b, l.Name...)
	b = append(b, '/')
	b = strconv.AppendUint(b, l.ID, 10)
	c := l.Causal
	if c == nil {
		return b
	}
	b = append(b, " causal rings="...)
	b = strconv.AppendInt(b, int64(len(c.Rings)), 10)
	b = append(b, " ccs="...)
	b = strconv.AppendInt(b, int64(len(c.Coordinators)), 10)
	b = append(b, " caches="...)
	b = strconv.AppendInt(b, int64(len(c.Caches)), 10)
	if c.Points != 0 {
		b = append(b, " points="...)
		b = strconv.AppendInt(b, int64(c.Points), 10)
	}
	if c.Static {
		b = append(b, " static"...)
	}
	return b
}

func (m *CreateTableRequest) String() string {
	b := append(make([]byte, 0, 96), "CreateTable(req="...)
	b = strconv.AppendUint(b, m.Req, 10)
	b = appendLayout(b, &m.Layout)
	if m.Layout.Causal != nil {
		return string(append(b, ')'))
	}
	b = append(b, " tablets="...)
	b = strconv.AppendInt(b, int64(len(m.Layout.Tablets)), 10)
	// A range-partitioned table, the default, says nothing, so the traces
	// of tables made before Partition existed keep their hashes.
	if m.Layout.Partition != ByRange {
		b = append(b, " by "+m.Layout.Partition.String()...)
	}
	if m.Layout.WriteLevel != 0 {
		b = append(b, " write="+m.Layout.WriteLevel.String()...)
	}
	r := m.Layout.Replication
	return string(append(b, " "+r.Mode.String()+"/"+r.Interval.String()+")"...))
}

func (m *TableInfoReply) String() string {
	b := append(make([]byte, 0, 96), "TableInfoReply(req="...)
	b = strconv.AppendUint(b, m.Req, 10)
	if m.Code != OK {
		b = appendCode(b, m.Code)
	} else {
		b = appendLayout(b, &m.Layout)
	}
	return string(append(b, ')'))
}

// String prints the first four entries of a pull reply, "k"@ts each.
func (m *PullReply) String() string {
	b := append(make([]byte, 0, 160), "PullReply(tablet="...)
	b = m.Tablet.appendTrace(b)
	b = append(b, " since="...)
	b = appendTS(b, m.Since)
	b = append(b, " high="...)
	b = appendTS(b, m.High)
	b = append(b, " entries="...)
	b = strconv.AppendInt(b, int64(len(m.Entries)), 10)
	for i, e := range m.Entries {
		if i == 4 {
			b = append(b, " ..."...)
			break
		}
		b = append(b, ' ')
		b = strconv.AppendQuote(b, e.Key)
		b = append(b, '@')
		b = appendTS(b, e.TS)
	}
	if m.More {
		b = append(b, " more"...)
	}
	if m.Snapshot {
		b = append(b, " snapshot"...)
	}
	if len(m.Records) > 0 {
		b = append(b, " records="...)
		b = strconv.AppendInt(b, int64(len(m.Records)), 10)
	}
	if m.InSnapshot {
		b = append(b, " after="...)
		b = strconv.AppendQuote(b, m.SnapshotAfter)
	}
	if m.Snapshot {
		b = append(b, " last="...)
		b = strconv.AppendQuote(b, m.SnapshotLast)
	}
	return string(append(appendCode(b, m.Code), ')'))
}

func (m *DepCheckReply) String() string {
	b := append(make([]byte, 0, 48), "DepCheckReply(req="...)
	b = strconv.AppendUint(b, m.Req, 10)
	b = append(b, " table="...)
	b = strconv.AppendUint(b, m.Table, 10)
	if !m.Done {
		return string(append(b, " not-done)"...))
	}
	return string(append(b, " done)"...))
}

// String prints an invalidation of everything the cache filled from the
// sender, which names no key, as all.
func (m *Invalidate) String() string {
	b := append(make([]byte, 0, 80), "Invalidate(req="...)
	b = strconv.AppendUint(b, m.Req, 10)
	b = append(b, " table="...)
	b = strconv.AppendUint(b, m.Table, 10)
	if m.Key == "" {
		b = append(b, " all"...)
	} else {
		b = append(b, " key="...)
		b = strconv.AppendQuote(b, m.Key)
	}
	b = append(b, " version="...)
	return string(append(m.Version.appendTrace(b), ')'))
}
