//go:build !linux

package baton

import "time"

var processStart = time.Now()

// boottime stands in for CLOCK_BOOTTIME where there is none: the monotonic
// time since this process started. The sidecar's deadlines are then on
// another clock, so they are not used (see sharesSidecarClock).
func boottime() time.Duration { return time.Since(processStart) }

const sharesSidecarClock = false
