// Package wirepb is the protobuf encoding of package wire's messages and the
// DRPC glue of the service that carries them between cosla processes
// (codec.go, written by hand).
//
// A message is defined once, as a struct of package wire whose tags number
// its fields. Everything else is generated from it and committed: the
// schema (wire.proto), the conversions between the wire structs and the
// protobuf types (convert_gen.go), and wire's kinds, sizes
// (../msg_gen.go) and trace lines (../trace_gen.go), by wiregen; then
// wire.pb.go, by protoc from the schema. Regenerate them all after adding
// or changing a message with
//
//	go generate ./internal/core/wire/wirepb
//
// which needs protoc (Debian: protobuf-compiler) on the PATH; the Go plugin
// is pinned as a tool in go.mod. TestGenerated fails while the files
// wiregen writes are not those of the current definitions.
package wirepb

//go:generate go run ./wiregen
//go:generate sh gen.sh
