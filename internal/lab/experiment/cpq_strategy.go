package experiment

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/cosla/cosla/internal/core/clientcore"
	"github.com/cosla/cosla/internal/core/wire"
)

// strategy reads the strategies of CPQ 3.2, which choose how many
// replicas each operation involves: "one-one", "one-quo", "quo-one" and
// "quo-quo" (read level, then write level, as CPQ Fig. 1 names them),
// and beyond them "R-W" for any read level R and write level W, each
// one, quo (or quorum), all or a number, as "3-3" or "all-one"; each
// with "+norepair" turns read repair off (clientcore.RepairOff), so that
// reads of a majority are regular rather than atomic; "cpq(P)", QUORUM
// with probability P and ONE otherwise, for reads and writes alike;
// "ad(D)", ONE reads and writes with every read delayed by D; and beyond
// the paper "cpq-tune(L,S)", the tuner keeping read p95 within L and the
// stale share within S (clientcore.Tune), or "cpq-tune" alone, the tuner
// aiming at the scenario's targets in mode t. ok is false for other
// names.
//
// Their reads ask replicas at random (clientcore.Random). In CPQ's
// Cassandra a client's coordinator, the node it is connected to, picks
// the replicas: itself for the half of the keys it holds, else others
// (CPQ digest 5, our reading of Cassandra 2.0). In one LAN site every
// replica is about as near as another, and asking the nearest would send
// every ONE read to whichever node the monitor ranks first, often the
// primary: random replicas are the closer model.
func (cpqPlugin) strategy(s *Scenario, name string, t timing) (v strategyVariant, ok bool, err error) {
	v.strategy = clientcore.Random
	if r, w, found := strings.Cut(name, "-"); found {
		if read, ok := strategyLevel(r); ok {
			w, norepair := strings.CutSuffix(w, "+norepair")
			write, ok := strategyLevel(w)
			if !ok {
				return v, true, fmt.Errorf("strategy %q: want R-W, each of one, quo, all or a number of replicas, and +norepair if any", name)
			}
			v.policy.Read, v.policy.Write = clientcore.Fixed(read), clientcore.Fixed(write)
			if norepair {
				v.policy.ReadRepair = clientcore.RepairOff
			}
			return v, true, nil
		}
	}
	if name == "cpq-tune" {
		if s.Targets == nil {
			return v, true, errors.New("cpq-tune without (L,S) aims at the scenario's targets: set targets")
		}
		targets := targetsFor(s, t.cluster)
		v.policy.Tune = clientcore.Tune{Latency: targets.ReadP95, Stale: targets.Stale}
		return v, true, nil
	}
	fn, arg, found := strings.Cut(name, "(")
	if !found || !strings.HasSuffix(arg, ")") {
		return v, false, nil
	}
	return funcStrategy(v, name, fn, strings.TrimSuffix(arg, ")"))
}

// funcStrategy reads the strategies written fn(arg): cpq(P), ad(D) and
// cpq-tune(L,S).
func funcStrategy(v strategyVariant, name, fn, arg string) (strategyVariant, bool, error) {
	bad := func(want string) error {
		return fmt.Errorf("strategy %q: want %s", name, want)
	}
	switch fn {
	case "cpq":
		p, perr := strconv.ParseFloat(arg, 64)
		if perr != nil || math.IsNaN(p) || p < 0 || p > 1 {
			return v, true, bad("cpq(P) with P in [0, 1]")
		}
		v.policy.Read = clientcore.Mix(p, clientcore.One, clientcore.Quorum)
		v.policy.Write = v.policy.Read
	case "ad":
		d, derr := time.ParseDuration(arg)
		if derr != nil || d < 0 {
			return v, true, bad("ad(D) with a duration D of 0 or more")
		}
		v.policy.Read, v.policy.Write = clientcore.Fixed(clientcore.One), clientcore.Fixed(clientcore.One)
		v.policy.Delay = d
	case "cpq-tune":
		l, s, _ := strings.Cut(arg, ",")
		latency, lerr := time.ParseDuration(strings.TrimSpace(l))
		stale, serr := strconv.ParseFloat(strings.TrimSpace(s), 64)
		v.policy.Tune = clientcore.Tune{Latency: latency, Stale: stale}
		if lerr != nil || serr != nil || v.policy.Validate() != nil {
			return v, true, bad("cpq-tune(L,S) with a positive latency L and a stale fraction S in [0, 1]")
		}
	default:
		return v, false, nil
	}
	return v, true, nil
}

func (cpqPlugin) strategyNames() string {
	return "one-one, one-quo, quo-one, quo-quo or any R-W such as 3-3 (+norepair), cpq(P), ad(D), cpq-tune(L,S) or cpq-tune"
}

// strategyLevel reads one level of an "R-W" strategy: quo, or what
// wire.ParseLevel reads.
func strategyLevel(s string) (wire.Level, bool) {
	if s == "quo" {
		return wire.Quorum, true
	}
	l, err := wire.ParseLevel(s)
	return l, err == nil
}
