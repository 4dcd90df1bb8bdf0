package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"storj.io/drpc"
	"storj.io/drpc/drpcconn"
	"storj.io/drpc/drpcerr"

	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/internal/core/wire/wirepb"
	"github.com/cosla/cosla/internal/runtime/certs"
)

// syncBuffer is a log destination safe for the server's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startTLS starts england's server with mutual TLS over a fresh
// authority that also certifies site us, and returns the certificates'
// directory and the server's log.
func startTLS(t *testing.T) (*Server, string, *syncBuffer) {
	t.Helper()
	dir := t.TempDir()
	if err := certs.Ensure(dir, []string{"england", "us"}); err != nil {
		t.Fatal(err)
	}
	log := &syncBuffer{}
	srv, err := Start(Options{Site: "england", Listen: "127.0.0.1:0", DataDir: t.TempDir(),
		TLS: TLSFiles(certs.NodeFiles(dir, "england")), Logger: slog.New(slog.NewTextHandler(log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv, dir, log
}

// dialStream opens a stream to addr over TLS with cfg, or in plain text
// if cfg is nil, on a DRPC connection of DRPC's own (drpcconn), which the
// test's cleanup closes.
func dialStream(t *testing.T, addr string, cfg *tls.Config) (drpc.Stream, error) {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	if cfg != nil {
		nc = tls.Client(nc, cfg)
	}
	conn := drpcconn.New(nc)
	t.Cleanup(func() { _ = conn.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return conn.NewStream(ctx, wirepb.StreamRPC, wirepb.Encoding)
}

// send sends m from from to england/r1 on s. A send that the peer's
// refusal of an earlier message overtakes fails (context canceled, as
// drpcstream reports a stream terminated during a write); why the stream
// ended is what recv returns then.
func send(t *testing.T, s drpc.Stream, from wire.NodeID, m wire.Msg) error {
	t.Helper()
	e, err := wirepb.Wrap(from, "england/r1", m)
	if err != nil {
		t.Fatal(err)
	}
	return s.MsgSend(e, wirepb.Encoding)
}

// recv returns the next envelope on s.
func recv(s drpc.Stream) (*wirepb.Envelope, error) {
	e := &wirepb.Envelope{}
	if err := s.MsgRecv(e, wirepb.Encoding); err != nil {
		return nil, err
	}
	return e, nil
}

// exchange opens a stream to addr with cfg, sends m from from to
// england/r1, and returns the first envelope back or the error that ended
// the stream.
func exchange(t *testing.T, addr string, cfg *tls.Config, from wire.NodeID, m wire.Msg) (*wirepb.Envelope, error) {
	t.Helper()
	s, err := dialStream(t, addr, cfg)
	if err != nil {
		return nil, err
	}
	_ = send(t, s, from, m) // the refusal of m may overtake its send
	return recv(s)
}

// holder returns the TLS config of a certificate holder, dialing
// england's node.
func holder(t *testing.T, f certs.Files) *tls.Config {
	t.Helper()
	cfg, err := certs.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ServerName = "england"
	return cfg
}

// refused reports whether err ended a stream because the certificate
// did not allow what was sent.
func refused(err error) bool { return drpcerr.Code(err) == wirepb.RefusedCode }

// TestTLSRoles: a client certificate may send client requests and gets
// answers; a replication message under it is refused, ends its stream and
// is logged; a node certificate may not speak for another site's nodes.
func TestTLSRoles(t *testing.T) {
	srv, dir, log := startTLS(t)
	client := holder(t, certs.ClientFiles(dir))

	reply, err := exchange(t, srv.Addr(), client, "us/client-1", &wire.TableInfoRequest{Req: 1, Name: "t"})
	if err != nil {
		t.Fatalf("a client request under a client certificate: %v", err)
	}
	if _, _, m, err := wirepb.Unwrap(reply); err != nil || m.(*wire.TableInfoReply).Code != wire.NoTable {
		t.Fatalf("reply %v, %v; want a TableInfoReply saying no table", m, err)
	}

	for _, tc := range []struct {
		name string
		cfg  *tls.Config
		from wire.NodeID
		m    wire.Msg
		log  string
	}{
		{"client sends a pull", client, "us/client-1", &wire.PullRequest{Tablet: wire.TabletRef{Table: 1}}, "a client certificate sent *wire.PullRequest"},
		{"client sends a push", client, "us/r1", &wire.Push{Entry: wire.Entry{TS: hlc.Timestamp{WallNanos: 1}, Key: "k"}}, "a client certificate sent *wire.Push"},
		{"client sends a reply", client, "us/r1", &wire.GetReply{Req: 1}, "a client certificate sent *wire.GetReply"},
		{"us's node speaks for india", holder(t, certs.NodeFiles(dir, "us")), "india/r1", &wire.PushAck{}, "sent *wire.PushAck as india/r1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := srv.Status().Transport.Refused
			_, err := exchange(t, srv.Addr(), tc.cfg, tc.from, tc.m)
			if !refused(err) {
				t.Fatalf("stream ended with %v, want refused (code %d)", err, wirepb.RefusedCode)
			}
			if got := srv.Status().Transport.Refused; got != before+1 {
				t.Errorf("refused count %d -> %d, want one more", before, got)
			}
			if !strings.Contains(log.String(), tc.log) {
				t.Errorf("the log does not say %q:\n%s", tc.log, log)
			}
		})
	}

	var metrics strings.Builder
	WritePrometheus(&metrics, srv.Status(), time.Now())
	if !strings.Contains(metrics.String(), "cosla_transport_refused_total 4\n") {
		t.Errorf("metrics lack cosla_transport_refused_total 4:\n%s", metrics.String())
	}
	// The node certificate of us, speaking for its own node, is served.
	if _, err := exchange(t, srv.Addr(), holder(t, certs.NodeFiles(dir, "us")), "us/r1", &wire.ProbeRequest{Req: 2, Tablet: wire.TabletRef{Table: 1}}); err != nil {
		t.Fatalf("a probe from us/r1 under us's node certificate: %v", err)
	}
}

// TestTLSRefusesStrangers: a peer without a certificate, one certified by
// another authority, and a plain-text peer cannot reach the node.
func TestTLSRefusesStrangers(t *testing.T) {
	srv, dir, _ := startTLS(t)
	ca, err := certs.Load(certs.ClientFiles(dir))
	if err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	if err := certs.Ensure(other, []string{"england"}); err != nil {
		t.Fatal(err)
	}
	foreign, err := certs.Load(certs.ClientFiles(other))
	if err != nil {
		t.Fatal(err)
	}
	foreign.RootCAs = ca.RootCAs // trusts england, but england does not trust it
	for name, cfg := range map[string]*tls.Config{
		"no certificate":    {RootCAs: ca.RootCAs, ServerName: "england", MinVersion: tls.VersionTLS13},
		"another authority": withServerName(foreign, "england"),
		"plain text":        nil,
	} {
		t.Run(name, func(t *testing.T) {
			if reply, err := exchange(t, srv.Addr(), cfg, "us/c1", &wire.TableInfoRequest{Req: 1, Name: "t"}); err == nil {
				t.Fatalf("got a reply %v", reply)
			}
		})
	}
	if got := srv.Status().Transport.Received; got != 0 {
		t.Errorf("the node received %d messages from strangers", got)
	}
}

func withServerName(cfg *tls.Config, name string) *tls.Config {
	cfg.ServerName = name
	return cfg
}

// stream is an open stream to england's node under one certificate.
type stream struct {
	t *testing.T
	s drpc.Stream
}

func openStream(t *testing.T, addr string, cfg *tls.Config) stream {
	t.Helper()
	s, err := dialStream(t, addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return stream{t, s}
}

// ask sends a TableInfoRequest as from to england/r1; reply tells how
// the stream fared.
func (s stream) ask(from wire.NodeID, req uint64) {
	s.t.Helper()
	_ = send(s.t, s.s, from, &wire.TableInfoRequest{Req: req, Name: "t"})
}

// reply returns the request number and addressee of the next reply.
func (s stream) reply() (uint64, wire.NodeID, error) {
	e, err := recv(s.s)
	if err != nil {
		return 0, "", err
	}
	_, to, m, err := wirepb.Unwrap(e)
	if err != nil {
		return 0, "", err
	}
	return m.(*wire.TableInfoReply).Req, to, nil
}

// TestTLSClientIdentity: each client holds a certificate of its own, and
// a node takes a client's messages only under the ID the certificate
// names. Alice's certificate sending as bob is refused, ending its
// stream; bob's replies keep going to bob, even when a stream of another
// identity that may speak for bob's ID (us's node certificate) sends as
// him.
func TestTLSClientIdentity(t *testing.T) {
	srv, dir, log := startTLS(t)
	issue := func(name string) *tls.Config {
		f, _, err := certs.IssueClient(dir, name)
		if err != nil {
			t.Fatal(err)
		}
		return holder(t, f)
	}
	alice, bob := issue("alice"), issue("bob")
	b := openStream(t, srv.Addr(), bob)
	b.ask("us/bob-1", 1)
	if req, to, err := b.reply(); err != nil || req != 1 || to != "us/bob-1" {
		t.Fatalf("bob's first reply: request %d to %s, %v; want request 1 to us/bob-1", req, to, err)
	}

	before := srv.Status().Transport.Refused
	a := openStream(t, srv.Addr(), alice)
	a.ask("us/bob-1", 2)
	if req, to, err := a.reply(); !refused(err) {
		t.Errorf("alice sending as us/bob-1: got request %d's reply to %s, %v; want refused", req, to, err)
	}
	if got := srv.Status().Transport.Refused; got != before+1 {
		t.Errorf("refused count %d -> %d, want one more", before, got)
	}
	if want := `the certificate of client \"alice\" sends as SITE/alice or SITE/alice-SUFFIX, not as \"us/bob-1\"`; !strings.Contains(log.String(), want) {
		t.Errorf("the log does not say %s:\n%s", want, log)
	}

	// us's node certificate speaks for any ID at us, but the answer to
	// what it sends as bob goes to bob's stream, which holds the route.
	openStream(t, srv.Addr(), holder(t, certs.NodeFiles(dir, "us"))).ask("us/bob-1", 3)
	if req, to, err := b.reply(); err != nil || req != 3 || to != "us/bob-1" {
		t.Fatalf("bob's next reply: request %d to %s, %v; want request 3 to us/bob-1", req, to, err)
	}
	b.ask("us/bob-1", 4)
	if req, _, err := b.reply(); err != nil || req != 4 {
		t.Fatalf("bob's reply after the attempts: request %d, %v; want 4", req, err)
	}
}
