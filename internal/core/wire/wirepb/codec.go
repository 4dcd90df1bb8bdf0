package wirepb

import (
	"fmt"

	"google.golang.org/protobuf/proto"
	"storj.io/drpc"
)

// The Node service (wire.proto) over DRPC (storj.io/drpc): a process
// opens one stream per connection, invoking StreamRPC, and both ends then
// send DRPC message packets, each an encoded Envelope, in order. These
// declarations are the whole of the service's glue, written here rather
// than generated: there is one streaming method and no unary one.
const (
	// StreamRPC is the name the stream is invoked by.
	StreamRPC = "/cosla.wire.Node/Stream"
	// RefusedCode is the DRPC error code (drpcerr.Code) with which a
	// process ends a stream whose certificate does not allow what it
	// sent: a client certificate sending what only nodes send, or as
	// another client, or a node's speaking for another site.
	RefusedCode = 403
)

// Encoding is the DRPC encoding of the stream's messages, for a client
// built on DRPC's own connection (drpcconn): it encodes and decodes an
// *Envelope. (package host writes its envelopes encoded in place, in
// DRPC's frames, and needs none.)
var Encoding drpc.Encoding = encoding{}

type encoding struct{}

// Marshal encodes msg, an *Envelope.
func (encoding) Marshal(msg drpc.Message) ([]byte, error) {
	e, ok := msg.(*Envelope)
	if !ok {
		return nil, fmt.Errorf("wirepb: cannot encode %T", msg)
	}
	return proto.Marshal(e)
}

// Unmarshal decodes buf into msg, an *Envelope.
func (encoding) Unmarshal(buf []byte, msg drpc.Message) error {
	e, ok := msg.(*Envelope)
	if !ok {
		return fmt.Errorf("wirepb: cannot decode into %T", msg)
	}
	return proto.Unmarshal(buf, e)
}
