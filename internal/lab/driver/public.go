package driver

import (
	"time"

	"github.com/cosla/cosla"
	"github.com/cosla/cosla/internal/core/clientcore"
	"github.com/cosla/cosla/internal/core/wire"
	"github.com/cosla/cosla/sla"
)

// CoslaOf is the Cosla of a group configured in the public API's words,
// as the CLI's flags give it: its sessions' SLA, strategy and levels, and
// a bound on every Put and Get (zero: none).
func CoslaOf(agreement sla.SLA, strategy cosla.Strategy, levels Levels, bound cosla.Bound) Cosla {
	c := Cosla{SLA: agreement, Strategy: clientcore.Strategy(strategy), Policy: levels.Policy(), PutBound: wire.Bound(bound)}
	c.Get.Bound = c.PutBound
	return c
}

// Levels are a group's read and write levels (CPQ) in the public API's
// words, as the CLI's level flags give them: Read and Write (zero:
// unset), or with CPQ QUORUM with probability *CPQ and ONE otherwise for
// both; Delay, an artificial delay before each Get; ReadRepair, nil for
// the client's default.
type Levels struct {
	Read, Write cosla.Level
	CPQ         *float64
	Delay       time.Duration
	ReadRepair  *bool
}

// Policy is the levels as the client core's session policy
// (Cosla.Policy).
func (v Levels) Policy() clientcore.Policy {
	var p clientcore.Policy
	if v.CPQ != nil {
		p.Read = clientcore.Mix(*v.CPQ, clientcore.One, clientcore.Quorum)
		p.Write = p.Read
	}
	if v.Read != 0 {
		p.Read = clientcore.Fixed(wire.Level(v.Read))
	}
	if v.Write != 0 {
		p.Write = clientcore.Fixed(wire.Level(v.Write))
	}
	p.Delay = v.Delay
	if v.ReadRepair != nil {
		p.ReadRepair = clientcore.RepairOff
		if *v.ReadRepair {
			p.ReadRepair = clientcore.RepairOn
		}
	}
	return p
}
