package main

import (
	"errors"
	"flag"
	"math"
	"strconv"
	"time"

	"github.com/cosla/cosla"
	"github.com/cosla/cosla/internal/lab/driver"
)

// levelFlags are the read and write level flags (CPQ) of the commands that
// run cosla operations: get, put, session run, bench and measure run.
// --cpq P is CPQ 3.2's policy, QUORUM with probability P and ONE otherwise,
// for reads and writes alike; it chooses both levels itself, so it is an
// error with --read-level or --write-level rather than a silent override.
type levelFlags struct {
	read, write, cpq string
	delay            time.Duration
	repair           repairFlag
}

// repairFlag is --read-repair: unset (nil), the client's default; given
// alone or =true, on; =false, off.
type repairFlag struct{ on *bool }

func (f *repairFlag) IsBoolFlag() bool { return true }

func (f *repairFlag) String() string {
	if f == nil || f.on == nil {
		return ""
	}
	return strconv.FormatBool(*f.on)
}

func (f *repairFlag) Set(s string) error {
	on, err := strconv.ParseBool(s)
	if err != nil {
		return errors.New("want true or false")
	}
	f.on = &on
	return nil
}

// add registers the flags; reads and writes say which the command does.
func (l *levelFlags) add(fs *flag.FlagSet, reads, writes bool) {
	if reads {
		fs.StringVar(&l.read, "read-level", "", "replicas each Get asks, the newest version winning: one, quorum, all or a number (default one)")
		fs.DurationVar(&l.delay, "delay", 0, "artificial delay before each Get, counted in its latency (CPQ's AD)")
		fs.Var(&l.repair, "read-repair", "read repair, on by default for Gets of a majority of the replicas, which then answer only once a majority holds the version they return (linearizable with --write-level W, R + W > N); =false turns it off; given, it also makes smaller Gets ask stale replicas to catch up, without waiting")
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
	return l.read != "" || l.write != "" || l.cpq != "" || l.delay != 0 || l.repair.on != nil
}

// levels checks the flags and returns the sessions' levels.
func (l *levelFlags) levels() (driver.Levels, error) {
	var v driver.Levels
	if l.cpq != "" {
		if l.read != "" || l.write != "" {
			return v, usagef("--cpq mixes ONE and QUORUM itself: give it without --read-level and --write-level")
		}
		prob, err := strconv.ParseFloat(l.cpq, 64)
		if err != nil || math.IsNaN(prob) || prob < 0 || prob > 1 {
			return v, usagef("--cpq: %q is not a probability in [0, 1]", l.cpq)
		}
		v.CPQ = &prob
	}
	var err error
	if v.Read, err = parseLevelFlag("read-level", l.read); err != nil {
		return v, err
	}
	if v.Write, err = parseLevelFlag("write-level", l.write); err != nil {
		return v, err
	}
	if l.delay < 0 {
		return v, usagef("--delay must not be negative, got %s", l.delay)
	}
	v.Delay, v.ReadRepair = l.delay, l.repair.on
	return v, nil
}

// parseLevelFlag reads the level given to flag --name: one, quorum, all
// or a number; "" is unset (zero).
func parseLevelFlag(name, value string) (cosla.Level, error) {
	if value == "" {
		return 0, nil
	}
	level, err := cosla.ParseLevel(value)
	if err != nil {
		return 0, usagef("--%s: %v", name, err)
	}
	return level, nil
}

// sessionOptions returns the levels as options of the public client.
func sessionOptions(v driver.Levels) []cosla.SessionOption {
	var opts []cosla.SessionOption
	switch {
	case v.CPQ != nil && *v.CPQ > 0:
		opts = append(opts, cosla.WithCPQ(*v.CPQ, cosla.One, cosla.Quorum))
	case v.CPQ != nil:
		opts = append(opts, cosla.WithReadLevel(cosla.One), cosla.WithWriteLevel(cosla.One))
	default:
		if v.Read != 0 {
			opts = append(opts, cosla.WithReadLevel(v.Read))
		}
		if v.Write != 0 {
			opts = append(opts, cosla.WithWriteLevel(v.Write))
		}
	}
	if v.Delay > 0 {
		opts = append(opts, cosla.WithDelay(v.Delay))
	}
	if v.ReadRepair != nil {
		opts = append(opts, cosla.WithReadRepair(*v.ReadRepair))
	}
	return opts
}
