package chaos

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/cosla/cosla/internal/runtime/topology"
)

// ErrInvalid is wrapped by the errors of bad Options.
var ErrInvalid = errors.New("chaos: invalid options")

// Fault is a kind of fault a campaign injects.
type Fault uint8

// The fault kinds (issue 13, items 5 and 6).
const (
	// Kill SIGKILLs a site's cosla serve process, a primary's or a
	// secondary's, as a power cut would, and restarts it on its data.
	Kill Fault = iota + 1
	// Partition cuts a site off from every other site on the emulated
	// WAN, then heals it: first the primary's site, then a secondary's.
	Partition
	// Pause stops a site's process with SIGSTOP for a while, then resumes
	// it with SIGCONT: a long garbage collection or a stalled VM.
	Pause
	// Failover strikes the site of the tablets' current primary (issue
	// 27, item 7) for longer than a lease, so that the configuration
	// service moves the primary: by turns a kill, a partition and a pause
	// (failoverMethods), each held at least Options.FailoverHold and until
	// another node is the leased primary, then healed; the next waits for
	// every tablet to have a leased primary again.
	Failover
	// AZB, AZF and RingPartition are the faults of Karma 4.4's claims on
	// a causal table (karma.go): a site's storage nodes fail (AZ-B), its
	// coordinator and cache fail (AZ-F), or a zone of a site of one ring
	// is cut from a zone of a site of another. KarmaFaults lists them.
	AZB
	AZF
	RingPartition
)

// Faults lists the fault kinds "all" stands for, in the order a campaign
// cycles through them. Failover is not among them: it holds each fault
// for longer than a lease and runs its own workload and checks (see the
// package documentation), so it is asked for by name.
var Faults = []Fault{Kill, Partition, Pause}

// kinds lists every fault kind.
var kinds = []Fault{Kill, Partition, Pause, Failover, AZB, AZF, RingPartition}

var faultNames = [...]string{Kill: "kill", Partition: "partition", Pause: "pause", Failover: "failover",
	AZB: "az-b", AZF: "az-f", RingPartition: "ring-partition"}

func (f Fault) String() string {
	if f == 0 || int(f) >= len(faultNames) {
		return fmt.Sprintf("fault(%d)", uint8(f))
	}
	return faultNames[f]
}

// ParseFaults reads a comma-separated list of fault kinds, "all" or
// "karma" (KarmaFaults).
func ParseFaults(s string) ([]Fault, error) {
	switch s {
	case "all":
		return slices.Clone(Faults), nil
	case "karma":
		return slices.Clone(KarmaFaults), nil
	}
	var out []Fault
	for name := range strings.SplitSeq(s, ",") {
		i := slices.Index(faultNames[:], strings.TrimSpace(name))
		if i <= 0 {
			return nil, fmt.Errorf("%w: fault %q: want kill, partition, pause, failover, all, az-b, az-f, ring-partition or karma", ErrInvalid, name)
		}
		if !slices.Contains(out, Fault(i)) {
			out = append(out, Fault(i))
		}
	}
	return out, nil
}

// Options configures a campaign. Zero fields take the defaults stated on
// each; Validate names the first bad field.
type Options struct {
	// Dir holds the cluster's data, configs and logs; a previous run's
	// data in it is deleted. Required.
	Dir string
	// Topology is the cluster's sites and links. Required.
	Topology topology.Topology
	// Sites hold the table's replicas, the primary's site first (see
	// topology.Placement). Default: every site with storage nodes.
	Sites []string
	// PullInterval is how often secondaries pull from the primary
	// (Pileus 4.3). Default 1s.
	PullInterval time.Duration
	// Push also streams every Put to the secondaries at once.
	Push bool
	// Insecure runs the cluster without TLS (cluster.Options).
	Insecure bool
	// Binary is the cosla executable the sites run. Default: this
	// process's own.
	Binary string

	// Seed draws the workload's keys and the faults' sites and times.
	// Process scheduling is not reproducible, so a seed repeats the
	// campaign's plan, not its history.
	Seed uint64
	// Faults are the kinds injected, one at a time, in the order given.
	// Default: package variable Faults.
	Faults []Fault
	// Kills, Failovers, Puts: the campaign goes on until it has made at
	// least Kills kills and Failovers failovers (failover faults after
	// which another node was the primary) and seen at least Puts
	// acknowledged Puts (and made each kind of Faults at least twice,
	// Karma's once).
	// Zero: no target. Kills needs Kill in Faults, Failovers Failover.
	Kills     int
	Failovers int
	Puts      int
	// Duration bounds the campaign: no fault starts and no operation is
	// issued after it; a campaign that has not reached its targets by
	// then fails. Default 10m, at most 24h.
	Duration time.Duration
	// Gap is the mean time between the end of one fault and the start of
	// the next, Hold the mean time a fault lasts (a killed process stays
	// down for up to Hold, then restarts); each is drawn uniformly from
	// [mean/2, 3*mean/2). Defaults 2s and 2s. Failover faults use
	// FailoverHold instead of Hold.
	Gap, Hold time.Duration
	// FailoverHold is the least time a failover fault lasts; it then lasts
	// until another node holds the primary's lease, at most
	// FailoverHold + failoverWait. Default: long enough for the
	// configuration service's defaults to move the primary even when the
	// struck site also hosted its leader (defaultFailoverHold: 8.65s).
	FailoverHold time.Duration

	// Keys is the number of keys the guarantee sessions share. Default 32.
	Keys int
	// Sessions is the number of sessions of each guarantee client (two
	// clients per site, each with one of six SLAs); in a Karma campaign,
	// of each site's one client, and Writers is ignored. Default 2.
	Sessions int
	// Writers is the number of sessions per site that write fresh keys,
	// each key once, so that every acknowledged one can be found again.
	// Default 4.
	Writers int
	// Think is the guarantee sessions' pause between operations. Default
	// 10ms.
	Think time.Duration
	// WriterThink is the writers' pause between Puts. Default 0: they
	// write as fast as they are answered. A long failover campaign
	// wants a pause: every fresh key grows the table, and the catch-up of
	// a replica that had to wipe at a rollback, a snapshot of the whole
	// table, with it.
	WriterThink time.Duration
	// RequestTimeout bounds each Put and each Get whose SLA has an
	// unbounded subSLA. Default 2s.
	RequestTimeout time.Duration
	// ConvergeTimeout bounds the wait, after the faults, for every
	// secondary to hold the primary's version of every key written: no
	// round of reads of the keys still behind begins after it (a round
	// begun ends when its reads have, each within RequestTimeout).
	// Default 1m plus 3 pull intervals.
	ConvergeTimeout time.Duration

	// Progress, if set, receives a line now and then and at every fault.
	Progress func(line string)
	// ProgressEvery is how often Progress hears of the counts. Default 5s.
	ProgressEvery time.Duration
	// Logger receives the cluster supervisor's logs. Default: discard.
	Logger *slog.Logger
}

// maxDuration bounds Options.Duration: a campaign is meant to end.
const maxDuration = 24 * time.Hour

// EnsureDefaults returns a copy of o with unset fields given defaults.
func (o Options) EnsureDefaults() Options {
	o.PullInterval = cmp.Or(o.PullInterval, time.Second)
	if len(o.Faults) == 0 {
		o.Faults = slices.Clone(Faults)
	}
	o.Duration = cmp.Or(o.Duration, 10*time.Minute)
	o.Gap = cmp.Or(o.Gap, 2*time.Second)
	o.Hold = cmp.Or(o.Hold, 2*time.Second)
	o.FailoverHold = cmp.Or(o.FailoverHold, defaultFailoverHold())
	o.Keys = cmp.Or(o.Keys, 32)
	o.Sessions = cmp.Or(o.Sessions, 2)
	o.Writers = cmp.Or(o.Writers, 4)
	o.Think = cmp.Or(o.Think, 10*time.Millisecond)
	o.RequestTimeout = cmp.Or(o.RequestTimeout, 2*time.Second)
	o.ConvergeTimeout = cmp.Or(o.ConvergeTimeout, time.Minute+3*o.PullInterval)
	o.ProgressEvery = cmp.Or(o.ProgressEvery, 5*time.Second)
	if o.Progress == nil {
		o.Progress = func(string) {}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Validate reports the first invalid field of o, with defaults applied.
func (o Options) Validate() error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%w: Options.%s: %s", ErrInvalid, field, fmt.Sprintf(format, args...))
	}
	switch {
	case o.Dir == "":
		return bad("Dir", "required")
	case o.PullInterval <= 0:
		return bad("PullInterval", "%s, want positive", o.PullInterval)
	case o.Kills < 0:
		return bad("Kills", "%d, want at least 0", o.Kills)
	case o.Kills > 0 && !slices.Contains(o.Faults, Kill):
		return bad("Kills", "%d kills, but Faults %v has no kill", o.Kills, o.Faults)
	case o.Failovers < 0:
		return bad("Failovers", "%d, want at least 0", o.Failovers)
	case o.Failovers > 0 && !slices.Contains(o.Faults, Failover):
		return bad("Failovers", "%d failovers, but Faults %v has no failover", o.Failovers, o.Faults)
	case o.Puts < 0:
		return bad("Puts", "%d, want at least 0", o.Puts)
	case o.Duration <= 0 || o.Duration > maxDuration:
		return bad("Duration", "%s outside (0, %s]", o.Duration, maxDuration)
	case o.Gap < 0 || o.Gap > time.Hour:
		return bad("Gap", "%s outside [0, 1h]", o.Gap)
	case o.Hold <= 0 || o.Hold > time.Hour:
		return bad("Hold", "%s outside (0, 1h]", o.Hold)
	case o.FailoverHold <= 0 || o.FailoverHold > time.Hour:
		return bad("FailoverHold", "%s outside (0, 1h]", o.FailoverHold)
	case o.Keys <= 0 || o.Keys > 1_000_000:
		return bad("Keys", "%d outside 1..1,000,000", o.Keys)
	case o.Sessions < 0 || o.Sessions > 64:
		return bad("Sessions", "%d outside 0..64", o.Sessions)
	case o.Writers < 0 || o.Writers > 256:
		return bad("Writers", "%d outside 0..256", o.Writers)
	case o.Sessions == 0 && o.Writers == 0:
		return bad("Sessions", "no guarantee sessions and no writers: nothing would run")
	case o.Think < 0 || o.Think > time.Minute:
		return bad("Think", "%s outside [0, 1m]", o.Think)
	case o.WriterThink < 0 || o.WriterThink > time.Minute:
		return bad("WriterThink", "%s outside [0, 1m]", o.WriterThink)
	case o.RequestTimeout <= 0 || o.RequestTimeout > time.Minute:
		return bad("RequestTimeout", "%s outside (0, 1m]", o.RequestTimeout)
	case o.ConvergeTimeout <= 0 || o.ConvergeTimeout > time.Hour:
		return bad("ConvergeTimeout", "%s outside (0, 1h]", o.ConvergeTimeout)
	case o.ProgressEvery <= 0:
		return bad("ProgressEvery", "%s, want positive", o.ProgressEvery)
	}
	for _, f := range o.Faults {
		if !slices.Contains(kinds, f) {
			return bad("Faults", "unknown %s", f)
		}
		if karmaCampaign(o.Faults) != slices.Contains(KarmaFaults, f) {
			return bad("Faults", "%v mixes Karma's faults (az-b, az-f, ring-partition) with others", o.Faults)
		}
	}
	if err := o.Topology.Validate(); err != nil {
		return bad("Topology", "%v", err)
	}
	if karmaCampaign(o.Faults) && len(o.Topology.Rings) < 2 {
		return bad("Topology", "%s has %d rings; Karma's faults need a causal table of two rings or more", o.Topology.Name, len(o.Topology.Rings))
	}
	return nil
}

// String lists the campaign's effective options on one line, for its log.
func (o Options) String() string {
	names := make([]string, len(o.Faults))
	for i, f := range o.Faults {
		names[i] = f.String()
	}
	return fmt.Sprintf("seed %d, faults %s, kills>=%d, failovers>=%d, puts>=%d, duration<=%s, gap %s, hold %s, failover hold %s, topology %s, pull %s, push %t, insecure %t, "+
		"keys %d, sessions %d, writers %d, think %s, writer think %s, request timeout %s, converge timeout %s",
		o.Seed, strings.Join(names, ","), o.Kills, o.Failovers, o.Puts, o.Duration, o.Gap, o.Hold, o.FailoverHold, o.Topology.Name, o.PullInterval, o.Push, o.Insecure,
		o.Keys, o.Sessions, o.Writers, o.Think, o.WriterThink, o.RequestTimeout, o.ConvergeTimeout)
}
