// BoottimeTimer: waits on an absl::Mutex condition with a deadline on
// CLOCK_BOOTTIME, which no wall-clock step moves and which keeps counting
// through a suspend. It is what SystemClock()->AwaitUntil is made of.
//
// Why not absl's own timed waits: Abseil 20220623 (Debian 12) turns every
// timed Mutex wait (AwaitWithDeadline, AwaitWithTimeout, LockWhenWithTimeout,
// CondVar::WaitWithTimeout, Notification::WaitForNotificationWithTimeout)
// into a futex wait with an absolute CLOCK_REALTIME deadline, so a `date -s`
// or an NTP step back by X delays every one of them by about X.
//
// How: AwaitUntil is an untimed Mutex::Await on "cond, or the alarm went
// off". Untimed waits use futexes with no timeout, so no wall clock is
// involved. One process-wide thread sleeps on a timerfd
// (CLOCK_BOOTTIME, absolute), armed for the earliest pending deadline; when
// a deadline passes, it locks the waiter's mutex, marks the alarm and
// unlocks it, which makes absl re-evaluate the waiter's condition.
//
// Two rules follow from the timer thread locking waiters' mutexes:
//  * hold a waited-on mutex only briefly (no I/O under it, as everywhere in
//    baton): while someone holds it, the timer thread waits for it and every
//    other deadline in the process is late by as much;
//  * never wait on this timer while holding a mutex that another thread's
//    AwaitUntil waits on: the timer thread could block on that mutex before
//    it gets to the deadline that would release it.
#ifndef BATON_SIDECAR_COMMON_BOOTTIME_TIMER_H_
#define BATON_SIDECAR_COMMON_BOOTTIME_TIMER_H_

#include <cstddef>
#include <functional>
#include <set>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "sidecar/common/clock.h"

namespace baton {

// The current CLOCK_BOOTTIME reading, as a MonoTime.
MonoTime BoottimeNow();

class BoottimeTimer {
 public:
  // The process-wide timer. Its thread starts on the first call, with every
  // signal blocked, and lives until the process exits. Aborts the process if
  // the kernel refuses a timerfd (there is no safe way to wait without it).
  static BoottimeTimer& Get();

  BoottimeTimer(const BoottimeTimer&) = delete;
  BoottimeTimer& operator=(const BoottimeTimer&) = delete;

  // Blocks until `cond` holds or CLOCK_BOOTTIME reaches `deadline`, like
  // absl::Mutex::AwaitWithDeadline. `mu` must be held; it is released while
  // waiting and held again on return. Returns cond's value then. Anything
  // that makes `cond` true must do so under `mu`. MonoTime::InfiniteFuture()
  // waits for `cond` alone. Thread-safe; any number of threads may wait at once, on the same
  // mutex or on different ones. Once it returns, the timer no longer refers
  // to `mu` or `cond`: both may be destroyed.
  bool AwaitUntil(absl::Mutex* mu, const absl::Condition& cond, MonoTime deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) ABSL_LOCKS_EXCLUDED(mu_);

  // How many waits have a deadline pending. For tests.
  size_t pending() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // One waiter's deadline. Lives on the waiter's stack.
  struct Alarm {
    absl::Mutex* const mu;
    const MonoTime deadline;
    // Set by the timer thread once `deadline` has passed.
    bool fired ABSL_GUARDED_BY(mu) = false;
  };
  struct Earlier {
    bool operator()(const Alarm* a, const Alarm* b) const {
      return a->deadline < b->deadline || (a->deadline == b->deadline && std::less<>()(a, b));
    }
  };

  BoottimeTimer();
  // The timer thread: fires due alarms, re-arms the timerfd, sleeps on it.
  [[noreturn]] void Run() ABSL_LOCKS_EXCLUDED(mu_);
  // Queues `alarm`. Called with alarm->mu held.
  void Arm(Alarm* alarm) ABSL_LOCKS_EXCLUDED(mu_);
  // Unqueues `alarm`, or, if the timer thread has already taken it, waits
  // (releasing alarm->mu meanwhile) until it has fired. Afterwards the timer
  // thread no longer touches it. Called with alarm->mu held.
  void Disarm(Alarm* alarm) ABSL_EXCLUSIVE_LOCKS_REQUIRED(alarm->mu) ABSL_LOCKS_EXCLUDED(mu_);
  // Sets the timerfd to `at` (infinite: disarmed), unless it is set for it.
  void SetTimerLocked(MonoTime at) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int fd_;  // timerfd on CLOCK_BOOTTIME
  mutable absl::Mutex mu_;
  // Every alarm not yet fired, earliest first. The timerfd is always set
  // for a time no later than the first one's deadline.
  std::set<Alarm*, Earlier> alarms_ ABSL_GUARDED_BY(mu_);
  MonoTime timer_set_for_ ABSL_GUARDED_BY(mu_);
};

}  // namespace baton

#endif  // BATON_SIDECAR_COMMON_BOOTTIME_TIMER_H_
