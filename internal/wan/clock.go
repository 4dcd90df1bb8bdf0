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

func (wallClock) WaitUntil(t time.Time, done <-chan struct{}) bool {
	d := time.Until(t)
	if d <= 0 {
		select {
		case <-done:
			return false
		default:
			return true
		}
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-done:
		return false
	}
}
