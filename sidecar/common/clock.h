// Clock: the two kinds of time baton uses, behind one injectable interface.
//
// * Monotonic time decides everything about leadership: lease expiry, the
//   renew deadline, how long an answer stays valid. It is CLOCK_BOOTTIME, which
//   keeps counting while the machine is suspended, so a frozen VM wakes up
//   knowing how long it was gone. Only differences between two MonoTimes mean
//   anything.
// * Wall time is used only for the timestamps written into a Lease
//   (acquireTime, renewTime), which other clients read. baton never compares a
//   Lease's wall-clock time with its own to decide anything.
//
// Waiting is part of the clock too (AwaitUntil, SleepUntil), so that a
// deadline is always kept on the clock it was computed on: production code
// never uses absl's timed waits or absl::SleepFor, which Debian 12's Abseil
// runs on the wall clock (boottime_timer.h says why that matters).
//
// Production code uses SystemClock(); tests use FakeClock (fake_clock.h).
#ifndef BATON_SIDECAR_COMMON_CLOCK_H_
#define BATON_SIDECAR_COMMON_CLOCK_H_

#include <compare>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace baton {

// A point on the monotonic clock. A value type: cheap to copy, totally ordered.
class MonoTime {
 public:
  constexpr MonoTime() = default;
  static constexpr MonoTime FromSinceOrigin(absl::Duration d) { return MonoTime(d); }
  // Later than every other time: a deadline that never passes. Adding a
  // duration to it leaves it infinite.
  static constexpr MonoTime InfiniteFuture() { return MonoTime(absl::InfiniteDuration()); }

  // Time since the clock's arbitrary origin (boot, for the system clock).
  constexpr absl::Duration SinceOrigin() const { return since_origin_; }

  MonoTime& operator+=(absl::Duration d) {
    since_origin_ += d;
    return *this;
  }
  friend MonoTime operator+(MonoTime t, absl::Duration d) { return t += d; }
  friend absl::Duration operator-(MonoTime a, MonoTime b) {
    return a.since_origin_ - b.since_origin_;
  }
  friend bool operator==(MonoTime a, MonoTime b) { return a.since_origin_ == b.since_origin_; }
  friend bool operator<(MonoTime a, MonoTime b) { return a.since_origin_ < b.since_origin_; }
  friend bool operator<=(MonoTime a, MonoTime b) { return a.since_origin_ <= b.since_origin_; }
  friend bool operator>(MonoTime a, MonoTime b) { return b < a; }
  friend bool operator>=(MonoTime a, MonoTime b) { return b <= a; }

 private:
  constexpr explicit MonoTime(absl::Duration d) : since_origin_(d) {}
  absl::Duration since_origin_;
};

// Source of time, and of waiting for it. Implementations are thread-safe.
class Clock {
 public:
  virtual ~Clock() = default;
  // Monotonic time, counting through suspend.
  virtual MonoTime Monotonic() const = 0;
  // Wall-clock time, for Lease timestamps only.
  virtual absl::Time Wall() const = 0;
  // Blocks until `cond` holds or Monotonic() reaches `deadline`, like
  // absl::Mutex::AwaitWithDeadline but on this clock. `mu` must be held; it
  // is released while waiting and held again on return. Returns cond's value.
  // Anything that makes `cond` true must do so under `mu`. With
  // MonoTime::InfiniteFuture() it waits for `cond` alone. Once it returns,
  // the clock keeps no reference to `mu` or `cond`.
  virtual bool AwaitUntil(absl::Mutex* mu, const absl::Condition& cond, MonoTime deadline) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) = 0;

  // Blocks until Monotonic() reaches `deadline`. Nothing wakes it earlier.
  void SleepUntil(MonoTime deadline) const;
};

// The process-wide real clock: CLOCK_BOOTTIME for Monotonic() and for
// waiting (BoottimeTimer, so that neither a wall-clock step nor a suspend
// delays a wait), CLOCK_REALTIME for Wall(). Never null. The first call
// starts the timer's thread.
Clock* SystemClock();

}  // namespace baton

#endif  // BATON_SIDECAR_COMMON_CLOCK_H_
