package hostcheck

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestAllowed(t *testing.T) {
	for _, tc := range []struct {
		host, listen string
		ok           bool
	}{
		{"127.0.0.1:7180", "127.0.0.1:7180", true},
		{"127.0.0.1", "127.0.0.1:7180", true},
		{"127.0.0.2:9", "127.0.0.1:7180", true}, // any loopback address, any port
		{"[::1]:7180", "127.0.0.1:7180", true},
		{"localhost:7180", "127.0.0.1:7180", true},
		{"LOCALHOST.:7180", "127.0.0.1:7180", true},
		{"evil.example:7180", "127.0.0.1:7180", false},
		{"localhost.evil.example", "127.0.0.1:7180", false},
		{"127.0.0.1.evil.example", "127.0.0.1:7180", false},
		{"", "127.0.0.1:7180", false},
		{"10.0.0.1:7180", "127.0.0.1:7180", false},
		// A listener on a named host answers that name and its loopback.
		{"10.0.0.1:7180", "10.0.0.1:7180", true},
		{"10.0.0.2:7180", "10.0.0.1:7180", false},
		{"Node1.Example.:7180", "node1.example:7180", true},
		{"node2.example:7180", "node1.example:7180", false},
		// On every address: any address, but still no foreign name.
		{"10.0.0.9:7180", "0.0.0.0:7180", true},
		{"[fe80::1]:7180", "[::]:7180", true},
		{"evil.example", "0.0.0.0:7180", false},
	} {
		if got := Allowed(tc.host, tc.listen); got != tc.ok {
			t.Errorf("Allowed(Host %q, listen %q) = %t, want %t", tc.host, tc.listen, got, tc.ok)
		}
	}
}

func TestHandler(t *testing.T) {
	h := Handler("127.0.0.1:7180", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) }))
	for host, want := range map[string]int{"127.0.0.1:7180": http.StatusTeapot, "rebound.example:7180": http.StatusForbidden} {
		r := httptest.NewRequest(http.MethodGet, "/status", nil)
		r.Host = host
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != want {
			t.Errorf("Host %s: status %d, want %d", host, w.Code, want)
		}
	}
}
