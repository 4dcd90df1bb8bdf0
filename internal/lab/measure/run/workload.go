package run

import (
	"cmp"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cosla/cosla/internal/core/clientcore"
	"github.com/cosla/cosla/internal/lab/driver"
)

// Placement says where the roles of a run execute (Wada 2.1.1-2.1.2).
type Placement string

// The placements. Each role is a driver group of one session (package
// driver); the placement says where the groups run.
const (
	// PlacementThread: one client writes, then reads, in one session.
	PlacementThread Placement = "thread"
	// PlacementThreads: every role a group of its own in one driver run
	// (in the simulator: a client node of its own, like processes).
	PlacementThreads Placement = "threads"
	// PlacementProcesses: every role in its own child process, each
	// running the driver with its one group (in the simulator: a client
	// node of its own).
	PlacementProcesses Placement = "processes"
)

// ParsePlacement returns the placement of that name.
func ParsePlacement(s string) (Placement, error) {
	switch p := Placement(s); p {
	case PlacementThread, PlacementThreads, PlacementProcesses:
		return p, nil
	}
	return "", fmt.Errorf("%w: placement %q is not thread, threads or processes", ErrInvalidWorkload, s)
}

// ErrInvalidWorkload is wrapped by every error Workload.Validate returns.
var ErrInvalidWorkload = errors.New("measure: invalid workload")

// Workload is what a run does. The zero value of every field takes the
// default its comment states (EnsureDefaults): Wada's single-element
// benchmark with one writer and one reader.
type Workload struct {
	// Run names the run in the trace (measure.Op.Run). Default "".
	Run string `json:"run,omitempty"`
	// Writers and Readers are the numbers of writer and reader clients;
	// Readers is per read option. Default 1 each. Ignored by
	// PlacementThread, which has one client per read option.
	Writers int `json:"writers"`
	Readers int `json:"readers"`
	// WriteEvery is the period of each writer (Wada 2: three seconds).
	// Several writers are staggered evenly over it. Default 3s.
	WriteEvery time.Duration `json:"write_every"`
	// ReadHz is each reader's rate (Wada 2: 50 reads a second). Default 50.
	ReadHz float64 `json:"read_hz"`
	// ReadOptions are the read options measured; Readers readers use each.
	// Default [""], the store's default read.
	ReadOptions []string `json:"read_options"`
	// WriteOption is the option of every write. Default "".
	WriteOption string `json:"write_option,omitempty"`
	// Policy sets the read and write levels and delay of a cosla
	// target's sessions (CPQ). Default: one replica each.
	Policy clientcore.Policy `json:"policy"`
	// Placement is where the roles run. Default PlacementThreads.
	Placement Placement `json:"placement"`
	// Keys are the data elements: one (Wada 2) or two, X and Y, written in
	// that order each round and read in that order (Wada 3.2). Default
	// ["k"].
	Keys []string `json:"keys"`
	// Duration bounds the run: no op starts after it. Default 5m (Wada 2:
	// a five-minute measurement).
	Duration time.Duration `json:"duration"`
	// MaxOps bounds the number of ops of the whole run. Default 1,000,000.
	MaxOps int `json:"max_ops"`
}

// Limits of a Workload, so that a typo cannot start a run that never ends
// or fills a disk (TigerBeetle: put a limit on everything).
const (
	MaxClients  = 10000
	MaxReadHz   = 10000
	MaxOpsLimit = 100_000_000
	MaxDuration = 7 * 24 * time.Hour
)

// EnsureDefaults returns a copy of w with every zero field given its
// default (the options idiom of package node).
func (w Workload) EnsureDefaults() Workload {
	w.Writers = cmp.Or(w.Writers, 1)
	w.Readers = cmp.Or(w.Readers, 1)
	w.WriteEvery = cmp.Or(w.WriteEvery, 3*time.Second)
	w.ReadHz = cmp.Or(w.ReadHz, 50)
	if len(w.ReadOptions) == 0 {
		w.ReadOptions = []string{""}
	}
	w.Placement = cmp.Or(w.Placement, PlacementThreads)
	if len(w.Keys) == 0 {
		w.Keys = []string{"k"}
	}
	w.Duration = cmp.Or(w.Duration, 5*time.Minute)
	w.MaxOps = cmp.Or(w.MaxOps, 1_000_000)
	return w
}

// Validate reports the first invalid field, by name.
func (w Workload) Validate() error {
	if err := w.Policy.Validate(); err != nil {
		return fmt.Errorf("%w: Policy: %w", ErrInvalidWorkload, err)
	}
	switch {
	case w.Writers < 1 || w.Writers > MaxClients:
		return fmt.Errorf("%w: Writers %d not in [1, %d]", ErrInvalidWorkload, w.Writers, MaxClients)
	case w.Readers < 0 || w.Readers > MaxClients:
		return fmt.Errorf("%w: Readers %d not in [0, %d]", ErrInvalidWorkload, w.Readers, MaxClients)
	case w.WriteEvery < time.Millisecond:
		return fmt.Errorf("%w: WriteEvery %s is below 1ms", ErrInvalidWorkload, w.WriteEvery)
	case !(w.ReadHz > 0 && w.ReadHz <= MaxReadHz):
		return fmt.Errorf("%w: ReadHz %v not in (0, %d]", ErrInvalidWorkload, w.ReadHz, MaxReadHz)
	case len(w.Keys) < 1 || len(w.Keys) > 2:
		return fmt.Errorf("%w: Keys has %d keys; want 1, or 2 for the two-element test (Wada 3.2)", ErrInvalidWorkload, len(w.Keys))
	case len(w.Keys) == 2 && w.Keys[0] == w.Keys[1]:
		return fmt.Errorf("%w: Keys names %q twice", ErrInvalidWorkload, w.Keys[0])
	case w.Duration <= 0 || w.Duration > MaxDuration:
		return fmt.Errorf("%w: Duration %s not in (0, %s]", ErrInvalidWorkload, w.Duration, MaxDuration)
	case w.MaxOps < 1 || w.MaxOps > MaxOpsLimit:
		return fmt.Errorf("%w: MaxOps %d not in [1, %d]", ErrInvalidWorkload, w.MaxOps, MaxOpsLimit)
	}
	if _, err := ParsePlacement(string(w.Placement)); err != nil {
		return err
	}
	for i, k := range w.Keys {
		if k == "" {
			return fmt.Errorf("%w: Keys[%d] is empty", ErrInvalidWorkload, i)
		}
	}
	seen := map[string]bool{}
	for i, o := range w.ReadOptions {
		if seen[o] {
			return fmt.Errorf("%w: ReadOptions[%d] %q given twice", ErrInvalidWorkload, i, o)
		}
		seen[o] = true
	}
	return nil
}

// String renders the effective workload on one line, for logs.
func (w Workload) String() string {
	return fmt.Sprintf("placement=%s writers=%d readers=%d write_every=%s read_hz=%g read_options=%q write_option=%q keys=%q duration=%s max_ops=%d",
		w.Placement, w.Writers, w.Readers, w.WriteEvery, w.ReadHz, w.ReadOptions, w.WriteOption, w.Keys, w.Duration, w.MaxOps)
}

// RoleSpec is one client of a run: what it does and when, made a driver
// group by roleGroup. It is also the work of a worker process
// (PlacementProcesses, WorkerConfig.Spec).
type RoleSpec struct {
	Run    string `json:"run,omitempty"`
	Client string `json:"client"`
	// Write and Read say which roles the client plays; both for
	// PlacementThread.
	Write bool `json:"write"`
	Read  bool `json:"read"`
	// WriteOffset delays the writer's schedule, to stagger writers.
	WriteOffset time.Duration `json:"write_offset"`
	WriteEvery  time.Duration `json:"write_every"`
	ReadHz      float64       `json:"read_hz"`
	ReadOption  string        `json:"read_option,omitempty"`
	WriteOption string        `json:"write_option,omitempty"`
	// Policy is the workload's Policy.
	Policy clientcore.Policy `json:"policy"`
	Keys   []string          `json:"keys"`
	// Duration bounds the role's schedule; MaxOps its op count (in a
	// worker process; in-process roles share the run's count). A round of
	// two keys is two ops (see steps).
	Duration time.Duration `json:"duration"`
	MaxOps   int           `json:"max_ops"`
}

// Roles returns the clients of the workload, which must be valid and
// defaulted. Client names: "t1".. for thread placement, "w1".. for writers
// and "r1".. for readers, suffixed with ".<option>" when there are several
// read options.
func (w Workload) Roles() []RoleSpec {
	several := len(w.ReadOptions) > 1
	suffix := func(o string) string {
		if !several {
			return ""
		}
		return "." + optionName(o)
	}
	base := RoleSpec{Run: w.Run, WriteEvery: w.WriteEvery, ReadHz: w.ReadHz, WriteOption: w.WriteOption,
		Policy: w.Policy, Keys: w.Keys, Duration: w.Duration, MaxOps: w.MaxOps}
	var roles []RoleSpec
	if w.Placement == PlacementThread {
		for i, o := range w.ReadOptions {
			r := base
			r.Client, r.Write, r.Read, r.ReadOption = fmt.Sprintf("t%d", i+1), true, true, o
			if several {
				// One history per option, each thread on keys of its own
				// so that it is the only writer of what it reads (Wada
				// 2.1.1 measured each option separately).
				r.Run = strings.TrimPrefix(w.Run+"/"+optionName(o), "/")
				r.Keys = make([]string, len(w.Keys))
				for j, k := range w.Keys {
					r.Keys[j] = k + "." + optionName(o)
				}
			}
			roles = append(roles, r)
		}
		return splitOps(roles, w.MaxOps)
	}
	for i := range w.Writers {
		r := base
		r.Client, r.Write = fmt.Sprintf("w%d", i+1), true
		r.WriteOffset = time.Duration(i) * w.WriteEvery / time.Duration(w.Writers)
		roles = append(roles, r)
	}
	for _, o := range w.ReadOptions {
		for i := range w.Readers {
			r := base
			r.Client, r.Read, r.ReadOption = fmt.Sprintf("r%d%s", i+1, suffix(o)), true, o
			roles = append(roles, r)
		}
	}
	return splitOps(roles, w.MaxOps)
}

// splitOps gives every role an even share of the op limit, for worker
// processes, which cannot share a counter.
func splitOps(roles []RoleSpec, maxOps int) []RoleSpec {
	for i := range roles {
		roles[i].MaxOps = max(1, (maxOps+len(roles)-1)/len(roles))
	}
	return roles
}

func optionName(o string) string {
	if o == "" {
		return "default"
	}
	return o
}

// Progress is a snapshot of a run, for progress lines.
type Progress struct {
	Run     string
	Elapsed time.Duration
	Ops     int
	Writes  int
	Reads   int
	Failed  int
}

// add counts an op the driver completed.
func (p *Progress) add(op *driver.Op) {
	p.Ops++
	if op.Kind.Writes() {
		p.Writes++
	} else {
		p.Reads++
	}
	if op.Err != nil {
		p.Failed++
	}
}
