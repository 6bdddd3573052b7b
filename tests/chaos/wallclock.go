package main

import (
	"fmt"
	"sync"
	"syscall"
	"time"
)

// wallClockStep is how far the clock-step fault steps this machine's wall
// clock back (and then forward again): a step NTP makes at once instead of
// slewing, and within the API server's one-minute leeway for the tokens'
// issue and expiry times, so the members stay authenticated.
const wallClockStep = 30 * time.Second

// wallClock steps this machine's CLOCK_REALTIME and keeps the sum of the
// steps not yet undone, so that an interrupted run can put it back. Safe for
// concurrent use.
type wallClock struct {
	mu   sync.Mutex
	owed time.Duration // what Restore steps by
}

// wall is the machine's wall clock, as the clock-step fault and the
// interrupted run's cleanup share it.
var wall wallClock

// Step moves the wall clock by d, measured from its reading an instant
// before (the microseconds between the two are lost).
func (w *wallClock) Step(d time.Duration) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := setWallClock(time.Now().Add(d)); err != nil {
		return fmt.Errorf("stepping the wall clock by %v: %w", d, err)
	}
	w.owed -= d
	return nil
}

// Restore undoes every step not yet undone.
func (w *wallClock) Restore() error {
	w.mu.Lock()
	owed := w.owed
	w.mu.Unlock()
	if owed == 0 {
		return nil
	}
	return w.Step(owed)
}

// CanStep says why the wall clock cannot be stepped here (nil if it can):
// setting it to what it reads needs CAP_SYS_TIME, as any step does.
func (w *wallClock) CanStep() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return setWallClock(time.Now())
}

func setWallClock(t time.Time) error {
	tv := syscall.NsecToTimeval(t.UnixNano())
	return syscall.Settimeofday(&tv)
}
