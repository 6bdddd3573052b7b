#include "sidecar/common/clock.h"

#include <time.h>

#include <algorithm>

namespace baton {
namespace {

class RealClock final : public Clock {
 public:
  MonoTime Monotonic() const override {
    timespec ts;
    // CLOCK_BOOTTIME, not CLOCK_MONOTONIC: the latter stops during suspend,
    // which would let a leader that slept through its lease believe it still
    // holds it.
    clock_gettime(CLOCK_BOOTTIME, &ts);
    return MonoTime::FromSinceOrigin(absl::DurationFromTimespec(ts));
  }
  absl::Time Wall() const override { return absl::Now(); }

  bool AwaitUntil(absl::Mutex* mu, const absl::Condition& cond, MonoTime deadline) const override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    // absl's timed waits run on another clock, which stops during suspend or
    // jumps with the wall clock; waiting in slices of at most kSlice and
    // re-reading CLOCK_BOOTTIME bounds the error to one slice.
    constexpr absl::Duration kSlice = absl::Seconds(1);
    for (;;) {
      if (cond.Eval()) return true;
      const absl::Duration left = deadline - Monotonic();
      if (left <= absl::ZeroDuration()) return false;
      if (mu->AwaitWithTimeout(cond, std::min(left, kSlice))) return true;
    }
  }
};

}  // namespace

Clock* SystemClock() {
  static RealClock* const clock = new RealClock();
  return clock;
}

}  // namespace baton
