#include "sidecar/common/clock.h"

#include "sidecar/common/boottime_timer.h"

namespace baton {
namespace {

class RealClock final : public Clock {
 public:
  // CLOCK_BOOTTIME, not CLOCK_MONOTONIC: the latter stops during suspend,
  // which would let a leader that slept through its lease believe it still
  // holds it.
  MonoTime Monotonic() const override { return BoottimeNow(); }
  absl::Time Wall() const override { return absl::Now(); }

  bool AwaitUntil(absl::Mutex* mu, const absl::Condition& cond, MonoTime deadline) const override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    return BoottimeTimer::Get().AwaitUntil(mu, cond, deadline);
  }
};

}  // namespace

void Clock::SleepUntil(MonoTime deadline) const {
  absl::Mutex mu;
  absl::MutexLock lock(&mu);
  static constexpr bool kNever = false;
  AwaitUntil(&mu, absl::Condition(&kNever), deadline);
}

Clock* SystemClock() {
  static RealClock* const clock = [] {
    // Started here, at the first use of the clock, so that a kernel that
    // refuses a timerfd stops baton at start rather than at its first wait.
    BoottimeTimer::Get();
    return new RealClock();
  }();
  return clock;
}

}  // namespace baton
