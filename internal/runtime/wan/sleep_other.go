//go:build !linux

package wan

import "time"

// preciseSleep sleeps for d; outside Linux on a Go timer, so up to a
// millisecond late.
func preciseSleep(d time.Duration) { time.Sleep(d) }
