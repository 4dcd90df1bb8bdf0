package server

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// The status page: one HTML file with its CSS and JavaScript inline,
// embedded in the binary and served at /. It fetches nothing but /cluster
// from the process that served it (its Content-Security-Policy says so),
// so it works on a machine with no way out, and it renders in the browser
// from the same JSON that tools read: porcupine's visualization is the
// model, one self-contained file.
//
//go:embed page.html
var pageHTML []byte

// pageCSP forbids the page every source but its own inline code and
// /cluster on its own origin.
const pageCSP = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// peerStatusTimeout bounds the fetch of one status peer's /status for
// /cluster. The page asks every 2 s: a peer that has not answered within
// a second is shown as unreachable with the error, rather than holding
// the page past its next refresh.
const peerStatusTimeout = time.Second

// peerStatusBytesMax bounds a peer's /status as /cluster reads it: far
// above a site of many nodes and tablets.
const peerStatusBytesMax = 16 << 20

// ClusterView is what /cluster reports: this process's status and that of
// every status peer (Options.StatusPeers), one site each.
type ClusterView struct {
	// Self is this process's site.
	Self string `json:"self"`
	// Time is when this process answered, by its clock.
	Time time.Time `json:"time"`
	// Sites holds every site, this one included, sorted by name.
	Sites []SiteView `json:"sites"`
}

// SiteView is one site's process as /cluster saw it.
type SiteView struct {
	Site string `json:"site"`
	// HTTP is the address its status was fetched from; "" for this
	// process.
	HTTP string `json:"http,omitempty"`
	// Status is its /status, or nil when the fetch failed, and Error then
	// says why (unreachable, timed out, not a status).
	Status *Status `json:"status,omitempty"`
	Error  string  `json:"error,omitempty"`
	// FetchMS is how long the fetch took, in milliseconds.
	FetchMS float64 `json:"fetch_ms"`
}

// ClusterView returns this process's status and every status peer's,
// fetched at once, each within peerStatusTimeout.
func (s *Server) ClusterView(ctx context.Context) ClusterView {
	self := s.Status()
	view := ClusterView{Self: s.opts.Site, Time: self.Time, Sites: []SiteView{{Site: s.opts.Site, Status: &self}}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for site, addr := range s.opts.StatusPeers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v := SiteView{Site: site, HTTP: addr}
			start := time.Now()
			st, err := s.peerStatus(ctx, addr)
			v.FetchMS = float64(time.Since(start)) / float64(time.Millisecond)
			if err != nil {
				v.Error = err.Error()
			} else {
				v.Status = &st
			}
			mu.Lock()
			view.Sites = append(view.Sites, v)
			mu.Unlock()
		}()
	}
	wg.Wait()
	slices.SortFunc(view.Sites, func(a, b SiteView) int { return strings.Compare(a.Site, b.Site) })
	return view
}

// peerStatus fetches a status peer's /status.
func (s *Server) peerStatus(ctx context.Context, addr string) (Status, error) {
	var st Status
	ctx, cancel := context.WithTimeout(ctx, peerStatusTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/status", nil)
	if err != nil {
		return st, err
	}
	resp, err := s.peerClient.Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("GET http://%s/status: %s", addr, resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, peerStatusBytesMax)).Decode(&st); err != nil {
		return st, fmt.Errorf("GET http://%s/status: %w", addr, err)
	}
	return st, nil
}

func (s *Server) servePage(w http.ResponseWriter, _ *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", pageCSP)
	h.Set("Cache-Control", "no-cache")
	_, _ = w.Write(pageHTML)
}

func (s *Server) serveCluster(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(s.ClusterView(r.Context()))
}
