// FakeClock: a Clock for tests that moves only when told to.
//
// Thread-safe. Monotonic and wall time advance together by default; SetWall
// lets a test skew the wall clock alone, to prove it does not matter.
#ifndef BATON_SIDECAR_COMMON_FAKE_CLOCK_H_
#define BATON_SIDECAR_COMMON_FAKE_CLOCK_H_

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "sidecar/common/clock.h"

namespace baton {

class FakeClock final : public Clock {
 public:
  // Starts at an arbitrary non-zero monotonic time and a fixed wall time.
  FakeClock()
      : mono_(MonoTime::FromSinceOrigin(absl::Hours(1))),
        wall_(absl::FromUnixSeconds(1'790'000'000)) {}

  MonoTime Monotonic() const override {
    absl::MutexLock lock(&mu_);
    return mono_;
  }
  absl::Time Wall() const override {
    absl::MutexLock lock(&mu_);
    return wall_;
  }

  // Moves both clocks forward by d.
  void Advance(absl::Duration d) {
    absl::MutexLock lock(&mu_);
    mono_ += d;
    wall_ += d;
  }
  // Sets the wall clock alone (skew, NTP steps).
  void SetWall(absl::Time t) {
    absl::MutexLock lock(&mu_);
    wall_ = t;
  }

 private:
  mutable absl::Mutex mu_;
  MonoTime mono_ ABSL_GUARDED_BY(mu_);
  absl::Time wall_ ABSL_GUARDED_BY(mu_);
};

}  // namespace baton

#endif  // BATON_SIDECAR_COMMON_FAKE_CLOCK_H_
