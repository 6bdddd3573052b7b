//go:build linux

package baton

import (
	"time"

	"golang.org/x/sys/unix"
)

// boottime reads CLOCK_BOOTTIME: the time since boot, including time spent
// suspended. It is the clock of the sidecar's valid_until_boottime: the
// sidecar and the application share the node's kernel, so a deadline on it
// means the same instant in every container of the Pod.
func boottime() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		// CLOCK_BOOTTIME exists since Linux 2.6.39; failing to read it is a
		// broken invariant, not a condition to handle.
		panic("baton: clock_gettime(CLOCK_BOOTTIME): " + err.Error())
	}
	return time.Duration(ts.Nano())
}

// sharesSidecarClock: deadlines the sidecar sends on CLOCK_BOOTTIME can be
// compared with boottime().
const sharesSidecarClock = true
