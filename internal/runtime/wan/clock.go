package wan

import "time"

// clock is the link's source of time. The wall clock is the only production
// implementation; tests substitute a manual clock so that they can check
// that bytes are held back without measuring wall time.
type clock interface {
	Now() time.Time
	// WaitUntil blocks until t has come or done is closed, and reports
	// whether t came. It must return true at once if t is not after Now.
	WaitUntil(t time.Time, done <-chan struct{}) bool
}

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

// fineWait is the last stretch of a wait, slept by preciseSleep (a
// nanosleep system call on Linux) rather than on a Go timer. An idle Go
// runtime sleeps in its poller in whole milliseconds, so a timer fires up
// to a millisecond late (0.6-1 ms on this project's 2-core VMs), and each
// of a round trip's two passes through a link added that: on pileus4's
// 147 ms U.S.-England link one strong Get in ten missed 150 ms, and a
// LAN's 0.4 ms round trip took 2.4 ms. The system call holds a thread for
// at most fineWait, and a direction of a connection has one writer, so a
// link holds at most two threads per connection.
const fineWait = 2 * time.Millisecond

func (wallClock) WaitUntil(t time.Time, done <-chan struct{}) bool {
	d := time.Until(t) - fineWait
	if d > 0 {
		timer := time.NewTimer(d)
		select {
		case <-timer.C:
		case <-done:
			timer.Stop()
			return false
		}
	}
	select {
	case <-done:
		return false
	default:
	}
	if rest := time.Until(t); rest > 0 {
		preciseSleep(rest)
	}
	return true
}
