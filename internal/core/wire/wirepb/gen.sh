#!/bin/sh
# Regenerates wire.pb.go and wire_grpc.pb.go from wire.proto, which wiregen
# writes first; run through `go generate ./internal/core/wire/wirepb`. Needs
# protoc on the PATH (Debian: protobuf-compiler); the Go plugins are the
# versions go.mod pins as tools.
set -eu
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/" google.golang.org/protobuf/cmd/protoc-gen-go google.golang.org/grpc/cmd/protoc-gen-go-grpc
PATH="$bin:$PATH" protoc \
	--go_out=. --go_opt=paths=source_relative \
	--go-grpc_out=. --go-grpc_opt=paths=source_relative \
	wire.proto
