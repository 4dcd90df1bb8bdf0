#!/bin/sh
# Regenerates wire.pb.go from wire.proto, which wiregen writes first; run
# through `go generate ./internal/core/wire/wirepb`. Needs protoc on the PATH
# (Debian: protobuf-compiler); the Go plugin is the version go.mod pins as a
# tool. The Node service's DRPC glue is codec.go, written by hand.
set -eu
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/" google.golang.org/protobuf/cmd/protoc-gen-go
PATH="$bin:$PATH" protoc \
	--go_out=. --go_opt=paths=source_relative \
	wire.proto
