package host

import (
	"testing"

	"github.com/cosla/cosla/internal/wire"
)

// TestSendOverLimit: a message over MaxMessageBytes is dropped alone and
// counted, before it reaches a stream; one within it is queued.
func TestSendOverLimit(t *testing.T) {
	tr := NewTransport(TransportOptions{Peers: map[wire.NodeID]string{"us/r1": "127.0.0.1:1"}, MaxMessageBytes: 1000},
		func(_, _ wire.NodeID, _ wire.Msg) bool { return false })
	defer tr.Close()
	big := &wire.PullReply{Entries: []wire.Entry{{Key: "k", Value: make([]byte, 2000)}}}
	tr.Send("england/r1", "us/r1", big)
	tr.Send("england/r1", "us/r1", &wire.PushAck{})
	if st := tr.Stats(); st.TooLarge != 1 || st.Sent != 1 {
		t.Fatalf("stats %+v, want 1 too large and 1 sent", st)
	}
}
