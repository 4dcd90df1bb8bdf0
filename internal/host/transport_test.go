package host

import (
	"testing"

	"github.com/cosla/cosla/internal/certs"
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

// TestAllowsStagedWrites: the messages of staged writes between storage
// nodes (Forward, ForwardAck) are refused from a client certificate, as
// is the Resolved a node sends a client; a node's certificate sends them
// all for its own site's nodes only. A bounded Put or Get is a client
// request like any other.
func TestAllowsStagedWrites(t *testing.T) {
	client := sender{role: certs.Client, name: "client"}
	us := sender{role: certs.Node, name: "us"}
	test := &wire.Test{Key: "k", Found: true, Value: []byte("v")}
	for _, tc := range []struct {
		who  sender
		from wire.NodeID
		m    wire.Msg
		ok   bool
	}{
		{client, "us/c1", &wire.PutRequest{Key: "k", Bound: wire.Immediate, Test: test}, true},
		{client, "us/c1", &wire.GetRequest{Key: "k", Bound: wire.Unbounded}, true},
		{client, "us/c1", &wire.Forward{Key: "k", Test: test}, false},
		{client, "us/r1", &wire.Forward{Key: "k"}, false},
		{client, "us/r1", &wire.ForwardAck{Seq: 1}, false},
		{client, "us/r1", &wire.Resolved{WriteID: 1}, false},
		{us, "us/r1", &wire.Forward{Key: "k", Test: test}, true},
		{us, "us/r1", &wire.ForwardAck{Seq: 1}, true},
		{us, "us/r1", &wire.Resolved{WriteID: 1}, true},
		{us, "india/r1", &wire.Forward{Key: "k"}, false},
		{us, "india/r1", &wire.ForwardAck{Seq: 1}, false},
		{us, "india/r1", &wire.Resolved{WriteID: 1}, false},
		{sender{}, "india/r1", &wire.Forward{Key: "k"}, true}, // no TLS
	} {
		if err := tc.who.allows(tc.from, tc.m); (err == nil) != tc.ok {
			t.Errorf("%s certificate %q sends %T as %s: %v, want allowed %v", tc.who.role, tc.who.name, tc.m, tc.from, err, tc.ok)
		}
	}
}
