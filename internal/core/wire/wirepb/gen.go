// Package wirepb is the protobuf encoding of package wire's messages and the
// gRPC service that carries them between cosla processes. wire.proto is the
// schema; wire.pb.go and wire_grpc.pb.go are generated from it and
// committed. Regenerate them after editing the schema with
//
//	go generate ./internal/core/wire/wirepb
//
// which needs protoc (Debian: protobuf-compiler) on the PATH; the Go plugins
// are pinned as tools in go.mod.
package wirepb

//go:generate sh gen.sh
