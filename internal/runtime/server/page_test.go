package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cosla/cosla/internal/core/replica"
	"github.com/cosla/cosla/internal/runtime/nettest"
)

// httpGet fetches a path of a server's HTTP listener.
func httpGet(t *testing.T, srv *Server, path string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Get("http://" + srv.HTTPAddr() + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

// TestStatusPageSelfContained: / serves the embedded page as HTML under a
// Content-Security-Policy that allows nothing from elsewhere, and the page
// names no external resource: no script, style, font or image by URL.
func TestStatusPageSelfContained(t *testing.T) {
	srv, err := Start(Options{Site: "england", Listen: "127.0.0.1:0", HTTPListen: "127.0.0.1:0", DataDir: t.TempDir(), Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	resp, body := httpGet(t, srv, "/")
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET /: %s, %s; want 200 text/html", resp.Status, resp.Header.Get("Content-Type"))
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "connect-src 'self'") {
		t.Errorf("GET /: Content-Security-Policy %q, want default-src 'none' and connect-src 'self'", csp)
	}
	if body != string(pageHTML) {
		t.Errorf("GET / did not serve page.html")
	}
	for _, bad := range []*regexp.Regexp{
		regexp.MustCompile(`(?i)https?://`), regexp.MustCompile(`(?i)\ssrc\s*=`), regexp.MustCompile(`(?i)<link`),
		regexp.MustCompile(`(?i)@import`), regexp.MustCompile(`(?i)url\(`), regexp.MustCompile(`(?i)@font-face`),
		regexp.MustCompile(`fetch\("(?:[^/]|//)`),
	} {
		if loc := bad.FindStringIndex(body); loc != nil {
			t.Errorf("page.html refers to something outside itself (%s): %q", bad, body[max(0, loc[0]-40):min(len(body), loc[1]+40)])
		}
	}
	if resp, _ := httpGet(t, srv, "/nothing"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /nothing: %s, want 404: only / is the page", resp.Status)
	}
}

// TestClusterView: /cluster reports this process's status and each status
// peer's, sorted by site; a peer that refuses the connection and one that
// never answers appear with their errors, the second cut off by
// peerStatusTimeout rather than holding the answer.
func TestClusterView(t *testing.T) {
	b, err := Start(Options{Site: "b", Listen: "127.0.0.1:0", HTTPListen: "127.0.0.1:0", DataDir: t.TempDir(), Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	// refused: a port held by a socket that does not listen (a closed
	// listener's port may be taken by another test's listener by the time
	// a is asked); silent: a listener that accepts and never answers.
	refused := nettest.RefusedAddr(t)
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	a, err := Start(Options{Site: "a", Listen: "127.0.0.1:0", HTTPListen: "127.0.0.1:0", DataDir: t.TempDir(), Insecure: true,
		StatusPeers: map[string]string{"b": b.HTTPAddr(), "c": refused, "d": silent.Addr().String()}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	resp, body := httpGet(t, a, "/cluster")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /cluster: %s %s", resp.Status, body)
	}
	var view ClusterView
	if err := json.Unmarshal([]byte(body), &view); err != nil {
		t.Fatalf("GET /cluster: %v\n%s", err, body)
	}
	var got []string
	for _, s := range view.Sites {
		desc := s.Site + ":"
		switch {
		case s.Status != nil && s.Error == "":
			desc += "up as " + s.Status.Site
			if len(s.Status.Nodes) != 1 || string(s.Status.Nodes[0].ID) != s.Site+"/r1" {
				t.Errorf("site %s: nodes %+v, want %s/r1", s.Site, s.Status.Nodes, s.Site)
			}
		case s.Status == nil && strings.Contains(s.Error, "refused"):
			desc += "refused"
		case s.Status == nil && (strings.Contains(s.Error, "deadline exceeded") || strings.Contains(s.Error, "Timeout")):
			desc += "timed out"
		default:
			desc += fmt.Sprintf("status %v, error %q", s.Status != nil, s.Error)
		}
		got = append(got, desc)
	}
	if want := "a:up as a b:up as b c:refused d:timed out"; strings.Join(got, " ") != want {
		t.Errorf("/cluster sites: %s\nwant %s", strings.Join(got, " "), want)
	}
	if view.Self != "a" || view.Time.IsZero() {
		t.Errorf("/cluster: self %q, time %v; want a and a time", view.Self, view.Time)
	}
}

// TestRecentErrors: the records at warn level and above of every logger
// of the process, the nodes' included, are kept in /status with their
// attributes, the last recentErrorsMax of them, oldest first, even when
// the process logs at error level only; records below warn are not.
func TestRecentErrors(t *testing.T) {
	var logged syncBuffer
	srv, err := Start(Options{Site: "england", Listen: "127.0.0.1:0", HTTPListen: "127.0.0.1:0", DataDir: t.TempDir(),
		Insecure: true, Logger: slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelError}))})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	// Start warned that TLS is off.
	st := srv.Status()
	if len(st.RecentErrors) != 1 || !strings.Contains(st.RecentErrors[0].Message, "insecure is set") || st.RecentErrors[0].Level != "WARN" {
		t.Fatalf("recent errors after an insecure start: %+v, want its warning", st.RecentErrors)
	}
	node := srv.opts.Logger.With("node", "england/r1").WithGroup("pull")
	node.Info("not kept")
	for i := range recentErrorsMax + 9 {
		node.Warn("slow", "n", i)
	}
	node.Error("failed", "err", errors.New("disk on fire"))
	_, body := httpGet(t, srv, "/status")
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatal(err)
	}
	recent := st.RecentErrors
	if len(recent) != recentErrorsMax {
		t.Fatalf("%d recent errors, want %d", len(recent), recentErrorsMax)
	}
	first, last := recent[0], recent[len(recent)-1]
	if first.Message != "slow" || first.Attrs != "node=england/r1 pull.n=10" || last.Level != "ERROR" || last.Attrs != `node=england/r1 pull.err="disk on fire"` {
		t.Errorf("oldest kept %+v, newest %+v; want the warning n=10 and the error, with the logger's attributes", first, last)
	}
	for i := 1; i < len(recent); i++ {
		if recent[i].Time.Before(recent[i-1].Time) {
			t.Errorf("recent errors out of order at %d: %v then %v", i, recent[i-1].Time, recent[i].Time)
		}
	}
	// The process's own handler still logs at its level: the error, not
	// the warnings.
	if out := logged.String(); !strings.Contains(out, "disk on fire") || strings.Contains(out, "msg=slow") || strings.Contains(out, "not kept") {
		t.Errorf("the process's log, at error level:\n%s\nwant the error only", out)
	}
	if got := cut("héllo", 2); got != "h…" {
		t.Errorf(`cut("héllo", 2) = %q, want "h…": never half a rune`, got)
	}
}

func TestWritePrometheusLinks(t *testing.T) {
	st := Status{Nodes: []NodeStatus{{ID: "us/r1", Metrics: replica.Metrics{Links: []replica.LinkStatus{
		{Peer: "england/r1", RTT: 80 * time.Millisecond, Samples: 3},
	}}}}}
	var b strings.Builder
	WritePrometheus(&b, st, time.Unix(100, 0))
	for _, want := range []string{
		"# TYPE cosla_link_rtt_seconds gauge",
		`cosla_link_rtt_seconds{node="us/r1",peer="england/r1"} 0.080000`,
		`cosla_link_rtt_samples_total{node="us/r1",peer="england/r1"} 3`,
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("metrics lack %s:\n%s", want, b.String())
		}
	}
}
