// Package proc answers two questions tests ask about processes on this
// machine: what CLOCK_BOOTTIME reads (the clock baton's deadlines are on,
// shared by every process), and whether a process still runs.
package proc

import (
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// Boottime is CLOCK_BOOTTIME in nanoseconds.
func Boottime() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		panic(err) // Linux has had CLOCK_BOOTTIME since 2.6.39
	}
	return ts.Nano()
}

// Alive says whether pid runs (a zombie does not).
func Alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
