package server

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/cosla/cosla/internal/core/wire"
)

// Faults are network faults injected into a process's nodes, for fault
// campaigns (`cosla chaos`; Options.FaultInjection). Karma 4.4 counts
// failures and partitions in availability zones, a site's front-ends and
// its back-ends (site.Zone), but a local cluster runs a whole site in one
// process, so a zone's failure, or a partition between two zones, is
// emulated here by dropping the messages of the nodes concerned. A node
// isolated so fails silently to the others: it neither hears nor is
// heard, as a failed zone, while its own state and timers go on, so that
// healing it is a recovery without a restart.
type Faults struct {
	// Isolated are nodes of the process that send and receive nothing.
	Isolated []wire.NodeID `json:"isolated,omitempty"`
	// Cut are pairs of nodes, one of them the process's, between which
	// messages are dropped both ways.
	Cut [][2]wire.NodeID `json:"cut,omitempty"`
}

// faultSet is Faults indexed for dropped, which every message consults.
type faultSet struct {
	isolated map[wire.NodeID]bool
	cut      map[[2]wire.NodeID]bool
}

func newFaultSet(f Faults) *faultSet {
	fs := &faultSet{isolated: map[wire.NodeID]bool{}, cut: map[[2]wire.NodeID]bool{}}
	for _, id := range f.Isolated {
		fs.isolated[id] = true
	}
	for _, p := range f.Cut {
		fs.cut[p] = true
		fs.cut[[2]wire.NodeID{p[1], p[0]}] = true
	}
	return fs
}

// dropped reports whether the injected faults drop a message from one
// node to another.
func (s *Server) dropped(from, to wire.NodeID) bool {
	fs := s.faults.Load()
	return fs != nil && (fs.isolated[from] || fs.isolated[to] || fs.cut[[2]wire.NodeID{from, to}])
}

// send is the nodes' Send: the transport's, unless a fault drops the
// message.
func (s *Server) send(from, to wire.NodeID, m wire.Msg) {
	if s.dropped(from, to) {
		return
	}
	s.transport.Send(from, to, m)
}

// SetFaults replaces the injected faults; the zero Faults heals them.
func (s *Server) SetFaults(f Faults) {
	s.faults.Store(newFaultSet(f))
	s.opts.Logger.Warn("cosla serve: injected faults", "isolated", f.Isolated, "cut", f.Cut)
}

// serveFaults answers POST /faults, whose JSON body (Faults) replaces the
// injected faults. It takes application/json only, which a web page
// cannot send to another origin without asking, as the cluster's control
// API does.
func (s *Server) serveFaults(w http.ResponseWriter, r *http.Request) {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		http.Error(w, "cosla serve: faults: want Content-Type: application/json", http.StatusUnsupportedMediaType)
		return
	}
	var f Faults
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err == nil {
		err = json.Unmarshal(body, &f)
	}
	if err != nil {
		http.Error(w, fmt.Sprintf("cosla serve: faults: %v", err), http.StatusBadRequest)
		return
	}
	s.SetFaults(f)
	fmt.Fprintln(w, "ok")
}
