package main

import (
	"fmt"
	"strings"
)

// protoPreamble opens wire.proto: what the schema is and the service
// that carries it. The generated-code marker comes after the package
// statement, whose comments protoc copies into the Go files it generates.
const protoPreamble = `syntax = "proto3";

// The wire format of cosla's messages between nodes and clients: each
// message is a struct of package wire, whose tags number its fields (see
// wirepb/wiregen). Regenerate this file and the Go code with
// ` + "`go generate ./internal/core/wire/wirepb`" + ` (needs protoc on the PATH).
//
// Keys are any bytes: every field that carries a key or a position among
// keys (a key, a tablet's start, a snapshot's resume point) is ` + "`bytes`" + `,
// never ` + "`string`" + `, which proto3 requires to be valid UTF-8 and which gRPC
// then refuses to encode. The fields that are ` + "`string`" + ` are identifiers
// checked for valid UTF-8 where they enter (node IDs, table and ring
// names). A number missing from a message is reserved: it was used once.
package cosla.wire;

option go_package = "github.com/cosla/cosla/internal/core/wire/wirepb";

` + header + `
// Node is served by every cosla process. One Stream per connection carries
// envelopes both ways, in order; the process routes each to the node it
// names.
service Node {
  rpc Stream(stream Envelope) returns (stream Envelope);
}

// An envelope carries one message from one node to another.
message Envelope {
  string from = 1;
  string to = 2;
  oneof msg {
`

// protoTimestamp is hlc.Timestamp, which lives outside package wire.
const protoTimestamp = `
// A hybrid logical clock's timestamp (hlc.Timestamp).
message Timestamp {
  int64 wall_nanos = 1;
  uint32 logical = 2;
}
`

// proto is wirepb's wire.proto.
func (s *schema) proto() string {
	var b strings.Builder
	b.WriteString(protoPreamble)
	for _, m := range s.envelope() {
		fmt.Fprintf(&b, "    %s %s = %d;\n", m.name, snake(m.name), m.envelope)
	}
	b.WriteString("  }\n}\n" + protoTimestamp)
	for _, m := range s.structs {
		b.WriteString("\n")
		for _, line := range m.doc {
			b.WriteString(strings.TrimRight("// "+line, " ") + "\n")
		}
		fmt.Fprintf(&b, "message %s {\n", m.name)
		next := 1
		for _, f := range m.fields {
			for ; next < f.number; next++ {
				fmt.Fprintf(&b, "  reserved %d;\n", next)
			}
			next = f.number + 1
			fmt.Fprintf(&b, "  %s %s = %d;\n", s.must(m, f).protoType(), f.proto, f.number)
		}
		b.WriteString("}\n")
	}
	return b.String()
}
