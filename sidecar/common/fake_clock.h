// FakeClock: a Clock for tests that moves only when told to.
//
// Thread-safe. Monotonic and wall time advance together by default; SetWall
// lets a test skew the wall clock alone, to prove it does not matter.
// AwaitUntil waits until the condition holds or a test has advanced the clock
// to the deadline: a thread waiting on this clock moves exactly when the test
// moves time, never with the real one. As with the real clock, a waiter's
// mutex may be destroyed as soon as its AwaitUntil returns.
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
      ++waiters_[mu].waiting;
    }
    auto done = [&] { return cond.Eval() || Monotonic() >= deadline; };
    mu->Await(absl::Condition(&done));
    bool pinned;
    {
      absl::MutexLock lock(&mu_);
      Waiter& w = waiters_[mu];
      --w.waiting;
      pinned = w.pins > 0;
      if (!pinned && w.waiting == 0) waiters_.erase(mu);
    }
    if (pinned) {
      // An Advance is about to lock `mu` to wake its waiters (or is waiting
      // for it): let it finish first, so that `mu` may be destroyed as soon
      // as this returns.
      mu->Unlock();
      {
        absl::MutexLock lock(&mu_);
        auto unpinned = [this, mu]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
          auto it = waiters_.find(mu);
          return it == waiters_.end() || it->second.pins == 0;
        };
        mu_.Await(absl::Condition(&unpinned));
        auto it = waiters_.find(mu);
        if (it != waiters_.end() && it->second.waiting == 0) waiters_.erase(it);
      }
      mu->Lock();
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
      for (auto& [waiter, w] : waiters_) {
        ++w.pins;  // keeps `waiter` alive until it is unpinned below
        waiting.push_back(waiter);
      }
    }
    // absl re-evaluates a waiter's condition when its mutex is released.
    for (absl::Mutex* waiter : waiting) {
      waiter->Lock();
      waiter->Unlock();
      absl::MutexLock lock(&mu_);
      auto it = waiters_.find(waiter);
      if (--it->second.pins == 0 && it->second.waiting == 0) waiters_.erase(it);
    }
  }
  // Waits, for up to `timeout` of real time, until at least `n` threads are
  // asleep on this clock (in AwaitUntil), so that a test moves time only once
  // the thread it means to wake is waiting for it. False on timeout.
  bool AwaitSleepers(int n, absl::Duration timeout) const {
    auto asleep = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      int total = 0;
      for (const auto& [waiter, w] : waiters_) total += w.waiting;
      return total >= n;
    };
    absl::MutexLock lock(&mu_);
    return mu_.AwaitWithTimeout(absl::Condition(&asleep), timeout);
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
  struct Waiter {
    int waiting = 0;  // AwaitUntil calls on the mutex
    int pins = 0;     // Advance calls about to lock it
  };
  // Mutexes that AwaitUntil callers wait on. An entry stays while anyone
  // waits on its mutex or an Advance has yet to lock it.
  mutable std::map<absl::Mutex*, Waiter> waiters_ ABSL_GUARDED_BY(mu_);
};

}  // namespace baton

#endif  // BATON_SIDECAR_COMMON_FAKE_CLOCK_H_
