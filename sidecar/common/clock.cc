#include "sidecar/common/clock.h"

#include <time.h>

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
};

}  // namespace

Clock* SystemClock() {
  static RealClock* const clock = new RealClock();
  return clock;
}

}  // namespace baton
