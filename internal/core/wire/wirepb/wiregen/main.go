// Command wiregen derives, from the one definition of each message (its Go
// struct in package wire), everything else the message needs: the
// protobuf schema (wirepb/wire.proto), the conversions between the Go
// struct and the protobuf type (wirepb/convert_gen.go), the message's
// kind, envelope field and encoded size (wire/msg_gen.go), and its trace
// line (wire/trace_gen.go). Run it, then protoc, with
//
//	go generate ./internal/core/wire/wirepb
//
// The Go struct is the source rather than wire.proto because the protocol
// code reads the Go types and their doc comments, and because a Go type
// says more than a protobuf one: that a field is a Code, a Bound or a
// duration, that a struct is optional (a pointer), that a string is a key
// (any bytes, so protobuf bytes) or a node ID (protobuf string). What it
// cannot say is in the field's tag:
//
//	wire:"N"           the field's number in the message; required
//	wire:"N,utf8"      a string that is an identifier (a name), encoded as
//	                   a protobuf string, not bytes
//	wire:"N,zigzag"    an int32 encoded as sint32 (a ring, often -1)
//	wire:"N,omitzero"  a submessage left out when zero (IsZero)
//	wire:"inline"      a struct whose fields are numbered in, and encoded
//	                   as part of, the enclosing message (Layout.Replication)
//
// A message that travels in the envelope says so with a directive at the
// end of its doc comment, naming its field of the envelope:
//
//	//wire:envelope 16
//
// Every other tagged struct is a submessage. How a message prints in a
// trace line (its String, wire/trace_gen.go) is derived too, from the
// order in which the struct declares its fields (a reply's Code last),
// which is not that of their numbers, and from their trace tags (see
// traceField); a message whose line no tag can say keeps a String written
// by hand (format.go), which wiregen leaves alone. Adding a message is
// then: its struct, tagged; its handling; go generate.
//
// The cores do not use the protobuf types directly, as etcd's raft uses
// raftpb: a generated protobuf message must not be copied, holds its
// submessages by pointer and its keys as bytes, and would bring the
// protobuf runtime into every pure core; the cores' plain structs cost one
// generated conversion where a message enters or leaves a process.
package main

import (
	"flag"
	"fmt"
	"go/format"
	"os"
	"path/filepath"
)

func main() {
	wireDir := flag.String("wire", "..", "the directory of package wire")
	pbDir := flag.String("pb", ".", "the directory of package wirepb")
	flag.Parse()
	if err := run(*wireDir, *pbDir); err != nil {
		fmt.Fprintln(os.Stderr, "wiregen:", err)
		os.Exit(1)
	}
}

func run(wireDir, pbDir string) error {
	files, err := generate(wireDir, pbDir)
	if err != nil {
		return err
	}
	for _, f := range files {
		if err := os.WriteFile(f.path, f.text, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// file is one file wiregen writes.
type file struct {
	path   string
	text   []byte
	goCode bool // formatted with gofmt
}

// generate reads the message definitions in wireDir and returns the files
// derived from them, Go files formatted.
func generate(wireDir, pbDir string) ([]file, error) {
	s, err := load(wireDir)
	if err == nil {
		err = s.check()
	}
	if err != nil {
		return nil, err
	}
	trace, err := s.traceGo()
	if err != nil {
		return nil, err
	}
	files := []file{
		{filepath.Join(wireDir, "msg_gen.go"), []byte(s.wireGo()), true},
		{filepath.Join(wireDir, "trace_gen.go"), []byte(trace), true},
		{filepath.Join(pbDir, "convert_gen.go"), []byte(s.convertGo()), true},
		{filepath.Join(pbDir, "wire.proto"), []byte(s.proto()), false},
	}
	for i, f := range files {
		if !f.goCode {
			continue
		}
		if files[i].text, err = format.Source(f.text); err != nil {
			return nil, fmt.Errorf("%s: %w", f.path, err)
		}
	}
	return files, nil
}
