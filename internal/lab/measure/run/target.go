package run

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/cosla/cosla/internal/lab/adapters"
)

// Target is a store `cosla measure run --target` measures: the simulator,
// a running cosla cluster, an in-memory store, or a store of package
// adapters' registry, whose servers the run starts (and stops) itself or
// reaches at Config.Connect.
type Target struct {
	Name string
	// About says what it is, for the help text.
	About string
	// ReadOptions and WriteOptions are the options it takes, default
	// first; "" is always the default. For sim and cosla the read options
	// are examples: SimReadOption takes any guarantee.
	ReadOptions, WriteOptions []string

	kind targetKind
}

type targetKind int

const (
	// kindStore is a store of adapters' registry (adapters.Start,
	// adapters.Connect), of the target's name.
	kindStore targetKind = iota
	kindMem
	kindSim
	kindCosla
)

// coslaReadOptions are examples of SimReadOption's options.
var coslaReadOptions = []string{"eventual", "consistent", "strong", "read-my-writes", "monotonic", "causal", "bounded(<d>)", "pileus-<preset>"}

// targets is the registry of targets, in the order of the help text: its
// own, then adapters'.
var targets = func() []Target {
	ts := []Target{
		{Name: "sim", About: "the deterministic simulator (times are virtual); --preset simpledb is Wada 4.3's SimpleDB",
			ReadOptions: coslaReadOptions, kind: kindSim},
		{Name: "mem", About: "an in-memory store whose replica lags by --lag",
			ReadOptions: []string{"primary", "replica"}, kind: kindMem},
		{Name: "cosla", About: "a running `cosla cluster up` (--cluster-dir, --writer-site, --reader-site)",
			ReadOptions: coslaReadOptions, kind: kindCosla},
	}
	for _, s := range adapters.Stores() {
		ts = append(ts, Target{Name: s.Name, About: s.About + ", in DIR/servers; or --connect " + s.Addrs,
			ReadOptions: s.ReadOptions, WriteOptions: s.WriteOptions, kind: kindStore})
	}
	return ts
}()

// Targets returns the targets, in the order of the help text.
func Targets() []Target { return slices.Clone(targets) }

// TargetNames lists the targets' names for messages: "sim, mem, ... or
// postgres".
func TargetNames() string {
	return adapters.NameList(targets, func(t Target) string { return t.Name })
}

// LookupTarget returns the target of that name.
func LookupTarget(name string) (Target, error) {
	for _, t := range targets {
		if t.Name == name {
			return t, nil
		}
	}
	return Target{}, fmt.Errorf("%w: --target %q is not %s", ErrInvalidWorkload, name, TargetNames())
}

// OptionsHelp lists every target's read options (or write options), for
// the help text: "sim: eventual, ...; mem: primary, replica; ...".
func OptionsHelp(write bool) string {
	var parts []string
	for _, t := range targets {
		opts := t.ReadOptions
		if write {
			opts = t.WriteOptions
		}
		if len(opts) > 0 {
			parts = append(parts, t.Name+": "+strings.Join(opts, ", "))
		}
	}
	return strings.Join(parts, "; ")
}

// Live reports whether the target runs in real time.
func (t Target) Live() bool { return t.kind != kindSim }

// start starts the store the target names, its servers in dir (see
// adapters: Close stops them), or connects to the servers at connect.
func (t Target) start(ctx context.Context, dir string, connect []string, lag time.Duration) (adapters.Store, error) {
	switch {
	case t.kind == kindMem:
		return NewLagStore(lag), nil
	case len(connect) > 0:
		return adapters.Connect(ctx, t.Name, connect)
	}
	return adapters.Start(ctx, t.Name, dir)
}

// checkOptions reports the first option the target does not take. The
// simulator ignores the write option (every Put goes to the primary).
func (t Target) checkOptions(read []string, write string) error {
	switch t.kind {
	case kindSim, kindCosla:
		for _, o := range read {
			if t.kind == kindCosla {
				o = orEventual(o)
			}
			if _, _, err := SimReadOption(o); err != nil {
				return err
			}
		}
		if t.kind == kindCosla && write != "" {
			return fmt.Errorf("%w: write option %q: cosla has none (every Put goes to the primary)", ErrInvalidWorkload, write)
		}
		return nil
	}
	for _, o := range read {
		if o != "" && !slices.Contains(t.ReadOptions, o) {
			return fmt.Errorf("%w: %s has no read option %q (valid: %s)", ErrInvalidWorkload, t.Name, o, strings.Join(t.ReadOptions, ", "))
		}
	}
	if write != "" && !slices.Contains(t.WriteOptions, write) {
		valid := "none"
		if len(t.WriteOptions) > 0 {
			valid = strings.Join(t.WriteOptions, ", ")
		}
		return fmt.Errorf("%w: %s has no write option %q (valid: %s)", ErrInvalidWorkload, t.Name, write, valid)
	}
	return nil
}

// serversDir is where a run starts a store's servers.
func serversDir(out string) string { return filepath.Join(out, "servers") }
