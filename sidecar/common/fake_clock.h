// FakeClock: a Clock for tests that moves only when told to.
//
// Thread-safe. Monotonic and wall time advance together by default; SetWall
// lets a test skew the wall clock alone, to prove it does not matter.
// AwaitUntil waits until the condition holds or a test has advanced the clock
// to the deadline: a thread waiting on this clock moves exactly when the test
// moves time, never with the real one.
#ifndef BATON_SIDECAR_COMMON_FAKE_CLOCK_H_
#define BATON_SIDECAR_COMMON_FAKE_CLOCK_H_

#include <map>
#include <vector>

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

  bool AwaitUntil(absl::Mutex* mu, const absl::Condition& cond, MonoTime deadline) const override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    {
      absl::MutexLock lock(&mu_);
      ++waiters_[mu];
    }
    auto done = [&] { return cond.Eval() || Monotonic() >= deadline; };
    mu->Await(absl::Condition(&done));
    {
      absl::MutexLock lock(&mu_);
      if (--waiters_[mu] == 0) waiters_.erase(mu);
    }
    return cond.Eval();
  }

  // Moves both clocks forward by d, and wakes the threads waiting on it.
  void Advance(absl::Duration d) {
    std::vector<absl::Mutex*> waiting;
    {
      absl::MutexLock lock(&mu_);
      mono_ += d;
      wall_ += d;
      for (const auto& [waiter, n] : waiters_) waiting.push_back(waiter);
    }
    // absl re-evaluates a waiter's condition when its mutex is released.
    for (absl::Mutex* waiter : waiting) {
      waiter->Lock();
      waiter->Unlock();
    }
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
  // Mutexes that AwaitUntil callers wait on, with how many wait on each.
  mutable std::map<absl::Mutex*, int> waiters_ ABSL_GUARDED_BY(mu_);
};

}  // namespace baton

#endif  // BATON_SIDECAR_COMMON_FAKE_CLOCK_H_
