package wirepb

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/cosla/cosla/internal/wire"
)

// TestEveryFieldCrosses fills every exported field of every message with
// a value that is not its zero value, and checks that it comes back from
// Wrap and Unwrap: a field added to a Go message and forgotten in the
// schema or the conversions fails here.
func TestEveryFieldCrosses(t *testing.T) {
	for _, m := range oneOfEveryKind() {
		t.Run(wire.Kind(m), func(t *testing.T) {
			fill(reflect.ValueOf(m).Elem(), 1)
			e, err := Wrap("a/x", "b/y", m)
			if err != nil {
				t.Fatal(err)
			}
			_, _, got, err := Unwrap(e)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, m) {
				t.Fatalf("round trip lost fields:\n sent %#v\n  got %#v", m, got)
			}
		})
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
	}
}

// fill sets v and everything inside it to small non-zero values, n
// distinguishing siblings. Enumerations (the unsigned 8-bit kinds) get 1,
// a valid value of each.
func fill(v reflect.Value, n int) {
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
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
