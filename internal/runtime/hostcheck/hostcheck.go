// Package hostcheck guards cosla's HTTP listeners (each `cosla serve`'s
// status page, /status and /metrics, the local cluster supervisor's
// control API, `cosla bench --metrics-listen`) against DNS rebinding: a
// web page whose own name its author points at 127.0.0.1 reaches a
// loopback listener as its own origin, so the browser lets it read what
// the listener answers, or post to it. The browser still sends that name
// in the Host header, which is how a listener tells: it answers only a
// request that names it by a loopback address, by "localhost", or by the
// host of the address it was told to listen on.
package hostcheck

import (
	"fmt"
	"net"
	"net/http"
	"strings"
)

// Handler returns h behind the check of a listener configured to listen
// on listen (host:port): a request whose Host header names another host
// is answered 403 Forbidden.
func Handler(listen string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !Allowed(r.Host, listen) {
			http.Error(w, fmt.Sprintf("cosla: Host %q does not name this listener: use %s, a loopback address or localhost", r.Host, listen), http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// Allowed reports whether a request's Host header (a name or an address,
// with or without a port) names a listener configured to listen on
// listen. The port is not compared: only the name can be an attacker's.
// A listener on every address (0.0.0.0, ::) also answers any IP address,
// since the machine's addresses are not known here and an address, unlike
// a name, cannot be rebound. An empty Host (HTTP/1.0 without one) is
// refused: every browser sends one, and so does every HTTP/1.1 client.
func Allowed(hostHeader, listen string) bool {
	host := normalize(hostHeader)
	if host == "" {
		return false
	}
	if host == "localhost" {
		return true
	}
	want := normalize(listen)
	ip := net.ParseIP(host)
	if ip == nil {
		return host == want
	}
	if ip.IsLoopback() {
		return true
	}
	wantIP := net.ParseIP(want)
	return wantIP != nil && (wantIP.Equal(ip) || wantIP.IsUnspecified())
}

// normalize returns the host of a Host header or listen address: without
// its port or an IPv6 address's brackets, lower case, without a final dot.
func normalize(s string) string {
	if host, _, err := net.SplitHostPort(s); err == nil {
		s = host
	}
	s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	return strings.TrimSuffix(strings.ToLower(s), ".")
}
