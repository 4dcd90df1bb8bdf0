package wirepb

import (
	"fmt"

	"google.golang.org/protobuf/proto"
	"storj.io/drpc"

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
// built on DRPC's own connection (drpcconn): it encodes an *Envelope, or
// writes an *Encoded as it is, and decodes into an *Envelope.
var Encoding drpc.Encoding = encoding{}

type encoding struct{}

// Marshal encodes msg, an *Envelope or an *Encoded.
func (encoding) Marshal(msg drpc.Message) ([]byte, error) {
	switch m := msg.(type) {
	case *Encoded:
		return *m, nil
	case *Envelope:
		return proto.Marshal(m)
	}
	return nil, fmt.Errorf("wirepb: cannot encode %T", msg)
}

// Unmarshal decodes buf into msg, an *Envelope.
func (encoding) Unmarshal(buf []byte, msg drpc.Message) error {
	e, ok := msg.(*Envelope)
	if !ok {
		return fmt.Errorf("wirepb: cannot decode into %T", msg)
	}
	return proto.Unmarshal(buf, e)
}
