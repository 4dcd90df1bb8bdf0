package wan

import (
	"syscall"
	"time"
)

// preciseSleep sleeps for d in a nanosleep system call, to within tens of
// microseconds, holding its thread meanwhile.
func preciseSleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	_ = syscall.Nanosleep(&ts, nil)
}
