#include "sidecar/common/boottime_timer.h"

#include <pthread.h>
#include <signal.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <thread>

#include "sidecar/common/errno_text.h"
#include "sidecar/common/log.h"

namespace baton {
namespace {

[[noreturn]] void Fail(const char* what, int err) {
  spdlog::critical("event=timer_failed call={} error={} next=abort", what,
                   LogValue(ErrnoText(err)));
  std::abort();
}

}  // namespace

MonoTime BoottimeNow() {
  timespec ts;
  clock_gettime(CLOCK_BOOTTIME, &ts);
  return MonoTime::FromSinceOrigin(absl::DurationFromTimespec(ts));
}

BoottimeTimer& BoottimeTimer::Get() {
  static BoottimeTimer* const timer = new BoottimeTimer();
  return *timer;
}

BoottimeTimer::BoottimeTimer()
    : fd_(timerfd_create(CLOCK_BOOTTIME, TFD_CLOEXEC)), timer_set_for_(MonoTime::InfiniteFuture()) {
  if (fd_ < 0) Fail("timerfd_create", errno);
  // The thread must never take a process-directed signal meant for the
  // thread that waits for it (baton's main thread uses sigwait/signalfd):
  // it starts with every signal blocked.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  std::thread([this] { Run(); }).detach();
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

bool BoottimeTimer::AwaitUntil(absl::Mutex* mu, const absl::Condition& cond, MonoTime deadline) {
  if (cond.Eval()) return true;
  if (deadline == MonoTime::InfiniteFuture()) {
    mu->Await(cond);
    return true;
  }
  if (BoottimeNow() >= deadline) return false;
  Alarm alarm{mu, deadline};
  alarm.mu->AssertHeld();  // the same mutex as `mu`, for the annotations
  Arm(&alarm);
  auto done = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(alarm.mu) { return alarm.fired || cond.Eval(); };
  alarm.mu->Await(absl::Condition(&done));
  // The alarm lives on this stack frame: the timer thread must be done with
  // it before this returns.
  if (!alarm.fired) Disarm(&alarm);
  return cond.Eval();
}

size_t BoottimeTimer::pending() const {
  absl::MutexLock lock(&mu_);
  return alarms_.size();
}

void BoottimeTimer::Arm(Alarm* alarm) {
  absl::MutexLock lock(&mu_);
  alarms_.insert(alarm);
  if (alarm->deadline < timer_set_for_) SetTimerLocked(alarm->deadline);
}

void BoottimeTimer::Disarm(Alarm* alarm) {
  {
    absl::MutexLock lock(&mu_);
    if (alarms_.erase(alarm) == 1) return;  // it will never fire
  }
  // The timer thread has taken it off the queue and is about to lock
  // alarm->mu to fire it (or is waiting for it): let it, then it is done
  // with the alarm. It does not touch the alarm after unlocking alarm->mu.
  alarm->mu->Await(absl::Condition(&alarm->fired));
}

void BoottimeTimer::SetTimerLocked(MonoTime at) {
  if (at == timer_set_for_) return;
  itimerspec spec = {};  // zero: disarmed
  if (at != MonoTime::InfiniteFuture()) {
    spec.it_value = absl::ToTimespec(at.SinceOrigin());
    // A zero it_value would disarm; the origin itself is long past anyway.
    if (spec.it_value.tv_sec == 0 && spec.it_value.tv_nsec == 0) spec.it_value.tv_nsec = 1;
  }
  if (timerfd_settime(fd_, TFD_TIMER_ABSTIME, &spec, nullptr) != 0) Fail("timerfd_settime", errno);
  timer_set_for_ = at;
}

void BoottimeTimer::Run() {
  for (;;) {
    mu_.Lock();
    for (;;) {
      if (alarms_.empty()) break;
      Alarm* const alarm = *alarms_.begin();
      if (alarm->deadline > BoottimeNow()) break;
      alarms_.erase(alarms_.begin());
      // Never lock a waiter's mutex while holding mu_: waiters hold theirs
      // when they call Arm and Disarm, which take mu_.
      mu_.Unlock();
      {
        absl::MutexLock lock(alarm->mu);
        alarm->fired = true;
      }
      mu_.Lock();
    }
    SetTimerLocked(alarms_.empty() ? MonoTime::InfiniteFuture() : (*alarms_.begin())->deadline);
    mu_.Unlock();
    uint64_t expirations;
    const ssize_t n = read(fd_, &expirations, sizeof(expirations));
    if (n < 0 && errno != EINTR && errno != EAGAIN) Fail("read(timerfd)", errno);
  }
}

}  // namespace baton
