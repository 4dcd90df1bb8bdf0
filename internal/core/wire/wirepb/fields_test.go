package wirepb

import (
	"fmt"
	"reflect"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/cosla/cosla/internal/core/wire"
)

// TestEveryFieldCrosses fills every exported field of every message with
// a value that is not its zero value, keys with bytes that are not UTF-8,
// and checks that it comes back from Wrap, the protobuf encoding and
// Unwrap: a field added to a Go message and forgotten in the schema or
// the conversions fails here, and so does a key field declared string.
func TestEveryFieldCrosses(t *testing.T) {
	for _, m := range oneOfEveryKind() {
		t.Run(wire.Kind(m), func(t *testing.T) {
			fill(reflect.ValueOf(m).Elem(), 1)
			e, err := Wrap("a/x", "b/y", m)
			if err != nil {
				t.Fatal(err)
			}
			b, err := proto.Marshal(e)
			if err != nil {
				t.Fatalf("encoding %#v: %v", m, err)
			}
			var back Envelope
			if err := proto.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			_, _, got, err := Unwrap(&back)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, m) {
				t.Fatalf("round trip lost fields:\n sent %#v\n  got %#v", m, got)
			}
		})
	}
}

// keyFields are the Go fields of package wire's messages that carry keys
// or positions among keys, which may be any bytes; fill gives them bytes
// that are not UTF-8.
var keyFields = map[string]bool{"Key": true, "Keys": true, "Start": true, "SnapshotAfter": true, "SnapshotLast": true}

// identifierFields are the fields of wire.proto that may be `string`:
// node IDs and table and ring names, checked for valid UTF-8 where they
// enter a process.
var identifierFields = map[protoreflect.Name]bool{
	"from": true, "to": true, "primary": true, "secondaries": true, "name": true, "coordinators": true,
	"caches": true, "nodes": true, "holders": true, "origin": true, "node": true, "client": true, "leader": true, "site": true, "table": true, "add": true, "remove": true,
}

// TestOnlyIdentifiersAreStrings: a string field of wire.proto that is not
// an identifier is a key field that gRPC would refuse to encode when the
// key is not UTF-8; it must be bytes.
func TestOnlyIdentifiersAreStrings(t *testing.T) {
	msgs := File_wire_proto.Messages()
	for i := range msgs.Len() {
		fields := msgs.Get(i).Fields()
		for j := range fields.Len() {
			f := fields.Get(j)
			if f.Kind() == protoreflect.StringKind && !identifierFields[f.Name()] {
				t.Errorf("%s is a string: a key or any other bytes must be `bytes` (or add an identifier to identifierFields)", f.FullName())
			}
		}
	}
}

// oneOfEveryKind returns a zero message of each kind of wire.Kinds.
func oneOfEveryKind() []wire.Msg {
	return []wire.Msg{
		&wire.CreateTableRequest{}, &wire.CreateTableReply{}, &wire.DeleteTableRequest{}, &wire.DeleteTableReply{},
		&wire.TableInfoRequest{}, &wire.TableInfoReply{}, &wire.PutRequest{}, &wire.PutReply{},
		&wire.GetRequest{}, &wire.GetReply{}, &wire.ProbeRequest{}, &wire.ProbeReply{},
		&wire.PullRequest{}, &wire.PullReply{}, &wire.Push{}, &wire.PushAck{}, &wire.Repair{},
		&wire.Forward{}, &wire.ForwardAck{}, &wire.Resolved{},
		&wire.CausalPut{}, &wire.CausalPutReply{}, &wire.CausalComplete{}, &wire.CausalGet{}, &wire.CausalGetReply{},
		&wire.CausalGetTx{}, &wire.CausalGetTxReply{}, &wire.Propagate{}, &wire.PropagateAck{}, &wire.Stable{},
		&wire.Read{}, &wire.ReadReply{}, &wire.DepCheck{}, &wire.DepCheckReply{}, &wire.Invalidate{}, &wire.InvalidateAck{},
		&wire.RepairReply{},
		&wire.ConfigRaft{}, &wire.LeaseRenew{}, &wire.LeaseGrant{}, &wire.HighRequest{}, &wire.HighReply{},
		&wire.EpochChange{}, &wire.EpochAck{}, &wire.UtilityReport{}, &wire.Reconfigure{}, &wire.ReconfigureReply{},
	}
}

// fill sets v and everything inside it to small non-zero values, n
// distinguishing siblings. Enumerations (the unsigned 8-bit kinds) get 1,
// a valid value of each.
func fill(v reflect.Value, n int) {
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			switch f := v.Type().Field(i); {
			case keyFields[f.Name] && f.Type.Kind() == reflect.String:
				v.Field(i).SetString(fmt.Sprintf("\xff\xfe\x80k%d\x00", n+i))
			case keyFields[f.Name] && f.Type == reflect.TypeFor[[]string]():
				v.Field(i).Set(reflect.ValueOf([]string{"\xc3", fmt.Sprintf("\xed\xa0\x80%d", n+i)}))
			case f.IsExported():
				fill(v.Field(i), n+i)
			}
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), n)
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			v.SetBytes([]byte(fmt.Sprintf("b%d", n)))
			return
		}
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			fill(v.Index(i), n+i)
		}
	case reflect.String:
		v.SetString(fmt.Sprintf("s/%d", n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(n))
	case reflect.Uint8:
		v.SetUint(1)
	case reflect.Uint, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(n))
	}
}
