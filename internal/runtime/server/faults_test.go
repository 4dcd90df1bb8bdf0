package server

import (
	"net/http"
	"strings"
	"testing"

	"github.com/cosla/cosla/internal/core/wire"
)

// TestFaults checks fault injection: POST /faults exists only with
// Options.FaultInjection and takes JSON only; an isolated node's messages
// are dropped both ways, a cut pair's both ways, others' pass; and an
// empty set heals.
func TestFaults(t *testing.T) {
	for _, inject := range []bool{false, true} {
		srv, err := Start(Options{Site: "a", Listen: "127.0.0.1:0", HTTPListen: "127.0.0.1:0", DataDir: t.TempDir(), Insecure: true, FaultInjection: inject})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		post := func(contentType, body string) int {
			resp, err := http.Post("http://"+srv.HTTPAddr()+"/faults", contentType, strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		faults := `{"isolated": ["a/cc"], "cut": [["a/r1", "b/r1"]]}`
		if code := post("text/plain", faults); code == http.StatusOK {
			t.Errorf("FaultInjection %t: POST /faults as text/plain: %d, want a refusal", inject, code)
		}
		code := post("application/json", faults)
		if !inject {
			if code == http.StatusOK || srv.dropped("a/r1", "b/r1") {
				t.Errorf("without FaultInjection, POST /faults: %d, and it took effect: %t", code, srv.dropped("a/r1", "b/r1"))
			}
			continue
		}
		if code != http.StatusOK {
			t.Fatalf("POST /faults: %d", code)
		}
		for _, c := range []struct {
			from, to wire.NodeID
			want     bool
		}{
			{"a/cc", "a/r1", true}, {"b/c1", "a/cc", true},
			{"a/r1", "b/r1", true}, {"b/r1", "a/r1", true},
			{"a/r1", "a/cache", false}, {"c/r1", "a/r1", false},
		} {
			if got := srv.dropped(c.from, c.to); got != c.want {
				t.Errorf("dropped(%s, %s) = %t, want %t", c.from, c.to, got, c.want)
			}
		}
		if post("application/json", `{}`) != http.StatusOK || srv.dropped("a/cc", "a/r1") || srv.dropped("a/r1", "b/r1") {
			t.Error("an empty set did not heal the faults")
		}
	}
}
