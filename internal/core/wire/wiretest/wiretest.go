// Package wiretest holds messages for the wire benchmarks: the ones the
// simulator and the transport carry most, each with typical contents.
package wiretest

import (
	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/wire"
)

// HotMessages returns a Get's and a Put's request and reply, a pull reply
// of ten 100-byte versions and a causal put with two dependencies.
func HotMessages() []wire.Msg {
	ts := hlc.Timestamp{WallNanos: 1_700_000_000_123_456_789, Logical: 7}
	ref := wire.TabletRef{Table: 42, Tablet: 3}
	v := wire.Version{TS: ts, Origin: "us/cc"}
	entries := make([]wire.Entry, 10)
	for i := range entries {
		entries[i] = wire.Entry{TS: ts, Key: "user000001", Value: make([]byte, 100)}
	}
	return []wire.Msg{
		&wire.GetRequest{Req: 9, Tablet: ref, Key: "user000001"},
		&wire.GetReply{Req: 10, Found: true, Value: make([]byte, 100), VersionTS: ts, HighTS: ts, Primary: true},
		&wire.PutRequest{Req: 7, Tablet: ref, Key: "user000001", Value: make([]byte, 100), MinTS: ts},
		&wire.PutReply{Req: 8, TS: ts},
		&wire.PullReply{Tablet: ref, Since: ts, High: ts, Entries: entries},
		&wire.CausalPut{Req: 1, Table: 42, Session: 9, Seq: 1, Key: "user000001", Value: make([]byte, 100), Seen: v,
			Deps: []wire.Dep{{Key: "a", Version: v}, {Key: "b", Version: v}}},
	}
}
