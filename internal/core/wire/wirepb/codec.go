package wirepb

import (
	"fmt"

	"google.golang.org/grpc/encoding"
	protocodec "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	"github.com/cosla/cosla/internal/core/wire"
)

// Encoded is an envelope already in its wire format. Encoding a message
// where it is sent, rather than in the goroutine that writes a stream,
// keeps a message that cannot be encoded the sender's failure alone: a
// stream whose write fails ends, and every message queued on it with it.
type Encoded []byte

// Encode wraps a message and its addresses in an envelope and encodes it.
// It fails for a message that has no encoding or whose identifiers (node
// IDs, table and ring names, protobuf strings) are not valid UTF-8; keys
// and values may be any bytes.
func Encode(from, to wire.NodeID, m wire.Msg) (Encoded, error) {
	e, err := Wrap(from, to, m)
	if err != nil {
		return nil, err
	}
	b, err := proto.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("wirepb: encoding %s from %q to %q: %w", wire.Kind(m), from, to, err)
	}
	return b, nil
}

// Codec is the gRPC codec of the Node service, to be forced on both ends
// of its streams (grpc.ForceCodecV2, grpc.ForceServerCodecV2). It writes
// an *Encoded as it is, and encodes and decodes everything else as gRPC's
// protobuf codec does; its name is that codec's, so the bytes on the
// wire and the content type are the same.
var Codec encoding.CodecV2 = codec{}

type codec struct{}

func (codec) Marshal(v any) (mem.BufferSlice, error) {
	if e, ok := v.(*Encoded); ok {
		return mem.BufferSlice{mem.SliceBuffer(*e)}, nil
	}
	return encoding.GetCodecV2(protocodec.Name).Marshal(v)
}

func (codec) Unmarshal(data mem.BufferSlice, v any) error {
	return encoding.GetCodecV2(protocodec.Name).Unmarshal(data, v)
}

func (codec) Name() string { return protocodec.Name }
