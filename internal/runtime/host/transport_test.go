package host

import (
	"context"
	"net"
	"reflect"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/runtime/certs"
)

// TestSendOverLimit: a message over MaxMessageBytes is dropped alone and
// counted, before it reaches a stream, and a request is refused to its
// sender at once; one within it is queued.
func TestSendOverLimit(t *testing.T) {
	var local []wire.Msg
	tr := NewTransport(TransportOptions{Peers: map[wire.NodeID]string{"us/r1": "127.0.0.1:1"}, MaxMessageBytes: 1000},
		func(_, to wire.NodeID, m wire.Msg) bool {
			if to == "england/c1" {
				local = append(local, m)
			}
			return to == "england/c1"
		})
	defer tr.Close()
	big := &wire.PullReply{Entries: []wire.Entry{{Key: "k", Value: make([]byte, 2000)}}}
	tr.Send("england/r1", "us/r1", big)
	tr.Send("england/c1", "us/r1", &wire.PutRequest{Req: 7, Key: "k", Value: make([]byte, 2000)})
	tr.Send("england/r1", "us/r1", &wire.PushAck{})
	if st := tr.Stats(); st.TooLarge != 2 || st.Sent != 1 {
		t.Fatalf("stats %+v, want 2 too large and 1 sent", st)
	}
	if len(local) != 1 || !reflect.DeepEqual(local[0], &wire.PutReply{Req: 7, Code: wire.TooLarge}) {
		t.Fatalf("the sender got %v, want its Put refused as too large", local)
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
		{client, "us/client-1", &wire.PutRequest{Key: "k", Bound: wire.Immediate, Test: test}, true},
		{client, "us/client-1", &wire.GetRequest{Key: "k", Bound: wire.Unbounded}, true},
		{client, "us/client-1", &wire.Forward{Key: "k", Test: test}, false},
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

// TestAllowsOnlyItsClient: a client certificate sends requests as the
// client it names, at any site, and as no other; a node's certificate
// speaks for any ID of its site.
func TestAllowsOnlyItsClient(t *testing.T) {
	alice := sender{role: certs.Client, name: "alice"}
	us := sender{role: certs.Node, name: "us"}
	get := &wire.GetRequest{Key: "k", Bound: wire.Unbounded}
	for _, tc := range []struct {
		who  sender
		from wire.NodeID
		ok   bool
	}{
		{alice, "us/alice", true},
		{alice, "china/alice-7f3e", true},
		{alice, "us/bob-1", false},
		{alice, "us/alicebob", false},
		{alice, "us/client-1", false},
		{us, "us/bob-1", true},
		{us, "china/bob-1", false},
	} {
		if err := tc.who.allows(tc.from, get); (err == nil) != tc.ok {
			t.Errorf("%s certificate %q sends a Get as %s: %v, want allowed %v", tc.who.role, tc.who.name, tc.from, err, tc.ok)
		}
	}
}

// TestRouteBackKeepsIdentity: the route back to a client moves to another
// stream of the same identity (a new stream after a broken one), not to a
// stream of another, which may speak for the client's ID (a node
// certificate of its site) but does not receive what is sent to it.
func TestRouteBackKeepsIdentity(t *testing.T) {
	tr := NewTransport(TransportOptions{}, func(_, _ wire.NodeID, _ wire.Msg) bool { return false })
	defer tr.Close()
	bob := sender{role: certs.Client, name: "bob"}
	first, second, node := newQueue(8, invokeID, nil), newQueue(8, invokeID, nil), newQueue(8, invokeID, nil)
	tr.routeBack("us/bob-1", route{q: first, who: bob})
	tr.routeBack("us/bob-1", route{q: node, who: sender{role: certs.Node, name: "us"}})
	tr.Send("england/r1", "us/bob-1", &wire.PushAck{})
	if first.n != 1 || node.n != 0 {
		t.Fatalf("after a node's stream sent as us/bob-1: bob's stream has %d messages, the node's %d; want 1 and 0", first.n, node.n)
	}
	tr.routeBack("us/bob-1", route{q: second, who: bob})
	tr.Send("england/r1", "us/bob-1", &wire.PushAck{})
	if second.n != 1 {
		t.Fatalf("bob's new stream has %d messages, want the one sent after it took the route", second.n)
	}
}

// TestSendUnencodable: over a real stream on loopback, a message that
// cannot be encoded (a table name that is not UTF-8) is dropped alone and
// refused to its sender at once, while the messages queued around it on
// the same stream arrive in order, one whose key is not UTF-8 among them
// (keys are bytes).
func TestSendUnencodable(t *testing.T) {
	const client, node = wire.NodeID("us/c1"), wire.NodeID("england/r1")
	arrived := make(chan wire.Msg, 16)
	server := NewTransport(TransportOptions{}, func(_, to wire.NodeID, m wire.Msg) bool {
		if to == node {
			arrived <- m
		}
		return to == node
	})
	defer server.Close()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := make(chan wire.Msg, 16)
	tr := NewTransport(TransportOptions{Peers: map[wire.NodeID]string{node: lis.Addr().String()}}, func(from, to wire.NodeID, m wire.Msg) bool {
		if to == client && from == node {
			refused <- m
		}
		return to == client
	})
	defer tr.Close()
	// Queued before the server serves, so that the stream, once open,
	// writes them as one batch.
	sent := []wire.Msg{
		&wire.GetRequest{Req: 1, Key: "a"},
		&wire.TableInfoRequest{Req: 2, Name: "\xff"},
		&wire.GetRequest{Req: 3, Key: "\xff\xfe\x80key"},
		&wire.PutRequest{Req: 4, Key: "\x00\xc3", Value: []byte{0xff}},
	}
	for _, m := range sent {
		tr.Send(client, node, m)
	}
	go func() { _ = server.Serve(lis) }()
	// A stream ended by the message that could not be encoded would leave
	// the later ones undelivered: the receive hangs and the -timeout
	// reports it.
	for _, want := range []wire.Msg{sent[0], sent[2], sent[3]} {
		if got := <-arrived; !reflect.DeepEqual(got, want) {
			t.Fatalf("arrived %v, want %v", got, want)
		}
	}
	select {
	case m := <-refused:
		if r, ok := m.(*wire.TableInfoReply); !ok || r.Req != 2 || r.Code != wire.Unencodable {
			t.Fatalf("the sender got %v, want TableInfoReply(req=2) refused as unencodable", m)
		}
	default:
		t.Fatal("the request that could not be encoded was not refused to its sender")
	}
	if st := tr.Stats(); st.Malformed != 1 || st.Sent != 3 || st.Dropped != 0 {
		t.Fatalf("stats %+v, want 1 malformed, 3 sent, none dropped", st)
	}
}

// TestPeerThatStopsReading: a peer that accepts a connection and never
// reads it does not stall the sender: once the socket's buffers are
// full, Send still returns, queueing up to QueueMax messages and
// dropping the rest, and Close ends the write stuck on the socket. A
// Send that blocked would hang the test until -timeout.
func TestPeerThatStopsReading(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		if nc, err := lis.Accept(); err == nil {
			accepted <- nc
		}
	}()
	const queueMax = 64
	tr := NewTransport(TransportOptions{Peers: map[wire.NodeID]string{"us/r1": lis.Addr().String()}, QueueMax: queueMax},
		func(_, _ wire.NodeID, _ wire.Msg) bool { return false })
	// 64 MiB, more than loopback's socket buffers hold on both ends.
	const sends = 1024
	value := make([]byte, 64<<10)
	for range sends {
		tr.Send("england/r1", "us/r1", &wire.Push{Entry: wire.Entry{Key: "k", Value: value}})
	}
	st := tr.Stats()
	if st.Dropped == 0 || st.Sent+st.Dropped != sends {
		t.Fatalf("stats %+v: want %d messages sent or dropped, some dropped", st, sends)
	}
	tr.Close()
	(<-accepted).Close()
}

// TestRedial: after the peer's process goes away and another listens at
// its address, the next messages reach the new one over a new stream.
func TestRedial(t *testing.T) {
	const node = wire.NodeID("us/r1")
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	first := NewTransport(TransportOptions{}, func(_, to wire.NodeID, _ wire.Msg) bool { return to == node })
	go func() { _ = first.Serve(lis) }()
	var arrived atomic.Bool
	// A short queue: what the loop below sends while no stream is open
	// is mostly dropped rather than written in one large batch.
	tr := NewTransport(TransportOptions{Peers: map[wire.NodeID]string{node: addr}, RedialDelay: time.Millisecond, QueueMax: 16},
		func(_, _ wire.NodeID, _ wire.Msg) bool { return false })
	defer tr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tr.Connect(ctx)
	first.Close()

	lis, err = net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("the address %s was taken meanwhile: %v", addr, err)
	}
	second := NewTransport(TransportOptions{}, func(_, to wire.NodeID, _ wire.Msg) bool {
		arrived.Store(true)
		return to == node
	})
	defer second.Close()
	go func() { _ = second.Serve(lis) }()
	// Messages sent before the broken stream is noticed are lost with
	// it; keep sending until one arrives.
	for !arrived.Load() {
		tr.Send("england/r1", node, &wire.PushAck{})
		runtime.Gosched()
	}
}

// TestReceivedOverLimit: a message over the receiver's MaxMessageBytes
// ends its stream undelivered; the sender's next messages arrive over a
// new one.
func TestReceivedOverLimit(t *testing.T) {
	const node = wire.NodeID("us/r1")
	arrived := make(chan wire.Msg, 1)
	server := NewTransport(TransportOptions{MaxMessageBytes: 1000}, func(_, to wire.NodeID, m wire.Msg) bool {
		select {
		case arrived <- m:
		default:
		}
		return to == node
	})
	defer server.Close()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = server.Serve(lis) }()
	tr := NewTransport(TransportOptions{Peers: map[wire.NodeID]string{node: lis.Addr().String()}, RedialDelay: time.Millisecond, QueueMax: 16},
		func(_, _ wire.NodeID, _ wire.Msg) bool { return false })
	defer tr.Close()
	tr.Send("england/r1", node, &wire.Push{Entry: wire.Entry{Key: "big", Value: make([]byte, 2000)}})
	small := &wire.PushAck{}
	for {
		tr.Send("england/r1", node, small)
		select {
		case m := <-arrived:
			if !reflect.DeepEqual(m, small) {
				t.Fatalf("arrived %v, want only the small messages", m)
			}
			return
		default:
			runtime.Gosched()
		}
	}
}
