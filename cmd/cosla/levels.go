package main

import (
	"errors"
	"flag"
	"math"
	"strconv"
	"time"

	"github.com/cosla/cosla"
	"github.com/cosla/cosla/internal/core/clientcore"
	"github.com/cosla/cosla/internal/core/wire"
)

// levelFlags are the read and write level flags (CPQ) of the commands that
// run cosla operations: get, put, session run, bench and measure run.
// --cpq P is CPQ 3.2's policy, QUORUM with probability P and ONE otherwise,
// for reads and writes alike; it chooses both levels itself, so it is an
// error with --read-level or --write-level rather than a silent override.
type levelFlags struct {
	read, write, cpq string
	delay            time.Duration
	repair           clientcore.ReadRepair
}

// repairFlag is --read-repair: unset, clientcore.RepairAuto; given
// alone or =true, RepairOn; =false, RepairOff.
type repairFlag clientcore.ReadRepair

func (f *repairFlag) IsBoolFlag() bool { return true }

func (f *repairFlag) String() string {
	if f == nil || clientcore.ReadRepair(*f) == clientcore.RepairAuto {
		return ""
	}
	return strconv.FormatBool(clientcore.ReadRepair(*f) == clientcore.RepairOn)
}

func (f *repairFlag) Set(s string) error {
	on, err := strconv.ParseBool(s)
	if err != nil {
		return errors.New("want true or false")
	}
	*f = repairFlag(clientcore.RepairOff)
	if on {
		*f = repairFlag(clientcore.RepairOn)
	}
	return nil
}

// add registers the flags; reads and writes say which the command does.
func (l *levelFlags) add(fs *flag.FlagSet, reads, writes bool) {
	if reads {
		fs.StringVar(&l.read, "read-level", "", "replicas each Get asks, the newest version winning: one, quorum, all or a number (default one)")
		fs.DurationVar(&l.delay, "delay", 0, "artificial delay before each Get, counted in its latency (CPQ's AD)")
		fs.Var((*repairFlag)(&l.repair), "read-repair", "read repair, on by default for Gets of a majority of the replicas, which then answer only once a majority holds the version they return (linearizable with --write-level W, R + W > N); =false turns it off; given, it also makes smaller Gets ask stale replicas to catch up, without waiting")
	}
	if writes {
		fs.StringVar(&l.write, "write-level", "", "replicas that must hold each Put before it returns, the primary included: one, quorum, all or a number (default one)")
	}
	if reads && writes {
		fs.StringVar(&l.cpq, "cpq", "", "continuous partial quorums: each Get and Put uses QUORUM with probability `P`, ONE otherwise (not with --read-level or --write-level)")
	} else {
		fs.StringVar(&l.cpq, "cpq", "", "continuous partial quorums: each operation uses QUORUM with probability `P`, ONE otherwise (not with --read-level or --write-level)")
	}
}

// set reports whether any level flag was given.
func (l *levelFlags) set() bool {
	return l.read != "" || l.write != "" || l.cpq != "" || l.delay != 0 || l.repair != clientcore.RepairAuto
}

// policy checks the flags and returns the sessions' policy.
func (l *levelFlags) policy() (clientcore.Policy, error) {
	var p clientcore.Policy
	if l.cpq != "" {
		if l.read != "" || l.write != "" {
			return p, usagef("--cpq mixes ONE and QUORUM itself: give it without --read-level and --write-level")
		}
		prob, err := strconv.ParseFloat(l.cpq, 64)
		if err != nil || math.IsNaN(prob) || prob < 0 || prob > 1 {
			return p, usagef("--cpq: %q is not a probability in [0, 1]", l.cpq)
		}
		p.Read = clientcore.Mix(prob, clientcore.One, clientcore.Quorum)
		p.Write = p.Read
	}
	for _, f := range []struct {
		name, value string
		dst         *clientcore.Choice
	}{{"read-level", l.read, &p.Read}, {"write-level", l.write, &p.Write}} {
		if f.value == "" {
			continue
		}
		level, err := parseLevelFlag(f.name, f.value)
		if err != nil {
			return p, err
		}
		*f.dst = clientcore.Fixed(level)
	}
	if l.delay < 0 {
		return p, usagef("--delay must not be negative, got %s", l.delay)
	}
	p.Delay, p.ReadRepair = l.delay, l.repair
	return p, nil
}

// parseLevelFlag reads the level given to flag --name: one, quorum, all
// or a number; "" is unset (zero).
func parseLevelFlag(name, value string) (clientcore.Level, error) {
	if value == "" {
		return 0, nil
	}
	level, err := wire.ParseLevel(value)
	if err != nil {
		return 0, usagef("--%s: %v", name, err)
	}
	return level, nil
}

// sessionOptions returns the policy as options of the public client.
func sessionOptions(p clientcore.Policy) []cosla.SessionOption {
	var opts []cosla.SessionOption
	switch {
	case p.Read.P > 0:
		opts = append(opts, cosla.WithCPQ(p.Read.P, p.Read.A, p.Read.B))
	default:
		if p.Read.A != 0 {
			opts = append(opts, cosla.WithReadLevel(p.Read.A))
		}
		if p.Write.A != 0 {
			opts = append(opts, cosla.WithWriteLevel(p.Write.A))
		}
	}
	if p.Delay > 0 {
		opts = append(opts, cosla.WithDelay(p.Delay))
	}
	if p.ReadRepair != clientcore.RepairAuto {
		opts = append(opts, cosla.WithReadRepair(p.ReadRepair == clientcore.RepairOn))
	}
	return opts
}
