package chaos

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/cosla/cosla/internal/core/clientcore"
	"github.com/cosla/cosla/sla"
)

// Report is what a campaign did and found. Times are seconds since the
// workload started.
type Report struct {
	Seed     uint64 `json:"seed"`
	Dir      string `json:"dir"`
	Options  string `json:"options"`
	Topology string `json:"topology"`
	// Primary is the site of the table's primary once the faults are
	// over (a failover moves it), Secondaries those of its secondaries.
	Primary     string   `json:"primary"`
	Secondaries []string `json:"secondaries"`
	// RunS is how long the workload and the faults ran.
	RunS float64 `json:"run_s"`

	// Puts counts every Put issued; AckedPuts those acknowledged, the
	// others failed or are of unknown outcome. Gets and MetGets likewise:
	// a Get that met no subSLA failed.
	Puts      int `json:"puts"`
	AckedPuts int `json:"acked_puts"`
	Gets      int `json:"gets"`
	MetGets   int `json:"met_gets"`
	// Keys is the number of keys written, fresh and shared.
	Keys int `json:"keys"`

	// Kills counts the SIGKILLs, KillsPrimary those of the primary's
	// site; Partitions and Pauses the other faults; Failovers the
	// failover faults after which another node held the primary's lease.
	// Faults lists them all in order; FaultErrors says what went wrong
	// making or healing one (the campaign stops at the first) or running
	// the workload.
	Kills        int      `json:"kills"`
	KillsPrimary int      `json:"kills_primary"`
	Partitions   int      `json:"partitions"`
	Pauses       int      `json:"pauses"`
	Failovers    int      `json:"failovers"`
	Faults       []Event  `json:"faults"`
	FaultErrors  []string `json:"fault_errors,omitempty"`

	// TargetsReached is false when the time bound came first; Targets
	// says what they were.
	TargetsReached bool   `json:"targets_reached"`
	Targets        string `json:"targets"`
	// Interrupted: the campaign was cancelled, and not verified.
	Interrupted bool `json:"interrupted,omitempty"`

	// Lost counts acknowledged Puts whose version is missing at the
	// primary after the campaign (the primary's version of the key is
	// older) and that no replica rolled back at a failover; RolledBack
	// counts those a replica did (in its rollback files), which only a
	// write level that does not survive a failover allows (Failover
	// checks it). Unverified counts the keys the primary could not be
	// read for. LostExamples describes the first few lost.
	Lost         int      `json:"lost"`
	RolledBack   int      `json:"rolled_back"`
	Unverified   int      `json:"unverified"`
	LostExamples []string `json:"lost_examples,omitempty"`
	// Converged reports that every secondary served the primary's
	// version of every key written; ConvergeS is how long the check took,
	// from the end of the reads at the primary: a bound on how long the
	// secondaries took to converge. Behind counts, per site, the keys
	// still behind when the wait ended, by why: "older" (the secondary
	// served an older version, or none), "newer" (than the primary's),
	// "elsewhere" (another site's node answered), "failed" (the read
	// did), "unread".
	Converged bool                      `json:"converged"`
	ConvergeS float64                   `json:"converge_s"`
	Behind    map[string]map[string]int `json:"behind,omitempty"`

	// CheckedOps is the size of the history checked (the final reads at
	// the primary included), Violations the rules it breaks (package
	// check); ViolationExamples the first few. MetByGuarantee counts the
	// workload's Gets meeting each guarantee (the final reads left out):
	// what the check had to check.
	CheckedOps        int            `json:"checked_ops"`
	Violations        int            `json:"violations"`
	ViolationExamples []string       `json:"violation_examples,omitempty"`
	MetByGuarantee    map[string]int `json:"met_by_guarantee"`

	// Failover is what a campaign with failover faults measured and
	// checked; nil without them.
	Failover *FailoverReport `json:"failover,omitempty"`
	// Karma is what a Karma campaign (KarmaFaults) found; nil for
	// another. Such a campaign reads no primary and checks no
	// convergence: Lost, RolledBack, Unverified, Converged and Behind
	// stay zero.
	Karma *KarmaReport `json:"karma,omitempty"`

	// Clients are the workload's clients, each with its unavailability
	// windows.
	Clients []Client `json:"clients"`
}

// OK reports whether the campaign passed: it reached its targets, every
// fault was healed, no acknowledged Put was lost (but for rollbacks that
// the failover checks allow), the replicas converged, the history holds
// and so do the failover checks.
func (r *Report) OK() bool {
	if r.Karma != nil {
		return r.Sound() && r.Karma.Available
	}
	return !r.Interrupted && r.TargetsReached && len(r.FaultErrors) == 0 && r.Lost == 0 && r.Unverified == 0 &&
		r.Converged && r.Violations == 0 && (r.Failover == nil || r.Failover.ok())
}

// Sound reports whether a Karma campaign ran as planned and its history
// holds, whatever the claims' verdict: OK less Karma.Available.
func (r *Report) Sound() bool {
	return !r.Interrupted && r.TargetsReached && len(r.FaultErrors) == 0 && r.Violations == 0
}

// Event is one fault.
type Event struct {
	Kind Fault `json:"-"`
	// Name is the kind's name; Site the site struck, Role "primary" or
	// "secondary".
	Name string `json:"kind"`
	Site string `json:"site"`
	Role string `json:"role"`
	// Peer is, for a partition between rings (RingPartition), the zone
	// cut from Site's, which Role names.
	Peer string `json:"peer,omitempty"`
	// Method is how a failover struck the primary's site (kill,
	// partition, pause); From is the primary it struck, To the node
	// that held the lease next (empty if none did before the heal).
	Method string `json:"method,omitempty"`
	From   string `json:"from,omitempty"`
	To     string `json:"to,omitempty"`
	// StartS is when it began, EndS when it was healed (a killed site
	// answering again) and, for a failover, the cluster settled.
	StartS float64 `json:"start_s"`
	EndS   float64 `json:"end_s"`
}

func (e Event) String() string {
	if e.Peer != "" {
		return fmt.Sprintf("%s %s (%s) from %s", e.Name, e.Site, e.Role, e.Peer)
	}
	if e.Method != "" {
		return fmt.Sprintf("%s by %s of %s (primary %s)", e.Name, e.Method, e.Site, e.From)
	}
	return fmt.Sprintf("%s %s (%s)", e.Name, e.Site, e.Role)
}

// Client is one client of the workload: a group of sessions at a site.
type Client struct {
	Name string `json:"name"`
	Site string `json:"site"`
	// SLA is the Gets' SLA; empty for the writers.
	SLA    string `json:"sla,omitempty"`
	Ops    int    `json:"ops"`
	Failed int    `json:"failed"`
	// Errors counts the failed ops by cause: "timeout" (no answer within
	// the request timeout or the SLA's latency), "sla unmet" (an answer
	// that met no subSLA), "write level not reached" (a Put its primary
	// held, but too few replicas in time), or the error's text.
	Errors map[string]int `json:"errors,omitempty"`
	// Windows are the client's unavailability windows; UnavailableS is
	// their total length and LongestS the longest.
	Windows      []Window `json:"windows"`
	UnavailableS float64  `json:"unavailable_s"`
	LongestS     float64  `json:"longest_s"`
	// AfterHealMaxS is the longest a window outlasted the faults: its
	// end less the end of the last fault begun before it ended. It is at
	// least the timeout of an op sent just before a heal; much more says
	// the client was slow to find the healed cluster again.
	AfterHealMaxS float64 `json:"after_heal_max_s"`
}

// Window is a stretch of time in which every operation a client finished
// failed: from the start of the first failed one (or the end of the last
// success, if later) to the end of the last failed one before a success.
type Window struct {
	StartS float64 `json:"start_s"`
	EndS   float64 `json:"end_s"`
	Failed int     `json:"failed_ops"`
	// Faults are the faults under way at some point of the window or,
	// with none, the last one healed before it.
	Faults []string `json:"faults,omitempty"`
}

// span is one operation of a client, for its windows.
type span struct {
	start, end time.Duration
	failed     bool
}

// cause names why an op failed, for Client.Errors.
func cause(err error) string {
	switch {
	case errors.Is(err, clientcore.ErrTimeout):
		return "timeout"
	case errors.Is(err, clientcore.ErrSLAUnmet):
		return "sla unmet"
	case errors.Is(err, clientcore.ErrQuorumTimeout):
		// Its text names the key: one cause per Put.
		return "write level not reached"
	case errors.Is(err, clientcore.ErrCatchingUp):
		// So does a Get's: one cause per key read.
		return "replica catching up"
	}
	return err.Error()
}

// window is a Window on the run's clock.
type window struct {
	start, end time.Duration
	failed     int
}

// windows returns a client's unavailability windows from its operations,
// in any order. A success closes the window under way: the client was
// available when it finished.
func windows(ops []span) []window {
	ops = slices.Clone(ops)
	slices.SortStableFunc(ops, func(a, b span) int { return cmp.Or(cmp.Compare(a.end, b.end), cmp.Compare(a.start, b.start)) })
	var out []window
	var cur *window
	lastOK := time.Duration(-1)
	for _, op := range ops {
		if !op.failed {
			if cur != nil {
				out = append(out, *cur)
				cur = nil
			}
			lastOK = max(lastOK, op.end)
			continue
		}
		start := max(op.start, lastOK)
		if cur == nil {
			cur = &window{start: start, end: op.end}
		}
		cur.start = min(cur.start, start)
		cur.end = max(cur.end, op.end)
		cur.failed++
	}
	if cur != nil {
		out = append(out, *cur)
	}
	return out
}

// blame returns the faults under way at some point of [start, end]; with
// none, the last one healed before start, if any, and how long before:
// a client may take a while to find a healed site again.
func blame(events []Event, start, end float64) []string {
	var out []string
	last := -1
	for i, e := range events {
		if e.StartS <= end && e.EndS >= start {
			out = append(out, e.String())
		}
		if e.EndS < start && (last < 0 || e.EndS > events[last].EndS) {
			last = i
		}
	}
	if len(out) == 0 && last >= 0 {
		e := events[last]
		out = append(out, fmt.Sprintf("none under way; %.1fs after %s was healed", start-e.EndS, e))
	}
	return out
}

// afterHeal returns how long a window ending at end outlasted the last
// fault begun before then, or 0 if none had begun.
func afterHeal(events []Event, end float64) float64 {
	last := -1.0
	for _, e := range events {
		if e.StartS <= end {
			last = max(last, e.EndS)
		}
	}
	if last < 0 {
		return 0
	}
	return max(0, end-last)
}

func seconds(d time.Duration) float64 { return d.Seconds() }

// WriteText prints the report for people; windowsMax bounds the windows
// listed per client (the longest first; 0: none, only their count).
func (r *Report) WriteText(w io.Writer, windowsMax int) {
	if r.Karma != nil {
		fmt.Fprintf(w, "Karma campaign on %s (a causal table over the rings %v): seed %d, ran %.1fs\n", r.Topology, r.Karma.Rings, r.Seed, r.RunS)
	} else {
		fmt.Fprintf(w, "chaos campaign on %s (primary at %s, secondaries at %s): seed %d, ran %.1fs\n",
			r.Topology, r.Primary, strings.Join(r.Secondaries, ", "), r.Seed, r.RunS)
	}
	fmt.Fprintf(w, "  puts:       %d acknowledged, %d failed or of unknown outcome, over %d keys\n", r.AckedPuts, r.Puts-r.AckedPuts, r.Keys)
	fmt.Fprintf(w, "  gets:       %d met a subSLA, %d did not\n", r.MetGets, r.Gets-r.MetGets)
	if r.Karma != nil {
		fmt.Fprintf(w, "  faults:     %d, in availability zones (Karma 4.4), listed below", len(r.Faults))
	} else {
		fmt.Fprintf(w, "  faults:     %d kills (%d of the primary's site, %d of a secondary's), %d partitions, %d pauses",
			r.Kills, r.KillsPrimary, r.Kills-r.KillsPrimary, r.Partitions, r.Pauses)
	}
	if r.Failover != nil {
		fmt.Fprintf(w, ", %d failovers (%s)", r.Failovers, methodsLine(r.Failover.ByMethod))
	}
	fmt.Fprintln(w)
	for _, e := range r.FaultErrors {
		fmt.Fprintf(w, "  FAULT ERROR: %s\n", e)
	}
	targets := "reached"
	if !r.TargetsReached {
		targets = "NOT REACHED"
	}
	fmt.Fprintf(w, "  targets:    %s (%s)\n", targets, r.Targets)
	switch {
	case r.Interrupted:
		fmt.Fprintf(w, "  INTERRUPTED: not verified\n")
	case r.Karma != nil:
		fmt.Fprintf(w, "  history:    %d ops checked (multi-writer causal), %d violations\n", r.CheckedOps, r.Violations)
		for _, v := range r.ViolationExamples {
			fmt.Fprintf(w, "    %s\n", v)
		}
		r.Karma.writeText(w)
	default:
		r.writeVerified(w)
	}
	r.writeClients(w, windowsMax)
	verdict := "OK"
	if !r.OK() {
		verdict = "FAILED"
	}
	fmt.Fprintf(w, "  result:     %s (data and logs in %s)\n", verdict, r.Dir)
}

// writeVerified prints what the checks of a replicated table's campaign
// found: Puts lost, replicas converged, the history and the failovers.
func (r *Report) writeVerified(w io.Writer) {
	fmt.Fprintf(w, "  lost:       %d acknowledged Puts missing at the primary", r.Lost)
	if r.RolledBack > 0 {
		fmt.Fprintf(w, " and not rolled back (%d more rolled back at a failover)", r.RolledBack)
	}
	if r.Unverified > 0 {
		fmt.Fprintf(w, "; %d keys COULD NOT BE READ there", r.Unverified)
	}
	fmt.Fprintln(w)
	for _, ex := range r.LostExamples {
		fmt.Fprintf(w, "    %s\n", ex)
	}
	if r.Converged {
		fmt.Fprintf(w, "  replicas:   converged: every secondary serves the primary's version of every key (checked in %.1fs)\n", r.ConvergeS)
	} else {
		var sites []string
		for _, site := range slices.Sorted(maps.Keys(r.Behind)) {
			n, why := 0, []string{}
			for _, k := range slices.Sorted(maps.Keys(r.Behind[site])) {
				n += r.Behind[site][k]
				why = append(why, fmt.Sprintf("%s %d", k, r.Behind[site][k]))
			}
			sites = append(sites, fmt.Sprintf("%s %d (%s)", site, n, strings.Join(why, ", ")))
		}
		fmt.Fprintf(w, "  replicas:   NOT CONVERGED after %.1fs; keys behind: %s\n", r.ConvergeS, strings.Join(sites, "; "))
	}
	var met []string
	for _, k := range sla.Kinds {
		met = append(met, fmt.Sprintf("%s %d", k, r.MetByGuarantee[k.String()]))
	}
	fmt.Fprintf(w, "  history:    %d ops checked, %d violations; Gets meeting each guarantee: %s\n",
		r.CheckedOps, r.Violations, strings.Join(met, ", "))
	for _, v := range r.ViolationExamples {
		fmt.Fprintf(w, "    %s\n", v)
	}
	if r.Failover != nil {
		r.Failover.writeText(w)
	}
}

// writeClients prints each client's failures and its windowsMax longest
// unavailability windows.
func (r *Report) writeClients(w io.Writer, windowsMax int) {
	fmt.Fprintf(w, "  unavailability windows per client (start+length in seconds, failed ops, faults under way):\n")
	for _, c := range r.Clients {
		var causes []string
		for _, cause := range slices.Sorted(maps.Keys(c.Errors)) {
			causes = append(causes, fmt.Sprintf("%s %d", cause, c.Errors[cause]))
		}
		fmt.Fprintf(w, "    %-22s %d of %d ops failed (%s); %d windows, %.1fs in all, longest %.1fs, up to %.1fs past a heal\n",
			c.Name, c.Failed, c.Ops, strings.Join(causes, ", "), len(c.Windows), c.UnavailableS, c.LongestS, c.AfterHealMaxS)
		longest := slices.Clone(c.Windows)
		slices.SortStableFunc(longest, func(a, b Window) int { return cmp.Compare(b.EndS-b.StartS, a.EndS-a.StartS) })
		for i, win := range longest {
			if i == windowsMax {
				fmt.Fprintf(w, "      ... %d shorter ones (--json lists all)\n", len(longest)-i)
				break
			}
			faults := "no fault"
			if len(win.Faults) > 0 {
				faults = strings.Join(win.Faults, "; ")
			}
			fmt.Fprintf(w, "      %7.1f+%.1fs  %4d failed  %s\n", win.StartS, win.EndS-win.StartS, win.Failed, faults)
		}
	}
}
