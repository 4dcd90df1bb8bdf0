package main

import (
	"fmt"
	"strings"
)

// scalar says how a field of a Go type that is not a tagged struct
// travels. The Go expressions are format strings.
type scalar struct {
	proto string // the protobuf type
	toPB  string // the protobuf value of the Go value %s
	toGo  string // the Go value of the protobuf value %s; d is the decoder
	size  string // the field's encoded size: %[1]d its number, %[2]s the Go value
	trace string // b with the Go value %s appended as a trace line prints it
}

// The ways a value appends to a trace line.
const (
	traceUint     = "strconv.AppendUint(b, %s, 10)"
	traceInt      = "strconv.AppendInt(b, int64(%s), 10)"
	traceQuote    = "strconv.AppendQuote(b, %s)"
	traceRaw      = "append(b, %s...)"
	traceStringer = "append(b, %s.String()...)"
)

// scalars are the Go types a message field may have besides tagged
// structs. A key is a string of any bytes, so protobuf bytes (shared with
// the string, see keyBytes); an enumeration is range-checked when
// decoded, up to its last value (an unknown partition is refused there,
// not in Validate: a node that read it as another partition would place
// keys in the wrong tablets).
var scalars = map[string]scalar{
	"uint64":          {"uint64", "%s", "%s", "uintField(%[1]d, %[2]s)", traceUint},
	"int32":           {"int32", "%s", "%s", "uintField(%[1]d, uint64(int64(%[2]s)))", traceInt},
	"bool":            {"bool", "%s", "%s", "boolField(%[1]d, %[2]s)", "strconv.AppendBool(b, %s)"},
	"string":          {"bytes", "keyBytes(%s)", "keyString(%s)", "bytesField(%[1]d, len(%[2]s))", traceQuote},
	"[]byte":          {"bytes", "%s", "%s", "bytesField(%[1]d, len(%[2]s))", "appendValue(b, %s)"},
	"[]string":        {"repeated bytes", "eachOf(%s, keyBytes)", "eachOf(%s, keyString)", "stringsField(%[1]d, %[2]s)", "appendEach(b, %s, appendKey)"},
	"NodeID":          {"string", "string(%s)", "wire.NodeID(%s)", "bytesField(%[1]d, len(%[2]s))", traceRaw},
	"[]NodeID":        {"repeated string", "eachOf(%s, as[string, wire.NodeID])", "eachOf(%s, as[wire.NodeID, string])", "stringsField(%[1]d, %[2]s)", "appendEach(b, %s, appendNode)"},
	"Level":           {"int32", "int32(%s)", "wire.Level(%s)", "uintField(%[1]d, uint64(int64(%[2]s)))", traceStringer},
	"Bound":           {"int64", "int64(%s)", "d.bound(%s)", "uintField(%[1]d, uint64(%[2]s))", traceStringer},
	"time.Duration":   {"int64", "int64(%s)", "time.Duration(%s)", "uintField(%[1]d, uint64(%[2]s))", traceStringer},
	"hlc.Timestamp":   {"Timestamp", "", "tsWire(%s)", "tsField(%[1]d, %[2]s)", "appendTS(b, %s)"}, // toPB: in its block (writePB)
	"Code":            enum("Code(255)", "reply code", "strconv.AppendQuote(b, %s.String())"),
	"Stage":           enum("Executed", "stage", traceStringer),
	"Outcome":         enum("Failed", "test outcome", traceStringer),
	"Source":          enum("FromCache", "causal read source", "append(b, sourceName(%s)...)"),
	"ReplicationMode": enum("ReplicationMode(255)", "replication mode", traceStringer),
	"Partition":       enum("ByHash", "unknown partition", traceStringer),
}

// enum is a byte-sized enumeration, a protobuf uint32 that decodes up to
// the value wire.last and is otherwise refused as a malformed what, and
// that appends to a trace line as trace says.
func enum(last, what, trace string) scalar {
	toGo := fmt.Sprintf("enumWire(d, %%s, wire.%s, %q)", last, what)
	return scalar{"uint32", "uint32(%s)", toGo, "uintField(%[1]d, uint64(%[2]s))", trace}
}

// shape is how a field travels: as a scalar, or as a submessage that is
// always present, optional (a pointer, or omitzero) or repeated (a
// slice).
type shape struct {
	scalar   scalar
	sub      *message // nil for a scalar
	optional bool
	repeated bool
}

func (s *schema) shape(m *message, f field) (shape, error) {
	sh, err := s.shapeOf(f)
	if err != nil {
		return shape{}, fmt.Errorf("%s.%s: %w", m.name, f.goPath, err)
	}
	return sh, nil
}

func (s *schema) shapeOf(f field) (shape, error) {
	switch {
	case f.utf8 && f.goType != "string":
		return shape{}, fmt.Errorf("utf8 on a %s, not a string", f.goType)
	case f.utf8:
		return shape{scalar: scalar{"string", "%s", "%s", "bytesField(%[1]d, len(%[2]s))", traceRaw}}, nil
	case f.zigzag && f.goType != "int32":
		return shape{}, fmt.Errorf("zigzag on a %s, not an int32", f.goType)
	case f.zigzag:
		return shape{scalar: scalar{"sint32", "%s", "%s", "sintField(%[1]d, %[2]s)", traceInt}}, nil
	}
	if sc, ok := scalars[f.goType]; ok {
		if f.omitZero && f.goType != "hlc.Timestamp" {
			return shape{}, fmt.Errorf("omitzero on a %s", f.goType)
		}
		return shape{scalar: sc}, nil
	}
	t := f.goType
	var sh shape
	if rest, ok := strings.CutPrefix(t, "[]"); ok {
		t, sh.repeated = rest, true
	} else if rest, ok := strings.CutPrefix(t, "*"); ok {
		t, sh.optional = rest, true
	}
	if sh.sub = s.byName[t]; sh.sub == nil {
		return shape{}, fmt.Errorf("type %s is neither a scalar wiregen knows nor a tagged struct", f.goType)
	}
	if f.omitZero && (sh.repeated || sh.optional) {
		return shape{}, fmt.Errorf("omitzero on a %s", f.goType)
	}
	return sh, nil
}

// protoType is the field's type in wire.proto.
func (sh shape) protoType() string {
	switch {
	case sh.sub == nil:
		return sh.scalar.proto
	case sh.repeated:
		return "repeated " + sh.sub.name
	}
	return sh.sub.name
}

// must is shape for the generators, which run after check: an error here
// is a bug in wiregen.
func (s *schema) must(m *message, f field) shape {
	sh, err := s.shape(m, f)
	if err != nil {
		panic(err)
	}
	return sh
}

// check reports the first field of an unknown type or with an option
// its type does not take.
func (s *schema) check() error {
	for _, m := range s.structs {
		for _, f := range m.fields {
			if _, err := s.shape(m, f); err != nil {
				return err
			}
		}
	}
	return nil
}
