package wirepb

import (
	"errors"
	"fmt"
	"time"
	"unsafe"

	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/wire"
)

// ErrMalformed is wrapped by errors decoding an envelope that names no
// message or carries fields out of range.
var ErrMalformed = errors.New("cosla: malformed wire message")

// Wrap encodes a message and its addresses as an envelope. The envelope
// shares the message's keys and values: it is for marshaling, and must
// not be written to.
func Wrap(from, to wire.NodeID, m wire.Msg) (*Envelope, error) {
	e := &Envelope{From: string(from), To: string(to)}
	switch m := m.(type) {
	case *wire.CreateTableRequest:
		e.Msg = &Envelope_CreateTableRequest{&CreateTableRequest{Req: m.Req, Layout: layoutPB(m.Layout)}}
	case *wire.CreateTableReply:
		e.Msg = &Envelope_CreateTableReply{&CreateTableReply{Req: m.Req, Code: uint32(m.Code)}}
	case *wire.DeleteTableRequest:
		e.Msg = &Envelope_DeleteTableRequest{&DeleteTableRequest{Req: m.Req, Name: m.Name}}
	case *wire.DeleteTableReply:
		e.Msg = &Envelope_DeleteTableReply{&DeleteTableReply{Req: m.Req, Code: uint32(m.Code)}}
	case *wire.TableInfoRequest:
		e.Msg = &Envelope_TableInfoRequest{&TableInfoRequest{Req: m.Req, Name: m.Name}}
	case *wire.TableInfoReply:
		e.Msg = &Envelope_TableInfoReply{&TableInfoReply{Req: m.Req, Code: uint32(m.Code), Layout: layoutPB(m.Layout)}}
	case *wire.PutRequest:
		e.Msg = &Envelope_PutRequest{&PutRequest{Req: m.Req, Tablet: refPB(m.Tablet), Key: keyBytes(m.Key), Value: m.Value, MinTs: tsPB(m.MinTS),
			W: m.W, WaitNanos: int64(m.Wait), Bound: int64(m.Bound), BudgetNanos: int64(m.Budget), Test: testPB(m.Test)}}
	case *wire.PutReply:
		e.Msg = &Envelope_PutReply{&PutReply{Req: m.Req, Code: uint32(m.Code), Ts: tsPB(m.TS), Acks: m.Acks,
			Stage: uint32(m.Stage), WriteId: m.WriteID, Holders: holdersPB(m.Holders), Tested: uint32(m.Tested)}}
	case *wire.GetRequest:
		e.Msg = &Envelope_GetRequest{&GetRequest{Req: m.Req, Tablet: refPB(m.Tablet), Key: keyBytes(m.Key),
			Bound: int64(m.Bound), BudgetNanos: int64(m.Budget)}}
	case *wire.GetReply:
		e.Msg = &Envelope_GetReply{&GetReply{Req: m.Req, Code: uint32(m.Code), Found: m.Found, Value: m.Value,
			VersionTs: tsPB(m.VersionTS), HighTs: tsPB(m.HighTS), Primary: m.Primary,
			Applied: m.Applied, Pending: m.Pending, Null: m.Null}}
	case *wire.ProbeRequest:
		e.Msg = &Envelope_ProbeRequest{&ProbeRequest{Req: m.Req, Tablet: refPB(m.Tablet)}}
	case *wire.ProbeReply:
		e.Msg = &Envelope_ProbeReply{&ProbeReply{Req: m.Req, Code: uint32(m.Code), HighTs: tsPB(m.HighTS), Primary: m.Primary}}
	case *wire.PullRequest:
		r := &PullRequest{Tablet: refPB(m.Tablet), Since: tsPB(m.Since), InSnapshot: m.InSnapshot, SnapshotAfter: keyBytes(m.SnapshotAfter)}
		if !m.SnapshotHigh.IsZero() {
			// Left out of ordinary pulls, which keep their size.
			r.SnapshotHigh = tsPB(m.SnapshotHigh)
		}
		e.Msg = &Envelope_PullRequest{r}
	case *wire.PullReply:
		r := &PullReply{Tablet: refPB(m.Tablet), Code: uint32(m.Code), Since: tsPB(m.Since), High: tsPB(m.High),
			More: m.More, Snapshot: m.Snapshot, InSnapshot: m.InSnapshot, SnapshotAfter: keyBytes(m.SnapshotAfter), SnapshotLast: keyBytes(m.SnapshotLast),
			Entries: make([]*Entry, len(m.Entries))}
		for i, en := range m.Entries {
			r.Entries[i] = entryPB(en)
		}
		e.Msg = &Envelope_PullReply{r}
	case *wire.Push:
		e.Msg = &Envelope_Push{&Push{Tablet: refPB(m.Tablet), Prev: tsPB(m.Prev), Entry: entryPB(m.Entry), Ack: m.Ack}}
	case *wire.PushAck:
		e.Msg = &Envelope_PushAck{&PushAck{Tablet: refPB(m.Tablet), High: tsPB(m.High)}}
	case *wire.Repair:
		e.Msg = &Envelope_Repair{&Repair{Req: m.Req, Tablet: refPB(m.Tablet), Ts: tsPB(m.TS)}}
	case *wire.RepairReply:
		e.Msg = &Envelope_RepairReply{&RepairReply{Req: m.Req, Code: uint32(m.Code), High: tsPB(m.High)}}
	case *wire.Forward:
		e.Msg = &Envelope_Forward{&Forward{Tablet: refPB(m.Tablet), Seq: m.Seq, Key: keyBytes(m.Key), Value: m.Value, MinTs: tsPB(m.MinTS),
			W: m.W, WaitNanos: int64(m.Wait), Test: testPB(m.Test)}}
	case *wire.ForwardAck:
		e.Msg = &Envelope_ForwardAck{&ForwardAck{Tablet: refPB(m.Tablet), Seq: m.Seq, Code: uint32(m.Code), Ts: tsPB(m.TS),
			Acks: m.Acks, Holders: holdersPB(m.Holders), Tested: uint32(m.Tested)}}
	case *wire.Resolved:
		e.Msg = &Envelope_Resolved{&Resolved{Tablet: refPB(m.Tablet), WriteId: m.WriteID, Code: uint32(m.Code), Ts: tsPB(m.TS)}}
	case *wire.CausalPut:
		e.Msg = &Envelope_CausalPut{&CausalPut{Req: m.Req, Table: m.Table, Session: m.Session, Seq: m.Seq, Key: keyBytes(m.Key), Value: m.Value,
			Seen: versionPB(m.Seen), Deps: depsPB(m.Deps), Notify: m.Notify}}
	case *wire.CausalPutReply:
		e.Msg = &Envelope_CausalPutReply{&CausalPutReply{Req: m.Req, Table: m.Table, Code: uint32(m.Code), Version: versionPB(m.Version)}}
	case *wire.CausalComplete:
		e.Msg = &Envelope_CausalComplete{&CausalComplete{Table: m.Table, Session: m.Session, Seq: m.Seq}}
	case *wire.CausalGet:
		e.Msg = &Envelope_CausalGet{&CausalGet{Req: m.Req, Table: m.Table, Session: m.Session, Key: keyBytes(m.Key), Ring: m.Ring,
			MaxRead: versionPB(m.MaxRead)}}
	case *wire.CausalGetReply:
		e.Msg = &Envelope_CausalGetReply{&CausalGetReply{Req: m.Req, Table: m.Table, Code: uint32(m.Code), Found: m.Found, Value: m.Value,
			Version: versionPB(m.Version), Source: uint32(m.Source), Ring: m.Ring, Node: string(m.Node), InFlight: m.InFlight}}
	case *wire.CausalGetTx:
		e.Msg = &Envelope_CausalGetTx{&CausalGetTx{Req: m.Req, Table: m.Table, Session: m.Session, Keys: keysPB(m.Keys), Ring: m.Ring,
			MaxRead: versionPB(m.MaxRead)}}
	case *wire.CausalGetTxReply:
		r := &CausalGetTxReply{Req: m.Req, Table: m.Table, Code: uint32(m.Code), Ring: m.Ring, Rounds: m.Rounds}
		if len(m.Items) > 0 {
			r.Items = make([]*TxItem, len(m.Items))
			for i, it := range m.Items {
				r.Items[i] = &TxItem{Key: keyBytes(it.Key), Found: it.Found, Value: it.Value, Version: versionPB(it.Version),
					Source: uint32(it.Source), InFlight: it.InFlight}
			}
		}
		e.Msg = &Envelope_CausalGetTxReply{r}
	case *wire.Propagate:
		e.Msg = &Envelope_Propagate{&Propagate{Table: m.Table, Session: m.Session, Seq: m.Seq, Key: keyBytes(m.Key), Value: m.Value,
			Version: versionPB(m.Version), Deps: depsPB(m.Deps), Notify: m.Notify, Client: string(m.Client)}}
	case *wire.PropagateAck:
		e.Msg = &Envelope_PropagateAck{&PropagateAck{Table: m.Table, Session: m.Session, Seq: m.Seq, Ring: m.Ring, Client: string(m.Client)}}
	case *wire.Stable:
		e.Msg = &Envelope_Stable{&Stable{Table: m.Table, Key: keyBytes(m.Key), Version: versionPB(m.Version)}}
	case *wire.Read:
		e.Msg = &Envelope_Read{&Read{Req: m.Req, Table: m.Table, Key: keyBytes(m.Key), Fill: m.Fill}}
	case *wire.ReadReply:
		e.Msg = &Envelope_ReadReply{&ReadReply{Req: m.Req, Table: m.Table, Code: uint32(m.Code), Found: m.Found, Value: m.Value,
			Version: versionPB(m.Version), InFlight: m.InFlight, Source: uint32(m.Source), Ring: m.Ring, Node: string(m.Node)}}
	case *wire.DepCheck:
		e.Msg = &Envelope_DepCheck{&DepCheck{Req: m.Req, Table: m.Table, Key: keyBytes(m.Key), Version: versionPB(m.Version)}}
	case *wire.DepCheckReply:
		e.Msg = &Envelope_DepCheckReply{&DepCheckReply{Req: m.Req, Table: m.Table, Done: m.Done}}
	case *wire.Invalidate:
		e.Msg = &Envelope_Invalidate{&Invalidate{Req: m.Req, Table: m.Table, Key: keyBytes(m.Key), Version: versionPB(m.Version)}}
	case *wire.InvalidateAck:
		e.Msg = &Envelope_InvalidateAck{&InvalidateAck{Req: m.Req, Table: m.Table}}
	default:
		return nil, fmt.Errorf("wirepb: no encoding for %T", m)
	}
	return e, nil
}

// Unwrap decodes an envelope. The message shares the envelope's keys and
// values: the envelope must not be written to afterwards.
func Unwrap(e *Envelope) (from, to wire.NodeID, m wire.Msg, err error) {
	from, to = wire.NodeID(e.GetFrom()), wire.NodeID(e.GetTo())
	switch x := e.GetMsg().(type) {
	case *Envelope_CreateTableRequest:
		var l wire.Layout
		if l, err = layoutWire(x.CreateTableRequest.GetLayout()); err == nil {
			m = &wire.CreateTableRequest{Req: x.CreateTableRequest.GetReq(), Layout: l}
		}
	case *Envelope_CreateTableReply:
		var c wire.Code
		if c, err = codeWire(x.CreateTableReply.GetCode()); err == nil {
			m = &wire.CreateTableReply{Req: x.CreateTableReply.GetReq(), Code: c}
		}
	case *Envelope_DeleteTableRequest:
		m = &wire.DeleteTableRequest{Req: x.DeleteTableRequest.GetReq(), Name: x.DeleteTableRequest.GetName()}
	case *Envelope_DeleteTableReply:
		var c wire.Code
		if c, err = codeWire(x.DeleteTableReply.GetCode()); err == nil {
			m = &wire.DeleteTableReply{Req: x.DeleteTableReply.GetReq(), Code: c}
		}
	case *Envelope_TableInfoRequest:
		m = &wire.TableInfoRequest{Req: x.TableInfoRequest.GetReq(), Name: x.TableInfoRequest.GetName()}
	case *Envelope_TableInfoReply:
		r := x.TableInfoReply
		out := &wire.TableInfoReply{Req: r.GetReq()}
		if out.Code, err = codeWire(r.GetCode()); err == nil && r.GetLayout() != nil {
			out.Layout, err = layoutWire(r.GetLayout())
		}
		m = out
	case *Envelope_PutRequest:
		r := x.PutRequest
		var b wire.Bound
		if b, err = boundWire(r.GetBound()); err == nil {
			m = &wire.PutRequest{Req: r.GetReq(), Tablet: refWire(r.GetTablet()), Key: keyString(r.GetKey()), Value: r.GetValue(), MinTS: tsWire(r.GetMinTs()),
				W: r.GetW(), Wait: time.Duration(r.GetWaitNanos()), Bound: b, Budget: time.Duration(r.GetBudgetNanos()), Test: testWire(r.GetTest())}
		}
	case *Envelope_PutReply:
		r := x.PutReply
		out := &wire.PutReply{Req: r.GetReq(), TS: tsWire(r.GetTs()), Acks: r.GetAcks(), WriteID: r.GetWriteId(), Holders: holdersWire(r.GetHolders())}
		if out.Code, err = codeWire(r.GetCode()); err == nil {
			if out.Stage, err = stageWire(r.GetStage()); err == nil {
				out.Tested, err = outcomeWire(r.GetTested())
			}
		}
		m = out
	case *Envelope_GetRequest:
		r := x.GetRequest
		var b wire.Bound
		if b, err = boundWire(r.GetBound()); err == nil {
			m = &wire.GetRequest{Req: r.GetReq(), Tablet: refWire(r.GetTablet()), Key: keyString(r.GetKey()), Bound: b, Budget: time.Duration(r.GetBudgetNanos())}
		}
	case *Envelope_GetReply:
		r := x.GetReply
		var c wire.Code
		if c, err = codeWire(r.GetCode()); err == nil {
			m = &wire.GetReply{Req: r.GetReq(), Code: c, Found: r.GetFound(), Value: r.GetValue(),
				VersionTS: tsWire(r.GetVersionTs()), HighTS: tsWire(r.GetHighTs()), Primary: r.GetPrimary(),
				Applied: r.GetApplied(), Pending: r.GetPending(), Null: r.GetNull()}
		}
	case *Envelope_ProbeRequest:
		m = &wire.ProbeRequest{Req: x.ProbeRequest.GetReq(), Tablet: refWire(x.ProbeRequest.GetTablet())}
	case *Envelope_ProbeReply:
		r := x.ProbeReply
		var c wire.Code
		if c, err = codeWire(r.GetCode()); err == nil {
			m = &wire.ProbeReply{Req: r.GetReq(), Code: c, HighTS: tsWire(r.GetHighTs()), Primary: r.GetPrimary()}
		}
	case *Envelope_PullRequest:
		r := x.PullRequest
		m = &wire.PullRequest{Tablet: refWire(r.GetTablet()), Since: tsWire(r.GetSince()),
			InSnapshot: r.GetInSnapshot(), SnapshotHigh: tsWire(r.GetSnapshotHigh()), SnapshotAfter: keyString(r.GetSnapshotAfter())}
	case *Envelope_PullReply:
		r := x.PullReply
		out := &wire.PullReply{Tablet: refWire(r.GetTablet()), Since: tsWire(r.GetSince()), High: tsWire(r.GetHigh()),
			More: r.GetMore(), Snapshot: r.GetSnapshot(), InSnapshot: r.GetInSnapshot(), SnapshotAfter: keyString(r.GetSnapshotAfter()),
			SnapshotLast: keyString(r.GetSnapshotLast()), Entries: make([]wire.Entry, len(r.GetEntries()))}
		for i, en := range r.GetEntries() {
			out.Entries[i] = entryWire(en)
		}
		out.Code, err = codeWire(r.GetCode())
		m = out
	case *Envelope_Push:
		m = &wire.Push{Tablet: refWire(x.Push.GetTablet()), Prev: tsWire(x.Push.GetPrev()), Entry: entryWire(x.Push.GetEntry()), Ack: x.Push.GetAck()}
	case *Envelope_PushAck:
		m = &wire.PushAck{Tablet: refWire(x.PushAck.GetTablet()), High: tsWire(x.PushAck.GetHigh())}
	case *Envelope_Repair:
		m = &wire.Repair{Req: x.Repair.GetReq(), Tablet: refWire(x.Repair.GetTablet()), TS: tsWire(x.Repair.GetTs())}
	case *Envelope_RepairReply:
		r := x.RepairReply
		var c wire.Code
		if c, err = codeWire(r.GetCode()); err == nil {
			m = &wire.RepairReply{Req: r.GetReq(), Code: c, High: tsWire(r.GetHigh())}
		}
	case *Envelope_Forward:
		r := x.Forward
		m = &wire.Forward{Tablet: refWire(r.GetTablet()), Seq: r.GetSeq(), Key: keyString(r.GetKey()), Value: r.GetValue(), MinTS: tsWire(r.GetMinTs()),
			W: r.GetW(), Wait: time.Duration(r.GetWaitNanos()), Test: testWire(r.GetTest())}
	case *Envelope_ForwardAck:
		r := x.ForwardAck
		out := &wire.ForwardAck{Tablet: refWire(r.GetTablet()), Seq: r.GetSeq(), TS: tsWire(r.GetTs()), Acks: r.GetAcks(), Holders: holdersWire(r.GetHolders())}
		if out.Code, err = codeWire(r.GetCode()); err == nil {
			out.Tested, err = outcomeWire(r.GetTested())
		}
		m = out
	case *Envelope_Resolved:
		r := x.Resolved
		var c wire.Code
		if c, err = codeWire(r.GetCode()); err == nil {
			m = &wire.Resolved{Tablet: refWire(r.GetTablet()), WriteID: r.GetWriteId(), Code: c, TS: tsWire(r.GetTs())}
		}
	case *Envelope_CausalPut:
		r := x.CausalPut
		m = &wire.CausalPut{Req: r.GetReq(), Table: r.GetTable(), Session: r.GetSession(), Seq: r.GetSeq(), Key: keyString(r.GetKey()), Value: r.GetValue(),
			Seen: versionWire(r.GetSeen()), Deps: depsWire(r.GetDeps()), Notify: r.GetNotify()}
	case *Envelope_CausalPutReply:
		r := x.CausalPutReply
		var c wire.Code
		if c, err = codeWire(r.GetCode()); err == nil {
			m = &wire.CausalPutReply{Req: r.GetReq(), Table: r.GetTable(), Code: c, Version: versionWire(r.GetVersion())}
		}
	case *Envelope_CausalComplete:
		r := x.CausalComplete
		m = &wire.CausalComplete{Table: r.GetTable(), Session: r.GetSession(), Seq: r.GetSeq()}
	case *Envelope_CausalGet:
		r := x.CausalGet
		m = &wire.CausalGet{Req: r.GetReq(), Table: r.GetTable(), Session: r.GetSession(), Key: keyString(r.GetKey()), Ring: r.GetRing(),
			MaxRead: versionWire(r.GetMaxRead())}
	case *Envelope_CausalGetReply:
		r := x.CausalGetReply
		out := &wire.CausalGetReply{Req: r.GetReq(), Table: r.GetTable(), Found: r.GetFound(), Value: r.GetValue(), Version: versionWire(r.GetVersion()),
			Ring: r.GetRing(), Node: wire.NodeID(r.GetNode()), InFlight: r.GetInFlight()}
		if out.Code, err = codeWire(r.GetCode()); err == nil {
			out.Source, err = sourceWire(r.GetSource())
		}
		m = out
	case *Envelope_CausalGetTx:
		r := x.CausalGetTx
		m = &wire.CausalGetTx{Req: r.GetReq(), Table: r.GetTable(), Session: r.GetSession(), Keys: keysWire(r.GetKeys()), Ring: r.GetRing(),
			MaxRead: versionWire(r.GetMaxRead())}
	case *Envelope_CausalGetTxReply:
		r := x.CausalGetTxReply
		out := &wire.CausalGetTxReply{Req: r.GetReq(), Table: r.GetTable(), Ring: r.GetRing(), Rounds: r.GetRounds()}
		out.Code, err = codeWire(r.GetCode())
		if items := r.GetItems(); err == nil && len(items) > 0 {
			out.Items = make([]wire.TxItem, len(items))
			for i, it := range items {
				out.Items[i] = wire.TxItem{Key: keyString(it.GetKey()), Found: it.GetFound(), Value: it.GetValue(), Version: versionWire(it.GetVersion()),
					InFlight: it.GetInFlight()}
				if out.Items[i].Source, err = sourceWire(it.GetSource()); err != nil {
					break
				}
			}
		}
		m = out
	case *Envelope_Propagate:
		r := x.Propagate
		m = &wire.Propagate{Table: r.GetTable(), Session: r.GetSession(), Seq: r.GetSeq(), Key: keyString(r.GetKey()), Value: r.GetValue(),
			Version: versionWire(r.GetVersion()), Deps: depsWire(r.GetDeps()), Notify: r.GetNotify(), Client: wire.NodeID(r.GetClient())}
	case *Envelope_PropagateAck:
		r := x.PropagateAck
		m = &wire.PropagateAck{Table: r.GetTable(), Session: r.GetSession(), Seq: r.GetSeq(), Ring: r.GetRing(), Client: wire.NodeID(r.GetClient())}
	case *Envelope_Stable:
		r := x.Stable
		m = &wire.Stable{Table: r.GetTable(), Key: keyString(r.GetKey()), Version: versionWire(r.GetVersion())}
	case *Envelope_Read:
		r := x.Read
		m = &wire.Read{Req: r.GetReq(), Table: r.GetTable(), Key: keyString(r.GetKey()), Fill: r.GetFill()}
	case *Envelope_ReadReply:
		r := x.ReadReply
		out := &wire.ReadReply{Req: r.GetReq(), Table: r.GetTable(), Found: r.GetFound(), Value: r.GetValue(), Version: versionWire(r.GetVersion()),
			InFlight: r.GetInFlight(), Ring: r.GetRing(), Node: wire.NodeID(r.GetNode())}
		if out.Code, err = codeWire(r.GetCode()); err == nil {
			out.Source, err = sourceWire(r.GetSource())
		}
		m = out
	case *Envelope_DepCheck:
		r := x.DepCheck
		m = &wire.DepCheck{Req: r.GetReq(), Table: r.GetTable(), Key: keyString(r.GetKey()), Version: versionWire(r.GetVersion())}
	case *Envelope_DepCheckReply:
		m = &wire.DepCheckReply{Req: x.DepCheckReply.GetReq(), Table: x.DepCheckReply.GetTable(), Done: x.DepCheckReply.GetDone()}
	case *Envelope_Invalidate:
		r := x.Invalidate
		m = &wire.Invalidate{Req: r.GetReq(), Table: r.GetTable(), Key: keyString(r.GetKey()), Version: versionWire(r.GetVersion())}
	case *Envelope_InvalidateAck:
		m = &wire.InvalidateAck{Req: x.InvalidateAck.GetReq(), Table: x.InvalidateAck.GetTable()}
	default:
		err = fmt.Errorf("%w: envelope from %q to %q carries no message", ErrMalformed, from, to)
	}
	if err != nil {
		return from, to, nil, err
	}
	return from, to, m, nil
}

func tsPB(t hlc.Timestamp) *Timestamp {
	return &Timestamp{WallNanos: t.WallNanos, Logical: t.Logical}
}

func tsWire(t *Timestamp) hlc.Timestamp {
	return hlc.Timestamp{WallNanos: t.GetWallNanos(), Logical: t.GetLogical()}
}

func refPB(r wire.TabletRef) *TabletRef { return &TabletRef{Table: r.Table, Tablet: r.Tablet} }

func refWire(r *TabletRef) wire.TabletRef {
	return wire.TabletRef{Table: r.GetTable(), Tablet: r.GetTablet()}
}

func entryPB(e wire.Entry) *Entry {
	return &Entry{Ts: tsPB(e.TS), Key: keyBytes(e.Key), Value: e.Value}
}

func entryWire(e *Entry) wire.Entry {
	return wire.Entry{TS: tsWire(e.GetTs()), Key: keyString(e.GetKey()), Value: e.GetValue()}
}

// codeWire range-checks a reply code: the wire type is a byte.
func codeWire(c uint32) (wire.Code, error) {
	if c > 255 {
		return 0, fmt.Errorf("%w: reply code %d", ErrMalformed, c)
	}
	return wire.Code(c), nil
}

// boundWire range-checks a bound: below Immediate no bound is defined.
func boundWire(b int64) (wire.Bound, error) {
	if !wire.Bound(b).Valid() {
		return 0, fmt.Errorf("%w: bound %d", ErrMalformed, b)
	}
	return wire.Bound(b), nil
}

// stageWire range-checks a staged write's stage: 0 (none) to Executed.
func stageWire(s uint32) (wire.Stage, error) {
	if s > uint32(wire.Executed) {
		return 0, fmt.Errorf("%w: stage %d", ErrMalformed, s)
	}
	return wire.Stage(s), nil
}

// outcomeWire range-checks a ReadTestWrite's outcome.
func outcomeWire(o uint32) (wire.Outcome, error) {
	if o > uint32(wire.Failed) {
		return 0, fmt.Errorf("%w: test outcome %d", ErrMalformed, o)
	}
	return wire.Outcome(o), nil
}

// testPB encodes a ReadTestWrite's test; nil, a plain write, stays absent.
func testPB(t *wire.Test) *Test {
	if t == nil {
		return nil
	}
	return &Test{Key: keyBytes(t.Key), Found: t.Found, Value: t.Value}
}

func testWire(t *Test) *wire.Test {
	if t == nil {
		return nil
	}
	return &wire.Test{Key: keyString(t.GetKey()), Found: t.GetFound(), Value: t.GetValue()}
}

// versionPB encodes a causal table's version; the zero version, of a key
// never written, is left out.
func versionPB(v wire.Version) *Version {
	if v.IsZero() {
		return nil
	}
	return &Version{Ts: tsPB(v.TS), Origin: string(v.Origin)}
}

// versionWire decodes a version; an absent one is the zero version.
func versionWire(v *Version) wire.Version {
	if v == nil {
		return wire.Version{}
	}
	return wire.Version{TS: tsWire(v.GetTs()), Origin: wire.NodeID(v.GetOrigin())}
}

func depsPB(deps []wire.Dep) []*Dep {
	if len(deps) == 0 {
		return nil
	}
	out := make([]*Dep, len(deps))
	for i, d := range deps {
		out[i] = &Dep{Key: keyBytes(d.Key), Version: versionPB(d.Version)}
	}
	return out
}

// depsWire decodes dependencies; none is nil.
func depsWire(deps []*Dep) []wire.Dep {
	if len(deps) == 0 {
		return nil
	}
	out := make([]wire.Dep, len(deps))
	for i, d := range deps {
		out[i] = wire.Dep{Key: keyString(d.GetKey()), Version: versionWire(d.GetVersion())}
	}
	return out
}

// keyBytes returns a key as the bytes of a bytes field, sharing the
// string's memory rather than copying it: an envelope Wrap builds is only
// marshaled, never written to, so the bytes stay as immutable as the
// string (this saves an allocation per key on every send).
func keyBytes(k string) []byte { return unsafe.Slice(unsafe.StringData(k), len(k)) }

// keyString returns a decoded key as a string sharing the envelope's
// memory: the message decoding allocated those bytes for this field
// alone, and Unwrap's caller does not write to the envelope afterwards.
func keyString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// keysPB encodes a list of keys; none is nil.
func keysPB(keys []string) [][]byte {
	if len(keys) == 0 {
		return nil
	}
	out := make([][]byte, len(keys))
	for i, k := range keys {
		out[i] = keyBytes(k)
	}
	return out
}

// keysWire decodes a list of keys; none is nil.
func keysWire(keys [][]byte) []string {
	if len(keys) == 0 {
		return nil
	}
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = keyString(k)
	}
	return out
}

// sourceWire range-checks where a causal read's value came from.
func sourceWire(s uint32) (wire.Source, error) {
	if s > uint32(wire.FromCache) {
		return 0, fmt.Errorf("%w: causal read source %d", ErrMalformed, s)
	}
	return wire.Source(s), nil
}

func holdersPB(h []wire.NodeID) []string {
	var out []string
	for _, n := range h {
		out = append(out, string(n))
	}
	return out
}

// holdersWire decodes a list of nodes; none is nil.
func holdersWire(h []string) []wire.NodeID {
	var out []wire.NodeID
	for _, n := range h {
		out = append(out, wire.NodeID(n))
	}
	return out
}

func layoutPB(l wire.Layout) *Layout {
	out := &Layout{Name: l.Name, Id: l.ID, Partition: uint32(l.Partition), WriteLevel: int32(l.WriteLevel), ReplicationMode: uint32(l.Replication.Mode),
		ReplicationIntervalNanos: int64(l.Replication.Interval), Tablets: make([]*Tablet, len(l.Tablets))}
	for i, t := range l.Tablets {
		pt := &Tablet{Start: keyBytes(t.Start), Primary: string(t.Primary)}
		for _, s := range t.Secondaries {
			pt.Secondaries = append(pt.Secondaries, string(s))
		}
		out.Tablets[i] = pt
	}
	out.Causal = causalLayoutPB(l.Causal)
	return out
}

// causalLayoutPB encodes a causal table's layout; nil, a table of
// tablets, stays absent.
func causalLayoutPB(c *wire.CausalLayout) *CausalLayout {
	if c == nil {
		return nil
	}
	out := &CausalLayout{Coordinators: holdersPB(c.Coordinators), Caches: holdersPB(c.Caches), Points: c.Points, Static: c.Static}
	if len(c.Rings) > 0 {
		out.Rings = make([]*Ring, len(c.Rings))
		for i, r := range c.Rings {
			out.Rings[i] = &Ring{Name: r.Name, Nodes: holdersPB(r.Nodes)}
		}
	}
	return out
}

// causalLayoutWire decodes a causal table's layout; absent is nil, and
// empty lists are nil.
func causalLayoutWire(c *CausalLayout) *wire.CausalLayout {
	if c == nil {
		return nil
	}
	out := &wire.CausalLayout{Coordinators: holdersWire(c.GetCoordinators()), Caches: holdersWire(c.GetCaches()), Points: c.GetPoints(), Static: c.GetStatic()}
	if rings := c.GetRings(); len(rings) > 0 {
		out.Rings = make([]wire.Ring, len(rings))
		for i, r := range rings {
			out.Rings[i] = wire.Ring{Name: r.GetName(), Nodes: holdersWire(r.GetNodes())}
		}
	}
	return out
}

func layoutWire(l *Layout) (wire.Layout, error) {
	if l.GetReplicationMode() > 255 {
		return wire.Layout{}, fmt.Errorf("%w: replication mode %d", ErrMalformed, l.GetReplicationMode())
	}
	// An unknown partition is refused here, not left to Validate: a node
	// that read it as another partition would place keys in the wrong
	// tablets.
	if p := l.GetPartition(); p != uint32(wire.ByRange) && p != uint32(wire.ByHash) {
		return wire.Layout{}, fmt.Errorf("%w: unknown partition %d", ErrMalformed, p)
	}
	out := wire.Layout{Name: l.GetName(), ID: l.GetId(), Partition: wire.Partition(l.GetPartition()), WriteLevel: wire.Level(l.GetWriteLevel()), Replication: wire.Replication{
		Mode:     wire.ReplicationMode(l.GetReplicationMode()),
		Interval: time.Duration(l.GetReplicationIntervalNanos()),
	}}
	for _, t := range l.GetTablets() {
		wt := wire.Tablet{Start: keyString(t.GetStart()), Primary: wire.NodeID(t.GetPrimary())}
		for _, s := range t.GetSecondaries() {
			wt.Secondaries = append(wt.Secondaries, wire.NodeID(s))
		}
		out.Tablets = append(out.Tablets, wt)
	}
	out.Causal = causalLayoutWire(l.GetCausal())
	return out, nil
}
